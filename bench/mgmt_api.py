#!/usr/bin/python3
"""The management HTTP API of mq-amqp (docs/management.md): answer times, and
publish/consume with the web UI polling it or not, side by side.

    mgmt_api.py --api http://127.0.0.1:15672 --user app --password secret \
                [--setup] [--queues 1000] [--streams 10] [--groups-per-stream 10] \
                [--reps 30] [--amqp amqp://app:secret@127.0.0.1:5672/%2F] \
                [--messages 4000] [--rounds 3] [--poll-interval 1.0]

--setup first declares, as the API's user, --queues classic queues (bench.q0001, ...)
and --streams streams of 4 partitions with --groups-per-stream consumer groups each
(1,000 queues and 100 groups by default), through psql on the bench server
(BENCH_HOST, BENCH_PORT, BENCH_DB as benchlib.py; BENCH_USER: the API's user).

1. Each API path the web UI and rabbitmqadmin use, --reps times after one
   warm-up call: median and p90 answer time in ms over keep-alive-less
   requests (one TCP connection per call, as curl and rabbitmqadmin make),
   and whether the median is under 100 ms (the issue's bound; reported,
   not asserted).  With --cpu-pids (the postmaster's and mq-amqp's process
   ids, on this machine): also the CPU time a call costs the server side,
   user + system of those processes and their children (the backends;
   /proc), per call: on a loaded machine the answer time is mostly waiting
   for a core, and this is the figure that says what a call costs.
2. With --amqp: amqp_bench.py's publish/consume run (pika, confirms, acks,
   one connection) --rounds times alternating "UI idle" and "UI polled"
   (a thread GETs what the overview and queues pages fetch every
   --poll-interval seconds: the overview, one page of 100 queues, the
   streams and the groups), medians side by side.
   With --ui-browser: "UI polled" is a real browser instead, Debian's
   headless Chromium with the UI's queues page open and its refresh every
   --poll-interval seconds (bench/mgmt_ui_render.js --poll, started before
   the round and closed after it; NODE_PATH must name the node_modules of
   test/mgmt_ui/package-lock.json, see that script's header).  Rounds go
   A B B A A B ..., and the table gives the medians and the ratio
   polled / idle.
"""
import argparse
import base64
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# the web UI's queues page: the first page of 100 rows, the columns it shows
UI_QUEUES = ('/api/queues/%2F?page=1&page_size=100&sort=name&columns=name,vhost,type,state,'
             'messages_ready,messages_unacknowledged,messages,consumers,'
             'message_stats.publish_details,message_stats.deliver_get_details')

PATHS = [
    '/api/overview',
    '/api/whoami',
    '/api/vhosts',
    '/api/queues',
    '/api/queues/%2F',
    '/api/queues/%2F?columns=name,messages',
    UI_QUEUES,
    '/api/queues/%2F?page=1&page_size=100&sort=message_stats.publish_details.rate&sort_reverse=true',
    '/api/queues/%2F/bench.q0500',
    '/api/exchanges/%2F',
    '/api/bindings/%2F',
    '/api/connections',
    '/api/channels',
    '/api/queue-ext/streams/%2F',
    '/api/queue-ext/groups/%2F',
    '/api/queue-ext/dead-letters/%2F',
    '/api/queue-ext/half/%2F',
    '/api/queue-ext/replication',
    '/',
]

UI_POLL = ['/api/overview', UI_QUEUES, '/api/queue-ext/streams/%2F', '/api/queue-ext/groups/%2F']


def get(api, path, auth):
    req = urllib.request.Request(api + path, headers={'Authorization': auth,
                                                      'Connection': 'close'})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            body = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        body = e.read()
        status = e.code
    return time.perf_counter() - t0, status, len(body)


def proc_cpu(roots):
    """CPU seconds (user + system) of the processes roots, of their living
    descendants, and of the children they reaped (cutime, cstime), /proc"""
    tck = os.sysconf('SC_CLK_TCK')
    kids = {}
    own = {}
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                st = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        pid = int(d)
        kids.setdefault(int(st[1]), []).append(pid)
        own[pid] = (int(st[11]) + int(st[12]), int(st[13]) + int(st[14]))
    total = 0
    todo = list(roots)
    seen = set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in own:
            continue
        seen.add(pid)
        total += own[pid][0] + (own[pid][1] if pid in roots else 0)
        todo.extend(kids.get(pid, []))
    return total / tck


