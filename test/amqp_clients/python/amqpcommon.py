"""What the pika client scripts share: the broker's URL, a connection,
a transcript that the TAP test compares across brokers, and a check that
makes the script exit 1.

The URL comes from the first argument or the environment variable AMQP_URL
(default amqp://guest:guest@127.0.0.1:5672/%2F).  Every script uses names of
its own (a prefix per script), deletes what it declares before it starts and
after it ends, and prints only what RabbitMQ guarantees: broker-chosen names
(amq.gen-...) and timings are never printed.
"""
import os
import sys
import threading

import pika

DEFAULT_URL = 'amqp://guest:guest@127.0.0.1:5672/%2F'

failures = []
_out_lock = threading.Lock()


def url():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    return args[0] if args else os.environ.get('AMQP_URL', DEFAULT_URL)


def params(**kw):
    p = pika.URLParameters(url())
    # a broker that does not answer must not hang the test
    p.socket_timeout = 10
    p.blocked_connection_timeout = 30
    p.connection_attempts = 1
    for k, v in kw.items():
        setattr(p, k, v)
    return p


def connect(**kw):
    return pika.BlockingConnection(params(**kw))


def say(line):
    """One line of the transcript"""
    with _out_lock:
        print(line, flush=True)


def check(cond, what):
    """A check of the script's own: a failure is printed and remembered"""
    if not cond:
        failures.append(what)
        say('FAILED: %s' % what)
    return cond


def finish(name):
    if failures:
        say('%s: %d check(s) FAILED' % (name, len(failures)))
        sys.exit(1)
    say('%s: OK' % name)
    sys.exit(0)


def cleanup(queues=(), exchanges=()):
    """Delete queues and exchanges (missing ones are fine)"""
    c = connect()
    ch = c.channel()
    for q in queues:
        ch.queue_delete(q)
    for x in exchanges:
        ch.exchange_delete(x)
    c.close()


def drain(conn, until, timeout=10.0):
    """Run conn's I/O until until() is true or timeout seconds pass"""
    import time
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        conn.process_data_events(time_limit=0.05)
    return until()


class Subscriber(threading.Thread):
    """A consumer on its own connection: an exclusive server-named queue
    bound to exchange with each of keys, basic.consume with auto-ack; the
    bodies it received, in order, are in .got.  Start it, wait for .ready,
    publish, then .stop() and join."""

    def __init__(self, name, exchange, keys):
        super().__init__()
        self.name, self.exchange, self.keys = name, exchange, keys
        self.got = []
        self.queue = None
        self.ready = threading.Event()
        self._halt = threading.Event()

    def run(self):
        conn = connect()
        ch = conn.channel()
        ok = ch.queue_declare(queue='', exclusive=True)
        self.queue = ok.method.queue
        for k in self.keys:
            ch.queue_bind(exchange=self.exchange, queue=self.queue, routing_key=k)

        def on_message(ch, method, props, body):
            self.got.append((method.routing_key, body.decode()))

        ch.basic_consume(queue=self.queue, on_message_callback=on_message,
                         auto_ack=True)
        self.ready.set()
        while not self._halt.is_set():
            conn.process_data_events(time_limit=0.05)
        conn.close()

    def wait_for(self, n, timeout=10.0):
        import time
        deadline = time.monotonic() + timeout
        while len(self.got) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        return len(self.got) >= n

    def stop(self):
        self._halt.set()
        self.join()


def queue_exists(name):
    """Whether a passive declare of queue name succeeds (404 otherwise)"""
    c = connect()
    ch = c.channel()
    try:
        ch.queue_declare(name, passive=True)
        return True
    except pika.exceptions.ChannelClosedByBroker as e:
        if e.reply_code != 404:
            raise
        return False
    finally:
        if c.is_open:
            c.close()
