-- Ordered consumer groups on streams (issue 12): group_declare(ordered =>
-- true) delivers the messages of one message_group in offset order, one
-- at a time; other message groups in parallel; messages without a
-- message_group unordered; a retry holds its group back; the DLQ lets it
-- go on.  Two groups of one stream: one ordered, one not.
\ir test/regress/wait.sql
CREATE TEMP TABLE got (g text, msg_id bigint, body text, mg text, p int, dc int);
-- consume for group g into got; returns what was delivered, by body
CREATE FUNCTION so_take(g text, n int DEFAULT 100, lease interval DEFAULT '1 hour')
RETURNS TABLE (body text, mg text, dc int) LANGUAGE sql AS $$
	WITH c AS (
		INSERT INTO got
		SELECT g, c.msg_id, convert_from(c.body, 'UTF8'), c.message_group, c."partition",
			   c.delivery_count
		  FROM mq.consume('so', n, group_name => g, lease => lease) c
		RETURNING *)
	SELECT body, mg, dc FROM c ORDER BY body
$$;
-- the ids of group g's deliveries with these bodies
CREATE FUNCTION so_ids(g text, b text[]) RETURNS bigint[] LANGUAGE sql AS $$
	SELECT ARRAY(SELECT DISTINCT msg_id FROM got WHERE got.g = so_ids.g AND body = ANY (b))
$$;
CREATE FUNCTION so_ack(g text, b text[]) RETURNS int LANGUAGE sql AS $$
	SELECT mq.ack('so', so_ids(g, b), group_name => g)
$$;
-- the id of group go's last delivery of message group mg
CREATE FUNCTION so_last(mg text) RETURNS bigint[] LANGUAGE sql AS $$
	SELECT ARRAY(SELECT msg_id FROM got WHERE g = 'go' AND got.mg = so_last.mg
				  ORDER BY ctid DESC LIMIT 1)
$$;

