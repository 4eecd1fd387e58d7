#!/usr/bin/python3
"""Mandatory publishes and basic.return: a mandatory publish that no queue
binding routes comes back to the publisher (312 NO_ROUTE, with its
exchange, routing key, body and properties); a routed one does not; a
non-mandatory unroutable one is dropped silently.  With confirms on, pika
raises UnroutableError for the returned message (it is still acked)."""
import pika
import pika.exceptions

from amqpcommon import connect, say, check, finish, cleanup

X, Q = 'tut.mandatory', 'tut.mandatory_q'
cleanup(queues=[Q], exchanges=[X])
conn = connect()
ch = conn.channel()
ch.exchange_declare(X, 'direct')
ch.queue_declare(Q)
ch.queue_bind(Q, X, 'routed')
returned = []


def on_return(ch, method, props, body):
    returned.append((method.reply_code, method.reply_text.split(' ')[0], method.exchange,
                     method.routing_key, body.decode(), props.message_id,
                     (props.headers or {}).get('k')))


ch.add_on_return_callback(on_return)
ch.basic_publish(X, 'nowhere', b'r1', mandatory=True,
                 properties=pika.BasicProperties(message_id='id-1', headers={'k': 'v'}))
ch.basic_publish(X, 'routed', b'r2', mandatory=True)
ch.basic_publish(X, 'nowhere', b'r3', mandatory=False)
ch.basic_publish('', 'tut.no_such_queue', b'r4', mandatory=True)
for _ in range(20):
    conn.process_data_events(time_limit=0.1)
for r in returned:
    say('returned: code %d %s, exchange %r, routing key %r, body %r, message_id %s, header k=%s' % r)
check([r[4] for r in returned] == ['r1', 'r4'], 'r1 and r4 came back, in order')
check(all(r[0] == 312 for r in returned), '312 NO_ROUTE')
depth = ch.queue_declare(Q, passive=True).method.message_count
say('%s holds %d (the routed mandatory publish)' % (Q, depth))
check(depth == 1, 'the routed one arrived')

ch.confirm_delivery()
try:
    ch.basic_publish(X, 'nowhere', b'r5', mandatory=True)
    say('confirm-mode mandatory unroutable publish: acked, nothing returned')
    check(False, 'UnroutableError expected')
except pika.exceptions.UnroutableError as e:
    # pika raises it when the ack comes after a basic.return
    say('confirm-mode mandatory unroutable publish: returned before its ack (%d message, code %d)'
        % (len(e.messages), e.messages[0].method.reply_code))
ch.basic_publish(X, 'routed', b'r6', mandatory=True)
say('confirm-mode mandatory routed publish: acked')
conn.close()
cleanup(queues=[Q], exchanges=[X])
finish('mandatory')