def setup(a):
    import benchlib
    benchlib.USER = a.user
    benchlib.CONN[benchlib.CONN.index('-U') + 1] = a.user
    os.environ['PGPASSWORD'] = a.password
    benchlib.log('# setup: %d queues, %d streams x %d groups' % (a.queues, a.streams, a.groups_per_stream))
    benchlib.psql("SELECT count(mq.queue_declare(format('bench.q%%s', lpad(i::text, 4, '0')))) "
                  "FROM generate_series(1, %d) i" % a.queues)
    benchlib.psql("SELECT count(mq.queue_declare(format('bench.s%%s', i), type => 'stream', "
                  "arguments => '{\"partitions\": 4}')) FROM generate_series(1, %d) i" % a.streams)
    benchlib.psql("SELECT count(mq.group_declare(format('bench.s%%s', s), format('bench.g%%s_%%s', s, g))) "
                  "FROM generate_series(1, %d) s, generate_series(1, %d) g "
                  "WHERE NOT EXISTS (SELECT FROM mq.consumer_groups c WHERE c.queue = format('bench.s%%s', s) "
                  "AND c.group_name = format('bench.g%%s_%%s', s, g))"
                  % (a.streams, a.groups_per_stream))
    benchlib.psql("SELECT count(mq.send(format('bench.q%%s', lpad((1 + i %% %d)::text, 4, '0')), 'm'::text)) "
                  "FROM generate_series(1, 5000) i" % a.queues)
    benchlib.psql("SELECT count(mq.publish('', format('bench.s%%s', 1 + i %% %d), 'm'::text)) "
                  "FROM generate_series(1, 2000) i" % a.streams)


EXPECT = [0]


def exact_consumer(url, stop_at_empty, out):
    """amqp_bench's consumer, but until EXPECT messages came (its 0.5 s of
    quiet ends a run early on a loaded machine)"""
    import pika
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=100)
    count = [0]
    last = [time.perf_counter()]

    def on_msg(c, m, p, b):
        c.basic_ack(m.delivery_tag)
        count[0] += 1
        last[0] = time.perf_counter()

    ch.basic_consume('bench.amqp', on_msg)
    start = time.perf_counter()
    while count[0] < EXPECT[0] and time.perf_counter() - start < 300:
        conn.process_data_events(time_limit=0.05)
    conn.close()
    out.put(('con', count[0], start, last[0]))


