--
-- rabbit_length_limits: RabbitMQ's queue length limits, after its
-- queue_length_limits_SUITE and the overflow cases of dead_lettering_SUITE
-- (each case names the one it follows): x-max-length, x-max-length-bytes
-- (body bytes of the ready messages), x-overflow drop-head,
-- reject-publish and reject-publish-dlx.  A "get" of the suites is a
-- consume that leaves the message unacked, and unacked messages do not
-- count.  RabbitMQ's nack of a confirm is an error here (53400, the
-- transaction's other publishes go with it); reject-publish-dlx does not
-- raise, the refused message goes to the dead-letter exchange.  Then what
-- the suites cannot show: batches, several statements in one transaction,
-- subtransactions, both limits at once, delayed messages, bad arguments.
-- The concurrent cases are in the isolation test rabbit_max_length_bytes.
-- Names start with "rll_".
--
\set VERBOSITY default
\set SHOW_CONTEXT never
\ir test/regress/wait.sql

-- run a statement, return its error as SQLSTATE: message (or ok)
CREATE FUNCTION rll_try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
-- a body as its first character and length: "1x80"
CREATE FUNCTION rll_b(body bytea) RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN length(body) > 8
		   THEN left(convert_from(body, 'UTF8'), 1) || 'x' || length(body)
		   ELSE convert_from(body, 'UTF8') END
$$;
-- basic.get without ack: the next ready message (it stays unacked), or empty
CREATE FUNCTION rll_get(q text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce((SELECT rll_b(body) FROM mq.consume(q, 1, lease => '1 hour')), 'empty')
$$;
-- ready/unacked, ready bytes, and the ready bodies in order
CREATE FUNCTION rll_show(q text) RETURNS text LANGUAGE sql AS $$
	SELECT (SELECT ready || '/' || unacked || ' ' || coalesce(ready_bytes::text, 'null') || 'B'
			  FROM mq.queues WHERE queue = q) || ' ' ||
		   coalesce((SELECT string_agg(rll_b(body), ',' ORDER BY msg_id)
					   FROM mq.browse(q, 100)), '-')
$$;
-- take everything dead-lettered so far: body:reason:queue
CREATE FUNCTION rll_dead() RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(rll_b(body) || ':' || (headers->'x-death'->0->>'reason') || ':' ||
							   (headers->'x-death'->0->>'queue'), ',' ORDER BY msg_id), '-')
	  FROM mq.consume('rll_dead', 100, auto_ack => true)
$$;

SELECT mq.exchange_declare('rll_dlx', 'fanout');
SELECT mq.queue_declare('rll_dead');
SELECT mq.bind('rll_dead', 'rll_dlx');

------------------------------------------------------------------------
-- queue_length_limits_SUITE: max_length_bytes_drop_head, and
-- max_length_bytes_default (no x-overflow: drop-head), classic and quorum
-- (check_max_length_drops_head with 80-byte payloads and a 100-byte limit)
------------------------------------------------------------------------
SELECT mq.queue_declare('rll_bdh', arguments => '{"x-max-length-bytes": 100, "x-overflow": "drop-head"}');
SELECT mq.queue_declare('rll_bdef', arguments => '{"x-max-length-bytes": 100}');
SELECT mq.queue_declare('rll_bdefq', 'quorum', arguments => '{"x-max-length-bytes": 100}');
SELECT repeat('1', 80) AS p1, repeat('2', 80) AS p2, repeat('3', 80) AS p3 \gset
\set q rll_bdh
SELECT rll_get(:'q');
-- a single message is published and consumed
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- message 1 is replaced by message 2
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- messages 1 and 2 are replaced
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT mq.send(:'q', :'p3') IS NOT NULL;
SELECT rll_show(:'q');
SELECT rll_get(:'q');
SELECT rll_get(:'q');
\set q rll_bdef
SELECT rll_get(:'q');
-- a single message is published and consumed
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- message 1 is replaced by message 2
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- messages 1 and 2 are replaced
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT mq.send(:'q', :'p3') IS NOT NULL;
SELECT rll_show(:'q');
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- (quorum queues without synchronous standbys: commit locally, warned once)
SET mq.quorum_unavailable = wait;
SET client_min_messages = error;
\set q rll_bdefq
SELECT rll_get(:'q');
-- a single message is published and consumed
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- message 1 is replaced by message 2
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- messages 1 and 2 are replaced
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT mq.send(:'q', :'p3') IS NOT NULL;
SELECT rll_show(:'q');
SELECT rll_get(:'q');
SELECT rll_get(:'q');

