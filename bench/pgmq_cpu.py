#!/usr/bin/env python3
"""CPU and WAL per pgmq statement: pgmq itself vs queue_ext_pgmq (issue 40).

Throughput on a shared, loaded machine measures the queue of runnable processes as much as the
statements; this measures what one backend spends: its own CPU time (/proc/<pid>/schedstat,
the first field, nanoseconds on the CPU) for one transaction of N statements at a time, after a
warm-up transaction, the least of PGMQ_CPU_TXNS transactions; and the WAL that one more such
transaction writes: pg_waldump over its LSN range, counting only the records of the transactions
that touched the system's database (and records without a transaction on its relations), so
that what other sessions of the server write at the same time is left out.  Both systems are loaded
into databases of their own on the bench server (pgmq_cpu_pg: pgmq's pgmq.sql; pgmq_cpu_qe:
queue_ext_pgmq), each round measures every statement in each system in turn.  Run it on the
machine of the server, as a user that can read the backends' /proc entries (root).

Statements (a transaction each):
  send1     one pgmq.send (then COMMIT: what the one-per-transaction producer pays, commit included)
  send300   300 pgmq.send statements
  batch     10 pgmq.send_batch of 100
  batchfirst  one pgmq.send_batch of 100 (and its commit), the first statement of a fresh
            session, each transaction in a new session (not in the default list)
  batch1    one pgmq.send_batch of 100 (then COMMIT: a transaction of pgmq_compat.py's workload 0c)
  batchsession  what one pgbench client of pgmq_compat.py's workload 0c spends in its session:
            a fresh session's PGMQ_CPU_SESSION (50) transactions of one send_batch of 100 each,
            its CPU from connecting to the last commit, per statement (each measurement in a new
            session; the connection's start alone is logged; not in the default list)
  consume   10 x pgmq.delete(q, ARRAY(SELECT msg_id FROM pgmq.read(q, 30, 100))) on a backlog
  consume1  one read 1 + delete 1 (then COMMIT)
  insert1   one plain INSERT of the same body into a table of its own (msg_id bigserial primary
            key, message jsonb), then COMMIT: the floor of a one-message transaction, in each
            database, that send1 is compared with (not a pgmq call)

PGMQ_CPU_BEFORE names a functions.sql of queue_ext_pgmq from another commit (git show
<commit>:queue_ext_pgmq/src/functions.sql >/tmp/before.sql): a third database, pgmq_cpu_before,
gets the installed queue_ext_pgmq with that file run over it (its CREATE OR REPLACE FUNCTIONs),
to compare a change of the SQL functions with what it replaced in the same run.

PGMQ_CPU_NOTIFY_OTHER=1: in every database queue 'nq' gets enable_notify_insert (throttle 0)
before the runs, so that send1/send300/batch measure a send to a queue WITHOUT notify while
another queue has it (issue 40); sendn300 (300 sends to 'nq' itself, each notifying) can then be
named in PGMQ_CPU_TESTS too.

Environment: PGMQ_DIR or PGMQ_SQL as for pgmq_compat.py, PGMQ_LABEL, PGMQ_CPU_ROUNDS (2),
PGMQ_CPU_TXNS (6), PGMQ_CPU_TESTS (send1,send300,batch,consume,consume1; insert1 can be added);
BENCH_* (benchlib.py).
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pgmq_compat  # noqa: E402  (pgmq's SQL file and its label)
from benchlib import psql, psql1, median, table, log, Pipe, PGBIN  # noqa: E402

ROUNDS = int(os.environ.get("PGMQ_CPU_ROUNDS", "2"))
TXNS = int(os.environ.get("PGMQ_CPU_TXNS", "6"))
TESTS = os.environ.get("PGMQ_CPU_TESTS", "send1,send300,batch,consume,consume1").split(",")
SESSION = int(os.environ.get("PGMQ_CPU_SESSION", "50"))
LABEL = pgmq_compat.PGMQ_LABEL or "pgmq"
SYSTEMS = (("pgmq_cpu_pg", LABEL), ("pgmq_cpu_qe", "queue_ext_pgmq"))
BEFORE = os.environ.get("PGMQ_CPU_BEFORE")
NOTIFY_OTHER = os.environ.get("PGMQ_CPU_NOTIFY_OTHER") == "1"
if BEFORE:
    SYSTEMS += (("pgmq_cpu_before", "queue_ext_pgmq before"),)

BODY = "jsonb_build_object('n', 1, 'pad', md5(random()::text) || md5(random()::text) || md5(random()::text))"
BATCH = ("ARRAY(SELECT jsonb_build_object('n', g, 'pad', md5(g::text) || md5((g + 1)::text) "
         "|| md5((g + 2)::text)) FROM generate_series(1, 100) g)")
# name: (statement, statements per transaction, messages per statement)
STMTS = {
    "send1": ("SELECT pgmq.send('ss', %s)" % BODY, 1, 1),
    "send300": ("SELECT pgmq.send('ss', %s)" % BODY, 300, 1),
    "batch": ("SELECT count(*) FROM pgmq.send_batch('sb', %s)" % BATCH, 10, 100),
    "batch1": ("SELECT count(*) FROM pgmq.send_batch('sb', %s)" % BATCH, 1, 100),
    "batchsession": ("SELECT count(*) FROM pgmq.send_batch('sb', %s)" % BATCH, 1, 100),
    "batchfirst": ("SELECT count(*) FROM pgmq.send_batch('sb', %s)" % BATCH, 1, 100),
    "consume": ("SELECT count(*) FROM pgmq.delete('cc', ARRAY(SELECT msg_id FROM pgmq.read('cc', 30, 100)))",
                10, 100),
    "consume1": ("SELECT pgmq.delete('c1', msg_id) FROM pgmq.read('c1', 30, 1)", 1, 1),
    "sendn300": ("SELECT pgmq.send('nq', %s)" % BODY, 300, 1),
    "insert1": ("INSERT INTO public.bare_q (message) VALUES (%s)" % BODY, 1, 1),
}


def cpu_ns(pid):
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0])


def setup():
    for db, _ in SYSTEMS:
        psql("DROP DATABASE IF EXISTS %s" % db, db="postgres")
        psql("CREATE DATABASE %s" % db, db="postgres")
    psql(open(pgmq_compat.PGMQ_SQL).read(), db="pgmq_cpu_pg")
    psql("CREATE EXTENSION queue_ext_pgmq CASCADE", db="pgmq_cpu_qe")
    if BEFORE:
        psql("CREATE EXTENSION queue_ext_pgmq CASCADE", db="pgmq_cpu_before")
        psql(open(BEFORE).read(), db="pgmq_cpu_before")
    need = (ROUNDS * (TXNS + 1) + 2) * 10 * 100
    for db, _ in SYSTEMS:
        psql("SELECT pgmq.create(q) FROM unnest(ARRAY['ss', 'sb', 'cc', 'c1', 'nq']) q", db=db)
        psql("CREATE TABLE public.bare_q (msg_id bigserial PRIMARY KEY, message jsonb)", db=db)
        if NOTIFY_OTHER:
            psql("SELECT pgmq.enable_notify_insert('nq', 0)", db=db)
        # the consume backlogs, a send_batch of 100 per transaction
        fill = ("SELECT pgmq.send_batch('%s', %s);\n" % ("cc", BATCH)) * 20
        for _ in range(need // 2000 + 1):
            psql(fill, db=db)
        fill1 = ("SELECT pgmq.send_batch('%s', %s);\n" % ("c1", BATCH)) * 2
        psql(fill1, db=db)
        psql("VACUUM ANALYZE", db=db)


def wal_of(p, dboid, sql):
    """WAL bytes of the records of this database written by one run of sql (a transaction)."""
    a = p.query("SELECT pg_current_wal_insert_lsn()")[0]
    p.query(sql)
    b = p.query("SELECT pg_current_wal_insert_lsn()")[0]
    r = subprocess.run([os.path.join(PGBIN, "pg_waldump"), "-p", WALDIR, "-s", a, "-e", b],
                       capture_output=True, text=True)
    recs = []
    for line in r.stdout.splitlines():
        m = re.search(r"len \(rec/tot\):\s*\d+/\s*(\d+), tx:\s*(\d+),", line)
        if m:
            recs.append((int(m.group(1)), int(m.group(2)), "/%s/" % dboid in line))
    xids = set(x for _, x, mine in recs if mine and x != 0)
    return sum(n for n, x, mine in recs if x in xids or (x == 0 and mine))


def measure_first(db, name):
    """The first statement of a fresh session (its commit included), each in a new session:
    what a client that connects, sends a few batches and goes (a pgbench run of 50 transactions
    a client) pays once per connection: loading the caches, planning the functions' statements."""
    sql, per_txn, msgs = STMTS[name]
    cpu = []
    for i in range(TXNS):
        p = Pipe(db=db)
        pid = int(p.query("SELECT pg_backend_pid()")[0])
        c0 = cpu_ns(pid)
        p.query(sql)
        c1 = cpu_ns(pid)
        cpu.append((c1 - c0) / 1000.0)
        if i == TXNS - 1:
            dboid = p.query("SELECT oid FROM pg_database WHERE datname = current_database()")[0]
            wal = wal_of(p, dboid, sql)
        p.close()
    return min(cpu), wal, msgs


