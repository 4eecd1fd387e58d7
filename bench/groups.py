#!/usr/bin/env python3
"""Consumer groups (issue 12 "Streams and consumer groups", section Measure).

    python3 bench/groups.py --all [--quick]      # tests 1-6 (full ~25 min, quick ~6 min)
    python3 bench/groups.py 1 3 [--quick]        # only those tests

Runs against the bench server of bench/server.sh (BENCH_HOST/BENCH_PORT select it; a private
cluster: BENCH_DIR=/tmp/x/bench BENCH_PORT=5525 PGBIN=<copy>/bin bash bench/server.sh).
Side by side in one run, the order of the systems rotated each repetition, medians and the
spread (min-max) printed; output also goes to bench/results/groups-<UTC>.txt.

 1. group read throughput on a backlog of G1_BACKLOG (1M) messages of 100 random bytes on a
    4-partition stream, against PgQ's batch consumer (next_batch / get_batch_events /
    finish_batch, 1 consumer, ticks of exactly 1000 events) reading the same number of events:
    (a) broadcast consumer, consume(1000) + ack(1000 ids) per transaction (skipped with a line
        while group_declare(mode => 'broadcast') raises 0A000); stand-in: a clustering group
        with ONE consumer doing the same; target >= 1.0x PgQ;
    (b) clustering group, 4 consumers (pgbench -c 4), consume(100) + ack(their 100 ids) per
        transaction; target >= 0.5x PgQ and >= 3x a SKIP LOCKED table queue (id bigserial
        primary key, body bytea; DELETE ... WHERE id IN (SELECT id ... ORDER BY id FOR UPDATE
        SKIP LOCKED LIMIT 100) RETURNING, 4 consumers).
    Every repetition reads the whole backlog: a new group (start => 'earliest') per run, a new
    PgQ consumer registered at the backlog's first tick, a refilled SKIP LOCKED table.
 2. fan-out: 1, 10, 100 clustering groups on one 4-partition stream; G2_N messages published
    (100 per transaction), then every group consumes + acks all (100 per transaction): WAL
    and disk (all mq.* relations) per published message, publish alone and publish + all
    groups; against N heap INSERTs into N pgmq-layout tables (pgmq's cost model, a copy per
    queue; pgmq itself is not installed here).
 3. seek by time in a G3_N (10M) message partition: mq.seek(to_time) and mq.read(from_time)
    at G3_SEEKS (50) random times, median ms (target < 10 ms). The stream g3_seek is kept
    between runs and reused when it holds G3_N messages (it takes minutes to build).
 4. mq.consumer_groups with 100 groups on a 4-partition stream with a backlog, some groups
    with messages in flight (leases held by another session): median ms of G4_REPS queries
    (target < 10 ms).
 5. held xmin: 4 producers (mq.send, 1 msg/txn) + 4 consumers of one clustering group
    (consume(100, wait => 100 ms) + ack per transaction) for G5_SECONDS, without and with a
    REPEATABLE READ transaction holding its snapshot during the whole run; throughput ratio
    (target within 10 %), relation sizes at start / end, dead tuples in mq.* heap tables.
 6. bench/streams.py (its own output; run last): publish to a 4-partition stream vs the heap
    INSERT floor at 1 and 100 msg/txn.

PgQ's ticker: pgqd is not used; the fill of test 1 calls pgq.ticker(queue) after every
1000-event transaction with ticker_max_count = 1000 (and max_lag / idle_period one hour), so
every batch holds exactly 1000 events.

Env: G1_BACKLOG (1000000; quick 200000), G1_REPS (3; quick 1), G2_N (20000; quick 5000),
G3_N (10000000; quick: the same stream if it exists, else 1000000), G3_SEEKS (50),
G4_REPS (50), G5_SECONDS (120; quick 20).
"""
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import psql, psql1, wal_lsn, pgbench, median, ratio, table, log, Pipe, Tee  # noqa: E402

QUICK = "--quick" in sys.argv
E = os.environ.get
BACKLOG = int(E("G1_BACKLOG", 200000 if QUICK else 1000000))
REPS = int(E("G1_REPS", 1 if QUICK else 3))
N2 = int(E("G2_N", 5000 if QUICK else 20000))
N3 = int(E("G3_N", 0 if QUICK else 10000000))   # 0: reuse what exists, else 1M
SEEKS = int(E("G3_SEEKS", 50))
G4_REPS = int(E("G4_REPS", 50))
G5_SECONDS = int(E("G5_SECONDS", 20 if QUICK else 120))
BODY = "gen_random_bytes(100)"


