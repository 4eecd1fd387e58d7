#!/usr/bin/python3
"""test/ha/loadgen.py: producers and consumers of one queue_ext queue that
survive a failover, and the check of what they saw.

    python3 test/ha/loadgen.py run --conninfo '...' --queue q --out DIR \
        [--producers 4] [--consumers 4] [--durability quorum] [--rate 40]
        [--max-seconds 120] [--drain-idle 3]
    python3 test/ha/loadgen.py check --out DIR

run: each producer publishes one message per transaction, body and dedup_id
"<prefix>p<i>-<n>" (with --session-sync, at that synchronous_commit), and
logs it as confirmed only after its COMMIT returned; on any error it
reconnects with the (multi-host, target_session_attrs=read-write)
connection string and retries the same dedup_id.  Each consumer consumes
(autocommit: the delivery is its own transaction) and then acks in a second
transaction, logging the delivery and, after the ack's COMMIT returned, the
ack.  The run goes on until the file DIR/stop exists (or --max-seconds);
then the producers stop and the consumers drain the queue until it stays
empty for --drain-idle seconds.  Logs: DIR/events.log, one line per event:
    <unix time> <thread> <event> <body> [<msg_id> [<redelivered>]]
events: confirm, deliver, ack, ack_lost (the ack's COMMIT failed or its
result never came back), error (with the message after it).

check: reads DIR/events.log and prints a JSON summary (also DIR/summary.json):
confirmed; lost (confirmed, never delivered) with the times the first and
the last of those were confirmed; duplicates (a body delivered under two
msg_ids); acked_redelivered (delivered again after its ack had returned);
unacked_not_redelivered (delivered and never acked to the end, except those
whose ack's result was lost: whether that ack committed only the queue's
emptiness at the end tells); longest_publish_stall (seconds: the longest
time in which no producer confirmed anything, between the first and the
last confirm), longest_delivery_gap (the same for deliveries); errors.
Every loop is bounded by --max-seconds plus the drain deadline.
"""

import argparse
import json
import os
import sys
import threading
import time

try:
    import psycopg2
except ImportError:  # pragma: no cover
    sys.exit("python3-psycopg2 is needed (apt-get install python3-psycopg2)")


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def write(self, *fields):
        line = "%.6f %s\n" % (time.time(), " ".join(str(x) for x in fields))
        with self.lock:
            self.f.write(line)


def connect(conninfo, deadline, sync=None):
    """A connection to the primary; retried until deadline."""
    while True:
        try:
            conn = psycopg2.connect(conninfo)
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SET client_min_messages = error")
                if sync:
                    cur.execute("SELECT set_config('synchronous_commit', %s, false)", (sync,))
            return conn
        except psycopg2.Error:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


def closeq(conn):
    try:
        if conn is not None:
            conn.close()
    except psycopg2.Error:
        pass


def one_line(e):
    return str(e).strip().replace("\n", " | ")[:300]


def producer(args, i, log, stop, hard_deadline):
    conn = None
    n = 0
    while not stop.is_set() and time.time() < hard_deadline:
        n += 1
        body = "%sp%d-%d" % (args.prefix, i, n)
        while time.time() < hard_deadline:
            try:
                if conn is None:
                    conn = connect(args.conninfo, hard_deadline, args.session_sync)
                with conn.cursor() as cur:
                    cur.execute("BEGIN")
                    if args.durability:
                        cur.execute("SELECT mq.send(%s, %s::text, dedup_id => %s, durability => %s)",
                                    (args.queue, body, body, args.durability))
                    else:
                        cur.execute("SELECT mq.send(%s, %s::text, dedup_id => %s)",
                                    (args.queue, body, body))
                    msg_id = cur.fetchone()[0]
                    cur.execute("COMMIT")
                log.write("P%d" % i, "confirm", body, msg_id)
                break
            except psycopg2.Error as e:
                log.write("P%d" % i, "error", body, "-", one_line(e))
                closeq(conn)
                conn = None
                time.sleep(0.05)
        if args.rate > 0:
            time.sleep(1.0 / args.rate)
    closeq(conn)


def consumer(args, i, log, producers_done, hard_deadline):
    conn = None
    idle_since = None
    while time.time() < hard_deadline:
        try:
            if conn is None:
                conn = connect(args.conninfo, hard_deadline)
            with conn.cursor() as cur:
                cur.execute("SELECT msg_id, convert_from(body, 'UTF8'), redelivered "
                            "FROM mq.consume(%s, %s, wait => '0.2 s')",
                            (args.queue, args.batch))
                rows = cur.fetchall()
        except psycopg2.Error as e:
            log.write("C%d" % i, "error", "-", "-", one_line(e))
            closeq(conn)
            conn = None
            time.sleep(0.05)
            continue
        for msg_id, body, redelivered in rows:
            log.write("C%d" % i, "deliver", body, msg_id, "t" if redelivered else "f")
        if not rows:
            if producers_done.is_set():
                idle_since = idle_since or time.time()
                if time.time() - idle_since >= args.drain_idle:
                    break
            continue
        idle_since = None
        ids = [r[0] for r in rows]
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT mq.ack(%s, %s::bigint[])", (args.queue, ids))
            for msg_id, body, _ in rows:
                log.write("C%d" % i, "ack", body, msg_id)
        except psycopg2.Error as e:
            for msg_id, body, _ in rows:
                log.write("C%d" % i, "ack_lost", body, msg_id)
            log.write("C%d" % i, "error", "-", "-", one_line(e))
            closeq(conn)
            conn = None
    closeq(conn)


