#!/usr/bin/python3
"""Logins of mq-amqp (docs/amqp.md, Authentication), with Debian's pika.

Run by TAP test 045 (test/t/045_amqp_auth.pl) against a running gateway:

    auth_checks.py login HOST PORT USER PASSWORD
        one login: prints "ok" (logged in, a channel opened),
        "refused CODE TEXT" or "error WHAT"
    auth_checks.py tutorials PORT
        as guest/guest from 127.0.0.1, what RabbitMQ's tutorials do: queue
        hello (publish, consume), a fanout exchange logs with a server-named
        exclusive queue bound to it, a direct and a topic exchange, rpc_queue
        with a reply queue; prints "ok" or "not ok WHAT"
    auth_checks.py flood PORT N SOURCE USER PASSWORD
        N raw handshakes from address SOURCE, each up to connection.start-ok
        and left there (never tune-ok); once 8 got connection.tune (or all
        an answer), one honest login (pika, from 127.0.0.1, same user)
        declares a queue, publishes and gets a message; then the handshakes
        wait to be closed by the gateway.  Prints "flood first answers: ...",
        "honest ok" or "honest error WHAT", "flood closed=C of N".
    auth_checks.py queue PORT LOG USER PASSWORD
        against a gateway with --max-logins 1 logging to LOG: handshake A
        (from 127.0.0.3) gets its tune and holds the slot; B (127.0.0.4)
        sends start-ok and waits (the log says so); A closes; B gets its
        tune.  Prints "A tune", "B waits", "B tune after A closed".
"""
import re
import select
import socket
import struct
import sys
import time
import uuid

import pika
from pika.exceptions import (AMQPConnectionError, ConnectionClosedByBroker,
                             ProbableAccessDeniedError, ProbableAuthenticationError)

from checklib import method_frame, read_frame


def params(host, port, user, password):
    return pika.ConnectionParameters(host, port, '/', pika.PlainCredentials(user, password),
                                     connection_attempts=1, socket_timeout=30)


def login(host, port, user, password):
    try:
        conn = pika.BlockingConnection(params(host, int(port), user, password))
        conn.channel()
        conn.close()
        print('ok')
    except ConnectionClosedByBroker as e:
        print('refused %d %s' % (e.reply_code, e.reply_text))
    except (ProbableAccessDeniedError, ProbableAuthenticationError) as e:
        # pika keeps the broker's close as text: "...: (403) 'ACCESS_REFUSED - ...'"
        m = re.search(r"\((\d+)\) (['\"])(.*?)\2", str(e))
        print('refused %s %s' % (m.group(1), m.group(3).replace('\\', ''))
              if m else 'refused ? %r' % (e,))
    except AMQPConnectionError as e:
        inner = e.args[0] if e.args else None
        if isinstance(inner, ConnectionClosedByBroker):
            print('refused %d %s' % (inner.reply_code, inner.reply_text))
        else:
            print('error %r' % (e,))


def tutorials(port):
    run = uuid.uuid4().hex[:8]
    conn = pika.BlockingConnection(params('127.0.0.1', int(port), 'guest', 'guest'))
    ch = conn.channel()

    def get(queue):
        for _ in range(100):
            m, _p, body = ch.basic_get(queue, auto_ack=True)
            if m:
                return body
            conn.sleep(0.1)
        return None

    # 1. hello world, 2. work queues (durable, persistent, ack)
    ch.queue_declare('hello')
    ch.basic_publish('', 'hello', b'Hello World! ' + run.encode())
    got = []
    ch.basic_consume('hello', lambda c, m, p, b: (got.append(b), c.basic_ack(m.delivery_tag)))
    while not any(run.encode() in b for b in got):
        conn.process_data_events(time_limit=1)
    ch.close()
    ch = conn.channel()
    ch.queue_declare('task_queue', durable=True)
    ch.basic_publish('', 'task_queue', b'task ' + run.encode(),
                     pika.BasicProperties(delivery_mode=2))
    if get('task_queue') is None:
        print('not ok task_queue: nothing got')
        return
    # 3. publish/subscribe, 4. routing, 5. topics: server-named exclusive queues
    for ex, typ, rk in (('logs', 'fanout', ''), ('direct_logs', 'direct', 'error'),
                        ('topic_logs', 'topic', 'kern.critical')):
        ch.exchange_declare(ex, typ)
        q = ch.queue_declare('', exclusive=True).method.queue
        ch.queue_bind(q, ex, routing_key=rk if typ != 'topic' else 'kern.*')
        ch.basic_publish(ex, rk, b'%s %s' % (ex.encode(), run.encode()))
        if get(q) is None:
            print('not ok %s: nothing got' % ex)
            return
    # 6. rpc: rpc_queue and an exclusive reply queue
    ch.queue_declare('rpc_queue')
    reply = ch.queue_declare('', exclusive=True).method.queue
    ch.basic_publish('', 'rpc_queue', b'30',
                     pika.BasicProperties(reply_to=reply, correlation_id=run))
    body = get('rpc_queue')
    ch.basic_publish('', reply, b'832040 ' + (body or b''),
                     pika.BasicProperties(correlation_id=run))
    if get(reply) != b'832040 30':
        print('not ok rpc: no reply')
        return
    conn.close()
    print('ok')