SELECT mq.queue_declare('so', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('so', 'go', start => 'earliest', ordered => true,
						max_retries => 1, retry_delays => '{1 s}');
SELECT mq.group_declare('so', 'go', start => 'earliest', ordered => true,
						max_retries => 1, retry_delays => '{1 s}');   -- same: nothing
\set VERBOSITY sqlstate
SELECT mq.group_declare('so', 'go', start => 'earliest',
						max_retries => 1, retry_delays => '{1 s}');   -- 55000: ordered differs
\set VERBOSITY default
SELECT mq.group_declare('so', 'gu', start => 'earliest');
SELECT ordered FROM mq.cat_group ORDER BY name;

-- three message groups interleaved, and two messages without one
SELECT count(*) FROM (
	SELECT mq.send('so', mg || s, message_group => mg)
	  FROM generate_series(1, 3) s, unnest('{A,B,C}'::text[]) mg ORDER BY s, mg) x;
SELECT mq.send('so', 'n1') IS NOT NULL, mq.send('so', 'n2') IS NOT NULL;

-- one consume call: each message group's head, and the unordered ones
SELECT * FROM so_take('go');
-- nothing more while they are in flight
SELECT * FROM so_take('go');
-- the unordered group of the same stream gets everything at once
SELECT count(*), count(DISTINCT mg) FROM so_take('gu');
SELECT mq.ack('so', ARRAY(SELECT msg_id FROM got WHERE g = 'gu'), group_name => 'gu');

-- an ack lets its group's next message go, and only that one
SELECT so_ack('go', '{A1,n1,n2}');
SELECT * FROM so_take('go');
SELECT * FROM so_take('go');

-- a nack holds its group back until the retry (1 s), and only its group
SELECT mq.nack('so', so_ids('go', '{B1}'), group_name => 'go');
SELECT * FROM so_take('go');                                  -- nothing: B waits
SELECT so_ack('go', '{C1}');
SELECT * FROM so_take('go');                                  -- C2, not B2
SELECT retrying FROM mq.consumer_groups WHERE group_name = 'go' AND retrying > 0;
SELECT pg_sleep(1.05);
SELECT * FROM so_take('go');                                  -- B1 again, at the head
-- over max_retries (1): the nack sends B1 to %DLQ%go, and B goes on
SELECT mq.nack('so', so_ids('go', '{B1}'), group_name => 'go');
SELECT * FROM so_take('go');                                  -- B2 at once
SELECT * FROM so_take('go');                                  -- nothing: B2 in flight
SELECT convert_from(body, 'UTF8') AS body, message_group, headers->>'x-dlq-reason' AS reason
  FROM mq.consume('%DLQ%go', 10, auto_ack => true);

-- nack(requeue => false) dead-letters at once; the group goes on
SELECT mq.nack('so', so_ids('go', '{B2}'), requeue => false,
			   group_name => 'go');
SELECT * FROM so_take('go');                                  -- B3
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('%DLQ%go', 10, auto_ack => true);

-- a lease that runs out retries after the delay, and holds its group
SELECT so_ack('go', '{A2,B3,C2}');
SELECT * FROM so_take('go', 100, '10 ms');                    -- A3, C3
SELECT pg_sleep(0.05);
SELECT * FROM so_take('go');                                  -- nothing: both wait
SELECT pg_sleep(1);
SELECT mq.send('so', 'A4', message_group => 'A') IS NOT NULL;
SELECT * FROM so_take('go', 100, '10 ms');                    -- A3, C3 again
-- their leases run out once more: over max_retries, they are dead-lettered
-- (by the next take, or by the worker's pass if it comes first), and their
-- groups go on: in the call after that take, or at once
SELECT pg_sleep(0.05);
CREATE TEMP TABLE so_two AS SELECT * FROM so_take('go');
INSERT INTO so_two SELECT * FROM so_take('go');
SELECT * FROM so_two;                                         -- A4, once
DROP TABLE so_two;
SELECT convert_from(body, 'UTF8') AS body, headers->>'x-dlq-reason' AS reason
  FROM mq.consume('%DLQ%go', 10, auto_ack => true) ORDER BY 1;
SELECT so_ack('go', '{A4}');

-- a rollback gives the same message back at once, and nothing behind it
SELECT mq.send('so', 'D' || s, message_group => 'D') IS NOT NULL FROM generate_series(1, 2) s;
BEGIN;
SELECT * FROM so_take('go');                                  -- D1
ROLLBACK;
SELECT * FROM so_take('go');                                  -- D1, redelivered
SELECT so_ack('go', '{D1}');
SELECT * FROM so_take('go');                                  -- D2
SELECT so_ack('go', '{D2}');

-- a session end gives it back at once too
SELECT mq.send('so', 'F' || s, message_group => 'F') IS NOT NULL FROM generate_series(1, 2) s;
SELECT * FROM so_take('go');                                  -- F1
\c
-- (wait for the old session to be gone: its exit returns F1)
SELECT wait_until($$SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database()
										 AND pid <> pg_backend_pid() AND backend_type = 'client backend')$$);
CREATE TEMP TABLE got (g text, msg_id bigint, body text, mg text, p int, dc int);
SELECT * FROM so_take('go');                                  -- F1, redelivered
SELECT so_ack('go', '{F1}');
SELECT * FROM so_take('go');                                  -- F2
SELECT so_ack('go', '{F2}');

-- consume and ack in one transaction: the next one goes after the commit
SELECT mq.send('so', 'E' || s, message_group => 'E') IS NOT NULL FROM generate_series(1, 2) s;
BEGIN;
SELECT * FROM so_take('go');                                  -- E1
SELECT so_ack('go', '{E1}');
SELECT * FROM so_take('go');                                  -- nothing: not committed
COMMIT;
SELECT * FROM so_take('go');                                  -- E2
SELECT so_ack('go', '{E2}');

-- a publisher that chose partitions itself: one message group over two
-- partitions is still delivered one at a time (offset order in each)
SELECT mq.send('so', 'X' || s, message_group => 'X', "partition" => s % 2) IS NOT NULL
  FROM generate_series(1, 4) s;
SELECT count(*) FROM so_take('go');                           -- 1
SELECT count(*) FROM so_take('go');                           -- 0
SELECT mq.nack('so', so_last('X'), group_name => 'go');
SELECT count(*) FROM so_take('go');                           -- 0: the nacked one waits
SELECT pg_sleep(1.05);
SELECT dc FROM so_take('go');                                 -- the same one, dc 2
SELECT mq.ack('so', so_last('X'), group_name => 'go');
SELECT count(*) FROM so_take('go');                           -- 1
SELECT mq.ack('so', so_last('X'), group_name => 'go');
SELECT count(*) FROM so_take('go');                           -- 1
SELECT mq.ack('so', so_last('X'), group_name => 'go');
SELECT body FROM so_take('go');
SELECT mq.ack('so', so_last('X'), group_name => 'go');
-- in each partition in offset order
SELECT p, array_agg(body ORDER BY body) FILTER (WHERE dc = 1) AS bodies,
	   bool_and(body_order) AS in_order
  FROM (SELECT p, body, dc, body >= lag(body, 1, '') OVER (PARTITION BY p ORDER BY msg_id, dc) AS body_order
		  FROM got WHERE mg = 'X') s GROUP BY p ORDER BY p;
SELECT committed_offset = end_offset AS all_settled, in_flight, retrying
  FROM mq.consumer_groups WHERE group_name = 'go' ORDER BY "partition";

-- the entry of a stream message records its message_group's hash (any of
-- its groups may be ordered), and nothing for a message without one
CREATE FUNCTION so_hashes(OUT with_hash bigint, OUT without bigint) LANGUAGE plpgsql AS $$
DECLARE
	qid int := (SELECT id FROM mq.cat_queue WHERE name = 'so');
BEGIN
	EXECUTE format('SELECT count(*) FILTER (WHERE group_hash IS NOT NULL), '
				   'count(*) FILTER (WHERE group_hash IS NULL) '
				   'FROM (SELECT group_hash FROM mq_storage.%I UNION ALL SELECT group_hash FROM mq_storage.%I) e',
				   'q' || qid || '_0_0', 'q' || qid || '_1_0') INTO with_hash, without;
END $$;
SELECT * FROM so_hashes();

SELECT mq.queue_delete('so');
SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue LIKE '\%DLQ\%%';
DROP FUNCTION wait_until(text, interval);
