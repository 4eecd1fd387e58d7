--
-- workers_delay: delayed messages (delay, deliver_at, delay_level), their
-- errors, invisibility until due, no head-of-line blocking, waking blocked
-- consumers, nack with delay, mq.cancel, mq.queues.delayed.
-- Names start with "wd_".  Timing margins are >= 2x; no ids or
-- timestamps are printed.
--
\set VERBOSITY sqlstate
\ir test/regress/wait.sql

-- timers are fired by this database's worker: wait until the launcher has
-- started it (a new database gets one within mq.launcher_naptime)
SELECT wait_until($$SELECT EXISTS (SELECT 1 FROM pg_stat_activity
								 WHERE backend_type = 'queue_ext worker' AND datname = current_database())$$);

-- argument checks: out-of-range levels are errors, never clamped
SELECT mq.queue_declare('wd_q');
SELECT mq.send('wd_q', 'x', delay_level => 0);                             -- 22023
SELECT mq.send('wd_q', 'x', delay_level => 19);                            -- 22023
SELECT mq.send('wd_q', 'x', delay_level => -1);                            -- 22023
SELECT mq.send('wd_q', 'x', delay => '-1 s');                              -- 22023
SELECT mq.send('wd_q', 'x', deliver_at => 'infinity');                     -- 22008
SELECT mq.send('wd_q', 'x', deliver_at => '-infinity');                    -- 22008
SELECT mq.send('wd_q', 'x', delay => '1 s', deliver_at => now());          -- 22023
SELECT mq.send('wd_q', 'x', delay => '1 s', delay_level => 1);             -- 22023
SELECT mq.publish('', 'wd_q', 'x', delay_level => 99);                     -- 22023
\set VERBOSITY default
SELECT mq.send('wd_q', 'x', delay_level => 19);
\set VERBOSITY sqlstate
-- nothing was stored by the failed calls
SELECT queue, ready, unacked, delayed, total FROM mq.queues WHERE queue = 'wd_q';

-- zero delay and a due time in the past are ready at once
SELECT mq.send('wd_q', 'zero', delay => '0 s') IS NOT NULL AS sent;
SELECT mq.send('wd_q', 'past', deliver_at => now() - interval '1 hour') IS NOT NULL AS sent;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wd_q', 10, auto_ack => true);

-- a delayed message does not block ready messages published after it
SELECT mq.send('wd_q', 'late', delay => '3 s') IS NOT NULL AS sent;
SELECT mq.publish('', 'wd_q', 'later', deliver_at => clock_timestamp() + interval '60 s') IS NOT NULL AS sent;
SELECT mq.send('wd_q', 'now1') IS NOT NULL AS sent;
SELECT mq.send('wd_q', 'now2') IS NOT NULL AS sent;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wd_q', 10, auto_ack => true);
-- not visible before due: neither to consume nor to browse
SELECT count(*) FROM mq.consume('wd_q', 10);
SELECT count(*) FROM mq.browse('wd_q', 10);
SELECT pg_sleep(1);
SELECT count(*) FROM mq.consume('wd_q', 10);
-- a blocked consumer wakes when it becomes due (no earlier, ~3 s after publish)
SELECT convert_from(body, 'UTF8') AS body, redelivered, delivery_count
  FROM mq.consume('wd_q', 10, wait => '8 s', auto_ack => true);
SELECT count(*) FROM mq.consume('wd_q', 10);

-- precision: deliver_at at millisecond granularity, waited out by a blocked
-- consumer; it must not come early and must come well before the wait ends
CREATE TEMP TABLE wd_t (what text, due timestamptz, got timestamptz);
INSERT INTO wd_t SELECT 'deliver_at', clock_timestamp() + interval '1500 ms', NULL;
SELECT mq.send('wd_q', 'at', deliver_at => (SELECT due FROM wd_t WHERE what = 'deliver_at')) IS NOT NULL AS sent;
UPDATE wd_t SET got = (SELECT clock_timestamp() FROM mq.consume('wd_q', wait => '6 s', auto_ack => true))
 WHERE what = 'deliver_at';
SELECT what, got >= due AS not_early, got < due + interval '1 s' AS prompt FROM wd_t;

-- delay interval with ms, and delay_level 1 (= 1 s)
TRUNCATE wd_t;
INSERT INTO wd_t SELECT 'delay', clock_timestamp() + interval '700 ms', NULL;
SELECT mq.send('wd_q', 'd', delay => '700 ms') IS NOT NULL AS sent;
UPDATE wd_t SET got = (SELECT clock_timestamp() FROM mq.consume('wd_q', wait => '6 s', auto_ack => true))
 WHERE what = 'delay';
INSERT INTO wd_t SELECT 'level1', clock_timestamp() + interval '1 s', NULL;
SELECT mq.send('wd_q', 'l', delay_level => 1) IS NOT NULL AS sent;
UPDATE wd_t SET got = (SELECT clock_timestamp() FROM mq.consume('wd_q', wait => '6 s', auto_ack => true))
 WHERE what = 'level1';
-- the due time is computed at publish, before the INSERT above: allow 50 ms
SELECT what, got >= due - interval '50 ms' AS not_early, got < due + interval '1 s' AS prompt
  FROM wd_t ORDER BY what;

