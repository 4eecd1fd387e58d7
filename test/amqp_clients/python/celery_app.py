"""A small Celery application (Debian's python3-celery, over py-amqp):
its broker is AMQP_URL, its results come back over AMQP too (the rpc://
backend: a reply queue per client, reply_to and correlation_id).  Used by
celery_tasks.py, which starts a worker of it."""
import os
import time

from celery import Celery

app = Celery('qe_celery', broker=os.environ.get('AMQP_URL', 'amqp://guest:guest@127.0.0.1:5672/%2F'),
             backend='rpc://')
app.conf.update(
    task_default_queue='qe_celery',
    task_acks_late=True,            # ack after the task ran: a crash redelivers it
    broker_connection_retry_on_startup=False,
    broker_connection_max_retries=0,
    result_expires=None,
    worker_hijack_root_logger=False,
)


@app.task
def add(x, y):
    return x + y


@app.task
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@app.task
def fail(why):
    raise ValueError(why)


@app.task(bind=True, max_retries=2, default_retry_delay=0.2)
def flaky(self, key):
    # fails twice, then succeeds: retries are new publishes to the queue
    if self.request.retries < 2:
        raise self.retry(exc=RuntimeError('not yet'))
    return '%s after %d retries' % (key, self.request.retries)


@app.task
def slow(seconds):
    time.sleep(seconds)
    return seconds
