#!/usr/bin/python3
"""Publisher confirms.  1. A BlockingChannel in confirm mode
(confirm_delivery): each basic_publish returns once the broker acked it; a
publish to a full queue with x-overflow reject-publish raises NackError,
and the channel goes on.  2. Asynchronous confirms (SelectConnection):
a batch of publishes alternating between an ordinary queue and a queue that
refuses everything (x-max-length 0, reject-publish) gets one ack or nack per
delivery tag (multiple acks expanded): the refused ones alone are nacked."""
import pika
import pika.exceptions

from amqpcommon import connect, params, say, check, finish, cleanup

OK_Q, FULL_Q = 'tut.confirms', 'tut.confirms_full'
cleanup(queues=[OK_Q, FULL_Q])

# 1. blocking confirms
conn = connect()
ch = conn.channel()
ch.confirm_delivery()
ch.queue_declare(OK_Q, durable=True)
ch.queue_declare(FULL_Q, arguments={'x-max-length': 2, 'x-overflow': 'reject-publish'})
for i in range(1, 6):
    ch.basic_publish('', OK_Q, ('m%d' % i).encode(),
                     properties=pika.BasicProperties(delivery_mode=2))
    say('publish m%d to %s: acked' % (i, OK_Q))
for i in range(1, 4):
    try:
        ch.basic_publish('', FULL_Q, ('f%d' % i).encode())
        say('publish f%d to %s (max-length 2): acked' % (i, FULL_Q))
    except pika.exceptions.NackError:
        say('publish f%d to %s (max-length 2): nacked' % (i, FULL_Q))
# the channel goes on after a nack
ch.basic_publish('', OK_Q, b'after the nack')
say('publish after the nack: acked, channel open %s' % ch.is_open)
n_ok = ch.queue_declare(OK_Q, durable=True, passive=True).method.message_count
n_full = ch.queue_declare(FULL_Q, passive=True).method.message_count
say('%s holds %d, %s holds %d' % (OK_Q, n_ok, FULL_Q, n_full))
check((n_ok, n_full) == (6, 2), 'queue depths after confirms')
ch.queue_purge(OK_Q)
ch.queue_delete(FULL_Q)
ch.queue_declare(FULL_Q, arguments={'x-max-length': 0, 'x-overflow': 'reject-publish'})
conn.close()

# 2. asynchronous confirms, a batch of 10
N = 10
outcome = {}


def on_confirm(frame):
    m = frame.method
    kind = 'ack' if isinstance(m, pika.spec.Basic.Ack) else 'nack'
    tags = [t for t in range(1, m.delivery_tag + 1) if t not in outcome] \
        if m.multiple else [m.delivery_tag]
    for t in tags:
        outcome[t] = kind
    if len(outcome) >= N:
        frame_conn.close()


def on_channel(ch):
    def on_select(_):
        for i in range(1, N + 1):
            q = FULL_Q if i % 3 == 0 else OK_Q
            ch.basic_publish('', q, ('b%d' % i).encode())
    ch.confirm_delivery(on_confirm, callback=on_select)


def on_open(c):
    c.channel(on_open_callback=on_channel)


frame_conn = pika.SelectConnection(params(), on_open_callback=on_open,
                                   on_open_error_callback=lambda c, e: c.ioloop.stop(),
                                   on_close_callback=lambda c, e: c.ioloop.stop())
frame_conn.ioloop.call_later(20, lambda: frame_conn.close())
frame_conn.ioloop.start()
for t in range(1, N + 1):
    q = FULL_Q if t % 3 == 0 else OK_Q
    say('batch publish %d to %s: %s' % (t, q, outcome.get(t, 'no confirm')))
    check(outcome.get(t) == ('nack' if q == FULL_Q else 'ack'), 'confirm of publish %d' % t)
conn = connect()
ch = conn.channel()
n_ok = ch.queue_declare(OK_Q, durable=True, passive=True).method.message_count
say('%s holds the %d acked ones' % (OK_Q, n_ok))
check(n_ok == N - N // 3, 'acked publishes arrived')
conn.close()
cleanup(queues=[OK_Q, FULL_Q])
finish('confirms')
