#!/usr/bin/env python3
"""worker.py: consume a batch, do the work, ack -- all in one transaction.

The work is an INSERT into a table of the same database, so it is done exactly
once per message: if anything fails before COMMIT, the inserts and the
consume roll back together and the messages are delivered again (flagged
redelivered).  --fail-every N rolls back every Nth batch on purpose, after its
work, to show it.

    python3 worker.py [--dsn DSN] [--queue jobs] [--count N] [--idle-timeout 5]

Stops after --count messages, or when no message came for --idle-timeout
seconds.  Then it checks its table: each message it did is there exactly once
(and no message is there twice, whichever worker did it).  Exits 0 only then.
"""
import argparse
import datetime
import os
import sys
import time

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb


class PlannedFailure(Exception):
    """Raised inside the transaction to roll it back on purpose."""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default="", help="libpq connection string (default: PG* variables)")
    ap.add_argument("--queue", default="jobs")
    ap.add_argument("--table", default="example_work", help="where the work is recorded")
    ap.add_argument("--name", default=f"py-{os.getpid()}", help="this worker's name in the table")
    ap.add_argument("--count", type=int, default=0, help="stop after N messages (0: when idle)")
    ap.add_argument("--idle-timeout", type=float, default=5.0, help="seconds without a message")
    ap.add_argument("--batch", type=int, default=5, help="messages per consume")
    ap.add_argument("--fail-every", type=int, default=0, help="roll back every Nth batch")
    args = ap.parse_args()
    table = sql.Identifier(args.table)

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        with conn.transaction():
            # workers starting together: one creates the table, the others wait
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('queue_ext examples'))")
            conn.execute(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (msg_id bigint NOT NULL, worker text NOT NULL,"
                " body text, headers jsonb, redelivered boolean,"
                " done_at timestamptz NOT NULL DEFAULT clock_timestamp())").format(table))
            conn.execute("SELECT mq.queue_declare(%s)", (args.queue,))

        done = redelivered = batches = rolled_back = 0
        last_message = time.monotonic()
        while args.count == 0 or done < args.count:
            idle = time.monotonic() - last_message
            if idle >= args.idle_timeout:
                break
            wait = datetime.timedelta(seconds=min(1.0, args.idle_timeout - idle))
            want = args.batch if args.count == 0 else min(args.batch, args.count - done)
            try:
                with conn.transaction():                      # BEGIN
                    rows = conn.execute(
                        "SELECT msg_id, convert_from(body, 'UTF8'), headers, redelivered"
                        "  FROM mq.consume(%s, max_messages => %s, wait => %s,"
                        "                  lease => '30 seconds')",
                        (args.queue, want, wait)).fetchall()
                    if not rows:
                        continue                              # COMMIT (nothing taken)
                    for msg_id, body, headers, again in rows:  # the work
                        conn.execute(sql.SQL(
                            "INSERT INTO {} (msg_id, worker, body, headers, redelivered)"
                            " VALUES (%s, %s, %s, %s, %s)").format(table),
                            (msg_id, args.name, body,
                             None if headers is None else Jsonb(headers), again))
                    batches += 1
                    if args.fail_every and batches % args.fail_every == 0:
                        raise PlannedFailure()
                    conn.execute("SELECT mq.ack(%s, %s)",
                                 (args.queue, [r[0] for r in rows]))
                # COMMIT: the work and the acks, together
            except PlannedFailure:
                rolled_back += 1
                print(f"worker {args.name}: rolled back a batch of {len(rows)} on purpose "
                      f"(ids {', '.join(str(r[0]) for r in rows)}): they come back")
                last_message = time.monotonic()
                continue
            for msg_id, body, _, again in rows:
                print(f"worker {args.name}: did {msg_id} {body}"
                      + (" (redelivered)" if again else ""))
            done += len(rows)
            redelivered += sum(1 for r in rows if r[3])
            last_message = time.monotonic()

        mine, distinct = conn.execute(
            sql.SQL("SELECT count(*), count(DISTINCT msg_id) FROM {} WHERE worker = %s")
            .format(table), (args.name,)).fetchone()
        twice = conn.execute(
            sql.SQL("SELECT count(*) FROM (SELECT msg_id FROM {} GROUP BY msg_id"
                    " HAVING count(*) > 1) d").format(table)).fetchone()[0]

    ok = mine == done and distinct == done and twice == 0
    why = ""
    if args.count and done < args.count:
        ok = False
        why = f" (only {done} of {args.count} before the idle timeout)"
    print(f"worker {args.name}: did {done} messages ({redelivered} redelivered), "
          f"{rolled_back} batches rolled back on purpose; {args.table} holds {mine} rows "
          f"for it, {distinct} distinct, {twice} messages done twice: "
          f"{'OK' if ok else 'FAILED'}{why}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
