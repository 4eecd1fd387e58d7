#!/usr/bin/python3
"""AMQP gateway vs RabbitMQ: the same pika workload against both, same run.

    amqp_bench.py --broker rabbit=amqp://guest:guest@127.0.0.1:5672/%2F \
                  --broker mq-amqp=amqp://app:secret@127.0.0.1:5673/%2F \
                  [--conns 1,8] [--messages 4000] [--reps 3] [--window 100]

For each broker, connection count and repetition (brokers alternate within a
repetition, so drift hits both alike):
  publish: each connection (its own process) publishes --messages / conns
    persistent 100-byte messages to one durable queue with publisher confirms,
    at most --window unconfirmed at a time (pika SelectConnection); the time
    from each basic.publish to its ack is its confirm latency;
  consume: as many connections consume that queue with manual acks (one ack
    per message), basic.qos prefetch 100, until it is empty.
Prints per broker and connection count the medians over repetitions of
publish msg/s, p50/p99 publish-confirm latency (ms) and consume msg/s, then
the ratios broker/first broker.  pika is python: with 2 cores the client
itself costs a share of the CPU both brokers see alike.
"""
import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

import pika

QUEUE = 'bench.amqp'
BODY = b'x' * 100


def publisher(url, n, window, out):
    """Publish n messages with confirms, window in flight: (seconds, latencies)"""
    sent = {}
    lat = []
    state = {'next': 1, 'done': 0, 'start': None, 'acked_upto': 0}

    def pump(ch):
        while state['next'] <= n and state['next'] - 1 - state['done'] < window:
            tag = state['next']
            sent[tag] = time.perf_counter()
            ch.basic_publish('', QUEUE, BODY, properties=pika.BasicProperties(delivery_mode=2))
            state['next'] += 1

    def on_confirm(frame):
        m = frame.method
        now = time.perf_counter()
        tags = [t for t in range(state['acked_upto'] + 1, m.delivery_tag + 1) if t in sent] \
            if m.multiple else [m.delivery_tag]
        for t in tags:
            t0 = sent.pop(t, None)
            if t0 is not None:
                lat.append(now - t0)
                state['done'] += 1
        if m.multiple:
            state['acked_upto'] = m.delivery_tag
        if isinstance(m, pika.spec.Basic.Nack):
            out.put(('error', 'nack %d' % m.delivery_tag))
        if state['done'] >= n:
            state['end'] = time.perf_counter()
            conn.close()
        else:
            pump(chan[0])

    chan = []

    def on_channel(ch):
        chan.append(ch)

        def go(_):
            state['start'] = time.perf_counter()
            pump(ch)
        ch.confirm_delivery(on_confirm, callback=go)

    conn = pika.SelectConnection(pika.URLParameters(url),
                                 on_open_callback=lambda c: c.channel(on_open_callback=on_channel),
                                 on_close_callback=lambda c, e: c.ioloop.stop(),
                                 on_open_error_callback=lambda c, e: c.ioloop.stop())
    conn.ioloop.start()
    if 'end' not in state:
        out.put(('error', 'publisher did not finish (%d of %d confirmed)' % (state['done'], n)))
        return
    out.put(('pub', state['end'] - state['start'], lat))


def consumer(url, stop_at_empty, out):
    """Consume with acks, prefetch 100, until the queue stays empty 0.5 s"""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=100)
    count = [0]
    last = [time.perf_counter()]

    def on_msg(c, m, p, b):
        c.basic_ack(m.delivery_tag)
        count[0] += 1
        last[0] = time.perf_counter()

    ch.basic_consume(QUEUE, on_msg)
    start = time.perf_counter()
    while time.perf_counter() - last[0] < 0.5 or count[0] == 0:
        conn.process_data_events(time_limit=0.05)
        if time.perf_counter() - start > 300:
            break
    conn.close()
    out.put(('con', count[0], start, last[0]))


