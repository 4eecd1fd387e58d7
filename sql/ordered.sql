-- Ordered queues (argument "ordered": true, issue "Streams and consumer
-- groups", ordered consumption on classic and quorum queues): the messages
-- of one message_group are delivered in publish order, one at a time; other
-- groups, and messages without a group, go on in parallel.
\set VERBOSITY sqlstate
-- quorum queues without synchronous standbys commit locally (quorum_standby)
SET mq.quorum_unavailable = wait;
CREATE FUNCTION pg_temp.bodies(q text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(convert_from(b.body, 'UTF8'), ' '), '')
	  FROM mq.browse(q, 100) b
$$;
-- consume n, remember what came: got(id, body)
CREATE TEMP TABLE got (id bigint, body text);
CREATE FUNCTION pg_temp.take(q text, n int) RETURNS text LANGUAGE sql AS $$
	WITH c AS (SELECT msg_id, convert_from(body, 'UTF8') AS b FROM mq.consume(q, n)),
	     i AS (INSERT INTO got SELECT msg_id, b FROM c RETURNING body)
	SELECT coalesce(string_agg(body, ' ' ORDER BY body), '') FROM i
$$;
CREATE FUNCTION pg_temp.id(b text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM got WHERE body = b
$$;

SELECT mq.queue_declare('oq', arguments => '{"ordered": true}');
SELECT mq.send('oq', 'a1'::text, message_group => 'A') IS NOT NULL;
SELECT mq.send('oq', 'a2'::text, message_group => 'A') IS NOT NULL;
SELECT mq.send('oq', 'b1'::text, message_group => 'B') IS NOT NULL;
SELECT mq.send('oq', 'a3'::text, message_group => 'A') IS NOT NULL;
SELECT mq.send('oq', 'n1'::text) IS NOT NULL;
SELECT mq.send('oq', 'b2'::text, message_group => 'B') IS NOT NULL;
SELECT mq.send('oq', 'n2'::text) IS NOT NULL;
-- browse shows what a consume would get: the head of each group, and
-- every message without a group
SELECT pg_temp.bodies('oq');
-- one consume call never returns two messages of one group
SELECT pg_temp.take('oq', 10);
-- while a1 and b1 are unsettled their groups wait, however often one asks
SELECT pg_temp.take('oq', 10);
SELECT pg_temp.bodies('oq');
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'oq';
-- acking a1 lets a2 go; B still waits for b1
SELECT mq.ack('oq', ARRAY[pg_temp.id('a1'), pg_temp.id('n1'), pg_temp.id('n2')]);
SELECT pg_temp.take('oq', 10);
-- an ack that rolls back holds the group back as before
BEGIN;
SELECT mq.ack('oq', ARRAY[pg_temp.id('a2')]);
ROLLBACK;
SELECT pg_temp.take('oq', 10);
-- a failing message blocks only its group: b1 nacked comes back first,
-- before b2, and A goes on meanwhile
SELECT mq.nack('oq', ARRAY[pg_temp.id('b1')], requeue => true);
SELECT pg_temp.bodies('oq');
DELETE FROM got WHERE body = 'b1';
SELECT pg_temp.take('oq', 10);
SELECT mq.ack('oq', ARRAY[pg_temp.id('a2'), pg_temp.id('b1')]);
SELECT pg_temp.take('oq', 10);
-- a nack with a delay keeps its group waiting until it is redelivered,
-- even on a durable queue (no timer: it stays unsettled meanwhile)
SELECT mq.nack('oq', ARRAY[pg_temp.id('a3')], requeue => true, delay => '2 s');
SELECT pg_temp.bodies('oq');
SELECT pg_temp.take('oq', 10);
SELECT pg_sleep(2.1);
DELETE FROM got WHERE body = 'a3';
SELECT pg_temp.take('oq', 10);
-- a message dead-lettered (reject without requeue) lets its group go on
SELECT mq.send('oq', 'a4'::text, message_group => 'A') IS NOT NULL;
SELECT pg_temp.bodies('oq');
SELECT mq.reject('oq', pg_temp.id('a3'), requeue => false);
SELECT pg_temp.take('oq', 10);
SELECT mq.ack('oq', ARRAY[pg_temp.id('b2'), pg_temp.id('a4')]);
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'oq';

-- a consuming transaction that rolls back returns its messages at once;
-- the group's head is delivered again first
SELECT mq.send('oq', 'c1'::text, message_group => 'C') IS NOT NULL;
SELECT mq.send('oq', 'c2'::text, message_group => 'C') IS NOT NULL;
BEGIN;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('oq', 10);
ROLLBACK;
SELECT convert_from(body, 'UTF8') AS body, redelivered FROM mq.consume('oq', 10, auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body, redelivered FROM mq.consume('oq', 10, auto_ack => true);
SELECT count(*) FROM mq.consume('oq', 10);

-- several messages of a group published in one transaction: one at a
-- time, in the order they were sent
BEGIN;
SELECT mq.send('oq', 'd1'::text, message_group => 'D') IS NOT NULL;
SELECT mq.send('oq', 'd2'::text, message_group => 'D') IS NOT NULL;
SELECT mq.send('oq', 'd3'::text, message_group => 'D') IS NOT NULL;
COMMIT;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('oq', 10, auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('oq', 10, auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('oq', 10, auto_ack => true);

-- quorum queues too (one lane: an ordered queue ignores priorities)
SELECT mq.queue_declare('oq_quorum', 'quorum', arguments => '{"ordered": true}');
SELECT count(*) AS lanes FROM pg_class WHERE relname ~ ('^q' || (SELECT id FROM mq.cat_queue WHERE name = 'oq_quorum') || '_');
SET client_min_messages = error;
SELECT mq.send('oq_quorum', 'q1'::text, message_group => 'Q', priority => 1) IS NOT NULL;
SELECT mq.send('oq_quorum', 'q2'::text, message_group => 'Q', priority => 9) IS NOT NULL;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('oq_quorum', 10, auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('oq_quorum', 10, auto_ack => true);
RESET client_min_messages;

-- bad arguments
SELECT mq.queue_declare('oq_bad', arguments => '{"ordered": "yes"}');
SELECT mq.queue_declare('oq_bad', arguments => '{"ordered": true, "x-max-priority": 5}');
SELECT mq.queue_declare('oq_off', arguments => '{"ordered": false}');
SELECT mq.send('oq_off', 'u1'::text, message_group => 'U') IS NOT NULL;
SELECT mq.send('oq_off', 'u2'::text, message_group => 'U') IS NOT NULL;
SELECT count(*) AS unordered FROM mq.consume('oq_off', 10, auto_ack => true);

SELECT mq.queue_delete(q) FROM unnest(ARRAY['oq', 'oq_quorum', 'oq_off']) q;
