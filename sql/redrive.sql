-- mq.redrive (issue 12): move dead letters back, like SQS's redrive.  A
-- consumer group's %DLQ% back to its stream (and its group), a RabbitMQ
-- dead-letter queue back to the queue the message died in, an explicit
-- target, max_messages, errors with their SQLSTATEs, atomicity.
CREATE FUNCTION rd_bodies(q text, g text DEFAULT NULL)
RETURNS TABLE (body text, mg text, p int, hdrs jsonb) LANGUAGE sql AS $$
	SELECT convert_from(body, 'UTF8'), message_group, "partition", headers
	  FROM mq.consume(q, 100, group_name => g, auto_ack => true) ORDER BY 1
$$;
CREATE FUNCTION rd_ready(q text) RETURNS bigint LANGUAGE sql AS $$
	SELECT ready FROM mq.queues WHERE queue = q
$$;

-- 1. a consumer group's dead letters go back to their stream, in the
-- partition they were in, without the x-dlq-* headers, and the group
-- consumes them again (so does every group of the stream)
SELECT mq.queue_declare('rd_s', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('rd_s', 'rd_g', start => 'earliest', max_retries => 0);
SELECT mq.send('rd_s', 'p' || s, message_group => 'mg' || s, key => 'k' || s,
			   tag => 'T', headers => jsonb_build_object('user', s),
			   "partition" => s % 2) IS NOT NULL
  FROM generate_series(1, 3) s;
-- fail them all: to %DLQ%rd_g at once
SELECT mq.nack('rd_s', ARRAY(SELECT msg_id FROM mq.consume('rd_s', 10, group_name => 'rd_g')),
			   requeue => false, group_name => 'rd_g');
SELECT rd_ready('%DLQ%rd_g');
SELECT mq.group_declare('rd_s', 'rd_other', start => 'latest');
SELECT mq.redrive('%DLQ%rd_g');
SELECT rd_ready('%DLQ%rd_g');
SELECT body, mg, p, hdrs FROM rd_bodies('rd_s', 'rd_g');
SELECT body, p FROM rd_bodies('rd_s', 'rd_other');
-- key, tag and message_group kept: the original, its dead letter, the copy
SELECT key, tag, message_group FROM mq.messages_by_key('k2') ORDER BY msg_id;

-- 2. a RabbitMQ dead letter goes back to the queue it died in, headers and
-- death history kept
SELECT mq.queue_declare('rd_dlq');
SELECT mq.queue_declare('rd_src', arguments => '{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_dlq"}');
SELECT mq.send('rd_src', 'r' || s, headers => jsonb_build_object('n', s)) IS NOT NULL
  FROM generate_series(1, 4) s;
SELECT mq.nack('rd_src', ARRAY(SELECT msg_id FROM mq.consume('rd_src', 10)), requeue => false);
SELECT rd_ready('rd_dlq'), rd_ready('rd_src');
-- max_messages: the oldest first
SELECT mq.redrive('rd_dlq', max_messages => 1);
SELECT mq.redrive('rd_dlq', max_messages => 0);
SELECT rd_ready('rd_dlq'), rd_ready('rd_src');
SELECT body, hdrs->'n' AS n, hdrs->'x-death'->0->>'queue' AS died_in,
	   hdrs->'x-death'->0->>'count' AS deaths
  FROM rd_bodies('rd_src');
-- an explicit target
SELECT mq.queue_declare('rd_other_q');
SELECT mq.redrive('rd_dlq', 'rd_other_q', 2);
SELECT body FROM rd_bodies('rd_other_q');
-- dead again, it counts up its death in rd_src
SELECT mq.redrive('rd_dlq');
SELECT mq.nack('rd_src', ARRAY(SELECT msg_id FROM mq.consume('rd_src', 10)), requeue => false);
SELECT body, hdrs->'x-death'->0->>'count' AS deaths FROM rd_bodies('rd_dlq');

-- 3. rollback (and any error) leaves everything where it was
SELECT mq.send('rd_src', 'rb') IS NOT NULL;
SELECT mq.nack('rd_src', ARRAY(SELECT msg_id FROM mq.consume('rd_src', 10)), requeue => false);
BEGIN;
SELECT mq.redrive('rd_dlq');
ROLLBACK;
SELECT rd_ready('rd_dlq'), rd_ready('rd_src');

-- 4. errors
\set VERBOSITY sqlstate
SELECT mq.redrive('rd_nope');                                 -- 42704
SELECT mq.redrive('rd_dlq', 'rd_nope');                       -- 42704
SELECT mq.redrive('rd_dlq', 'rd_dlq');                        -- 22023: itself
SELECT mq.redrive('rd_dlq', max_messages => -1);              -- 22023
SELECT mq.redrive(NULL);                                      -- 22004
SELECT mq.redrive('rd_s');                                    -- 42809: a stream
\set VERBOSITY default
-- a message without an origin, and no target: 22023 naming it, nothing moved
SELECT mq.send('rd_dlq', 'orphan', headers => '{"x-last-death-queue": "rd_src"}') IS NOT NULL;
SELECT rd_ready('rd_dlq'), rd_ready('rd_src');
DO $$
DECLARE
	id bigint := (SELECT msg_id FROM mq.browse('rd_dlq', 10)
				   WHERE convert_from(body, 'UTF8') = 'orphan');
BEGIN
	PERFORM mq.redrive('rd_dlq');
EXCEPTION WHEN invalid_parameter_value THEN
	RAISE NOTICE '22023, naming the orphan: %', SQLERRM = format(
		'message %s of queue "rd_dlq" has no origin to redrive it to', id);
END $$;
SELECT rd_ready('rd_dlq'), rd_ready('rd_src');
-- with a target, they move
SELECT mq.redrive('rd_dlq', 'rd_other_q');
SELECT body FROM rd_bodies('rd_other_q');
-- the origin was deleted: 42704, nothing moved
SELECT mq.send('rd_s', 'gone', "partition" => 0) IS NOT NULL;
SELECT mq.nack('rd_s', ARRAY(SELECT msg_id FROM mq.consume('rd_s', 10, group_name => 'rd_g')),
			   requeue => false, group_name => 'rd_g');
SELECT count(*) FROM rd_bodies('rd_s', 'rd_other');
SELECT mq.queue_delete('rd_s');
\set VERBOSITY sqlstate
SELECT mq.redrive('%DLQ%rd_g');                               -- 42704: rd_s is gone
\set VERBOSITY default
SELECT rd_ready('%DLQ%rd_g');

-- privileges: consume on the source, publish on the target
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_mq_rd;
RESET client_min_messages;
CREATE ROLE regress_mq_rd;
SELECT mq.queue_declare('rd_src2');
SELECT mq.send('rd_dlq', 'x') IS NOT NULL;
SET ROLE regress_mq_rd;
\set VERBOSITY sqlstate
SELECT mq.redrive('rd_dlq', 'rd_src2');                       -- 42501: consume
RESET ROLE;
SELECT mq.grant('consume', 'queue', 'rd_dlq', 'regress_mq_rd');
SET ROLE regress_mq_rd;
SELECT mq.redrive('rd_dlq', 'rd_src2');                       -- 42501: publish
RESET ROLE;
SELECT mq.grant('publish', 'queue', 'rd_src2', 'regress_mq_rd');
SET ROLE regress_mq_rd;
SELECT mq.redrive('rd_dlq', 'rd_src2', 1);                    -- the oldest one
\set VERBOSITY default
RESET ROLE;
SELECT body FROM rd_bodies('rd_src2');

-- a concurrent consumer of the source holds its deliveries: redrive moves
-- the others, and the held one stays (nothing is lost)
SELECT mq.queue_purge('rd_dlq');
SELECT mq.send('rd_dlq', 'c' || s) IS NOT NULL FROM generate_series(1, 3) s;
SELECT convert_from(body, 'UTF8') FROM mq.consume('rd_dlq', 1, lease => '1 hour');
SELECT mq.redrive('rd_dlq', 'rd_src2');
SELECT rd_ready('rd_dlq'), (SELECT unacked FROM mq.queues WHERE queue = 'rd_dlq');
SELECT body FROM rd_bodies('rd_src2');

DROP ROLE regress_mq_rd;
SELECT mq.queue_delete(q)
  FROM unnest('{rd_dlq,rd_src,rd_other_q,rd_src2,%DLQ%rd_g}'::text[]) q;
SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue LIKE '\%DLQ\%%';
