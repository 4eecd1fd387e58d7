-- Stream queues: partitions, offsets, mq.read, retention (issue 12, first
-- slice: no consumer groups yet).
ALTER SYSTEM SET mq.maintenance_naptime = '100ms';
SELECT pg_reload_conf();

\ir test/regress/wait.sql

-- declare: defaults, and every argument checked
SELECT mq.queue_declare('st_one', type => 'stream');
SELECT mq.queue_declare('st_four', type => 'stream',
	arguments => '{"partitions": 4, "retention": "72 hours", "max_bytes": 10737418240}');
SELECT mq.queue_declare('st_four', type => 'stream',
	arguments => '{"partitions": 4, "retention": "72 hours", "max_bytes": 10737418240}');	-- idempotent
SELECT queue, type, durable, ready, unacked, arguments FROM mq.queues
 WHERE queue LIKE 'st_%' ORDER BY queue;
SELECT count(*) FROM pg_class c JOIN mq.cat_queue q ON c.relname ~ ('^q' || q.id || '_[0-9]+_0$')
 WHERE q.name = 'st_four';
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"partitions": 0}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"partitions": 257}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"partitions": 1.5}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"partitions": "2"}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"retention": "forever"}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"retention": "-1 hour"}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"retention": 3600}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"max_bytes": 0}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"max_bytes": "1GB"}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"durability": "async"}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"x-max-length": 10}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"x-message-ttl": 10}');
SELECT mq.queue_declare('st_bad', type => 'stream', arguments => '{"colour": "red"}');
SELECT mq.queue_declare('st_bad', type => 'stream', durable => false);
SELECT mq.queue_declare('st_bad', arguments => '{"partitions": 2}');	-- classic: unknown
SELECT mq.queue_declare('st_four', type => 'stream', arguments => '{"partitions": 2}');
SELECT count(*) FROM mq.cat_queue WHERE name = 'st_bad';

-- partition choice: explicit, by message_group, by key, round robin
SELECT mq.send('st_four', 'p2-a', partition => 2) IS NOT NULL AS sent;
SELECT mq.send('st_four', 'p2-b', partition => 2) IS NOT NULL AS sent;
SELECT mq.send('st_four', 'bad', partition => 4);
SELECT mq.send('st_four', 'bad', partition => -1);
SELECT mq.send('st_one', 'bad', partition => 1);
SELECT mq.send('st_four', 'g' || i, message_group => 'orders-17') IS NOT NULL AS sent
  FROM generate_series(1, 3) i;
SELECT mq.publish('', 'st_four', 'k' || i, key => 'customer-9') IS NOT NULL AS sent
  FROM generate_series(1, 3) i;
-- a group (or key) always lands in one partition, the same in every session
SELECT count(DISTINCT "partition") AS partitions, min(convert_from(body, 'UTF8')) AS first
  FROM generate_series(0, 3) p, mq.read('st_four', p)
 WHERE message_group = 'orders-17';
SELECT count(DISTINCT "partition") AS partitions
  FROM generate_series(0, 3) p, mq.read('st_four', p)
 WHERE key = 'customer-9';
SELECT "partition" AS group_partition FROM generate_series(0, 3) p, mq.read('st_four', p)
 WHERE message_group = 'orders-17' LIMIT 1 \gset
SELECT "partition" AS key_partition FROM generate_series(0, 3) p, mq.read('st_four', p)
 WHERE key = 'customer-9' LIMIT 1 \gset
-- the hash is of message_group before key
SELECT mq.send('st_four', 'both', message_group => 'orders-17', key => 'customer-9') IS NOT NULL AS sent;
SELECT "partition" = :group_partition AS by_group
  FROM generate_series(0, 3) p, mq.read('st_four', p) WHERE convert_from(body, 'UTF8') = 'both';
-- round robin: 8 messages without partition, group or key spread 2 per partition
SELECT count(*) FROM mq.send_batch('st_four', (SELECT array_agg('rr' || g) FROM generate_series(1, 8) g));
SELECT "partition", count(*) FROM generate_series(0, 3) p, mq.read('st_four', p)
 WHERE convert_from(body, 'UTF8') LIKE 'rr%' GROUP BY 1 ORDER BY 1;
-- a batch may name the partition of all its messages
SELECT count(*) FROM mq.send_batch('st_four', ARRAY['b1', 'b2'], partition => 3);
-- a batch's per-message keys pick their partitions as single sends' keys do
SELECT mq.queue_declare('st_keys', type => 'stream', arguments => '{"partitions": 4}');
SELECT count(*) FROM mq.send_batch('st_keys', ARRAY['kb1', 'kb2', 'kb3', 'kb4'],
	keys => ARRAY['customer-9', NULL, 'customer-9', 'customer-4']);
SELECT count(DISTINCT "partition") AS partitions, min("partition") = :key_partition AS as_single
  FROM generate_series(0, 3) p, mq.read('st_keys', p) WHERE key = 'customer-9';
SELECT mq.queue_delete('st_keys');

