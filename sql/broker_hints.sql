--
-- broker_hints: errors that say what happened and what to do (issue 37).
-- Settling from a session the message is not delivered to names the case
-- and the two ways out; every infinite timestamp argument is 22008; a
-- stream's retention too large says so; RabbitMQ's x-queue-type and
-- x-max-age are honoured in mq.queue_declare when type and retention are
-- left out, as is x-max-length-bytes on a stream when max_bytes is (22023
-- when both are given and disagree); mq.trace of an id that never existed
-- is 42704, as mq.cancel; mq.browse has body_text ('' for an empty body)
-- and refuses streams, pointing at mq.read.
-- Names start with "bh_".  Errors are shown through bh_err(), which
-- replaces message ids (they depend on the tests before) by N.
-- (trace and cancel of id 1: no message has it, ids start at 2^26.)
--
CREATE FUNCTION bh_err(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	st text;
	msg text;
	det text;
	hnt text;
BEGIN
	EXECUTE query;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
		det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
	RETURN regexp_replace(st || ': ' || msg || coalesce(E'\nDETAIL: ' || nullif(det, ''), '')
		|| coalesce(E'\nHINT: ' || nullif(hnt, ''), ''), 'message [0-9]+', 'message N', 'g');
END $$;

-- settling by id from a session the message is not delivered to: 55000,
-- with what the message is instead and the ways out
SELECT mq.queue_declare('bh_q');
SELECT mq.send('bh_q', 'one'::text) AS id1 \gset
SELECT msg_id = :id1 AS consumed FROM mq.consume('bh_q');
-- a new session (psql -c per statement, a pool): the first one has ended
SELECT pg_backend_pid() AS old_pid \gset
\c
\ir test/regress/wait.sql
SELECT wait_until(format('SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = %s', :old_pid)) AS ended;
SELECT bh_err(format('SELECT mq.ack(%L, ARRAY[%s])', 'bh_q', :id1));
SELECT bh_err(format('SELECT mq.nack(%L, ARRAY[%s])', 'bh_q', :id1));
SELECT bh_err(format('SELECT mq.extend_lease(%L, ARRAY[%s])', 'bh_q', :id1));
-- its consuming transaction rolled back
BEGIN;
SELECT msg_id = :id1 AS consumed FROM mq.consume('bh_q');
ROLLBACK;
SELECT bh_err(format('SELECT mq.ack(%L, ARRAY[%s])', 'bh_q', :id1));
-- it was nacked back to the queue
SELECT mq.nack('bh_q', ARRAY(SELECT msg_id FROM mq.consume('bh_q')));
SELECT bh_err(format('SELECT mq.reject(%L, %s)', 'bh_q', :id1));
-- already settled by this (open) transaction
BEGIN;
SELECT mq.ack('bh_q', ARRAY(SELECT msg_id FROM mq.consume('bh_q')));
SELECT bh_err(format('SELECT mq.ack(%L, ARRAY[%s])', 'bh_q', :id1));
COMMIT;
-- settled, or never delivered: the queue's state cannot tell which
SELECT bh_err(format('SELECT mq.ack(%L, ARRAY[%s])', 'bh_q', :id1));
-- no message has this id
SELECT bh_err('SELECT mq.ack(''bh_q'', ARRAY[1])');
-- the way out: consume with session_bound => false, settle by receipt (by
-- id it stays refused, saying so)
SELECT mq.send('bh_q', 'two'::text) AS id2 \gset
SELECT receipt AS r2 FROM mq.consume('bh_q', session_bound => false) \gset
SELECT pg_backend_pid() AS old_pid \gset
\c
SELECT wait_until(format('SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = %s', :old_pid)) AS ended;
SELECT bh_err(format('SELECT mq.ack(%L, ARRAY[%s])', 'bh_q', :id2));
SELECT mq.ack('bh_q', receipts => ARRAY[:'r2']);
SELECT count(*) AS left_over FROM mq.consume('bh_q');

-- infinite timestamps: 22008 for every timestamptz argument
SELECT bh_err($$SELECT mq.publish('', 'bh_q', 'x'::text, deliver_at => 'infinity')$$);
SELECT bh_err($$SELECT mq.send('bh_q', 'x'::text, deliver_at => '-infinity')$$);
SELECT bh_err($$SELECT mq.send('bh_q', 'x'::bytea, deliver_at => 'infinity')$$);
SELECT mq.queue_declare('bh_s', 'stream');
SELECT bh_err($$SELECT * FROM mq.read('bh_s', 0, from_time => 'infinity')$$);
SELECT bh_err($$SELECT * FROM mq.read('bh_s', 0, from_time => '-infinity')$$);
SELECT bh_err($$SELECT mq.group_declare('bh_s', 'bh_g', start => 'infinity')$$);
SELECT bh_err($$SELECT mq.group_declare('bh_s', 'bh_g', start => '-infinity')$$);
SELECT count(*) AS groups FROM mq.consumer_groups WHERE queue = 'bh_s';
SELECT mq.group_declare('bh_s', 'bh_g');
SELECT bh_err($$SELECT mq.seek('bh_s', 'bh_g', to_time => 'infinity')$$);
SELECT bh_err($$SELECT mq.seek('bh_s', 'bh_g', to_time => '-infinity')$$);

-- a retention too large says so, with the largest accepted
SELECT bh_err($$SELECT mq.queue_declare('bh_s2', 'stream', arguments => '{"retention": "1000000 years"}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_s2', 'stream', arguments => '{"retention": "99999999999999 days"}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_s2', 'stream', arguments => '{"x-max-age": "1000000Y"}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_s2', 'stream', arguments => '{"retention": "0 days"}')$$);
SELECT mq.queue_declare('bh_s2', 'stream', arguments => '{"retention": "106751991 days"}');

-- RabbitMQ's argument names: x-queue-type when type is left out, x-max-age
-- when retention is (RabbitMQ's units: Y is 365 days, M 30)
-- (a quorum queue without synchronous standbys warns: silenced, see
-- rabbit_quorum)
SET client_min_messages = error;
SELECT mq.queue_declare('bh_quorum', arguments => '{"x-queue-type": "quorum"}');
SELECT mq.queue_declare('bh_classic', arguments => '{"x-queue-type": "classic"}');
SELECT mq.queue_declare('bh_stream', arguments => '{"x-queue-type": "stream", "x-max-age": "1Y"}');
SELECT mq.queue_declare('bh_stream2', 'stream', arguments => '{"x-max-age": "2M"}');
SELECT mq.queue_declare('bh_stream3', 'stream', arguments => '{"x-max-age": "36h", "retention": "1.5 days"}');
SELECT queue, type, arguments FROM mq.queues WHERE queue IN
	('bh_quorum', 'bh_classic', 'bh_stream', 'bh_stream2', 'bh_stream3') ORDER BY queue;
-- a redeclare in either spelling is the same queue
SELECT mq.queue_declare('bh_stream', 'stream', arguments => '{"retention": "365 days"}');
SELECT mq.queue_declare('bh_quorum', 'quorum');
RESET client_min_messages;
-- both given and different: 22023
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'classic', arguments => '{"x-queue-type": "quorum"}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'stream', arguments => '{"x-queue-type": "quorum"}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_x', arguments => '{"x-queue-type": "lazy"}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'stream', arguments => '{"x-max-age": "7D", "retention": "8 days"}')$$);
-- x-max-age as RabbitMQ parses it
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'stream', arguments => '{"x-max-age": "0D"}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'stream', arguments => '{"x-max-age": "7d"}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'stream', arguments => '{"x-max-age": 7}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_x', arguments => '{"x-max-age": "7D"}')$$);
-- x-max-length-bytes on a stream: its max_bytes (as the gateway and the
-- definitions import take it)
SET client_min_messages = error;
SELECT mq.queue_declare('bh_stream4', arguments => '{"x-queue-type": "stream", "x-max-length-bytes": 1000000}');
SELECT mq.queue_declare('bh_stream5', 'stream', arguments => '{"x-max-length-bytes": 5000, "max_bytes": 5000, "x-max-age": "7D"}');
RESET client_min_messages;
SELECT queue, arguments FROM mq.queues WHERE queue IN ('bh_stream4', 'bh_stream5') ORDER BY queue;
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'stream', arguments => '{"x-max-length-bytes": 5000, "max_bytes": 6000}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'stream', arguments => '{"x-max-length-bytes": "5000"}')$$);
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'stream', arguments => '{"x-max-length-bytes": 0}')$$);
-- what a stream takes, in the hint
SELECT bh_err($$SELECT mq.queue_declare('bh_x', 'stream', arguments => '{"x-max-length": 10}')$$);
SELECT count(*) AS not_created FROM mq.queues WHERE queue = 'bh_x';

