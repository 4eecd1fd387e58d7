#!/usr/bin/env python3
"""Wait events of pgmq send_batch clients, pgmq against queue_ext_pgmq (2026-12-06 16:41,
results/2026-12-06-1622-pgmq-send.md): in databases pgmq_orig and pgmq_qe (as pgmq_compat.py makes
them), a new queue 'x0', pgbench 2 clients for 6 s of send_batch of 100, while another session samples
the wait events of the active pgbench backends (pg_stat_activity) every 5 ms; R pairs (2).
BENCH_* as benchlib.py."""
import os, sys, time, threading, subprocess, collections
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import psql, pgbench, Pipe
B = ("ARRAY(SELECT jsonb_build_object('n', g, 'pad', md5(g::text) || md5((g + 1)::text) || md5((g + 2)::text)) FROM generate_series(1, 100) g)")
for rep in range(int(os.environ.get("R", "2"))):
    for db in ("pgmq_orig", "pgmq_qe"):
        psql("SELECT pgmq.drop_queue(queue_name) FROM pgmq.list_queues() WHERE queue_name LIKE 'x%%'; SELECT pgmq.create('x0')", db=db)
        p = Pipe(db="postgres"); cnt = collections.Counter(); stop = [False]
        def samp():
            while not stop[0]:
                for line in p.query("SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity WHERE datname = '%s' AND application_name = 'pgbench' AND state = 'active'" % db):
                    cnt[line] += 1
                time.sleep(0.005)
        t = threading.Thread(target=samp); t.start()
        r = pgbench("SELECT count(*) FROM pgmq.send_batch('x0', %s);\n" % B, clients=2, threads=2, seconds=6, db=db)
        stop[0] = True; t.join(); p.close()
        tot = sum(cnt.values())
        print(rep, db, "tps %.0f" % r["tps"], " ".join("%s %d" % kv for kv in cnt.most_common(8)), flush=True)
