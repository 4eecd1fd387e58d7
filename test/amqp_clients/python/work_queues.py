#!/usr/bin/python3
"""Tutorial 2, work queues: a durable queue 'tut.task_queue', persistent
messages (delivery_mode 2), two workers with basic.qos(prefetch_count=1)
and manual acks.  Checks: every task is done exactly once; both workers
get work (prefetch 1: a busy worker is not handed more); a
worker that dies (its connection closed) before acking has its task
redelivered to the other worker, flagged redelivered."""
import threading
import time

import pika

from amqpcommon import connect, say, check, finish, cleanup

Q = 'tut.task_queue'
TASKS = ['task %02d%s' % (i, '.' * (i % 3)) for i in range(1, 13)]

cleanup(queues=[Q])
done = {}            # task -> [(worker, redelivered)]
lock = threading.Lock()


def worker(name, ready, stop):
    conn = connect()
    ch = conn.channel()
    ch.queue_declare(Q, durable=True)
    ch.basic_qos(prefetch_count=1)

    def on_message(ch, method, props, body):
        task = body.decode()
        time.sleep(0.02 * (1 + task.count('.')))   # the dots are the work
        with lock:
            done.setdefault(task, []).append((name, method.redelivered,
                                              props.delivery_mode))
        ch.basic_ack(delivery_tag=method.delivery_tag)

    ch.basic_consume(queue=Q, on_message_callback=on_message)
    ready.set()
    while not stop.is_set():
        conn.process_data_events(time_limit=0.05)
    conn.close()


# one worker that takes a task and dies without acking it
conn = connect()
ch = conn.channel()
# Publisher confirms: basic_publish returns once the broker has the
# message, so the other connection's basic.get below finds it.  Without
# them nothing orders this connection's publish before another
# connection's get (mq-amqp: the publish's commit may still be running
# when the get's statement starts; RabbitMQ does not promise it either).
ch.confirm_delivery()
ch.queue_declare(Q, durable=True)
ch.basic_publish('', Q, b'doomed task',
                 properties=pika.BasicProperties(delivery_mode=2))
dying = connect()
dch = dying.channel()
dch.basic_qos(prefetch_count=1)
m, p, b = dch.basic_get(Q, auto_ack=False)
say('the dying worker took %r (redelivered %s) and dies without acking'
    % (b.decode(), m.redelivered))
dying.close()

stop = threading.Event()
workers = []
for name in ('w1', 'w2'):
    ready = threading.Event()
    t = threading.Thread(target=worker, args=(name, ready, stop))
    t.start()
    ready.wait(10)
    workers.append(t)

for task in TASKS:
    ch.basic_publish('', Q, task.encode(),
                     properties=pika.BasicProperties(delivery_mode=2))
    say(' [x] Sent %r' % task)

deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    with lock:
        if len(done) == len(TASKS) + 1:
            break
    time.sleep(0.05)
stop.set()
for t in workers:
    t.join()

for task in ['doomed task'] + TASKS:
    runs = done.get(task, [])
    say(' [x] Done %r %d time(s), redelivered %s, delivery_mode %s'
        % (task, len(runs), [r[1] for r in runs], [r[2] for r in runs]))
    check(len(runs) == 1, '%r done exactly once' % task)
check(done.get('doomed task', [(None, False)])[0][1] is True,
      'the dead worker\'s task came again flagged redelivered')
per = {w: sum(1 for r in done.values() for x in r if x[0] == w) for w in ('w1', 'w2')}
say('both workers did some work: %s' % all(n > 0 for n in per.values()))
check(all(n > 0 for n in per.values()), 'both workers got work: %r' % per)
ok = ch.queue_declare(Q, durable=True, passive=True)
say('queue %s after: %d messages' % (Q, ok.method.message_count))
conn.close()
cleanup(queues=[Q])
finish('work_queues')