def spread(xs):
    return "%s-%s" % (fmtn(min(xs)), fmtn(max(xs))) if xs else "-"


def fmtn(x):
    return "{:,.0f}".format(x) if abs(x) >= 100 else "%.2f" % x


def drop_stream(q):
    psql("""DO $$ BEGIN PERFORM mq.queue_delete('%s');
            EXCEPTION WHEN undefined_object THEN NULL; END $$;""" % q)


def new_stream(q, partitions=4):
    drop_stream(q)
    psql("SELECT mq.queue_declare('%s', type => 'stream', arguments => '{\"partitions\": %d}')"
         % (q, partitions))


def fill_stream(q, n, per_call=5000, calls_per_txn=20, clients=1):
    """n messages of 100 random bytes, per_call per send_batch, calls_per_txn per transaction."""
    per_txn = per_call * calls_per_txn
    txns = max(1, n // per_txn)
    sql = "BEGIN;\n" + ("SELECT count(*) FROM mq.send_batch('%s', ARRAY(SELECT %s FROM "
                        "generate_series(1, %d)));\n" % (q, BODY, per_call)) * calls_per_txn + "COMMIT;\n"
    t0 = time.time()
    pgbench(sql, clients=clients, threads=clients, transactions=max(1, txns // clients))
    return time.time() - t0


def setup_sql():
    psql("""CREATE EXTENSION IF NOT EXISTS pgcrypto; CREATE EXTENSION IF NOT EXISTS queue_ext;
CREATE EXTENSION IF NOT EXISTS pgq;
CREATE OR REPLACE FUNCTION g_pgq_consume(q text, c text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE b bigint; n int;
BEGIN
  b := pgq.next_batch(q, c);
  IF b IS NULL THEN RETURN 0; END IF;
  SELECT count(*) INTO n FROM pgq.get_batch_events(b);
  PERFORM pgq.finish_batch(b);
  RETURN n;
END $$;
CREATE OR REPLACE PROCEDURE g_drain(q text, g text, batch int) LANGUAGE plpgsql AS $$
DECLARE k int;
BEGIN
  LOOP
    SELECT mq.ack(q, coalesce(array_agg(msg_id), '{}'), group_name => g) INTO k
      FROM mq.consume(q, batch, group_name => g);
    COMMIT;
    EXIT WHEN k = 0;
  END LOOP;
END $$;
CREATE OR REPLACE FUNCTION g_ms(sql text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t timestamptz := clock_timestamp();
BEGIN
  EXECUTE sql;
  RETURN extract(epoch FROM clock_timestamp() - t) * 1000;
END $$;""")


def group_lag(q, g):
    return int(psql1("SELECT coalesce(sum(lag), 0) FROM mq.consumer_groups "
                     "WHERE queue = '%s' AND group_name = '%s'" % (q, g)))


# ---------------------------------------------------------------- test 1
def t1():
    log("\n## 1. group read throughput, backlog of %d messages (100 random bytes), "
        "%d repetition(s)" % (BACKLOG, REPS))
    q = "g1_stream"
    new_stream(q, 4)
    dt = fill_stream(q, BACKLOG)
    log("stream filled: %d messages in %.1f s" % (BACKLOG, dt))
    # PgQ: one queue, exactly 1000 events per tick
    psql("""SELECT pgq.drop_queue(queue_name, true) FROM pgq.queue WHERE queue_name = 'g1_pgq';
SELECT pgq.create_queue('g1_pgq');
SELECT pgq.set_queue_config('g1_pgq', 'ticker_max_count', '1000');
SELECT pgq.set_queue_config('g1_pgq', 'ticker_max_lag', '1 hour');
SELECT pgq.set_queue_config('g1_pgq', 'ticker_idle_period', '1 hour');
SELECT pgq.register_consumer('g1_pgq', 'keep');
SELECT pgq.ticker('g1_pgq', 1, now(), 0) WHERE NOT EXISTS
  (SELECT 1 FROM pgq.tick t JOIN pgq.queue q ON q.queue_id = t.tick_queue WHERE q.queue_name = 'g1_pgq');""")
    first_tick = int(psql1("SELECT max(tick_id) FROM pgq.tick t JOIN pgq.queue q ON "
                           "q.queue_id = t.tick_queue WHERE q.queue_name = 'g1_pgq'"))
    t0 = time.time()
    pgbench("SELECT count(pgq.insert_event('g1_pgq', 'ev', encode(%s, 'base64'))) "
            "FROM generate_series(1, 1000);\nSELECT pgq.ticker('g1_pgq');\n" % BODY,
            clients=1, threads=1, transactions=BACKLOG // 1000)
    ticks = int(psql1("SELECT count(*) FROM pgq.tick t JOIN pgq.queue q ON q.queue_id = t.tick_queue "
                      "WHERE q.queue_name = 'g1_pgq' AND tick_id > %d" % first_tick))
    log("PgQ filled: %d events in %.1f s, %d ticks after the first" % (BACKLOG, time.time() - t0, ticks))
    psql("""DROP TABLE IF EXISTS g1_sl;
CREATE TABLE g1_sl (id bigserial PRIMARY KEY, body bytea);""")
    setup_sql()

    broadcast = True
    try:
        psql("SELECT mq.group_declare('%s', 'g1_probe', mode => 'broadcast', start => 'earliest'); "
             "SELECT mq.group_delete('%s', 'g1_probe');" % (q, q))
    except RuntimeError as e:
        if "0A000" in str(e) or "not implemented" in str(e):
            broadcast = False
            log("1a broadcast: SKIPPED: group_declare(mode => 'broadcast') raises 0A000 "
                "(not implemented on this build); the clustering group with one consumer "
                "stands in for it below")
        else:
            raise

    def run_pgq(rep):
        c = "r%d" % rep
        psql("SELECT pgq.unregister_consumer('g1_pgq', '%s') FROM pgq.get_consumer_info('g1_pgq') "
             "WHERE consumer_name = '%s'" % (c, c))
        psql("SELECT pgq.register_consumer_at('g1_pgq', '%s', %d)" % (c, first_tick))
        r = pgbench("SELECT g_pgq_consume('g1_pgq', '%s');\n" % c, clients=1, threads=1,
                    transactions=ticks)
        left = int(psql1("SELECT coalesce(sum(pending_events), 0) FROM pgq.get_consumer_info('g1_pgq', '%s')" % c))
        psql("SELECT pgq.unregister_consumer('g1_pgq', '%s')" % c)
        return BACKLOG / r["elapsed"], "batches %d, pending after %d" % (r["tx"], left)

    def run_group(rep, mode, consumers, batch):
        g = "g1_%s_%d" % (mode[0], rep)
        psql("SELECT mq.group_declare('%s', '%s', mode => '%s', start => 'earliest')" % (q, g, mode))
        cons = ", consumer => 'c' || :client_id" if mode == "broadcast" else ""
        sql = ("SELECT mq.ack('%s', coalesce(array_agg(msg_id), '{}'), group_name => '%s'%s) "
               "FROM mq.consume('%s', %d, group_name => '%s'%s);\n" % (q, g, cons, q, batch, g, cons))
        per_client = BACKLOG // batch // consumers
        r = pgbench(sql, clients=consumers, threads=min(consumers, 2), transactions=per_client)
        lag = group_lag(q, g)
        got = BACKLOG - lag if mode != "broadcast" else BACKLOG
        psql("SELECT mq.group_delete('%s', '%s')" % (q, g))
        return got / r["elapsed"], "lag after %d" % lag

    def run_sl(rep):
        psql("TRUNCATE g1_sl; INSERT INTO g1_sl (body) SELECT %s FROM generate_series(1, %d); "
             "VACUUM ANALYZE g1_sl;" % (BODY, BACKLOG))
        r = pgbench("WITH d AS (DELETE FROM g1_sl WHERE id IN (SELECT id FROM g1_sl ORDER BY id "
                    "FOR UPDATE SKIP LOCKED LIMIT 100) RETURNING id, body) SELECT count(*) FROM d;\n",
                    clients=4, threads=2,
                    transactions=BACKLOG // 100 // 4)
        left = int(psql1("SELECT count(*) FROM g1_sl"))
        return (BACKLOG - left) / r["elapsed"], "left %d" % left

    systems = [("pgq", "PgQ batch consumer, 1 consumer, ticks of 1000", lambda k: run_pgq(k)),
               ("a_clu", "1a stand-in: clustering group, 1 consumer, consume(1000)+ack(1000)",
                lambda k: run_group(k, "clustering", 1, 1000)),
               ("b_clu", "1b clustering group, 4 consumers, consume(100)+ack(100)",
                lambda k: run_group(k, "clustering", 4, 100)),
               ("sl", "SKIP LOCKED table, 4 consumers, 100 per DELETE", lambda k: run_sl(k))]
    if broadcast:
        systems.insert(1, ("a_bc", "1a broadcast consumer, consume(1000)+ack(1000)",
                           lambda k: run_group(k, "broadcast", 1, 1000)))
    res = {}
    for rep in range(REPS):
        order = systems[rep % len(systems):] + systems[:rep % len(systems)]
        for key, label, fn in order:
            rate, note = fn(rep)
            res.setdefault(key, []).append(rate)
            log("  rep %d %-6s %10.0f msg/s  (%s)" % (rep + 1, key, rate, note))
    med = {k: median(v) for k, v in res.items()}
    rows = []
    for key, label, fn in systems:
        rows.append([label, "%.0f" % med[key], spread(res[key]), "%.2f" % ratio(med[key], med["pgq"]),
                     "%.2f" % ratio(med[key], med["sl"])])
    log("\n### 1. read throughput (msg/s, median of %d, spread min-max)" % REPS)
    log(table(["system", "msg/s", "spread", "x PgQ", "x SKIP LOCKED"], rows))
    # paired ratios: the systems of one repetition ran back to back, so their ratio is less
    # exposed to the machine's load swings than the ratio of medians
    pr = []
    for a, b in (("a_clu", "pgq"), ("b_clu", "pgq"), ("b_clu", "sl")) + ((("a_bc", "pgq"),) if broadcast else ()):
        xs = [ratio(x, y) for x, y in zip(res[a], res[b])]
        pr.append(["%s / %s" % (a, b), "%.2f" % median(xs), " ".join("%.2f" % x for x in xs)])
    log("\npaired ratios (per repetition)")
    log(table(["ratio", "median", "per repetition"], pr))
    verdict = []
    if broadcast:
        verdict.append("1a broadcast %.2fx PgQ (target >= 1.0): %s"
                       % (ratio(med["a_bc"], med["pgq"]), "met" if med["a_bc"] >= med["pgq"] else "NOT met"))
    verdict.append("1a stand-in (clustering, 1 consumer) %.2fx PgQ (target for broadcast >= 1.0): %s"
                   % (ratio(med["a_clu"], med["pgq"]), "met" if med["a_clu"] >= med["pgq"] else "NOT met"))
    b_p, b_s = ratio(med["b_clu"], med["pgq"]), ratio(med["b_clu"], med["sl"])
    verdict.append("1b clustering 4 consumers: %.2fx PgQ (target >= 0.5): %s; %.2fx SKIP LOCKED "
                   "(target >= 3): %s" % (b_p, "met" if b_p >= 0.5 else "NOT met",
                                          b_s, "met" if b_s >= 3 else "NOT met"))
    for v in verdict:
        log(v)


# ---------------------------------------------------------------- test 2
def mq_size():
    return int(psql1("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                     "JOIN pg_namespace n ON n.oid = c.relnamespace "
                     "WHERE n.nspname IN ('mq', 'mq_storage') AND c.relkind IN ('r', 'm', 't')"))


def rel_size(pattern):
    return int(psql1("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                     "WHERE c.relkind = 'r' AND c.relname LIKE '%s'" % pattern))


def t2():
    log("\n## 2. fan-out: N = %d messages (100 random bytes, 100 per transaction) on a "
        "4-partition stream with 1, 10, 100 clustering groups" % N2)
    setup_sql()
    rows, pm = [], []
    base = {}
    for G in (1, 10, 100):
        q = "g2_fan"
        new_stream(q, 4)
        psql("".join("SELECT mq.group_declare('%s', 'f%d', start => 'latest');\n" % (q, i)
                     for i in range(G)))
        psql("CHECKPOINT")
        s0, l0 = mq_size(), wal_lsn()
        pgbench("SELECT count(*) FROM mq.send_batch('%s', ARRAY(SELECT %s FROM generate_series(1, 100)));\n"
                % (q, BODY), clients=1, threads=1, transactions=N2 // 100)
        s1, l1 = mq_size(), wal_lsn()
        t0 = time.time()
        for i in range(G):
            psql("CALL g_drain('%s', 'f%d', 100)" % (q, i))
        dt = time.time() - t0
        s2, l2 = mq_size(), wal_lsn()
        lag = int(psql1("SELECT coalesce(sum(lag), 0) FROM mq.consumer_groups WHERE queue = '%s'" % q))
        wpub, dpub = (l1 - l0) / N2, (s1 - s0) / N2
        wgrp, dgrp = (l2 - l1) / N2 / G, (s2 - s1) / N2 / G
        if G == 1:
            base = dict(w=wpub, d=dpub, wall=(l2 - l0) / N2, dall=(s2 - s0) / N2)
        rows.append(["%d" % G, "%.1f" % wpub, "%.2f" % ratio(wpub, base["w"]),
                     "%.1f" % dpub, "%.2f" % ratio(dpub, base["d"]),
                     "%.1f" % wgrp, "%.1f" % dgrp,
                     "%.1f" % ((l2 - l0) / N2), "%.1f" % ((s2 - s0) / N2),
                     "%.0f" % (N2 * G / dt), "%d" % lag])
        drop_stream(q)
    log("\n### 2a. queue_ext stream: bytes per published message (WAL incl. FPIs after a CHECKPOINT; "
        "disk = pg_total_relation_size of all mq.* relations)")
    log(table(["groups", "WAL publish", "x 1 group", "disk publish", "x 1 group",
               "WAL per group (consume+ack)", "disk per group", "WAL all", "disk all",
               "drain msg/s (CALL g_drain)", "lag after"], rows))
    # pgmq's cost model: a copy per queue
    for G in (1, 10, 100):
        psql("".join("DROP TABLE IF EXISTS g2_pgmq_%d; CREATE TABLE g2_pgmq_%d (msg_id bigserial "
                     "PRIMARY KEY, read_ct int DEFAULT 0, enqueued_at timestamptz DEFAULT now(), "
                     "vt timestamptz DEFAULT now(), message bytea); CREATE INDEX ON g2_pgmq_%d (vt);\n"
                     % (i, i, i) for i in range(G)))
        psql("CHECKPOINT")
        l0 = wal_lsn()
        sql = ("BEGIN;\nCREATE TEMP TABLE IF NOT EXISTS b (m bytea);\nTRUNCATE b;\n"
               "INSERT INTO b SELECT %s FROM generate_series(1, 100);\n" % BODY
               + "".join("INSERT INTO g2_pgmq_%d (message) SELECT m FROM b;\n" % i for i in range(G))
               + "COMMIT;\n")
        pgbench(sql, clients=1, threads=1, transactions=N2 // 100)
        l1 = wal_lsn()
        d = rel_size("g2_pgmq_%")
        pm.append(["%d" % G, "%.1f" % ((l1 - l0) / N2), "%.1f" % (d / N2)])
        if G == 1:
            pbase = ((l1 - l0) / N2, d / N2)
        pm[-1] += ["%.2f" % ratio((l1 - l0) / N2, pbase[0]), "%.2f" % ratio(d / N2, pbase[1])]
        psql("".join("DROP TABLE g2_pgmq_%d;\n" % i for i in range(G)))
    log("\n### 2b. pgmq's cost model (pgmq not installed: one pgmq-layout heap table per queue, "
        "msg_id bigserial PK + vt index, N INSERTs per message; publish only, no consumption)")
    log(table(["queues", "WAL per message", "disk per message", "WAL x 1 queue", "disk x 1 queue"], pm))


# ---------------------------------------------------------------- test 3
def t3():
    q = "g3_seek"
    have = psql1("SELECT coalesce((SELECT ready FROM mq.queues WHERE queue = '%s'), -1)" % q)
    have = int(have)
    want = N3 if N3 else (have if have > 0 else 1000000)
    log("\n## 3. seek by time in one partition of %d messages" % want)
    if have < want:
        new_stream(q, 1)
        dt = fill_stream(q, want)
        log("stream %s filled: %d messages in %.0f s" % (q, want, dt))
    else:
        log("reusing stream %s (%d messages)" % (q, have))
    n = int(psql1("SELECT ready FROM mq.queues WHERE queue = '%s'" % q))
    first = psql1("SELECT \"offset\" FROM mq.read('%s', 0, max_messages => 1)" % q)
    t_first = psql1("SELECT extract(epoch FROM published_at) FROM mq.read('%s', 0, max_messages => 1)" % q)
    t_last = psql1("SELECT extract(epoch FROM published_at) FROM mq.read('%s', 0, from_offset => %d, "
                   "max_messages => 1)" % (q, int(first) + n - 1))
    t_first, t_last = float(t_first), float(t_last)
    log("partition 0: %d messages, offsets from %s, published over %.0f s; relation sizes: %s"
        % (n, first, t_last - t_first,
           psql1("SELECT pg_size_pretty(sum(pg_total_relation_size(oid))) FROM pg_class WHERE "
                 "relnamespace IN ('mq'::regnamespace, 'mq_storage'::regnamespace) AND relkind = 'r'")))
    setup_sql()
    psql("DO $$ BEGIN PERFORM mq.group_declare('g3_seek', 'gs', start => 'earliest'); END $$")
    rnd = random.Random(12)
    times = [t_first + rnd.random() * (t_last - t_first) for _ in range(SEEKS)]
    p = Pipe()
    res = {"seek": [], "seek_e2e": [], "read1": [], "read100": [], "offset": []}
    for ts in times:
        tsq = "to_timestamp(%.6f)" % ts
        t0 = time.perf_counter()
        ms = float(p.query("SELECT g_ms($q$SELECT mq.seek('g3_seek', 'gs', to_time => %s)$q$)" % tsq)[0])
        res["seek_e2e"].append((time.perf_counter() - t0) * 1000)
        res["seek"].append(ms)
        res["read1"].append(float(p.query(
            "SELECT g_ms($q$SELECT count(*) FROM mq.read('g3_seek', 0, from_time => %s, max_messages => 1)$q$)" % tsq)[0]))
        res["read100"].append(float(p.query(
            "SELECT g_ms($q$SELECT count(*) FROM mq.read('g3_seek', 0, from_time => %s, max_messages => 100)$q$)" % tsq)[0]))
    # check: the group's next message is at or after the time, the one before it is earlier
    bad = 0
    for ts in times[:10]:
        p.query("SELECT mq.seek('g3_seek', 'gs', to_time => to_timestamp(%.6f))" % ts)
        off = int(p.query("SELECT committed_offset FROM mq.consumer_groups WHERE queue = 'g3_seek' "
                          "AND group_name = 'gs'")[0])
        r = p.query("SELECT extract(epoch FROM published_at) FROM mq.read('g3_seek', 0, from_offset => %d, "
                    "max_messages => 2)" % max(off - 1, 0))
        prev, cur = float(r[0]), float(r[1] if off > 0 else r[0])
        if not (cur >= ts - 1e-6 and (off == 0 or prev < ts)):
            bad += 1
    p.close()
    rows = [["mq.seek(to_time), server side", "%.2f" % median(res["seek"]), spread(res["seek"])],
            ["mq.seek(to_time), client round trip incl. commit", "%.2f" % median(res["seek_e2e"]),
             spread(res["seek_e2e"])],
            ["mq.read(from_time, max 1)", "%.2f" % median(res["read1"]), spread(res["read1"])],
            ["mq.read(from_time, max 100)", "%.2f" % median(res["read100"]), spread(res["read100"])]]
    log("\n### 3. seek / read by time, %d random times, ms (target < 10 ms)" % SEEKS)
    log(table(["operation", "median ms", "spread"], rows))
    log("check of 10 seeks (next offset is the first message at or after the time): %d wrong" % bad)
    m = median(res["seek"])
    log("seek by time %.2f ms: target < 10 ms %s" % (m, "met" if m < 10 else "NOT met"))


# ---------------------------------------------------------------- test 4
def t4():
    q = "g4_lag"
    log("\n## 4. mq.consumer_groups with 100 groups on a 4-partition stream")
    setup_sql()
    new_stream(q, 4)
    psql("".join("SELECT mq.group_declare('%s', 'l%d', start => 'earliest');\n" % (q, i)
                 for i in range(100)))
    fill_stream(q, 100000)
    # groups progress unevenly: group i acks (i % 10) * 1000 messages
    for i in range(100):
        k = (i % 10)
        if k:
            psql("".join("SELECT mq.ack('%s', array_agg(msg_id), group_name => 'l%d') FROM "
                         "mq.consume('%s', 1000, group_name => 'l%d');\n" % (q, i, q, i)
                         for _ in range(k)))
    # some in flight: another session holds 200 leased messages in each of 20 groups
    holder = Pipe()
    for i in range(0, 100, 5):
        holder.query("SELECT count(*) FROM mq.consume('%s', 200, lease => '10 minutes', "
                     "group_name => 'l%d')" % (q, i))
    p = Pipe()
    rows = int(p.query("SELECT count(*) FROM mq.consumer_groups WHERE queue = '%s'" % q)[0])
    inflight = int(p.query("SELECT sum(in_flight) FROM mq.consumer_groups WHERE queue = '%s'" % q)[0])
    srv, cli, srv_all = [], [], []
    for _ in range(G4_REPS):
        t0 = time.perf_counter()
        p.query("SELECT * FROM mq.consumer_groups")
        cli.append((time.perf_counter() - t0) * 1000)
        srv.append(float(p.query("SELECT g_ms($q$SELECT * FROM mq.consumer_groups$q$)")[0]))
        srv_all.append(float(p.query(
            "SELECT g_ms($q$SELECT sum(lag), sum(in_flight), max(idle) FROM mq.consumer_groups "
            "WHERE queue = 'g4_lag'$q$)")[0]))
    p.close()
    holder.close()
    log("view rows for the stream: %d (100 groups x 4 partitions), in flight %d" % (rows, inflight))
    log(table(["query", "median ms", "spread"],
              [["SELECT * FROM mq.consumer_groups (server side)", "%.2f" % median(srv), spread(srv)],
               ["the same, client round trip with %d rows" % rows, "%.2f" % median(cli), spread(cli)],
               ["sum(lag), sum(in_flight), max(idle) for the stream", "%.2f" % median(srv_all),
                spread(srv_all)]]))
    m = median(srv)
    log("lag view %.2f ms: target < 10 ms %s" % (m, "met" if m < 10 else "NOT met"))
    drop_stream(q)


# ---------------------------------------------------------------- test 5
def rel_listing():
    out = psql("""SELECT c.relname, pg_total_relation_size(c.oid), coalesce(s.n_dead_tup, 0),
       coalesce(s.n_live_tup, 0), am.amname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE n.nspname IN ('mq', 'mq_storage') AND c.relkind = 'r' ORDER BY 1""")
    res = {}
    for line in out.splitlines():
        name, size, dead, live, am = line.split("|")
        res[name] = (int(size), int(dead), int(live), am)
    return res


def t5():
    q = "g5_xmin"
    log("\n## 5. held xmin: 4 producers (mq.send, 1 msg/txn) + 4 consumers (clustering, "
        "consume(100, wait 100 ms) + ack), %d s per run" % G5_SECONDS)
    setup_sql()
    results = {}
    listings = {}
    for mode in ("without", "with"):
        new_stream(q, 4)
        psql("SELECT mq.group_declare('%s', 'x', start => 'latest')" % q)
        psql("VACUUM; CHECKPOINT")
        psql("SELECT pg_stat_force_next_flush()", check=False)
        time.sleep(1)
        before = rel_listing()
        holder = None
        if mode == "with":
            holder = Pipe()
            holder.query("BEGIN ISOLATION LEVEL REPEATABLE READ")
            holder.query("SELECT count(*) FROM pg_class")
            xmin = psql1("SELECT backend_xmin FROM pg_stat_activity WHERE backend_xmin IS NOT NULL "
                         "AND state = 'idle in transaction'")
            log("  snapshot held, backend_xmin %s" % xmin)
        o0 = int(psql1("SELECT coalesce(sum(committed_offset), 0) FROM mq.consumer_groups "
                       "WHERE queue = '%s'" % q))
        prod = subprocess.Popen(["python3", "-c", """
import sys; sys.path.insert(0, %r)
from benchlib import pgbench
r = pgbench("SELECT mq.send('%s', gen_random_bytes(100));\\n", clients=4, threads=2, seconds=%d)
print(r['tx'], r['tps'], r['lat_ms'])""" % (os.path.dirname(os.path.abspath(__file__)), q, G5_SECONDS)],
                                stdout=subprocess.PIPE, text=True)
        cons = pgbench("SELECT mq.ack('%s', coalesce(array_agg(msg_id), '{}'), group_name => 'x') "
                       "FROM mq.consume('%s', 100, wait => '100 ms', group_name => 'x');\n" % (q, q),
                       clients=4, threads=2, seconds=G5_SECONDS)
        ptx, ptps, plat = prod.communicate()[0].split()
        o1 = int(psql1("SELECT coalesce(sum(committed_offset), 0) FROM mq.consumer_groups "
                       "WHERE queue = '%s'" % q))
        lag = int(psql1("SELECT coalesce(sum(lag), 0) FROM mq.consumer_groups WHERE queue = '%s'" % q))
        psql("SELECT pg_stat_force_next_flush()", check=False)
        time.sleep(1)
        after = rel_listing()
        if holder:
            holder.query("COMMIT")
            holder.close()
        results[mode] = dict(pub=int(ptx), pub_rate=float(ptps), pub_lat=float(plat),
                             acked=o1 - o0, ack_rate=(o1 - o0) / G5_SECONDS, cons_lat=cons["lat_ms"],
                             lag=lag)
        listings[mode] = (before, after)
        log("  %s snapshot: published %d (%.0f msg/s, %.2f ms/txn), consumed+acked %d (%.0f msg/s, "
            "%.2f ms per consume+ack), lag at end %d" % (mode, int(ptx), float(ptps), float(plat), o1 - o0,
                                                        (o1 - o0) / G5_SECONDS, cons["lat_ms"], lag))
    w, h = results["without"], results["with"]
    log("\n### 5. throughput with / without a held snapshot (target: within 10 %%)")
    log(table(["", "without", "with", "with/without"],
              [["published msg/s", "%.0f" % w["pub_rate"], "%.0f" % h["pub_rate"],
                "%.2f" % ratio(h["pub_rate"], w["pub_rate"])],
               ["consumed+acked msg/s", "%.0f" % w["ack_rate"], "%.0f" % h["ack_rate"],
                "%.2f" % ratio(h["ack_rate"], w["ack_rate"])],
               ["consume+ack latency ms", "%.2f" % w["cons_lat"], "%.2f" % h["cons_lat"],
                "%.2f" % ratio(h["cons_lat"], w["cons_lat"])],
               ["lag at end", "%d" % w["lag"], "%d" % h["lag"], ""]]))
    for mode in ("without", "with"):
        before, after = listings[mode]
        r = results[mode]
        rows = []
        tot0 = tot1 = dead0 = dead1 = 0
        for name in sorted(set(before) | set(after)):
            b = before.get(name, (0, 0, 0, ""))
            a = after.get(name, (0, 0, 0, ""))
            tot0 += b[0]
            tot1 += a[0]
            if (a[3] or b[3]) == "heap":
                dead0 += b[1]
                dead1 += a[1]
            if a[0] != b[0] or a[1] or b[1]:
                rows.append([name, a[3] or b[3], "%d" % (b[0] // 1024), "%d" % (a[0] // 1024),
                             "%d" % b[1], "%d" % a[1]])
        log("\n#### relations of schema mq that changed, run %s the snapshot (kB; dead tuples from "
            "pg_stat_user_tables)" % mode)
        log(table(["relation", "am", "kB start", "kB end", "dead start", "dead end"], rows))
        grow = tot1 - tot0
        log("total mq.* %d kB -> %d kB (+%d kB = %.1f B per published message; %d published, "
            "retained by the stream); heap dead tuples %d -> %d"
            % (tot0 // 1024, tot1 // 1024, grow // 1024, grow / max(r["pub"], 1), r["pub"], dead0, dead1))
    ok = abs(ratio(h["ack_rate"], w["ack_rate"]) - 1) <= 0.10 and abs(ratio(h["pub_rate"], w["pub_rate"]) - 1) <= 0.10
    log("held xmin: throughput within 10 %%: %s" % ("met" if ok else "NOT met"))
    drop_stream(q)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    tests = [1, 2, 3, 4, 5, 6] if ("--all" in sys.argv or not args) else [int(a) for a in args]
    rdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(rdir, exist_ok=True)
    out = os.path.join(rdir, "groups-%s%s.txt" % (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
                                                   "-quick" if QUICK else ""))
    sys.stdout = Tee(out)
    log("# consumer groups (issue 12), %s run %s, tests %s" % ("quick" if QUICK else "full",
                                                              time.strftime("%F %T UTC", time.gmtime()), tests))
    log("server: %s" % psql1("SELECT version()"))
    log("git: %s" % subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "log",
                                    "--oneline", "-1"], capture_output=True, text=True).stdout.strip())
    log("load average at start: %s" % open("/proc/loadavg").read().split()[:3])
    setup_sql()
    for t in tests:
        t0 = time.time()
        if t == 6:
            r = subprocess.run(["python3", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                        "streams.py")] + (["--quick"] if QUICK else []),
                               capture_output=True, text=True)
            log(r.stdout + r.stderr)
        else:
            {1: t1, 2: t2, 3: t3, 4: t4, 5: t5}[t]()
        log("(test %d took %.0f s; load average %s)" % (t, time.time() - t0,
                                                       open("/proc/loadavg").read().split()[:3]))
    log("load average at end: %s" % open("/proc/loadavg").read().split()[:3])
    log("output written to %s" % out)


if __name__ == "__main__":
    main()
