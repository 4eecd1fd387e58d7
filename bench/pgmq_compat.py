#!/usr/bin/env python3
"""pgmq 1.5.1 itself vs queue_ext_pgmq (docs/pgmq.md), through the same pgmq SQL calls.

pgmq's SQL is loadable without building: give its pgmq-extension/sql/pgmq.sql of
release 1.5.1 (not part of this repository), for instance
    git clone https://github.com/pgmq/pgmq /tmp/pgmq
    git -C /tmp/pgmq show v1.5.1:pgmq-extension/sql/pgmq.sql > /tmp/pgmq-1.5.1.sql
    PGMQ_SQL=/tmp/pgmq-1.5.1.sql python3 bench/pgmq_compat.py
It is loaded into database pgmq_orig; queue_ext_pgmq goes into pgmq_qe (both on the
bench server, benchlib.py: BENCH_HOST, BENCH_PORT, BENCH_USER; both databases are
dropped and created again).

Workloads (those of the messaging-core harness, broker_vs_skiplocked.py, in pgmq's calls):
  1. consume+ack on a backlog of PGMQ_BACKLOG messages (filled with send_batch of 100),
     2 consumer clients: a) batches: read 100, delete those 100 in one transaction;
     b) one message per transaction: read 1, delete it (pgmq's usual loop).
  2. held xmin horizon: 2 producers (send, 1 message per transaction) and 2 consumers
     (read 100 + delete; 10 ms back-off when empty) for PGMQ_SECONDS, without and with
     another session holding a REPEATABLE READ snapshot open the whole time.
Medians of PGMQ_REPS repetitions; the order of the systems alternates.

Environment: PGMQ_SQL (required), PGMQ_BACKLOG (100000), PGMQ_REPS (3), PGMQ_SECONDS (30).
"""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import psql, psql1, pgbench, median, ratio, table, log, Pipe  # noqa: E402

PGMQ_SQL = os.environ.get("PGMQ_SQL")
BACKLOG = int(os.environ.get("PGMQ_BACKLOG", "100000"))
REPS = int(os.environ.get("PGMQ_REPS", "3"))
SECONDS = int(os.environ.get("PGMQ_SECONDS", "30"))
SYSTEMS = (("pgmq_orig", "pgmq 1.5.1"), ("pgmq_qe", "queue_ext_pgmq"))


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
    if not PGMQ_SQL or not os.path.exists(PGMQ_SQL):
        sys.exit("PGMQ_SQL must name pgmq 1.5.1's pgmq-extension/sql/pgmq.sql (see the header)")
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
        rows.append([label, "%.0f" % a, "%.0f" % b, "%.2fx" % ratio(b, a)])
    return ("1. consume+ack on a backlog of %d (1/10 of it for one per txn), 2 consumers, msg/s, median of %d\n"
            % (BACKLOG, REPS) + table(["workload", "pgmq 1.5.1", "queue_ext_pgmq", "ratio"], rows))


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
    log("== pgmq 1.5.1 vs queue_ext_pgmq: backlog %d reps %d seconds %d; load %s" % (
        BACKLOG, REPS, SECONDS, open("/proc/loadavg").read().split()[:3]))
    setup()
    out = [test1(), test2()]
    log("")
    for o in out:
        log(o)
    log("load at end %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
