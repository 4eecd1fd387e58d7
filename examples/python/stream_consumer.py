#!/usr/bin/env python3
"""stream_consumer.py: a 3-partition stream read by a consumer group.

Declares a stream with 3 partitions and a consumer group on it (start =>
'earliest'), publishes --publish messages keyed by user (one user's messages
hash to one partition, so they keep their order), then consumes with
group_name in batches, acking each batch in the transaction that took it.
Finally prints the group's committed offsets from mq.consumer_groups.

    python3 stream_consumer.py [--dsn DSN] [--stream events] [--group example-group] [--publish 30]

Exits 0 only if it got every message it published once, each partition in
offset order and each user's messages in publish order, and the group's lag
is 0 on every partition afterwards.
"""
import argparse
import datetime
import sys
import time

import psycopg
from psycopg.types.json import Jsonb


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default="", help="libpq connection string (default: PG* variables)")
    ap.add_argument("--stream", default="events")
    ap.add_argument("--group", default="example-group")
    ap.add_argument("--publish", type=int, default=30, help="messages to publish first")
    ap.add_argument("--users", default="alice,bob,carol,dave,erin,frank",
                    help="the keys, comma-separated (the messages go round them)")
    ap.add_argument("--batch", type=int, default=8, help="messages per consume")
    ap.add_argument("--idle-timeout", type=float, default=5.0)
    args = ap.parse_args()
    problems = []

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("SELECT mq.queue_declare(%s, type => 'stream',"
                     " arguments => '{\"partitions\": 3}')", (args.stream,))
        # a group sees what is published after it was declared ('latest'),
        # or, with 'earliest', everything the stream retains
        conn.execute("SELECT mq.group_declare(%s, %s, start => 'earliest')",
                     (args.stream, args.group))

        users = args.users.split(",")
        published = {}
        with conn.transaction():
            for seq in range(1, args.publish + 1):
                user = users[seq % len(users)]
                (msg_id,) = conn.execute(
                    "SELECT mq.send(%s, %s::text, key => %s, headers => %s)",
                    (args.stream, f"event-{seq}", user, Jsonb({"seq": seq}))).fetchone()
                published[msg_id] = (user, seq)
        print(f"stream_consumer: published {len(published)} messages to {args.stream} "
              f"(keys {', '.join(users)})")

        got = {}
        last_offset = {}            # partition -> last offset seen
        last_seq = {}               # user -> last seq seen
        last_message = time.monotonic()
        while len(got) < len(published):
            idle = time.monotonic() - last_message
            if idle >= args.idle_timeout:
                problems.append(f"idle for {args.idle_timeout}s with {len(got)} of "
                                f"{len(published)} received")
                break
            wait = datetime.timedelta(seconds=min(1.0, args.idle_timeout - idle))
            with conn.transaction():
                rows = conn.execute(
                    "SELECT msg_id, partition, \"offset\", key, (headers->>'seq')::int"
                    "  FROM mq.consume(%s, %s, wait => %s, group_name => %s)",
                    (args.stream, args.batch, wait, args.group)).fetchall()
                if rows:
                    conn.execute("SELECT mq.ack(%s, %s, group_name => %s)",
                                 (args.stream, [r[0] for r in rows], args.group))
            if rows:
                last_message = time.monotonic()
            # a call takes the highest partition first, offset order within one
            for msg_id, part, offset, user, seq in rows:
                print(f"stream_consumer: partition {part} offset {offset} {user} seq {seq}")
                if msg_id in got:
                    problems.append(f"message {msg_id} received twice")
                if msg_id not in published:
                    problems.append(f"message {msg_id} was not published by this run")
                got[msg_id] = (part, offset)
                if part in last_offset and offset <= last_offset[part]:
                    problems.append(f"partition {part}: offset {offset} after {last_offset[part]}")
                last_offset[part] = offset
                if user in last_seq and seq <= last_seq[user]:
                    problems.append(f"{user}: seq {seq} after {last_seq[user]}")
                last_seq[user] = seq

        groups = conn.execute(
            "SELECT partition, committed_offset, end_offset, lag FROM mq.consumer_groups"
            " WHERE queue = %s AND group_name = %s ORDER BY partition",
            (args.stream, args.group)).fetchall()

    print(f"stream_consumer: group {args.group} committed offsets:")
    for part, committed, end, lag in groups:
        print(f"stream_consumer:   partition {part}: committed_offset {committed} "
              f"end_offset {end} lag {lag}")
        if lag != 0:
            problems.append(f"partition {part}: lag {lag}")
    if len(groups) != 3:
        problems.append(f"{len(groups)} partitions in mq.consumer_groups, not 3")
    for p in problems:
        print(f"stream_consumer: problem: {p}")
    ok = not problems and len(got) == len(published)
    print(f"stream_consumer: received and acked {len(got)} of {len(published)} messages "
          f"once each, in order: {'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
