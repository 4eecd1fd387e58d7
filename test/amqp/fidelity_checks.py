#!/usr/bin/python3
"""Where mq-amqp must do as RabbitMQ 3.10 does (issue 38), checked with pika
and raw frames against either broker.

Run by TAP test 052 (test/t/052_amqp091_go_suite.pl) against RabbitMQ (the
reference: every check must pass there too) and against the gateway:

    fidelity_checks.py URL rabbitmq|gateway [CHECK...]

Prints one line per check, "ok NAME", "ok NAME # skip why" or "not ok NAME:
what went wrong", and exits 0.  Checks marked gateway-only test a decision
of the gateway where RabbitMQ 3.10 has nothing to compare with (RabbitMQ
4.3's quorum-queue arguments): skipped against RabbitMQ.
"""
import socket
import struct
import sys
import urllib.parse
import uuid

import pika
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker

from checklib import (Fail, check, eq, method_frame, read_frame, run_checks,
                      send_method)

URL = sys.argv[1]
BROKER = sys.argv[2]
ONLY = set(sys.argv[3:])
RUN = uuid.uuid4().hex[:8]
_u = urllib.parse.urlparse(URL)
HOST, PORT = _u.hostname, _u.port
USER = urllib.parse.unquote(_u.username)
PASSWORD = urllib.parse.unquote(_u.password)
VHOST = urllib.parse.unquote(_u.path[1:]) if len(_u.path) > 1 else '/'


def name(n):
    return 'fid-%s-%s' % (RUN, n)


def connect():
    return pika.BlockingConnection(pika.URLParameters(URL))


CHECKS = []


def test(gateway_only=False):
    def deco(fn):
        fn.gateway_only = gateway_only
        CHECKS.append(fn)
        return fn
    return deco


# ---- raw frames --------------------------------------------------------------

def method_of(frame):
    t, ch, p = frame
    return (ch,) + struct.unpack('>HH', p[:4]) if t == 1 else (ch, 'frame type %d' % t)


def shortstr(v):
    b = v.encode()
    return bytes([len(b)]) + b


HEARTBEAT = struct.pack('>BHI', 8, 0, 0) + b'\xce'


def raw_open():
    """a socket past connection.open-ok, channel 1 open"""
    s = socket.create_connection((HOST, PORT), timeout=10)
    s.sendall(b'AMQP\x00\x00\x09\x01')
    check(method_of(read_frame(s))[1:] == (10, 10), 'connection.start')
    resp = b'\x00' + USER.encode() + b'\x00' + PASSWORD.encode()
    send_method(s, 0, 10, 11, struct.pack('>I', 0) + shortstr('PLAIN') + struct.pack('>I', len(resp))
                + resp + shortstr('en_US'))
    check(method_of(read_frame(s))[1:] == (10, 30), 'connection.tune')
    send_method(s, 0, 10, 31, struct.pack('>HIH', 2047, 131072, 0))
    send_method(s, 0, 10, 40, shortstr(VHOST) + shortstr('') + b'\x00')
    check(method_of(read_frame(s))[1:] == (10, 41), 'connection.open-ok')
    send_method(s, 1, 20, 10, shortstr(''))
    check(method_of(read_frame(s)) == (1, 20, 11), 'channel.open-ok')
    return s


def still_open_after(s, seconds=1.0):
    """True if the broker neither closes nor resets s within seconds (it
    keeps reading what the client sends): the socket is read, and a timeout
    is what is wanted"""
    s.settimeout(seconds)
    try:
        data = s.recv(1)
        return False if data == b'' else 'sent %r' % data
    except socket.timeout:
        return True
    except (ConnectionResetError, BrokenPipeError):
        return False


# ---- item 2: after the close handshake, input is read and dropped ------------

@test()
def close_ok_then_socket_read_until_client_closes():
    # the client's connection.close with more frames behind it; after the
    # broker's close-ok the client still sends: the broker keeps reading and
    # dropping them until the client closes (RabbitMQ), it neither closes
    # nor resets the socket first
    s = raw_open()
    s.sendall(method_frame(0, 10, 50, struct.pack('>H', 200) + shortstr('bye') + struct.pack('>HH', 0, 0))
              + HEARTBEAT * 3)
    while True:
        f = read_frame(s)
        if method_of(f)[1:] == (10, 51):
            break
    s.sendall(HEARTBEAT * 3)
    eq(still_open_after(s), True, 'the socket after close-ok, the client still sending')
    s.close()


