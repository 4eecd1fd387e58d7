#!/usr/bin/python3
"""Tutorial 1, hello world: a producer sends to queue 'tut.hello' through
the default exchange, a consumer (basic.consume, auto-ack) on its own
connection receives the messages in the order they were sent."""
import threading

from amqpcommon import connect, say, check, finish, cleanup

Q = 'tut.hello'
MESSAGES = ['Hello World!', 'Hello again', 'third']

cleanup(queues=[Q])

got = []
lines = []  # the consumer's part of the transcript, printed after the producer's
ready = threading.Event()


def consumer():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare(Q)
    ready.set()

    def on_message(ch, method, props, body):
        got.append(body.decode())
        lines.append(" [x] Received %r (routing key %s, redelivered %s)"
                     % (body.decode(), method.routing_key, method.redelivered))
        if len(got) == len(MESSAGES):
            ch.stop_consuming()

    ch.basic_consume(queue=Q, on_message_callback=on_message, auto_ack=True)
    conn.call_later(15, ch.stop_consuming)
    ch.start_consuming()
    conn.close()


t = threading.Thread(target=consumer)
t.start()
ready.wait(10)

conn = connect()
ch = conn.channel()
ch.queue_declare(Q)
for m in MESSAGES:
    ch.basic_publish(exchange='', routing_key=Q, body=m.encode())
    say(" [x] Sent %r" % m)
conn.close()
t.join()
for line in lines:
    say(line)

check(got == MESSAGES, 'received the messages in the order sent: %r' % got)
c = connect()
ch = c.channel()
ok = ch.queue_declare(Q, passive=True)
say('queue %s after: %d messages, %d consumers'
    % (Q, ok.method.message_count, ok.method.consumer_count))
c.close()
cleanup(queues=[Q])
finish('hello')