def measure_session(db, name):
    """A fresh session's SESSION transactions of one statement each, as a pgbench client runs
    them: the backend's CPU from its start (fork, authentication, the first query's parse
    included) to the last commit, per statement; the median of TXNS sessions."""
    sql, per_txn, msgs = STMTS[name]
    cpu = []
    start = []
    for i in range(TXNS):
        p = Pipe(db=db)
        pid = int(p.query("SELECT pg_backend_pid()")[0])
        c0 = cpu_ns(pid)
        for _ in range(SESSION):
            p.query(sql)
        c1 = cpu_ns(pid)
        start.append(c0 / 1000.0)
        cpu.append(c1 / 1000.0 / SESSION)
        if i == TXNS - 1:
            dboid = p.query("SELECT oid FROM pg_database WHERE datname = current_database()")[0]
            wal = wal_of(p, dboid, sql)
        p.close()
    log("    %s %s: the connection's start %.0f us (median of %d), per statement with it %s us"
        % (db, name, median(start), TXNS, " ".join("%.0f" % x for x in sorted(cpu))))
    return median(cpu), wal, msgs


def measure(db, name):
    sql, per_txn, msgs = STMTS[name]
    if name.endswith("first"):
        return measure_first(db, name)
    if name.endswith("session"):
        return measure_session(db, name)
    p = Pipe(db=db)
    pid = int(p.query("SELECT pg_backend_pid()")[0])
    dboid = p.query("SELECT oid FROM pg_database WHERE datname = current_database()")[0]
    txn = "BEGIN;\n" + (sql + ";\n") * per_txn + "COMMIT"
    cpu = []
    for i in range(TXNS + 1):
        c0 = cpu_ns(pid)
        p.query(txn)
        c1 = cpu_ns(pid)
        if i > 0:  # the first warms the caches
            cpu.append((c1 - c0) / 1000.0 / per_txn)
    wal = wal_of(p, dboid, txn) / per_txn
    p.close()
    return min(cpu), wal, msgs


