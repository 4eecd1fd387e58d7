--
-- broker_privileges: publish / consume / configure are separate privileges
-- checked in C; internal tables are not readable; CREATE ON SCHEMA mq lets
-- a role declare queues it owns.  Roles regress_mq_alice / regress_mq_bob.
--
\set VERBOSITY sqlstate
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_mq_alice;
DROP ROLE IF EXISTS regress_mq_bob;
RESET client_min_messages;
CREATE ROLE regress_mq_alice;
CREATE ROLE regress_mq_bob;
SELECT mq.queue_declare('bpv_q');
SELECT mq.exchange_declare('bpv_x', 'direct');
SELECT mq.bind('bpv_q', 'bpv_x', 'k');
SELECT count(*) FROM mq.send_batch('bpv_q', ARRAY['m1', 'm2', 'm3']::text[]);

-- no grants: cannot publish, consume, declare, delete, bind, purge, grant
SET ROLE regress_mq_alice;
SELECT mq.publish('bpv_x', 'k', 'x'::text);
SELECT mq.send('bpv_q', 'x'::text);
SELECT mq.publish('', 'bpv_q', 'x'::text);
SELECT * FROM mq.consume('bpv_q');
SELECT * FROM mq.browse('bpv_q');
SELECT mq.ack('bpv_q', ARRAY[1]::bigint[]);
SELECT mq.queue_declare('bpv_alice');
SELECT mq.exchange_declare('bpv_alice_x');
SELECT mq.queue_delete('bpv_q');
SELECT mq.queue_purge('bpv_q');
SELECT mq.exchange_delete('bpv_x');
SELECT mq.bind('bpv_q', 'bpv_x', 'other');
SELECT mq.grant('consume', 'queue', 'bpv_q', 'regress_mq_alice');
-- the inspection views are readable; mq.queues shows her only the queues
-- she holds a privilege on: none yet (issue 35, item 8)
SELECT queue, ready FROM mq.queues WHERE queue = 'bpv_q';
SELECT exchange, type FROM mq.exchanges WHERE exchange = 'bpv_x';
-- internal tables are not
SELECT count(*) FROM mq.cat_queue;
SELECT count(*) FROM mq.cat_exchange;
SELECT count(*) FROM mq.cat_grant;
SELECT count(*) FROM mq.timer;
RESET ROLE;
SELECT format('mq_storage.%I', c.relname) AS lane_rel FROM mq.cat_queue q, pg_class c
 WHERE q.name = 'bpv_q' AND c.oid = q.lanes[1] \gset
SELECT format('mq_storage.%I', 's' || q.id || '_0_0') AS settle_rel FROM mq.cat_queue q
 WHERE q.name = 'bpv_q' \gset
SELECT format('mq_storage.%I', c.relname) AS seg_rel FROM mq.cat_segment s, pg_class c
 WHERE c.oid = s.relid ORDER BY s.segno LIMIT 1 \gset
SET ROLE regress_mq_alice;
SELECT count(*) FROM :lane_rel;
SELECT count(*) FROM :settle_rel;
SELECT count(*) FROM :seg_rel;
-- nor writable
INSERT INTO mq.cat_grant VALUES ('q', 1, 0, 'consume');
-- internal functions are not executable
SELECT mq._queue_declare_impl('bpv_evil', 'classic', true, '{}', 0);
RESET ROLE;

-- publish on the exchange: alice can publish, but not consume
SELECT mq.grant('publish', 'exchange', 'bpv_x', 'regress_mq_alice');
SET ROLE regress_mq_alice;
SELECT mq.publish('bpv_x', 'k', 'from alice'::text) AS alice_id \gset
SELECT :alice_id > 0 AS published;
SELECT * FROM mq.consume('bpv_q');
SELECT mq.send('bpv_q', 'x'::text);          -- needs publish on the queue
SELECT msg_id FROM mq.message(:alice_id);    -- reading needs consume on the exchange
RESET ROLE;

