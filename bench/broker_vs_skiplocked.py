#!/usr/bin/env python3
"""Harness 2 -- broker: queue_ext vs a pgmq-style FOR UPDATE SKIP LOCKED table vs PgQ.

Systems (all on the same server, same database, side by side in one run):
  qe   queue_ext: mq.send / mq.send_batch / mq.consume(q, 100) + mq.ack in one transaction
  sl   pgmq-style table (msg_id bigserial PK, read_ct, enqueued_at, vt, message bytea) with
       pgmq's btree on vt; read = UPDATE .. WHERE msg_id IN (SELECT .. FOR UPDATE SKIP LOCKED)
       RETURNING, ack = DELETE by msg_id, both in one transaction (plpgsql helper, like pgmq's
       format()-SQL functions)
  pgq  PgQ 3.5: pgq.insert_event; one consumer (PgQ has no competing consumers without
       pgq-coop) doing next_batch / get_batch_events / finish_batch in one transaction;
       ticker = SELECT pgq.ticker() every 50 ms from this script, ticker_max_lag 100 ms,
       ticker_max_count 500 (default)
Bodies: 100 random bytes.  Tests are numbered as in the issue "messaging core" (1..9).

Env (defaults = full run, ~25 min; --quick ~4 min):
  H2_SECONDS   pgbench duration of throughput runs (10; quick 3)
  H2_REPS      repetitions of throughput runs, medians reported (3; quick 1)
  H2_BACKLOG   backlog drained per repetition in test 2 (1000000 as in the issue; quick 20000)
  H2_HISTORY   messages put through each system before tests 6 and 7 measure (5000000 as in the
               issue; quick 40000): test 2's timed repetitions, then untimed fill+drain rounds
  H2_MIXED     duration of each mixed run, test 3 (60 as in the issue; quick 8; H2_REPS runs per
               system and size)
  H2_XMIN      duration of each held-xmin run, test 9 (60; quick 10)
  H2_LAT       duration of the latency runs, test 4 (15; quick 5)
  H2_WALN      messages per WAL-life measurement, test 5 (20000; quick 5000)
  H2_IDLE      seconds to wait before re-measuring sizes in test 6 (15)
  H2_TESTS     comma list of tests to run (default all: 1,2,3,4,5,8,9; 6 and 7 ride on 2)
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (psql, psql1, wal_lsn, pgbench, median, pct, ratio, table, log, fmt,
                      Pipe, Ticker)

QUICK = "--quick" in sys.argv
E = os.environ.get
SECONDS = int(E("H2_SECONDS", 3 if QUICK else 10))
REPS = int(E("H2_REPS", 1 if QUICK else 3))
BACKLOG = int(E("H2_BACKLOG", 20000 if QUICK else 1000000))
HISTORY = int(E("H2_HISTORY", 40000 if QUICK else 5000000))
MIXED = int(E("H2_MIXED", 8 if QUICK else 60))
XMIN = int(E("H2_XMIN", 10 if QUICK else 60))
LAT = int(E("H2_LAT", 5 if QUICK else 15))
WALN = int(E("H2_WALN", 5000 if QUICK else 20000))
IDLE = int(E("H2_IDLE", 15))
TESTS = set(E("H2_TESTS", "1,2,3,4,5,8,9").split(","))

# 100 random bytes per message, so that nothing compresses: queue_ext logs a
# row as a delta against the row before it, which would make a constant body
# nearly free in WAL (harness 1 uses random bodies for the same reason)
BODY = "gen_random_bytes(100)"                       # 100-byte bytea (pgcrypto)
BODY_TXT = "encode(gen_random_bytes(75), 'base64')"  # 100-char text for PgQ ev_data

REPORT = []   # (section title, text)


def section(title, text):
    REPORT.append((title, text))
    log("")
    log("### " + title)
    log(text)


# ---------------------------------------------------------------- setup
SETUP_SQL = r"""
CREATE EXTENSION IF NOT EXISTS queue_ext;
CREATE EXTENSION IF NOT EXISTS pgq;

