#!/usr/bin/env python3
"""Streams: publishing to a 4-partition stream against the heap INSERT floor.

Issue "Streams and consumer groups", measure 3: publish to a 4-partition stream
at 1 msg/txn and at 100 msg/txn, at least 1.0x the heap INSERT floor.  Side by
side in one run, on the bench server (bench/server.sh): each repetition runs
each workload on the three systems back to back, in an order rotated every repetition;
medians of H3_REPS runs of H3_SECONDS s, 8 clients, and the median of the
per-repetition stream/heap ratios (the verdict):
  stream   mq.send / mq.send_batch to a stream with 4 partitions (round robin)
  classic  the same to a classic queue (for reference)
  heap     INSERT into a heap table (id bigserial, published_at timestamptz,
           routing_key text, body bytea): the floor, no queue semantics at all
Bodies: 100 random bytes (gen_random_bytes), so nothing compresses.
At 1 msg/txn each system runs twice: with pgbench's simple query protocol (every
statement parsed and planned: the parser reads mq.send's fifteen DEFAULT NULL
arguments from pg_proc each time, bench/publish_cost.sh) and with prepared
statements (-M prepared: parsed and planned once per connection, as drivers that
prepare do: JDBC after 5 executions, psycopg 3 after 5, node-postgres with a name).
Also WAL bytes per message (H3_WALN messages, 100 per transaction, 1 client).

Env: H3_SECONDS (10; quick 3), H3_REPS (3; quick 1), H3_WALN (20000; quick 5000),
H3_FRESH (1: each run on a new queue or table after a CHECKPOINT; 0: one queue or
table per system for the whole run, growing, no CHECKPOINT between runs)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import psql, psql1, wal_lsn, pgbench, median, ratio, table, log

QUICK = "--quick" in sys.argv
E = os.environ.get
SECONDS = int(E("H3_SECONDS", 3 if QUICK else 10))
REPS = int(E("H3_REPS", 1 if QUICK else 3))
WALN = int(E("H3_WALN", 5000 if QUICK else 20000))
# 0: create each system's queue or table once and keep appending to it, with no
# CHECKPOINT between runs (tables grow through the run, as in production)
FRESH = E("H3_FRESH", "1") != "0"
SYSTEMS = ["stream", "classic", "heap"]
# (messages per transaction, pgbench protocol: None = simple)
WORKLOADS = [(1, None), (1, "prepared"), (100, None)]
BODY = "gen_random_bytes(100)"


def setup(s):
    psql("CREATE EXTENSION IF NOT EXISTS pgcrypto; CREATE EXTENSION IF NOT EXISTS queue_ext;")
    if s == "stream":
        psql("""DO $$ BEGIN PERFORM mq.queue_delete('b3_stream');
                EXCEPTION WHEN undefined_object THEN NULL; END $$;
                SELECT mq.queue_declare('b3_stream', type => 'stream',
                       arguments => '{"partitions": 4}');""")
    elif s == "classic":
        psql("""DO $$ BEGIN PERFORM mq.queue_delete('b3_classic');
                EXCEPTION WHEN undefined_object THEN NULL; END $$;
                SELECT mq.queue_declare('b3_classic');""")
    else:
        psql("""DROP TABLE IF EXISTS b3_heap;
                CREATE TABLE b3_heap (id bigserial, published_at timestamptz DEFAULT now(),
                                      routing_key text, body bytea);""")
    psql("CHECKPOINT")


def script(s, batch):
    if s == "heap":
        if batch == 1:
            return "INSERT INTO b3_heap (routing_key, body) VALUES ('b3', %s);\n" % BODY
        return ("INSERT INTO b3_heap (routing_key, body) SELECT 'b3', %s "
                "FROM generate_series(1, %d);\n" % (BODY, batch))
    q = "b3_" + s
    if batch == 1:
        return "SELECT mq.send('%s', %s);\n" % (q, BODY)
    return ("SELECT count(*) FROM mq.send_batch('%s', ARRAY(SELECT %s FROM generate_series(1, %d)));\n"
            % (q, BODY, batch))


def wal_per_message(s):
    setup(s)
    per = 100
    txns = max(1, WALN // per)
    before = wal_lsn()
    pgbench(script(s, per), clients=1, threads=1, transactions=txns)
    return (wal_lsn() - before) / (txns * per)


def main():
    log("# streams: publish to a 4-partition stream vs the heap INSERT floor")
    log("load average at start: %s" % open("/proc/loadavg").read().split()[:3])
    log("H3_FRESH=%d: %s" % (FRESH, "a new queue or table and a CHECKPOINT before each run" if FRESH
                             else "one queue or table per system, growing, no CHECKPOINT between runs"))
    # WAL first, on a quiet server (the throughput runs leave autovacuum work)
    wal = {s: wal_per_message(s) for s in SYSTEMS}
    res = {}
    # Each workload's systems run back to back (rotated order), so the stream
    # and the heap it is compared with run minutes apart at most, in the same
    # state of the machine.  (Until 2026-12-02 each system ran its three
    # workloads in a row; then what one system's 100 msg/txn run left behind
    # -- dirty buffers, autovacuum of the heap table, the worker's passes --
    # fell on whichever system came next, and the per-repetition ratios
    # swung from 0.73 to 1.94 on a quiet machine.)
    for rep in range(REPS):
        order = SYSTEMS[rep % 3:] + SYSTEMS[:rep % 3]
        for batch, proto in WORKLOADS:
            for s in order:
                if FRESH or not res.get((s, 1, None)):
                    setup(s)
                r = pgbench(script(s, batch), clients=8, threads=2, seconds=SECONDS,
                            protocol=proto)
                key = (s, batch, proto)
                res.setdefault(key, []).append(r["tps"] * batch)
                log("  rep %d %-7s %3d/txn %-8s %10.0f msg/s"
                    % (rep + 1, s, batch, proto or "simple", res[key][-1]))
    rows = []
    for batch, proto in WORKLOADS:
        st, cl, hp = (median(res[(s, batch, proto)]) for s in SYSTEMS)
        paired = [ratio(a, b) for a, b in zip(res[("stream", batch, proto)],
                                              res[("heap", batch, proto)])]
        ok = "PASS" if median(paired) >= 1.0 else "FAIL"
        rows.append(["%d msg/txn, 8 clients%s" % (batch, ", prepared" if proto else ""),
                     "%.0f" % st, "%.0f" % cl, "%.0f" % hp,
                     "%.2f" % ratio(st, hp), "%.2f" % median(paired),
                     " ".join("%.2f" % x for x in paired),
                     "%.2f" % ratio(cl, hp), ">= 1.0x heap " + ok])
    log("\n### publish throughput (msg/s, median of %d x %d s)" % (REPS, SECONDS))
    log(table(["workload", "stream (4 partitions)", "classic queue", "heap INSERT",
               "stream/heap (medians)", "stream/heap (median of pairs)", "pairs",
               "classic/heap", "target (median of pairs)"], rows))
    log("\n### WAL bytes per message, 100 msg/txn, 1 client, %d messages after a CHECKPOINT "
        "(full-page images included, as harness 1)" % WALN)
    log(table(["stream", "classic", "heap INSERT", "stream/heap"],
              [["%.1f" % wal["stream"], "%.1f" % wal["classic"], "%.1f" % wal["heap"],
                "%.2f" % ratio(wal["stream"], wal["heap"])]]))
    for s in SYSTEMS:
        if s == "heap":
            psql("DROP TABLE IF EXISTS b3_heap")
        else:
            psql("SELECT mq.queue_delete('b3_%s')" % s)
    log("load average at end: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
