--
-- metrics: the mq.metrics view (one row per Prometheus sample): counters
-- per queue and consumer group state after a known workload, gauges, that
-- counters only grow, and that a deleted queue's rows go.  Names start with
-- "mt_".
--
\set VERBOSITY sqlstate
\ir test/regress/wait.sql
-- one sample of queue q (group g, partition p); NULL when there is none
CREATE FUNCTION mt(metric text, q text, g text DEFAULT NULL, p int DEFAULT NULL)
RETURNS double precision LANGUAGE sql AS $$
	SELECT value FROM mq.metrics
	 WHERE name = 'queue_ext_' || metric
	   AND labels = jsonb_strip_nulls(jsonb_build_object('queue', q, 'group', g,
														  'partition', p::text))
$$;
-- every sample of one state, as a row
CREATE FUNCTION mt_row(q text, g text DEFAULT NULL)
RETURNS TABLE (published float8, delivered float8, redelivered float8, acked float8,
			   nacked float8, dead_lettered float8, expired float8, ready float8,
			   unacked float8, delayed float8, consumers float8) LANGUAGE sql AS $$
	SELECT mt('published_total', q, g), mt('delivered_total', q, g),
		   mt('redelivered_total', q, g), mt('acked_total', q, g),
		   mt('nacked_total', q, g), mt('dead_lettered_total', q, g),
		   mt('expired_total', q, g), mt('ready', q, g), mt('unacked', q, g),
		   mt('delayed', q, g), mt('consumers', q, g)
$$;

SELECT mq.exchange_declare('mt_dlx', 'fanout');
SELECT mq.queue_declare('mt_dead');
SELECT mq.bind('mt_dead', 'mt_dlx', '');
SELECT mq.queue_declare('mt_q', arguments => '{"x-dead-letter-exchange": "mt_dlx"}');

-- a new queue: every series, all zero (no oldest ready age without ready)
SELECT name, labels, value FROM mq.metrics WHERE labels->>'queue' = 'mt_q' ORDER BY name;

-- the workload: publish 5, consume 3, ack 2, nack 1 (requeued), consume it
-- again (redelivered) and reject it without requeue (dead-lettered)
SELECT count(mq.send('mt_q', 'm' || i)) AS sent FROM generate_series(1, 5) i;
CREATE TEMP TABLE d AS SELECT msg_id FROM mq.consume('mt_q', 3);
SELECT mq.ack('mt_q', ARRAY(SELECT msg_id FROM d ORDER BY 1 LIMIT 2));
SELECT mq.nack('mt_q', ARRAY(SELECT max(msg_id) FROM d));
SELECT msg_id = (SELECT max(msg_id) FROM d) AS same, redelivered
  FROM mq.consume('mt_q') \gset r_
SELECT :'r_same' AS same, :'r_redelivered' AS redelivered;
SELECT mq.reject('mt_q', (SELECT max(msg_id) FROM d), requeue => false);
SELECT * FROM mt_row('mt_q');
-- the dead letter was published to mt_dead
SELECT * FROM mt_row('mt_dead');
SELECT mt('oldest_ready_age_seconds', 'mt_q') > 0 AS has_age,
	   mt('oldest_ready_age_seconds', 'mt_q') < 3600 AS sane_age;

-- what rolls back counts nothing, but a delivery happened: the taken
-- message comes back redelivered, its ack is not counted
BEGIN;
SELECT mq.send('mt_q', 'rolled back') IS NOT NULL AS sent;
SELECT mq.ack('mt_q', ARRAY(SELECT msg_id FROM mq.consume('mt_q')));
ROLLBACK;
SELECT published, delivered, redelivered, acked, ready, unacked FROM mt_row('mt_q');

-- a lease held: unacked and consumers; auto-ack counts as acked; a
-- delayed message and a nack with delay (a timer, not published again)
CREATE TEMP TABLE held AS SELECT msg_id FROM mq.consume('mt_q');
SELECT mt('unacked', 'mt_q') AS unacked, mt('consumers', 'mt_q') AS consumers;
SELECT count(*) AS auto_acked FROM mq.consume('mt_q', auto_ack => true);
SELECT mq.send('mt_q', 'later', delay => '1 hour') IS NOT NULL AS sent;
SELECT mq.nack('mt_q', ARRAY(SELECT msg_id FROM held), delay => '1 hour');
SELECT * FROM mt_row('mt_q');

