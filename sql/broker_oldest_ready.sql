--
-- broker_oldest_ready: mq.queues' oldest_ready_age follows the oldest ready
-- message as the queue changes (the lanes' first ready entry is kept in the
-- queue's shared state between calls, and must be forgotten when a take
-- moves the scan, a message is taken by id ahead of it, or one is returned).
-- Names start with "bo_".
--
-- Three messages a, b, c published apart, with a mark taken between them.
-- Each check says whether the age shown is consistent with the message
-- expected: the published time it implies lies between
-- statement_timestamp() - age (the call's clock is later) and
-- clock_timestamp() - age (read after the call), so a right answer passes
-- however slow the machine is, and a wrong one fails unless a single
-- statement takes longer than the 0.2 s between two messages.
--
\set VERBOSITY sqlstate
SELECT mq.queue_declare('bo_q');
CREATE TEMP TABLE bo_mark (name text PRIMARY KEY, at timestamptz);
CREATE TEMP TABLE bo_ids (body text PRIMARY KEY, msg_id bigint);
INSERT INTO bo_ids SELECT 'a', mq.send('bo_q', 'a'::text);
SELECT pg_sleep(0.2);
INSERT INTO bo_mark VALUES ('after_a', clock_timestamp());
SELECT pg_sleep(0.05);
INSERT INTO bo_ids SELECT 'b', mq.send('bo_q', 'b'::text);
SELECT pg_sleep(0.2);
INSERT INTO bo_mark VALUES ('after_b', clock_timestamp());
SELECT pg_sleep(0.05);
INSERT INTO bo_ids SELECT 'c', mq.send('bo_q', 'c'::text);

-- is the oldest ready message shown consistent with message m?
CREATE FUNCTION bo_oldest_is(m text) RETURNS boolean LANGUAGE sql AS $$
	SELECT CASE m
		WHEN 'a' THEN statement_timestamp() - q.oldest_ready_age <
			(SELECT at FROM bo_mark WHERE name = 'after_a')
		WHEN 'b' THEN clock_timestamp() - q.oldest_ready_age >=
			(SELECT at FROM bo_mark WHERE name = 'after_a')
			AND statement_timestamp() - q.oldest_ready_age <
			(SELECT at FROM bo_mark WHERE name = 'after_b')
		WHEN 'c' THEN clock_timestamp() - q.oldest_ready_age >=
			(SELECT at FROM bo_mark WHERE name = 'after_b')
		END
	  FROM mq.queues q WHERE q.queue = 'bo_q'
$$;
-- the same through mq.metrics
CREATE FUNCTION bo_metric_is(m text) RETURNS boolean LANGUAGE sql AS $$
	SELECT CASE m
		WHEN 'a' THEN statement_timestamp() - make_interval(secs => v.value) <
			(SELECT at FROM bo_mark WHERE name = 'after_a')
		WHEN 'c' THEN clock_timestamp() - make_interval(secs => v.value) >=
			(SELECT at FROM bo_mark WHERE name = 'after_b')
		END
	  FROM mq.metrics v
	 WHERE v.name = 'queue_ext_oldest_ready_age_seconds' AND v.labels->>'queue' = 'bo_q'
$$;

-- read from the entry log, then (the second call) from what the first kept
SELECT ready, bo_oldest_is('a') AS is_a FROM mq.queues WHERE queue = 'bo_q';
SELECT ready, bo_oldest_is('a') AS is_a, bo_metric_is('a') AS metric_is_a
  FROM mq.queues WHERE queue = 'bo_q';
-- a single queue's row
SELECT ready, oldest_ready_age IS NOT NULL AS has_age FROM mq._queue_stats('bo_q');

-- a taken by id, ahead of the scan: b is the oldest ready
SELECT count(*) FROM mq.lease_ids('bo_q', ARRAY(SELECT msg_id FROM bo_ids WHERE body = 'a'));
SELECT ready, unacked, bo_oldest_is('b') AS is_b FROM mq.queues WHERE queue = 'bo_q';

-- b consumed (the scan passes a, then takes b): c is the oldest ready
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('bo_q', max_messages => 1);
SELECT ready, unacked, bo_oldest_is('c') AS is_c FROM mq.queues WHERE queue = 'bo_q';
SELECT ready, unacked, bo_oldest_is('c') AS is_c, bo_metric_is('c') AS metric_is_c
  FROM mq.queues WHERE queue = 'bo_q';

-- b back (nack with requeue): b is the oldest ready again
SELECT mq.nack('bo_q', ARRAY(SELECT msg_id FROM bo_ids WHERE body = 'b'), requeue => true);
SELECT ready, unacked, bo_oldest_is('b') AS is_b FROM mq.queues WHERE queue = 'bo_q';

-- a back too: the oldest again
SELECT mq.nack('bo_q', ARRAY(SELECT msg_id FROM bo_ids WHERE body = 'a'), requeue => true);
SELECT ready, unacked, bo_oldest_is('a') AS is_a FROM mq.queues WHERE queue = 'bo_q';

-- everything consumed and acked: no age; a new message has one
SELECT count(*) FROM (SELECT mq.ack('bo_q', ARRAY[msg_id]) FROM mq.consume('bo_q', max_messages => 10)) s;
SELECT ready, unacked, oldest_ready_age IS NULL AS no_age FROM mq.queues WHERE queue = 'bo_q';
INSERT INTO bo_ids SELECT 'd', mq.send('bo_q', 'd'::text);
SELECT ready, bo_oldest_is('c') AS after_c FROM mq.queues WHERE queue = 'bo_q';

-- a publish rolled back leaves nothing behind it; one in a transaction
-- that is still open is not shown to it as ready (nor to others)
BEGIN;
SELECT mq.send('bo_q', 'e'::text) IS NOT NULL AS sent;
SELECT ready, bo_oldest_is('c') AS after_c FROM mq.queues WHERE queue = 'bo_q';
ROLLBACK;
SELECT ready, bo_oldest_is('c') AS after_c FROM mq.queues WHERE queue = 'bo_q';

SELECT mq.queue_delete('bo_q');
DROP FUNCTION bo_oldest_is(text);
DROP FUNCTION bo_metric_is(text);