def reset_queue(url):
    c = pika.BlockingConnection(pika.URLParameters(url))
    ch = c.channel()
    ch.queue_delete(QUEUE)
    ch.queue_declare(QUEUE, durable=True)
    c.close()


def queue_depth(url):
    c = pika.BlockingConnection(pika.URLParameters(url))
    n = c.channel().queue_declare(QUEUE, durable=True, passive=True).method.message_count
    c.close()
    return n


def one_run(url, conns, messages, window):
    reset_queue(url)
    q = mp.Queue()
    per = messages // conns
    procs = [mp.Process(target=publisher, args=(url, per, window, q)) for _ in range(conns)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    res = [q.get(timeout=600) for _ in procs]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    errors = [r[1] for r in res if r[0] == 'error']
    if errors:
        raise RuntimeError('; '.join(errors))
    lat = sorted(x for r in res for x in r[2])
    total = per * conns
    pub_rate = total / max(r[1] for r in res)
    depth = queue_depth(url)
    if depth != total:
        raise RuntimeError('queue holds %d after %d confirmed publishes' % (depth, total))
    procs = [mp.Process(target=consumer, args=(url, True, q)) for _ in range(conns)]
    for p in procs:
        p.start()
    res = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    got = sum(r[1] for r in res)
    start, end = min(r[2] for r in res), max(r[3] for r in res)
    if got != total:
        raise RuntimeError('consumed %d of %d' % (got, total))
    return {'pub': pub_rate, 'p50': lat[len(lat) // 2] * 1000,
            'p99': lat[int(len(lat) * 0.99) - 1] * 1000,
            'con': got / (end - start), 'wall': wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--broker', action='append', required=True, help='NAME=URL (repeat)')
    ap.add_argument('--conns', default='1,8')
    ap.add_argument('--messages', type=int, default=4000)
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--window', type=int, default=100)
    a = ap.parse_args()
    brokers = [b.split('=', 1) for b in a.broker]
    conns = [int(x) for x in a.conns.split(',')]
    print('# amqp_bench: %d messages of %d bytes per run, durable queue, persistent, confirms '
          '(window %d), consume with acks prefetch 100; %d repetitions; load %s'
          % (a.messages, len(BODY), a.window, a.reps, os.getloadavg()), flush=True)
    results = {}
    for rep in range(a.reps):
        for c in conns:
            order = brokers if rep % 2 == 0 else list(reversed(brokers))
            for name, url in order:
                r = one_run(url, c, a.messages, a.window)
                results.setdefault((name, c), []).append(r)
                print('# rep %d %-8s conns %d: publish %.0f msg/s (p50 %.2f ms, p99 %.2f ms), '
                      'consume %.0f msg/s' % (rep + 1, name, c, r['pub'], r['p50'], r['p99'], r['con']),
                      flush=True)
    print()
    print('| broker | connections | publish msg/s (confirms) | confirm p50 ms | confirm p99 ms '
          '| consume msg/s (acks) |')
    print('|---|---|---|---|---|---|')
    med = {}
    for (name, c), rs in results.items():
        med[(name, c)] = {k: statistics.median(r[k] for r in rs) for k in ('pub', 'p50', 'p99', 'con')}
        m = med[(name, c)]
        print('| %s | %d | %.0f | %.2f | %.2f | %.0f |' % (name, c, m['pub'], m['p50'], m['p99'], m['con']))
    ref = brokers[0][0]
    for name, _ in brokers[1:]:
        print()
        for c in conns:
            m, r = med[(name, c)], med[(ref, c)]
            print('%s / %s, %d connection(s): publish %.2fx, consume %.2fx, p99 confirm latency %.2fx'
                  % (name, ref, c, m['pub'] / r['pub'], m['con'] / r['con'], m['p99'] / r['p99']))
    print('# load at end %s' % (os.getloadavg(),))
    return 0


if __name__ == '__main__':
    sys.exit(main())
