--
-- broker_consume: consume / ack / nack / reject / extend_lease, leases,
-- transactional consume, prefetch, browse, mq.queues counts, purge.
-- Names start with "bc_".
--
\set VERBOSITY sqlstate
SELECT mq.queue_declare('bc_q');
SELECT count(*) FROM mq.send_batch('bc_q', ARRAY['m1', 'm2', 'm3', 'm4', 'm5']::text[]);
CREATE TEMP TABLE bc_got (msg_id bigint, body text);

-- browse does not consume
SELECT convert_from(body, 'UTF8') AS body, redelivered, delivery_count FROM mq.browse('bc_q', 3);
SELECT queue, ready, unacked, delayed, total, consumers FROM mq.queues WHERE queue = 'bc_q';
SELECT oldest_ready_age IS NOT NULL AS has_age FROM mq.queues WHERE queue = 'bc_q';

-- max_messages; FIFO order; columns
WITH c AS (SELECT * FROM mq.consume('bc_q', max_messages => 2)),
     i AS (INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM c)
SELECT convert_from(body, 'UTF8') AS body, queue, exchange, routing_key, redelivered,
       delivery_count, published_at <= now() AS published_before
  FROM c;
SELECT queue, ready, unacked, total, consumers FROM mq.queues WHERE queue = 'bc_q';
-- browse shows only ready messages
SELECT convert_from(body, 'UTF8') AS body FROM mq.browse('bc_q');

-- ack: returns the count; errors for twice, unknown, not delivered
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got WHERE body = 'm1'));
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got WHERE body = 'm1'));  -- twice: 55000
SELECT mq.ack('bc_q', ARRAY[123456789]::bigint[]);                           -- unknown: 55000
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM mq.browse('bc_q', 1)));        -- ready: 55000
SELECT mq.ack('bc_q', ARRAY[]::bigint[]);
SELECT mq.ack('bc_q', NULL);                                                 -- 22004
SELECT mq.ack('bc_q', ARRAY[NULL]::bigint[]);                                -- 22004
SELECT mq.ack('bc_q', '{{1},{2}}'::bigint[]);                                -- 2202E
SELECT mq.ack('bc_nosuch', ARRAY[1]::bigint[]);                              -- 42704
SELECT mq.ack(NULL, ARRAY[1]::bigint[]);                                     -- 22004
-- a failed ack of several ids acks none of them
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got WHERE body = 'm2') || 1::bigint);  -- 55000
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bc_q';

-- nack requeue: back to ready, redelivered, delivery_count 2, at the head
SELECT mq.nack('bc_q', ARRAY(SELECT msg_id FROM bc_got WHERE body = 'm2'));
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bc_q';
SELECT convert_from(body, 'UTF8') AS body, redelivered, delivery_count
  FROM mq.consume('bc_q', 1, auto_ack => true);
SELECT mq.nack('bc_q', ARRAY(SELECT msg_id FROM bc_got WHERE body = 'm2'));  -- settled: 55000

-- reject requeue, reject without requeue (no DLX: dropped)
TRUNCATE bc_got;
INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('bc_q', 2);
SELECT body FROM bc_got ORDER BY 1;
SELECT mq.reject('bc_q', (SELECT msg_id FROM bc_got WHERE body = 'm3'));
SELECT mq.reject('bc_q', (SELECT msg_id FROM bc_got WHERE body = 'm4'), requeue => false);
SELECT mq.reject('bc_q', NULL);                                              -- 22004
SELECT convert_from(body, 'UTF8') AS body, redelivered, delivery_count FROM mq.browse('bc_q');
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bc_q';

-- purge removes ready messages, not unacked ones
TRUNCATE bc_got;
INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('bc_q', 1);
SELECT body FROM bc_got;
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bc_q';
SELECT mq.queue_purge('bc_q');
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bc_q';
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got));
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bc_q';
SELECT mq.queue_purge('bc_q');

