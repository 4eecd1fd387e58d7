#!/usr/bin/env python3
"""pgmq send_batch of 100 as pgmq_compat.py's workload 0c runs it, in several databases in turn: a
new queue 'x0' every run (FRESH=0: the same queue), pgbench with C clients (1) of T transactions
(50) each, R runs (5) per database, the order reversed every run; per run the CPU of the clients'
backends, read from /proc/<pid>/schedstat every millisecond while they live (the new children of the
postmaster; the largest C of them, pgbench's own first connection being the smaller).  Used for the
2026-12-06 16:35 comparison of queue_ext_pgmq's message keys (results/2026-12-06-1622-pgmq-send.md):
pgmq_qe_old is a database whose queue_ext_pgmq got an older functions.sql run over it:
    git show d5675dd:queue_ext_pgmq/src/functions.sql > /tmp/old.sql
    createdb pgmq_qe_old; psql -d pgmq_qe_old -c 'CREATE EXTENSION queue_ext_pgmq CASCADE' -f /tmp/old.sql
Run as root on the server's machine (BENCH_* as benchlib.py; DBS the databases, each with pgmq or
queue_ext_pgmq in it)."""
import os, sys, time, threading
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import psql, psql1, pgbench, median
clients = int(os.environ.get("C", "1")); tx = int(os.environ.get("T", "50")); reps = int(os.environ.get("R", "5"))
dbs = os.environ.get("DBS", "pgmq_orig,pgmq_qe,pgmq_qe_old").split(",")
fresh = os.environ.get("FRESH", "1") == "1"
pm = int(open(os.path.join(psql1("SHOW data_directory", db="postgres"), "postmaster.pid")).readline())
def children():
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            st = open("/proc/%s/stat" % p).read()
            if int(st.rsplit(")", 1)[1].split()[1]) != pm: continue
            out[int(p)] = int(open("/proc/%s/schedstat" % p).read().split()[0])
        except Exception: pass
    return out
B = ("ARRAY(SELECT jsonb_build_object('n', g, 'pad', md5(g::text) || md5((g + 1)::text) || md5((g + 2)::text)) FROM generate_series(1, 100) g)")
res = {}
for rep in range(reps):
    order = dbs if rep % 2 == 0 else dbs[::-1]
    for db in order:
        if fresh or rep == 0:
            psql("SELECT pgmq.drop_queue(queue_name) FROM pgmq.list_queues() WHERE queue_name LIKE 'x%%';"
                 "SELECT pgmq.create('x0')", db=db)
        time.sleep(0.3)
        base = children(); seen = {}; stop = [False]
        def poll():
            while not stop[0]:
                seen.update(children()); time.sleep(0.001)
        t = threading.Thread(target=poll); t.start()
        r = pgbench("SELECT count(*) FROM pgmq.send_batch('x0', %s);\n" % B, clients=clients, threads=clients, transactions=tx, db=db)
        time.sleep(0.2); stop[0] = True; t.join()
        new = sorted((v for k, v in seen.items() if k not in base), reverse=True)[:clients]
        cpu = sum(new) / 1e6
        res.setdefault(db, []).append(cpu)
        print(rep, db, "wall %.3f client backends cpu %.1f ms load %s" % (r["elapsed"], cpu, open("/proc/loadavg").read().split()[0]), flush=True)
for db in dbs:
    v = res[db]; print(db, "median %.1f ms  all %s" % (median(v), " ".join("%.0f" % x for x in sorted(v))))
