#!/usr/bin/python3
"""Long polling through a transaction pooler (issue 14, "Long polling through a pooler holds a
server connection while it waits: measure it and document the pool sizing it needs").

    /usr/bin/python3 bench/pooler_wait.py [--quick]   # ~4 min (PW_SECONDS=5, PW_REPS=3)

A real pgbouncer (Debian's /usr/sbin/pgbouncer, started here on 127.0.0.1:PW_BOUNCER_PORT,
default 5545, pool_mode = transaction, one alias per pool size P) in front of the bench server
(BENCH_HOST / BENCH_PORT / BENCH_USER / BENCH_DB, as bench/benchlib.py; a private cluster works:
BENCH_HOST=/tmp/x BENCH_PORT=5541 BENCH_DB=postgres). Clients are psycopg2 connections through
the pooler, autocommit, one thread each:

  * K consumers long-poll an empty queue in a loop: mq.consume(q, 1, wait => '2 seconds',
    auto_ack => true) (contrast: wait => '0' and a 200 ms sleep after an empty poll);
  * one publisher sends one message every 100 ms (on a fixed schedule; a late one goes at once
    and the schedule does not catch up) through the same pooler: mq.send(q, <its send time>).

Measured per run of PW_SECONDS: the publisher's statement latency (mq.send call to result,
pool wait included: median, p95, max) and the delivery latency (publisher's send call to the
consumer's consume returning the message: median, p95, max), for K < P, K = P, K > P, P = 2 and 4,
and a direct connection (no pooler) for reference. The table shows the medians over PW_REPS
repetitions of each figure; output also goes to bench/results/pooler_wait-<UTC>.txt.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import HOST, PORT, USER, DB, median, pct, table, log, Tee  # noqa: E402

import psycopg2  # noqa: E402  (Debian python3-psycopg2)

QUICK = "--quick" in sys.argv
SECONDS = float(os.environ.get("PW_SECONDS", "3" if QUICK else "5"))
REPS = int(os.environ.get("PW_REPS", "1" if QUICK else "3"))
BPORT = int(os.environ.get("PW_BOUNCER_PORT", "5545"))
PGBOUNCER = "/usr/sbin/pgbouncer"
QUEUE = "pooler_wait"
WAIT = "2 seconds"
PUB_PERIOD = 0.1
POLL_SLEEP = 0.2

# (pool size or None for a direct connection, consumers, mode)
CONFIGS = [
    (2, 1, "wait"), (2, 2, "wait"), (2, 4, "wait"), (2, 4, "poll"),
    (4, 2, "wait"), (4, 3, "wait"), (4, 4, "wait"), (4, 8, "wait"), (4, 8, "poll"),
    (None, 8, "wait"),
]


class Bouncer:
    """pgbouncer in transaction mode with aliases p2, p4 (pool sizes 2 and 4)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="pooler_wait.")
        dbs = "".join("p%d = host=%s port=%s dbname=%s user=%s pool_mode=transaction pool_size=%d\n"
                      % (p, HOST, PORT, DB, USER, p) for p in (2, 4))
        with open(os.path.join(self.dir, "pgbouncer.ini"), "w") as f:
            f.write("[databases]\n%s[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = %d\n"
                    "unix_socket_dir =\nauth_type = any\npool_mode = transaction\n"
                    "max_client_conn = 100\nlogfile = %s/pgbouncer.log\npidfile = %s/pgbouncer.pid\n"
                    % (dbs, BPORT, self.dir, self.dir))
        cmd = [PGBOUNCER]
        if os.geteuid() == 0:  # pgbouncer refuses to run as root
            shutil.chown(self.dir, "postgres")
            cmd += ["-u", "postgres"]
        self.p = subprocess.Popen(cmd + [os.path.join(self.dir, "pgbouncer.ini")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", BPORT), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("pgbouncer did not start on port %d (see %s)" % (BPORT, self.dir))

    def stop(self):
        self.p.kill()
        self.p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def connect(pool):
    if pool is None:
        c = psycopg2.connect(host=HOST, port=PORT, user=USER, dbname=DB)
    else:
        c = psycopg2.connect(host="127.0.0.1", port=BPORT, user=USER, dbname="p%d" % pool)
    c.autocommit = True
    return c


def consumer(pool, mode, stop, got, errors, conns):
    try:
        c = connect(pool)
        conns.append(c)
        cur = c.cursor()
        wait = WAIT if mode == "wait" else "0"
        while not stop.is_set():
            cur.execute("SELECT convert_from(body, 'UTF8') FROM mq.consume(%s, 1, wait => %s,"
                        " auto_ack => true)", (QUEUE, wait))
            rows = cur.fetchall()
            now = time.time()
            for (body,) in rows:
                got.append(now - float(body))
            if not rows and mode == "poll":
                stop.wait(POLL_SLEEP)
        c.close()
    except psycopg2.extensions.QueryCanceledError:
        if not stop.is_set():
            errors.append("canceled")
    except Exception as e:  # a figure with errors is no figure: reported
        errors.append(repr(e))


def run(pool, k, mode):
    """One run: k consumers and the publisher for SECONDS; returns the figures."""
    stop = threading.Event()
    got, errors, pub, conns = [], [], [], []
    threads = [threading.Thread(target=consumer, args=(pool, mode, stop, got, errors, conns))
               for _ in range(k)]
    for t in threads:
        t.start()
    time.sleep(0.5)  # consumers connected and waiting
    c = connect(pool)
    cur = c.cursor()
    t0 = time.time()
    i = 0
    while time.time() < t0 + SECONDS:
        due = t0 + i * PUB_PERIOD
        if due > time.time():
            time.sleep(due - time.time())
        s = time.time()
        cur.execute("SELECT mq.send(%s, %s)", (QUEUE, repr(s)))
        cur.fetchall()
        pub.append(time.time() - s)
        i = max(i + 1, int((time.time() - t0) / PUB_PERIOD))  # late: no catching up
    deadline = time.time() + 5  # the last messages delivered (K > P: up to 2 waits)
    while len(got) < len(pub) and time.time() < deadline:
        time.sleep(0.05)
    stop.set()
    for cc in conns:  # end the waits at once
        cc.cancel()
    for t in threads:
        t.join(timeout=10)
    left = None
    cur.execute("SELECT ready FROM mq.queues WHERE queue = %s", (QUEUE,))
    left = cur.fetchone()[0]
    cur.execute("SELECT mq.queue_purge(%s)", (QUEUE,))
    c.close()
    ms = [x * 1000 for x in pub]
    dl = [x * 1000 for x in got]
    return dict(pub_med=median(ms), pub_p95=pct(ms, 95), pub_max=max(ms),
                del_med=median(dl), del_p95=pct(dl, 95), del_max=max(dl) if dl else float("nan"),
                published=len(pub), delivered=len(got), left=left, errors=errors)


def main():
    rdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(rdir, exist_ok=True)
    out = os.path.join(rdir, "pooler_wait-%s%s.txt" % (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
                                                        "-quick" if QUICK else ""))
    sys.stdout = Tee(out)
    log("# long polling through a transaction pooler (issue 14), %s" % time.strftime("%F %T UTC", time.gmtime()))
    log("pgbouncer %s, transaction mode; %d s per run, %d repetitions; consume(wait => '%s'), "
        "one publish every %d ms" % (subprocess.run([PGBOUNCER, "--version"], capture_output=True, text=True)
                                    .stdout.split("\n")[0], SECONDS, REPS, WAIT, PUB_PERIOD * 1000))
    log("git: %s" % subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "log",
                                    "--oneline", "-1"], capture_output=True, text=True).stdout.strip())
    log("load average at start: %s" % open("/proc/loadavg").read().split()[:3])
    c = psycopg2.connect(host=HOST, port=PORT, user=USER, dbname=DB)
    c.autocommit = True
    cur = c.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS queue_ext")
    cur.execute("SELECT mq.queue_declare(%s)", (QUEUE,))
    cur.execute("SELECT mq.queue_purge(%s)", (QUEUE,))
    c.close()
    b = Bouncer()
    rows = []
    try:
        res = {cfg: [] for cfg in CONFIGS}
        for rep in range(REPS):
            # the order rotates between repetitions
            order = CONFIGS[rep % len(CONFIGS):] + CONFIGS[:rep % len(CONFIGS)]
            for cfg in order:
                r = run(*cfg)
                res[cfg].append(r)
                if r["errors"] or r["left"]:
                    log("  %s rep %d: %d errors %s, %s left" % (cfg, rep, len(r["errors"]), r["errors"][:2], r["left"]))
        for cfg in CONFIGS:
            pool, k, mode = cfg
            rs = res[cfg]
            m = {f: median([r[f] for r in rs]) for f in rs[0] if f != "errors"}
            rel = "direct" if pool is None else ("K < P" if k < pool else "K = P" if k == pool else "K > P")
            rows.append(["direct" if pool is None else str(pool), str(k), rel,
                         "wait 2 s" if mode == "wait" else "poll 200 ms",
                         m["pub_med"], m["pub_p95"], m["pub_max"], m["del_med"], m["del_p95"], m["del_max"],
                         "%d/%d" % (m["delivered"], m["published"]), "%d" % (SECONDS / PUB_PERIOD)])
    finally:
        b.stop()
    log("")
    log("medians over %d repetitions (ms)" % REPS)
    log(table(["pool P", "consumers K", "", "consume", "publish med", "p95", "max",
               "delivery med", "p95", "max", "delivered/published", "schedule"], rows))
    log("load average at end: %s" % open("/proc/loadavg").read().split()[:3])
    log("output written to %s" % out)


if __name__ == "__main__":
    main()
