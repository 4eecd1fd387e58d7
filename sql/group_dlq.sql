--
-- group_dlq: a consumer group's dead-letter queue %DLQ%<group> is made at
-- the group's first dead letter (as RocketMQ's), in the transaction that
-- dead-letters, and goes with the group when it is empty; filtered messages
-- count apart from deliveries and acks (mq.metrics); reading the views
-- makes no shared state for a queue nobody uses.  Names start with "gd".
--
\set VERBOSITY sqlstate
CREATE FUNCTION gd_dlqs() RETURNS SETOF text LANGUAGE sql AS $$
	SELECT name FROM mq.cat_queue WHERE name LIKE '\%DLQ\%gd%' ORDER BY name
$$;
CREATE FUNCTION gd_metric(metric text, g text) RETURNS float8 LANGUAGE sql AS $$
	SELECT value FROM mq.metrics
	 WHERE name = 'queue_ext_' || metric AND labels = jsonb_build_object('queue', 'gd_s', 'group', g)
$$;
CREATE ROLE regress_gd_role;
GRANT USAGE ON SCHEMA mq TO regress_gd_role;
SELECT mq.queue_declare('gd_s', 'stream');
SELECT mq.grant(p, 'queue', 'gd_s', 'regress_gd_role')
  FROM unnest(ARRAY['configure', 'consume', 'publish']) p;

-- 1. a declared group has no dead-letter queue yet; mq.redrive of it moves
-- nothing (for a role that may consume from the stream), and a name that
-- is no group's is still unknown
SET ROLE regress_gd_role;
SELECT mq.group_declare('gd_s', 'gd_a', start => 'earliest');
SELECT mq.group_declare('gd_s', 'gd_b', start => 'earliest', max_retries => 0);
RESET ROLE;
SELECT * FROM gd_dlqs();
SELECT count(*) FROM mq.queues WHERE queue LIKE '\%DLQ\%gd%';
SET ROLE regress_gd_role;
SELECT mq.redrive('%DLQ%gd_a');
RESET ROLE;
SELECT mq.redrive('%DLQ%gd_nogroup');                         -- 42704

-- 2. a nack without requeue that rolls back leaves no queue behind
SELECT count(mq.send('gd_s', 'm' || i)) FROM generate_series(1, 3) i;
BEGIN;
SELECT mq.nack('gd_s', ARRAY(SELECT msg_id FROM mq.consume('gd_s', 1, group_name => 'gd_a')),
			   requeue => false, group_name => 'gd_a');
SELECT * FROM gd_dlqs();                                      -- made here
ROLLBACK;
SELECT * FROM gd_dlqs();                                      -- and gone

-- 3. one that commits makes it, with the dead letter in it; the role that
-- declared the group may consume from it
SET ROLE regress_gd_role;
SELECT mq.nack('gd_s', ARRAY(SELECT msg_id FROM mq.consume('gd_s', 1, group_name => 'gd_a')),
			   requeue => false, group_name => 'gd_a');
RESET ROLE;
SELECT * FROM gd_dlqs();
SELECT queue, ready FROM mq.queues WHERE queue LIKE '\%DLQ\%gd%';
SET ROLE regress_gd_role;
SELECT convert_from(body, 'UTF8') AS body, headers->>'x-dlq-reason' AS reason
  FROM mq.browse('%DLQ%gd_a');
RESET ROLE;

-- 4. over max_retries (a requeueing nack with no retry left) makes the
-- other group's
SELECT mq.nack('gd_s', ARRAY(SELECT msg_id FROM mq.consume('gd_s', 1, group_name => 'gd_b')),
			   group_name => 'gd_b');
SELECT * FROM gd_dlqs();
SELECT headers->>'x-dlq-reason' AS reason FROM mq.browse('%DLQ%gd_b');

