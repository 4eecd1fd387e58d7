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
        and left there (never tune-ok); once each got its answer (tune or
        close), one honest login (pika, from 127.0.0.1, same user) declares
        a queue, publishes and gets a message; then the handshakes wait to be
        closed by the gateway.  Prints "flood tune=T refused506=R other=O",
        "honest ok" or "honest error WHAT", "flood closed=C of N".
"""
import re
import select
import socket
import struct
import sys
import uuid

import pika
from pika.exceptions import (AMQPConnectionError, ConnectionClosedByBroker,
                             ProbableAccessDeniedError, ProbableAuthenticationError)


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


def read_exact(s, n):
    buf = b''
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError('closed')
        buf += chunk
    return buf


def read_frame(s):
    t, ch, size = struct.unpack('>BHI', read_exact(s, 7))
    payload = read_exact(s, size)
    read_exact(s, 1)
    return t, ch, payload


def start_ok(user, password):
    resp = b'\x00' + user.encode() + b'\x00' + password.encode()
    args = (struct.pack('>I', 0) + bytes([5]) + b'PLAIN' + struct.pack('>I', len(resp)) + resp
            + bytes([5]) + b'en_US')
    payload = struct.pack('>HH', 10, 11) + args
    return struct.pack('>BHI', 1, 0, len(payload)) + payload + b'\xce'


def flood(port, n, source, user, password):
    port, n = int(port), int(n)
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(60)
        s.bind((source, 0))
        s.connect(('127.0.0.1', port))
        s.sendall(b'AMQP\x00\x00\x09\x01')
        socks.append(s)
    for s in socks:
        read_frame(s)           # connection.start
        s.sendall(start_ok(user, password))
    tune = refused = other = 0
    for s in socks:
        try:
            t, ch, p = read_frame(s)
            if p[:4] == struct.pack('>HH', 10, 30):
                tune += 1
            elif p[:4] == struct.pack('>HH', 10, 50) and struct.unpack('>H', p[4:6])[0] == 506:
                refused += 1
            else:
                other += 1
        except (EOFError, OSError):
            other += 1
    print('flood tune=%d refused506=%d other=%d' % (tune, refused, other), flush=True)
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
        print('honest ok' if body == b'honest' else 'honest error got %r' % (body,), flush=True)
    except Exception as e:      # noqa: BLE001 -- reported, the flood still ends
        print('honest error %r' % (e,), flush=True)
    # the handshakes left: the gateway closes them (--handshake-timeout)
    closed = 0
    for s in socks:
        try:
            while True:
                r, _w, _x = select.select([s], [], [], 60)
                if not r:
                    break       # still open after a minute
                if not s.recv(4096):
                    closed += 1
                    break
        except OSError:
            closed += 1         # reset
        s.close()
    print('flood closed=%d of %d' % (closed, n), flush=True)


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'login':
        login(*sys.argv[2:6])
    elif cmd == 'tutorials':
        tutorials(sys.argv[2])
    elif cmd == 'flood':
        flood(*sys.argv[2:7])
    else:
        sys.exit('unknown command %s' % cmd)