@test(gateway_only=True)
def server_close_waits_for_close_ok_dropping_input():
    # a connection error (channel.flow active=false: 540 as RabbitMQ 3.10);
    # frames the client sends before its close-ok are read and dropped, its
    # close-ok is taken, and the socket is not reset: the gateway waits for
    # the client to close it, reading what comes (RabbitMQ 3.10 resets it
    # after this close-ok, so this is the gateway's only)
    s = raw_open()
    send_method(s, 1, 20, 20, b'\x00')
    while True:
        f = read_frame(s)
        if method_of(f)[1:] == (10, 50):
            eq(struct.unpack('>H', f[2][4:6])[0], 540, 'connection.close code')
            break
    s.sendall(HEARTBEAT * 3 + method_frame(1, 50, 10, struct.pack('>H', 0) + shortstr(name('late'))
                                           + b'\x00' + struct.pack('>I', 0))
              + HEARTBEAT + method_frame(0, 10, 51))
    s.settimeout(3)
    try:
        extra = s.recv(1)
        check(extra == b'', 'nothing after connection.close: got %r' % extra)
    except socket.timeout:
        pass                    # still open: the client closes it
    except ConnectionResetError:
        raise Fail('the socket was reset under the client')
    s.close()


# ---- item 3: a new consumer's first delivery ----------------------------------

@test(gateway_only=True)
def first_delivery_comes_with_consume_ok():
    # a message waits in the queue; basic.consume and, in the same write, a
    # passive queue.declare: the delivery comes right after consume-ok,
    # before the declare's declare-ok (the gateway sets the consumer up
    # before the channel's next method; RabbitMQ 3.10 may answer the
    # declare first, its consumer set up by the queue's own process)
    conn = connect()
    ch = conn.channel()
    q = name('first')
    ch.queue_declare(q)
    ch.basic_publish('', q, b'waiting')
    ch.queue_declare(q, passive=True)       # the publish is done
    conn.close()
    s = raw_open()
    consume = struct.pack('>H', 0) + shortstr(q) + shortstr('c1') + b'\x02' + struct.pack('>I', 0)
    declare = struct.pack('>H', 0) + shortstr(q) + b'\x01' + struct.pack('>I', 0)
    s.sendall(method_frame(1, 60, 20, consume) + method_frame(1, 50, 10, declare))
    seen = []
    while (1, 50, 11) not in seen:
        seen.append(method_of(read_frame(s)))
    seen = [m for m in seen if m[1] != 'frame type 2' and m[1] != 'frame type 3']
    eq(seen, [(1, 60, 21), (1, 60, 60), (1, 50, 11)], 'consume-ok, deliver, declare-ok')
    send_method(s, 0, 10, 50, struct.pack('>H', 200) + shortstr('') + struct.pack('>HH', 0, 0))
    s.close()
    conn = connect()
    conn.channel().queue_delete(q)
    conn.close()


# ---- item 4: redeclare equivalence --------------------------------------------

def redeclare(first, second, code, text):
    conn = connect()
    ch = conn.channel()
    q = name('redecl-%s' % uuid.uuid4().hex[:6])
    ch.queue_declare(q, **first)
    ch.queue_declare(q, **first)            # the same: fine
    try:
        ch.queue_declare(q, **second)
        raise Fail('an inequivalent redeclare was accepted')
    except ChannelClosedByBroker as e:
        eq(e.reply_code, code, 'reply code')
        check(text in e.reply_text, 'reply text %r has %r' % (e.reply_text, text))
    conn.channel().queue_delete(q)
    conn.close()


@test()
def redeclare_other_auto_delete_is_406():
    redeclare({'auto_delete': False}, {'auto_delete': True}, 406,
              "PRECONDITION_FAILED - inequivalent arg 'auto_delete'")
    redeclare({'auto_delete': True}, {'auto_delete': False}, 406,
              "PRECONDITION_FAILED - inequivalent arg 'auto_delete'")


@test()
def redeclare_other_exclusive_is_405():
    redeclare({'exclusive': True}, {'exclusive': False}, 405,
              "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue")
    redeclare({}, {'exclusive': True}, 405,
              "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue")


@test()
def redeclare_other_x_expires_is_406():
    redeclare({'arguments': {'x-expires': 100000}}, {'arguments': {'x-expires': 200000}}, 406,
              "PRECONDITION_FAILED - inequivalent arg 'x-expires'")
    redeclare({'arguments': {'x-expires': 100000}}, {}, 406,
              "PRECONDITION_FAILED - inequivalent arg 'x-expires'")


