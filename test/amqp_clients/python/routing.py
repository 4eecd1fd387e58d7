#!/usr/bin/python3
"""Tutorial 4, routing: a direct exchange 'tut.direct_logs'; subscriber
'errors' binds its queue with key 'error', subscriber 'all' with 'info',
'warning' and 'error' (three bindings of one queue).  Each receives exactly
the messages whose routing key it bound, in publish order, once each."""
from amqpcommon import connect, say, check, finish, cleanup, Subscriber

X = 'tut.direct_logs'
SENT = [('info', 'i1'), ('error', 'e1'), ('warning', 'w1'), ('debug', 'd1'),
        ('error', 'e2'), ('info', 'i2'), ('Error', 'E3')]
cleanup(exchanges=[X])
conn = connect()
ch = conn.channel()
ch.exchange_declare(exchange=X, exchange_type='direct')
subs = [Subscriber('errors', X, ['error']),
        Subscriber('all', X, ['info', 'warning', 'error'])]
for s in subs:
    s.start()
    s.ready.wait(10)
for key, body in SENT:
    ch.basic_publish(exchange=X, routing_key=key, body=body.encode())
    say(' [x] Sent %s:%r' % (key, body))
for s in subs:
    want = [(k, b) for k, b in SENT if k in s.keys]
    s.wait_for(len(want))
    # anything more would come right behind
    conn.sleep(0.3)
    s.stop()
    say('%s (bound %s) received %s' % (s.name, ','.join(s.keys),
                                       ' '.join('%s:%s' % kb for kb in s.got)))
    check(s.got == want, '%s received exactly %r' % (s.name, want))
conn.close()
cleanup(exchanges=[X])
finish('routing')