def start_ok(user, password):
    resp = b'\x00' + user.encode() + b'\x00' + password.encode()
    args = (struct.pack('>I', 0) + bytes([5]) + b'PLAIN' + struct.pack('>I', len(resp)) + resp
            + bytes([5]) + b'en_US')
    return method_frame(0, 10, 11, args)


def raw_start_ok(port, source, user, password):
    """a socket from address source that sent start-ok"""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(120)
    s.bind((source, 0))
    s.connect(('127.0.0.1', port))
    s.sendall(b'AMQP\x00\x00\x09\x01')
    read_frame(s)               # connection.start
    s.sendall(start_ok(user, password))
    return s


def answer(s):
    """what the gateway answered a start-ok: tune, close CODE, or closed"""
    try:
        t, ch, p = read_frame(s)
    except (EOFError, OSError):
        return 'closed'
    if p[:4] == struct.pack('>HH', 10, 30):
        return 'tune'
    if p[:4] == struct.pack('>HH', 10, 50):
        return 'close %d' % struct.unpack('>H', p[4:6])[0]
    return 'other'


def honest(port, user, password):
    try:
        conn = pika.BlockingConnection(params('127.0.0.1', port, user, password))
        ch = conn.channel()
        q = ch.queue_declare('', exclusive=True).method.queue
        ch.basic_publish('', q, b'honest')
        body = None
        for _ in range(100):
            m, _p, body = ch.basic_get(q, auto_ack=True)
            if m:
                break
            conn.sleep(0.1)
        conn.close()
        return 'honest ok' if body == b'honest' else 'honest error got %r' % (body,)
    except Exception as e:      # noqa: BLE001 -- reported, the flood still ends
        return 'honest error %r' % (e,)


def flood(port, n, source, user, password):
    port, n = int(port), int(n)
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((source, 0))
        s.connect(('127.0.0.1', port))
        s.sendall(b'AMQP\x00\x00\x09\x01')
        socks.append(s)
    for s in socks:
        s.settimeout(120)
        read_frame(s)           # connection.start
        s.sendall(start_ok(user, password))
    # the first answers: 8 tunes (the per-address bound), or every socket's
    answers = {}
    while len(answers) < n and list(answers.values()).count('tune') < 8:
        r, _w, _x = select.select([s for s in socks if s not in answers], [], [], 120)
        if not r:
            break
        for s in r:
            answers[s] = answer(s)
    got = list(answers.values())
    print('flood first answers: tune=%d closed-or-refused=%d' % (got.count('tune'), len(got) - got.count('tune')),
          flush=True)
    print(honest(port, user, password), flush=True)
    # the handshakes left: the gateway closes them (its handshake time limit)
    closed = 0
    for s in socks:
        try:
            while True:
                r, _w, _x = select.select([s], [], [], 120)
                if not r:
                    break       # still open after two minutes
                if not s.recv(4096):
                    closed += 1
                    break
        except OSError:
            closed += 1         # reset
        s.close()
    print('flood closed=%d of %d' % (closed, n), flush=True)


def queue(port, log, user, password):
    """--max-logins 1: A holds the one slot; B waits until A is gone"""
    port = int(port)
    a = raw_start_ok(port, '127.0.0.3', user, password)
    print('A %s' % answer(a), flush=True)
    b = raw_start_ok(port, '127.0.0.4', user, password)
    waits = 'login of "%s" waits: 1 logins in progress (max_logins)' % user
    for _ in range(1200):
        with open(log) as f:
            if any('127.0.0.4:' in line and waits in line for line in f):
                break
        time.sleep(0.1)
    else:
        print('B never waited', flush=True)
        return
    print('B waits', flush=True)
    a.close()
    print('B %s after A closed' % answer(b), flush=True)
    b.close()


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'login':
        login(*sys.argv[2:6])
    elif cmd == 'tutorials':
        tutorials(sys.argv[2])
    elif cmd == 'flood':
        flood(*sys.argv[2:7])
    elif cmd == 'queue':
        queue(*sys.argv[2:6])
    else:
        sys.exit('unknown command %s' % cmd)
