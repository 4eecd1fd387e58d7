#!/usr/bin/env python3
"""pgmq itself vs queue_ext_pgmq (docs/pgmq.md), through the same pgmq SQL calls.

pgmq's SQL is loadable without building (pgmq-extension/sql/pgmq.sql is plain SQL).
Give a checkout of pgmq (not part of this repository; the bench never fetches it):
its top directory or its pgmq-extension/ directory, for instance pgmq 1.12.0
(upstream main at 02cffd757eaa, the newest tree that can be fetched here):
    git clone https://github.com/pgmq/pgmq /tmp/pgmq     # or any copy of pgmq-extension/
    PGMQ_DIR=/tmp/pgmq python3 bench/pgmq_compat.py
or one SQL file, PGMQ_SQL=/tmp/pgmq-1.5.1.sql (git show v1.5.1:pgmq-extension/sql/pgmq.sql).
The label in the tables is PGMQ_LABEL, else "pgmq <default_version of pgmq.control>"
(a checkout between releases carries the previous release's number there).
It is loaded into database pgmq_orig; queue_ext_pgmq goes into pgmq_qe (both on the
bench server, benchlib.py: BENCH_HOST, BENCH_PORT, BENCH_USER; both databases are
dropped and created again).

Workloads (those of the messaging-core harness, broker_vs_skiplocked.py, in pgmq's calls):
  0. send into an empty queue, 2 producer clients, PGMQ_SENDS messages in all:
     a) one pgmq.send per transaction (bound by the commit); b) 100 pgmq.send
     statements per transaction (bound by the calls); c) one pgmq.send_batch of 100
     per transaction; d) a) again with notify_insert enabled on
     another queue (so that queue_ext_pgmq's look at pgmq.notify_insert_throttle finds
     a row that is not the sent queue's; enabled for d) only); e) the floor of a): one plain
     INSERT of the same body per transaction into a table of its own (msg_id bigserial
     primary key, message jsonb), no pgmq call, in each database.
  1. consume+ack on a backlog of PGMQ_BACKLOG messages (filled with send_batch of 100),
     2 consumer clients: a) batches: read 100, delete those 100 in one transaction;
     b) one message per transaction: read 1, delete it (pgmq's usual loop).
  2. held xmin horizon: 2 producers (send, 1 message per transaction) and 2 consumers
     (read 100 + delete; 10 ms back-off when empty) for PGMQ_SECONDS, without and with
     another session holding a REPEATABLE READ snapshot open the whole time.
Medians of PGMQ_REPS repetitions; the order of the systems alternates.

Environment: PGMQ_DIR or PGMQ_SQL (one is required), PGMQ_LABEL, PGMQ_BACKLOG (100000),
PGMQ_SENDS (20000), PGMQ_REPS (3), PGMQ_SECONDS (30), PGMQ_TESTS (send,consume,held:
the workloads to run, 0, 1 and 2 above), PGMQ_SEND_KINDS (one,stmts,batch,one_notify_other,insert:
the kinds of workload 0 to run, a) - e) above; batch alone takes seconds where the one-per-transaction
kinds take minutes), PGMQ_SEND_DETAIL (1: for every repetition of workload 0 also the backends' CPU,
the WAL bytes and pg_stat_wal's writes and syncs, and the load; needs the server on this machine and
/proc of its postmaster readable, see send_snapshot()).
"""
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import psql, psql1, pgbench, median, ratio, table, log, Pipe  # noqa: E402



def pgmq_source():
    """pgmq's SQL file and its label, from PGMQ_DIR or PGMQ_SQL."""
    sql = os.environ.get("PGMQ_SQL")
    d = os.environ.get("PGMQ_DIR")
    control = None
    if d:
        if os.path.isdir(os.path.join(d, "pgmq-extension")):
            d = os.path.join(d, "pgmq-extension")
        sql = os.path.join(d, "sql", "pgmq.sql")
        control = os.path.join(d, "pgmq.control")
    if not sql or not os.path.exists(sql):
        sys.exit("PGMQ_DIR must name a checkout of pgmq (or PGMQ_SQL its pgmq-extension/sql/pgmq.sql);"
                 " see the header")
    label = os.environ.get("PGMQ_LABEL")
    if not label and control and os.path.exists(control):
        m = re.search(r"^default_version\s*=\s*'([^']+)'", open(control).read(), re.M)
        label = "pgmq " + m.group(1) if m else None
    return sql, label or "pgmq"


