-- mq.seek: resetting a consumer group's offsets by offset or by publish
-- time, in every partition or one (issue 12, slice 4).
ALTER SYSTEM SET mq.maintenance_naptime = '100ms';
SELECT pg_reload_conf();
\ir test/regress/wait.sql
CREATE TEMP TABLE got (msg_id bigint, p int, o bigint, body text);
-- consume for group g of queue q, keep what came in got, return it
CREATE FUNCTION sk_take(g text, n int DEFAULT 100, q text DEFAULT 'sk')
RETURNS TABLE (p int, o bigint, body text) LANGUAGE sql AS $$
	WITH c AS (
		INSERT INTO got
		SELECT c.msg_id, c."partition", c."offset", convert_from(c.body, 'UTF8')
		  FROM mq.consume(q, n, group_name => g, lease => '1 hour') c
		RETURNING *)
	SELECT p, o, body FROM c ORDER BY p, o
$$;
-- ack everything taken so far
CREATE FUNCTION sk_ack_all(g text, q text DEFAULT 'sk') RETURNS int LANGUAGE sql AS $$
	WITH d AS (DELETE FROM got RETURNING msg_id)
	SELECT mq.ack(q, ARRAY(SELECT msg_id FROM d), group_name => g)
$$;
CREATE FUNCTION sk_view(g text, q text DEFAULT 'sk')
RETURNS TABLE (p int, committed bigint, e bigint, lag bigint, in_flight int) LANGUAGE sql AS $$
	SELECT "partition", committed_offset, end_offset, lag, in_flight
	  FROM mq.consumer_groups WHERE queue = q AND group_name = g ORDER BY 1
$$;

SELECT mq.queue_declare('sk', 'stream', arguments => '{"partitions": 2}');
SELECT mq.queue_declare('sk_classic');
SELECT mq.group_declare('sk', 'g', start => 'earliest');
SELECT mq.group_declare('sk', 'h', start => 'earliest');
SELECT count(*) FROM (SELECT mq.send('sk', 'a' || i, "partition" => i % 2)
						FROM generate_series(0, 7) i) x;

-- errors
SELECT mq.seek('sk', 'g');                                    -- 22023: neither
SELECT mq.seek('sk', 'g', to_offset => 1, to_time => now());  -- 22023: both
SELECT mq.seek('sk', 'g', to_offset => 1, "partition" => 2);  -- 22023
SELECT mq.seek('sk', 'g', to_offset => 1, "partition" => -1); -- 22023
SELECT mq.seek('sk', 'g', to_time => 'infinity');             -- 22008
SELECT mq.seek('sk', 'nope', to_offset => 1);                 -- 42704
SELECT mq.seek('nope', 'g', to_offset => 1);                  -- 42704
SELECT mq.seek('sk_classic', 'g', to_offset => 1);            -- 42809
SELECT * FROM sk_view('g');                                   -- unchanged

-- consume and ack everything, then seek back over acked messages in every
-- partition: they are delivered again; group h is not moved
SELECT * FROM sk_take('g');
SELECT sk_ack_all('g');
SELECT * FROM sk_view('g');
SELECT * FROM sk_take('g');                                   -- nothing
SELECT mq.seek('sk', 'g', to_offset => 2);
SELECT * FROM sk_view('g');
SELECT * FROM sk_take('g');                                   -- offsets 2, 3 again
SELECT sk_ack_all('g');
SELECT * FROM sk_view('h');                                   -- h: still at 0
SELECT p, o FROM sk_take('h', 1);
SELECT sk_ack_all('h');

-- one partition only: partition 1 back to 0, partition 0 stays at its end
SELECT mq.seek('sk', 'g', to_offset => 0, "partition" => 1);
SELECT * FROM sk_view('g');
SELECT * FROM sk_take('g');
SELECT sk_ack_all('g');

-- in-flight deliveries are discarded: acking one after the seek fails,
-- and the next consume starts at the sought offset
SELECT mq.seek('sk', 'g', to_offset => 1);
SELECT p, o FROM sk_take('g', 2);                             -- p1 o1, p1 o2
SELECT mq.seek('sk', 'g', to_offset => 3, "partition" => 0);  -- discards p1's too
\set VERBOSITY sqlstate
SELECT mq.ack('sk', ARRAY(SELECT min(msg_id) FROM got), group_name => 'g');  -- 55000
\set VERBOSITY default
DELETE FROM got;
SELECT * FROM sk_take('g');                                   -- p0 from 3, p1 from 1
SELECT sk_ack_all('g');