-- consume on the queue: bob can consume and ack, not publish
SELECT mq.grant('consume', 'queue', 'bpv_q', 'regress_mq_bob');
SET ROLE regress_mq_bob;
SELECT mq.publish('bpv_x', 'k', 'x'::text);
SELECT count(*) FROM mq.browse('bpv_q');
CREATE TEMP TABLE bpv_got AS SELECT msg_id, convert_from(body, 'UTF8') AS body FROM mq.consume('bpv_q', 10);
SELECT body FROM bpv_got ORDER BY 1;
SELECT mq.ack('bpv_q', ARRAY(SELECT msg_id FROM bpv_got));
SELECT mq.queue_purge('bpv_q');              -- purge is configure
DROP TABLE bpv_got;
RESET ROLE;
-- publish on the queue lets alice send through the default exchange
SELECT mq.grant('publish', 'queue', 'bpv_q', 'regress_mq_alice');
SET ROLE regress_mq_alice;
SELECT mq.send('bpv_q', 'sent by alice'::text) IS NOT NULL AS sent;
RESET ROLE;
-- revoke
SELECT mq.revoke('publish', 'exchange', 'bpv_x', 'regress_mq_alice');
SET ROLE regress_mq_alice;
SELECT mq.publish('bpv_x', 'k', 'x'::text);
RESET ROLE;
SELECT convert_from(body, 'UTF8') FROM mq.consume('bpv_q', 10, auto_ack => true);

-- CREATE on schema mq: alice declares her own queue and owns it
GRANT CREATE ON SCHEMA mq TO regress_mq_alice;
SET ROLE regress_mq_alice;
SELECT mq.queue_declare('bpv_alice');
SELECT mq.exchange_declare('bpv_alice_x', 'fanout');
SELECT mq.bind('bpv_alice', 'bpv_alice_x');
SELECT mq.publish('bpv_alice_x', '', 'mine'::text) IS NOT NULL AS published;
SELECT convert_from(body, 'UTF8') FROM mq.consume('bpv_alice', auto_ack => true);
-- but not other people's objects
SELECT mq.queue_delete('bpv_q');
SELECT mq.bind('bpv_q', 'bpv_alice_x');
-- she grants consume on her queue to bob
SELECT mq.grant('consume', 'queue', 'bpv_alice', 'regress_mq_bob');
SELECT mq.send('bpv_alice', 'for bob'::text) IS NOT NULL AS sent;
RESET ROLE;
SELECT exchange, owner FROM mq.exchanges WHERE exchange = 'bpv_alice_x';
SELECT q.name, q.owner::regrole FROM mq.cat_queue q WHERE q.name = 'bpv_alice';
SET ROLE regress_mq_bob;
SELECT convert_from(body, 'UTF8') FROM mq.consume('bpv_alice', auto_ack => true);
SELECT mq.queue_delete('bpv_alice');
RESET ROLE;
SET ROLE regress_mq_alice;
SELECT mq.queue_delete('bpv_alice');
SELECT mq.exchange_delete('bpv_alice_x');
RESET ROLE;