PGMQ_SQL, PGMQ_LABEL = pgmq_source()
BACKLOG = int(os.environ.get("PGMQ_BACKLOG", "100000"))
SENDS = int(os.environ.get("PGMQ_SENDS", "20000"))
REPS = int(os.environ.get("PGMQ_REPS", "3"))
SECONDS = int(os.environ.get("PGMQ_SECONDS", "30"))
TESTS = os.environ.get("PGMQ_TESTS", "send,consume,held").split(",")
SEND_KINDS = os.environ.get("PGMQ_SEND_KINDS", "one,stmts,batch,one_notify_other,insert").split(",")
SYSTEMS = (("pgmq_orig", PGMQ_LABEL), ("pgmq_qe", "queue_ext_pgmq"))
DETAIL = os.environ.get("PGMQ_SEND_DETAIL") == "1"
_POSTMASTER = []


def send_snapshot(db):
    """What a repetition of workload 0 spends, read before and after its pgbench run: the CPU of
    the postmaster's exited children (/proc/<postmaster>/stat cutime + cstime, clock ticks: the
    pgbench clients' backends, reaped when they exit; a psql session of this script also counts,
    but none runs between the two reads), the WAL insert position, pg_stat_wal's wal_write and
    wal_sync (the server's: the bench server should run nothing else), and the 1-minute load."""
    if not _POSTMASTER:
        d = psql1("SHOW data_directory", db=db)
        _POSTMASTER.append(int(open(os.path.join(d, "postmaster.pid")).readline()))
    row = psql1("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn, wal_write, wal_sync FROM pg_stat_wal",
                db=db).split("|")
    time.sleep(0.2)     # that psql's backend reaped before its parent's children's CPU is read
    f = open("/proc/%d/stat" % _POSTMASTER[0]).read().rsplit(")", 1)[1].split()
    ticks = int(f[13]) + int(f[14])     # cutime, cstime (fields 16 and 17 of stat)
    return dict(cpu=ticks * 1000.0 / os.sysconf("SC_CLK_TCK"), lsn=int(row[0]), writes=int(row[1]),
                syncs=int(row[2]), load=float(open("/proc/loadavg").read().split()[0]))


def send_delta(a, b, msgs, elapsed):
    """Per-repetition figures from two send_snapshot()s: CPU ms, WAL bytes per message, writes and
    syncs of WAL per 100 messages, wall seconds, load at the start."""
    return dict(wall=elapsed, cpu=b["cpu"] - a["cpu"], walpm=(b["lsn"] - a["lsn"]) / msgs,
                writes=(b["writes"] - a["writes"]) * 100.0 / msgs,
                syncs=(b["syncs"] - a["syncs"]) * 100.0 / msgs, load=a["load"])


