#!/usr/bin/python3
"""Checks of mq-amqp's channels (docs/amqp.md, "Channels and sessions"), with
Debian's pika.

Run by TAP test 053 (test/t/053_amqp_channels.pl) against a running gateway:

    channel_checks.py PORT USER PASSWORD [CHECK...]

GW_LIMITED ("user:password") is a role that may hold a single PostgreSQL
session (CONNECTION LIMIT 1) with the consume privilege on queue
GW_LIMITED_QUEUE, which holds one message; GW_OTHER ("user:password") a role with no privilege on the
queues USER makes.  Prints one line per check, "ok NAME" or "not ok NAME:
what went wrong", and exits 0.
"""
import os
import sys
import time
import uuid

import pika
from pika.exceptions import ChannelClosedByBroker

from checklib import Fail, check, eq, run_checks

PORT = int(sys.argv[1])
USER = sys.argv[2]
PASSWORD = sys.argv[3]
ONLY = set(sys.argv[4:])
LIMITED_USER, _, LIMITED_PASSWORD = os.environ.get('GW_LIMITED', ':').partition(':')
LIMITED_QUEUE = os.environ.get('GW_LIMITED_QUEUE', '')
OTHER_USER, _, OTHER_PASSWORD = os.environ.get('GW_OTHER', ':').partition(':')
RUN = uuid.uuid4().hex[:8]


def name(n):
    return 'ch-%s-%s' % (RUN, n)


def connect(user=None, password=None):
    return pika.BlockingConnection(pika.ConnectionParameters(
        '127.0.0.1', PORT, '/',
        pika.PlainCredentials(user or USER, password if password is not None else PASSWORD),
        connection_attempts=1, socket_timeout=30, blocked_connection_timeout=60))


def count(ch, q):
    return ch.queue_declare(q, passive=True).method.message_count


CHECKS = []


def test(fn):
    CHECKS.append(fn)
    return fn


@test
def open_close_1000_pairs():
    conn = connect()
    for i in range(1000):
        ch = conn.channel()
        ch.close()
    # and with a statement each: every channel has a session, the pool's
    q = name('churn')
    conn.channel().queue_declare(q)
    for i in range(200):
        ch = conn.channel()
        ch.basic_publish('', q, b'%d' % i)
        ch.close()
    eq(count(conn.channel(), q), 200, 'every publish of a churned channel stored')
    check(conn.is_open, 'the connection is open')
    conn.close()


@test
def channels_256_at_once():
    conn = connect()
    q = name('many')
    conn.channel().queue_declare(q)
    chans = [conn.channel() for _ in range(256)]
    check(all(c.is_open for c in chans), 'all 256 open')
    # each needs its session now: they are all connecting at once
    for c in chans:
        c.basic_publish('', q, b'x')
    for c in chans:
        c.close()
    eq(count(conn.channel(), q), 256, 'a publish of each of them stored')
    conn.close()


@test
def closed_channel_deliveries_redelivered():
    conn = connect()
    q = name('redeliver')
    setup = conn.channel()
    setup.queue_declare(q)
    for i in range(4):
        setup.basic_publish('', q, b'%d' % i)
    a = conn.channel()
    a.basic_qos(prefetch_count=2)
    got = []
    a.basic_consume(q, lambda c, m, p, body: got.append(body))
    deadline = time.time() + 30
    while len(got) < 2 and time.time() < deadline:
        conn.process_data_events(time_limit=0.1)
    eq(len(got), 2, 'prefetch 2 delivered two')
    m, _, b = a.basic_get(q)            # held by the channel's own session
    check(m is not None, 'a basic.get too')
    got.append(b)
    a.close()
    # all three are ready again once close-ok is read, redelivered
    c = conn.channel()
    eq(count(c, q), 4, 'ready after the close')
    seen = []
    for _ in range(4):
        m, _, b = c.basic_get(q)        # on the session the pool gave back
        check(m is not None, 'a message')
        seen.append((b, m.redelivered))
    eq(sorted(seen), sorted([(x, True) for x in got] + [(b'3', False)]),
       'the closed channel\'s three redelivered, the fourth not')
    # this channel's gets, on a pooled session, go back at its close too
    c.close()
    d = conn.channel()
    eq(count(d, q), 4, 'the second channel\'s gets back after its close')
    conn.close()


