#!/usr/bin/python3
"""AMQP clients for TAP test 051 (test/t/051_amqp_logs.pl): normal client
churn against mq-amqp, with Debian's pika, whose traces the test then looks
for in the gateway's log and must not find in PostgreSQL's.

    logs_client.py churn PORT USER PASSWORD
        consumers cancelled with basic.cancel (one waiting in its poll, one
        holding an unacked delivery, one woken by a second consumer of its
        queue taking turns), a channel closed with a consumer in its poll
        and an unacked delivery, a queue deleted under its consumer, a
        login refused (wrong password), then connection.close; prints
        "ok churn" or "not ok churn: why"
    logs_client.py hold PORT USER PASSWORD [HEARTBEAT]
        one connection with a consumer in its long poll (with HEARTBEAT:
        an open connection, heartbeat HEARTBEAT seconds); prints "consuming
        PORT" (the client's port) and then waits, calling nothing of pika
        (so no heartbeat either), until killed or its stdin closes; then
        os._exit: the socket closes without connection.close
"""
import os
import sys
import time

import pika
from pika.exceptions import ProbableAuthenticationError, ConnectionClosedByBroker

PORT = int(sys.argv[2])
USER = sys.argv[3]
PASSWORD = sys.argv[4]


def connect(password=None, heartbeat=None):
    kw = {}
    if heartbeat is not None:
        kw['heartbeat'] = heartbeat
    return pika.BlockingConnection(pika.ConnectionParameters(
        '127.0.0.1', PORT, '/', pika.PlainCredentials(USER, password or PASSWORD),
        connection_attempts=1, socket_timeout=30, **kw))


def wait_in_poll(conn, seconds=1.0):
    """let the consumers' long polls start (the gateway sends them at once)"""
    deadline = time.time() + seconds
    while time.time() < deadline:
        conn.process_data_events(time_limit=max(deadline - time.time(), 0))


def churn():
    c = connect()
    ch = c.channel()
    got = []

    # 1. basic.cancel of a consumer waiting in its long poll
    ch.queue_declare('logs_q1')
    tag = ch.basic_consume('logs_q1', lambda *a: got.append(a))
    wait_in_poll(c)
    ch.basic_cancel(tag)

    # 2. basic.cancel of a consumer holding an unacked delivery; the ack
    #    after the cancel still works
    ch.queue_declare('logs_q2')
    ch.basic_publish('', 'logs_q2', b'one')
    tag = ch.basic_consume('logs_q2', lambda *a: got.append(a))
    deadline = time.time() + 60
    while not got and time.time() < deadline:
        c.process_data_events(time_limit=0.2)
    if not got:
        return 'no delivery from logs_q2'
    wait_in_poll(c)
    ch.basic_cancel(tag)
    ch.basic_ack(got[0][1].delivery_tag)

    # 3. two consumers of one queue: the second's coming wakes the first's
    #    poll (they take turns), then both are cancelled
    ch.queue_declare('logs_q3')
    t1 = ch.basic_consume('logs_q3', lambda *a: None)
    wait_in_poll(c)
    t2 = ch.basic_consume('logs_q3', lambda *a: None)
    wait_in_poll(c)
    ch.basic_cancel(t1)
    ch.basic_cancel(t2)

    # 4. a channel closed with a consumer in its poll and one with an
    #    unacked delivery
    ch2 = c.channel()
    ch2.queue_declare('logs_q4')
    ch2.basic_publish('', 'logs_q4', b'two')
    got4 = []
    ch2.basic_consume('logs_q4', lambda *a: got4.append(a))
    ch2.basic_consume('logs_q1', lambda *a: None)
    deadline = time.time() + 60
    while not got4 and time.time() < deadline:
        c.process_data_events(time_limit=0.2)
    if not got4:
        return 'no delivery from logs_q4'
    wait_in_poll(c)
    ch2.close()
    n = ch.queue_declare('logs_q4', passive=True).method.message_count
    if n != 1:
        return 'logs_q4 has %d ready after the channel closed, not 1' % n

    # 5. a queue deleted under its consumer (its poll stops first)
    ch3 = c.channel()
    ch3.queue_declare('logs_q5')
    ch3.basic_consume('logs_q5', lambda *a: None)
    wait_in_poll(c)
    ch.queue_delete('logs_q5')

    # 6. a login refused
    try:
        connect(password='wrong').close()
        return 'a wrong password logged in'
    except ProbableAuthenticationError:
        pass
    except ConnectionClosedByBroker as e:
        if e.reply_code != 403:
            return 'wrong password: %d, not 403' % e.reply_code

    # 7. a clean close with a consumer in its poll
    ch3.basic_consume('logs_q1', lambda *a: None)
    wait_in_poll(c)
    c.close()
    return None


def hold():
    hb = int(sys.argv[5]) if len(sys.argv) > 5 else None
    c = connect(heartbeat=hb)
    if hb is None:
        # (with a short heartbeat, no consumer: its set-up on a loaded
        # machine could take longer than the heartbeat allows)
        ch = c.channel()
        ch.queue_declare('logs_hold')
        ch.basic_consume('logs_hold', lambda *a: None)
        wait_in_poll(c)
    try:
        port = c._impl._transport._sock.getsockname()[1]
    except AttributeError:
        port = 0
    print('consuming %d' % port, flush=True)
    sys.stdin.read()
    os._exit(0)


if __name__ == '__main__':
    if sys.argv[1] == 'churn':
        try:
            why = churn()
        except Exception as e:  # noqa: BLE001 (the test prints what broke)
            why = '%s: %s' % (type(e).__name__, e)
        print('ok churn' if why is None else 'not ok churn: %s' % why, flush=True)
    elif sys.argv[1] == 'hold':
        hold()
