-- The per-database worker maintains consumer groups (issue 12): a lease
-- that runs out is a failed delivery with no consumer calling, past
-- max_retries the message goes to %DLQ%<group>; returns by a session end
-- over max_retries too.  Messages a group's filter rejects never count
-- toward max_retries.  A tag filter skips entries by their tag hash
-- without reading the message (mq._session_counters).
ALTER SYSTEM SET mq.maintenance_naptime = '100ms';
SELECT pg_reload_conf();

\ir test/regress/wait.sql
CREATE FUNCTION gw_view(g text)
RETURNS TABLE (committed bigint, e bigint, in_flight int, retrying int, dead bigint)
LANGUAGE sql AS $$
	SELECT committed_offset, end_offset, in_flight, retrying, dead_lettered
	  FROM mq.consumer_groups WHERE queue = 'gw' AND group_name = g
$$;

SELECT mq.queue_declare('gw', 'stream');

-- 1. a lease that runs out, nobody consuming: the worker makes it a retry
SELECT mq.group_declare('gw', 'g1', start => 'earliest', max_retries => 3,
						retry_delays => '{300 ms}');
SELECT mq.send('gw', 'slow') IS NOT NULL;
SELECT convert_from(body, 'UTF8') AS body, delivery_count
  FROM mq.consume('gw', group_name => 'g1', lease => '200 ms');
SELECT * FROM gw_view('g1');
SELECT wait_until($$SELECT in_flight = 0 AND retrying = 1 FROM gw_view('g1')$$);
SELECT * FROM gw_view('g1');
-- it comes back after the retry delay, counted as a failed delivery
SELECT wait_until($$SELECT EXISTS (SELECT 1 FROM mq.consume('gw', group_name => 'g1', lease => '1 hour')
							  WHERE delivery_count = 2 AND reconsume_times = 1)$$);
SELECT * FROM gw_view('g1');

-- 2. max_retries 0: the first lease that runs out sends the message to
-- the DLQ, reason max_retries, without any consume
SELECT mq.group_declare('gw', 'g0', start => 'latest', max_retries => 0);
SELECT mq.send('gw', 'stuck') IS NOT NULL;
SELECT convert_from(body, 'UTF8') AS body
  FROM mq.consume('gw', group_name => 'g0', lease => '200 ms');
SELECT wait_until($$SELECT dead = 1 FROM gw_view('g0')$$);
SELECT * FROM gw_view('g0');
SELECT convert_from(body, 'UTF8') AS body, headers->>'x-dlq-reason' AS reason,
	   headers->>'x-reconsume-times' AS rt, headers->>'x-dlq-origin-group' AS grp
  FROM mq.consume('%DLQ%g0', 10, auto_ack => true);

-- 3. a session end returns a delivery over max_retries: the worker
-- dead-letters it at once (no consume of the group follows)
SELECT mq.send('gw', 'abandoned') IS NOT NULL;
SELECT convert_from(body, 'UTF8') AS body
  FROM mq.consume('gw', group_name => 'g0', lease => '1 hour');
\c
SELECT wait_until($$SELECT dead = 2 AND in_flight = 0 AND committed = e FROM gw_view('g0')$$);
SELECT convert_from(body, 'UTF8') AS body, headers->>'x-dlq-reason' AS reason
  FROM mq.consume('%DLQ%g0', 10, auto_ack => true);

-- 4. a dead-lettering that rolls back is not counted
SELECT mq.group_declare('gw', 'gn', start => 'latest');
SELECT mq.send('gw', 'nacked') IS NOT NULL;
BEGIN;
SELECT mq.nack('gw', ARRAY(SELECT msg_id FROM mq.consume('gw', group_name => 'gn')),
			   requeue => false, group_name => 'gn');
SELECT dead FROM gw_view('gn');                                -- at commit
ROLLBACK;
SELECT dead FROM gw_view('gn');
SELECT mq.ack('gw', ARRAY(SELECT msg_id FROM mq.consume('gw', group_name => 'gn')),
			  group_name => 'gn');
SELECT * FROM gw_view('gn');
SELECT count(*) FROM mq.cat_queue WHERE name = '%DLQ%gn';  -- made and rolled back with the nack
-- and one that commits is
SELECT mq.send('gw', 'nacked-2') IS NOT NULL;
SELECT mq.nack('gw', ARRAY(SELECT msg_id FROM mq.consume('gw', group_name => 'gn')),
			   requeue => false, group_name => 'gn');