@test
def tx_channel_close_rolls_back():
    conn = connect()
    q = name('tx')
    setup = conn.channel()
    setup.queue_declare(q)
    setup.basic_publish('', q, b'kept')
    t = conn.channel()
    t.tx_select()
    m, _, b = t.basic_get(q)
    eq(b, b'kept', 'got it in tx mode')
    t.basic_ack(m.delivery_tag)         # in the transaction
    t.basic_publish('', q, b'uncommitted 1')
    t.basic_publish('', q, b'uncommitted 2')
    t.close()
    other = conn.channel()
    eq(count(other, q), 1, 'the uncommitted publishes vanished, the uncommitted ack undone')
    m, _, b = other.basic_get(q, auto_ack=True)
    eq((b, m.redelivered), (b'kept', True), 'the delivery back, redelivered')
    # the next channel's session is not in a transaction: an autocommit
    # publish is seen by another connection at once
    n = conn.channel()
    n.confirm_delivery()                # (returns once it is committed)
    n.basic_publish('', q, b'autocommit')
    conn2 = connect()
    eq(count(conn2.channel(), q), 1, 'a publish after the tx channel is committed')
    conn2.close()
    conn.close()


@test
def pooled_session_carries_no_state():
    conn = connect()
    q = name('state')
    a = conn.channel()
    a.queue_declare(q)
    a.basic_qos(prefetch_count=1)
    for i in range(5):
        a.basic_publish('', q, b'%d' % i)
    a.close()
    # the next channel (the same session, from the pool) has no prefetch
    b = conn.channel()
    got = []
    b.basic_consume(q, lambda c, m, p, body: got.append(body))
    deadline = time.time() + 30
    while len(got) < 5 and time.time() < deadline:
        conn.process_data_events(time_limit=0.1)
    eq(len(got), 5, 'no prefetch limit carried over')
    conn.close()
    # nor a role: another role's channel does not get this role's sessions
    if OTHER_USER:
        other = connect(OTHER_USER, OTHER_PASSWORD)
        try:
            other.channel().queue_declare(q, passive=True)
            raise Fail('a role without a privilege on the queue saw it')
        except ChannelClosedByBroker as e:
            eq(e.reply_code, 403, 'passive declare by a role with no privilege')
        check(other.is_open, 'its connection is open')
        other.close()


@test
def session_failure_closes_the_channel():
    # GW_LIMITED_QUEUE holds a message: a channel that took it and has not
    # acked it keeps its session (the delivery belongs to it)
    conn = connect(LIMITED_USER, LIMITED_PASSWORD)
    # the login's own session ends a moment after open-ok: until then a
    # channel may fail to get one (541), which is what is checked next
    first = None
    for _ in range(100):
        first = conn.channel()
        try:
            m, _, _ = first.basic_get(LIMITED_QUEUE)
            check(m is not None, 'the message of %s' % LIMITED_QUEUE)
            break
        except ChannelClosedByBroker as e:
            eq(e.reply_code, 541, 'a channel without a session')
            first = None
            time.sleep(0.1)
    check(first is not None, 'a channel got the one session of the role')
    second = conn.channel()
    try:
        second.queue_declare(LIMITED_QUEUE, passive=True)
        raise Fail('a second session of a role limited to one')
    except ChannelClosedByBroker as e:
        eq(e.reply_code, 541, 'the channel that could not have a session')
        check('no PostgreSQL session' in e.reply_text, 'says why: %s' % e.reply_text)
    check(conn.is_open, 'the connection is open')
    first.basic_ack(m.delivery_tag)
    # (its answer comes after the ack's statement)
    eq(first.queue_declare(LIMITED_QUEUE, passive=True).method.message_count, 0,
       'the message acked')
    # with nothing held, its session went back to the pool: another
    # channel takes it, while the first one is still open
    third = conn.channel()
    third.queue_declare(LIMITED_QUEUE, passive=True)
    first.queue_declare(LIMITED_QUEUE, passive=True)
    first.close()
    third.close()
    check(conn.is_open, 'still open')
    conn.close()


if __name__ == '__main__':
    run_checks(CHECKS, ONLY)