-- queue_length_limits_SUITE: max_length_drop_head, max_length_default
-- (x-max-length 1), classic and quorum
SELECT mq.queue_declare('rll_dh', arguments => '{"x-max-length": 1, "x-overflow": "drop-head"}');
SELECT mq.queue_declare('rll_def', arguments => '{"x-max-length": 1}');
SELECT mq.queue_declare('rll_defq', 'quorum', arguments => '{"x-max-length": 1}');
SELECT '1' AS p1, '2' AS p2, '3' AS p3 \gset
RESET client_min_messages;
\set q rll_dh
SELECT rll_get(:'q');
-- a single message is published and consumed
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- message 1 is replaced by message 2
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- messages 1 and 2 are replaced
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT mq.send(:'q', :'p3') IS NOT NULL;
SELECT rll_show(:'q');
SELECT rll_get(:'q');
SELECT rll_get(:'q');
\set q rll_def
SELECT rll_get(:'q');
-- a single message is published and consumed
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- message 1 is replaced by message 2
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- messages 1 and 2 are replaced
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT mq.send(:'q', :'p3') IS NOT NULL;
SELECT rll_show(:'q');
SELECT rll_get(:'q');
SELECT rll_get(:'q');
SET client_min_messages = error;
\set q rll_defq
SELECT rll_get(:'q');
-- a single message is published and consumed
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- message 1 is replaced by message 2
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- messages 1 and 2 are replaced
SELECT mq.send(:'q', :'p1') IS NOT NULL;
SELECT mq.send(:'q', :'p2') IS NOT NULL;
SELECT mq.send(:'q', :'p3') IS NOT NULL;
SELECT rll_show(:'q');
SELECT rll_get(:'q');
SELECT rll_get(:'q');
RESET client_min_messages;

------------------------------------------------------------------------
-- queue_length_limits_SUITE: max_length_bytes_reject_confirm
-- (check_max_length_drops_publish, then check_max_length_rejects); its
-- max_length_bytes_drop_publish is the first half without confirms, the
-- same here: there is no publish without its answer
------------------------------------------------------------------------
SELECT mq.queue_declare('rll_brej', arguments => '{"x-max-length-bytes": 100, "x-overflow": "reject-publish"}');
SELECT repeat('1', 80) AS p1, repeat('2', 80) AS p2, repeat('3', 80) AS p3 \gset
\set q rll_brej
SELECT rll_get(:'q');
-- a single message is published and consumed
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p1'));
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- message 2 is dropped (refused), message 1 stays
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p1'));
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p2'));
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- messages 2 and 3 are dropped, message 1 stays
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p1'));
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p2'));
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p3'));
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- check_max_length_rejects
SELECT rll_get(:'q');
-- the first message can be enqueued and acks
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p1'));
-- the next two cannot be enqueued and nack
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p2'));
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p3'));
SELECT rll_get(:'q');
-- now message 2 can be published
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p2'));
SELECT rll_get(:'q');
-- the refusal says why (the five messages taken above stay unacked)
SELECT mq.send('rll_brej', repeat('4', 80)) IS NOT NULL;
SELECT mq.send('rll_brej', repeat('5', 21));
SELECT rll_show('rll_brej');

-- queue_length_limits_SUITE: max_length_reject_confirm, max_length_drop_publish
SELECT mq.queue_declare('rll_rej', arguments => '{"x-max-length": 1, "x-overflow": "reject-publish"}');
SELECT '1' AS p1, '2' AS p2, '3' AS p3 \gset
\set q rll_rej
SELECT rll_get(:'q');
-- a single message is published and consumed
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p1'));
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- message 2 is dropped (refused), message 1 stays
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p1'));
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p2'));
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- messages 2 and 3 are dropped, message 1 stays
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p1'));
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p2'));
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p3'));
SELECT rll_get(:'q');
SELECT rll_get(:'q');
-- check_max_length_rejects
SELECT rll_get(:'q');
-- the first message can be enqueued and acks
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p1'));
-- the next two cannot be enqueued and nack
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p2'));
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p3'));
SELECT rll_get(:'q');
-- now message 2 can be published
SELECT rll_try(format('SELECT mq.send(%L, %L)', :'q', :'p2'));
SELECT rll_get(:'q');