-- lease expiry: redelivered = true, delivery_count + 1; the expired
-- delivery can no longer be acked once it is redelivered
SELECT mq.send('bc_q', 'lease'::text) IS NOT NULL;
TRUNCATE bc_got;
INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('bc_q', lease => '1 s');
SELECT count(*) FROM mq.consume('bc_q');                      -- leased: nothing ready
SELECT pg_sleep(1.2);
SELECT msg_id = (SELECT msg_id FROM bc_got) AS same, redelivered, delivery_count
  FROM mq.consume('bc_q', lease => '100 ms');
SELECT pg_sleep(0.3);
SELECT redelivered, delivery_count FROM mq.consume('bc_q', lease => '1 hour');
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got));

-- extend_lease keeps a delivery ours past its first lease
SELECT mq.send('bc_q', 'extend'::text) IS NOT NULL;
TRUNCATE bc_got;
INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('bc_q', lease => '500 ms');
SELECT mq.extend_lease('bc_q', ARRAY(SELECT msg_id FROM bc_got), '1 hour');
SELECT pg_sleep(1);
SELECT count(*) FROM mq.consume('bc_q');                      -- still leased
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'bc_q';
SELECT mq.extend_lease('bc_q', ARRAY(SELECT msg_id FROM bc_got), '0 s');          -- 22023
SELECT mq.extend_lease('bc_q', ARRAY(SELECT msg_id FROM bc_got), '-1 s');         -- 22023
SELECT mq.extend_lease('bc_q', ARRAY(SELECT msg_id FROM bc_got), NULL);           -- 22004
SELECT mq.extend_lease('bc_q', ARRAY[42]::bigint[], '1 min');                     -- 55000
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got));

-- nack requeue with a delay: not ready until the delay passed
SELECT mq.send('bc_q', 'delayed retry'::text) IS NOT NULL;
TRUNCATE bc_got;
INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('bc_q');
SELECT mq.nack('bc_q', ARRAY(SELECT msg_id FROM bc_got), delay => '1 s');
SELECT count(*) FROM mq.consume('bc_q');                      -- not yet
SELECT mq.nack('bc_q', ARRAY(SELECT msg_id FROM bc_got), delay => '-1 s');   -- 22023 (and not ours)
SELECT pg_sleep(2);
SELECT convert_from(body, 'UTF8') AS body, redelivered, delivery_count
  FROM mq.consume('bc_q', auto_ack => true);

-- auto_ack: settled as returned, nothing unacked
SELECT count(*) FROM mq.send_batch('bc_q', ARRAY['a1', 'a2']::text[]);
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('bc_q', 10, auto_ack => true);
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bc_q';

-- consume + ROLLBACK: ready again, redelivered
SELECT mq.send('bc_q', 'tx'::text) IS NOT NULL;
BEGIN;
SELECT convert_from(body, 'UTF8') AS body, redelivered FROM mq.consume('bc_q');
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'bc_q';
ROLLBACK;
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'bc_q';
-- consume + ack in one transaction, then ROLLBACK: ready again
BEGIN;
TRUNCATE bc_got;
INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('bc_q');
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got));
ROLLBACK;
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'bc_q';
-- consume in a SAVEPOINT rolled back: ready again
BEGIN;
SAVEPOINT sp;
SELECT convert_from(body, 'UTF8') AS body, redelivered, delivery_count FROM mq.consume('bc_q');
ROLLBACK TO sp;
SELECT convert_from(body, 'UTF8') AS body, redelivered, delivery_count FROM mq.browse('bc_q');
COMMIT;
-- consumed (committed), ack in a transaction that rolls back: still leased to us, ack again works
TRUNCATE bc_got;
INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('bc_q');
BEGIN;
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got));
ROLLBACK;
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'bc_q';
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got));
-- consume + ack + COMMIT: gone for good
SELECT mq.send('bc_q', 'tx2'::text) IS NOT NULL;
BEGIN;
TRUNCATE bc_got;
INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('bc_q');
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got));
COMMIT;
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bc_q';
-- consuming what the same transaction published: not visible before commit
BEGIN;
SELECT mq.send('bc_q', 'own'::text) IS NOT NULL;
SELECT count(*) FROM mq.consume('bc_q');
COMMIT;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('bc_q', auto_ack => true);

