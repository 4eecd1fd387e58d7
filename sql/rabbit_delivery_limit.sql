-- x-delivery-limit and drop-head at the return, as RabbitMQ 4.3 does them.
-- Cases follow deps/rabbit/test/quorum_queue_SUITE.erl (RabbitMQ 4.3):
-- subscribe_redelivery_limit, subscribe_redelivery_limit_disable,
-- consume_redelivery_count, delivery_limit_default (quorum default 20),
-- and queue_length_limits_SUITE's drop-head with requeues.
-- Counting (RabbitMQ 4): reject(requeue), a lost session, a rollback and an
-- expired lease count toward the limit; nack(requeue) does not.
-- No synchronous standby here: quorum queues commit locally
-- (mq.quorum_unavailable = wait), the warning that says so (once per server,
-- see quorum_standby) silenced.
SET mq.quorum_unavailable = wait;
SET client_min_messages = error;
CREATE SCHEMA rdl;
\ir test/regress/wait.sql
CREATE FUNCTION rdl.death(h jsonb) RETURNS text LANGUAGE sql AS $$
	SELECT (h->'x-death'->0->>'reason') || '/' || (h->'x-death'->0->>'queue') ||
		   '/' || (h->'x-death'->0->>'count')
$$;
ALTER SYSTEM SET mq.maintenance_naptime = '100ms';
SELECT pg_reload_conf();

SELECT mq.queue_declare('rdl_dead');

-- quorum_queue_SUITE: subscribe_redelivery_limit -- a reject with requeue
-- counts; the return that exceeds the limit dead-letters the message at
-- once, in the rejecting transaction
SELECT mq.queue_declare('rdl_rej', 'quorum', arguments =>
	'{"x-delivery-limit": 1, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rdl_dead"}');
SELECT mq.send('rdl_rej', 'r1'::text) IS NOT NULL;
SELECT mq.reject('rdl_rej', msg_id, true), delivery_count FROM mq.consume('rdl_rej');
SELECT mq.reject('rdl_rej', msg_id, true), delivery_count FROM mq.consume('rdl_rej');
SELECT queue, ready, unacked FROM mq.queues WHERE queue IN ('rdl_rej', 'rdl_dead') ORDER BY 1;
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);

-- a rejecting transaction that rolls back leaves the message delivered to
-- it (then returned by the rollback, which counts: the worker dead-letters)
SELECT mq.send('rdl_rej', 'r2'::text) IS NOT NULL;
SELECT mq.reject('rdl_rej', msg_id, true) FROM mq.consume('rdl_rej');
BEGIN;
SELECT mq.reject('rdl_rej', msg_id, true) FROM mq.consume('rdl_rej');
SELECT count(*) AS dead_in_xact FROM mq.browse('rdl_dead');
ROLLBACK;
SELECT wait_until($$SELECT count(*) = 1 FROM mq.browse('rdl_dead')$$);
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'rdl_rej';

-- nack with requeue does not count (RabbitMQ 4): many nacks, no dead-letter
SELECT mq.send('rdl_rej', 'n1'::text) IS NOT NULL;
SELECT mq.nack('rdl_rej', ARRAY[msg_id], true) FROM mq.consume('rdl_rej');
SELECT mq.nack('rdl_rej', ARRAY[msg_id], true) FROM mq.consume('rdl_rej');
SELECT mq.nack('rdl_rej', ARRAY[msg_id], true) FROM mq.consume('rdl_rej');
SELECT convert_from(body, 'UTF8') AS body, delivery_count, redelivered FROM mq.browse('rdl_rej');
-- ... but rejects still do: one more is allowed, the second goes
SELECT mq.reject('rdl_rej', msg_id, true), delivery_count FROM mq.consume('rdl_rej');
SELECT mq.reject('rdl_rej', msg_id, true), delivery_count FROM mq.consume('rdl_rej');
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);

-- the same on a classic queue with a limit of 0: the first counted
-- return dead-letters
SELECT mq.queue_declare('rdl_zero', arguments =>
	'{"x-delivery-limit": 0, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rdl_dead"}');
SELECT mq.send('rdl_zero', 'z1'::text) IS NOT NULL;
SELECT mq.reject('rdl_zero', msg_id, true) FROM mq.consume('rdl_zero');
SELECT count(*) AS left_in_source FROM mq.browse('rdl_zero');
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);

-- a lost session returns the message: dead-lettered at the return by the
-- worker, not left ready until a consumer happens to find it
SELECT mq.send('rdl_zero', 'z2 session'::text) IS NOT NULL;
SELECT count(*) FROM mq.consume('rdl_zero');
\c
SET mq.quorum_unavailable = wait;
SET client_min_messages = error;
SELECT wait_until($$SELECT count(*) = 1 FROM mq.browse('rdl_dead')$$);
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'rdl_zero';

-- an expired lease counts too
SELECT mq.send('rdl_zero', 'z3 lease'::text) IS NOT NULL;
SELECT count(*) FROM mq.consume('rdl_zero', lease => '100 ms');
SELECT wait_until($$SELECT count(*) = 1 FROM mq.browse('rdl_dead')$$);
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);

-- quorum_queue_SUITE: subscribe_redelivery_limit_disable -- -1 is no limit
SELECT mq.queue_declare('rdl_off', 'quorum', arguments =>
	'{"x-delivery-limit": -1, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rdl_dead"}');