-- expiry: x-message-ttl with a dead-letter exchange, taken dead by a
-- consume: expired and dead-lettered, never delivered
SELECT mq.queue_declare('mt_ttl', arguments => '{"x-message-ttl": 50, "x-dead-letter-exchange": "mt_dlx"}');
SELECT mq.send('mt_ttl', 'soon gone') IS NOT NULL AS sent;
SELECT pg_sleep(0.2);
SELECT count(*) AS delivered FROM mq.consume('mt_ttl');
-- (the worker may be expiring it right now: wait for its count)
SELECT wait_until($$SELECT mt('expired_total', 'mt_ttl') > 0$$);
SELECT published, delivered, acked, expired, dead_lettered, ready FROM mt_row('mt_ttl');
SELECT published, ready FROM mt_row('mt_dead');

-- reject-publish-dlx: a message the full queue refuses is dead-lettered
-- by it without entering it (not published to it)
SELECT mq.queue_declare('mt_full', arguments => '{"x-max-length": 1, "x-overflow": "reject-publish-dlx", "x-dead-letter-exchange": "mt_dlx"}');
SELECT count(mq.send('mt_full', 'f' || i)) AS sent FROM generate_series(1, 2) i;
SELECT published, dead_lettered, ready FROM mt_row('mt_full');
SELECT published, ready FROM mt_row('mt_dead');

-- a stream and a consumer group: the stream's published, the group's
-- counters, unacked, consumers and lag per partition
SELECT mq.queue_declare('mt_s', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('mt_s', 'mt_g', start => 'earliest');
SELECT count(mq.send('mt_s', 's' || i, "partition" => i % 2)) AS sent
  FROM generate_series(0, 4) i;
CREATE TEMP TABLE gd AS SELECT msg_id, "partition" FROM mq.consume('mt_s', 2, group_name => 'mt_g');
SELECT mq.ack('mt_s', ARRAY(SELECT msg_id FROM gd ORDER BY 1 LIMIT 1), group_name => 'mt_g');
SELECT mt('published_total', 'mt_s') AS stream_published,
	   mt('delivered_total', 'mt_s') AS stream_delivered;
SELECT delivered, acked, nacked, unacked, consumers, published IS NULL AS no_published
  FROM mt_row('mt_s', 'mt_g');
SELECT labels->>'partition' AS p, value AS lag FROM mq.metrics
 WHERE name = 'queue_ext_group_lag' AND labels->>'group' = 'mt_g' ORDER BY 1;
-- the sum of the lag is what the group has not settled
SELECT sum(value) AS lag FROM mq.metrics
 WHERE name = 'queue_ext_group_lag' AND labels->>'group' = 'mt_g';
SELECT sum(lag) AS consumer_groups_lag FROM mq.consumer_groups WHERE group_name = 'mt_g';

-- a broadcast group: each consumer's state has its own series
SELECT mq.group_declare('mt_s', 'mt_b', mode => 'broadcast', start => 'earliest');
SELECT count(*) AS got FROM mq.consume('mt_s', 5, group_name => 'mt_b', consumer => 'c1',
									   auto_ack => true);
SELECT labels, value FROM mq.metrics
 WHERE labels->>'group' = 'mt_b' AND name IN ('queue_ext_acked_total', 'queue_ext_group_lag')
 ORDER BY name, labels::text;

-- which series exist, and their label keys
SELECT name, array_agg(DISTINCT (SELECT string_agg(k, ',' ORDER BY k)
								 FROM jsonb_object_keys(labels) k)) AS label_sets
  FROM mq.metrics WHERE labels->>'queue' LIKE 'mt\_%' GROUP BY name ORDER BY name;

-- counters only grow: a snapshot, more traffic, then none is lower
CREATE TEMP TABLE snap AS SELECT name, labels, value FROM mq.metrics WHERE name LIKE '%\_total';
SELECT count(mq.send('mt_q', 'more' || i)) AS sent FROM generate_series(1, 3) i;
SELECT mq.nack('mt_q', ARRAY(SELECT msg_id FROM mq.consume('mt_q', 2)), requeue => false);
SELECT count(*) AS acked FROM mq.consume('mt_q', 10, auto_ack => true);
SELECT count(*) AS lower FROM snap s JOIN mq.metrics m USING (name, labels)
 WHERE m.value < s.value;
SELECT count(*) AS higher FROM snap s JOIN mq.metrics m USING (name, labels)
 WHERE m.value > s.value;
SELECT count(*) AS missing FROM snap s LEFT JOIN mq.metrics m USING (name, labels)
 WHERE m.value IS NULL;

-- the functions behind the views, given a queue's name, give that queue's
-- rows alone, the same as the views' (gauges of an age aside, which move
-- between two reads); _queue_stats' counter columns are mq.metrics's
CREATE TEMP VIEW mt_cols AS
	SELECT queue, type, durable, ready, unacked, delayed, total, consumers, last_delivery,
		   arguments, ready_bytes, partitions, first_offset, last_offset, retention
	  FROM mq.queues WHERE queue LIKE 'mt\_%' OR queue LIKE '%DLQ%mt\_%';