-- prefetch bounds the unacked deliveries per consumer
SELECT count(*) FROM mq.send_batch('bc_q', ARRAY['p1', 'p2', 'p3', 'p4', 'p5']::text[]);
TRUNCATE bc_got;
INSERT INTO bc_got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('bc_q', 10, consumer => 'c1', prefetch => 2);
SELECT body FROM bc_got ORDER BY 1;
SELECT count(*) FROM mq.consume('bc_q', 10, consumer => 'c1', prefetch => 2);  -- full
SELECT mq.ack('bc_q', ARRAY(SELECT msg_id FROM bc_got WHERE body = 'p1'));
SELECT convert_from(body, 'UTF8') FROM mq.consume('bc_q', 10, consumer => 'c1', prefetch => 2);
-- another consumer name has its own window
SELECT convert_from(body, 'UTF8') FROM mq.consume('bc_q', 10, consumer => 'c2', prefetch => 1);
SELECT queue, ready, unacked, consumers FROM mq.queues WHERE queue = 'bc_q';
SELECT mq.queue_purge('bc_q');

-- a declared consumer's prefetch applies when consume is given none
SELECT mq.consumer_declare('bc_q', 'c3', prefetch => 1);
SELECT mq.consumer_declare('bc_q', 'c3', prefetch => 1);     -- idempotent
SELECT count(*) FROM mq.send_batch('bc_q', ARRAY['d1', 'd2', 'd3']::text[]);
SELECT convert_from(body, 'UTF8') FROM mq.consume('bc_q', 10, consumer => 'c3');
SELECT count(*) FROM mq.consume('bc_q', 10, consumer => 'c3');  -- full
SELECT mq.consumer_declare('bc_q', 'c3', prefetch => 2);     -- raised: room for one more
SELECT convert_from(body, 'UTF8') FROM mq.consume('bc_q', 10, consumer => 'c3');
-- an explicit prefetch wins (0 = no limit)
SELECT convert_from(body, 'UTF8') FROM mq.consume('bc_q', 10, consumer => 'c3', prefetch => 0);
SELECT mq.consumer_delete('bc_q', 'c3');
SELECT mq.consumer_delete('bc_q', 'c3');                     -- 42704
SELECT mq.consumer_declare('bc_q', 'c3', prefetch => -1);    -- 22023
SELECT mq.consumer_declare('bc_q', '', prefetch => 1);       -- 22023
SELECT mq.consumer_declare('bc_nosuch', 'c3');               -- 42704
SELECT mq.queue_purge('bc_q');

-- bad consume arguments
SELECT * FROM mq.consume('bc_q', 0);                          -- 22023
SELECT * FROM mq.consume('bc_q', 10001);                      -- 22023
SELECT * FROM mq.consume('bc_q', wait => '-1 s');             -- 22023
SELECT * FROM mq.consume('bc_q', lease => '0');               -- 22023
SELECT * FROM mq.consume('bc_q', prefetch => -1);             -- 22023
SELECT * FROM mq.consume('bc_nosuch');                        -- 42704
SELECT * FROM mq.consume(NULL);                               -- 22004
SELECT * FROM mq.browse('bc_q', 0);                           -- 22023
-- group_name on a classic queue: wrong_object_type
SELECT * FROM mq.consume('bc_q', group_name => 'g1');         -- 42809

-- wait: returns after the wait when nothing arrives
SELECT count(*) FROM mq.consume('bc_q', wait => '200 ms');

-- clean up
SELECT mq.queue_delete('bc_q');