-- forward: what is skipped is never delivered
SELECT count(*) FROM (SELECT mq.send('sk', 'b' || i, "partition" => i % 2)
						FROM generate_series(0, 7) i) x;
SELECT mq.seek('sk', 'g', to_offset => 6);
SELECT * FROM sk_view('g');
SELECT * FROM sk_take('g');                                   -- offsets 6, 7 only
SELECT sk_ack_all('g');
SELECT * FROM sk_take('g');                                   -- nothing

-- clamping: below the first offset, the first; past the end, the end
SELECT mq.seek('sk', 'g', to_offset => -5, "partition" => 0);
SELECT mq.seek('sk', 'g', to_offset => 1000000, "partition" => 1);
SELECT * FROM sk_view('g');
SELECT count(*), min(o), max(o) FROM sk_take('g');            -- partition 0 only: 0 .. 7
SELECT sk_ack_all('g');
SELECT mq.send('sk', 'c1', "partition" => 1) IS NOT NULL AS sent;
SELECT * FROM sk_take('g');                                   -- the new one: p1 o8
SELECT sk_ack_all('g');

-- by time: the first message stored at or after it, in each partition
SELECT pg_sleep(0.05);
SELECT now() AS t0 \gset
SELECT pg_sleep(0.05);
SELECT count(*) FROM (SELECT mq.send('sk', 'late' || i, "partition" => i % 2)
						FROM generate_series(0, 3) i) x;
SELECT * FROM sk_take('g');
SELECT sk_ack_all('g');
SELECT mq.seek('sk', 'g', to_time => :'t0');
SELECT * FROM sk_view('g');
SELECT * FROM sk_take('g');                                   -- the late ones again
SELECT sk_ack_all('g');
SELECT mq.seek('sk', 'g', to_time => now() + '1 hour', "partition" => 0);  -- the end
SELECT mq.seek('sk', 'g', to_time => '2000-01-01', "partition" => 1);     -- the first
SELECT * FROM sk_view('g');
SELECT count(*), min(p), min(o), max(o) FROM sk_take('g');
SELECT sk_ack_all('g');

-- a seek that rolls back changes nothing
BEGIN;
SELECT mq.seek('sk', 'g', to_offset => 0);
ROLLBACK;
SELECT * FROM sk_view('g');
SELECT * FROM sk_take('g');                                   -- nothing

-- below the first retained offset: the first retained (retention by bytes
-- dropped offset 0)
SELECT mq.queue_declare('sk_bytes', 'stream', arguments => '{"max_bytes": 1000}');
SELECT mq.group_declare('sk_bytes', 'g', start => 'earliest');
SELECT count(*) FROM mq.send_batch('sk_bytes', ARRAY[repeat('x', 600)]);
SELECT format('s%s_0_1', id) AS s1 FROM mq.cat_queue WHERE name = 'sk_bytes' \gset
SELECT wait_until(format($$SELECT EXISTS (SELECT 1 FROM pg_class WHERE relname = %L)$$, :'s1'));
SELECT wait_until(format($$SELECT count(*) = 1 FROM mq_storage.%I$$, :'s1'));
SELECT count(*) FROM mq.send_batch('sk_bytes', ARRAY[repeat('y', 600)]);
SELECT wait_until($$SELECT min("offset") = 1 FROM mq.read('sk_bytes', 0)$$);
SELECT mq.seek('sk_bytes', 'g', to_offset => 0);
SELECT o, length(body) FROM sk_take('g', 10, 'sk_bytes');    -- offset 1
SELECT sk_ack_all('g', 'sk_bytes');
-- a time before every message: the first retained one (offset 1), by seek
-- and read alike; 2000-01-01 00:00 UTC is timestamp 0, which once meant
-- "no time given" to seek and group_declare (issue 35, item 7)
SELECT mq.seek('sk_bytes', 'g', to_time => '2000-01-01 00:00:00+00');
SELECT o, length(body) FROM sk_take('g', 10, 'sk_bytes');    -- offset 1
SELECT sk_ack_all('g', 'sk_bytes');
SELECT array_agg("offset") FROM mq.read('sk_bytes', 0, from_time => '2000-01-01 00:00:00+00');

