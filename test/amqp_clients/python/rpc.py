#!/usr/bin/python3
"""Tutorial 6, RPC: a server consumes 'tut.rpc_queue' (prefetch 1, manual
ack) and answers fib(n) to each request's reply_to with its correlation_id;
a client with an exclusive server-named callback queue sends several calls
at once and matches each reply to its call by correlation_id.  Checks every
answer, and that a reply with an unknown correlation_id is ignored."""
import threading
import uuid

import pika

from amqpcommon import connect, say, check, finish, cleanup, drain

Q = 'tut.rpc_queue'
CALLS = [0, 1, 7, 10, 20, 30]
cleanup(queues=[Q])


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


served = []
server_ready = threading.Event()
server_stop = threading.Event()


def server():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare(Q)
    ch.basic_qos(prefetch_count=1)

    def on_request(ch, method, props, body):
        n = int(body)
        served.append(n)
        ch.basic_publish(exchange='', routing_key=props.reply_to,
                         properties=pika.BasicProperties(
                             correlation_id=props.correlation_id),
                         body=str(fib(n)).encode())
        ch.basic_ack(delivery_tag=method.delivery_tag)

    ch.basic_consume(queue=Q, on_message_callback=on_request)
    server_ready.set()
    while not server_stop.is_set():
        conn.process_data_events(time_limit=0.05)
    conn.close()


t = threading.Thread(target=server)
t.start()
server_ready.wait(10)

conn = connect()
ch = conn.channel()
callback = ch.queue_declare(queue='', exclusive=True).method.queue
say('client callback queue is server-named: %s' % callback.startswith('amq.gen-'))
replies = {}
stray = []


def on_response(ch, method, props, body):
    if props.correlation_id in replies and replies[props.correlation_id] is None:
        replies[props.correlation_id] = int(body)
    else:
        stray.append(props.correlation_id)


ch.basic_consume(queue=callback, on_message_callback=on_response, auto_ack=True)
calls = {}
# a reply nobody asked for (as a late reply from an earlier run would be)
ch.basic_publish('', callback, b'-1',
                 properties=pika.BasicProperties(correlation_id='not-a-call'))
for n in CALLS:
    cid = str(uuid.uuid4())
    calls[cid] = n
    replies[cid] = None
    ch.basic_publish(exchange='', routing_key=Q,
                     properties=pika.BasicProperties(reply_to=callback,
                                                     correlation_id=cid),
                     body=str(n).encode())
    say(' [x] Requesting fib(%d)' % n)
drain(conn, lambda: all(v is not None for v in replies.values()), 20)
for cid, n in calls.items():
    say(' [.] fib(%d) = %s' % (n, replies[cid]))
    check(replies[cid] == fib(n), 'fib(%d) answered right' % n)
say('stray replies ignored: %d' % len(stray))
check(stray == ['not-a-call'], 'the reply with an unknown correlation_id: %r' % stray)
server_stop.set()
t.join()
check(sorted(served) == sorted(CALLS), 'the server served each call once')
conn.close()
cleanup(queues=[Q])
finish('rpc')