-- queue_length_limits_SUITE: max_length_drop_publish_requeue: a message
-- nacked back to a full reject-publish queue is not refused
SELECT mq.queue_declare('rll_rejrq', arguments => '{"x-max-length": 1, "x-overflow": "reject-publish"}');
SELECT rll_get('rll_rejrq');
SELECT mq.send('rll_rejrq', '1') IS NOT NULL;
SELECT msg_id AS m1, convert_from(body, 'UTF8') AS b1 FROM mq.consume('rll_rejrq', 1) \gset
\echo :b1
SELECT rll_get('rll_rejrq');
SELECT mq.send('rll_rejrq', '2') IS NOT NULL;
SELECT mq.nack('rll_rejrq', ARRAY[:m1], requeue => true);
SELECT rll_show('rll_rejrq');
SELECT rll_get('rll_rejrq');
SELECT rll_get('rll_rejrq');
SELECT rll_get('rll_rejrq');
-- the same with bytes: back over the limit, the next publish is refused
SELECT mq.queue_declare('rll_brejrq', arguments => '{"x-max-length-bytes": 100, "x-overflow": "reject-publish"}');
SELECT mq.send('rll_brejrq', repeat('1', 80)) IS NOT NULL;
SELECT msg_id AS m1 FROM mq.consume('rll_brejrq', 1) \gset
SELECT mq.send('rll_brejrq', repeat('2', 80)) IS NOT NULL;
SELECT rll_show('rll_brejrq');
SELECT mq.nack('rll_brejrq', ARRAY[:m1], requeue => true);
SELECT rll_show('rll_brejrq');
SELECT rll_try($$SELECT mq.send('rll_brejrq', 'x')$$);
-- taking one (here with auto-ack) makes room for 20 bytes, not 21
SELECT count(*) FROM mq.consume('rll_brejrq', 1, auto_ack => true);
SELECT rll_show('rll_brejrq');
SELECT rll_try($$SELECT mq.send('rll_brejrq', repeat('3', 21))$$);
SELECT rll_try($$SELECT mq.send('rll_brejrq', repeat('3', 20))$$);
SELECT rll_show('rll_brejrq');

------------------------------------------------------------------------
-- dead_lettering_SUITE: dead_letter_max_length_reject_publish_dlx: the
-- first message stays, the next two go to the dead-letter exchange
-- (reason maxlen); the publishes themselves succeed
------------------------------------------------------------------------
SELECT mq.queue_declare('rll_rdlx', arguments =>
	'{"x-max-length": 1, "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "rll_dlx"}');
SELECT mq.send('rll_rdlx', 'msg1') IS NOT NULL;
SELECT mq.send('rll_rdlx', 'msg2') IS NOT NULL;
SELECT mq.send('rll_rdlx', 'msg3') IS NOT NULL;
SELECT rll_show('rll_rdlx');
SELECT rll_dead();
-- the same with bytes, published as one batch: each message is checked on
-- its own, in order, so a later smaller one may still fit
SELECT mq.queue_declare('rll_brdlx', arguments =>
	'{"x-max-length-bytes": 10, "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "rll_dlx"}');
SELECT count(*) FROM mq.send_batch('rll_brdlx', ARRAY['aaaaaa', 'bbbbbbbb', 'cc', 'd', 'e']);
SELECT rll_show('rll_brdlx');
SELECT rll_dead();
-- without a dead-letter exchange that takes it, the refused message would
-- be lost: the publish fails as with reject-publish
SELECT mq.queue_declare('rll_rdlx0', arguments => '{"x-max-length": 1, "x-overflow": "reject-publish-dlx"}');
SELECT mq.send('rll_rdlx0', 'm1') IS NOT NULL;
SELECT mq.send('rll_rdlx0', 'm2');
SELECT mq.exchange_declare('rll_nowhere', 'fanout');
SELECT mq.queue_declare('rll_rdlx1', arguments =>
	'{"x-max-length": 1, "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "rll_nowhere"}');