def run(args):
    os.makedirs(args.out, exist_ok=True)
    log = Log(os.path.join(args.out, "events.log"))
    stop = threading.Event()
    producers_done = threading.Event()
    t_end = time.time() + args.max_seconds
    hard = t_end + args.drain_idle + 60
    log.write("M", "start", "-")
    ps = [threading.Thread(target=producer, args=(args, i, log, stop, t_end))
          for i in range(1, args.producers + 1)]
    cs = [threading.Thread(target=consumer, args=(args, i, log, producers_done, hard))
          for i in range(1, args.consumers + 1)]
    for t in ps + cs:
        t.daemon = True
        t.start()
    stopfile = os.path.join(args.out, "stop")
    while time.time() < t_end and not os.path.exists(stopfile):
        time.sleep(0.1)
    stop.set()
    for t in ps:
        t.join(max(0.1, hard - time.time()))
    log.write("M", "producers_done", "-")
    producers_done.set()
    for t in cs:
        t.join(max(0.1, hard - time.time()))
    log.write("M", "done", "-")
    print(json.dumps(check(args.out)))
    return 0


def longest_gap(times):
    times = sorted(times)
    best, at = 0.0, None
    for a, b in zip(times, times[1:]):
        if b - a > best:
            best, at = b - a, a
    return round(best, 3), at


def check(out):
    confirmed = {}
    deliveries = {}     # body -> [(t, msg_id)]
    acked_at = {}       # body -> first time its ack returned
    ack_lost = set()
    errors = 0
    first_error = None
    with open(os.path.join(out, "events.log")) as f:
        for line in f:
            parts = line.split(" ", 5)
            t, ev, body = float(parts[0]), parts[2], parts[3].strip()
            if ev == "confirm":
                confirmed[body] = t
            elif ev == "deliver":
                deliveries.setdefault(body, []).append((t, parts[4].strip()))
            elif ev == "ack":
                acked_at.setdefault(body, t)
            elif ev == "ack_lost":
                ack_lost.add(body)
            elif ev == "error":
                errors += 1
                first_error = first_error or t
    lost = sorted(b for b in confirmed if b not in deliveries)
    dups = sorted(b for b, d in deliveries.items() if len({m for _, m in d}) > 1)
    acked_redelivered = sorted(b for b, d in deliveries.items()
                               if b in acked_at and any(t > acked_at[b] for t, _ in d))
    # delivered, never acked, and not one whose ack may have committed
    # unseen (those: the queue is empty at the end, which the caller checks)
    unacked_not_redelivered = sorted(b for b in deliveries
                                     if b not in acked_at and b not in ack_lost)
    never_acked = sorted(b for b in deliveries if b not in acked_at)
    stall, stall_at = longest_gap(confirmed.values())
    gap, gap_at = longest_gap([t for d in deliveries.values() for t, _ in d])
    summary = {
        "confirmed": len(confirmed),
        "delivered": len(deliveries),
        "acked": len(acked_at),
        "lost": len(lost), "lost_ids": lost[:20],
        "lost_first_confirm_at": min((confirmed[b] for b in lost), default=None),
        "lost_last_confirm_at": max((confirmed[b] for b in lost), default=None),
        "last_confirm_at": max(confirmed.values(), default=None),
        "duplicates": len(dups), "duplicate_ids": dups[:20],
        "acked_redelivered": len(acked_redelivered),
        "acked_redelivered_ids": acked_redelivered[:20],
        "ack_lost": len(ack_lost),
        "unacked_not_redelivered": len(unacked_not_redelivered),
        "unacked_not_redelivered_ids": unacked_not_redelivered[:20],
        "never_acked": len(never_acked),
        "longest_publish_stall": stall, "stall_started_at": stall_at,
        "longest_delivery_gap": gap, "gap_started_at": gap_at,
        "errors": errors, "first_error_at": first_error,
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--conninfo", required=True)
    r.add_argument("--queue", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--producers", type=int, default=4)
    r.add_argument("--consumers", type=int, default=4)
    r.add_argument("--durability", default=None, choices=["async", "local", "quorum"])
    r.add_argument("--prefix", default="", help="prefix of bodies and dedup_ids (unique per run)")
    r.add_argument("--session-sync", default=None, choices=["off", "local", "remote_write", "on"],
                   help="the producers' synchronous_commit (default: the server's)")
    r.add_argument("--rate", type=float, default=40, help="publishes/s per producer (0: no pause)")
    r.add_argument("--batch", type=int, default=5, help="max_messages of a consume")
    r.add_argument("--max-seconds", type=float, default=120)
    r.add_argument("--drain-idle", type=float, default=3)
    c = sub.add_parser("check")
    c.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.cmd == "run":
        return run(args)
    print(json.dumps(check(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
