--
-- log_retire: a message log segment is retired only when no queue entry,
-- half message or timer refers to it or to an older one, whatever the
-- order of a queue's entries.  Retirement looks at a queue's backlog only
-- until it meets the oldest segment it could drop (maintenance.c,
-- queues_min_segno): here the backlog's first entry is in a newer segment
-- than a later one (a delayed message's entry goes in when it is due), so
-- a look that stopped at the first entry, or too early, would drop the
-- delayed message's segment under it.
--
-- A database of its own: the segments of the other tests' databases and
-- queues do not count (retirement, and its oldest candidate, are per
-- database); its worker starts within mq.launcher_naptime.
SELECT current_database() AS regress_db \gset
CREATE DATABASE regress_log_retire;
\c regress_log_retire
CREATE EXTENSION queue_ext;
SET mq.segment_size = 16;		-- 128 kB segments: a few hundred kB roll them
SELECT mq.queue_declare('lr_q');
SELECT mq.queue_declare('lr_fill');

\ir test/regress/wait.sql

-- D goes into the log now, into its queue when due; then the log rolls
-- over (lr_fill) and M goes into a newer segment and into the queue first
SELECT mq.send('lr_q', 'delayed', delay => '2 seconds') AS d_id \gset
SELECT count(*) FROM mq.send_batch('lr_fill',
	(SELECT array_agg(repeat('f', 200) || g) FROM generate_series(1, 1500) g));
SELECT mq.send('lr_q', 'later') AS m_id \gset
SELECT (:m_id >> 26) > (:d_id >> 26) + 1 AS later_two_segments_on;
SELECT wait_until($$SELECT ready = 2 FROM mq.queues WHERE queue = 'lr_q'$$) AS d_due;

-- retire what no one refers to, then settle the filler: lr_q alone holds
-- the old segments now, D's (the oldest left) by its last entry
SELECT mq.log_retire() >= 0 AS retired;
SELECT min(segno) <= (:d_id >> 26) AS d_segment_is_oldest FROM mq.cat_segment;
SELECT count(*) FROM mq.consume('lr_fill', 2000, auto_ack => true);
SELECT mq.log_retire() AS retired_under_d;
SELECT min(segno) = (:d_id >> 26) AS d_segment_kept FROM mq.cat_segment;
SELECT convert_from(body, 'UTF8') AS body, msg_id = :d_id AS is_d
  FROM mq.consume('lr_q', 10, auto_ack => true) ORDER BY 1;

-- nothing refers to the old segments any more: they go (here, or in the
-- worker's own pass)
SELECT wait_until(format($$SELECT mq.log_retire() >= 0 AND
							   (SELECT min(segno) FROM mq.cat_segment) > %s$$,
					  :d_id >> 26)) AS d_segment_gone;

\c :regress_db
DROP DATABASE regress_log_retire WITH (FORCE);
