#!/usr/bin/env python3
"""producer.py: declare a direct exchange and a queue bound to it, then publish
N messages with headers, all in one transaction (COMMIT confirms them all).

    python3 producer.py [--dsn DSN] [--queue jobs] [--count 10]

Connects with the libpq environment variables (PGHOST, PGPORT, PGDATABASE,
PGUSER, ...) unless --dsn is given.  Prints one line per message and a summary;
exits 0 only if every message got its own id.
"""
import argparse
import sys

import psycopg
from psycopg.types.json import Jsonb


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default="", help="libpq connection string (default: PG* variables)")
    ap.add_argument("--exchange", default="examples", help="direct exchange to publish to")
    ap.add_argument("--queue", default="jobs", help="queue bound to it, by its own name")
    ap.add_argument("--count", type=int, default=10, help="messages to publish")
    ap.add_argument("--prefix", default="job", help="bodies are PREFIX-1 .. PREFIX-N")
    args = ap.parse_args()

    ids = []
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        # topology: idempotent, so every producer and worker may declare it
        conn.execute("SELECT mq.exchange_declare(%s, type => 'direct')", (args.exchange,))
        conn.execute("SELECT mq.queue_declare(%s)", (args.queue,))
        conn.execute("SELECT mq.bind(%s, %s, binding_key => %s)",
                     (args.queue, args.exchange, args.queue))

        with conn.transaction():
            for seq in range(1, args.count + 1):
                body = f"{args.prefix}-{seq}"
                headers = {"seq": seq, "producer": "python"}
                # mandatory: an unroutable message raises (P0002) instead of
                # being dropped, and the whole transaction is undone
                (msg_id,) = conn.execute(
                    "SELECT mq.publish(%s, %s, %s::text, headers => %s, mandatory => true)",
                    (args.exchange, args.queue, body, Jsonb(headers))).fetchone()
                ids.append(msg_id)
                print(f"producer: published {msg_id} {body} headers={headers}")
        # here the COMMIT has confirmed them: consumers can see them now

    ok = len(ids) == args.count and None not in ids and len(set(ids)) == len(ids)
    print(f"producer: published {len(ids)} messages to exchange {args.exchange} "
          f"(routing key {args.queue}) in one transaction: {'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
