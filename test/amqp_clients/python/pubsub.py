#!/usr/bin/python3
"""Tutorial 3, publish/subscribe: a fanout exchange 'tut.logs'; two
subscribers, each with an exclusive server-named queue (queue.declare with
an empty name) bound to it, both receive every log line in the order it was
published.  The server-named queues are named amq.gen-..., and are gone once
their connections close."""
from amqpcommon import (connect, say, check, finish, cleanup, Subscriber,
                        queue_exists)

X = 'tut.logs'
LOGS = ['info: one', 'warning: two', 'error: three', 'info: four']
cleanup(exchanges=[X])

conn = connect()
ch = conn.channel()
ch.exchange_declare(exchange=X, exchange_type='fanout')
subs = [Subscriber(n, X, ['']) for n in ('s1', 's2')]
for s in subs:
    s.start()
    s.ready.wait(10)
for line in LOGS:
    ch.basic_publish(exchange=X, routing_key='', body=line.encode())
    say(' [x] Sent %r' % line)
for s in subs:
    s.wait_for(len(LOGS))
    s.stop()
for s in subs:
    say('%s received %r' % (s.name, [b for _, b in s.got]))
    check([b for _, b in s.got] == LOGS, '%s got every line in order' % s.name)
    say('%s had a server-named queue: %s' % (s.name, s.queue.startswith('amq.gen-')))
    check(s.queue.startswith('amq.gen-'), 'server-named queue amq.gen-*: %s' % s.queue)
check(subs[0].queue != subs[1].queue, 'two different queue names')
for s in subs:
    gone = not queue_exists(s.queue)
    say('%s\'s exclusive queue is gone after its connection closed: %s' % (s.name, gone))
    check(gone, 'exclusive queue deleted with its connection')
# with nobody bound, a fanout publish goes nowhere (and is no error)
ch.basic_publish(exchange=X, routing_key='', body=b'nobody listens')
say('a publish with no queue bound is dropped silently: %s' % conn.is_open)
conn.close()
cleanup(exchanges=[X])
finish('pubsub')
