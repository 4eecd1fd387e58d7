#!/usr/bin/python3
"""A new consumer's first delivery, AMQP gateway vs RabbitMQ, same run.

    amqp_first_delivery.py --broker rabbit=amqp://guest:guest@127.0.0.1:5672/%2F \
                           --broker mq-amqp=amqp://app:secret@127.0.0.1:5673/%2F \
                           [--reps 30]

Each repetition, brokers alternating (drift hits both alike), on one pika
connection per broker kept open through the run:
  a durable queue of its own gets one persistent 100-byte message (published
  with a confirm, so it is in the queue), then basic.consume (manual acks,
  prefetch 10); measured:
    consume -> delivery:     from sending basic.consume to the first delivery
    consume-ok -> delivery:  from consume-ok (basic_consume returned) to it
  then, the consumer in place and idle for 0.2 s, one more publish:
    publish -> delivery:     from basic.publish to its delivery
  the consumer is cancelled and the queue deleted.
Prints per broker the medians (and p90) in milliseconds over repetitions.
"""
import argparse
import statistics
import time
import uuid

import pika

BODY = b'x' * 100


def one(conn, ch, pub):
    """one repetition on broker connection conn: three latencies (ms)"""
    q = 'bench.first.%s' % uuid.uuid4().hex[:8]
    ch.queue_declare(q, durable=True)
    pub.basic_publish('', q, BODY, properties=pika.BasicProperties(delivery_mode=2))
    got = []

    def on_msg(c, m, p, b):
        got.append(time.perf_counter())
        c.basic_ack(m.delivery_tag)

    t0 = time.perf_counter()
    tag = ch.basic_consume(q, on_msg)
    t_ok = time.perf_counter()
    while not got:
        conn.process_data_events(time_limit=0)
    first = ((got[0] - t0) * 1000, (got[0] - t_ok) * 1000)
    conn.process_data_events(time_limit=0.2)
    t1 = time.perf_counter()
    pub.basic_publish('', q, BODY, properties=pika.BasicProperties(delivery_mode=2))
    while len(got) < 2:
        conn.process_data_events(time_limit=0)
    after = (got[1] - t1) * 1000
    ch.basic_cancel(tag)
    ch.queue_delete(q)
    return first + (after,)


def summary(xs):
    xs = sorted(xs)
    return '%7.2f %7.2f' % (statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.9))])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--broker', action='append', required=True, help='NAME=URL (repeat)')
    ap.add_argument('--reps', type=int, default=30)
    a = ap.parse_args()
    brokers = [b.split('=', 1) for b in a.broker]
    open_ = {}
    for nm, url in brokers:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.basic_qos(prefetch_count=10)
        pub = conn.channel()
        pub.confirm_delivery()
        open_[nm] = (conn, ch, pub)
        one(conn, ch, pub)                  # warm-up, not counted
    res = {nm: ([], [], []) for nm, _ in brokers}
    for _ in range(a.reps):
        for nm, _ in brokers:
            for lst, v in zip(res[nm], one(*open_[nm])):
                lst.append(v)
    print('%-10s %-17s %-17s %-17s' % ('broker', 'consume->deliv', 'consume-ok->deliv',
                                        'publish->deliv'))
    print('%-10s %-17s %-17s %-17s' % ('', 'median p90 (ms)', 'median p90 (ms)', 'median p90 (ms)'))
    for nm, _ in brokers:
        print('%-10s %s   %s   %s' % ((nm,) + tuple(summary(x) for x in res[nm])))
    for conn, _, _ in open_.values():
        conn.close()


main()