-- start and seek by time, every path alike (issue 35, item 7): a time
-- before the first message is the first retained, one after the last the
-- end (the next message published); the earliest and the latest times a
-- timestamptz holds (infinity and -infinity are 22008: broker_hints)
SELECT mq.queue_declare('sk_t', 'stream', arguments => '{"partitions": 2}');
SELECT count(*) FROM (SELECT mq.send('sk_t', 't' || i, "partition" => i % 2)
						FROM generate_series(0, 5) i) x;
SELECT mq.group_declare('sk_t', 'g0', start => '2000-01-01 00:00:00+00');
SELECT mq.group_declare('sk_t', 'g1', start => '1999-12-31');
SELECT mq.group_declare('sk_t', 'gmin', start => '4713-01-01 00:00:00+00 BC');
SELECT mq.group_declare('sk_t', 'gfut', start => (now() + '1 hour')::text);
SELECT mq.group_declare('sk_t', 'gmax', start => '294276-12-31 23:59:59+00');
SELECT mq.group_declare('sk_t', 'gseek', start => 'earliest');
SELECT mq.seek('sk_t', 'gseek', to_time => '2000-01-01 00:00:00+00');
SELECT group_name, "partition", committed_offset, end_offset
  FROM mq.consumer_groups WHERE queue = 'sk_t' ORDER BY 1, 2;
SELECT p, count(*), min(o), max(o) FROM sk_take('g0', 100, 'sk_t') GROUP BY p ORDER BY p;
SELECT sk_ack_all('g0', 'sk_t');
SELECT p, array_agg("offset" ORDER BY "offset")
  FROM generate_series(0, 1) p,
	   mq.read('sk_t', p, from_time => '2000-01-01 00:00:00+00') GROUP BY p ORDER BY p;
SELECT count(*) FROM generate_series(0, 1) p,
	   mq.read('sk_t', p, from_time => now() + '1 hour');            -- none: the end
SELECT mq.seek('sk_t', 'gseek', to_time => now() + '1 hour');
SELECT group_name, "partition", committed_offset, end_offset
  FROM mq.consumer_groups WHERE queue = 'sk_t' AND group_name = 'gseek' ORDER BY 1, 2;
SELECT count(*) FROM (SELECT mq.send('sk_t', 'n' || i, "partition" => i % 2)
						FROM generate_series(0, 1) i) x;
SELECT p, o, body FROM sk_take('gfut', 100, 'sk_t');          -- the new ones only
SELECT sk_ack_all('gfut', 'sk_t');
SELECT p, o, body FROM sk_take('gseek', 100, 'sk_t');         -- the new ones only
SELECT sk_ack_all('gseek', 'sk_t');

-- privileges: consume on the stream is enough; without it, 42501
CREATE ROLE regress_sk_reader;
CREATE ROLE regress_sk_other;
SELECT mq.grant('consume', 'queue', 'sk', 'regress_sk_reader');
SET ROLE regress_sk_reader;
SELECT mq.seek('sk', 'g', to_offset => 0);
RESET ROLE;
SET ROLE regress_sk_other;
SELECT mq.seek('sk', 'g', to_offset => 0);                    -- 42501
RESET ROLE;
SELECT * FROM sk_view('g');

SELECT count(*) FROM (SELECT mq.queue_delete(q)
  FROM unnest(ARRAY['sk', 'sk_classic', 'sk_bytes', 'sk_t']) q) d;
-- the groups' dead-letter queues: made only by the groups that dead-lettered
SELECT name, mq.queue_delete(name) FROM mq.cat_queue WHERE name LIKE '\%DLQ\%%' ORDER BY name;
DROP ROLE regress_sk_reader, regress_sk_other;
DROP FUNCTION wait_until(text, interval), sk_take(text, int, text), sk_ack_all(text, text), sk_view(text, text);
ALTER SYSTEM RESET mq.maintenance_naptime;
SELECT pg_reload_conf();