SELECT mq.send('rdl_off', 'o1'::text) IS NOT NULL;
DO $$
BEGIN
	FOR i IN 1 .. 30 LOOP
		PERFORM mq.reject('rdl_off', msg_id, true) FROM mq.consume('rdl_off');
	END LOOP;
END $$;
SELECT convert_from(body, 'UTF8') AS body, delivery_count FROM mq.browse('rdl_off');
SELECT count(*) AS dead FROM mq.browse('rdl_dead');

-- delivery_limit_default: a quorum queue without x-delivery-limit has 20
SELECT mq.queue_declare('rdl_default', 'quorum', arguments =>
	'{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rdl_dead"}');
SELECT mq.send('rdl_default', 'd1'::text) IS NOT NULL;
DO $$
BEGIN
	FOR i IN 1 .. 20 LOOP
		PERFORM mq.reject('rdl_default', msg_id, true) FROM mq.consume('rdl_default');
	END LOOP;
END $$;
SELECT convert_from(body, 'UTF8') AS body, delivery_count FROM mq.browse('rdl_default');
SELECT mq.reject('rdl_default', msg_id, true), delivery_count FROM mq.consume('rdl_default');
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);
-- classic queues have no default limit
SELECT mq.queue_declare('rdl_classic');
SELECT mq.send('rdl_classic', 'c1'::text) IS NOT NULL;
DO $$
BEGIN
	FOR i IN 1 .. 25 LOOP
		PERFORM mq.reject('rdl_classic', msg_id, true) FROM mq.consume('rdl_classic');
	END LOOP;
END $$;
SELECT convert_from(body, 'UTF8') AS body, delivery_count FROM mq.browse('rdl_classic');

-- bad values
SELECT mq.queue_declare('rdl_bad', arguments => '{"x-delivery-limit": 1.5}');
SELECT mq.queue_declare('rdl_bad', arguments => '{"x-delivery-limit": "3"}');
SELECT mq.queue_declare('rdl_bad', arguments => '{"x-delivery-limit": -3000000000}');
SELECT mq.queue_declare('rdl_neg', arguments => '{"x-delivery-limit": -5}');

-- A requeue that takes a drop-head queue over x-max-length drops the head
-- (RabbitMQ: the requeued message goes back to its place at the head)
SELECT mq.queue_declare('rdl_len', arguments =>
	'{"x-max-length": 2, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rdl_dead"}');
SELECT mq.send('rdl_len', 'l1'::text) IS NOT NULL;
SELECT mq.send('rdl_len', 'l2'::text) IS NOT NULL;
SELECT msg_id AS l1 FROM mq.consume('rdl_len') \gset
SELECT mq.send('rdl_len', 'l3'::text) IS NOT NULL;
SELECT mq.nack('rdl_len', ARRAY[:l1::bigint], true);
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'rdl_len';
SELECT convert_from(body, 'UTF8') AS body FROM mq.browse('rdl_len');
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);
-- the same with reject
SELECT msg_id AS l2 FROM mq.consume('rdl_len') \gset
SELECT mq.send('rdl_len', 'l4'::text) IS NOT NULL;
SELECT mq.reject('rdl_len', :l2::bigint, true);
SELECT convert_from(body, 'UTF8') AS body FROM mq.browse('rdl_len');
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);
-- and when a lost session returns it: the worker trims the queue
SELECT count(*) FROM mq.consume('rdl_len');
SELECT mq.send('rdl_len', 'l5'::text) IS NOT NULL;
\c
SET mq.quorum_unavailable = wait;
SET client_min_messages = error;
SELECT wait_until($$SELECT count(*) = 1 FROM mq.browse('rdl_dead')$$);
SELECT convert_from(body, 'UTF8') AS body FROM mq.browse('rdl_len');
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'rdl_len';

-- the same for x-max-length-bytes: the returned message's bytes count again
SELECT mq.queue_declare('rdl_bytes', arguments =>
	'{"x-max-length-bytes": 4, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rdl_dead"}');
SELECT mq.send('rdl_bytes', 'b1'::text) IS NOT NULL;
SELECT mq.send('rdl_bytes', 'b2'::text) IS NOT NULL;
SELECT msg_id AS b1 FROM mq.consume('rdl_bytes') \gset
SELECT mq.send('rdl_bytes', 'b3'::text) IS NOT NULL;
SELECT mq.nack('rdl_bytes', ARRAY[:b1::bigint], true);
SELECT convert_from(body, 'UTF8') AS body FROM mq.browse('rdl_bytes');
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);
SELECT queue, ready, ready_bytes FROM mq.queues WHERE queue = 'rdl_bytes';

-- a delayed message that comes due appends to the queue in the worker:
-- the worker's pass then trims the queue back to x-max-length (the head)
SELECT mq.queue_declare('rdl_due', arguments =>
	'{"x-max-length": 1, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rdl_dead"}');
SELECT mq.send('rdl_due', 'due a'::text) IS NOT NULL;
SELECT mq.send('rdl_due', 'due b'::text, delay => '200 ms') IS NOT NULL;
SELECT wait_until($$SELECT count(*) = 1 FROM mq.browse('rdl_dead')$$);
SELECT convert_from(body, 'UTF8') AS body FROM mq.browse('rdl_due');
SELECT convert_from(body, 'UTF8') AS body, rdl.death(headers)
  FROM mq.consume('rdl_dead', 10, auto_ack => true);

DROP FUNCTION wait_until(text, interval);
ALTER SYSTEM RESET mq.maintenance_naptime;
SELECT pg_reload_conf();
