#!/usr/bin/python3
"""Channel churn: AMQP channel open/close against several brokers, same run.

    amqp_churn.py --broker rabbit=amqp://guest:guest@127.0.0.1:5672/%2F \
                  --broker mq-amqp=amqp://app:secret@127.0.0.1:5673/%2F \
                  [--pairs 1000] [--at-once 256] [--reps 5]

For each broker and repetition (brokers alternate within a repetition, so
drift hits both alike), on one connection (pika):
  seq:       --pairs channel.open / channel.close pairs, one after another
             (BlockingConnection: each waits for its open-ok and close-ok);
  seq+pub:   the same with a basic.publish on each channel (no confirms):
             a channel that runs a statement (mq-amqp: a PostgreSQL session);
  at-once:   --at-once channel.open sent together (SelectConnection), until
             every open-ok; then their channel.close together, until every
             close-ok; the time of both;
  at-once+pub: the same with a basic.publish on each channel once open.
Prints the medians over repetitions in seconds and the ratios to the first
broker.
"""
import argparse
import os
import statistics
import sys
import time

import pika

QUEUE = 'bench.churn'


def seq(url, pairs, publish):
    conn = pika.BlockingConnection(pika.URLParameters(url))
    if publish:
        conn.channel().queue_declare(QUEUE)
    t0 = time.perf_counter()
    for _ in range(pairs):
        ch = conn.channel()
        if publish:
            ch.basic_publish('', QUEUE, b'x')
        ch.close()
    t = time.perf_counter() - t0
    if publish:
        ch = conn.channel()
        ch.queue_purge(QUEUE)
    conn.close()
    return t


def at_once(url, n, publish):
    """n channels opened together, then closed together: seconds, or an error"""
    st = {'open': 0, 'closed': 0, 'chans': [], 't0': None, 'end': None, 'err': None}

    def on_closed(ch, reason):
        code = getattr(reason, 'reply_code', 0)
        if code not in (0, 200):
            st['err'] = 'channel %d closed: %r' % (ch.channel_number, reason)
        st['closed'] += 1
        if st['closed'] == n:
            st['end'] = time.perf_counter()
            conn.close()

    def on_open(ch):
        st['chans'].append(ch)
        ch.add_on_close_callback(on_closed)
        if publish:
            ch.basic_publish('', QUEUE, b'x')
        st['open'] += 1
        if st['open'] == n:
            for c in st['chans']:
                c.close()

    def go(c):
        if publish:
            c.channel(on_open_callback=lambda ch: ch.queue_declare(
                QUEUE, callback=lambda _: start(c, ch)))
        else:
            start(c, None)

    def start(c, first):
        if first is not None:
            first.close()
        st['t0'] = time.perf_counter()
        for _ in range(n):
            c.channel(on_open_callback=on_open)

    conn = pika.SelectConnection(pika.URLParameters(url), on_open_callback=go,
                                 on_close_callback=lambda c, e: c.ioloop.stop(),
                                 on_open_error_callback=lambda c, e: c.ioloop.stop())
    conn.ioloop.start()
    if st['err'] or st['end'] is None:
        raise RuntimeError(st['err'] or 'at-once: %d open, %d closed of %d'
                           % (st['open'], st['closed'], n))
    if publish:
        c = pika.BlockingConnection(pika.URLParameters(url))
        c.channel().queue_purge(QUEUE)
        c.close()
    return st['end'] - st['t0']


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--broker', action='append', required=True, help='NAME=URL (repeat)')
    ap.add_argument('--pairs', type=int, default=1000)
    ap.add_argument('--at-once', type=int, default=256)
    ap.add_argument('--reps', type=int, default=5)
    a = ap.parse_args()
    brokers = [b.split('=', 1) for b in a.broker]
    kinds = [('seq', lambda u: seq(u, a.pairs, False)),
             ('seq+pub', lambda u: seq(u, a.pairs, True)),
             ('at-once', lambda u: at_once(u, a.at_once, False)),
             ('at-once+pub', lambda u: at_once(u, a.at_once, True))]
    print('# amqp_churn: %d sequential open/close pairs, %d channels at once; %d repetitions; '
          'load %s' % (a.pairs, a.at_once, a.reps, os.getloadavg()), flush=True)
    res = {}
    for rep in range(a.reps):
        order = brokers if rep % 2 == 0 else list(reversed(brokers))
        for kind, fn in kinds:
            for name, url in order:
                t = fn(url)
                res.setdefault((name, kind), []).append(t)
                print('# rep %d %-8s %-12s %.3f s' % (rep + 1, name, kind, t), flush=True)
    print()
    print('| broker | %s |' % ' | '.join('%s s' % k for k, _ in kinds))
    print('|---|%s' % ('---|' * len(kinds)))
    med = {k: statistics.median(v) for k, v in res.items()}
    for name, _ in brokers:
        print('| %s | %s |' % (name, ' | '.join('%.3f' % med[(name, k)] for k, _ in kinds)))
    ref = brokers[0][0]
    for name, _ in brokers[1:]:
        print()
        print('%s / %s (time, lower is better): %s' % (name, ref, ', '.join(
            '%s %.2fx' % (k, med[(name, k)] / med[(ref, k)]) for k, _ in kinds)))
    print('# load at end %s' % (os.getloadavg(),))
    return 0


if __name__ == '__main__':
    sys.exit(main())
