-- Consumer groups in broadcast mode (issue 12): every consumer name of a
-- broadcast group receives every message, with its own progress, leases,
-- retries and dead letters, kept server-side per (group, consumer).
CREATE TABLE bgot (c text, msg_id bigint, body text, p int, o bigint, rd boolean, dc int, rt int);
-- consume as consumer c of group g into bgot; what was delivered, by offset
CREATE FUNCTION bc_take(c text, n int DEFAULT 100, g text DEFAULT 'gb')
RETURNS TABLE (body text, p int, o bigint, rd boolean, dc int, rt int) LANGUAGE sql AS $$
	WITH t AS (
		INSERT INTO bgot
		SELECT c, t.msg_id, convert_from(t.body, 'UTF8'), t."partition", t."offset",
			   t.redelivered, t.delivery_count, t.reconsume_times
		  FROM mq.consume('bs', n, group_name => g, consumer => c, lease => '1 hour') t
		RETURNING *)
	SELECT body, p, o, rd, dc, rt FROM t ORDER BY p, o
$$;
-- the ids consumer c was given, of bodies matching the regular expression
CREATE FUNCTION bc_ids(c text, pattern text DEFAULT '.') RETURNS bigint[] LANGUAGE sql AS $$
	SELECT ARRAY(SELECT DISTINCT msg_id FROM bgot WHERE bgot.c = bc_ids.c AND body ~ pattern)
$$;
CREATE FUNCTION bc_view(g text DEFAULT 'gb')
RETURNS TABLE (consumer text, p int, committed bigint, e bigint, lag bigint, in_flight int,
			   retrying int, dead bigint, consumers int) LANGUAGE sql AS $$
	SELECT consumer, "partition", committed_offset, end_offset, lag, in_flight, retrying,
		   dead_lettered, consumers
	  FROM mq.consumer_groups WHERE queue = 'bs' AND group_name = g ORDER BY 1, 2
$$;
\ir test/regress/wait.sql

SELECT mq.queue_declare('bs', 'stream', arguments => '{"partitions": 2}');
SELECT count(*) FROM (SELECT mq.send('bs', 'pre-' || i, "partition" => i % 2)
						FROM generate_series(0, 1) i) x;

-- declare: idempotent; mode is one of the options compared
SELECT mq.group_declare('bs', 'gb', mode => 'broadcast');
SELECT mq.group_declare('bs', 'gb', mode => 'broadcast');     -- nothing
\set VERBOSITY sqlstate
SELECT mq.group_declare('bs', 'gb');                          -- 55000: mode differs
\set VERBOSITY default
SELECT mq.group_declare('bs', 'gb');                          -- the message
-- no consumer yet: one row per partition, consumer NULL, at the group's start
SELECT * FROM bc_view();

SELECT count(*) FROM (SELECT mq.send('bs', 'm-' || i, "partition" => i % 2)
						FROM generate_series(0, 5) i) x;
-- a consumer name is required to consume
\set VERBOSITY sqlstate
SELECT * FROM mq.consume('bs', group_name => 'gb');           -- 22023
SELECT * FROM mq.consume('bs', group_name => 'gb', consumer => '');  -- 22023
\set VERBOSITY default
SELECT * FROM mq.consume('bs', group_name => 'gb');           -- the message

-- every consumer gets every message since the group's start, in offset
-- order per partition
SELECT * FROM bc_take('A');
SELECT * FROM bc_take('B');
SELECT * FROM bc_take('C', 2);
SELECT * FROM bc_take('A');                                   -- nothing more for A
SELECT * FROM bc_view();
SELECT c, count(*) FROM bgot GROUP BY 1 ORDER BY 1;
-- one row per consumer and partition in the view, consumer set
SELECT group_name, mode, "partition", consumer FROM mq.consumer_groups
 WHERE group_name = 'gb' ORDER BY consumer, "partition";