SELECT mq.send('rll_rdlx1', 'm1') IS NOT NULL;
SELECT rll_try($$SELECT mq.send('rll_rdlx1', 'm2')$$);
SELECT rll_show('rll_rdlx0') || ' | ' || rll_show('rll_rdlx1');
-- routed to a full reject-publish-dlx queue and an open one (fanout): the
-- open one takes it, the full one dead-letters it, the id is returned
SELECT mq.exchange_declare('rll_fan', 'fanout');
SELECT mq.queue_declare('rll_open');
SELECT mq.bind('rll_rdlx', 'rll_fan');
SELECT mq.bind('rll_open', 'rll_fan');
SELECT mq.publish('rll_fan', '', 'fan1') IS NOT NULL;
SELECT rll_show('rll_rdlx') || ' | ' || rll_show('rll_open');
SELECT rll_dead();
-- a rollback takes the dead-letter copy back too
BEGIN;
SELECT mq.send('rll_rdlx', 'gone') IS NOT NULL;
ROLLBACK;
SELECT rll_dead();

-- dead_lettering_SUITE: dead_letter_headers_reason_maxlen, for bytes:
-- drop-head dead-letters the head with reason maxlen
SELECT mq.queue_declare('rll_bdhx', arguments =>
	'{"x-max-length-bytes": 4, "x-dead-letter-exchange": "rll_dlx"}');
SELECT mq.send('rll_bdhx', 'P1') IS NOT NULL;
SELECT mq.send('rll_bdhx', 'P2') IS NOT NULL;
SELECT mq.send('rll_bdhx', 'P3') IS NOT NULL;
SELECT rll_show('rll_bdhx');
SELECT rll_dead();
-- a body larger than the limit is dropped itself, once no older one is left
SELECT mq.send('rll_bdhx', 'big!!') IS NOT NULL;
SELECT rll_show('rll_bdhx');
SELECT rll_dead();
-- an empty body costs no bytes
SELECT count(*) FROM mq.send_batch('rll_bdhx', ARRAY['', '', 'P4', 'P5', '']);
SELECT rll_show('rll_bdhx');
SELECT rll_dead();

------------------------------------------------------------------------
-- both limits: whichever is reached first
------------------------------------------------------------------------
SELECT mq.queue_declare('rll_both', arguments =>
	'{"x-max-length": 3, "x-max-length-bytes": 10, "x-dead-letter-exchange": "rll_dlx"}');
SELECT count(*) FROM mq.send_batch('rll_both', ARRAY['a', 'b', 'c', 'd']);	-- count
SELECT rll_show('rll_both');
SELECT count(*) FROM mq.send_batch('rll_both', ARRAY['eeeee', 'ffff']);	-- bytes
SELECT rll_show('rll_both');
SELECT rll_dead();
SELECT mq.queue_declare('rll_bothr', arguments =>
	'{"x-max-length": 3, "x-max-length-bytes": 10, "x-overflow": "reject-publish"}');
SELECT rll_try($$SELECT mq.send_batch('rll_bothr', ARRAY['a', 'b', 'c', 'd'])$$);
SELECT rll_try($$SELECT mq.send_batch('rll_bothr', ARRAY['aaaaaa', 'bbbbb'])$$);
SELECT rll_try($$SELECT mq.send_batch('rll_bothr', ARRAY['aaaaa', 'bbbbb'])$$);
SELECT rll_try($$SELECT mq.send('rll_bothr', '')$$);
SELECT rll_show('rll_bothr');