-- trace of an id that never existed: 42704, as cancel
SELECT bh_err('SELECT * FROM mq.trace(1)');
SELECT bh_err('SELECT mq.cancel(1)');

-- browse: body_text, NULL when the body is not text in the database encoding
SELECT mq.send('bh_q', 'plain'::text) IS NOT NULL AS sent,
	   mq.send('bh_q', '{"a": 1}'::jsonb) IS NOT NULL AS sent,
	   mq.send('bh_q', '\xff00fe'::bytea) IS NOT NULL AS sent,
	   mq.send('bh_q', convert_to('grüße', 'UTF8')) IS NOT NULL AS sent,
	   mq.send('bh_q', ''::text) IS NOT NULL AS sent;
SELECT body, body_text, body_text IS NULL AS binary, body_text = '' AS empty
  FROM mq.browse('bh_q') ORDER BY msg_id;
-- a stream: browse does not read it, mq.read does
SELECT bh_err('SELECT * FROM mq.browse(''bh_s'')');
-- the columns of browse: those of before, then body_text
SELECT array_to_string(proargnames, ', ') FROM pg_proc WHERE oid = 'mq.browse'::regproc;

-- clean up (and the group's dead-letter queue, if it has one)
SELECT mq.queue_delete(q) >= 0 AS deleted FROM unnest(ARRAY['bh_q', 'bh_s', 'bh_s2', 'bh_quorum',
	'bh_classic', 'bh_stream', 'bh_stream2', 'bh_stream3', 'bh_stream4', 'bh_stream5']) q;
SELECT count(mq.queue_delete(queue)) >= 0 AS deleted FROM mq.queues WHERE queue = '%DLQ%bh_g';
SELECT count(*) AS left_over FROM mq.queues WHERE queue LIKE '%bh\_%';
DROP FUNCTION bh_err(text);
DROP FUNCTION wait_until(text, interval);