-- acks: per consumer; without a consumer name, in every consumer state of
-- the group where this session holds the message (here A's and B's)
SELECT mq.ack('bs', bc_ids('A', '^m-0$'), 'gb');
SELECT mq.ack('bs', bc_ids('A', '^m-[1-5]$'), group_name => 'gb', consumer => 'A');
\set VERBOSITY sqlstate
SELECT mq.ack('bs', bc_ids('A', '^m-0$'), 'gb');                        -- 55000: acked in both
SELECT mq.ack('bs', bc_ids('A', '^m-1$'), group_name => 'gb', consumer => 'A');  -- 55000: A's acked
SELECT mq.ack('bs', bc_ids('A', '^m-1$'), group_name => 'gb', consumer => 'nobody');  -- 55000
SELECT mq.ack('bs', '{1}', group_name => 'gb', consumer => '');         -- 22023
\set VERBOSITY default
-- A is done, B still holds five of its six, C its two
SELECT * FROM bc_view();

-- nack: a retry for that consumer only, after the group's backoff
-- (RocketMQ's: 10 s first); with delay it comes back then
SELECT mq.nack('bs', bc_ids('B', '^m-1$'), delay => '1 ms', group_name => 'gb', consumer => 'B');
SELECT pg_sleep(0.05);
SELECT * FROM bc_take('B');                                   -- m-1, redelivered, rt 1
SELECT * FROM bc_take('A');                                   -- A: nothing
SELECT mq.nack('bs', bc_ids('B', '^m-2$'), group_name => 'gb');  -- no consumer: B's
SELECT * FROM bc_take('B');                                   -- not yet: 10 s backoff
SELECT consumer, p, retrying FROM bc_view() WHERE retrying > 0;
-- extend_lease with and without a consumer name
SELECT mq.extend_lease('bs', bc_ids('C'), '2 hours', group_name => 'gb', consumer => 'C');
SELECT mq.extend_lease('bs', bc_ids('C'), '2 hours', 'gb');
\set VERBOSITY sqlstate
SELECT mq.extend_lease('bs', bc_ids('C'), '2 hours', group_name => 'gb', consumer => 'A');  -- 55000
\set VERBOSITY default

-- a late consumer gets what was published since the group started
SELECT * FROM bc_take('D');
SELECT mq.ack('bs', bc_ids('D'), group_name => 'gb', consumer => 'D');

-- a new consumer's first consume and its ack in one transaction; two
-- first consumes of one new name in one statement make one consumer
BEGIN;
SELECT * FROM bc_take('G', 2);
SELECT mq.ack('bs', bc_ids('G'), group_name => 'gb', consumer => 'G');
COMMIT;
SELECT (SELECT count(*) FROM mq.consume('bs', 1, group_name => 'gb', consumer => 'H')) +
	   (SELECT count(*) FROM mq.consume('bs', 1, group_name => 'gb', consumer => 'H')) AS taken;
SELECT consumer, sum(committed) AS committed, sum(in_flight) AS in_flight
  FROM bc_view() WHERE consumer IN ('G', 'H') GROUP BY 1 ORDER BY 1;

-- the session end returns a consumer's deliveries at once, redelivered
\c
SELECT wait_until($$SELECT coalesce(sum(consumers), 0) = 0 FROM bc_view() WHERE consumer = 'C'$$);
SELECT * FROM bc_take('C');                                   -- C's two again, then the rest
-- and so does a rollback
SELECT mq.send('bs', 'rb', "partition" => 0) IS NOT NULL;
BEGIN;
SELECT * FROM bc_take('C', 1);
ROLLBACK;
SELECT * FROM bc_take('C');
SELECT mq.ack('bs', bc_ids('C'), group_name => 'gb', consumer => 'C');
SELECT * FROM bc_view() WHERE consumer = 'C';

-- seek resets every consumer of the group (and where new ones start)
SELECT mq.seek('bs', 'gb', to_offset => 3);
SELECT * FROM bc_view();
TRUNCATE bgot;
SELECT * FROM bc_take('A');
SELECT * FROM bc_take('E');                                   -- new: from the seek
SELECT mq.seek('bs', 'gb', to_offset => 0, "partition" => 1);
SELECT * FROM bc_take('A');                                   -- partition 1 again
SELECT * FROM bc_view() WHERE consumer IN ('A', 'E');

-- max_retries: after them, that consumer's copy goes to %DLQ%<group>,
-- the other consumers go on; nack(requeue => false) dead-letters at once
SELECT mq.group_declare('bs', 'gd', mode => 'broadcast', start => 'earliest',
						max_retries => 1, retry_delays => '{1 ms}');
TRUNCATE bgot;
SELECT body, p, o FROM bc_take('X', 1, 'gd');
SELECT mq.nack('bs', bc_ids('X'), group_name => 'gd', consumer => 'X');
SELECT pg_sleep(0.05);
SELECT body, p, o, rd, dc, rt FROM bc_take('X', 1, 'gd');     -- the retry
SELECT mq.nack('bs', bc_ids('X'), group_name => 'gd', consumer => 'X');
SELECT pg_sleep(0.05);
SELECT body, p, o FROM bc_take('X', 1, 'gd');                 -- the next one: the first is dead
SELECT body, p, o FROM bc_take('Y', 1, 'gd');                 -- Y has the first
SELECT mq.nack('bs', bc_ids('Y'), false, group_name => 'gd', consumer => 'Y');
SELECT convert_from(body, 'UTF8') AS body,
	   headers - 'x-dlq-origin-msg-id' AS headers
  FROM mq.consume('%DLQ%gd', 10, auto_ack => true) ORDER BY headers->>'x-dlq-reason';
SELECT consumer, p, dead FROM bc_view('gd') WHERE dead > 0;

-- filters: each consumer gets only what the group's filter matches
SELECT mq.group_declare('bs', 'gf', mode => 'broadcast', filter => 'TagA || TagC');
SELECT count(*) FROM (SELECT mq.send('bs', 'f-' || i, tag => 'Tag' || chr(65 + i % 3),
									 "partition" => 0)
						FROM generate_series(0, 5) i) x;
TRUNCATE bgot;
SELECT body, p FROM bc_take('F1', 100, 'gf');
SELECT body, p FROM bc_take('F2', 100, 'gf');
SELECT mq.ack('bs', bc_ids('F1'), group_name => 'gf', consumer => 'F1');
SELECT consumer, p, committed, e, lag, in_flight FROM bc_view('gf');

-- group_delete removes the consumers and their logs; a group declared
-- again with the name starts afresh, with no consumer
SELECT count(*) FROM mq.cat_group_consumer c JOIN mq.cat_group g ON g.id = c.group_id
 WHERE g.name = 'gb';
CREATE TEMP TABLE gb_ids AS
	SELECT c.id FROM mq.cat_group_consumer c JOIN mq.cat_group g ON g.id = c.group_id
	 WHERE g.name = 'gb';
SELECT mq.group_delete('bs', 'gb');
SELECT count(*) FROM mq.cat_group_consumer;                   -- gd's and gf's
SELECT count(*) FROM pg_class c, gb_ids i, mq.cat_queue q
 WHERE q.name = 'bs' AND c.relnamespace = 'mq_storage'::regnamespace
   AND c.relname LIKE 'g' || q.id || '\_' || i.id || '\_%';
SELECT mq.group_declare('bs', 'gb', mode => 'broadcast', start => 'earliest');
SELECT * FROM bc_view();
TRUNCATE bgot;
SELECT count(*), bool_or(rd) AS any_redelivered, max(dc) FROM bc_take('A');

-- a stream deleted: its groups' consumers and logs go with it
SELECT mq.queue_delete('bs');
SELECT count(*) FROM mq.cat_group_consumer;
SELECT count(*) FROM pg_class WHERE relnamespace = 'mq_storage'::regnamespace AND relname LIKE 'g%';
SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue LIKE '\%DLQ\%%';
DROP TABLE bgot;
DROP FUNCTION wait_until(text, interval);