-- offsets: from 0 in each partition, one per entry in write order, with no
-- duplicates; every message once
SELECT "partition", count(*), min("offset"), max("offset"), count(DISTINCT "offset")
  FROM generate_series(0, 3) p, mq.read('st_four', p) GROUP BY 1 ORDER BY 1;
SELECT "offset", convert_from(body, 'UTF8') AS body FROM mq.read('st_four', 2) ORDER BY 1 LIMIT 2;
SELECT ready FROM mq.queues WHERE queue = 'st_four';

-- a rollback leaves a gap; later offsets go on after it
SELECT mq.send('st_one', 'm0') IS NOT NULL AS sent;
BEGIN;
SELECT mq.send('st_one', 'aborted') IS NOT NULL AS sent;
ROLLBACK;
SELECT mq.send('st_one', 'm2') IS NOT NULL AS sent;
SELECT mq.send('st_one', 'm3') IS NOT NULL AS sent;
SELECT mq.send('st_one', 'm4', delay_level => NULL) IS NOT NULL AS sent;
SELECT msg_id IS NOT NULL AS id, queue, exchange, routing_key, convert_from(body, 'UTF8') AS body,
	   redelivered, delivery_count, "partition", "offset"
  FROM mq.read('st_one', 0);

-- mq.read: by offset, max_messages, by time, default start
SELECT "offset", convert_from(body, 'UTF8') FROM mq.read('st_one', 0, from_offset => 2);
SELECT "offset", convert_from(body, 'UTF8') FROM mq.read('st_one', 0, from_offset => 1, max_messages => 2);
SELECT "offset" FROM mq.read('st_one', 0, from_offset => 5);
SELECT "offset" FROM mq.read('st_one', 0, from_offset => 1000);
SELECT "offset" FROM mq.read('st_one', 0, max_messages => 1);
SELECT count(*) FROM mq.read('st_one', 0, from_time => now() - interval '1 hour');
SELECT count(*) FROM mq.read('st_one', 0, from_time => now() + interval '1 hour');
SELECT pg_sleep(0.05);
SELECT clock_timestamp() AS mark \gset
SELECT pg_sleep(0.05);
SELECT mq.send('st_one', 'after-mark') IS NOT NULL AS sent;
SELECT mq.send('st_one', 'after-mark-2') IS NOT NULL AS sent;
SELECT "offset", convert_from(body, 'UTF8') FROM mq.read('st_one', 0, from_time => :'mark');
-- a read-only transaction reads too
BEGIN READ ONLY;
SELECT count(*) FROM mq.read('st_one', 0);
COMMIT;
-- bad arguments
SELECT * FROM mq.read('st_one', 1);
SELECT * FROM mq.read('st_one', -1);
SELECT * FROM mq.read('st_one', 0, max_messages => 0);
SELECT * FROM mq.read('st_one', 0, max_messages => 10001);
SELECT * FROM mq.read('st_one', 0, from_offset => -1);
SELECT * FROM mq.read('st_one', 0, from_offset => 1, from_time => now());
SELECT * FROM mq.read('st_one', 0, from_time => 'infinity');
SELECT * FROM mq.read('st_one', NULL);
SELECT * FROM mq.read(NULL, 0);
SELECT * FROM mq.read('st_nope', 0);
SELECT mq.queue_declare('st_classic');
SELECT * FROM mq.read('st_classic', 0);

-- consumer state on a stream is a consumer group's: without one, an error
SELECT * FROM mq.consume('st_one');
SELECT * FROM mq.consume('st_one', group_name => 'g');
SELECT * FROM mq.browse('st_one');
SELECT mq.ack('st_one', ARRAY[1::bigint]);
SELECT mq.nack('st_one', ARRAY[1::bigint]);
SELECT mq.queue_purge('st_one');
-- group_name on a classic queue is still the other error
SELECT * FROM mq.consume('st_classic', group_name => 'g');

-- any exchange routes to a stream
SELECT mq.exchange_declare('st_fan', 'fanout');
SELECT mq.bind('st_one', 'st_fan');
SELECT mq.bind('st_classic', 'st_fan');
SELECT mq.publish('st_fan', '', 'fanned') IS NOT NULL AS sent;
SELECT "offset", convert_from(body, 'UTF8') FROM mq.read('st_one', 0, from_offset => 7);
SELECT convert_from(body, 'UTF8') FROM mq.consume('st_classic', auto_ack => true);

-- privileges: reading needs consume on the stream
CREATE ROLE regress_st_reader;
CREATE ROLE regress_st_other;
SELECT mq.grant('consume', 'queue', 'st_one', 'regress_st_reader');
SET ROLE regress_st_reader;
SELECT count(*) FROM mq.read('st_one', 0);
SELECT mq.send('st_one', 'no');
RESET ROLE;
SET ROLE regress_st_other;
SELECT count(*) FROM mq.read('st_one', 0);
RESET ROLE;

