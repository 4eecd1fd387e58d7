--
-- security_search_path: no code of a caller's ever runs with the extension
-- owner's rights.  queue_ext runs internal SQL as the owner of schema mq;
-- an attacker with no grant beyond CREATE ON SCHEMA mq (to own queues)
-- plants every kind of object that an unqualified name could resolve to:
--   - temp domains shadowing the built-in types (types are looked up in
--     pg_temp first), whose CHECK calls a temp function;
--   - in a schema of theirs put first in search_path: aggregates count(*)
--     min() max(), operators = <> < <= > >= + -, and functions named like
--     casts and built-ins (text(), int8(), now(), ...).
-- Each trap records current_user in sec_attack_log.  The attacker then
-- calls every function of mq that runs internal SQL; the test fails if any
-- trap ran as anybody but the attacker.  Names start with "sec_".
--
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_mq_mallory;
RESET client_min_messages;
CREATE ROLE regress_mq_mallory;
GRANT CREATE ON SCHEMA mq TO regress_mq_mallory;
CREATE SCHEMA sec_evil AUTHORIZATION regress_mq_mallory;
CREATE TABLE public.sec_attack_log (who name, route text);
GRANT INSERT, SELECT, DELETE ON public.sec_attack_log TO PUBLIC;
-- a producer group needs a check function
CREATE FUNCTION public.sec_check(bigint, jsonb, bytea) RETURNS text
	LANGUAGE sql AS $$ SELECT 'unknown'::text $$;

SET ROLE regress_mq_mallory;

-- the trap: harmless here, it only writes down who ran it
CREATE FUNCTION sec_evil.pwn(route pg_catalog.text) RETURNS pg_catalog.bool
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.sec_attack_log VALUES (pg_catalog.current_user(), route);
	RETURN true;
END $$;
CREATE FUNCTION pg_temp.pwn(route pg_catalog.text) RETURNS pg_catalog.bool
LANGUAGE sql AS $$ SELECT sec_evil.pwn('temp function: ' OPERATOR(pg_catalog.||) route) $$;

-- temp domains over the types internal SQL uses
DO $do$
DECLARE
	t pg_catalog.text;
BEGIN
	FOREACH t IN ARRAY ARRAY['text', 'int2', 'int4', 'int8', 'bool', 'oid', 'name',
		'jsonb', 'bytea', 'interval', 'timestamptz', 'regclass', 'regprocedure', 'tid']
	LOOP
		EXECUTE pg_catalog.format('CREATE DOMAIN pg_temp.%I AS pg_catalog.%I '
			'CHECK (pg_temp.pwn(%L))', t, t, 'domain ' OPERATOR(pg_catalog.||) t);
	END LOOP;
END $do$;

-- aggregates that shadow pg_catalog's when sec_evil comes first
CREATE FUNCTION sec_evil.count_step(pg_catalog.int8) RETURNS pg_catalog.int8
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sec_evil.pwn('aggregate count');
	RETURN $1 OPERATOR(pg_catalog.+) 1;
END $$;
CREATE AGGREGATE sec_evil.count(*) (sfunc = sec_evil.count_step,
	stype = pg_catalog.int8, initcond = '0');
DO $do$
DECLARE
	t pg_catalog.text;
	agg pg_catalog.text;
BEGIN
	FOREACH agg IN ARRAY ARRAY['min', 'max']
	LOOP
		FOREACH t IN ARRAY ARRAY['int4', 'int8', 'timestamptz', 'text']
		LOOP
			EXECUTE pg_catalog.format($f$
				CREATE FUNCTION sec_evil.%1$I(pg_catalog.%2$I, pg_catalog.%2$I)
				RETURNS pg_catalog.%2$I LANGUAGE plpgsql STRICT AS $b$
				BEGIN
					PERFORM sec_evil.pwn(%3$L);
					RETURN pg_catalog.%4$I($1, $2);
				END $b$ $f$, agg || '_step_' || t, t, 'aggregate ' || agg,
				CASE agg WHEN 'min' THEN t || 'smaller' ELSE t || 'larger' END);
			EXECUTE pg_catalog.format('CREATE AGGREGATE sec_evil.%I(pg_catalog.%I) '
				'(sfunc = sec_evil.%I, stype = pg_catalog.%I)',
				agg, t, agg || '_step_' || t, t);
		END LOOP;
	END LOOP;
END $do$;

-- comparison operators that shadow pg_catalog's
DO $do$
DECLARE
	t pg_catalog.text;
	op pg_catalog.text[];
