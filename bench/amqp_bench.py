#!/usr/bin/python3
"""The same pika workload against an AMQP 0-9-1 broker: mq-amqp or RabbitMQ.

    amqp_bench.py HOST PORT USER PASSWORD CONNECTIONS MESSAGES [WINDOW]

Each of CONNECTIONS processes publishes MESSAGES/CONNECTIONS messages of 100
bytes (persistent) to a durable queue of its own with publisher confirms,
keeping up to WINDOW (default 100) unconfirmed, and records each publish's
confirm latency; then consumes them back with prefetch 100 and an ack per
message.  Prints one JSON line: publish msg/s, confirm latency p50/p99 (ms),
consume msg/s.  docs/amqp.md has figures.
"""
import json
import multiprocessing
import sys
import time

import pika

HOST, PORT, USER, PASSWORD = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
CONNS, MESSAGES = int(sys.argv[5]), int(sys.argv[6])
WINDOW = int(sys.argv[7]) if len(sys.argv) > 7 else 100
BODY = b'b' * 100


def params():
    return pika.ConnectionParameters(HOST, PORT, '/', pika.PlainCredentials(USER, PASSWORD),
                                     heartbeat=0)


def publisher(idx, n, start, results):
    queue = 'bench_amqp_%d' % idx
    lat = []
    sent_at = {}
    state = {'seq': 0, 'confirmed': 0}

    def on_open(conn):
        conn.channel(on_open_callback=on_channel)

    def on_channel(ch):
        state['ch'] = ch

        def declared(_):
            ch.queue_purge(queue, callback=lambda _: ch.confirm_delivery(on_confirm, callback=go))

        ch.queue_declare(queue, durable=True, callback=declared)

    def go(_):
        start.wait()
        state['t0'] = time.time()
        fill()

    def fill():
        ch = state['ch']
        while state['seq'] < n and state['seq'] - state['confirmed'] < WINDOW:
            state['seq'] += 1
            sent_at[state['seq']] = time.time()
            ch.basic_publish('', queue, BODY, pika.BasicProperties(delivery_mode=2))

    def on_confirm(frame):
        now = time.time()
        m = frame.method
        check_nack = isinstance(m, pika.spec.Basic.Nack)
        if check_nack:
            raise SystemExit('nack')
        tags = [t for t in list(sent_at) if t <= m.delivery_tag] if m.multiple else [m.delivery_tag]
        for t in tags:
            lat.append(now - sent_at.pop(t))
        state['confirmed'] += len(tags)
        if state['confirmed'] >= n:
            state['t1'] = time.time()
            state['ch'].connection.close()
        else:
            fill()

    conn = pika.SelectConnection(params(), on_open_callback=on_open,
                                 on_close_callback=lambda *a: conn.ioloop.stop())
    conn.ioloop.start()
    results.put(('pub', idx, state['t0'], state['t1'], lat))


def consumer(idx, n, start, results):
    queue = 'bench_amqp_%d' % idx
    conn = pika.BlockingConnection(params())
    ch = conn.channel()
    ch.basic_qos(prefetch_count=100)
    got = [0]

    def cb(c, m, p, b):
        c.basic_ack(m.delivery_tag)
        got[0] += 1
        if got[0] >= n:
            c.stop_consuming()

    ch.basic_consume(queue, cb)
    start.wait()
    t0 = time.time()
    ch.start_consuming()
    t1 = time.time()
    ch.queue_delete(queue)
    conn.close()
    results.put(('con', idx, t0, t1, []))


def run(kind):
    per = MESSAGES // CONNS
    start = multiprocessing.Event()
    results = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=kind, args=(i, per, start, results))
             for i in range(CONNS)]
    for p in procs:
        p.start()
    time.sleep(1.5)         # connected and declared
    start.set()
    out = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    t0 = min(r[2] for r in out)
    t1 = max(r[3] for r in out)
    lat = sorted(x for r in out for x in r[4])
    return per * CONNS / (t1 - t0), lat


def main():
    pub_rate, lat = run(publisher)
    con_rate, _ = run(consumer)
    print(json.dumps({
        'connections': CONNS, 'messages': MESSAGES, 'window': WINDOW,
        'publish_confirmed_per_s': round(pub_rate),
        'confirm_p50_ms': round(lat[len(lat) // 2] * 1000, 2),
        'confirm_p99_ms': round(lat[int(len(lat) * 0.99)] * 1000, 2),
        'consume_acked_per_s': round(con_rate)}))


if __name__ == '__main__':
    main()
