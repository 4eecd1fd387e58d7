#!/usr/bin/env python3
"""rpc_client.py: call rpc_server.py and wait for the matching replies.

Declares a private, server-named reply queue (queue_declare('') gives
amq.gen-...), then for each call publishes a request with reply_to = that
queue and a fresh correlation_id, commits it (the server sees it only then),
and waits on the reply queue for the reply with the same correlation_id;
replies that match no call in progress (late ones of an earlier call) are
settled and ignored.  Deletes its reply queue at the end.

    python3 rpc_client.py [--dsn DSN] [--queue rpc_requests] [--count 5] [--timeout 10]

Exits 0 only if every call got its matching, correct reply in time.
"""
import argparse
import datetime
import json
import sys
import time
import uuid

import psycopg
from psycopg.types.json import Jsonb


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def call(conn, request_queue, reply_queue, n, timeout):
    """One request-reply round trip: the result, or None after timeout."""
    corr_id = str(uuid.uuid4())
    conn.execute("SELECT mq.send(%s, %s::jsonb, reply_to => %s, correlation_id => %s)",
                 (request_queue, Jsonb({"fib": n}), reply_queue, corr_id))   # autocommit
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        wait = datetime.timedelta(seconds=min(1.0, max(0.01, deadline - time.monotonic())))
        with conn.transaction():
            rows = conn.execute(
                "SELECT msg_id, convert_from(body, 'UTF8'), properties->>'correlation_id'"
                "  FROM mq.consume(%s, 10, wait => %s)", (reply_queue, wait)).fetchall()
            if rows:
                conn.execute("SELECT mq.ack(%s, %s)", (reply_queue, [r[0] for r in rows]))
        for _, body, their_id in rows:
            if their_id == corr_id:
                return corr_id, json.loads(body)["result"]
            print(f"rpc_client: ignoring a reply for correlation_id {their_id}")
    return corr_id, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default="", help="libpq connection string (default: PG* variables)")
    ap.add_argument("--queue", default="rpc_requests", help="the server's request queue")
    ap.add_argument("--count", type=int, default=5, help="calls to make: fib(10), fib(11), ...")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each reply")
    args = ap.parse_args()

    good = 0
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("SELECT mq.queue_declare(%s)", (args.queue,))
        (reply_queue,) = conn.execute(
            "SELECT mq.queue_declare('', durable => false)").fetchone()
        print(f"rpc_client: reply queue {reply_queue}")
        try:
            for n in range(10, 10 + args.count):
                t0 = time.monotonic()
                corr_id, result = call(conn, args.queue, reply_queue, n, args.timeout)
                ms = (time.monotonic() - t0) * 1000
                if result is None:
                    print(f"rpc_client: fib({n}): no reply within {args.timeout}s "
                          f"(correlation_id {corr_id})")
                elif result != fib(n):
                    print(f"rpc_client: fib({n}) = {result}: WRONG (correlation_id {corr_id})")
                else:
                    good += 1
                    print(f"rpc_client: fib({n}) = {result} (correlation_id {corr_id}, "
                          f"{ms:.0f} ms)")
        finally:
            conn.execute("SELECT mq.queue_delete(%s)", (reply_queue,))

    ok = good == args.count
    print(f"rpc_client: {args.count} calls, {good} matching correct replies: "
          f"{'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