BEGIN
	FOREACH t IN ARRAY ARRAY['int2', 'int4', 'int8', 'text', 'oid', 'bool', 'tid',
		'timestamptz', 'name']
	LOOP
		FOREACH op SLICE 1 IN ARRAY ARRAY[['=', 'eq'], ['<>', 'ne'], ['<', 'lt'],
			['<=', 'le'], ['>', 'gt'], ['>=', 'ge']]
		LOOP
			CONTINUE WHEN t IN ('bool', 'tid') AND op[1] NOT IN ('=', '<>');
			EXECUTE pg_catalog.format($f$
				CREATE FUNCTION sec_evil.%1$I(a pg_catalog.%2$I, b pg_catalog.%2$I)
				RETURNS pg_catalog.bool LANGUAGE plpgsql AS $b$
				BEGIN
					PERFORM sec_evil.pwn(%3$L);
					RETURN a OPERATOR(pg_catalog.%4$s) b;
				END $b$ $f$, 'op_' || op[2] || '_' || t, t,
				'operator ' || op[1] || ' ' || t, op[1]);
			EXECUTE pg_catalog.format('CREATE OPERATOR sec_evil.%s (leftarg = pg_catalog.%I, '
				'rightarg = pg_catalog.%I, function = sec_evil.%I)',
				op[1], t, t, 'op_' || op[2] || '_' || t);
		END LOOP;
	END LOOP;
END $do$;

-- arithmetic operators
CREATE FUNCTION sec_evil.op_plus_int4(a pg_catalog.int4, b pg_catalog.int4)
RETURNS pg_catalog.int4 LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sec_evil.pwn('operator + int4');
	RETURN a OPERATOR(pg_catalog.+) b;
END $$;
CREATE OPERATOR sec_evil.+ (leftarg = pg_catalog.int4, rightarg = pg_catalog.int4,
	function = sec_evil.op_plus_int4);
CREATE FUNCTION sec_evil.op_plus_tsi(a pg_catalog.timestamptz, b pg_catalog.interval)
RETURNS pg_catalog.timestamptz LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sec_evil.pwn('operator timestamptz + interval');
	RETURN a OPERATOR(pg_catalog.+) b;
END $$;
CREATE OPERATOR sec_evil.+ (leftarg = pg_catalog.timestamptz, rightarg = pg_catalog.interval,
	function = sec_evil.op_plus_tsi);
CREATE FUNCTION sec_evil.op_minus_tsi(a pg_catalog.timestamptz, b pg_catalog.interval)
RETURNS pg_catalog.timestamptz LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sec_evil.pwn('operator timestamptz - interval');
	RETURN a OPERATOR(pg_catalog.-) b;
END $$;
CREATE OPERATOR sec_evil.- (leftarg = pg_catalog.timestamptz, rightarg = pg_catalog.interval,
	function = sec_evil.op_minus_tsi);

-- functions named like casts and built-ins
CREATE FUNCTION sec_evil.now() RETURNS pg_catalog.timestamptz LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sec_evil.pwn('function now()');
	RETURN pg_catalog.now();
END $$;
CREATE FUNCTION sec_evil.text(pg_catalog.int4) RETURNS pg_catalog.text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sec_evil.pwn('cast function text(int4)');
	RETURN pg_catalog.textin(pg_catalog.int4out($1));
END $$;
CREATE FUNCTION sec_evil.int8(pg_catalog.int4) RETURNS pg_catalog.int8 LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sec_evil.pwn('cast function int8(int4)');
	RETURN pg_catalog.int8($1);
END $$;
SET search_path = sec_evil, pg_catalog, public;

-- the traps are armed: each fires for the attacker's own unqualified SQL
SELECT count(*) FROM (VALUES (1)) v;
SELECT 1::int8 = 1::int8 AND 1::int4 < 2 AND 'a'::pg_catalog.text <> 'b';
SELECT min(x), max(x) FROM (VALUES (1::int8)) v(x);
SELECT now() IS NOT NULL, text(1), int8(1) = 1;
SELECT 'x'::text;
SELECT route, count(*) > 0 AS fired FROM public.sec_attack_log
 WHERE who = 'regress_mq_mallory' GROUP BY route ORDER BY route;
DELETE FROM public.sec_attack_log;

-- every function of mq that runs internal SQL, called the way a user would
SELECT mq.exchange_declare('sec_x', 'topic');
SELECT mq.exchange_declare('sec_dlx', 'fanout');
SELECT mq.queue_declare('sec_q', 'classic', true,
	'{"x-dead-letter-exchange": "sec_dlx", "x-delivery-limit": 5}');