def browser_poller(a):
    """the UI's queues page open in headless Chromium, refreshing every
    --poll-interval s; returns the process once the page has shown its data"""
    js = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mgmt_ui_render.js')
    p = subprocess.Popen(['node', js, '--url', a.api.rstrip('/') + '/', '--user', a.user,
                          '--password', a.password, '--poll', '%g' % a.poll_interval],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith('# polling'):
        p.kill()
        sys.exit('mgmt_ui_render.js --poll did not start: %r' % line)
    return p


def poller(api, auth, interval, stop, counts):
    while not stop.is_set():
        for p in UI_POLL:
            dt, st, n = get(api, p, auth)
            counts.append(dt)
        stop.wait(interval)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--api', default='http://127.0.0.1:15672')
    ap.add_argument('--user', required=True)
    ap.add_argument('--password', required=True)
    ap.add_argument('--setup', action='store_true')
    ap.add_argument('--queues', type=int, default=1000)
    ap.add_argument('--streams', type=int, default=10)
    ap.add_argument('--groups-per-stream', type=int, default=10)
    ap.add_argument('--reps', type=int, default=30)
    ap.add_argument('--amqp')
    ap.add_argument('--messages', type=int, default=4000)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--poll-interval', type=float, default=1.0)
    ap.add_argument('--cpu-pids', help='postmaster,mq-amqp process ids: CPU ms per call too')
    ap.add_argument('--ui-browser', action='store_true',
                    help='UI polled by headless Chromium (mgmt_ui_render.js --poll), not a thread')
    a = ap.parse_args()
    auth = 'Basic ' + base64.b64encode(('%s:%s' % (a.user, a.password)).encode()).decode()
    if a.setup:
        setup(a)
    print('# mgmt_api: %s, %d repetitions per path; load %s' % (a.api, a.reps, os.getloadavg()),
          flush=True)
    dt, st, n = get(a.api, '/api/overview', auth)
    if st != 200:
        sys.exit('GET /api/overview: %d' % st)
    print()
    roots = [int(x) for x in a.cpu_pids.split(',')] if a.cpu_pids else None
    if a.reps > 0:
        print('| path | status | bytes | median ms | p90 ms | median < 100 ms |%s'
              % (' server CPU ms/call |' if roots else ''))
        print('|---|---|---|---|---|---|%s' % ('---|' if roots else ''))
    for p in PATHS if a.reps > 0 else []:
        get(a.api, p, auth)
        ts = []
        c0 = proc_cpu(roots) if roots else 0
        for _ in range(a.reps):
            dt, st, n = get(a.api, p, auth)
            ts.append(dt * 1000)
        cpu = ' %.1f |' % ((proc_cpu(roots) - c0) * 1000 / a.reps) if roots else ''
        ts.sort()
        med = statistics.median(ts)
        print('| `%s` | %d | %d | %.1f | %.1f | %s |%s' % (p, st, n, med, ts[int(len(ts) * 0.9) - 1],
                                                         'yes' if med < 100 else 'NO', cpu), flush=True)
    print('# load %s' % (os.getloadavg(),))
    if not a.amqp:
        return
    import amqp_bench
    amqp_bench.consumer = exact_consumer
    EXPECT[0] = a.messages
    res = {'idle': [], 'polled': []}
    polls = []
    for rnd in range(a.rounds):
        for mode in (('idle', 'polled') if rnd % 2 == 0 else ('polled', 'idle')):
            stop = threading.Event()
            th = None
            browser = None
            if mode == 'polled' and a.ui_browser:
                browser = browser_poller(a)
            elif mode == 'polled':
                th = threading.Thread(target=poller, args=(a.api, auth, a.poll_interval, stop, polls))
                th.start()
            r = amqp_bench.one_run(a.amqp, 1, a.messages, 100)
            stop.set()
            if th:
                th.join()
            if browser:
                browser.stdin.close()
                browser.wait(timeout=60)
            res[mode].append(r)
            print('# round %d, UI %s: publish %.0f msg/s (p99 %.2f ms), consume %.0f msg/s'
                  % (rnd + 1, mode, r['pub'], r['p99'], r['con']), flush=True)
    print()
    print('| UI%s | publish msg/s (confirms) | confirm p50 ms | confirm p99 ms | consume msg/s (acks) |'
          % (' (polled: headless Chromium, queues page)' if a.ui_browser else ''))
    print('|---|---|---|---|---|')
    med = {}
    for mode in ('idle', 'polled'):
        m = med[mode] = {k: statistics.median(r[k] for r in res[mode]) for k in ('pub', 'p50', 'p99', 'con')}
        print('| %s | %.0f | %.2f | %.2f | %.0f |' % (mode, m['pub'], m['p50'], m['p99'], m['con']))
    print('| polled / idle | %.2f | %.2f | %.2f | %.2f |'
          % tuple(med['polled'][k] / med['idle'][k] if med['idle'][k] else float('nan')
                  for k in ('pub', 'p50', 'p99', 'con')))
    for mode in ('idle', 'polled'):
        print('# %s rounds: publish %s; consume %s' % (
            mode, ', '.join('%.0f' % r['pub'] for r in res[mode]),
            ', '.join('%.0f' % r['con'] for r in res[mode])))
    if polls:
        print('# UI poll requests during the polled runs: %d, median %.1f ms'
              % (len(polls), statistics.median(polls) * 1000))
    print('# load %s' % (os.getloadavg(),))


if __name__ == '__main__':
    main()
