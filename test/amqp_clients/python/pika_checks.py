#!/usr/bin/python3
"""A conformance suite of small named checks, run with pika against any AMQP
0-9-1 broker: the behaviours of RabbitMQ that client programs rely on.

    pika_checks.py [URL] [--only NAME[,NAME...]] [--list]

URL as in amqpcommon.py (or AMQP_URL).  Each check prints one line,
`ok NAME` or `not ok NAME: reason`, in a fixed order, so two brokers'
outputs compare line by line; the exit status is 1 if any check failed.
Every check uses its own queues and exchanges (named chk.NAME...), deletes
them before and after, and has 30 seconds.  Reply texts differ between
brokers, so errors are checked by their reply codes only.
"""
import datetime
import decimal
import os
import re
import signal
import sys
import time

import pika
import pika.exceptions as E
from pika.spec import Basic

from amqpcommon import connect, params, url

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


class Fail(Exception):
    pass


class Skip(Exception):
    """The broker has no such feature at all (a RabbitMQ plugin that is not
    installed): the check prints `ok NAME # skip reason`"""


def eq(actual, want, what):
    if actual != want:
        raise Fail('%s: got %r, want %r' % (what, actual, want))


def true(cond, what):
    if not cond:
        raise Fail(what)


class Names:
    """The queues and exchanges of one check: chk.<check>.<suffix>; deleted
    before the check runs and after it ends"""

    def __init__(self, check):
        self.check = check
        self.queues, self.exchanges = set(), set()

    def q(self, suffix='q'):
        n = 'chk.%s.%s' % (self.check, suffix)
        self.queues.add(n)
        return n

    def x(self, suffix='x'):
        n = 'chk.%s.%s' % (self.check, suffix)
        self.exchanges.add(n)
        return n

    def clean(self):
        c = connect()
        ch = c.channel()
        for q in sorted(self.queues):
            try:
                ch.queue_delete(q)
            except E.ChannelClosedByBroker:
                ch = c.channel()
        for x in sorted(self.exchanges):
            try:
                ch.exchange_delete(x)
            except E.ChannelClosedByBroker:
                ch = c.channel()
        c.close()


def channel_error(code, fn, ch=None, what='the call'):
    """fn() must close its channel with code: raised by fn itself or, for an
    asynchronous method (basic.publish, basic.ack...), by the next
    synchronous call on ch"""
    try:
        fn()
        if ch is not None:
            ch.exchange_declare('amq.direct', passive=True)
    except E.ChannelClosedByBroker as e:
        eq(e.reply_code, code, '%s: channel closed with' % what)
        return
    raise Fail('%s: no channel error (expected %d)' % (what, code))


def connection_error_code(exc):
    """The reply code of a connection exception that pika wraps in a
    string (ProbableAuthenticationError etc.), or None"""
    if isinstance(exc, E.ConnectionClosedByBroker):
        return exc.reply_code
    m = re.search(r'ConnectionClosedByBroker: \((\d+)\)', str(exc))
    return int(m.group(1)) if m else None


def with_url(vhost=None, password=None):
    p = params()
    if vhost is not None:
        p.virtual_host = vhost
    if password is not None:
        p.credentials = pika.PlainCredentials(p.credentials.username, password)
    return p


def with_url_kw(**kw):
    """The URL's connection parameters with some changed"""
    p = params()
    for k, v in kw.items():
        setattr(p, k, v)
    return p


def cchan(c):
    """A channel in confirm mode: each publish is routed (in its queues)
    when basic_publish returns, so counts and gets that follow see it"""
    ch = c.channel()
    ch.confirm_delivery()
    return ch


def wait_bodies(ch, q, n, timeout=5.0):
    """basic.get (auto-ack) until n messages came from q (dead-lettering
    and expiry happen in the background), or timeout"""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m, p, b = ch.basic_get(q, auto_ack=True)
        if m is None:
            time.sleep(0.05)
            continue
        out.append(b.decode())
    return out


def wait_get(ch, q, timeout=5.0):
    """basic.get (auto-ack) until a message comes from q, or timeout:
    (method, properties, body), method None if nothing came"""
    deadline = time.monotonic() + timeout
    while True:
        m, p, b = ch.basic_get(q, auto_ack=True)
        if m is not None or time.monotonic() > deadline:
            return m, p, b
        time.sleep(0.05)


def is_mq_amqp(c):
    """queue_ext's gateway says "RabbitMQ" as its product (as clients
    expect) and what it is in platform"""
    p = c._impl.server_properties.get('platform', '')
    return 'queue_ext' in (p.decode() if isinstance(p, bytes) else p)


def depth(ch, q):
    return ch.queue_declare(q, passive=True).method.message_count


def depth_after_close(c, ch, q, want):
    """q's depth once a closed channel's basic.get deliveries are back.
    mq-amqp has them back by the time close-ok arrives: its depth is read
    at once.  RabbitMQ does not promise that: before close-ok a channel
    tells only the queues it has consumers on (rabbit_channel's
    notify_queues); a queue it only basic.get from requeues when it sees
    the channel process end, a moment later on a loaded machine.  So for
    RabbitMQ, wait up to 5 s for want"""
    d = depth(ch, q)
    deadline = time.monotonic() + 5
    while not is_mq_amqp(c) and d != want and time.monotonic() < deadline:
        time.sleep(0.05)
        d = depth(ch, q)
    return d


def get_bodies(ch, q, n=100):
    out = []
    for _ in range(n):
        m, p, b = ch.basic_get(q, auto_ack=True)
        if m is None:
            break
        out.append(b.decode())
    return out


def publish(ch, q, *bodies, **props):
    for b in bodies:
        ch.basic_publish('', q, b.encode() if isinstance(b, str) else b,
                         properties=pika.BasicProperties(**props) if props else None)


def consume_n(conn, ch, q, n, timeout=5.0, auto_ack=False, **kw):
    """Start a consumer on q and collect up to n deliveries (method,
    properties, body), running I/O for at most timeout seconds"""
    got = []
    tag = ch.basic_consume(q, lambda c, m, p, b: got.append((m, p, b)),
                           auto_ack=auto_ack, **kw)
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        conn.process_data_events(time_limit=0.05)
    return tag, got


def consume_limited(conn, ch, q, limit):
    """Start a consumer on q (manual acks), wait until limit deliveries came
    (5 s at most), then 0.5 s more for any beyond the limit"""
    tag, got = consume_n(conn, ch, q, limit, timeout=5.0)
    settle(conn, 0.5)
    return tag, got


def settle(conn, seconds=0.3):
    """Let frames in flight arrive"""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        conn.process_data_events(time_limit=0.05)


# ---------------------------------------------------------------------------
# connection
# ---------------------------------------------------------------------------

@check
def connection_open_close(n):
    c = connect()
    ch = c.channel()
    true(ch.is_open, 'channel open')
    c.close()
    true(c.is_closed, 'connection closed')


@check
def server_capabilities(n):
    c = connect()
    caps = c._impl.server_properties.get('capabilities', {})
    for cap in ('publisher_confirms', 'basic.nack', 'consumer_cancel_notify',
                'authentication_failure_close', 'per_consumer_qos'):
        eq(caps.get(cap), True, 'capability %s' % cap)
    c.close()


@check
def heartbeat_negotiated(n):
    proposed = []

    def choose(conn, broker_value):
        proposed.append(broker_value)
        return 2
    c = pika.BlockingConnection(with_url_kw(heartbeat=choose))
    eq(c._impl.params.heartbeat, 2, 'negotiated heartbeat')
    true(proposed and proposed[0] > 0, 'the broker proposes heartbeats: %r' % proposed)
    # idle for 4 s: the broker's heartbeats (every second) keep it alive
    c.sleep(4)
    hb = c._impl._heartbeat_checker
    true(hb is not None and hb._heartbeat_frames_received >= 2,
         'heartbeat frames from the broker: %r'
         % (hb and hb._heartbeat_frames_received))
    ch = cchan(c)
    ch.queue_declare(n.q(), auto_delete=True)
    c.close()


@check
def frame_max_small(n):
    # content split over many 4 KB frames both ways
    c = pika.BlockingConnection(with_url_kw(frame_max=4096))
    eq(c._impl.params.frame_max, 4096, 'negotiated frame_max')
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    body = bytes(range(256)) * 400
    publish(ch, q, body)
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq(b == body, True, '100 KB body intact over 4 KB frames')
    c.close()


@check
def bad_password_403(n):
    try:
        pika.BlockingConnection(with_url(password='not-the-password'))
    except E.AMQPConnectionError as e:
        eq(connection_error_code(e), 403, 'connection.close code')
        return
    raise Fail('connected with a bad password')