------------------------------------------------------------------------
-- batches and several statements in one transaction (drop-head)
------------------------------------------------------------------------
SELECT mq.queue_declare('rll_bt', arguments => '{"x-max-length-bytes": 6, "x-dead-letter-exchange": "rll_dlx"}');
-- a batch larger than the limit: only its newest messages that fit stay
SELECT count(*) FROM mq.send_batch('rll_bt', ARRAY['b1', 'b2', 'b3', 'b4', 'b5']);
SELECT rll_show('rll_bt');
SELECT rll_dead();
-- several statements in one transaction: inside it, those dropped already
-- count as unacked (being dead-lettered), the transaction's own not at all
BEGIN;
SELECT mq.send('rll_bt', 'c1') IS NOT NULL;
SELECT count(*) FROM mq.send_batch('rll_bt', ARRAY['c2', 'c3']);
SELECT mq.send('rll_bt', 'c4444') IS NOT NULL;
SELECT rll_show('rll_bt');
COMMIT;
SELECT rll_show('rll_bt');
SELECT rll_dead();
-- a rollback undoes the drops: nothing dead-lettered, bytes as before
BEGIN;
SELECT count(*) FROM mq.send_batch('rll_bt', ARRAY['d1', 'd2', 'd3']);
ROLLBACK;
SELECT rll_show('rll_bt');
SELECT rll_dead();
-- a subtransaction rolled back: its messages and drops are undone
BEGIN;
SELECT mq.send('rll_bt', 'e1') IS NOT NULL;
SAVEPOINT sp;
SELECT count(*) FROM mq.send_batch('rll_bt', ARRAY['e2', 'e3', 'e4']);
ROLLBACK TO sp;
SELECT mq.send('rll_bt', 'e5') IS NOT NULL;
COMMIT;
SELECT rll_show('rll_bt');
SELECT rll_dead();
-- consuming frees room; acking changes nothing more
SELECT rll_get('rll_bt');
SELECT rll_show('rll_bt');
SELECT count(*) FROM mq.send_batch('rll_bt', ARRAY['f1', 'f2']);
SELECT rll_show('rll_bt');
SELECT rll_dead();
-- a purge empties the bytes too
SELECT mq.queue_purge('rll_bt');
SELECT rll_show('rll_bt');

-- reject-publish in one transaction: the statement that would exceed the
-- limit fails; the earlier ones count
SELECT mq.queue_declare('rll_btr', arguments => '{"x-max-length-bytes": 6, "x-overflow": "reject-publish"}');
SELECT rll_try($$SELECT mq.send_batch('rll_btr', ARRAY['r1', 'r2', 'r3', 'r4'])$$);
BEGIN;
SELECT mq.send('rll_btr', 's1') IS NOT NULL;
SELECT count(*) FROM mq.send_batch('rll_btr', ARRAY['s2', 's']);
SAVEPOINT sp;
SELECT mq.send('rll_btr', 's3');
ROLLBACK TO sp;
SELECT mq.send('rll_btr', 's') IS NOT NULL;
COMMIT;
SELECT rll_show('rll_btr');

-- reject-publish-dlx in one transaction: each statement sees the earlier ones
SELECT rll_get('rll_brdlx');
BEGIN;
SELECT mq.send('rll_brdlx', 'xxx') IS NOT NULL;
SELECT count(*) FROM mq.send_batch('rll_brdlx', ARRAY['yyyy', 'z']);
COMMIT;
SELECT rll_show('rll_brdlx');
SELECT rll_dead();

------------------------------------------------------------------------
-- delayed messages count when they fall due (their body size waits with
-- them in the timer), and so does a message nacked with a delay
------------------------------------------------------------------------
SELECT mq.queue_declare('rll_dl', arguments => '{"x-max-length-bytes": 100, "x-overflow": "reject-publish"}');
SELECT mq.send('rll_dl', repeat('d', 60), delay => '100 ms') IS NOT NULL;
SELECT rll_show('rll_dl');
SELECT wait_until($$SELECT ready >= 1 FROM mq.queues WHERE queue = 'rll_dl'$$);
SELECT rll_show('rll_dl');
SELECT rll_try($$SELECT mq.send('rll_dl', repeat('e', 41))$$);
SELECT msg_id AS m1 FROM mq.consume('rll_dl', 1) \gset
SELECT rll_show('rll_dl');
SELECT mq.nack('rll_dl', ARRAY[:m1], delay => '100 ms');
SELECT wait_until($$SELECT ready >= 1 FROM mq.queues WHERE queue = 'rll_dl'$$);
SELECT rll_show('rll_dl');
SELECT rll_try($$SELECT mq.send('rll_dl', repeat('e', 41))$$);

