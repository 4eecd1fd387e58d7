#!/usr/bin/env python3
"""RocketMQ gateway vs AMQP gateway vs the SQL path, same server, same run.

    rocketmq_bench.py --rmq 127.0.0.1:6302 --amqp amqp://guest:guest@127.0.0.1:6301/%2F \
        --sql 'host=/tmp/rmqb port=6300 dbname=bench user=postgres' --role bench_app \
        --pgdata /tmp/rmqb/data --rmq-pid PID --amqp-pid PID --node-path DIR/node_modules \
        [--n-seq 400] [--n-par 3000] [--reps 3] [--partitions 4]

bench/rocketmq_bench.sh starts the server, both gateways and this.  Every
repetition makes new streams of --partitions partitions (a RocketMQ topic is
a stream; the AMQP side publishes to a stream too, by the default exchange,
and consumes it as a stream consumer: the same storage, groups and acks
underneath), then runs, in an order rotated every repetition:
  send x1   N_SEQ sends one after another, each waiting for its answer:
            the Node client's producer.send (rocketmq_bench.js), pika's
            basic_publish with confirms (BlockingConnection), the gateway's
            own mq.send statement over libpq (rmq_sql_send.c, prepared and
            unnamed), and the Node client's Heartbeat (no SQL: its floor);
  send x64  N_PAR sends, 64 in flight: the Node client (64 concurrent
            sends), pika (SelectConnection, 64 unconfirmed), the SQL path
            (64 connections, one statement each); h2load (nghttp2-client,
            a C HTTP/2 client) sending the same framed SendMessageRequest
            (x1 and x64 streams on one connection): the gateway's own rate
            without the Node client's per-call cost (--no-h2load: not);
  recv+ack  everything the side sent: the Node client's SimpleConsumer
            (receive 32, the acks of a batch together), pika (a stream
            consumer, x-stream-offset first, prefetch 64, one ack a message).
--node-warmup N adds the Node sends and Heartbeats again, timed after N
untimed calls (rocketmq-warm, node-noop-warm), and the receive through a
second group, its first N messages (at most half) untimed: V8 compiles the client over
its first thousands of calls, and the default workloads time mostly that
(bench/results/2026-12-06-*-rmq-node-floor.md).
Each workload reports msg/s, p50/p99 latency (ms; for recv a batch's receive
+ acks) and the CPU it cost per message (microseconds): the client process,
the gateway (/proc/PID/stat) and the server (every process of the cluster).
Printed: the medians over repetitions, and the ratios of the issue's goals.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf('SC_CLK_TCK')


# ---------------------------------------------------------------- pika side
def pika_main(argv):
    """--pika MODE URL QUEUE N INFLIGHT: one timed pika workload, a JSON line"""
    import pika
    mode, url, queue, n, inflight = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])
    body = lambda: os.urandom(100)
    lat = []
    cpu0 = None

    def clock():
        """start of the timed part: the client's CPU from here on is counted"""
        nonlocal cpu0
        ru = resource.getrusage(resource.RUSAGE_SELF)
        cpu0 = ru.ru_utime + ru.ru_stime
        return time.perf_counter()
    params = pika.URLParameters(url)
    if mode == 'send' and inflight == 1:
        conn = pika.BlockingConnection(params)
        ch = conn.channel()
        ch.confirm_delivery()
        props = pika.BasicProperties(delivery_mode=2)
        ch.basic_publish('', queue, body(), properties=props)	# warm-up
        t0 = clock()
        for _ in range(n):
            t = time.perf_counter()
            ch.basic_publish('', queue, body(), properties=props, mandatory=False)
            lat.append(time.perf_counter() - t)
        secs = time.perf_counter() - t0
        conn.close()
        n_done = n
    elif mode == 'send':
        st = {'next': 1, 'done': 0, 't0': None, 'upto': 0, 'end': None}
        sent = {}
        props = pika.BasicProperties(delivery_mode=2)

        def pump(ch):
            while st['next'] <= n and st['next'] - 1 - st['done'] < inflight:
                sent[st['next']] = time.perf_counter()
                ch.basic_publish('', queue, body(), properties=props)
                st['next'] += 1

        def on_confirm(ch, frame):
            m = frame.method
            now = time.perf_counter()
            if isinstance(m, pika.spec.Basic.Nack):
                raise RuntimeError('nack %d' % m.delivery_tag)
            tags = range(st['upto'] + 1, m.delivery_tag + 1) if m.multiple else [m.delivery_tag]
            for tg in tags:
                t = sent.pop(tg, None)
                if t is not None:
                    lat.append(now - t)
                    st['done'] += 1
            if m.multiple:
                st['upto'] = m.delivery_tag
            if st['done'] >= n:
                st['end'] = now
                ch.connection.close()
            else:
                pump(ch)

        def on_open_ch(ch):
            ch.confirm_delivery(lambda f: on_confirm(ch, f),
                                callback=lambda _: (st.__setitem__('t0', clock()), pump(ch)))

        conn = pika.SelectConnection(params, on_open_callback=lambda c: c.channel(on_open_callback=on_open_ch),
                                     on_close_callback=lambda c, e: c.ioloop.stop())
        conn.ioloop.start()
        if st['end'] is None:
            raise RuntimeError('publisher stopped after %d confirms' % st['done'])
        secs = st['end'] - st['t0']
        n_done = st['done']
    else:	# recv: a stream consumer from the first message, one ack each
        conn = pika.BlockingConnection(params)
        ch = conn.channel()
        ch.basic_qos(prefetch_count=inflight)
        st = {'got': 0, 't0': None, 'last': None}

        def on_msg(c, m, p, b):
            now = time.perf_counter()
            if st['t0'] is None:
                st['t0'] = now
                clock()
            c.basic_ack(m.delivery_tag)
            st['got'] += 1
            st['last'] = now

        ch.basic_consume(queue, on_msg, arguments={'x-stream-offset': 'first'})
        deadline = time.time() + 600
        while st['got'] < n and time.time() < deadline:
            conn.process_data_events(time_limit=0.05)
        if st['got'] != n:
            raise RuntimeError('consumed %d of %d' % (st['got'], n))
        conn.close()
        secs = st['last'] - st['t0']
        n_done = n
    lat.sort()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({'mode': 'pika-' + mode, 'client_cpu_us': (ru.ru_utime + ru.ru_stime - cpu0) / n_done * 1e6, 'n': n_done, 'inflight': inflight, 'seconds': secs,
                      'rate': n_done / secs,
                      'p50_ms': lat[len(lat) // 2] * 1000 if lat else None,
                      'p99_ms': lat[int(len(lat) * 0.99)] * 1000 if lat else None}))
    return 0