SELECT (SELECT count(*) FROM mt_cols) AS queues,
	   (SELECT count(*) FROM (SELECT * FROM mt_cols EXCEPT
			SELECT s.queue, s.type, s.durable, s.ready, s.unacked, s.delayed, s.total,
				   s.consumers, s.last_delivery, s.arguments, s.ready_bytes, s.partitions,
				   s.first_offset, s.last_offset, s.retention
			  FROM mt_cols c, mq._queue_stats(c.queue) s) d) AS differ;
DROP VIEW mt_cols;
SELECT count(*) AS queues, count(*) FILTER (WHERE s.published > 0) AS published,
	   count(*) FILTER (WHERE (s.published, s.delivered, s.redelivered, s.acked)
					   IS DISTINCT FROM
					   (mt('published_total', s.queue)::bigint, mt('delivered_total', s.queue)::bigint,
						mt('redelivered_total', s.queue)::bigint, mt('acked_total', s.queue)::bigint))
	   AS counters_differ
  FROM mq._queue_stats() s WHERE s.queue LIKE 'mt\_%' OR s.queue LIKE '%DLQ%mt\_%';
SELECT q, (SELECT count(*) FROM mq._metrics(q::text)) AS samples,
	   (SELECT count(*) FROM (SELECT name, labels, value FROM mq._metrics(q::text)
							   WHERE name <> 'queue_ext_oldest_ready_age_seconds'
							  EXCEPT
							  SELECT name, labels, value FROM mq.metrics WHERE labels->>'queue' = q
							   AND name <> 'queue_ext_oldest_ready_age_seconds') d) AS not_in_view,
	   (SELECT count(*) FROM (SELECT name, labels, value FROM mq.metrics WHERE labels->>'queue' = q
							   AND name <> 'queue_ext_oldest_ready_age_seconds'
							  EXCEPT
							  SELECT name, labels, value FROM mq._metrics(q::text)
							   WHERE name <> 'queue_ext_oldest_ready_age_seconds') d) AS missing
  FROM unnest(ARRAY['mt_q', 'mt_s']) q;
SELECT (SELECT count(*) FROM mq._queue_stats('mt_no_such_queue')) AS stats_rows,
	   (SELECT count(*) FROM mq._metrics('mt_no_such_queue'::text)) AS metrics_rows;
CREATE ROLE mt_reader;
SET ROLE mt_reader;
SELECT (SELECT count(*) FROM mq._queue_stats('mt_q')) AS stats_rows_without_privilege,
	   (SELECT count(*) FROM mq._metrics('mt_q'::text)) AS metrics_rows_without_privilege;
RESET ROLE;
DROP ROLE mt_reader;

-- anyone may read it, like mq.queues: the rows of the queues the role holds
-- a privilege on (none here: no rows), every queue's for pg_monitor
CREATE ROLE mt_reader;
SET ROLE mt_reader;
SELECT count(*) AS rows_without_privilege FROM mq.metrics;
RESET ROLE;
GRANT pg_monitor TO mt_reader;
SET ROLE mt_reader;
SELECT count(*) > 0 AS readable FROM mq.metrics;
RESET ROLE;
DROP ROLE mt_reader;

-- a deleted queue's rows are gone (and its group's with a deleted stream)
SELECT count(*) AS before FROM mq.metrics WHERE labels->>'queue' IN ('mt_ttl', 'mt_s');
SELECT mq.queue_delete('mt_ttl') >= 0 AS deleted;
SELECT mq.group_delete('mt_s', 'mt_g');
SELECT count(*) AS group_rows FROM mq.metrics WHERE labels->>'group' = 'mt_g';
SELECT mq.queue_delete('mt_s') >= 0 AS deleted;
SELECT count(*) AS after FROM mq.metrics WHERE labels->>'queue' IN ('mt_ttl', 'mt_s');

SELECT mq.queue_delete(q) >= 0 AS deleted FROM unnest(ARRAY['mt_q', 'mt_full', 'mt_dead', '%DLQ%mt_g']) q
 WHERE EXISTS (SELECT 1 FROM mq.queues WHERE queue = q);
SELECT mq.exchange_delete('mt_dlx');
SELECT count(*) AS left_over FROM mq.metrics WHERE labels->>'queue' LIKE 'mt\_%';
DROP FUNCTION wait_until(text, interval);
