#!/usr/bin/env python3
"""rpc_server.py: answer requests (RabbitMQ's RPC pattern over queue_ext).

Consumes requests from a queue; each carries the properties reply_to (the
client's private reply queue) and correlation_id.  The server computes the
answer and sends it to reply_to with the same correlation_id, and acks the
request, in one transaction: a request is answered once, or (after a
failure) not at all and delivered again.

    python3 rpc_server.py [--dsn DSN] [--queue rpc_requests] [--count N] [--idle-timeout 10]

A request body is JSON {"fib": n}; the reply is {"fib": n, "result": F(n)}.
A request without reply_to or correlation_id, or whose reply queue is gone
(the client gave up and deleted it), is settled without a reply ("dropped").
Stops after --count requests or when idle; exits 0 only if it settled
--count of them (when given).
"""
import argparse
import datetime
import json
import sys
import time

import psycopg
from psycopg.types.json import Jsonb


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default="", help="libpq connection string (default: PG* variables)")
    ap.add_argument("--queue", default="rpc_requests", help="the request queue")
    ap.add_argument("--count", type=int, default=0, help="stop after N requests (0: when idle)")
    ap.add_argument("--idle-timeout", type=float, default=10.0, help="seconds without a request")
    args = ap.parse_args()

    answered = dropped = 0
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("SELECT mq.queue_declare(%s)", (args.queue,))
        print(f"rpc_server: waiting for requests on {args.queue}", flush=True)
        last_request = time.monotonic()
        while args.count == 0 or answered + dropped < args.count:
            idle = time.monotonic() - last_request
            if idle >= args.idle_timeout:
                break
            wait = datetime.timedelta(seconds=min(1.0, args.idle_timeout - idle))
            with conn.transaction():
                row = conn.execute(
                    "SELECT msg_id, convert_from(body, 'UTF8'),"
                    "       properties->>'reply_to', properties->>'correlation_id'"
                    "  FROM mq.consume(%s, 1, wait => %s)", (args.queue, wait)).fetchone()
                if row is None:
                    continue
                msg_id, body, reply_to, corr_id = row
                last_request = time.monotonic()
                if reply_to is None or corr_id is None:
                    # nobody to answer: settle it so it does not come back
                    print(f"rpc_server: request {msg_id} has no reply_to or correlation_id: dropped")
                    conn.execute("SELECT mq.ack(%s, ARRAY[%s::bigint])", (args.queue, msg_id))
                    dropped += 1
                    continue
                n = json.loads(body)["fib"]
                reply = {"fib": n, "result": fib(n)}
                try:
                    with conn.transaction():                  # a savepoint
                        conn.execute(
                            "SELECT mq.send(%s, %s::jsonb, correlation_id => %s)",
                            (reply_to, Jsonb(reply), corr_id))
                except psycopg.errors.UndefinedObject:
                    # the client went away and deleted its reply queue
                    print(f"rpc_server: reply queue {reply_to} is gone: request {msg_id} dropped")
                    dropped += 1
                else:
                    answered += 1
                    print(f"rpc_server: fib({n}) = {reply['result']} -> {reply_to} "
                          f"(correlation_id {corr_id})", flush=True)
                conn.execute("SELECT mq.ack(%s, ARRAY[%s::bigint])", (args.queue, msg_id))
            # COMMIT: the reply is sent and the request settled, together

    ok = args.count == 0 or answered + dropped == args.count
    print(f"rpc_server: answered {answered} requests, dropped {dropped}: "
          f"{'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