-- durability "quorum": publishing commits wait for synchronous standbys
-- (none here: an error, as for quorum queues, or with
-- mq.quorum_unavailable = wait a local commit, warned once server-wide)
SELECT mq.queue_declare('st_q', type => 'stream', arguments => '{"durability": "quorum"}');
\set VERBOSITY sqlstate
SELECT mq.send('st_q', 'q') IS NOT NULL AS sent;
\set VERBOSITY default
SELECT queue, quorum_met FROM mq.queues WHERE queue IN ('st_q', 'st_one') ORDER BY queue;
SET mq.quorum_unavailable = wait;
SET client_min_messages = error;
SELECT mq.send('st_q', 'q') IS NOT NULL AS sent;
RESET client_min_messages;
RESET mq.quorum_unavailable;

-- deleting a stream drops its tables; declared again it starts at offset 0
SELECT id AS old_id FROM mq.cat_queue WHERE name = 'st_one' \gset
SELECT mq.queue_delete('st_one');
SELECT count(*) FROM pg_class WHERE relname ~ ('^[qs]' || :old_id || '_');
SELECT mq.queue_declare('st_one', type => 'stream');
SELECT mq.send('st_one', 'again') IS NOT NULL AS sent;
SELECT "offset", convert_from(body, 'UTF8') FROM mq.read('st_one', 0);

-- retention by time: generations whose newest entry is older than the
-- retention are dropped by the maintenance worker, whatever readers do;
-- offsets go on where they were
SELECT mq.queue_declare('st_ret', type => 'stream', arguments => '{"retention": "1 second"}');
SELECT count(*) FROM mq.send_batch('st_ret', ARRAY['old1', 'old2', 'old3']);
SELECT wait_until($$SELECT count(*) = 0 FROM mq.read('st_ret', 0)$$);
SELECT mq.send('st_ret', 'new') IS NOT NULL AS sent;
SELECT "offset", convert_from(body, 'UTF8') FROM mq.read('st_ret', 0);
SELECT "offset" FROM mq.read('st_ret', 0, from_offset => 0);
SELECT ready FROM mq.queues WHERE queue = 'st_ret';

-- retention by bytes: the oldest generations go while the partition holds
-- more than max_bytes of bodies
SELECT mq.queue_declare('st_bytes', type => 'stream', arguments => '{"max_bytes": 1000}');
SELECT count(*) FROM mq.send_batch('st_bytes', ARRAY[repeat('x', 600)]);
-- the first generation holds more than a quarter of max_bytes: the worker
-- starts the next one and moves the partition on to it (recording its base
-- offset in its settlement log)
SELECT format('s%s_0_1', id) AS s1 FROM mq.cat_queue WHERE name = 'st_bytes' \gset
SELECT wait_until(format($$SELECT EXISTS (SELECT 1 FROM pg_class WHERE relname = %L)$$, :'s1'));
SELECT wait_until(format($$SELECT count(*) = 1 FROM mq_storage.%I$$, :'s1'));
SELECT count(*) FROM mq.send_batch('st_bytes', ARRAY[repeat('y', 600)]);
SELECT wait_until($$SELECT min("offset") = 1 FROM mq.read('st_bytes', 0)$$);
SELECT "offset", length(body) FROM mq.read('st_bytes', 0);
-- what the stream retains: offsets, bytes (the second body only) and times
SELECT ready, ready_bytes, partitions, first_offset, last_offset, retention,
	   oldest_ready_age IS NOT NULL AS has_age
  FROM mq.queues WHERE queue = 'st_bytes';
SELECT "partition", first_offset, end_offset, bytes,
	   first_time <= last_time AS times_ordered, last_time <= now() AS past
  FROM mq.stream_partitions WHERE queue = 'st_bytes';
-- per partition of a stream with an empty one (last_offset NULL there), and
-- a classic queue has none of these columns
SELECT mq.queue_declare('st_parts', type => 'stream',
	arguments => '{"partitions": 3, "retention": "2 days"}');
SELECT count(*) FROM mq.send_batch('st_parts', ARRAY['a', 'bb', 'ccc'], "partition" => 1);
SELECT count(*) FROM mq.send_batch('st_parts', ARRAY['dddd'], "partition" => 2);
SELECT queue, ready, ready_bytes, partitions, first_offset, last_offset, retention
  FROM mq.queues WHERE queue IN ('st_parts', 'st_classic') ORDER BY queue;
SELECT "partition", first_offset, end_offset, bytes, first_time IS NULL AS empty
  FROM mq.stream_partitions WHERE queue = 'st_parts' ORDER BY 1;

SELECT count(*) FROM (SELECT mq.queue_delete(q)
  FROM unnest(ARRAY['st_one', 'st_four', 'st_q', 'st_ret', 'st_bytes', 'st_parts', 'st_classic']) q) d;
SELECT mq.exchange_delete('st_fan');
DROP ROLE regress_st_reader, regress_st_other;
DROP FUNCTION wait_until(text, interval);
ALTER SYSTEM RESET mq.maintenance_naptime;
SELECT pg_reload_conf();