-- 5. group_delete drops the group's dead-letter queue when it is empty...
SELECT count(*) FROM mq.consume('%DLQ%gd_b', 10, auto_ack => true);
SELECT mq.group_delete('gd_s', 'gd_b');
SELECT * FROM gd_dlqs();
-- ... and keeps it, saying so, when it holds messages
\set VERBOSITY default
SELECT mq.group_delete('gd_s', 'gd_a');
\set VERBOSITY sqlstate
SELECT * FROM gd_dlqs();
-- the dead letters go back to the stream, and the queue is deleted as any
SELECT mq.redrive('%DLQ%gd_a');
SELECT mq.queue_delete('%DLQ%gd_a');
-- drop_dead_letters drops it whatever it holds
SELECT mq.group_declare('gd_s', 'gd_d', start => 'earliest');
SELECT mq.nack('gd_s', ARRAY(SELECT msg_id FROM mq.consume('gd_s', 1, group_name => 'gd_d')),
			   requeue => false, group_name => 'gd_d');
SELECT queue, ready FROM mq.queues WHERE queue = '%DLQ%gd_d';
SELECT mq.group_delete('gd_s', 'gd_d', drop_dead_letters => true);
SELECT * FROM gd_dlqs();
-- a group that dead-lettered nothing has nothing to drop
SELECT mq.group_declare('gd_s', 'gd_c');
SELECT mq.group_delete('gd_s', 'gd_c');
SELECT * FROM gd_dlqs();

-- 6. filtered messages: neither delivered nor acked, counted as filtered.
-- A tag filter settles the others by their tag hash in the take; a SQL92
-- filter once their message is read (with and without auto_ack).
SELECT mq.group_declare('gd_s', 'gd_tag', start => 'latest', filter => 'A');
SELECT mq.group_declare('gd_s', 'gd_sql', start => 'latest', filter_type => 'sql92',
						filter => 'k = 1');
SELECT mq.group_declare('gd_s', 'gd_auto', start => 'latest', filter_type => 'sql92',
						filter => 'k = 1');
SELECT count(mq.send('gd_s', 'f' || i, tag => CASE WHEN i = 1 THEN 'A' ELSE 'B' END,
					 headers => jsonb_build_object('k', i)))
  FROM generate_series(1, 4) i;
SELECT mq.ack('gd_s', ARRAY(SELECT msg_id FROM mq.consume('gd_s', 10, group_name => 'gd_tag')),
			  group_name => 'gd_tag');
SELECT mq.ack('gd_s', ARRAY(SELECT msg_id FROM mq.consume('gd_s', 10, group_name => 'gd_sql')),
			  group_name => 'gd_sql');
SELECT count(*) FROM mq.consume('gd_s', 10, group_name => 'gd_auto', auto_ack => true);
SELECT g, gd_metric('delivered_total', g) AS delivered, gd_metric('acked_total', g) AS acked,
	   gd_metric('filtered_total', g) AS filtered
  FROM unnest(ARRAY['gd_tag', 'gd_sql', 'gd_auto']) g;
-- a queue's own filtered count is always 0
SELECT value FROM mq.metrics WHERE name = 'queue_ext_filtered_total' AND labels = '{"queue": "gd_s"}';

-- 7. reading the views makes no shared state for a queue nobody used
SELECT mq.queue_declare('gd_idle');
SELECT mq.queue_declare('gd_idle_q', 'quorum');
SELECT count(*) > 0 FROM mq.metrics WHERE labels->>'queue' IN ('gd_idle', 'gd_idle_q');
SELECT queue, ready, unacked, total, consumers FROM mq.queues
 WHERE queue IN ('gd_idle', 'gd_idle_q') ORDER BY 1;
SELECT q, mq._queue_has_state(q) FROM unnest(ARRAY['gd_idle', 'gd_idle_q']) q;
-- once it is used it has one, and the views count what it holds
SELECT mq.send('gd_idle', 'x') IS NOT NULL;
SELECT mq._queue_has_state('gd_idle');
SELECT queue, ready, total FROM mq.queues WHERE queue = 'gd_idle';
SELECT value FROM mq.metrics WHERE name = 'queue_ext_published_total'
   AND labels = '{"queue": "gd_idle"}';

SELECT mq.queue_delete(q) FROM unnest(ARRAY['gd_s', 'gd_idle', 'gd_idle_q']) q;
SELECT * FROM gd_dlqs();
DROP FUNCTION gd_dlqs(), gd_metric(text, text);
DROP OWNED BY regress_gd_role;
DROP ROLE regress_gd_role;