@check
def unknown_vhost_530(n):
    try:
        pika.BlockingConnection(with_url(vhost='qe_no_such_vhost'))
    except E.AMQPConnectionError as e:
        eq(connection_error_code(e), 530, 'connection.close code')
        return
    raise Fail('opened an unknown vhost')


@check
def many_channels(n):
    c = connect()
    q = n.q()
    chans = [cchan(c) for _ in range(100)]
    chans[0].queue_declare(q)
    for i, ch in enumerate(chans):
        publish(ch, q, 'c%d' % i)
    eq(depth(chans[0], q), 100, 'one message from each of 100 channels')
    eq(len({ch.channel_number for ch in chans}), 100, 'distinct channel numbers')
    c.close()


@check
def channel_error_leaves_connection(n):
    c = connect()
    ch = cchan(c)
    channel_error(404, lambda: ch.queue_declare(n.q('missing'), passive=True))
    true(c.is_open, 'the connection survives a channel error')
    ch2 = c.channel()
    ch2.queue_declare(n.q(), auto_delete=True)
    c.close()


@check
def channels_independent(n):
    # an error on one channel does not close the others
    c = connect()
    a, b = cchan(c), cchan(c)
    q = n.q()
    a.queue_declare(q)
    channel_error(404, lambda: b.queue_declare(n.q('missing'), passive=True))
    publish(a, q, 'still here')
    eq(get_bodies(a, q), ['still here'], 'the other channel works')
    c.close()


@check
def unknown_exchange_type_503(n):
    c = connect()
    ch = cchan(c)
    try:
        ch.exchange_declare(n.x(), exchange_type='no-such-type')
        raise Fail('declared an exchange of an unknown type')
    except E.ConnectionClosedByBroker as e:
        eq(e.reply_code, 503, 'connection closed with')
    except E.ChannelClosedByBroker as e:
        raise Fail('channel closed (%d) where RabbitMQ closes the connection (503)'
                   % e.reply_code)


@check
def silent_client_dropped(n):
    # a client that sends nothing (no heartbeats) for several heartbeat
    # intervals is disconnected by the broker
    c = pika.BlockingConnection(with_url_kw(heartbeat=1))
    time.sleep(5)   # no I/O: pika sends no heartbeat
    try:
        c.process_data_events(time_limit=1)
        ch = c.channel()
        ch.exchange_declare('amq.direct', passive=True)
    except E.AMQPConnectionError:
        true(c.is_closed, 'the connection is closed')
        return
    raise Fail('the broker kept a silent connection for 5 heartbeat intervals')


@check
def oversize_frame_501(n):
    # a client that sends frames larger than the negotiated frame_max:
    # the broker closes the connection (501 FRAME_ERROR)
    c = pika.BlockingConnection(with_url_kw(frame_max=4096))
    ch = c.channel()
    q = n.q()
    ch.queue_declare(q)
    c._impl._body_max_length = 131072 - 8   # pika now sends 128 KB body frames
    try:
        ch.basic_publish('', q, b'x' * 100000)
        c.process_data_events(time_limit=2)
        ch.queue_declare(q, passive=True)
    except E.ConnectionClosedByBroker as e:
        eq(e.reply_code, 501, 'connection closed with')
        return
    except E.AMQPConnectionError as e:
        raise Fail('the connection was dropped without connection.close: %s' % type(e).__name__)
    raise Fail('a frame over frame_max was accepted')


@check
def channels_do_not_block_each_other(n):
    # a consumer waiting on an empty queue does not hold up another channel
    # of the same connection
    c = connect()
    waiting, other = c.channel(), cchan(c)
    qa, qb = n.q('empty'), n.q('busy')
    waiting.queue_declare(qa)
    other.queue_declare(qb)
    got = []
    waiting.basic_consume(qa, lambda c_, m, p, b: got.append(b), auto_ack=True)
    t0 = time.monotonic()
    for i in range(20):
        other.basic_publish('', qb, b'%d' % i)
    eq(depth(other, qb), 20, 'publishes on the other channel')
    other.basic_publish('', qa, b'wake up')
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    elapsed = time.monotonic() - t0
    eq(got, [b'wake up'], 'the waiting consumer gets the message')
    true(elapsed < 5, '20 confirmed publishes and a delivery took %.1f s' % elapsed)
    c.close()


# ---------------------------------------------------------------------------
# queues
# ---------------------------------------------------------------------------