SELECT mq.queue_declare('sec_dead');
SELECT mq.queue_declare('sec_tmp', durable => false);
SELECT mq.bind('sec_q', 'sec_x', 'a.#');
SELECT mq.bind('sec_dead', 'sec_dlx');
SELECT mq.bind('sec_tmp', 'sec_x', 'b.*');
SELECT mq.unbind('sec_tmp', 'sec_x', 'b.*');
SELECT mq.consumer_declare('sec_q', 'sec_c', 10);
SELECT mq.grant('consume', 'queue', 'sec_q', 'regress_mq_mallory');
SELECT mq.revoke('consume', 'queue', 'sec_tmp', 'regress_mq_mallory');
SELECT mq.publish('sec_x', 'a.b', 'm1'::pg_catalog.text, key => 'sec_k1') IS NOT NULL;
SELECT mq.publish('sec_x', 'a.b', '{"m": 2}'::pg_catalog.jsonb, dedup_id => 'sec_d1') IS NOT NULL;
SELECT mq.publish('sec_x', 'a.b', 'm2'::pg_catalog.text, dedup_id => 'sec_d1') IS NOT NULL;
SELECT mq.publish('sec_x', 'a.b', '\x6d33'::pg_catalog.bytea, headers => '{"h": 1}') IS NOT NULL;
SELECT mq.send('sec_q', 'm4'::pg_catalog.text, priority => 1) IS NOT NULL;
SELECT pg_catalog.count(*) FROM mq.publish_batch('sec_x', ARRAY['a.1', 'a.2'],
	ARRAY['b1', 'b2']::pg_catalog.text[]);
SELECT pg_catalog.count(*) FROM mq.send_batch('sec_q', ARRAY['b3', 'b4']::pg_catalog.text[]);
SELECT mq.publish('sec_x', 'a.b', 'later'::pg_catalog.text, delay => '1 hour') AS delayed_id \gset
SELECT mq.cancel(:delayed_id);
SELECT mq.publish('sec_x', 'a.b', 'later2'::pg_catalog.text,
	deliver_at => pg_catalog.now() OPERATOR(pg_catalog.+) '1 day'::pg_catalog.interval) IS NOT NULL;
SELECT queue, ready, delayed FROM mq.queues WHERE queue LIKE 'sec%' ORDER BY queue;
SELECT pg_catalog.count(*) FROM mq.browse('sec_q', 100);
SELECT pg_catalog.count(*) FROM mq.messages_by_key('sec_k1');
SELECT pg_catalog.count(*) FROM mq.message(:delayed_id);
SELECT event FROM mq.trace(:delayed_id) ORDER BY 1;
SELECT msg_id AS m1 FROM mq.consume('sec_q', consumer => 'sec_c') \gset
SELECT mq.extend_lease('sec_q', ARRAY[:m1]::pg_catalog.int8[], '1 minute');
SELECT mq.ack('sec_q', ARRAY[:m1]::pg_catalog.int8[]);
SELECT msg_id AS m2 FROM mq.consume('sec_q') \gset
SELECT mq.nack('sec_q', ARRAY[:m2]::pg_catalog.int8[], requeue => false);
SELECT msg_id AS m3 FROM mq.consume('sec_q') \gset
SELECT mq.nack('sec_q', ARRAY[:m3]::pg_catalog.int8[], delay => '1 hour');
SELECT msg_id AS m4 FROM mq.consume('sec_q') \gset
SELECT mq.reject('sec_q', :m4, requeue => false);
SELECT pg_catalog.count(*) FROM mq.consume('sec_q', 2, auto_ack => true);
SELECT pg_catalog.count(*) FROM mq.consume('sec_dead', 10, auto_ack => true);
SELECT mq.producer_group_declare('sec_pg',
	'public.sec_check(pg_catalog.int8, pg_catalog.jsonb, pg_catalog.bytea)');
SELECT mq.publish_half('sec_x', 'a.b', 'h1'::pg_catalog.text, 'sec_pg') AS h1 \gset
SELECT mq.publish_half('sec_x', 'a.b', 'h2'::pg_catalog.text, 'sec_pg') AS h2 \gset
SELECT mq.end_half(:h1, 'commit') = :h1;
SELECT mq.end_half(:h2, 'rollback');
SELECT pg_catalog.count(*) FROM mq.half_messages WHERE producer_group = 'sec_pg';
SELECT mq.consumer_delete('sec_q', 'sec_c');
SELECT mq.queue_purge('sec_q') >= 0;
SELECT mq.log_retire();			-- refused: not the owner
SELECT mq.queue_delete('sec_tmp');
SELECT mq.queue_delete('sec_q');
SELECT mq.exchange_delete('sec_x');

-- the attacker's objects never ran as another role
RESET search_path;
RESET ROLE;
SELECT who, route, pg_catalog.count(*) FROM public.sec_attack_log
 WHERE who <> 'regress_mq_mallory' GROUP BY who, route ORDER BY 1, 2;

-- clean up
SELECT mq.queue_delete('sec_dead');
SELECT mq.exchange_delete('sec_dlx');
DELETE FROM mq.cat_producer_group WHERE name = 'sec_pg';
DISCARD TEMP;
SET client_min_messages = warning;
DROP SCHEMA sec_evil CASCADE;
RESET client_min_messages;
DROP TABLE public.sec_attack_log;
DROP FUNCTION public.sec_check(bigint, jsonb, bytea);
REVOKE CREATE ON SCHEMA mq FROM regress_mq_mallory;
DROP ROLE regress_mq_mallory;