SELECT dead FROM gw_view('gn');
SELECT count(*) FROM mq.consume('%DLQ%gn', 10, auto_ack => true);

-- 5. filtered messages never count toward max_retries: consume calls that
-- roll back take a message the filter rejects; the worker (after the
-- returns) and the next consume settle it as filtered, not to the DLQ.
-- A SQL92 filter reads the message ...
SELECT mq.group_declare('gw', 'gs', start => 'latest', max_retries => 0,
						filter_type => 'sql92', filter => 'a = 1');
SELECT mq.send('gw', 'no-match', headers => '{"a": 2}') IS NOT NULL;
BEGIN;
SELECT count(*) FROM mq.consume('gw', group_name => 'gs');
ROLLBACK;
BEGIN;
SELECT count(*) FROM mq.consume('gw', group_name => 'gs');
ROLLBACK;
SELECT wait_until($$SELECT committed = e AND retrying = 0 FROM gw_view('gs')$$);
SELECT * FROM gw_view('gs');
SELECT count(*) FROM mq.consume('gw', group_name => 'gs');
SELECT count(*) FROM mq.cat_queue WHERE name = '%DLQ%gs';  -- never made: nothing went there
-- ... a tag filter skips it by its tag hash, for good, even in a consume
-- that rolls back
SELECT mq.group_declare('gw', 'gt', start => 'latest', max_retries => 0,
						filter_type => 'tag', filter => 'A');
SELECT mq.send('gw', 'tag-b', tag => 'B') IS NOT NULL;
BEGIN;
SELECT count(*) FROM mq.consume('gw', group_name => 'gt');
ROLLBACK;
SELECT * FROM gw_view('gt');
SELECT count(*) FROM mq.consume('gw', group_name => 'gt');
SELECT count(*) FROM mq.cat_queue WHERE name = '%DLQ%gt';  -- never made: nothing went there

-- 6. the tag skip: 100 messages, one tagged A, one untagged, the rest B.
-- The group with filter 'A' reads one message; the other 99 entries are
-- settled by their tag hash without a fetch.  '*' and SQL92 skip nothing.
SELECT mq.group_declare('gw', 'ga', start => 'latest', filter_type => 'tag', filter => 'A || C');
SELECT mq.group_declare('gw', 'gall', start => 'latest', filter_type => 'tag', filter => '*');
SELECT mq.group_declare('gw', 'gq', start => 'latest', filter_type => 'sql92', filter => 'TAGS = ''A''');
SELECT count(*) FROM (SELECT mq.send('gw', 'm' || i,
									 tag => CASE WHEN i = 50 THEN 'A' WHEN i = 60 THEN NULL ELSE 'B' END)
						FROM generate_series(1, 100) i) x;
SELECT * FROM mq._session_counters() \gset before_
SELECT convert_from(body, 'UTF8') AS body, tag FROM mq.consume('gw', 100, group_name => 'ga');
SELECT tag_skips - :before_tag_skips AS skipped, message_fetches - :before_message_fetches AS fetched
  FROM mq._session_counters();
SELECT * FROM gw_view('ga');
SELECT * FROM mq._session_counters() \gset before_
SELECT count(*) FROM mq.consume('gw', 100, group_name => 'gall');
SELECT count(*) FROM mq.consume('gw', 100, group_name => 'gq');
SELECT tag_skips - :before_tag_skips AS skipped, message_fetches - :before_message_fetches AS fetched
  FROM mq._session_counters();

-- tag_hash is in stream entries only when the message has a tag
CREATE FUNCTION gw_tag_hashes(OUT untagged bigint, OUT tagged bigint) LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT count(*) FILTER (WHERE tag_hash IS NULL), count(tag_hash) FROM mq_storage.%I',
				   (SELECT format('q%s_0_0', id) FROM mq.cat_queue WHERE name = 'gw'))
	   INTO untagged, tagged;
END $$;
SELECT * FROM gw_tag_hashes();
DROP FUNCTION gw_tag_hashes();

SELECT mq.queue_delete('gw');
SELECT count(mq.queue_delete(queue)) FROM mq.queues
 WHERE queue IN ('%DLQ%g1', '%DLQ%g0', '%DLQ%gn', '%DLQ%gs', '%DLQ%gt', '%DLQ%ga',
				 '%DLQ%gall', '%DLQ%gq');
ALTER SYSTEM RESET mq.maintenance_naptime;
SELECT pg_reload_conf();
DROP FUNCTION wait_until(text, interval);
DROP FUNCTION gw_view(text);