@check
def queue_declare_counts(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ok = ch.queue_declare(q).method
    eq((ok.queue, ok.message_count, ok.consumer_count), (q, 0, 0), 'new queue')
    publish(ch, q, 'a', 'b', 'c')
    ok = ch.queue_declare(q).method
    eq((ok.message_count, ok.consumer_count), (3, 0), 'redeclare')
    ch2 = c.channel()
    ch2.basic_qos(prefetch_count=1)
    ch2.basic_consume(q, lambda *a: None)
    settle(c)
    ok = ch.queue_declare(q, passive=True).method
    eq((ok.message_count, ok.consumer_count), (2, 1),
       'passive declare with a consumer holding one (ready, consumers)')
    c.close()


@check
def queue_declare_passive_missing_404(n):
    c = connect()
    ch = cchan(c)
    channel_error(404, lambda: ch.queue_declare(n.q('missing'), passive=True))
    true(ch.is_closed, 'the channel is closed')
    true(c.is_open, 'the connection is open')
    c.close()


@check
def queue_declare_different_durable_406(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q, durable=False)
    channel_error(406, lambda: ch.queue_declare(q, durable=True))
    c.close()


@check
def queue_declare_different_args_406(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q, arguments={'x-message-ttl': 1000})
    channel_error(406, lambda: ch.queue_declare(q, arguments={'x-message-ttl': 2000}))
    ch = cchan(c)
    ch.queue_declare(q, arguments={'x-message-ttl': 1000})  # the same: ok
    c.close()


@check
def queue_declare_server_named(n):
    c = connect()
    ch = cchan(c)
    a = ch.queue_declare('', exclusive=True).method.queue
    b = ch.queue_declare('', exclusive=True).method.queue
    true(a.startswith('amq.gen-') and b.startswith('amq.gen-'), 'amq.gen- names: %s %s' % (a, b))
    true(a != b, 'two names')
    publish(ch, a, 'x')
    eq(get_bodies(ch, a), ['x'], 'usable by its name')
    c.close()


@check
def queue_declare_amq_prefix_403(n):
    c = connect()
    ch = cchan(c)
    channel_error(403, lambda: ch.queue_declare('amq.chk-reserved'))
    c.close()


@check
def queue_declare_unknown_argument_ok(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q, arguments={'x-qe-no-such-argument': 'whatever'})
    publish(ch, q, 'a')
    eq(depth(ch, q), 1, 'usable')
    c.close()


@check
def exclusive_queue_other_connection_405(n):
    a = connect()
    q = n.q()
    a.channel().queue_declare(q, exclusive=True)
    b = connect()
    ch = b.channel()
    channel_error(405, lambda: ch.queue_declare(q, passive=True), what='passive declare')
    ch = b.channel()
    channel_error(405, lambda: ch.basic_consume(q, lambda *x: None), what='consume')
    ch = b.channel()
    channel_error(405, lambda: ch.queue_delete(q), what='delete')
    true(b.is_open, 'the other connection is still open')
    b.close()
    a.close()


@check
def exclusive_queue_deleted_on_close(n):
    a = connect()
    q = n.q()
    ch = a.channel()
    ch.queue_declare(q, exclusive=True)
    publish(ch, q, 'lost')
    a.close()
    c = connect()
    ch = cchan(c)
    channel_error(404, lambda: ch.queue_declare(q, passive=True))
    c.close()


@check
def auto_delete_after_last_consumer(n):
    c = connect()
    q = n.q()
    ch = cchan(c)
    ch.queue_declare(q, auto_delete=True)
    t1 = ch.basic_consume(q, lambda *x: None)
    t2 = ch.basic_consume(q, lambda *x: None)
    ch.basic_cancel(t1)
    eq(ch.queue_declare(q, passive=True).method.consumer_count, 1, 'one consumer left')
    ch.basic_cancel(t2)
    # the deletion may follow the cancel-ok: up to 2 s
    deadline = time.monotonic() + 2
    while True:
        try:
            c.channel().queue_declare(q, passive=True)
        except E.ChannelClosedByBroker as e:
            eq(e.reply_code, 404, 'passive declare after the last cancel')
            break
        true(time.monotonic() < deadline, 'deleted within 2 s of the last cancel')
        time.sleep(0.05)
    c.close()


@check
def auto_delete_without_consumers_stays(n):
    c = connect()
    q = n.q()
    ch = cchan(c)
    ch.queue_declare(q, auto_delete=True)
    c.close()
    c = connect()
    ch = cchan(c)
    eq(ch.queue_declare(q, passive=True).method.queue, q, 'still there')
    c.close()


@check
def queue_purge_count(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, *'abcde')
    eq(ch.queue_purge(q).method.message_count, 5, 'purge-ok message_count')
    eq(ch.queue_purge(q).method.message_count, 0, 'second purge')
    eq(depth(ch, q), 0, 'empty')
    c.close()


@check
def queue_purge_keeps_unacked(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a', 'b', 'c')
    m, _, _ = ch.basic_get(q)
    eq(ch.queue_purge(q).method.message_count, 2, 'purge counts the ready ones')
    ch.close()   # the unacked one comes back
    ch = cchan(c)
    eq(get_bodies(ch, q), ['a'], 'the unacked one survived the purge')
    c.close()


@check
def queue_delete_count(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, *'abcd')
    eq(ch.queue_delete(q).method.message_count, 4, 'delete-ok message_count')
    channel_error(404, lambda: ch.queue_declare(q, passive=True))
    c.close()


@check
def queue_delete_missing_ok(n):
    c = connect()
    ch = cchan(c)
    eq(ch.queue_delete(n.q('missing')).method.message_count, 0, 'delete-ok')
    true(ch.is_open, 'channel open')
    c.close()


@check
def queue_delete_if_empty_406(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a')
    channel_error(406, lambda: ch.queue_delete(q, if_empty=True))
    ch = cchan(c)
    eq(depth(ch, q), 1, 'not deleted')
    c.close()


@check
def queue_delete_if_unused_406(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    ch.basic_consume(q, lambda *x: None)
    ch2 = c.channel()
    channel_error(406, lambda: ch2.queue_delete(q, if_unused=True))
    c.close()


@check
def queue_bind_missing_exchange_404(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    channel_error(404, lambda: ch.queue_bind(q, n.x('missing'), 'k'))
    c.close()


@check
def queue_bind_missing_queue_404(n):
    c = connect()
    ch = cchan(c)
    x = n.x()
    ch.exchange_declare(x, 'direct')
    channel_error(404, lambda: ch.queue_bind(n.q('missing'), x, 'k'))
    c.close()


@check
def queue_unbind(n):
    c = connect()
    ch = cchan(c)
    q, x = n.q(), n.x()
    ch.exchange_declare(x, 'direct')
    ch.queue_declare(q)
    ch.queue_bind(q, x, 'k')
    ch.basic_publish(x, 'k', b'bound')
    ch.queue_unbind(q, x, 'k')
    ch.basic_publish(x, 'k', b'unbound')
    eq(get_bodies(ch, q), ['bound'], 'only the message sent while bound')
    c.close()


@check
def queue_bind_twice_idempotent(n):
    c = connect()
    ch = cchan(c)
    q, x = n.q(), n.x()
    ch.exchange_declare(x, 'direct')
    ch.queue_declare(q)
    ch.queue_bind(q, x, 'k')
    ch.queue_bind(q, x, 'k')
    ch.basic_publish(x, 'k', b'once')
    eq(get_bodies(ch, q), ['once'], 'delivered once')
    c.close()


# ---------------------------------------------------------------------------
# exchanges
# ---------------------------------------------------------------------------

@check
def exchange_declare_types(n):
    c = connect()
    ch = cchan(c)
    for t in ('direct', 'fanout', 'topic', 'headers'):
        ch.exchange_declare(n.x(t), exchange_type=t, durable=True)
        ch.exchange_declare(n.x(t), exchange_type=t, passive=True)
    c.close()


@check
def exchange_declare_passive_missing_404(n):
    c = connect()
    ch = cchan(c)
    channel_error(404, lambda: ch.exchange_declare(n.x('missing'), passive=True))
    c.close()


@check
def exchange_redeclare_other_type_406(n):
    c = connect()
    ch = cchan(c)
    x = n.x()
    ch.exchange_declare(x, 'direct')
    channel_error(406, lambda: ch.exchange_declare(x, 'fanout'))
    c.close()


@check
def exchange_delete_missing_ok(n):
    c = connect()
    ch = cchan(c)
    ch.exchange_delete(n.x('missing'))
    true(ch.is_open, 'channel open')
    c.close()


@check
def exchange_delete_removes_bindings(n):
    c = connect()
    ch = cchan(c)
    q, x = n.q(), n.x()
    ch.exchange_declare(x, 'fanout')
    ch.queue_declare(q)
    ch.queue_bind(q, x)
    ch.exchange_delete(x)
    channel_error(404, lambda: ch.exchange_declare(x, passive=True))
    ch = cchan(c)
    ch.exchange_declare(x, 'fanout')
    ch.basic_publish(x, '', b'not bound any more')
    eq(depth(ch, q), 0, 'the binding went with the exchange')
    c.close()


@check
def exchange_bind_e2e(n):
    c = connect()
    ch = cchan(c)
    src, dst, q = n.x('src'), n.x('dst'), n.q()
    ch.exchange_declare(src, 'topic')
    ch.exchange_declare(dst, 'fanout')
    ch.queue_declare(q)
    ch.queue_bind(q, dst)
    ch.exchange_bind(dst, src, 'a.*')
    ch.basic_publish(src, 'a.b', b'through two exchanges')
    ch.basic_publish(src, 'b.a', b'not matched')
    ch.exchange_unbind(dst, src, 'a.*')
    ch.basic_publish(src, 'a.c', b'after the unbind')
    eq(get_bodies(ch, q), ['through two exchanges'], 'routed through the exchange binding')
    c.close()


@check
def publish_internal_exchange_403(n):
    c = connect()
    ch = c.channel()
    x = n.x()
    ch.exchange_declare(x, 'fanout', internal=True)
    channel_error(403, lambda: ch.basic_publish(x, '', b'x'), ch)
    c.close()


@check
def publish_missing_exchange_404(n):
    c = connect()
    ch = cchan(c)
    channel_error(404, lambda: ch.basic_publish(n.x('missing'), 'k', b'x'), ch)
    true(c.is_open, 'the connection is open')
    c.close()


@check
def default_exchange_routes_by_queue_name(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    ch.basic_publish('', q, b'direct to the queue')
    ch.basic_publish('amq.direct', q, b'not bound to amq.direct')
    eq(get_bodies(ch, q), ['direct to the queue'], 'the default exchange only')
    c.close()


@check
def fanout_ignores_routing_key(n):
    c = connect()
    ch = cchan(c)
    x = n.x()
    ch.exchange_declare(x, 'fanout')
    qs = [n.q('a'), n.q('b')]
    for q in qs:
        ch.queue_declare(q)
        ch.queue_bind(q, x, 'whatever')
    ch.basic_publish(x, 'another', b'to all')
    eq([get_bodies(ch, q) for q in qs], [['to all'], ['to all']], 'both queues')
    c.close()


@check
def topic_wildcards(n):
    c = connect()
    ch = cchan(c)
    x = n.x()
    ch.exchange_declare(x, 'topic')
    pats = {'star': 'a.*.c', 'hash': 'a.#', 'mid': '#.c', 'exact': 'a.b.c'}
    for s, p in pats.items():
        ch.queue_declare(n.q(s))
        ch.queue_bind(n.q(s), x, p)
    for k in ('a.b.c', 'a.c', 'a', 'a.b.b.c', 'b.c', 'c', 'a.b'):
        ch.basic_publish(x, k, k.encode())
    got = {s: get_bodies(ch, n.q(s)) for s in pats}
    eq(got, {'star': ['a.b.c'], 'hash': ['a.b.c', 'a.c', 'a', 'a.b.b.c', 'a.b'],
             'mid': ['a.b.c', 'a.c', 'a.b.b.c', 'b.c', 'c'], 'exact': ['a.b.c']},
       'routed')
    c.close()


@check
def headers_exchange_all_any(n):
    c = connect()
    ch = cchan(c)
    x = n.x()
    ch.exchange_declare(x, 'headers')
    qa, qy = n.q('all'), n.q('any')
    ch.queue_declare(qa)
    ch.queue_declare(qy)
    ch.queue_bind(qa, x, '', arguments={'x-match': 'all', 'format': 'pdf', 'type': 'report'})
    ch.queue_bind(qy, x, '', arguments={'x-match': 'any', 'format': 'pdf', 'type': 'log'})
    for body, h in (('m1', {'format': 'pdf', 'type': 'report'}),
                    ('m2', {'format': 'pdf'}),
                    ('m3', {'type': 'log'}),
                    ('m4', {'format': 'zip', 'type': 'report'}),
                    ('m5', None)):
        ch.basic_publish(x, '', body.encode(), properties=pika.BasicProperties(headers=h))
    eq((get_bodies(ch, qa), get_bodies(ch, qy)), (['m1'], ['m1', 'm2', 'm3']), 'all, any')
    c.close()


@check
def alternate_exchange(n):
    c = connect()
    ch = cchan(c)
    x, ae = n.x(), n.x('ae')
    qm, qa = n.q('main'), n.q('unrouted')
    ch.exchange_declare(ae, 'fanout')
    ch.exchange_declare(x, 'direct', arguments={'alternate-exchange': ae})
    ch.queue_declare(qm)
    ch.queue_declare(qa)
    ch.queue_bind(qm, x, 'known')
    ch.queue_bind(qa, ae)
    ch.basic_publish(x, 'known', b'routed')
    ch.basic_publish(x, 'unknown', b'to the AE', properties=pika.BasicProperties(message_id='m2'))
    eq(get_bodies(ch, qm), ['routed'], 'main queue')
    m, p, b = ch.basic_get(qa, auto_ack=True)
    eq((b, m.exchange, m.routing_key, p.message_id), (b'to the AE', x, 'unknown', 'm2'),
       'the unroutable message in the AE queue (body, exchange, key, message_id)')
    c.close()


@check
def alternate_exchange_no_return(n):
    # a mandatory publish that the AE routes is not returned
    c = connect()
    ch = c.channel()
    x, ae, qa = n.x(), n.x('ae'), n.q('unrouted')
    ch.exchange_declare(ae, 'fanout')
    ch.exchange_declare(x, 'direct', arguments={'alternate-exchange': ae})
    ch.queue_declare(qa)
    ch.queue_bind(qa, ae)
    returned = []
    ch.add_on_return_callback(lambda *a: returned.append(a))
    ch.confirm_delivery()
    ch.basic_publish(x, 'nowhere', b'm', mandatory=True)
    settle(c)
    eq((len(returned), depth(ch, qa)), (0, 1), '(returned, in the AE queue)')
    c.close()


# ---------------------------------------------------------------------------
# publish, get, properties
# ---------------------------------------------------------------------------

@check
def basic_get_message_count(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a', 'b', 'c')
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq((b, m.message_count, m.redelivered, m.exchange, m.routing_key),
       (b'a', 2, False, '', q), 'get-ok (body, message_count, redelivered, exchange, key)')
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq(m.message_count, 1, 'second get-ok message_count')
    c.close()


@check
def basic_get_empty(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    eq(ch.basic_get(q), (None, None, None), 'get-empty')
    true(ch.is_open, 'channel open after get-empty')
    c.close()


@check
def basic_get_missing_queue_404(n):
    c = connect()
    ch = cchan(c)
    channel_error(404, lambda: ch.basic_get(n.q('missing')))
    c.close()


@check
def basic_get_delivery_tags(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a', 'b', 'c')
    tags = [ch.basic_get(q)[0].delivery_tag for _ in range(3)]
    eq(tags, [1, 2, 3], 'delivery tags per channel from 1')
    ch2 = c.channel()
    publish(ch2, q, 'd')
    eq(ch2.basic_get(q)[0].delivery_tag, 1, 'another channel starts at 1')
    c.close()


@check
def publish_order(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    bodies = ['m%03d' % i for i in range(50)]
    publish(ch, q, *bodies)
    eq(get_bodies(ch, q), bodies, 'FIFO')
    c.close()


@check
def properties_roundtrip(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    sent = dict(content_type='application/json', content_encoding='gzip',
                headers={'h': 'v'}, delivery_mode=2, priority=7,
                correlation_id='corr-1', reply_to='reply.q', expiration='600000',
                message_id='msg-1', timestamp=1700000000, type='order.created',
                user_id=params().credentials.username, app_id='pika_checks',
                cluster_id='cl')
    ch.basic_publish('', q, b'{}', properties=pika.BasicProperties(**sent))
    m, p, b = ch.basic_get(q, auto_ack=True)
    for k, v in sorted(sent.items()):
        eq(getattr(p, k), v, 'property %s' % k)
    c.close()


@check
def properties_absent(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    ch.basic_publish('', q, b'bare')
    m, p, b = ch.basic_get(q, auto_ack=True)
    for k in ('content_type', 'content_encoding', 'headers', 'delivery_mode', 'priority',
              'correlation_id', 'reply_to', 'expiration', 'message_id', 'timestamp',
              'type', 'user_id', 'app_id', 'cluster_id'):
        eq(getattr(p, k), None, 'property %s absent' % k)
    c.close()


@check
def priority_zero_kept(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    ch.basic_publish('', q, b'p', properties=pika.BasicProperties(priority=0, delivery_mode=1))
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq((p.priority, p.delivery_mode), (0, 1), 'priority 0 and delivery_mode 1 come back')
    c.close()


@check
def user_id_mismatch_406(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    channel_error(406, lambda: ch.basic_publish(
        '', q, b'x', properties=pika.BasicProperties(user_id='someone-else')), ch)
    c.close()


@check
def headers_field_types(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    ts = datetime.datetime(2024, 2, 29, 12, 34, 56)
    headers = {
        'str': 'text é', 'empty': '', 'int': 42, 'negative': -7,
        'long': 2 ** 40, 'decimal': decimal.Decimal('12.345'),
        'timestamp': ts, 'true': True, 'false': False,
        'bytes': b'\x00\x01\xfe\xff', 'none': None,
        'table': {'inner': 'x', 'n': 1, 'deeper': {'y': [1, 'two']}},
        'array': [1, 'two', True, None, {'k': 'v'}, [b'\x00'], decimal.Decimal('-0.5')],
        'empty_table': {}, 'empty_array': [],
    }
    ch.basic_publish('', q, b'h', properties=pika.BasicProperties(headers=headers))
    m, p, b = ch.basic_get(q, auto_ack=True)
    got = p.headers
    for k, v in sorted(headers.items(), key=lambda kv: kv[0]):
        eq(got.get(k, 'MISSING'), v, 'header %s' % k)
        # pika decodes a long-long ('l') as pika.compat.long, an int
        eq(int if isinstance(got.get(k), int) and not isinstance(got.get(k), bool)
           else type(got.get(k)), type(v), 'header %s type' % k)
    eq(sorted(got), sorted(headers), 'header names')
    c.close()


@check
def expiration_string_kept(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    ch.basic_publish('', q, b'e', properties=pika.BasicProperties(expiration='0060000'))
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq(p.expiration, '0060000', 'expiration as the same string')
    c.close()


@check
def body_empty(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    ch.basic_publish('', q, b'')
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq(b, b'', 'empty body')
    c.close()


@check
def body_binary(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    body = bytes(range(256)) * 3
    ch.basic_publish('', q, body)
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq(b, body, 'every byte value')
    c.close()


@check
def body_1mb(n):
    c = connect()
    ch = c.channel()
    q = n.q()
    ch.queue_declare(q, durable=True)
    body = os.urandom(1024 * 1024)
    ch.confirm_delivery()
    ch.basic_publish('', q, body, properties=pika.BasicProperties(delivery_mode=2))
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq((len(b), b == body), (len(body), True), '1 MB body (length, intact)')
    _, got = consume_one_large(c, q, body)
    eq(got, True, '1 MB through basic.consume')
    c.close()


def consume_one_large(c, q, body):
    ch = c.channel()
    ch.basic_publish('', q, body)
    tag, got = consume_n(c, ch, q, 1, auto_ack=True)
    return tag, len(got) == 1 and got[0][2] == body


@check
def routing_key_utf8_255(n):
    c = connect()
    ch = cchan(c)
    x, q = n.x(), n.q()
    ch.exchange_declare(x, 'direct')
    ch.queue_declare(q)
    key = 'clé.' + 'k' * 250
    key = key[:255 - (len(key.encode()) - len(key))]
    ch.queue_bind(q, x, key)
    ch.basic_publish(x, key, b'long key')
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq((m.routing_key, b), (key, b'long key'), 'a 255-byte UTF-8 routing key')
    c.close()


# ---------------------------------------------------------------------------
# consumers
# ---------------------------------------------------------------------------

@check
def consume_order_and_tags(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    bodies = ['m%02d' % i for i in range(20)]
    publish(ch, q, *bodies)
    tag, got = consume_n(c, ch, q, 20, auto_ack=True)
    eq([b.decode() for _, _, b in got], bodies, 'in order')
    eq([m.delivery_tag for m, _, _ in got], list(range(1, 21)), 'delivery tags 1..20')
    true(all(m.consumer_tag == tag for m, _, _ in got), 'consumer tag on each delivery')
    c.close()


@check
def consume_client_tag(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'x')
    tag, got = consume_n(c, ch, q, 1, auto_ack=True, consumer_tag='my-tag')
    eq((tag, got[0][0].consumer_tag), ('my-tag', 'my-tag'), 'client-chosen tag')
    c.close()


@check
def consume_pushes_new_messages(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    got = []
    ch.basic_consume(q, lambda c_, m, p, b: got.append(b), auto_ack=True)
    settle(c, 0.2)
    p = connect()
    publish(p.channel(), q, 'late 1', 'late 2')
    p.close()
    deadline = time.monotonic() + 5
    while len(got) < 2 and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    eq(got, [b'late 1', b'late 2'], 'messages published after consume started')
    c.close()


@check
def consume_missing_queue_404(n):
    c = connect()
    ch = cchan(c)
    channel_error(404, lambda: ch.basic_consume(n.q('missing'), lambda *a: None))
    c.close()


@check
def basic_cancel_stops_delivery(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    got = []
    tag = ch.basic_consume(q, lambda c_, m, p, b: got.append(b), auto_ack=True)
    publish(ch, q, 'before')
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    ch.basic_cancel(tag)
    publish(ch, q, 'after')
    settle(c)
    eq(got, [b'before'], 'delivered before the cancel only')
    eq(depth(ch, q), 1, 'the later one waits in the queue')
    c.close()


@check
def consumer_cancel_notify_on_delete(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    cancelled = []
    ch.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
    tag = ch.basic_consume(q, lambda *a: None)
    other = connect()
    other.channel().queue_delete(q)
    other.close()
    deadline = time.monotonic() + 5
    while not cancelled and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    eq(cancelled, [tag], 'basic.cancel from the broker with the consumer tag')
    true(ch.is_open, 'the channel stays open')
    c.close()


@check
def exclusive_consumer_403(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    ch.basic_consume(q, lambda *a: None, exclusive=True)
    other = connect()
    och = other.channel()
    channel_error(403, lambda: och.basic_consume(q, lambda *a: None))
    other.close()
    c.close()


@check
def consume_when_exclusive_consumer_exists_elsewhere_403(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    ch.basic_consume(q, lambda *a: None)
    ch2 = c.channel()
    channel_error(403, lambda: ch2.basic_consume(q, lambda *a: None, exclusive=True))
    c.close()


@check
def round_robin_two_consumers(n):
    c = connect()
    q = n.q()
    a, b = cchan(c), cchan(c)
    a.queue_declare(q)
    got = {'a': [], 'b': []}
    a.basic_consume(q, lambda c_, m, p, body: got['a'].append(body), auto_ack=True)
    b.basic_consume(q, lambda c_, m, p, body: got['b'].append(body), auto_ack=True)
    p = c.channel()
    publish(p, q, *['m%d' % i for i in range(10)])
    deadline = time.monotonic() + 5
    while len(got['a']) + len(got['b']) < 10 and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    eq((len(got['a']) + len(got['b']), len(got['a']) > 0, len(got['b']) > 0), (10, True, True),
       'shared between the two (total, a got some, b got some)')
    c.close()


@check
def qos_prefetch_1(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a', 'b', 'c')
    ch.basic_qos(prefetch_count=1)
    tag, got = consume_limited(c, ch, q, 1)
    eq([b for _, _, b in got], [b'a'], 'one unacked delivery at a time')
    ch.basic_ack(got[0][0].delivery_tag)
    deadline = time.monotonic() + 5
    while len(got) < 2 and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    settle(c)
    eq([b for _, _, b in got], [b'a', b'b'], 'the next one after the ack')
    c.close()


@check
def qos_prefetch_3(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, *'abcdef')
    ch.basic_qos(prefetch_count=3)
    tag, got = consume_limited(c, ch, q, 3)
    eq(len(got), 3, 'three unacked deliveries')
    ch.basic_ack(got[2][0].delivery_tag, multiple=True)
    deadline = time.monotonic() + 5
    while len(got) < 6 and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    eq([b.decode() for _, _, b in got], list('abcdef'), 'the rest after a multiple ack')
    c.close()


@check
def qos_prefetch_per_consumer(n):
    # RabbitMQ: global=False applies to each new consumer of the channel
    c = connect()
    ch = cchan(c)
    q1, q2 = n.q('a'), n.q('b')
    for q in (q1, q2):
        ch.queue_declare(q)
        publish(ch, q, *'abc')
    ch.basic_qos(prefetch_count=1)
    got = []
    ch.basic_consume(q1, lambda c_, m, p, b: got.append(m.routing_key))
    ch.basic_consume(q2, lambda c_, m, p, b: got.append(m.routing_key))
    deadline = time.monotonic() + 5
    while len(got) < 2 and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    settle(c, 0.5)
    eq(sorted(got), sorted([q1, q2]), 'one each')
    c.close()


# ---------------------------------------------------------------------------
# acknowledgements
# ---------------------------------------------------------------------------

def unacked_on(c, q, bodies):
    ch = cchan(c)
    ch.queue_declare(q)
    publish(ch, q, *bodies)
    tag, got = consume_n(c, ch, q, len(bodies))
    return ch, got


@check
def ack_multiple(n):
    c = connect()
    q = n.q()
    ch, got = unacked_on(c, q, list('abcde'))
    ch.basic_ack(got[2][0].delivery_tag, multiple=True)
    ch.close()
    ch = cchan(c)
    eq(get_bodies(ch, q), ['d', 'e'], 'the two not acked came back')
    c.close()


@check
def ack_zero_multiple_acks_all(n):
    c = connect()
    q = n.q()
    ch, got = unacked_on(c, q, list('abc'))
    ch.basic_ack(0, multiple=True)
    ch.close()
    ch = cchan(c)
    eq(depth(ch, q), 0, 'delivery tag 0 with multiple acks everything')
    c.close()


@check
def nack_requeue_redelivered(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a', 'b')
    m, p, b = ch.basic_get(q)
    ch.basic_nack(m.delivery_tag, requeue=True)
    m, p, b = ch.basic_get(q)
    eq((b, m.redelivered), (b'a', True), 'back at the head, flagged redelivered')
    ch.basic_ack(m.delivery_tag)
    m, p, b = ch.basic_get(q)
    eq((b, m.redelivered), (b'b', False), 'the next one not redelivered')
    c.close()


@check
def nack_no_requeue_drops(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a')
    m, p, b = ch.basic_get(q)
    ch.basic_nack(m.delivery_tag, requeue=False)
    eq(depth(ch, q), 0, 'dropped')
    ch.close()
    ch = cchan(c)
    eq(depth(ch, q), 0, 'still gone after the channel closed')
    c.close()


@check
def nack_multiple(n):
    c = connect()
    q = n.q()
    ch, got = unacked_on(c, q, list('abcd'))
    ch.basic_nack(got[2][0].delivery_tag, multiple=True, requeue=True)
    ch.basic_cancel(got[0][0].consumer_tag)
    settle(c)
    ch2 = c.channel()
    res = []
    for _ in range(3):
        m, p, b = ch2.basic_get(q, auto_ack=True)
        res.append((b.decode(), m.redelivered))
    eq(res, [('a', True), ('b', True), ('c', True)], 'a, b, c requeued in order')
    c.close()


@check
def reject_requeue(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a')
    m, p, b = ch.basic_get(q)
    ch.basic_reject(m.delivery_tag, requeue=True)
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq((b, m.redelivered), (b'a', True), 'redelivered')
    c.close()


@check
def reject_no_requeue(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a', 'b')
    m, p, b = ch.basic_get(q)
    ch.basic_reject(m.delivery_tag, requeue=False)
    eq(get_bodies(ch, q), ['b'], 'a dropped')
    c.close()


@check
def bad_delivery_tag_406(n):
    c = connect()
    ch, other = cchan(c), c.channel()
    q = n.q()
    ch.queue_declare(q)
    channel_error(406, lambda: ch.basic_ack(99), ch)
    true(ch.is_closed, 'that channel is closed')
    true(other.is_open and c.is_open, 'the other channel and the connection are open')
    other.queue_declare(q, passive=True)
    c.close()


@check
def double_ack_406(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a')
    m, p, b = ch.basic_get(q)
    ch.basic_ack(m.delivery_tag)
    channel_error(406, lambda: ch.basic_ack(m.delivery_tag), ch)
    c.close()


@check
def ack_on_other_channel_406(n):
    c = connect()
    a, b = cchan(c), cchan(c)
    q = n.q()
    a.queue_declare(q)
    publish(a, q, 'x', 'y')
    m, _, _ = a.basic_get(q)
    channel_error(406, lambda: b.basic_ack(m.delivery_tag), b)
    a.basic_ack(m.delivery_tag)
    eq(depth(a, q), 1, 'the owner channel acks it')
    c.close()


@check
def ack_after_auto_ack_406(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a')
    m, _, _ = ch.basic_get(q, auto_ack=True)
    channel_error(406, lambda: ch.basic_ack(m.delivery_tag), ch)
    c.close()


@check
def basic_recover_requeue(n):
    c = connect()
    q = n.q()
    ch, got = unacked_on(c, q, list('ab'))
    ch.basic_ack(got[0][0].delivery_tag)
    ch.basic_cancel(got[0][0].consumer_tag)
    ch.basic_recover(requeue=True)
    m, p, b = cchan(c).basic_get(q, auto_ack=True)
    eq((b, m and m.redelivered), (b'b', True), 'the unacked one requeued by basic.recover')
    c.close()


@check
def channel_close_requeues_unacked(n):
    c = connect()
    q = n.q()
    ch, got = unacked_on(c, q, list('abc'))
    ch.basic_ack(got[0][0].delivery_tag)
    other = c.channel()
    eq(depth(other, q), 0, 'nothing ready while b and c are unacked')
    ch.close()
    res = []
    for _ in range(2):
        m, p, b = other.basic_get(q, auto_ack=True)
        res.append((b.decode(), m.redelivered))
    eq(res, [('b', True), ('c', True)], 'b and c requeued at once, redelivered')
    true(c.is_open, 'the connection goes on')
    c.close()


@check
def channel_close_requeues_only_its_own(n):
    c = connect()
    q = n.q()
    a, b = cchan(c), cchan(c)
    a.queue_declare(q)
    publish(a, q, 'for-a', 'for-b')
    ma, _, _ = a.basic_get(q)
    mb, _, _ = b.basic_get(q)
    a.close()
    eq(depth_after_close(c, b, q, 1), 1, 'only the closed channel\'s delivery is back')
    b.basic_ack(mb.delivery_tag)
    eq(get_bodies(b, q), ['for-a'], 'the requeued one')
    c.close()


@check
def channel_close_requeues_gets_before_close_ok(n):
    # a basic.get's delivery comes back when its channel closes, also in tx
    # mode; on mq-amqp by the time close-ok arrives, every time (it once
    # answered close-ok before the closed channel's own session had ended,
    # under load); see depth_after_close
    c = connect()
    q = n.q()
    b = cchan(c)
    b.queue_declare(q)
    for i in range(20):
        a = c.channel()
        if i % 2:
            a.tx_select()
        publish(b, q, 'm%d' % i)
        m, _, _ = a.basic_get(q)
        true(m is not None, 'got m%d' % i)
        a.close()
        eq(depth_after_close(c, b, q, 1), 1, 'round %d: back' % i)
        eq(get_bodies(b, q), ['m%d' % i], 'round %d: the same message' % i)
    c.close()


@check
def connection_close_requeues_unacked(n):
    c = connect()
    q = n.q()
    ch, got = unacked_on(c, q, list('ab'))
    c.close()
    c = connect()
    ch = cchan(c)
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq((b, m.redelivered, m.message_count), (b'a', True, 1), 'requeued, redelivered')
    c.close()


@check
def unacked_not_in_message_count(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a', 'b', 'c')
    ch.basic_get(q)
    ok = ch.queue_declare(q, passive=True).method
    eq(ok.message_count, 2, 'message_count counts ready messages only')
    c.close()


# ---------------------------------------------------------------------------
# queue arguments
# ---------------------------------------------------------------------------

@check
def message_ttl_expires(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q, arguments={'x-message-ttl': 500})
    publish(ch, q, 'short-lived')
    eq(depth(ch, q), 1, 'there at first')
    time.sleep(1.2)
    eq(ch.basic_get(q), (None, None, None), 'expired after the TTL')
    c.close()


@check
def per_message_expiration(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'short', expiration='300')
    publish(ch, q, 'long', expiration='600000')
    time.sleep(1.0)
    eq(get_bodies(ch, q), ['long'], 'the expired one is gone')
    c.close()


@check
def max_length_drop_head(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q, arguments={'x-max-length': 2})
    publish(ch, q, 'a', 'b', 'c')
    eq(get_bodies(ch, q), ['b', 'c'], 'the oldest dropped')
    c.close()


@check
def max_length_reject_publish(n):
    c = connect()
    ch = c.channel()
    q = n.q()
    ch.queue_declare(q, arguments={'x-max-length': 2, 'x-overflow': 'reject-publish'})
    ch.confirm_delivery()
    publish(ch, q, 'a', 'b')
    try:
        publish(ch, q, 'c')
        raise Fail('the third publish was acked')
    except E.NackError:
        pass
    eq(get_bodies(ch, q), ['a', 'b'], 'the newest refused')
    c.close()


@check
def max_length_bytes(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q, arguments={'x-max-length-bytes': 10})
    publish(ch, q, 'aaaa', 'bbbb', 'cccc')
    eq(get_bodies(ch, q), ['bbbb', 'cccc'], 'the oldest dropped past 10 bytes')
    c.close()


def x_death(props):
    d = (props.headers or {}).get('x-death')
    true(isinstance(d, list) and len(d) >= 1, 'an x-death header: %r' % (props.headers,))
    return d[0]


@check
def dead_letter_on_reject(n):
    c = connect()
    ch = cchan(c)
    q, dlx, dlq = n.q(), n.x('dlx'), n.q('dead')
    ch.exchange_declare(dlx, 'fanout')
    ch.queue_declare(dlq)
    ch.queue_bind(dlq, dlx)
    ch.queue_declare(q, arguments={'x-dead-letter-exchange': dlx})
    ch.basic_publish('', q, b'bad', properties=pika.BasicProperties(
        headers={'mine': 'kept'}, message_id='m1'))
    m, p, b = ch.basic_get(q)
    ch.basic_reject(m.delivery_tag, requeue=False)
    m, p, b = wait_get(ch, dlq)
    true(m is not None, 'dead-lettered')
    d = x_death(p)
    eq((b, m.exchange, m.routing_key, p.message_id, p.headers.get('mine')),
       (b'bad', dlx, q, 'm1', 'kept'), 'the dead letter (body, exchange, key, message_id, header)')
    eq((d.get('reason'), d.get('queue'), d.get('exchange'), d.get('routing-keys'), d.get('count')),
       ('rejected', q, '', [q], 1), 'x-death (reason, queue, exchange, routing-keys, count)')
    true(isinstance(d.get('time'), datetime.datetime), 'x-death time is a timestamp: %r' % d.get('time'))
    eq((p.headers.get('x-first-death-reason'), p.headers.get('x-first-death-queue')),
       ('rejected', q), 'x-first-death-*')
    c.close()


@check
def dead_letter_on_nack(n):
    c = connect()
    ch = cchan(c)
    q, dlx, dlq = n.q(), n.x('dlx'), n.q('dead')
    ch.exchange_declare(dlx, 'fanout')
    ch.queue_declare(dlq)
    ch.queue_bind(dlq, dlx)
    ch.queue_declare(q, arguments={'x-dead-letter-exchange': dlx})
    publish(ch, q, 'a', 'b')
    _, got = consume_n(c, ch, q, 2)
    ch.basic_nack(got[1][0].delivery_tag, multiple=True, requeue=False)
    eq(wait_bodies(ch, dlq, 2), ['a', 'b'], 'both dead-lettered, in order')
    c.close()


@check
def dead_letter_on_ttl(n):
    c = connect()
    ch = cchan(c)
    q, dlx, dlq = n.q(), n.x('dlx'), n.q('dead')
    ch.exchange_declare(dlx, 'direct')
    ch.queue_declare(dlq)
    ch.queue_bind(dlq, dlx, 'expired-key')
    ch.queue_declare(q, arguments={'x-dead-letter-exchange': dlx,
                                   'x-dead-letter-routing-key': 'expired-key',
                                   'x-message-ttl': 100})
    publish(ch, q, 'old')
    m, p, b = wait_get(ch, dlq)
    true(m is not None, 'dead-lettered on expiry')
    d = x_death(p)
    eq((b, m.routing_key, d.get('reason'), d.get('queue'), d.get('routing-keys')),
       (b'old', 'expired-key', 'expired', q, [q]),
       '(body, new routing key, reason, queue, original routing-keys)')
    c.close()


@check
def dead_letter_on_maxlen(n):
    c = connect()
    ch = cchan(c)
    q, dlq = n.q(), n.q('dead')
    ch.queue_declare(dlq)
    ch.queue_declare(q, arguments={'x-dead-letter-exchange': '',
                                   'x-dead-letter-routing-key': dlq,
                                   'x-max-length': 1})
    publish(ch, q, 'first', 'second')
    m, p, b = wait_get(ch, dlq)
    true(m is not None, 'the dropped head was dead-lettered')
    eq((b, x_death(p).get('reason')), (b'first', 'maxlen'), '(body, reason)')
    eq(get_bodies(ch, q), ['second'], 'the queue keeps the newest')
    c.close()


@check
def dead_letter_count_increments(n):
    c = connect()
    ch = cchan(c)
    q, dlq = n.q(), n.q('dead')
    ch.queue_declare(dlq)
    ch.queue_declare(q, arguments={'x-dead-letter-exchange': '',
                                   'x-dead-letter-routing-key': dlq})
    publish(ch, q, 'twice')
    for _ in range(2):
        m, p, b = ch.basic_get(q)
        ch.basic_reject(m.delivery_tag, requeue=False)
        m, p, b = wait_get(ch, dlq)
        # back into q with its headers, as a retry loop does
        ch.basic_publish('', q, b, properties=p)
    m, p, b = ch.basic_get(q, auto_ack=True)
    eq(x_death(p).get('count'), 2, 'x-death count for the same queue and reason')
    c.close()


@check
def max_priority(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q, arguments={'x-max-priority': 10})
    for body, prio in (('low', 1), ('none', None), ('high', 9), ('mid', 5), ('high2', 9)):
        publish(ch, q, body, **({'priority': prio} if prio is not None else {}))
    eq(get_bodies(ch, q), ['high', 'high2', 'mid', 'low', 'none'], 'by priority, FIFO within one')
    c.close()


@check
def queue_expires(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q, arguments={'x-expires': 300})
    # a declare renews the lease: look once, well after it ran out
    time.sleep(1.5)
    channel_error(404, lambda: c.channel().queue_declare(q, passive=True),
                  what='the unused queue deleted after x-expires: passive declare')
    c.close()


@check
def quorum_queue_declare(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q, durable=True, arguments={'x-queue-type': 'quorum'})
    publish(ch, q, 'a', 'b')
    m, p, b = ch.basic_get(q)
    ch.basic_nack(m.delivery_tag, requeue=True)
    res = [(x[2], x[0].redelivered) for x in [ch.basic_get(q, auto_ack=True) for _ in range(2)]]
    # a quorum queue requeues a nacked message behind the others
    eq(sorted(res), [(b'a', True), (b'b', False)], 'a quorum queue')
    c.close()


@check
def quorum_queue_non_durable_406(n):
    c = connect()
    ch = c.channel()
    channel_error(406, lambda: ch.queue_declare(n.q(), durable=False,
                                                arguments={'x-queue-type': 'quorum'}),
                  what='a non-durable quorum queue')
    c.close()


@check
def x_delayed_message(n):
    # RabbitMQ's delayed-message exchange (the rabbitmq_delayed_message_exchange
    # plugin, not in Debian's rabbitmq-server: skipped there)
    c = connect()
    ch = c.channel()
    x, q = n.x(), n.q()
    try:
        ch.exchange_declare(x, 'x-delayed-message', arguments={'x-delayed-type': 'direct'})
    except E.ConnectionClosedByBroker as e:
        if e.reply_code == 503:
            raise Skip('the broker has no x-delayed-message exchange type (plugin)')
        raise
    ch = cchan(c)
    ch.queue_declare(q)
    ch.queue_bind(q, x, 'k')
    ch.basic_publish(x, 'k', b'later', properties=pika.BasicProperties(headers={'x-delay': 1000}))
    ch.basic_publish(x, 'k', b'now')
    eq(get_bodies(ch, q), ['now'], 'at once: the undelayed one only')
    m, p, b = wait_get(ch, q, 5)
    eq(b, b'later', 'the delayed one after its delay')
    c.close()


@check
def stream_queue_offsets(n):
    c = connect()
    ch = c.channel()
    q = n.q()
    ch.queue_declare(q, durable=True, arguments={'x-queue-type': 'stream'})
    ch.confirm_delivery()
    publish(ch, q, *['s%d' % i for i in range(5)])
    ch.basic_qos(prefetch_count=10)
    tag, got = consume_n(c, ch, q, 5, arguments={'x-stream-offset': 'first'})
    eq([b.decode() for _, _, b in got], ['s%d' % i for i in range(5)], 'from the first')
    offs = [p.headers.get('x-stream-offset') for _, p, _ in got]
    eq(offs, list(range(offs[0], offs[0] + 5)), 'consecutive x-stream-offset headers')
    for m, _, _ in got:
        ch.basic_ack(m.delivery_tag)
    ch.basic_cancel(tag)
    tag, got = consume_n(c, ch, q, 2, arguments={'x-stream-offset': offs[3]})
    eq([b.decode() for _, _, b in got], ['s3', 's4'], 'from an offset')
    c.close()


def stream_with(c, q, n):
    """A stream queue q holding s0..s<n-1>"""
    ch = cchan(c)
    ch.queue_declare(q, durable=True, arguments={'x-queue-type': 'stream'})
    publish(ch, q, *['s%d' % i for i in range(n)])
    return ch


@check
def stream_offset_timestamp(n):
    c = connect()
    q = n.q()
    stream_with(c, q, 3)
    ch = c.channel()
    ch.basic_qos(prefetch_count=10)
    tag, got = consume_n(c, ch, q, 3,
                         arguments={'x-stream-offset': datetime.datetime(2020, 1, 1)})
    eq([b.decode() for _, _, b in got], ['s0', 's1', 's2'], 'from a timestamp before them all')
    c.close()


@check
def stream_offset_next(n):
    c = connect()
    q = n.q()
    pub = stream_with(c, q, 3)
    ch = c.channel()
    ch.basic_qos(prefetch_count=10)
    got = []
    ch.basic_consume(q, lambda c_, m, p, b: got.append(b.decode()),
                     arguments={'x-stream-offset': 'next'})
    settle(c, 0.5)
    publish(pub, q, 'new')
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    settle(c, 0.3)
    eq(got, ['new'], 'only what came after the consume')
    c.close()


@check
def stream_consume_without_prefetch_406(n):
    c = connect()
    q = n.q()
    stream_with(c, q, 1)
    ch = c.channel()
    channel_error(406, lambda: ch.basic_consume(q, lambda *a: None), ch,
                  what='a stream consumer without basic.qos')
    c.close()


@check
def stream_auto_ack_540(n):
    c = connect()
    q = n.q()
    stream_with(c, q, 1)
    ch = c.channel()
    ch.basic_qos(prefetch_count=10)
    try:
        ch.basic_consume(q, lambda *a: None, auto_ack=True)
        ch.queue_declare(q, passive=True)
    except E.ConnectionClosedByBroker as e:
        eq(e.reply_code, 540, 'connection closed with')
        return
    except E.ChannelClosedByBroker as e:
        raise Fail('channel closed (%d) where RabbitMQ closes the connection (540)' % e.reply_code)
    raise Fail('an auto-ack consumer of a stream accepted')


@check
def stream_basic_get_540(n):
    c = connect()
    q = n.q()
    stream_with(c, q, 1)
    ch = c.channel()
    try:
        ch.basic_get(q)
    except E.ConnectionClosedByBroker as e:
        eq(e.reply_code, 540, 'connection closed with')
        return
    except E.ChannelClosedByBroker as e:
        raise Fail('channel closed (%d) where RabbitMQ closes the connection (540)' % e.reply_code)
    raise Fail('basic.get on a stream accepted')


# ---------------------------------------------------------------------------
# transactions
# ---------------------------------------------------------------------------

@check
def tx_commit_publish(n):
    c = connect()
    ch, watcher = c.channel(), c.channel()
    q = n.q()
    watcher.queue_declare(q)
    ch.tx_select()
    publish(ch, q, 'a', 'b')
    eq(depth(watcher, q), 0, 'invisible before the commit')
    ch.tx_commit()
    eq(depth(watcher, q), 2, 'both after the commit')
    publish(ch, q, 'c')
    ch.tx_commit()
    eq(depth(watcher, q), 3, 'the channel stays transactional')
    c.close()


@check
def tx_rollback_publish(n):
    c = connect()
    ch = c.channel()
    q = n.q()
    ch.queue_declare(q)
    ch.tx_select()
    publish(ch, q, 'a', 'b')
    ch.tx_rollback()
    publish(ch, q, 'c')
    ch.tx_commit()
    eq(get_bodies(c.channel(), q), ['c'], 'only the committed publish')
    c.close()


@check
def tx_commit_ack(n):
    c = connect()
    ch = c.channel()
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a', 'b')
    ch.tx_select()
    m1, _, _ = ch.basic_get(q)
    m2, _, _ = ch.basic_get(q)
    ch.basic_ack(m1.delivery_tag)
    ch.tx_commit()
    ch.close()
    eq(get_bodies(c.channel(), q), ['b'], 'the committed ack took a; b came back')
    c.close()


@check
def tx_rollback_ack(n):
    c = connect()
    ch = c.channel()
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, 'a')
    ch.tx_select()
    m, _, _ = ch.basic_get(q)
    ch.basic_ack(m.delivery_tag)
    ch.tx_rollback()
    ch.close()
    c2 = c.channel()
    depth_after_close(c, c2, q, 1)
    m, _, b = c2.basic_get(q, auto_ack=True)
    eq((b, m and m.redelivered), (b'a', True), 'the rolled-back ack left it unacked; back on close')
    c.close()


@check
def tx_channels_independent(n):
    # each tx-mode channel has its own transaction
    c = connect()
    a, b = c.channel(), c.channel()
    q = n.q()
    a.queue_declare(q)
    a.tx_select()
    b.tx_select()
    publish(a, q, 'from a')
    publish(b, q, 'from b')
    a.tx_commit()
    b.tx_rollback()
    eq(get_bodies(c.channel(), q), ['from a'], 'the committed channel\'s publish only')
    c.close()


@check
def qos_prefetch_size_540(n):
    c = connect()
    ch = c.channel()
    try:
        ch.basic_qos(prefetch_size=1000, prefetch_count=10)
    except E.ConnectionClosedByBroker as e:
        eq(e.reply_code, 540, 'connection closed with')
        return
    except E.ChannelClosedByBroker as e:
        raise Fail('channel closed (%d) where RabbitMQ closes the connection (540)' % e.reply_code)
    raise Fail('prefetch_size accepted')


@check
def tx_commit_without_select_406(n):
    c = connect()
    ch = c.channel()
    channel_error(406, lambda: ch.tx_commit())
    ch = c.channel()
    channel_error(406, lambda: ch.tx_rollback(), what='rollback')
    c.close()


@check
def tx_select_after_confirm_406(n):
    c = connect()
    ch = c.channel()
    ch.confirm_delivery()
    channel_error(406, lambda: ch.tx_select())
    c.close()


@check
def confirm_after_tx_select_406(n):
    c = connect()
    ch = c.channel()
    ch.tx_select()
    channel_error(406, lambda: ch.confirm_delivery())
    c.close()


# ---------------------------------------------------------------------------
# publisher confirms and returns
# ---------------------------------------------------------------------------

@check
def confirms_ack_each_publish(n):
    c = connect()
    ch = c.channel()
    q = n.q()
    ch.queue_declare(q, durable=True)
    ch.confirm_delivery()
    for i in range(20):
        ch.basic_publish('', q, b'c', properties=pika.BasicProperties(delivery_mode=2))
    eq(depth(ch, q), 20, 'every confirmed publish is in the queue')
    c.close()


@check
def confirms_unroutable_acked(n):
    c = connect()
    ch = c.channel()
    ch.confirm_delivery()
    x = n.x()
    ch.exchange_declare(x, 'direct')
    ch.basic_publish(x, 'nowhere', b'dropped')   # acked: nothing to route to
    true(ch.is_open, 'acked')
    c.close()


@check
def confirms_async_delivery_tags(n):
    q = n.q()
    c = connect()
    c.channel().queue_declare(q)
    c.close()
    N = 50
    acked = set()
    nacked = set()
    state = {}

    def on_confirm(frame):
        m = frame.method
        tags = range(state.setdefault('low', 1), m.delivery_tag + 1) if m.multiple \
            else [m.delivery_tag]
        (acked if isinstance(m, Basic.Ack) else nacked).update(tags)
        if m.multiple:
            state['low'] = m.delivery_tag + 1
        if len(acked) + len(nacked) >= N:
            conn.close()

    def on_channel(ch):
        ch.confirm_delivery(on_confirm, callback=lambda _: [
            ch.basic_publish('', q, b'%d' % i) for i in range(N)])

    conn = pika.SelectConnection(params(), on_open_callback=lambda c_: c_.channel(
        on_open_callback=on_channel), on_close_callback=lambda c_, e: c_.ioloop.stop(),
        on_open_error_callback=lambda c_, e: c_.ioloop.stop())
    conn.ioloop.call_later(20, conn.close)
    conn.ioloop.start()
    eq((sorted(acked), sorted(nacked)), (list(range(1, N + 1)), []),
       'delivery tags 1..50 acked (multiple expanded)')
    c = connect()
    eq(depth(c.channel(), q), N, 'all in the queue')
    c.close()


@check
def unconfirmed_publishes_before_close_arrive(n):
    c = connect()
    ch = cchan(c)
    q = n.q()
    ch.queue_declare(q)
    publish(ch, q, *['m%d' % i for i in range(300)])
    c.close()
    c = connect()
    eq(depth(c.channel(), q), 300, 'every publish made before a clean close')
    c.close()


@check
def mandatory_return(n):
    c = connect()
    ch = c.channel()
    x = n.x()
    ch.exchange_declare(x, 'direct')
    returned = []
    ch.add_on_return_callback(
        lambda ch_, m, p, b: returned.append((m.reply_code, m.exchange, m.routing_key, b,
                                              p.correlation_id)))
    ch.basic_publish(x, 'nowhere', b'back', mandatory=True,
                     properties=pika.BasicProperties(correlation_id='c1'))
    deadline = time.monotonic() + 5
    while not returned and time.monotonic() < deadline:
        c.process_data_events(time_limit=0.05)
    eq(returned, [(312, x, 'nowhere', b'back', 'c1')], 'basic.return')
    c.close()


@check
def mandatory_return_before_ack(n):
    c = connect()
    ch = c.channel()
    ch.confirm_delivery()
    try:
        ch.basic_publish('', n.q('missing'), b'x', mandatory=True)
        raise Fail('no UnroutableError')
    except E.UnroutableError as e:
        eq([m.method.reply_code for m in e.messages], [312], 'returned before the ack')
    c.close()


@check
def immediate_not_implemented_540(n):
    c = connect()
    ch = c.channel()
    q = n.q()
    ch.queue_declare(q)
    try:
        ch._impl.basic_publish('', q, b'x', immediate=True) \
            if 'immediate' in ch._impl.basic_publish.__code__.co_varnames else \
            ch._impl._send_method(Basic.Publish(exchange='', routing_key=q, immediate=True),
                                  (pika.BasicProperties(), b'x'))
        ch.exchange_declare('amq.direct', passive=True)
    except E.ConnectionClosedByBroker as e:
        eq(e.reply_code, 540, 'connection closed with')
        return
    raise Fail('immediate publish accepted')


# ---------------------------------------------------------------------------

def run_one(fn):
    n = Names(fn.__name__)
    signal.alarm(30)
    try:
        n.clean()
        fn(n)
        line = 'ok %s' % fn.__name__
    except Skip as e:
        line = 'ok %s # skip %s' % (fn.__name__, e)
    except Fail as e:
        line = 'not ok %s: %s' % (fn.__name__, e)
    except Exception as e:  # noqa: B902 - any error is the check's failure
        line = 'not ok %s: %s: %s' % (fn.__name__, type(e).__name__, e)
    finally:
        signal.alarm(0)
    try:
        signal.alarm(30)
        n.clean()
    except Exception as e:  # noqa: B902
        if line.startswith('ok '):
            line = 'not ok %s: cleanup failed: %s: %s' % (fn.__name__, type(e).__name__, e)
    finally:
        signal.alarm(0)
    print(line, flush=True)
    return line.startswith('ok ')


class Timeout(Exception):
    pass


def on_alarm(sig, frame):
    raise Timeout('no answer in 30 s')


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    only = None
    for i, a in enumerate(sys.argv):
        if a == '--list':
            for fn in CHECKS:
                print(fn.__name__)
            return 0
        if a == '--only':
            only = set(sys.argv[i + 1].split(','))
            del sys.argv[i:i + 2]
            break
    url()  # the URL is read from argv or AMQP_URL
    todo = [fn for fn in CHECKS if only is None or fn.__name__ in only]
    failed = sum(0 if run_one(fn) else 1 for fn in todo)
    print('%d checks: %d passed, %d failed' % (len(todo), len(todo) - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