WALDIR = None


def main():
    global WALDIR
    WALDIR = os.path.join(psql1("SHOW data_directory", db="postgres"), "pg_wal")
    log("== CPU and WAL per statement: %s (%s) vs queue_ext_pgmq, rounds %d, txns %d%s; load %s" % (
        LABEL, pgmq_compat.PGMQ_SQL, ROUNDS, TXNS,
        ", queue 'nq' has enable_notify_insert" if NOTIFY_OTHER else "",
        open("/proc/loadavg").read().split()[:3]))
    setup()
    res = {}
    for rnd in range(ROUNDS):
        for name in TESTS:
            order = SYSTEMS if rnd % 2 == 0 else SYSTEMS[::-1]  # each first in turn
            for db, _ in order:
                r = measure(db, name)
                res.setdefault((db, name), []).append(r)
                log("  round %d %-9s %-12s %9.1f us/stmt %8.0f WAL bytes/stmt" % (rnd, name, db, r[0], r[1]))
    rows = []
    for name in TESTS:
        r = [res[(db, name)] for db, _ in SYSTEMS]
        row = [name, STMTS[name][0][:50] + ("..." if len(STMTS[name][0]) > 50 else "")]
        row += [" / ".join("%.0f" % x[0] for x in rs) for rs in r]
        row += [" / ".join("%.2fx" % (x[0] / y[0]) for x, y in zip(r[0], r[1]))]
        row += ["%.0f" % median([x[1] for x in rs]) for rs in r]
        rows.append(row)
    log("")
    log(table(["test", "statement"] + ["%s us" % label for _, label in SYSTEMS]
              + ["%s / queue_ext_pgmq" % LABEL] + ["%s WAL B" % label for _, label in SYSTEMS], rows))
    log("(CPU: the least of %d transactions per round (batchsession: the median of as many sessions), "
        "per statement, rounds separated by /; "
        "WAL: this database's records of one more transaction, per statement, the commit record "
        "included; median of the rounds)" % TXNS)
    log("load at end %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