# ---------------------------------------------------------------- harness
def proc_cpu(pid):
    """user + system seconds of one process (0 when it is gone, or no pid)"""
    if not pid:
        return 0.0
    try:
        with open('/proc/%d/stat' % pid) as f:
            f = f.read().rsplit(')', 1)[1].split()
        return (int(f[11]) + int(f[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def cluster_cpu(pgdata):
    """CPU seconds of the postmaster and all its children (backends, walwriter, ...):
    the live ones' own, plus what the postmaster reaped (cutime + cstime)"""
    with open(os.path.join(pgdata, 'postmaster.pid')) as f:
        pm = int(f.readline())
    with open('/proc/%d/stat' % pm) as f:
        s = f.read().rsplit(')', 1)[1].split()
    total = sum(int(x) for x in s[11:15]) / TICK
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                s = f.read().rsplit(')', 1)[1].split()
            if int(s[1]) == pm:
                total += (int(s[11]) + int(s[12])) / TICK
        except (OSError, IndexError, ValueError):
            pass
    return total


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Bench:
    def __init__(self, a):
        self.a = a
        self.sqlbin = '/tmp/rmq_sql_send.%d' % os.getpid()
        subprocess.run(['cc', '-O2', '-o', self.sqlbin, os.path.join(HERE, 'rmq_sql_send.c'),
                        '-I' + subprocess.check_output([os.environ.get('PG_CONFIG', 'pg_config'), '--includedir']).decode().strip(),
                        '-lpq'], check=True)
        self.env = dict(os.environ, RMQ_ENDPOINT=a.rmq, NODE_PATH=a.node_path)

    def psql(self, sql):
        r = subprocess.run(['psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', self.a.sql],
                           input=sql, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr)
        return r.stdout.strip()

    def idle(self):
        """the cluster's CPU per second while nothing is sent (checkpointer, walwriter,
        queue_ext's worker, autovacuum): subtracted from a workload's, whose wall time
        includes its client's start-up; the least of three 1-second samples, so that a
        burst (a checkpoint, an autovacuum) is not taken for the rate"""
        rates = []
        for _ in range(3):
            s0, t0 = cluster_cpu(self.a.pgdata), time.time()
            time.sleep(1.0)
            rates.append((cluster_cpu(self.a.pgdata) - s0) / (time.time() - t0))
        self.idle_rate = min(rates)
        return self.idle_rate

    def run(self, cmd, env=None):
        """run one workload command; its JSON line plus CPU per message"""
        c0, g0, s0, w0 = children_cpu(), self.gw_cpu(), cluster_cpu(self.a.pgdata), time.time()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env or self.env, timeout=900)
        c1, g1, s1, w1 = children_cpu(), self.gw_cpu(), cluster_cpu(self.a.pgdata), time.time()
        s1 -= getattr(self, 'idle_rate', 0.0) * (w1 - w0)
        if r.returncode:
            raise RuntimeError('%s failed: %s%s' % (' '.join(cmd), r.stdout, r.stderr))
        res = json.loads(r.stdout.strip().splitlines()[-1])
        # the client's own count of its timed part when it gives one (not its start-up);
        # the gateway's and the server's are over the whole run, so per call of the
        # timed part and of the warm-up both when there was one (--node-warmup)
        res['cpu_client_us'] = res.get('client_cpu_us', (c1 - c0) / res['n'] * 1e6)
        n = res['n'] + (res['warmup'] if res.get('warmup', 1) > 1 else 0)
        res['cpu_gw_us'] = (g1[0] - g0[0] + g1[1] - g0[1]) / n * 1e6
        res['cpu_rmq_us'] = (g1[0] - g0[0]) / n * 1e6
        res['cpu_amqp_us'] = (g1[1] - g0[1]) / n * 1e6
        res['cpu_server_us'] = (s1 - s0) / n * 1e6
        return res

    def gw_cpu(self):
        return (proc_cpu(self.a.rmq_pid) + (proc_cpu(self.a.base_pid) if self.a.base_pid else 0),
                proc_cpu(self.a.amqp_pid))

    def node(self, mode, topic, n, inflight, group='', endpoint=None, warmup=1):
        env = dict(self.env, RMQ_TOPIC=topic, RMQ_GROUP=group, RMQ_ENDPOINT=endpoint or self.a.rmq,
                   RMQ_WARMUP=str(warmup))
        return self.run(['node', os.path.join(HERE, 'rocketmq_bench.js'), mode, str(n), str(inflight)], env)

    def pika(self, mode, queue, n, inflight):
        return self.run([sys.executable, os.path.abspath(__file__), '--pika', mode, self.a.amqp,
                         queue, str(n), str(inflight)])

    def h2load(self, topic, n, inflight):
        """h2load (nghttp2-client, C) sending the same framed SendMessageRequest n times,
        inflight streams on one connection: the gateway without the Node client"""
        path = '/tmp/rmq_bench_body.%d.%s' % (os.getpid(), topic)
        if not os.path.exists(path):
            subprocess.run(['node', os.path.join(HERE, 'rocketmq_bench.js'), 'body', path], check=True,
                           env=dict(self.env, RMQ_TOPIC=topic))
        before = count_stream(self, topic, self.a.partitions)
        res = self.run([sys.executable, os.path.abspath(__file__), '--h2load', self.a.rmq, path, str(n),
                        str(inflight)])
        got = count_stream(self, topic, self.a.partitions) - before
        if got != n:
            raise RuntimeError('h2load: %d messages stored of %d sent' % (got, n))
        return res

    def sql(self, topic, n, inflight, how):
        return self.run([self.sqlbin, self.a.sql, topic, str(n), str(inflight), how])


def h2load_main(argv):
    """--h2load HOST:PORT BODYFILE N INFLIGHT: h2load's SendMessages, a JSON line"""
    import re
    endpoint, path, n, inflight = argv[0], argv[1], int(argv[2]), int(argv[3])
    t0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(['h2load', '-n', str(n), '-c', '1', '-m', str(inflight),
                        '-H', 'content-type: application/grpc', '-H', 'te: trailers', '-d', path,
                        'http://%s/apache.rocketmq.v2.MessagingService/SendMessage' % endpoint],
                       capture_output=True, text=True)
    t1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r'finished in ([\d.]+)(m?s), ([\d.]+) req/s', r.stdout)
    ok = re.search(r'(\d+) succeeded', r.stdout)
    mean = re.search(r'time for request:\s+\S+\s+\S+\s+([\d.]+)(m?s|us)', r.stdout)
    if r.returncode or not m or not ok or int(ok.group(1)) != n:
        raise RuntimeError('h2load failed: %s %s' % (r.stdout[-800:], r.stderr[-400:]))
    secs = float(m.group(1)) / (1000 if m.group(2) == 'ms' else 1)
    lat = float(mean.group(1)) * {'s': 1000, 'ms': 1, 'us': 0.001}[mean.group(2)] if mean else None
    print(json.dumps({'mode': 'h2load', 'n': n, 'inflight': inflight, 'seconds': secs, 'rate': n / secs,
                      'p50_ms': lat, 'p99_ms': None,
                      'client_cpu_us': (t1.ru_utime + t1.ru_stime - t0.ru_utime - t0.ru_stime) / n * 1e6}))
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--pika':
        return pika_main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == '--h2load':
        return h2load_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rmq', required=True)
    ap.add_argument('--amqp', required=True)
    ap.add_argument('--sql', required=True)
    ap.add_argument('--role', default='bench_app')
    ap.add_argument('--pgdata', required=True)
    ap.add_argument('--rmq-pid', type=int, required=True)
    ap.add_argument('--base', default='', help='host:port of a second mq-rocketmq (another build): '
                    'its workloads run beside, named rocketmq-base')
    ap.add_argument('--base-pid', type=int, default=0)
    ap.add_argument('--amqp-pid', type=int, required=True)
    ap.add_argument('--node-path', required=True)
    ap.add_argument('--n-seq', type=int, default=400)
    ap.add_argument('--n-par', type=int, default=3000)
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--partitions', type=int, default=4)
    ap.add_argument('--only', default='', help='comma list of send1,send64,recv')
    ap.add_argument('--no-h2load', dest='h2load', action='store_false',
                    help='without the h2load workloads (nghttp2-client)')
    ap.add_argument('--node-warmup', type=int, default=0,
                    help='also run the Node sends and Heartbeats after this many untimed calls '
                    '(rocketmq-warm, node-noop-warm): the client once V8 has compiled it')
    a = ap.parse_args()
    b = Bench(a)
    only = set(a.only.split(',')) if a.only else {'send1', 'send64', 'recv'}
    print('# rocketmq_bench: 100-byte random bodies, streams of %d partitions; send x1 %d, '
          'send x64 %d; %d repetitions; load %s; %s'
          % (a.partitions, a.n_seq, a.n_par, a.reps, os.getloadavg(),
             time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())), flush=True)
    res = {}

    def rec(key, r):
        res.setdefault(key, []).append(r)
        print('# rep %d %-22s %9.0f msg/s  p50 %7.3f ms  p99 %7.3f ms  cpu us/msg: client %6.1f '
              'gateway %6.1f server %6.1f'
              % (rep + 1, key, r['rate'], r['p50_ms'] or 0, r['p99_ms'] or 0, r['cpu_client_us'],
                 r['cpu_gw_us'], r['cpu_server_us']), flush=True)

    failed = {}

    def attempt(key, fn):
        """a workload that fails is counted and said, the run goes on"""
        try:
            rec(key, fn())
        except Exception as e:
            failed[key] = failed.get(key, 0) + 1
            print('# rep %d %-22s FAILED: %s' % (rep + 1, key, str(e).strip().splitlines()[-1][:300]),
                  flush=True)

    for rep in range(a.reps):
        tag = '%d_%d' % (os.getpid(), rep)
        t_rmq, t_amqp, t_sql, grp = 'bench_rmq_' + tag, 'bench_amqp_' + tag, 'bench_sql_' + tag, 'bench_g_' + tag
        t_base = 'bench_base_' + tag
        if a.base:
            b.psql("""
                SELECT mq.queue_declare('{r}', type => 'stream', arguments => '{{"partitions": {p}}}');
                SELECT mq.group_declare('{r}', '{g}', start => 'earliest');
                SELECT mq.grant('publish', 'queue', '{r}', '{role}');
                SELECT mq.grant('consume', 'queue', '{r}', '{role}');
            """.format(r=t_base, g=grp, p=a.partitions, role=a.role))
        b.psql("""
            SELECT mq.queue_declare('{r}', type => 'stream', arguments => '{{"partitions": {p}}}');
            SELECT mq.queue_declare('{q}', type => 'stream', arguments => '{{"partitions": {p}}}');
            SELECT mq.queue_declare('{s}', type => 'stream', arguments => '{{"partitions": {p}}}');
            SELECT mq.group_declare('{r}', '{g}', start => 'earliest');
            SELECT mq.group_declare('{r}', '{g}_warm', start => 'earliest');
            SELECT mq.grant('publish', 'queue', '{r}', '{role}');
            SELECT mq.grant('consume', 'queue', '{r}', '{role}');
            SELECT mq.grant('publish', 'queue', '{q}', '{role}');
            SELECT mq.grant('consume', 'queue', '{q}', '{role}');
            SELECT mq.grant('configure', 'queue', '{q}', '{role}');
            CHECKPOINT;
        """.format(r=t_rmq, q=t_amqp, s=t_sql, g=grp, p=a.partitions, role=a.role))
        jobs = []
        if 'send1' in only:
            jobs += [('send1 rocketmq', lambda: b.node('send', t_rmq, a.n_seq, 1)),
                     ('send1 amqp', lambda: b.pika('send', t_amqp, a.n_seq, 1)),
                     ('send1 sql-prepared', lambda: b.sql(t_sql, a.n_seq, 1, 'prepared')),
                     ('send1 sql-unnamed', lambda: b.sql(t_sql, a.n_seq, 1, 'unnamed')),
                     ('send1 node-noop', lambda: b.node('noop', t_rmq, a.n_seq, 1))]
            if a.node_warmup:
                jobs += [('send1 rocketmq-warm', lambda: b.node('send', t_rmq, a.n_seq, 1, warmup=a.node_warmup)),
                         ('send1 node-noop-warm', lambda: b.node('noop', t_rmq, a.n_seq, 1, warmup=a.node_warmup))]
            if a.h2load:
                jobs += [('send1 h2load', lambda: b.h2load(t_rmq, a.n_seq, 1))]
            if a.base:
                jobs += [('send1 rocketmq-base', lambda: b.node('send', t_base, a.n_seq, 1, endpoint=a.base))]
        if 'send64' in only:
            jobs += [('send64 rocketmq', lambda: b.node('send', t_rmq, a.n_par, 64)),
                     ('send64 amqp', lambda: b.pika('send', t_amqp, a.n_par, 64)),
                     ('send64 sql-prepared', lambda: b.sql(t_sql, a.n_par, 64, 'prepared')),
                     ('send64 node-noop', lambda: b.node('noop', t_rmq, a.n_par, 64))]
            if a.node_warmup:
                jobs += [('send64 rocketmq-warm', lambda: b.node('send', t_rmq, a.n_par, 64, warmup=a.node_warmup)),
                         ('send64 node-noop-warm', lambda: b.node('noop', t_rmq, a.n_par, 64, warmup=a.node_warmup))]
            if a.h2load:
                jobs += [('send64 h2load', lambda: b.h2load(t_rmq, a.n_par, 64))]
            if a.base:
                jobs += [('send64 rocketmq-base', lambda: b.node('send', t_base, a.n_par, 64, endpoint=a.base))]
        print('# rep %d: the cluster idle uses %.1f ms of CPU a second (subtracted)'
              % (rep + 1, b.idle() * 1000), flush=True)
        k = rep % len(jobs)
        for key, fn in jobs[k:] + jobs[:k]:
            attempt(key, fn)
        if 'recv' in only:
            n_r = count_stream(b, t_rmq, a.partitions)
            n_a = count_stream(b, t_amqp, a.partitions)
            pair = [('recv rocketmq', lambda: b.node('recv', t_rmq, n_r, 32, grp)),
                    ('recv amqp', lambda: b.pika('recv', t_amqp, n_a, 64))]
            if a.node_warmup:
                # the same stream through a second group: the first messages untimed
                w = min(a.node_warmup, n_r // 2)
                pair.append(('recv rocketmq-warm', lambda: b.node('recv', t_rmq, n_r - w, 32, grp + '_warm',
                                                                  warmup=w)))
            if a.base:
                n_b = count_stream(b, t_base, a.partitions)
                pair.append(('recv rocketmq-base', lambda: b.node('recv', t_base, n_b, 32, grp, endpoint=a.base)))
            pair = pair[rep % len(pair):] + pair[:rep % len(pair)]
            for key, fn in pair:
                attempt(key, fn)
        b.psql("SELECT mq.queue_delete('%s'); SELECT mq.queue_delete('%s'); SELECT mq.queue_delete('%s');"
               % (t_rmq, t_amqp, t_sql) + (" SELECT mq.queue_delete('%s');" % t_base if a.base else ''))

    med = {}
    print()
    print('| workload | msg/s | p50 ms | p99 ms | client CPU us/msg | gateway CPU us/msg | server CPU us/msg |')
    print('|---|---|---|---|---|---|---|')
    for key, rs in res.items():
        m = {k: statistics.median(r[k] for r in rs if r[k] is not None)
             for k in ('rate', 'p50_ms', 'p99_ms', 'cpu_client_us', 'cpu_gw_us', 'cpu_server_us')
             if any(r[k] is not None for r in rs)}
        med[key] = m
        print('| %s | %.0f | %.3f | %.3f | %.1f | %.1f | %.1f |'
              % (key, m['rate'], m.get('p50_ms', 0), m.get('p99_ms', 0), m['cpu_client_us'],
                 m['cpu_gw_us'], m['cpu_server_us']))
    print()
    for w in ('send1', 'send64', 'recv'):
        if '%s rocketmq' % w in res and '%s rocketmq-base' % w in res:
            ratios = [r['rate'] / q['rate'] for r, q in zip(res['%s rocketmq' % w], res['%s rocketmq-base' % w])]
            print('%s: rocketmq / rocketmq-base msg/s, per repetition %s, median %.2fx'
                  % (w, ' '.join('%.2f' % x for x in ratios), statistics.median(ratios)))
        for who in ('rocketmq', 'rocketmq-warm', 'h2load', 'node-noop', 'node-noop-warm'):
            if '%s %s' % (w, who) in res and '%s amqp' % w in res:
                ratios = [r['rate'] / q['rate'] for r, q in zip(res['%s %s' % (w, who)], res['%s amqp' % w])]
                print('%s: %s / amqp msg/s, per repetition %s, median %.2fx (goal >= 0.8x)'
                      % (w, who, ' '.join('%.2f' % x for x in ratios), statistics.median(ratios)))
    for w in ('send1', 'send64'):
        if '%s rocketmq' % w in res and '%s sql-prepared' % w in res:
            g, s = res['%s rocketmq' % w], res['%s sql-prepared' % w]
            # the cost of a send on the server side of the client: gateway + server CPU
            # (a server CPU sample of 0: too short a run to see it; no ratio)
            cost = [(r['cpu_gw_us'] + r['cpu_server_us']) / q['cpu_server_us']
                    if q['cpu_server_us'] > 0 else float('nan') for r, q in zip(g, s)]
            print('%s: (gateway + server CPU) / server CPU of the SQL path, per message, per repetition '
                  '%s, median %.2fx (goal <= 1.2x)' % (w, ' '.join('%.2f' % x for x in cost),
                                                       statistics.median(cost)))
            if w == 'send1' and 'send1 h2load' in res:
                t = [q['rate'] / r['rate'] for r, q in zip(res['send1 h2load'], s)]
                print('send1: time per send through the gateway (h2load, one at a time) / time per '
                      'prepared mq.send over libpq, per repetition %s, median %.2fx (goal <= 1.2x)'
                      % (' '.join('%.2f' % x for x in t), statistics.median(t)))
            if w == 'send1':
                n = res.get('send1 node-noop')
                lat = [(r['p50_ms'] - (z['p50_ms'] if n else 0)) / q['p50_ms']
                       for r, q, z in zip(g, s, n or g)]
                print('send1: (node send p50 - node Heartbeat p50) / SQL prepared p50, per repetition %s, '
                      'median %.2fx' % (' '.join('%.2f' % x for x in lat), statistics.median(lat)))
    for key, n in failed.items():
        print('%s: failed in %d of %d repetitions' % (key, n, a.reps))
    print('# load at end %s' % (os.getloadavg(),))
    os.unlink(b.sqlbin)
    for f in os.listdir('/tmp'):
        if f.startswith('rmq_bench_body.%d.' % os.getpid()):
            os.unlink(os.path.join('/tmp', f))
    return 0


def count_stream(b, topic, partitions):
    """messages in a stream (no retention: last - first + 1 per partition)"""
    return int(b.psql("SELECT sum(coalesce(l - f + 1, 0)) FROM mq.queues, unnest(first_offset, last_offset) AS u(f, l)"
                      " WHERE queue = '%s'" % topic))


if __name__ == '__main__':
    sys.exit(main())
