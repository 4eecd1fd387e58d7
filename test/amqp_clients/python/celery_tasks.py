#!/usr/bin/python3
"""Celery over AMQP: a worker of celery_app (a subprocess, 2 threads) and a
client that calls its tasks -- a single call and its result, a group of
calls, a task that raises (its exception comes back), one that retries
twice, one with a countdown (held unacked by the worker until due) -- all
results over the rpc:// backend.  URL as the other scripts."""
import os
import subprocess
import sys
import tempfile
import time

from amqpcommon import url, say, check, finish, cleanup

os.environ['AMQP_URL'] = url()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from celery import group  # noqa: E402
from celery_app import app, add, fib, fail, flaky, slow  # noqa: E402

cleanup(queues=['qe_celery'])
log = tempfile.TemporaryFile(mode='w+')   # the worker's output (a pipe could fill up)
worker = subprocess.Popen(
    [sys.executable, '-m', 'celery', '-A', 'celery_app', 'worker', '--pool', 'threads',
     '--concurrency', '2', '--loglevel', 'WARNING', '--without-mingle', '--without-gossip',
     '-n', 'qe_worker@%h'],
    cwd=os.path.dirname(os.path.abspath(__file__)), env=dict(os.environ),
    stdout=log, stderr=subprocess.STDOUT, text=True)
try:
    r = add.delay(2, 3)
    say('add(2, 3) = %s' % r.get(timeout=30))
    check(r.get() == 5, 'add')
    g = group(fib.s(n) for n in range(10))().get(timeout=30)
    say('group of fib(0..9) = %s' % g)
    check(g == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34], 'group')
    try:
        fail.delay('on purpose').get(timeout=30)
        say('fail: no exception')
        check(False, 'the task\'s exception comes back')
    except ValueError as e:
        say('fail raised ValueError(%r)' % str(e))
    say('flaky: %s' % flaky.delay('k').get(timeout=30))
    t0 = time.monotonic()
    r = slow.apply_async((0.1,), countdown=1)
    v = r.get(timeout=30)
    waited = time.monotonic() - t0
    say('slow with a countdown of 1 s: %s, not before its time: %s' % (v, waited >= 0.9))
    check(waited >= 0.9, 'countdown honoured (%.2f s)' % waited)
    many = [add.delay(i, i) for i in range(30)]
    res = [m.get(timeout=30) for m in many]
    say('30 calls in flight: %s' % (res == [2 * i for i in range(30)]))
    check(res == [2 * i for i in range(30)], '30 calls')
finally:
    worker.terminate()
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()
    app.close()
log.seek(0)
out = log.read()
say('the worker stopped: %s' % (worker.returncode is not None))
# the worker's errors, but for the task that fails on purpose, to stderr
errors = [line for line in out.splitlines()
          if 'ERROR' in line and 'celery_app.fail[' not in line]
for line in errors[:20]:
    print('worker: ' + line, file=sys.stderr)
cleanup(queues=['qe_celery'])
finish('celery_tasks')