------------------------------------------------------------------------
-- a delayed message that falls due into a full reject-publish queue is
-- refused as its publish would be (RabbitMQ's delayed-message exchange
-- publishes it when due): dropped on reject-publish, dead-lettered with
-- reason maxlen on reject-publish-dlx; one that fits is appended
------------------------------------------------------------------------
SELECT mq.queue_declare('rll_dfull', arguments => '{"x-max-length": 2, "x-overflow": "reject-publish"}');
SELECT mq.send('rll_dfull', 'now') IS NOT NULL;
SELECT mq.send('rll_dfull', 'late1', delay => '100 ms') IS NOT NULL;
SELECT mq.send('rll_dfull', 'late2', delay => '150 ms') IS NOT NULL;
SELECT wait_until($$SELECT delayed = 0 FROM mq.queues WHERE queue = 'rll_dfull'$$);
SELECT rll_show('rll_dfull');
-- but a message nacked with a delay comes back to the full queue
SELECT msg_id AS m1 FROM mq.consume('rll_dfull', 1) \gset
SELECT mq.send('rll_dfull', 'fills') IS NOT NULL;
SELECT mq.nack('rll_dfull', ARRAY[:m1], delay => '100 ms');
SELECT wait_until($$SELECT delayed = 0 FROM mq.queues WHERE queue = 'rll_dfull'$$);
SELECT rll_show('rll_dfull');
SELECT mq.queue_declare('rll_dfdlx', arguments =>
	'{"x-max-length-bytes": 10, "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "rll_dlx"}');
SELECT mq.send('rll_dfdlx', 'now12') IS NOT NULL;
SELECT mq.send('rll_dfdlx', 'late123', delay => '100 ms') IS NOT NULL;
SELECT mq.send('rll_dfdlx', 'ok', delay => '200 ms') IS NOT NULL;
SELECT wait_until($$SELECT delayed = 0 FROM mq.queues WHERE queue = 'rll_dfdlx'$$);
SELECT rll_show('rll_dfdlx');
SELECT rll_dead();

------------------------------------------------------------------------
-- bad arguments: 22023
------------------------------------------------------------------------
SELECT rll_try($$SELECT mq.queue_declare('rll_bad', arguments => '{"x-max-length-bytes": -1}')$$);
SELECT rll_try($$SELECT mq.queue_declare('rll_bad', arguments => '{"x-max-length-bytes": 1.5}')$$);
SELECT rll_try($$SELECT mq.queue_declare('rll_bad', arguments => '{"x-max-length-bytes": "100"}')$$);
SELECT rll_try($$SELECT mq.queue_declare('rll_bad', arguments => '{"x-max-length-bytes": null}')$$);
SELECT rll_try($$SELECT mq.queue_declare('rll_bad', arguments => '{"x-max-length-bytes": 9223372036854775808}')$$);
SELECT rll_try($$SELECT mq.queue_declare('rll_bad', arguments => '{"x-overflow": "drop-tail"}')$$);
SELECT rll_try($$SELECT mq.queue_declare('rll_bad', arguments => '{"x-overflow": "Reject-Publish-DLX"}')$$);
SELECT rll_try($$SELECT mq.queue_declare('rll_bad', arguments => '{"x-overflow": 1}')$$);
-- 1e3 is the integer 1000 (jsonb keeps no exponent), as for x-max-length
SELECT mq.queue_declare('rll_e3', arguments => '{"x-max-length-bytes": 1e3}');
SELECT arguments FROM mq.queues WHERE queue = 'rll_e3';
-- the largest limit is a bigint; a redeclare with another limit is refused
SELECT mq.queue_declare('rll_big', arguments => '{"x-max-length-bytes": 9223372036854775807}');
SELECT rll_try($$SELECT mq.queue_declare('rll_big', arguments => '{"x-max-length-bytes": 1}')$$);
SELECT mq.send('rll_big', 'fits') IS NOT NULL;
SELECT rll_show('rll_big');
-- queues without the limit record no body sizes
SELECT rll_show('rll_open');

-- clean up
DROP FUNCTION wait_until(text, interval);
DROP FUNCTION rll_try(text);
DROP FUNCTION rll_show(text);
DROP FUNCTION rll_dead();
DROP FUNCTION rll_get(text);
DROP FUNCTION rll_b(bytea);
SELECT count(*) FROM (SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue LIKE 'rll\_%') d;
SELECT mq.exchange_delete('rll_fan');
SELECT mq.exchange_delete('rll_nowhere');
SELECT mq.exchange_delete('rll_dlx');