@test()
def redeclare_other_ignored_arguments_is_406():
    # x-arguments the gateway accepts and ignores are compared too
    redeclare({'arguments': {'x-queue-mode': 'lazy'}}, {}, 406,
              "PRECONDITION_FAILED - inequivalent arg 'x-queue-mode' for queue")
    redeclare({}, {'arguments': {'x-single-active-consumer': True}}, 406,
              "PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue")


@test()
def redeclare_other_durable_or_arguments_is_406():
    # RabbitMQ's texts, naming the argument and both values
    redeclare({'durable': True}, {'durable': False}, 406,
              "PRECONDITION_FAILED - inequivalent arg 'durable' for queue")
    redeclare({'arguments': {'x-max-length': 10}}, {'arguments': {'x-max-length': 20}}, 406,
              "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue")
    redeclare({'arguments': {'x-max-length': 10}}, {'arguments': {'x-max-length': 20}}, 406,
              "': received '20' but current is '10'")
    redeclare({'arguments': {'x-dead-letter-exchange': 'a', 'x-dead-letter-routing-key': 'k'}},
              {'arguments': {'x-dead-letter-exchange': 'a'}}, 406,
              "inequivalent arg 'x-dead-letter-routing-key' for queue")
    redeclare({'arguments': {'x-dead-letter-exchange': 'a', 'x-dead-letter-routing-key': 'k'}},
              {'arguments': {'x-dead-letter-exchange': 'a'}}, 406,
              "': received none but current is the value 'k' of type 'longstr'")


@test()
def exchange_redeclare_other_auto_delete_is_406():
    for first, second in [(False, True), (True, False)]:
        conn = connect()
        ch = conn.channel()
        x = name('x-redecl-%s' % uuid.uuid4().hex[:6])
        ch.exchange_declare(x, 'direct', auto_delete=first)
        ch.exchange_declare(x, 'direct', auto_delete=first)
        try:
            ch.exchange_declare(x, 'direct', auto_delete=second)
            raise Fail('an exchange redeclared with another auto_delete was accepted')
        except ChannelClosedByBroker as e:
            eq(e.reply_code, 406, 'reply code')
            check("PRECONDITION_FAILED - inequivalent arg 'auto_delete' for exchange" in e.reply_text,
                  e.reply_text)
        conn.channel().exchange_delete(x)
        conn.close()


# ---- item 5: product and flow ---------------------------------------------------

@test()
def product_is_rabbitmq():
    conn = connect()
    eq(conn._impl.server_properties.get('product'), 'RabbitMQ', 'server product')
    conn.close()


@test()
def flow_false_is_540_connection_error():
    conn = connect()
    ch = conn.channel()
    eq(ch.flow(True), True, 'flow(active=true)')
    try:
        ch.flow(False)
        raise Fail('flow(active=false) answered')
    except ConnectionClosedByBroker as e:
        eq(e.reply_code, 540, 'reply code')
        eq(e.reply_text, 'NOT_IMPLEMENTED - active=false', 'reply text')


# ---- RabbitMQ 4.3's quorum-queue arguments: the gateway's decision ------------

@test(gateway_only=True)
def quorum_4_3_arguments_refused_as_rabbitmq_refuses():
    for arg, v in [('x-delayed-retry-type', 'all'), ('x-delayed-retry-min', 1000),
                   ('x-delayed-retry-max', 60000), ('x-consumer-timeout', 60000),
                   ('x-max-priority', 32)]:
        conn = connect()
        ch = conn.channel()
        q = name('qq-%s' % arg)
        try:
            ch.queue_declare(q, durable=True, arguments={'x-queue-type': 'quorum', arg: v})
            conn.channel().queue_delete(q)
            raise Fail('%s accepted on a quorum queue' % arg)
        except ChannelClosedByBroker as e:
            eq(e.reply_code, 406, '%s: reply code' % arg)
            eq(e.reply_text, "PRECONDITION_FAILED - invalid arg '%s' for queue '%s' in vhost '%s' "
               "of queue type rabbit_quorum_queue" % (arg, q, VHOST), '%s: reply text' % arg)
        conn.close()
    # on a classic queue they are unknown arguments, accepted (RabbitMQ)
    conn = connect()
    ch = conn.channel()
    q = name('classic-4-3')
    ch.queue_declare(q, arguments={'x-delayed-retry-type': 'all', 'x-consumer-timeout': 60000})
    ch.queue_delete(q)
    conn.close()


def main():
    run_checks(CHECKS, ONLY,
               skip=lambda fn: 'the gateway only' if fn.gateway_only and BROKER != 'gateway' else None)


main()
