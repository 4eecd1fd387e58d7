#!/usr/bin/python3
"""Tutorial 5, topics: a topic exchange 'tut.topic_logs' and the tutorial's
bindings: Q1 '*.orange.*'; Q2 '*.*.rabbit' and 'lazy.#'; plus Q3 '#' (all)
and Q4 'kern.*'.  Each subscriber receives exactly the keys its patterns
match, once each even when two of its patterns match, in publish order."""
from amqpcommon import connect, say, check, finish, cleanup, Subscriber

X = 'tut.topic_logs'
KEYS = ['quick.orange.rabbit', 'lazy.orange.elephant', 'quick.orange.fox',
        'lazy.brown.fox', 'lazy.pink.rabbit', 'quick.brown.fox', 'orange',
        'quick.orange.male.rabbit', 'lazy.orange.male.rabbit', 'lazy',
        'kern.critical', 'kern.critical.disk', 'kern', '.orange.', 'a..rabbit']
cleanup(exchanges=[X])
conn = connect()
ch = conn.channel()
ch.exchange_declare(exchange=X, exchange_type='topic')
subs = [Subscriber('Q1', X, ['*.orange.*']),
        Subscriber('Q2', X, ['*.*.rabbit', 'lazy.#']),
        Subscriber('Q3', X, ['#']),
        Subscriber('Q4', X, ['kern.*'])]
for s in subs:
    s.start()
    s.ready.wait(10)
for i, key in enumerate(KEYS):
    ch.basic_publish(exchange=X, routing_key=key, body=('m%d' % i).encode())
    say(' [x] Sent %s' % key)
s3 = subs[2]
s3.wait_for(len(KEYS))
conn.sleep(0.3)
for s in subs:
    s.stop()
    say('%s (%s) received %s' % (s.name, ' '.join(s.keys),
                                 ' '.join(k for k, _ in s.got) or '(nothing)'))
check([k for k, _ in subs[0].got] == ['quick.orange.rabbit', 'lazy.orange.elephant',
                                      'quick.orange.fox', '.orange.'], 'Q1 matches')
check([k for k, _ in subs[1].got] == ['quick.orange.rabbit', 'lazy.orange.elephant',
                                      'lazy.brown.fox', 'lazy.pink.rabbit',
                                      'lazy.orange.male.rabbit', 'lazy', 'a..rabbit'],
      'Q2 matches, once each')
check([k for k, _ in s3.got] == KEYS, 'Q3 (#) receives everything')
check([k for k, _ in subs[3].got] == ['kern.critical'], 'Q4 matches')
conn.close()
cleanup(exchanges=[X])
finish('topics')