def run_parallel_list(jobs):
    """Run the callables at once; their results in order (an exception re-raised)."""
    out = [None] * len(jobs)

    def wrap(i, f):
        try:
            out[i] = f()
        except Exception as e:  # noqa: BLE001
            out[i] = e

    ts = [threading.Thread(target=wrap, args=(i, f)) for i, f in enumerate(jobs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for o in out:
        if isinstance(o, Exception):
            raise o
    return out


def setup():
    for db, _ in SYSTEMS:
        psql("DROP DATABASE IF EXISTS %s" % db, db="postgres")
        psql("CREATE DATABASE %s" % db, db="postgres")
    psql(open(PGMQ_SQL).read(), db="pgmq_orig")
    psql("CREATE EXTENSION queue_ext_pgmq CASCADE", db="pgmq_qe")


def new_queue(db, q):
    psql("SELECT pgmq.drop_queue('%s') FROM pgmq.list_queues() WHERE queue_name = '%s';"
         "SELECT pgmq.create('%s')" % (q, q, q), db=db)


def fill(db, q, n):
    script = ("SELECT pgmq.send_batch('%s', array_agg(jsonb_build_object('n', g, 'pad', md5(g::text) "
              "|| md5((g + 1)::text) || md5((g + 2)::text)))) FROM generate_series(1, 100) g;\n" % q)
    pgbench(script, clients=2, threads=2, transactions=n // 200, db=db)


def consume_batch(q):
    return ("WITH r AS (SELECT msg_id FROM pgmq.read('%s', 30, 100))\n"
            "SELECT count(*) AS n FROM pgmq.delete('%s', ARRAY(SELECT msg_id FROM r)) \\gset\n"
            "\\if :n = 0\n\\sleep 10 ms\n\\endif\n" % (q, q))


def consume_one(q):
    return "SELECT pgmq.delete('%s', msg_id) FROM pgmq.read('%s', 30, 1);\n" % (q, q)


def queue_length(db, q):
    return int(psql1("SELECT queue_length FROM pgmq.metrics('%s')" % q, db=db) or 0)


def dead_tuples(db, q):
    if db != "pgmq_orig":
        return 0
    psql("SELECT pg_stat_force_next_flush()", db=db)
    return int(psql1("SELECT coalesce(n_dead_tup, 0) FROM pg_stat_user_tables "
                     "WHERE schemaname = 'pgmq' AND relname = 'q_%s'" % q, db=db) or 0)


def test0():
    res = {}
    detail = {}
    body = ("jsonb_build_object('n', 1, 'pad', md5(random()::text) || md5(random()::text) "
            "|| md5(random()::text))")
    batch = ("ARRAY(SELECT jsonb_build_object('n', g, 'pad', md5(g::text) || md5((g + 1)::text) "
             "|| md5((g + 2)::text)) FROM generate_series(1, 100) g)")
    # notify_insert is enabled on snd_other for workload d) only: with it on, every send of
    # queue_ext_pgmq (to any queue) looks at the throttle table, so a) - c) ran with it
    # until 2026-12-06 08:00 and measured that look too
    for db, _ in SYSTEMS:
        psql("SELECT pgmq.create('snd_other')", db=db)
    for rep in range(REPS):
        order = SYSTEMS if rep % 2 == 0 else SYSTEMS[::-1]
        for db, _ in order:
            for kind in [k for k in ("one", "stmts", "batch", "one_notify_other", "insert")
                         if k in SEND_KINDS]:
                q = "snd_%s" % kind
                if kind == "insert":
                    psql("DROP TABLE IF EXISTS public.snd_insert;"
                         "CREATE TABLE public.snd_insert (msg_id bigserial PRIMARY KEY, message jsonb)",
                         db=db)
                else:
                    new_queue(db, q)
                psql("SELECT pgmq.%s_notify_insert('snd_other')"
                     % ("enable" if kind == "one_notify_other" else "disable"), db=db)
                if DETAIL:
                    psql("SELECT pg_stat_force_next_flush()", db=db)
                    snap0 = send_snapshot(db)
                if kind == "insert":
                    r = pgbench("INSERT INTO public.snd_insert (message) VALUES (%s);\n" % body,
                                clients=2, threads=2, transactions=max(1, SENDS // 2), db=db)
                    msgs = r["tx"]
                elif kind == "batch":
                    r = pgbench("SELECT count(*) FROM pgmq.send_batch('%s', %s);\n" % (q, batch),
                                clients=2, threads=2, transactions=max(1, SENDS // 100 // 2), db=db)
                    msgs = r["tx"] * 100
                elif kind == "stmts":
                    r = pgbench("BEGIN;\n" + "SELECT pgmq.send('%s', %s);\n" % (q, body) * 100 + "COMMIT;\n",
                                clients=2, threads=2, transactions=max(1, SENDS // 100 // 2), db=db)
                    msgs = r["tx"] * 100
                else:
                    r = pgbench("SELECT pgmq.send('%s', %s);\n" % (q, body),
                                clients=2, threads=2, transactions=max(1, SENDS // 2), db=db)
                    msgs = r["tx"]
                rate = msgs / r["elapsed"]
                if DETAIL:
                    time.sleep(0.2)     # the clients' backends reaped and their WAL statistics flushed
                    d = send_delta(snap0, send_snapshot(db), msgs, r["elapsed"])
                    detail.setdefault((db, kind), []).append(d)
                left = (int(psql1("SELECT count(*) FROM public.snd_insert", db=db))
                        if kind == "insert" else queue_length(db, q))
                if left != msgs:
                    raise RuntimeError("%s %s: %d sent, %d in the queue" % (db, q, msgs, left))
                res.setdefault((db, kind), []).append(rate)
                log("  t0 rep %d %-9s %-16s %8.0f msg/s" % (rep, db, kind, rate)
                    + ("  wall %.3f s cpu %.0f ms WAL %.0f B/msg writes %.2f syncs %.2f per 100 msgs load %.2f"
                       % (d["wall"], d["cpu"], d["walpm"], d["writes"], d["syncs"], d["load"]) if DETAIL else ""))
    rows = []
    for kind, label in (("one", "send, 1 per txn"), ("stmts", "send, 100 statements per txn"),
                        ("batch", "send_batch of 100 per txn"),
                        ("one_notify_other", "send, 1 per txn, notify on another queue"),
                        ("insert", "plain INSERT, 1 per txn (the floor of send, 1 per txn)")):
        if kind not in SEND_KINDS:
            continue
        a = median(res[("pgmq_orig", kind)])
        b = median(res[("pgmq_qe", kind)])
        per = ", ".join("%.2f" % ratio(y, x) for x, y in zip(res[("pgmq_orig", kind)], res[("pgmq_qe", kind)]))
        rows.append([label, "%.0f" % a, "%.0f" % b, "%.2fx" % ratio(b, a), per])
    out = ("0. send into an empty queue, 2 producers, %d messages, msg/s, median of %d\n" % (SENDS, REPS)
           + table(["workload", PGMQ_LABEL, "queue_ext_pgmq", "ratio", "per repetition"], rows))
    if DETAIL:
        rows = []
        for kind in [k for k in ("one", "stmts", "batch", "one_notify_other", "insert") if k in SEND_KINDS]:
            for db, label in SYSTEMS:
                ds = detail[(db, kind)]
                rows.append([kind, label] + ["%.3f" % median([d["wall"] for d in ds]),
                                             "%.0f" % median([d["cpu"] for d in ds]),
                                             "%.0f" % median([d["walpm"] for d in ds]),
                                             "%.2f" % median([d["writes"] for d in ds]),
                                             "%.2f" % median([d["syncs"] for d in ds]),
                                             "%.2f-%.2f" % (min(d["load"] for d in ds), max(d["load"] for d in ds))])
        out += ("\n\n0, per repetition (PGMQ_SEND_DETAIL), medians: wall s, the clients' backends' CPU ms, "
                "WAL bytes per message, pg_stat_wal writes and syncs per 100 messages, load\n"
                + table(["workload", "system", "wall s", "CPU ms", "WAL B/msg", "writes/100", "syncs/100",
                         "load"], rows))
    return out


def test1():
    res = {}
    for rep in range(REPS):
        order = SYSTEMS if rep % 2 == 0 else SYSTEMS[::-1]
        for db, _ in order:
            for kind in ("batch", "one"):
                q = "bk_%s" % kind
                new_queue(db, q)
                n = BACKLOG if kind == "batch" else BACKLOG // 10
                fill(db, q, n)
                if kind == "batch":
                    per = max(1, int(n * 0.9) // 100 // 2)
                    r = pgbench(consume_batch(q), clients=2, threads=2, transactions=per, db=db)
                    msgs = r["tx"] * 100
                else:
                    per = max(1, int(n * 0.9) // 2)
                    r = pgbench(consume_one(q), clients=2, threads=2, transactions=per, db=db)
                    msgs = r["tx"]
                rate = msgs / r["elapsed"]
                res.setdefault((db, kind), []).append(rate)
                log("  t1 rep %d %-9s %-5s %8.0f msg/s (left %d)" % (rep, db, kind, rate, queue_length(db, q)))
    rows = []
    for kind, label in (("batch", "read 100 + delete 100 per txn"), ("one", "read 1 + delete 1 per txn")):
        a = median(res[("pgmq_orig", kind)])
        b = median(res[("pgmq_qe", kind)])
        per = ", ".join("%.2f" % ratio(y, x) for x, y in zip(res[("pgmq_orig", kind)], res[("pgmq_qe", kind)]))
        rows.append([label, "%.0f" % a, "%.0f" % b, "%.2fx" % ratio(b, a), per])
    return ("1. consume+ack on a backlog of %d (1/10 of it for one per txn), 2 consumers, msg/s, median of %d\n"
            % (BACKLOG, REPS) + table(["workload", PGMQ_LABEL, "queue_ext_pgmq", "ratio", "per repetition"], rows))


def mixed(db, q, hold):
    new_queue(db, q)
    holder = None
    if hold:
        holder = Pipe(db=db)
        holder.query("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.query("SELECT 1")
    try:
        d0 = dead_tuples(db, q)
        rp, rc = run_parallel_list([
            lambda: pgbench("SELECT pgmq.send('%s', jsonb_build_object('t', clock_timestamp()));\n" % q,
                            clients=2, threads=2, seconds=SECONDS, db=db),
            lambda: pgbench(consume_batch(q), clients=2, threads=2, seconds=SECONDS, db=db,
                            per_statement=True)])
        left = queue_length(db, q)
        lat = [ms for ms, txt in rc["stmts"] if "pgmq.read" in txt or "WITH r" in txt]
        d1 = dead_tuples(db, q)
    finally:
        if holder:
            holder.query("COMMIT")
            holder.close()
    return dict(inrate=rp["tx"] / SECONDS, outrate=(rp["tx"] - left) / SECONDS,
                lat=lat[0] if lat else float("nan"), left=left, dead=d1 - d0)


def test2():
    res = {}
    for rep in range(REPS):
        order = SYSTEMS if rep % 2 == 0 else SYSTEMS[::-1]
        for db, _ in order:
            for hold in (False, True):
                r = mixed(db, "mx", hold)
                res.setdefault((db, hold), []).append(r)
                log("  t2 rep %d %-9s hold=%-5s in %6.0f/s out %6.0f/s consume %.2f ms backlog %d dead +%d" % (
                    rep, db, hold, r["inrate"], r["outrate"], r["lat"], r["left"], r["dead"]))
    rows = []
    for db, label in SYSTEMS:
        m = {}
        for hold in (False, True):
            rs = res[(db, hold)]
            m[hold] = dict(out=median([r["outrate"] for r in rs]), lat=median([r["lat"] for r in rs]),
                           left=median([r["left"] for r in rs]), dead=median([r["dead"] for r in rs]))
            rows.append([label + (" + snapshot held" if hold else ""), "%.0f" % m[hold]["out"],
                         "%.2f" % m[hold]["lat"], "%.0f" % m[hold]["left"], "%.0f" % m[hold]["dead"]])
        rows.append(["  held/free", "%.2f" % ratio(m[True]["out"], m[False]["out"]),
                     "%.2f" % ratio(m[True]["lat"], m[False]["lat"]), "", ""])
    return ("2. held xmin horizon: 2 producers (1 msg/txn) + 2 consumers (100/txn), %d s, median of %d\n"
            % (SECONDS, REPS) + table(["system", "out msg/s", "consume stmt ms", "final backlog",
                                       "new dead tuples (q table)"], rows))


def main():
    log("== %s (%s) vs queue_ext_pgmq: sends %d backlog %d reps %d seconds %d tests %s; load %s" % (
        PGMQ_LABEL, PGMQ_SQL, SENDS, BACKLOG, REPS, SECONDS, ",".join(TESTS),
        open("/proc/loadavg").read().split()[:3]))
    setup()
    out = []
    for name, f in (("send", test0), ("consume", test1), ("held", test2)):
        if name in TESTS:
            out.append(f())
    log("")
    for o in out:
        log(o)
    log("load at end %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