-- delay_level maps onto 1s 5s ... 2h: level 18 is 2 hours away, level 5 is 1 minute
SELECT mq.queue_declare('wd_lv');
SELECT count(mq.send('wd_lv', 'lv' || l, delay_level => l)) FROM generate_series(1, 18) l;
SELECT count(*) FROM mq.consume('wd_lv', 100);
SELECT pg_sleep(2.5);
-- only level 1 (1 s) is due after 2.5 s
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wd_lv', 100, auto_ack => true);
SELECT mq.queue_purge('wd_lv') >= 0 AS purged;

-- a delayed publish that rolls back is never delivered
BEGIN;
SELECT mq.send('wd_q', 'rolledback', delay => '500 ms') IS NOT NULL AS sent;
ROLLBACK;
SELECT count(*) FROM mq.consume('wd_q', wait => '1500 ms');

-- fanout: a delayed message routed to two queues is due in both
SELECT mq.exchange_declare('wd_fan', 'fanout');
SELECT mq.queue_declare('wd_f1');
SELECT mq.queue_declare('wd_f2');
SELECT mq.bind('wd_f1', 'wd_fan');
SELECT mq.bind('wd_f2', 'wd_fan');
SELECT mq.publish('wd_fan', '', 'fan', delay => '1 s') IS NOT NULL AS sent;
SELECT count(*) FROM mq.consume('wd_f1');
SELECT count(*) FROM mq.consume('wd_f2');
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wd_f1', wait => '5 s', auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wd_f2', wait => '5 s', auto_ack => true);

-- nack with delay: back to the queue, invisible until the delay has passed
SELECT mq.queue_declare('wd_n');
SELECT mq.send('wd_n', 'n1') IS NOT NULL AS sent;
CREATE TEMP TABLE wd_ids (name text, id bigint);
INSERT INTO wd_ids SELECT 'n1', msg_id FROM mq.consume('wd_n');
SELECT mq.nack('wd_n', ARRAY(SELECT id FROM wd_ids WHERE name = 'n1'), delay => '-1 s');  -- 22023
SELECT mq.nack('wd_n', ARRAY(SELECT id FROM wd_ids WHERE name = 'n1'), delay => '2 s');
SELECT ready, unacked, delayed, total FROM mq.queues WHERE queue = 'wd_n';
SELECT count(*) FROM mq.consume('wd_n');
SELECT pg_sleep(1);
SELECT count(*) FROM mq.consume('wd_n');
SELECT convert_from(body, 'UTF8') AS body, redelivered, delivery_count
  FROM mq.consume('wd_n', wait => '6 s', auto_ack => true);

-- mq.cancel
SELECT mq.queue_declare('wd_c');
INSERT INTO wd_ids SELECT 'c1', mq.send('wd_c', 'c1', delay => '1 hour');
INSERT INTO wd_ids SELECT 'c2', mq.send('wd_c', 'c2', delay => '1 s');
INSERT INTO wd_ids SELECT 'c3', mq.send('wd_c', 'c3');
SELECT mq.cancel((SELECT id FROM wd_ids WHERE name = 'c1'));       -- 1 queue
SELECT mq.cancel((SELECT id FROM wd_ids WHERE name = 'c1'));       -- twice: 55000
SELECT mq.cancel(1);                                               -- unknown: 42704
SELECT mq.cancel(NULL);                                            -- 22004
SELECT mq.cancel((SELECT id FROM wd_ids WHERE name = 'c3'));       -- ready, not delayed: 55000
SELECT pg_sleep(2);
SELECT mq.cancel((SELECT id FROM wd_ids WHERE name = 'c2'));       -- due: 55000
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wd_c', 10, auto_ack => true) ORDER BY 1;
SELECT mq.cancel((SELECT id FROM wd_ids WHERE name = 'c2'));       -- delivered: 55000
-- the cancelled one never comes
SELECT queue, ready, unacked, delayed, total FROM mq.queues WHERE queue = 'wd_c';
-- cancel in a transaction that rolls back leaves it pending
INSERT INTO wd_ids SELECT 'c4', mq.send('wd_c', 'c4', delay => '2 s');
BEGIN;
SELECT mq.cancel((SELECT id FROM wd_ids WHERE name = 'c4'));
ROLLBACK;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wd_c', wait => '8 s', auto_ack => true);
-- cancel of a fanned-out delayed message cancels it in every queue
INSERT INTO wd_ids SELECT 'f2', mq.publish('wd_fan', '', 'fan2', delay => '1 hour');
SELECT mq.cancel((SELECT id FROM wd_ids WHERE name = 'f2'));       -- 2 queues
SELECT queue, ready, delayed, total FROM mq.queues WHERE queue IN ('wd_f1', 'wd_f2') ORDER BY queue;

-- clean up
SELECT mq.queue_delete(q) >= 0 AS deleted
  FROM unnest(ARRAY['wd_q', 'wd_lv', 'wd_f1', 'wd_f2', 'wd_n', 'wd_c']) q;
SELECT mq.exchange_delete('wd_fan');
DROP FUNCTION wait_until(text, interval);
