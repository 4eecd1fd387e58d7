#!/usr/bin/env python3
"""The Node client's CPU per call against mq-rocketmq and against servers that do nothing.

    rmq_node_floor.py --server NAME=HOST:PORT[@PID] ... --node-path DIR/node_modules \
        [--topic nfloor] [--reps 5] [--n-noop 3000] [--n-seq 2000] [--n-par 3000] \
        [--warmups 1,5000]

bench/rmq_node_floor.sh starts the cluster, mq-rocketmq and the floor servers
(rmq_node_floor_server.js: @grpc/grpc-js with the client's own stubs, and
Node's http2 module alone) and runs this.  Every repetition runs, for each
server in an order rotated every repetition, bench/rocketmq_bench.js's
  noop x1    Heartbeats one after another (no SQL in mq-rocketmq either)
  send x1    producer.send of 100 random bytes, each awaited
  send x64   64 sends in flight
  recv       receive (32 a call) and ack --n-recv messages, the acks of a
             batch together; a fresh stream and group per run, filled over
             SQL beforehand (the floors make their messages up)
once per --warmups value: the calls made untimed before the clock starts
(1 as rocketmq_bench.sh; thousands: V8 has compiled the client's hot paths).
Per run: the client's CPU per call (user, system, its main thread's, read and
write system calls, voluntary context switches, RPCs by name) and the
server's CPU per call (/proc/PID/stat, when its PID is given).  Printed: each
run's line, then medians over repetitions, and each server's client CPU
against the first server's, per repetition (median of the ratios).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from rocketmq_bench import proc_cpu

HERE = os.path.dirname(os.path.abspath(__file__))


def psql(conninfo, sql):
    subprocess.run(['psql', conninfo, '-XAtq', '-v', 'ON_ERROR_STOP=1', '-c', sql], check=True,
                   capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--server', action='append', required=True, help='NAME=HOST:PORT[@PID]')
    ap.add_argument('--node-path', required=True)
    ap.add_argument('--topic', default='nfloor')
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--n-noop', type=int, default=3000)
    ap.add_argument('--n-seq', type=int, default=2000)
    ap.add_argument('--n-par', type=int, default=3000)
    ap.add_argument('--warmups', default='1,5000')
    ap.add_argument('--n-recv', type=int, default=3200)
    ap.add_argument('--sql', default='', help='libpq conninfo of the cluster (recv: its streams)')
    ap.add_argument('--workloads', default='noop1,send1,send64')
    a = ap.parse_args()
    servers = []
    for s in a.server:
        name, rest = s.split('=', 1)
        ep, _, pid = rest.partition('@')
        servers.append((name, ep, int(pid) if pid else None))
    warmups = [int(w) for w in a.warmups.split(',')]
    spec = {'noop1': ('noop', a.n_noop, 1), 'send1': ('send', a.n_seq, 1), 'send64': ('send', a.n_par, 64),
            'recv': ('recv', a.n_recv, 32)}
    workloads = [w for w in a.workloads.split(',')]
    env = dict(os.environ, NODE_PATH=a.node_path, RMQ_TOPIC=a.topic)
    runs = {}
    print('# rmq_node_floor: servers %s; workloads %s: noop x1 %d, send x1 %d, send x64 %d, recv %d; '
          'warm-ups %s; %d repetitions'
          % (', '.join('%s=%s' % (n, e) for n, e, _ in servers), a.workloads, a.n_noop, a.n_seq, a.n_par,
             a.n_recv, a.warmups, a.reps), flush=True)
    for rep in range(a.reps):
        print('# repetition %d, load %s' % (rep + 1, ' '.join(open('/proc/loadavg').read().split()[:3])),
              flush=True)
        k = rep % len(servers)
        order = servers[k:] + servers[:k]
        for wl in workloads:
            mode, n, inflight = spec[wl]
            for warm in warmups:
                for name, ep, pid in order:
                    topic = a.topic
                    if mode == 'recv':
                        topic = 'nrecv_%d_%d_%d_%s' % (os.getpid(), rep, warm, name.replace('-', '_'))
                        psql(a.sql, """
                            SELECT mq.queue_declare('{t}', type => 'stream', arguments => '{{"partitions": 4}}');
                            SELECT mq.group_declare('{t}', '{t}', start => 'earliest');
                            SELECT mq.grant('consume', 'queue', '{t}', 'bench_app');
                            SELECT count(mq.publish('', '{t}', substr(sha512(int8send(m)) || sha512(int8send(-m)), 1, 100)))
                              FROM generate_series(1, {n}) m;
                            CHECKPOINT;""".format(t=topic, n=n + (warm if warm > 1 else 0)))
                    c0 = proc_cpu(pid)
                    r = subprocess.run(['node', os.path.join(HERE, 'rocketmq_bench.js'), mode, str(n),
                                        str(inflight)], env=dict(env, RMQ_ENDPOINT=ep, RMQ_WARMUP=str(warm),
                                                                 RMQ_TOPIC=topic, RMQ_GROUP=topic),
                                       capture_output=True, text=True, timeout=600)
                    c1 = proc_cpu(pid)
                    if mode == 'recv':
                        psql(a.sql, "SELECT mq.queue_delete('%s')" % topic)
                    if r.returncode:
                        sys.exit('%s %s: %s' % (name, wl, r.stderr))
                    res = json.loads(r.stdout.strip().splitlines()[-1])
                    # the server's CPU over the whole run (start-up and warm-up too), per timed call
                    res['server_us'] = (c1 - c0) / n * 1e6 if pid else None
                    res['rpcs_per_call'] = sum(res['rpcs'].values()) / n
                    key = (wl, warm, name)
                    runs.setdefault(key, []).append(res)
                    print('%-7s warm %-5d %-14s %8.0f/s p50 %6.3f ms cpu %7.1f us (user %6.1f sys %6.1f main %6.1f) '
                          'syscr %.2f syscw %.2f vcsw %.2f rpcs %s server %s'
                          % (wl, warm, name, res['rate'], res['p50_ms'], res['client_cpu_us'], res['user_us'], res['sys_us'],
                             res['main_us'], res['syscr'], res['syscw'], res['vcsw'],
                             json.dumps(res['rpcs'], separators=(',', ':')),
                             '%.1f us' % res['server_us'] if pid else '-'), flush=True)
    med = statistics.median
    print('\n# medians over %d repetitions (us per call; syscalls and switches per call)' % a.reps)
    print('%-7s %-5s %-14s %8s %7s %8s %8s %8s %8s %6s %6s %6s %6s %9s' %
          ('run', 'warm', 'server', 'msg/s', 'p50 ms', 'cpu', 'user', 'sys', 'main', 'syscr', 'syscw', 'vcsw',
           'rpcs', 'server'))
    for wl in workloads:
        for warm in warmups:
            for name, _, pid in servers:
                rs = runs[(wl, warm, name)]
                print('%-7s %-5d %-14s %8.0f %7.3f %8.1f %8.1f %8.1f %8.1f %6.2f %6.2f %6.2f %6.2f %9s' % (
                    wl, warm, name, med(r['rate'] for r in rs), med(r['p50_ms'] for r in rs),
                    med(r['client_cpu_us'] for r in rs),
                    med(r['user_us'] for r in rs), med(r['sys_us'] for r in rs),
                    med(r['main_us'] for r in rs), med(r['syscr'] for r in rs), med(r['syscw'] for r in rs),
                    med(r['vcsw'] for r in rs), med(r['rpcs_per_call'] for r in rs),
                    '%.1f' % med(r['server_us'] for r in rs) if pid else '-'))
    first = servers[0][0]
    print('\n# the client\'s CPU per call against each server / against %s (median of per-repetition ratios)'
          % first)
    for wl in workloads:
        for warm in warmups:
            base = runs[(wl, warm, first)]
            print('%-7s warm %-5d %s' % (wl, warm, '  '.join(
                '%s %.2f' % (name, med(r['client_cpu_us'] / b['client_cpu_us']
                                        for r, b in zip(runs[(wl, warm, name)], base)))
                for name, _, _ in servers[1:])))


if __name__ == '__main__':
    main()
