#!/usr/bin/env python3
"""Harness 3 -- delayed messages (timers) and transactional (half) messages.

    python3 bench/timers.py [--quick]

Runs against its own bench cluster: port 5496, socket and data under /tmp/bench_timers
(bench/server.sh with those two substituted; started automatically when run as root and
nothing answers).  Override with BENCH_HOST / BENCH_PORT / BENCH_USER / BENCH_DB.

Tests (medians of T_REPS repetitions: 3, quick 1):
  1 timer lateness: N messages (5000; quick 1000) published in one transaction by
    SELECT mq.send('tq', <due as text>, deliver_at => due) FROM generate_series(1, N),
    due = a whole second 3-4 s ahead, the same for all N.  One consumer loops on
    mq.consume('tq', 100, wait => '5 s', auto_ack => true) and records clock_timestamp() per
    returned row; lateness = that - due.  Also: lost / duplicate / early messages, and the CPU
    time the database's queue_ext worker used during the repetition (/proc/<pid>/schedstat).
  2 the same, after first arming M timers not yet due on queue tq2 (200000; quick 20000) with
    mq.send_batch('tq2', <1000 bodies>, delay => '1 hour'), 1000 per transaction.  The same
    queue tq is measured.  Also: idle worker CPU over T_IDLE s without / with the M timers.
  3 half-message commit throughput: pgbench, 4 clients, T_SECONDS s (10; quick 3) of
    SELECT mq.end_half(mq.publish_half('', 'hq', 'x'::text, producer_group => 'pg'), 'commit');
    versus SELECT mq.send('hq2', 'x'::text); alternated within each repetition; afterwards the
    queues' ready counts are checked against pgbench's transaction counts.

Env: T_REPS, T_N, T_M, T_SECONDS, T_CLIENTS (4), T_IDLE (5; quick 3).
Output is printed and written to bench/results/timers-<UTC timestamp>.txt.
"""
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no bench/__pycache__ from importing benchlib
HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("BENCH_HOST", "/tmp/bench_timers")
os.environ.setdefault("BENCH_PORT", "5496")
sys.path.insert(0, HERE)
from benchlib import (HOST, PORT, DB, psql, psql1, pgbench, median, pct, ratio, table, fmt,
                      Pipe)  # noqa: E402

QUICK = "--quick" in sys.argv
E = os.environ.get
REPS = int(E("T_REPS", 1 if QUICK else 3))
N = int(E("T_N", 1000 if QUICK else 5000))
M = int(E("T_M", 20000 if QUICK else 200000))
SECONDS = int(E("T_SECONDS", 3 if QUICK else 10))
CLIENTS = int(E("T_CLIENTS", 4))
IDLE = int(E("T_IDLE", 3 if QUICK else 5))
EARLY_TOLERANCE_MS = 1.0      # same server clock on both sides; deliver_at has ms precision

OUT = []
PROBLEMS = []