-- pgmq-style read + delete in one transaction (dynamic SQL like pgmq's functions).
-- Under concurrent consumers the UPDATE ... IN (SELECT ... FOR UPDATE SKIP LOCKED) was seen
-- spinning at full CPU for minutes without progress (results/t3-livelock-*.txt); consumer
-- sessions of the mixed test run with a statement_timeout, and a call that hits it is counted
-- in sl_stalls and returns 0 (like an empty poll), so the run goes on and the stall is reported.
CREATE SEQUENCE IF NOT EXISTS sl_stalls;
CREATE OR REPLACE FUNCTION sl_consume_ack(tbl text, n int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE ids bigint[];
BEGIN
  EXECUTE format('WITH c AS (UPDATE %1$I SET vt = now() + interval ''30 seconds'', read_ct = read_ct + 1
      WHERE msg_id IN (SELECT msg_id FROM %1$I WHERE vt <= now() ORDER BY msg_id LIMIT $1
                       FOR UPDATE SKIP LOCKED) RETURNING msg_id) SELECT array_agg(msg_id) FROM c', tbl)
    INTO ids USING n;
  IF ids IS NULL THEN RETURN 0; END IF;
  EXECUTE format('DELETE FROM %I WHERE msg_id = ANY($1)', tbl) USING ids;
  RETURN cardinality(ids);
EXCEPTION WHEN query_canceled THEN
  PERFORM nextval('sl_stalls');
  RETURN 0;
END $$;

-- same, returning publish-to-delivery latencies (seconds) of messages whose body is a timestamp
CREATE OR REPLACE FUNCTION sl_consume_ack_lat(tbl text, n int) RETURNS SETOF float8 LANGUAGE plpgsql AS $$
DECLARE ids bigint[]; lat float8[];
BEGIN
  EXECUTE format('WITH c AS (UPDATE %1$I SET vt = now() + interval ''30 seconds'', read_ct = read_ct + 1
      WHERE msg_id IN (SELECT msg_id FROM %1$I WHERE vt <= now() ORDER BY msg_id LIMIT $1
                       FOR UPDATE SKIP LOCKED) RETURNING msg_id, message)
      SELECT array_agg(msg_id), array_agg(extract(epoch FROM clock_timestamp()
                                            - convert_from(message, ''UTF8'')::timestamptz)) FROM c', tbl)
    INTO ids, lat USING n;
  IF ids IS NULL THEN RETURN; END IF;
  EXECUTE format('DELETE FROM %I WHERE msg_id = ANY($1)', tbl) USING ids;
  RETURN QUERY SELECT unnest(lat);
END $$;

-- PgQ consumer step: one batch in one transaction; returns events processed (0 = no batch)
CREATE OR REPLACE FUNCTION pgq_consume(q text, c text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE b bigint; n int;
BEGIN
  b := pgq.next_batch(q, c);
  IF b IS NULL THEN RETURN 0; END IF;
  SELECT count(*) INTO n FROM pgq.get_batch_events(b);
  PERFORM pgq.finish_batch(b);
  RETURN n;
END $$;

CREATE OR REPLACE FUNCTION pgq_consume_lat(q text, c text) RETURNS SETOF float8 LANGUAGE plpgsql AS $$
DECLARE b bigint;
BEGIN
  b := pgq.next_batch(q, c);
  IF b IS NULL THEN RETURN; END IF;
  RETURN QUERY SELECT extract(epoch FROM clock_timestamp() - ev_data::timestamptz)::float8
               FROM pgq.get_batch_events(b);
  PERFORM pgq.finish_batch(b);
END $$;
"""


def qe_new(name):
    psql("SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue = '%s'; SELECT mq.queue_declare('%s');"
         % (name, name))


def sl_new(name):
    psql("""DROP TABLE IF EXISTS {n};
CREATE TABLE {n} (msg_id bigserial PRIMARY KEY, read_ct int NOT NULL DEFAULT 0,
  enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL DEFAULT now(), message bytea);
CREATE INDEX ON {n} (vt);""".format(n=name))


def pgq_new(name):
    psql("""SELECT pgq.drop_queue(queue_name, true) FROM pgq.queue WHERE queue_name = '{n}';
SELECT pgq.create_queue('{n}');
SELECT pgq.set_queue_config('{n}', 'ticker_max_lag', '100 milliseconds');
SELECT pgq.register_consumer('{n}', 'c1');""".format(n=name))


def drop(sysname, name):
    """Remove a queue after a test so its messages do not pin shared storage."""
    if sysname == "qe":
        psql("SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue = '%s'" % name)
    elif sysname == "sl":
        psql("DROP TABLE IF EXISTS %s" % name)
    else:
        psql("SELECT pgq.drop_queue(queue_name, true) FROM pgq.queue WHERE queue_name = '%s'" % name)


def new(sysname, name):
    {"qe": qe_new, "sl": sl_new, "pgq": pgq_new}[sysname](name)


def pub1(sysname, q, body=BODY):
    if sysname == "qe":
        return "SELECT mq.send('%s', %s);\n" % (q, body)
    if sysname == "sl":
        return "INSERT INTO %s (message) VALUES (%s);\n" % (q, body)
    return "SELECT pgq.insert_event('%s', 'ev', %s);\n" % (q, BODY_TXT)


def pub_n(sysname, q, n):
    """n messages in one transaction (one statement)."""
    bodies = "(SELECT array_agg(%s) FROM generate_series(1, %d))" % (BODY, n)
    if sysname == "qe":
        return "SELECT count(*) FROM mq.send_batch('%s', %s);\n" % (q, bodies)
    if sysname == "sl":
        return "INSERT INTO %s (message) SELECT %s FROM generate_series(1, %d);\n" % (q, BODY, n)
    return "SELECT count(pgq.insert_event('%s', 'ev', %s)) FROM generate_series(1, %d);\n" % (q, BODY_TXT, n)


def pub100(sysname, q):
    return pub_n(sysname, q, 100)


def cons(sysname, q, n=100, poll=False, timeout=None):
    """consume n + ack in one transaction (one statement = one transaction).
    poll=True: back off 10 ms when nothing was consumed (pgmq read_with_poll style).
    timeout: statement_timeout for SKIP LOCKED calls (see sl_consume_ack)."""
    if sysname == "qe":
        s = ("SELECT mq.ack('%s', coalesce(array_agg(msg_id), '{}')) AS n FROM mq.consume('%s', %d)"
             % (q, q, n))
    elif sysname == "sl":
        s = "SELECT sl_consume_ack('%s', %d) AS n" % (q, n)
        if timeout:
            s = "SET statement_timeout = '%s';\n" % timeout + s
    else:
        raise ValueError
    if poll:
        return s + " \\gset\n\\if :n = 0\n\\sleep 10 ms\n\\endif\n"
    return s + ";\n"


def backlog(sysname, q):
    if sysname == "qe":
        return int(psql1("SELECT coalesce(sum(ready + unacked + delayed), 0) FROM mq.queues WHERE queue = '%s'" % q))
    if sysname == "sl":
        return int(psql1("SELECT count(*) FROM %s" % q))
    raise ValueError


def pgq_events(q):
    """Events inserted into a PgQ queue so far (event sequence)."""
    return int(psql1("SELECT pgq.seq_getval(queue_event_seq) FROM pgq.queue WHERE queue_name = '%s'" % q))


class PgqConsumer:
    """Single PgQ consumer loop in a thread; counts events."""

    def __init__(self, q, lat=False):
        self.q, self.lat = q, lat
        self.count = 0
        self.batches = 0
        self.lats = []
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        p = Pipe()
        while not self.stop_ev.is_set():
            if self.lat:
                out = p.query("SELECT * FROM pgq_consume_lat('%s', 'c1')" % self.q)
                self.lats += [float(x) for x in out if x]
                n = len(out)
            else:
                n = int(p.query("SELECT pgq_consume('%s', 'c1')" % self.q)[0])
            self.count += n
            if n:
                self.batches += 1
            else:
                time.sleep(0.01)
        p.close()

    def start(self):
        self.t.start()
        return self

    def stop(self):
        self.stop_ev.set()
        self.t.join()


def pgq_drain(q, target):
    """Consume until `target` events processed; return (events, seconds, batches)."""
    p = Pipe()
    n = b = 0
    t0 = time.time()
    last_progress = time.time()
    while n < target:
        k = int(p.query("SELECT pgq_consume('%s', 'c1')" % q)[0])
        if k:
            n += k
            b += 1
            last_progress = time.time()
        else:
            if time.time() - last_progress > 10:
                log("  pgq drain stalled at %d/%d" % (n, target))
                break
            time.sleep(0.005)
    dt = time.time() - t0
    p.close()
    return n, dt, b


def mq_rel_stats():
    """(total bytes, dead tuples, live tuples) over all relations in schemas mq and mq_storage."""
    r = psql1("""SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0),
       coalesce(sum(s.n_dead_tup), 0), coalesce(sum(s.n_live_tup), 0)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE n.nspname IN ('mq', 'mq_storage') AND c.relkind IN ('r', 'p')""")
    return [int(x) for x in r.split("|")]


def tbl_stats(name):
    r = psql1("""SELECT pg_total_relation_size('{n}'), coalesce(n_dead_tup, 0), coalesce(n_live_tup, 0)
FROM pg_stat_user_tables WHERE relid = '{n}'::regclass""".format(n=name))
    return [int(x) for x in r.split("|")]


def pgq_rel_stats():
    r = psql1("""SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0),
       coalesce(sum(s.n_dead_tup), 0), coalesce(sum(s.n_live_tup), 0)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE n.nspname = 'pgq' AND c.relkind IN ('r', 'p')""")
    return [int(x) for x in r.split("|")]


def stats_for(sysname, q):
    time.sleep(1.5)   # let backends flush their pgstat counters
    if sysname == "qe":
        return mq_rel_stats()
    if sysname == "sl":
        return tbl_stats(q)
    return pgq_rel_stats()


def run_parallel(jobs):
    """jobs: list of callables; run them in threads; return their results."""
    res = [None] * len(jobs)
    errs = []

    def wrap(i, f):
        try:
            res[i] = f()
        except Exception as e:
            errs.append(e)
    ts = [threading.Thread(target=wrap, args=(i, f)) for i, f in enumerate(jobs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise errs[0]
    return res


# ---------------------------------------------------------------- tests
def test1_publish():
    res = {}
    for rep in range(REPS):
        for s in (["qe", "sl", "pgq"][rep % 3:] + ["qe", "sl", "pgq"][:rep % 3]):
            q = "p1_" + s
            new(s, q)
            r = pgbench(pub1(s, q), clients=8, threads=2, seconds=SECONDS)
            res.setdefault((s, "single"), []).append(r["tps"])
            new(s, q)
            r = pgbench(pub100(s, q), clients=8, threads=2, seconds=SECONDS)
            res.setdefault((s, "batch"), []).append(r["tps"] * 100)
            drop(s, q)
            log("  t1 rep %d %-3s single %8.0f msg/s  batch100 %8.0f msg/s" % (
                rep + 1, s, res[(s, "single")][-1], res[(s, "batch")][-1]))
    rows = []
    for mode, label in (("single", "1 msg/txn, 8 clients"), ("batch", "100 msg/txn, 8 clients")):
        qe, sl, pq = (median(res[(s, mode)]) for s in ("qe", "sl", "pgq"))
        rows.append([label, qe, sl, pq, "%.2f" % ratio(qe, sl), "%.2f" % ratio(qe, pq)])
    section("1. publish throughput (msg/s, median of %d x %d s)" % (REPS, SECONDS),
            table(["workload", "queue_ext", "SKIP LOCKED", "PgQ", "qe/SL", "qe/PgQ"], rows))


def fill(s, q, n, clients=2):
    per = max(1, n // (100 * clients))
    r = pgbench(pub100(s, q), clients=clients, threads=2, transactions=per)
    return per * clients * 100, r


def lat_probe(s, q):
    """Test 7 probe: 1 client, send_batch 100 then consume+ack 100; per-statement latency (ms)."""
    if s == "qe":
        script = pub100(s, q) + cons(s, q)
    else:
        script = pub100(s, q) + cons(s, q)
    r = pgbench(script, clients=1, threads=1, seconds=max(3, SECONDS // 2), per_statement=True)
    # consume statement latency: the line containing consume / sl_consume_ack
    c = [ms for ms, txt in r["stmts"] if "consume" in txt]
    return c[0] if c else float("nan")


def test2_6_7_backlog():
    res = {}
    consumers = 2
    # test 7, fresh queues
    for s in ("qe", "sl"):
        q = "fresh_" + s
        new(s, q)
        res[(s, "lat_fresh")] = lat_probe(s, q)
    for s in ("qe", "sl", "pgq"):
        new(s, "hist_" + s)
    before = {s: stats_for(s, "hist_" + s) for s in ("qe", "sl", "pgq")}
    through = {s: 0 for s in ("qe", "sl", "pgq")}
    tick = Ticker().start()
    try:
        for rep in range(REPS):
            for s in (["qe", "sl", "pgq"][rep % 3:] + ["qe", "sl", "pgq"][:rep % 3]):
                q = "hist_" + s
                n, fr = fill(s, q, BACKLOG)
                res.setdefault((s, "fill"), []).append(n / fr["elapsed"])
                if s == "pgq":
                    time.sleep(0.3)   # let the ticker close the last tick
                    got, dt, b = pgq_drain(q, n)
                    res.setdefault((s, "drain"), []).append(got / dt)
                    res.setdefault((s, "batchsize"), []).append(got / max(1, b))
                    left = n - got
                else:
                    b0 = backlog(s, q)
                    per = max(1, b0 // (100 * consumers))
                    r = pgbench(cons(s, q), clients=consumers, threads=2, transactions=per)
                    b1 = backlog(s, q)
                    res.setdefault((s, "drain"), []).append((b0 - b1) / r["elapsed"])
                    # finish the remainder (if any client got short batches) untimed
                    if b1:
                        pgbench(cons(s, q), clients=1, threads=1, transactions=b1 // 100 + 2)
                    left = backlog(s, q)
                    got = b0 - b1
                through[s] += n
                log("  t2 rep %d %-3s fill %8.0f msg/s  drain %8.0f msg/s (%d consumed in timed part, %d left after)" % (
                    rep + 1, s, res[(s, "fill")][-1], res[(s, "drain")][-1], got, left))
        # history for tests 6 and 7: more untimed rounds up to HISTORY messages
        for s in ("qe", "sl", "pgq"):
            q = "hist_" + s
            while through[s] < HISTORY:
                n, _ = fill(s, q, min(BACKLOG, HISTORY - through[s]))
                if s == "pgq":
                    time.sleep(0.3)
                    pgq_drain(q, n)
                else:
                    while backlog(s, q) > 0:
                        pgbench(cons(s, q), clients=consumers, threads=2,
                                transactions=backlog(s, q) // (100 * consumers) + 1)
                through[s] += n
            log("  t2 history %-3s %d messages through" % (s, through[s]))
    finally:
        tick.stop()
    after = {s: stats_for(s, "hist_" + s) for s in ("qe", "sl", "pgq")}
    time.sleep(IDLE)   # segment retirement (mq.retire_interval 10 s), autovacuum
    idle = {s: stats_for(s, "hist_" + s) for s in ("qe", "sl", "pgq")}
    for s in ("qe", "sl"):
        res[(s, "lat_hist")] = lat_probe(s, "hist_" + s)
    rows = []
    qe, sl, pq = (median(res[(s, "drain")]) for s in ("qe", "sl", "pgq"))
    rows.append(["consume+ack, batches of 100, %d clients (PgQ: 1 consumer)" % consumers, qe, sl, pq,
                 "%.2f" % ratio(qe, sl), "%.2f" % ratio(qe, pq)])
    qe, sl, pq = (median(res[(s, "fill")]) for s in ("qe", "sl", "pgq"))
    rows.append(["backlog fill, 100 msg/txn, 2 clients", qe, sl, pq, "%.2f" % ratio(qe, sl), "%.2f" % ratio(qe, pq)])
    section("2. consume+ack throughput on a backlog of %d (msg/s, median of %d; PgQ mean batch %.0f events)"
            % (BACKLOG, REPS, median(res[("pgq", "batchsize")])),
            table(["workload", "queue_ext", "SKIP LOCKED", "PgQ", "qe/SL", "qe/PgQ"], rows))
    rows = []
    for s, label in (("qe", "queue_ext (all mq.* tables)"), ("sl", "SKIP LOCKED table+indexes"),
                     ("pgq", "PgQ (all pgq.* tables)")):
        rows.append([label, through[s], before[s][0] / 1e6, after[s][0] / 1e6, idle[s][0] / 1e6,
                     before[s][1], after[s][1], idle[s][1]])
    section("6. disk and dead tuples after N messages went through (N = %d per system, queue empty at the end)"
            % through["qe"],
            table(["system", "N", "MB before", "MB after", "MB after %d s idle" % IDLE, "n_dead_tup before",
                   "n_dead_tup after", "n_dead_tup after idle"], rows) +
            "\n(autovacuum on, default settings; sizes are pg_total_relation_size)")
    rows = []
    for s, label in (("qe", "queue_ext"), ("sl", "SKIP LOCKED")):
        rows.append([label, res[(s, "lat_fresh")], res[(s, "lat_hist")],
                     "%.2f" % ratio(res[(s, "lat_hist")], res[(s, "lat_fresh")])])
    section("7. consume(100)+ack latency, ms (1 client, 100 ready), fresh queue vs after %d messages" % through["qe"],
            table(["system", "fresh", "with history", "history/fresh"], rows))


def sl_stalls():
    return int(psql1("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM sl_stalls"))


def mixed(s, q, producers, consumers, seconds, hold=False, per_txn=1):
    """Producers: per_txn msgs/txn; consumers: batches of 100. Returns dict."""
    new(s, q)
    st0 = stats_for(s, q)
    stalls0 = sl_stalls()
    holder = None
    if hold:
        holder = Pipe()
        holder.query("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.query("SELECT 1")
    tick = Ticker().start() if s == "pgq" else None
    try:
        b0 = 0
        if s == "pgq":
            c = PgqConsumer(q).start()
            e0 = pgq_events(q)
            rp, = run_parallel([lambda: pgbench(pub1(s, q), clients=producers, threads=2, seconds=seconds)])
            c.stop()
            produced = pgq_events(q) - e0
            consumed = c.count
            lat = None
            b1 = produced - consumed
        else:
            script = pub1(s, q) if per_txn == 1 else pub_n(s, q, per_txn)
            rp, rc = run_parallel([
                lambda: pgbench(script, clients=producers, threads=2, seconds=seconds),
                lambda: pgbench(cons(s, q, poll=True, timeout="5s"), clients=consumers, threads=2,
                                seconds=seconds, per_statement=True)])
            b1 = backlog(s, q)
            produced = rp["tx"] * per_txn
            consumed = b0 + produced - b1
            c = [ms for ms, txt in rc["stmts"] if "consume" in txt]
            lat = c[0] if c else float("nan")
    finally:
        if tick:
            tick.stop()
        if holder:
            holder.query("COMMIT")
            holder.close()
    st1 = stats_for(s, q)
    drop(s, q)
    return dict(inrate=produced / seconds, outrate=consumed / seconds, backlog=b1, lat=lat,
                st0=st0, st1=st1, stalls=sl_stalls() - stalls0)


def test3_mixed():
    rows = []
    rates = {}
    systems = (("qe", "queue_ext"), ("sl", "SKIP LOCKED"), ("pgq", "PgQ (1 consumer)"))
    for per_txn in (1, 10):
        runs = {}
        for rep in range(REPS):
            order = systems if per_txn == 1 else systems[:2]
            order = order[rep % len(order):] + order[:rep % len(order)]
            for s, label in order:
                r = mixed(s, "mix_" + s, 4, 4, MIXED, per_txn=per_txn)
                runs.setdefault(s, []).append(r)
                log("  t3 rep %d %-3s %2d/txn in %8.0f/s out %8.0f/s backlog %d stalled calls %d"
                    % (rep + 1, s, per_txn, r["inrate"], r["outrate"], r["backlog"], r["stalls"]))
        for s, label in systems:
            if s not in runs:
                continue
            rs = sorted(runs[s], key=lambda r: r["inrate"])
            m = rs[len(rs) // 2]          # the median run by in-rate
            rates[(s, per_txn)] = m["inrate"]
            rows.append(["%s, %d msg/txn" % (label, per_txn), m["inrate"], m["outrate"], m["backlog"],
                         m["lat"] if m["lat"] else "-", sum(r["stalls"] for r in runs[s])])
    ratios = "; ".join("%d msg/txn: queue_ext/SKIP LOCKED in-rate %.2fx" % (n, ratio(rates[("qe", n)], rates[("sl", n)]))
                       for n in (1, 10))
    section("3. mixed load, 4 producers (1 and 10 msg/txn) + 4 consumers (100/txn, 10 ms back-off when empty), "
            "%d s, median of %d runs" % (MIXED, REPS),
            table(["system", "in msg/s", "out msg/s", "final backlog", "consume stmt latency ms",
                   "consumer calls stalled > 5 s (all runs)"], rows) +
            "\n" + ratios + " (target >= 2x)")


def latency_run(s):
    q = "lat_" + s
    new(s, q)
    lats = []
    stop = threading.Event()
    tick = None

    def consumer():
        p = Pipe()
        while not stop.is_set():
            if s == "qe":
                out = p.query("""WITH c AS (SELECT msg_id, body FROM mq.consume('%s', 10, wait => '1 s')),
a AS (SELECT mq.ack('%s', coalesce(array_agg(msg_id), '{}')) FROM c)
SELECT extract(epoch FROM clock_timestamp() - convert_from(body, 'UTF8')::timestamptz) FROM c, a""" % (q, q))
                lats.extend(float(x) for x in out if x)
            elif s == "sl":
                out = p.query("SELECT * FROM sl_consume_ack_lat('%s', 10)" % q)
                lats.extend(float(x) for x in out if x)
                if not out:
                    time.sleep(0.01)
            else:
                out = p.query("SELECT * FROM pgq_consume_lat('%s', 'c1')" % q)
                lats.extend(float(x) for x in out if x)
                if not out:
                    time.sleep(0.01)
        p.close()

    if s == "pgq":
        tick = Ticker().start()
    t = threading.Thread(target=consumer, daemon=True)
    t.start()
    time.sleep(0.5)
    prod = Pipe()
    body = "convert_to(clock_timestamp()::text, 'UTF8')"
    n = 0
    t_end = time.time() + LAT
    while time.time() < t_end:
        if s == "qe":
            prod.query("SELECT mq.send('%s', %s)" % (q, body))
        elif s == "sl":
            prod.query("INSERT INTO %s (message) VALUES (%s)" % (q, body))
        else:
            prod.query("SELECT pgq.insert_event('%s', 'ev', clock_timestamp()::text)" % q)
        n += 1
        time.sleep(0.02)
    time.sleep(1.5)
    stop.set()
    t.join()
    prod.close()
    if tick:
        tick.stop()
    return n, lats


def test4_latency():
    rows = []
    for s, label in (("qe", "queue_ext consume(wait => 1 s)"), ("sl", "SKIP LOCKED, poll every 10 ms"),
                     ("pgq", "PgQ, ticker 50 ms / max_lag 100 ms, poll 10 ms")):
        n, lats = latency_run(s)
        ms = [x * 1000 for x in lats]
        rows.append([label, n, len(ms), pct(ms, 50), pct(ms, 99), max(ms) if ms else float("nan")])
        log("  t4 %-3s sent %d got %d p50 %.2f ms p99 %.2f ms" % (s, n, len(ms), pct(ms, 50), pct(ms, 99)))
    section("4. publish-commit-to-delivery latency (ms), 1 producer every 20 ms for %d s, idle server" % LAT,
            table(["system", "sent", "received", "p50 ms", "p99 ms", "max ms"], rows) +
            "\n(latency = consumer clock_timestamp() after the message is returned minus the publisher's "
            "clock_timestamp() taken before its COMMIT, so it includes the publisher's commit flush)")


def test5_wal():
    rows = []
    for mode in ("single", "batch"):
        vals = {}
        for s in ("qe", "sl", "pgq"):
            q = "wal_%s_%s" % (mode, s)
            new(s, q)
            # clean up what earlier tests left (dead tuples of the baselines), so that
            # autovacuum of other tables does not write WAL inside this window
            psql("VACUUM")
            psql("CHECKPOINT")
            tick = Ticker().start() if s == "pgq" else None
            w0 = wal_lsn()
            if mode == "single":
                pgbench(pub1(s, q), clients=4, threads=2, transactions=WALN // 4)
            else:
                pgbench(pub100(s, q), clients=2, threads=2, transactions=WALN // 200)
            if s == "pgq":
                time.sleep(0.3)
                pgq_drain(q, WALN)
            elif mode == "single":
                pgbench(cons(s, q, 1), clients=2, threads=2, transactions=WALN // 2)
            else:
                pgbench(cons(s, q, 100), clients=2, threads=2, transactions=WALN // 200)
            w1 = wal_lsn()
            if tick:
                tick.stop()
            left = backlog(s, q) if s != "pgq" else 0
            vals[s] = (w1 - w0) / WALN
            log("  t5 %-6s %-3s %.0f WAL bytes/message (left in queue: %d)" % (mode, s, vals[s], left))
        label = ("1 msg/txn publish, consume 1 + ack per txn (PgQ: per tick batch)" if mode == "single"
                 else "100 msg/txn publish, consume 100 + ack per txn")
        rows.append([label, vals["qe"], vals["sl"], vals["pgq"], "%.2f" % ratio(vals["qe"], vals["sl"]),
                     "< 350 " + ("PASS" if vals["qe"] < 350 else "FAIL")])
    section("5. WAL bytes per message over its life (publish + consume + ack), 100-byte bodies, %d messages" % WALN,
            table(["workload", "queue_ext", "SKIP LOCKED", "PgQ", "qe/SL", "target qe"], rows) +
            "\n(VACUUM and CHECKPOINT before each measurement; includes commit records, FPIs and any autovacuum "
            "WAL in the window)")


def test8_e2e():
    res = {}
    clients = 4
    for rep in range(REPS):
        for s in ("qe", "sl", "ins"):
            if s == "ins":
                psql("DROP TABLE IF EXISTS e2e_ins; CREATE TABLE e2e_ins (id bigserial, message bytea)")
                r = pgbench("INSERT INTO e2e_ins (message) SELECT %s FROM generate_series(1, 100);\n" % BODY,
                            clients=clients, threads=2, seconds=SECONDS)
                res.setdefault(s, []).append(r["tps"] * 100)
                continue
            q = "e2e_" + s
            new(s, q)
            r = pgbench(pub100(s, q) + cons(s, q), clients=clients, threads=2, seconds=SECONDS)
            left = backlog(s, q)
            done = r["tx"] * 100 - left
            res.setdefault(s, []).append(done / r["elapsed"])
            log("  t8 rep %d %-3s %8.0f msg/s end to end (left %d)" % (rep + 1, s, res[s][-1], left))
    qe, sl, ins = median(res["qe"]), median(res["sl"]), median(res["ins"])
    section("8. batched end to end: publish 100 + consume 100 + ack, durable, %d clients, msg/s (median of %d x %d s)"
            % (clients, REPS, SECONDS),
            table(["queue_ext", "SKIP LOCKED", "plain INSERT 100 rows (no consume)", "qe/SL", "qe/INSERT",
                   "target qe >= 100k/s"],
                  [[qe, sl, ins, "%.2f" % ratio(qe, sl), "%.2f" % ratio(qe, ins),
                    "PASS" if qe >= 100000 else "FAIL"]]))


def test9_xmin():
    rows = []
    res = {}
    for s in ("qe", "sl"):
        for hold in (False, True):
            r = mixed(s, "xmin_%s_%d" % (s, hold), 3, 3, XMIN, hold=hold)
            res[(s, hold)] = r
            log("  t9 %-3s hold=%s in %.0f/s out %.0f/s backlog %d lat %.2f ms size %.1f->%.1f MB dead %d->%d" % (
                s, hold, r["inrate"], r["outrate"], r["backlog"], r["lat"], r["st0"][0] / 1e6, r["st1"][0] / 1e6,
                r["st0"][1], r["st1"][1]))
    for s, label in (("qe", "queue_ext"), ("sl", "SKIP LOCKED")):
        a, b = res[(s, False)], res[(s, True)]
        for hold, r in ((False, a), (True, b)):
            rows.append([label + (" + RR snapshot held" if hold else ""), r["inrate"], r["outrate"], r["backlog"],
                         r["lat"], r["st0"][0] / 1e6, r["st1"][0] / 1e6, r["st0"][1], r["st1"][1]])
        rows.append(["  held/free ratio", "%.2f" % ratio(b["inrate"], a["inrate"]),
                     "%.2f" % ratio(b["outrate"], a["outrate"]), "", "%.2f" % ratio(b["lat"], a["lat"]),
                     "", "%.2f" % ratio(b["st1"][0], a["st1"][0]), "", ""])
    section("9. held xmin horizon: 3 producers + 3 consumers (10 ms back-off when empty), %d s, with and without a REPEATABLE READ "
            "snapshot held open" % XMIN,
            table(["system", "in msg/s", "out msg/s", "final backlog", "consume stmt ms", "MB before",
                   "MB after", "n_dead_tup before", "n_dead_tup after"], rows) +
            "\n(queue_ext sizes are all mq.* relations, including other queues' leftovers in the shared log)")


def main():
    log("== Harness 2: broker (%s) seconds=%d reps=%d backlog=%d mixed=%d xmin=%d lat=%d waln=%d tests=%s" % (
        "quick" if QUICK else "full", SECONDS, REPS, BACKLOG, MIXED, XMIN, LAT, WALN, ",".join(sorted(TESTS))))
    t0 = time.time()
    psql(SETUP_SQL)
    if "1" in TESTS:
        test1_publish()
    if "2" in TESTS:
        test2_6_7_backlog()
    if "3" in TESTS:
        test3_mixed()
    if "4" in TESTS:
        test4_latency()
    if "5" in TESTS:
        test5_wal()
    if "8" in TESTS:
        test8_e2e()
    if "9" in TESTS:
        test9_xmin()
    log("")
    log("harness 2 runtime: %.0f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