-- who sees what (issue 35, item 8): mq.queues, mq.metrics,
-- mq.consumer_groups, mq.group_options, mq.stream_partitions, mq.bindings and the functions behind them
-- show a role the queues it holds some privilege on (configure, publish or
-- consume; the owner and superusers: all), and every queue to members of
-- pg_monitor (pg_read_all_stats)
CREATE ROLE regress_mq_nobody;
CREATE ROLE regress_mq_carol;
CREATE ROLE regress_mq_mon;
GRANT pg_monitor TO regress_mq_mon;
SELECT mq.queue_declare('bpv_seen', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('bpv_seen', 'g', start => 'earliest');
SELECT mq.queue_declare('bpv_hidden', 'stream');
SELECT mq.group_declare('bpv_hidden', 'g', start => 'earliest');
SELECT mq.send('bpv_hidden', 'secret'::text) IS NOT NULL AS sent;
SELECT mq.grant('consume', 'queue', 'bpv_seen', 'regress_mq_carol');
-- per view or function: the bpv queues it shows, and how many rows in all
CREATE FUNCTION bpv_sees() RETURNS TABLE (source text, queues text, all_rows bigint)
LANGUAGE sql AS $$
	SELECT 'queues', string_agg(DISTINCT queue, ',' ORDER BY queue) FILTER (WHERE queue LIKE 'bpv%'), count(*) FROM mq.queues
	UNION ALL
	SELECT '_queue_stats', string_agg(DISTINCT queue, ',' ORDER BY queue) FILTER (WHERE queue LIKE 'bpv%'), count(*) FROM mq._queue_stats()
	UNION ALL
	SELECT 'metrics', string_agg(DISTINCT labels->>'queue', ',' ORDER BY labels->>'queue') FILTER (WHERE labels->>'queue' LIKE 'bpv%'), count(*) FROM mq.metrics
	UNION ALL
	SELECT '_metrics', string_agg(DISTINCT labels->>'queue', ',' ORDER BY labels->>'queue') FILTER (WHERE labels->>'queue' LIKE 'bpv%'), count(*) FROM mq._metrics()
	UNION ALL
	SELECT 'consumer_groups', string_agg(DISTINCT queue, ',' ORDER BY queue) FILTER (WHERE queue LIKE 'bpv%'), count(*) FROM mq.consumer_groups
	UNION ALL
	SELECT '_consumer_groups', string_agg(DISTINCT queue, ',' ORDER BY queue) FILTER (WHERE queue LIKE 'bpv%'), count(*) FROM mq._consumer_groups()
	UNION ALL
	SELECT 'group_options', string_agg(DISTINCT queue, ',' ORDER BY queue) FILTER (WHERE queue LIKE 'bpv%'), count(*) FROM mq.group_options
	UNION ALL
	SELECT 'stream_partitions', string_agg(DISTINCT queue, ',' ORDER BY queue) FILTER (WHERE queue LIKE 'bpv%'), count(*) FROM mq.stream_partitions
	UNION ALL
	SELECT '_stream_partitions', string_agg(DISTINCT queue, ',' ORDER BY queue) FILTER (WHERE queue LIKE 'bpv%'), count(*) FROM mq._stream_partitions()
	UNION ALL
	SELECT 'bindings', string_agg(DISTINCT queue, ',' ORDER BY queue) FILTER (WHERE queue LIKE 'bpv%'), count(*) FROM mq.bindings
$$;
-- no privilege on anything: no rows at all
SET ROLE regress_mq_nobody;
SELECT * FROM bpv_sees();
RESET ROLE;
-- consume on bpv_seen: that stream alone, its partitions and its group
SET ROLE regress_mq_carol;
SELECT source, queues FROM bpv_sees();
SELECT "partition", committed_offset FROM mq.consumer_groups ORDER BY 1;
-- the options its group was declared with (mq-rocketmq's Settings)
SELECT queue, group_name, mode, start, filter, filter_type, ordered, max_retries, retry_delays
  FROM mq.group_options;
RESET ROLE;
-- alice holds consume and publish on bpv_q (granted above)
SET ROLE regress_mq_alice;
SELECT source, queues FROM bpv_sees();
RESET ROLE;
-- pg_monitor: every queue, as the superuser
SET ROLE regress_mq_mon;
SELECT source, queues FROM bpv_sees();
SELECT ready FROM mq.queues WHERE queue = 'bpv_hidden';
RESET ROLE;
SELECT source, queues FROM bpv_sees();
-- a revoke hides the queue again
SELECT mq.revoke('consume', 'queue', 'bpv_seen', 'regress_mq_carol');
SET ROLE regress_mq_carol;
SELECT source, queues, all_rows FROM bpv_sees();
RESET ROLE;
DROP FUNCTION bpv_sees();
SELECT mq.queue_delete('bpv_seen');
SELECT mq.queue_delete('bpv_hidden');
-- the group dead-lettered nothing: it has no dead-letter queue
SELECT count(*) FROM mq.cat_queue WHERE name = '%DLQ%g';
DROP ROLE regress_mq_nobody, regress_mq_carol, regress_mq_mon;

-- clean up
SELECT mq.queue_delete('bpv_q');
SELECT mq.exchange_delete('bpv_x');
REVOKE CREATE ON SCHEMA mq FROM regress_mq_alice;
DROP ROLE regress_mq_alice;
DROP ROLE regress_mq_bob;
