--
-- broker_max_length: x-max-length holds after every commit however the
-- messages arrive: one per transaction, a batch, several statements in one
-- transaction, routed to several queues at once, with and without a
-- rollback.  drop-head dead-letters the oldest (reason maxlen, the
-- transaction's own messages too once no committed one is left);
-- reject-publish fails the publish that would exceed the limit.  The
-- concurrent cases are in the isolation test broker_max_length.  Names
-- start with "bml_".
--
\set VERBOSITY sqlstate
SELECT mq.exchange_declare('bml_dlx', 'fanout');
SELECT mq.queue_declare('bml_dead');
SELECT mq.bind('bml_dead', 'bml_dlx');
SELECT mq.queue_declare('bml_q', arguments => '{"x-max-length": 2, "x-dead-letter-exchange": "bml_dlx"}');
SELECT mq.queue_declare('bml_q3', arguments => '{"x-max-length": 3}');
SELECT mq.queue_declare('bml_r', arguments => '{"x-max-length": 2, "x-overflow": "reject-publish"}');
SELECT mq.exchange_declare('bml_fan', 'fanout');
SELECT mq.bind('bml_q', 'bml_fan');
SELECT mq.bind('bml_q3', 'bml_fan');

CREATE FUNCTION bml_show(q text) RETURNS text LANGUAGE sql AS $$
	SELECT (SELECT ready || '/' || total FROM mq.queues WHERE queue = q) || ' ' ||
		   coalesce((SELECT string_agg(convert_from(body, 'UTF8'), ',' ORDER BY msg_id)
					   FROM mq.browse(q, 100)), '-')
$$;
CREATE FUNCTION bml_dead() RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(convert_from(body, 'UTF8') || ':' || (headers->'x-death'->0->>'reason'),
							   ',' ORDER BY msg_id), '-')
	  FROM mq.consume('bml_dead', 100, auto_ack => true)
$$;

-- one message per transaction
SELECT mq.send('bml_q', 'a1') IS NOT NULL;
SELECT mq.send('bml_q', 'a2') IS NOT NULL;
SELECT mq.send('bml_q', 'a3') IS NOT NULL;
SELECT bml_show('bml_q');
SELECT bml_dead();

-- a batch larger than the limit: only its newest two stay
SELECT count(*) FROM mq.send_batch('bml_q', ARRAY['b1', 'b2', 'b3', 'b4', 'b5']::text[]);
SELECT bml_show('bml_q');
SELECT bml_dead();

-- several statements in one transaction
BEGIN;
SELECT mq.send('bml_q', 'c1') IS NOT NULL;
SELECT mq.send('bml_q', 'c2') IS NOT NULL;
SELECT count(*) FROM mq.send_batch('bml_q', ARRAY['c3', 'c4']::text[]);
SELECT mq.send('bml_q', 'c5') IS NOT NULL;
SELECT bml_show('bml_q');	-- inside: b4, b5 (and c1..c3) are being dead-lettered
COMMIT;
SELECT bml_show('bml_q');
SELECT bml_dead();

-- a rollback undoes the overflow too: nothing dropped, nothing dead-lettered
BEGIN;
SELECT count(*) FROM mq.send_batch('bml_q', ARRAY['d1', 'd2', 'd3']::text[]);
ROLLBACK;
SELECT bml_show('bml_q');
SELECT bml_dead();

-- a subtransaction rolled back: its messages and its drops are undone
BEGIN;
SELECT mq.send('bml_q', 'e1') IS NOT NULL;
SAVEPOINT sp;
SELECT count(*) FROM mq.send_batch('bml_q', ARRAY['e2', 'e3', 'e4']::text[]);
ROLLBACK TO sp;
SELECT mq.send('bml_q', 'e5') IS NOT NULL;
COMMIT;
SELECT bml_show('bml_q');
SELECT bml_dead();

-- routed to two limited queues at once (fanout): each keeps its own limit
SELECT count(*) FROM mq.publish_batch('bml_fan', ARRAY['', '', '', ''],
	ARRAY['f1', 'f2', 'f3', 'f4']::text[]);
SELECT bml_show('bml_q');
SELECT bml_show('bml_q3');
SELECT bml_dead();

-- consumed (unacked) messages do not count; the limit is on ready ones
SELECT convert_from(body, 'UTF8') FROM mq.consume('bml_q3', 1);
SELECT count(*) FROM mq.send_batch('bml_q3', ARRAY['g1', 'g2']::text[]);
SELECT bml_show('bml_q3');

-- reject-publish: a batch that would exceed the limit fails whole
SELECT count(*) FROM mq.send_batch('bml_r', ARRAY['r1', 'r2', 'r3']::text[]);
SELECT bml_show('bml_r');
SELECT count(*) FROM mq.send_batch('bml_r', ARRAY['r1', 'r2']::text[]);
SELECT mq.send('bml_r', 'r3');
SELECT bml_show('bml_r');
-- ... and so does the statement of a transaction that would exceed it
SELECT count(*) FROM mq.consume('bml_r', 2, auto_ack => true);
BEGIN;
SELECT mq.send('bml_r', 's1') IS NOT NULL;
SELECT mq.send('bml_r', 's2') IS NOT NULL;
SAVEPOINT sp;
SELECT mq.send('bml_r', 's3');
ROLLBACK TO sp;
COMMIT;
SELECT bml_show('bml_r');

DROP FUNCTION bml_show(text);
DROP FUNCTION bml_dead();
SELECT mq.exchange_delete('bml_fan');
SELECT mq.queue_delete('bml_q');
SELECT mq.queue_delete('bml_q3');
SELECT mq.queue_delete('bml_r');
SELECT mq.queue_delete('bml_dead');
SELECT mq.exchange_delete('bml_dlx');