def out(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    OUT.append(s)


def problem(msg):
    PROBLEMS.append(msg)
    out("")
    out("!" * 78)
    out("!!! PROBLEM: " + msg)
    out("!" * 78)


# ---------------------------------------------------------------- cluster
def ensure_server():
    try:
        psql1("SELECT 1")
        return
    except Exception:
        pass
    if HOST != "/tmp/bench_timers" or PORT != "5496" or os.geteuid() != 0:
        raise SystemExit("bench server %s:%s not reachable (start it, or run as root with the "
                         "default BENCH_HOST/BENCH_PORT to have it created)" % (HOST, PORT))
    out("# starting the bench cluster on port 5496 (/tmp/bench_timers) via bench/server.sh")
    script = open(os.path.join(HERE, "server.sh")).read()
    script = re.sub(r"/tmp/bench\b", "/tmp/bench_timers", script.replace("5495", "5496"))
    script = script.replace("${1:-}", "")       # never pass options (--fresh etc.) through
    subprocess.run(["bash", "-c", script], check=True)


def worker_pid():
    return psql1("SELECT pid FROM pg_stat_activity WHERE backend_type = 'queue_ext worker' "
                 "AND datname = current_database()")


def worker_cpu_ms(pid):
    """CPU time (ms) of a local process; None when not readable."""
    try:
        with open("/proc/%s/schedstat" % pid) as f:
            return int(f.read().split()[0]) / 1e6
    except Exception:
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")
        except Exception:
            return None


def cpu_delta(pid, c0):
    c1 = worker_cpu_ms(pid)
    return None if c0 is None or c1 is None else c1 - c0


def check_errors(lines, what):
    bad = [l for l in lines if "ERROR" in l or "FATAL" in l]
    if bad:
        raise RuntimeError("%s: %s" % (what, "\n".join(bad)))


# ---------------------------------------------------------------- setup
SETUP_SQL = r"""
SELECT mq.queue_declare('tq');
SELECT mq.queue_declare('tq2');
SELECT mq.queue_declare('hq');
SELECT mq.queue_declare('hq2');
CREATE OR REPLACE FUNCTION chk(bigint, jsonb, bytea) RETURNS text LANGUAGE plpgsql
  AS $$ BEGIN RETURN 'commit'; END $$;
SELECT mq.producer_group_declare('pg', 'chk(bigint,jsonb,bytea)');
"""


def reset_queues():
    # a previous (interrupted) run may have left messages or armed timers behind
    for q in ("tq", "tq2", "hq", "hq2"):
        psql("SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue = '%s'" % q)
    psql(SETUP_SQL)


def queue_counts(q):
    r = psql1("SELECT ready, unacked, delayed FROM mq.queues WHERE queue = '%s'" % q)
    return tuple(int(x) for x in r.split("|"))


# ---------------------------------------------------------------- test 1 / 2
def lateness_run(label, rep):
    q = "tq"
    c = queue_counts(q)
    if c != (0, 0, 0):
        problem("%s rep %d: queue %s not empty before the run: ready/unacked/delayed = %s"
                % (label, rep, q, c))
    wpid = worker_pid()
    cpu0 = worker_cpu_ms(wpid)

    # publish: N messages, one deliver_at (a whole second 3-4 s ahead), one transaction
    t0 = time.time()
    rows = psql("""
        SELECT date_trunc('second', clock_timestamp()) + interval '4 s' AS due \\gset
        SELECT mq.send('%s', extract(epoch FROM :'due'::timestamptz)::text, deliver_at => :'due')
          FROM generate_series(1, %d);
        SELECT 'due|' || extract(epoch FROM :'due'::timestamptz) || '|' ||
               extract(epoch FROM clock_timestamp());
        """ % (q, N)).splitlines()
    pub_wall = time.time() - t0
    sent = set(int(x) for x in rows[:-1])
    _, due_s, pub_done_s = rows[-1].split("|")
    due = float(due_s)
    pub_margin_ms = (due - float(pub_done_s)) * 1000.0
    if len(sent) != N:
        problem("%s rep %d: mq.send returned %d distinct ids for %d sends" % (label, rep, len(sent), N))
    if pub_margin_ms < 500:
        problem("%s rep %d: publishing finished only %.0f ms before due" % (label, rep, pub_margin_ms))

    # consume until all N arrived (or due + 30 s)
    got = []           # (msg_id, due in body, returned at)
    calls = []         # (returned at, rows)
    p = Pipe()
    deadline = due + 30
    while len(got) < N:
        lines = p.query("SELECT msg_id, convert_from(body, 'UTF8'), extract(epoch FROM clock_timestamp()) "
                        "FROM mq.consume('%s', 100, wait => '5 s', auto_ack => true)" % q)
        check_errors(lines, "consume")
        now_db = None
        for l in lines:
            mid, body, at = l.split("|")
            got.append((int(mid), float(body), float(at)))
            now_db = float(at)
        calls.append((now_db, len(lines)))
        if time.time() > deadline and not lines:
            break
    p.close()
    cpu = cpu_delta(wpid, cpu0)

    ids = [g[0] for g in got]
    lost = sent - set(ids)
    dup = len(ids) - len(set(ids))
    foreign = set(ids) - sent
    if lost or dup or foreign:
        problem("%s rep %d: %d of %d messages not delivered within due+30 s, %d duplicates, "
                "%d unexpected ids (queue now ready/unacked/delayed = %s)"
                % (label, rep, len(lost), N, dup, len(foreign), queue_counts(q)))
    wrong_body = sum(1 for g in got if abs(g[1] - due) > 1e-6)
    if wrong_body:
        problem("%s rep %d: %d bodies do not carry the due time that was published"
                % (label, rep, wrong_body))
    lat = [(at - d) * 1000.0 for (_, d, at) in got]
    early = [x for x in lat if x < -EARLY_TOLERANCE_MS]
    if early:
        problem("%s rep %d: %d of %d messages delivered EARLY (up to %.1f ms before due)"
                % (label, rep, len(early), len(lat), -min(early)))
    r = dict(n=len(lat), first=min(lat) if lat else None, p50=pct(lat, 50), p99=pct(lat, 99),
             max=max(lat) if lat else None, calls=len(calls), cpu=cpu,
             pub_ms=pub_wall * 1000.0, margin=pub_margin_ms, early=len(early), lost=len(lost))
    out("  %s rep %d: %d msgs, publish %.0f ms (%.0f ms before due), lateness first %s p50 %s "
        "p99 %s max %s ms, %d consume calls, worker CPU %s ms"
        % (label, rep, r["n"], r["pub_ms"], r["margin"], fmt(r["first"]), fmt(r["p50"]),
           fmt(r["p99"]), fmt(r["max"]), r["calls"], fmt(r["cpu"])))
    return r


def idle_cpu(label):
    wpid = worker_pid()
    c0 = worker_cpu_ms(wpid)
    time.sleep(IDLE)
    d = cpu_delta(wpid, c0)
    out("  idle worker CPU over %d s, %s: %s ms" % (IDLE, label, fmt(d)))
    return d


def arm_timers():
    p = Pipe()
    t0 = time.time()
    done = 0
    while done < M:
        k = min(1000, M - done)
        lines = p.query("SELECT count(*) FROM mq.send_batch('tq2', "
                        "(SELECT array_agg('pending ' || g) FROM generate_series(%d, %d) g), "
                        "delay => '1 hour')" % (done + 1, done + k))
        check_errors(lines, "send_batch")
        if lines != [str(k)]:
            problem("send_batch of %d returned %s" % (k, lines))
        done += k
    p.close()
    secs = time.time() - t0
    c = queue_counts("tq2")
    ntimer = int(psql1("SELECT count(*) FROM mq.timer"))
    out("  armed %d timers (delay 1 hour) on tq2 in %.1f s (%.0f/s); tq2 ready/unacked/delayed = %s; "
        "rows in mq.timer: %d" % (M, secs, M / secs, c, ntimer))
    if c != (0, 0, M):
        problem("after arming %d timers, tq2 shows ready/unacked/delayed = %s" % (M, c))
    return secs


def summarize_lat(rs):
    keys = ("first", "p50", "p99", "max", "cpu", "pub_ms")
    return {k: median([r[k] for r in rs]) for k in keys}


# ---------------------------------------------------------------- test 3
HALF = "SELECT mq.end_half(mq.publish_half('', 'hq', 'x'::text, producer_group => 'pg'), 'commit');\n"
PLAIN = "SELECT mq.send('hq2', 'x'::text);\n"


def throughput(rep):
    res = {}
    order = [("half", HALF, "hq"), ("plain", PLAIN, "hq2")]
    if rep % 2:
        order.reverse()
    for name, script, q in order:
        before = queue_counts(q)[0]
        r = pgbench(script, clients=CLIENTS, threads=2, seconds=SECONDS)
        after = queue_counts(q)[0]
        added = after - before
        if r["failed"]:
            problem("%s rep %d: pgbench reports %d failed transactions" % (name, rep, r["failed"]))
        if not (r["tx"] <= added <= r["tx"] + CLIENTS):
            problem("%s rep %d: pgbench committed %d transactions but queue %s gained %d ready "
                    "messages" % (name, rep, r["tx"], q, added))
        out("  %s rep %d: %.0f msg/s (%d tx, avg latency %.2f ms), %s ready +%d"
            % (name, rep, r["tps"], r["tx"], r["lat_ms"], q, added))
        res[name] = r["tps"]
    return res


# ---------------------------------------------------------------- main
def main():
    ensure_server()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    out("# timers.py %s run %s on %s, %d cores, git %s"
        % ("quick" if QUICK else "full", time.strftime("%F %T UTC", time.gmtime()),
           os.uname().nodename, os.cpu_count(), rev))
    out("# server %s port %s db %s: %s" % (HOST, PORT, DB, psql1("SELECT version()")))
    out("# " + ", ".join(psql("SELECT name || '=' || setting FROM pg_settings WHERE name IN "
                              "('shared_buffers','max_wal_size','checkpoint_timeout','synchronous_commit',"
                              "'fsync','autovacuum','shared_preload_libraries','mq.maintenance_naptime') "
                              "ORDER BY 1").splitlines()))
    out("# reps=%d N=%d M=%d pgbench %d clients x %d s" % (REPS, N, M, CLIENTS, SECONDS))
    psql("CREATE EXTENSION IF NOT EXISTS queue_ext")
    if not worker_pid():
        time.sleep(2)
    if not worker_pid():
        problem("no queue_ext worker running in database %s" % DB)
    reset_queues()
    psql("VACUUM ANALYZE mq.timer")
    T0 = time.time()

    out("")
    out("## 1. timer lateness, no other timers pending (N=%d, one deliver_at)" % N)
    idle0 = idle_cpu("no timers pending")
    r1 = [lateness_run("empty", i + 1) for i in range(REPS)]

    out("")
    out("## 2. timer lateness with M=%d timers armed 1 hour ahead" % M)
    arm_secs = arm_timers()
    idle1 = idle_cpu("%d timers pending" % M)
    r2 = [lateness_run("M=%d" % M, i + 1) for i in range(REPS)]
    c = queue_counts("tq2")
    if c != (0, 0, M):
        problem("after test 2, tq2 shows ready/unacked/delayed = %s (expected 0/0/%d): timers not "
                "yet due were fired or lost" % (c, M))

    out("")
    out("## 3. half-message commit vs plain send, pgbench %d clients x %d s" % (CLIENTS, SECONDS))
    r3 = [throughput(i + 1) for i in range(REPS)]
    states = psql("SELECT state || '=' || count(*) FROM mq.half_messages GROUP BY state ORDER BY 1")
    out("  mq.half_messages by state: " + ", ".join(states.splitlines()))
    if "pending" in states:
        problem("half messages still pending after end_half(..., 'commit'): " + states)

    # tidy: drop the armed timers and the backlogs so a rerun starts clean
    dropped = psql1("SELECT mq.queue_delete('tq2')")
    out("  queue_delete('tq2') removed %s messages (expected %d)" % (dropped, M))
    if dropped != str(M):
        problem("queue_delete('tq2') removed %s messages, expected %d" % (dropped, M))
    for q in ("tq", "hq", "hq2"):
        psql("SELECT mq.queue_delete('%s')" % q)

    # ---------------------------------------------------------------- summary
    s1, s2 = summarize_lat(r1), summarize_lat(r2)
    out("")
    out("## Summary (medians of %d repetition%s; lateness in ms = consume() return - due)"
        % (REPS, "s" if REPS > 1 else ""))
    out("")
    rows = []
    for k, name in (("first", "lateness, first message"), ("p50", "lateness p50"),
                    ("p99", "lateness p99"), ("max", "lateness max"),
                    ("cpu", "worker CPU per repetition (ms)"), ("pub_ms", "publish N (ms)")):
        rows.append((name, s1[k], s2[k], "%.2f" % ratio(s2[k], s1[k])))
    rows.append(("idle worker CPU over %d s (ms)" % IDLE, idle0, idle1, "%.2f" % ratio(idle1, idle0)))
    out(table(["N=%d due at once" % N, "0 pending", "%d pending" % M, "ratio"], rows))
    out("")
    out("early deliveries: %d / %d; lost: %d / %d; arming %d timers took %.1f s"
        % (sum(r["early"] for r in r1 + r2), sum(r["n"] for r in r1 + r2),
           sum(r["lost"] for r in r1 + r2), N * len(r1 + r2), M, arm_secs))
    out("")
    half = median([r["half"] for r in r3])
    plain = median([r["plain"] for r in r3])
    out(table(["pgbench %d clients x %d s" % (CLIENTS, SECONDS), "msg/s"],
              [("publish_half + end_half('commit')", half), ("mq.send", plain),
               ("ratio half / send", "%.2f" % ratio(half, plain))]))
    out("")
    out("p99 ratio (with %d pending / without): %.2f" % (M, ratio(s2["p99"], s1["p99"])))
    out("half-message commit / plain send throughput: %.2f" % ratio(half, plain))
    out("total run time %.0f s" % (time.time() - T0))
    if PROBLEMS:
        out("")
        out("%d PROBLEM(S):" % len(PROBLEMS))
        for p in PROBLEMS:
            out("  - " + p)
    else:
        out("no problems detected (no errors, no lost, duplicate or early messages)")

    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", "timers-%s.txt" % stamp)
    with open(path, "w") as f:
        f.write("\n".join(OUT) + "\n")
    print("results written to %s" % os.path.relpath(path, os.path.dirname(HERE)))
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
