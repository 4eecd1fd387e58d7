-- Consumer groups on streams in clustering mode (issue 12, slice 2):
-- declare, consume/ack/nack with group_name, retries, %DLQ%, the view.
CREATE TEMP TABLE got (g text, msg_id bigint, body text, p int, o bigint, dc int, rt int);
-- consume for group g into got; returns what was delivered, in offset order
CREATE FUNCTION sg_take(g text, n int DEFAULT 100, q text DEFAULT 'sg')
RETURNS TABLE (body text, p int, o bigint, dc int, rt int) LANGUAGE sql AS $$
	WITH c AS (
		INSERT INTO got
		SELECT g, c.msg_id, convert_from(c.body, 'UTF8'), c."partition", c."offset",
			   c.delivery_count, c.reconsume_times
		  FROM mq.consume(q, n, group_name => g, lease => '1 hour') c
		RETURNING *)
	SELECT body, p, o, dc, rt FROM c ORDER BY p, o
$$;
CREATE FUNCTION sg_view(g text)
RETURNS TABLE (p int, committed bigint, e bigint, lag bigint, in_flight int, retrying int,
			   dead bigint, consumers int) LANGUAGE sql AS $$
	SELECT "partition", committed_offset, end_offset, lag, in_flight, retrying, dead_lettered,
		   consumers
	  FROM mq.consumer_groups WHERE queue = 'sg' AND group_name = g ORDER BY 1
$$;

SELECT mq.queue_declare('sg', 'stream', arguments => '{"partitions": 2}');
SELECT mq.queue_declare('sg_classic');
SELECT count(*) FROM (SELECT mq.send('sg', 'before-' || i, "partition" => i % 2)
						FROM generate_series(0, 3) i) x;

-- declare: options, idempotence, errors
SELECT mq.group_declare('sg', 'ga', start => 'earliest', retry_delays => '{100 ms}');
SELECT mq.group_declare('sg', 'gl');                          -- latest
SELECT mq.group_declare('sg', 'ga', start => 'earliest', retry_delays => '{100 ms}');  -- same: nothing
SELECT mq.group_declare('sg', 'ga', start => 'latest', retry_delays => '{100 ms}');    -- NOTICE
SELECT mq.group_declare('sg', 'ga', max_retries => 3, retry_delays => '{100 ms}');      -- 55000
SELECT mq.group_declare('sg', 'ga', start => 'earliest');    -- 55000: retry_delays differ
SELECT mq.group_declare('sg', 'gb', mode => 'bogus');         -- 22023
SELECT mq.group_declare('sg', 'gb', filter_type => 'sql92', filter => 'a ='); -- 42601
SELECT mq.group_declare('sg', 'ga', start => 'earliest', retry_delays => '{100 ms}', ordered => true); -- 55000
SELECT mq.group_declare('sg', 'gb', max_retries => -1);       -- 22023
SELECT mq.group_declare('sg', 'gb', retry_delays => '{0 s}'); -- 22023
SELECT mq.group_declare('sg', 'gb', start => 'soonish');      -- 22007
SELECT mq.group_declare('sg', '');                            -- 22023
SELECT mq.group_declare('sg_classic', 'ga');                  -- 42809
SELECT mq.group_declare('nope', 'ga');                        -- 42704
SELECT mq.group_delete('sg', 'nope');                         -- 42704
SELECT mq.group_delete('sg_classic', 'ga');                   -- 42809
SELECT * FROM mq.consume('sg', group_name => 'nope');         -- 42704
SELECT * FROM mq.consume('sg');                               -- 0A000
SELECT * FROM mq.consume('sg_classic', group_name => 'ga');   -- 42809
SELECT mq.ack('sg_classic', '{1}', group_name => 'ga');       -- 42809
SELECT mq.nack('sg_classic', '{1}', group_name => 'ga');      -- 42809
SELECT mq.seek('sg', 'ga');                                   -- 22023 (stream_seek.sql)
SELECT * FROM mq.browse('sg');                                -- 0A000
SELECT queue FROM mq.queues WHERE queue LIKE '\%DLQ\%%' ORDER BY 1;

-- earliest sees what was there, latest only what comes after: each group
-- gets every message
SELECT count(*) FROM (SELECT mq.send('sg', 'after-' || i, "partition" => i % 2)
						FROM generate_series(0, 1) i) x;
SELECT * FROM sg_take('ga');
SELECT * FROM sg_take('gl');
SELECT * FROM sg_take('ga');                                  -- nothing more
-- a timestamp: the first message at or after it
SELECT pg_sleep(0.05);
SELECT now() AS t0 \gset
SELECT pg_sleep(0.05);
SELECT count(*) FROM (SELECT mq.send('sg', 'late-' || i, "partition" => i % 2)
						FROM generate_series(0, 1) i) x;
SELECT mq.group_declare('sg', 'gt', start => :'t0');
SELECT * FROM sg_take('gt');

-- the view: committed offset = lowest unsettled; lag = end - committed
SELECT * FROM sg_view('ga');
SELECT * FROM sg_view('gl');
SELECT mq.ack('sg', ARRAY(SELECT msg_id FROM got WHERE g = 'ga' AND p = 0 AND o < 2),
			  group_name => 'ga');
SELECT * FROM sg_view('ga');
\set VERBOSITY sqlstate
SELECT mq.ack('sg', ARRAY(SELECT msg_id FROM got WHERE g = 'ga' AND p = 0 AND o < 2),
			  group_name => 'ga');                            -- 55000: acked already
SELECT mq.ack('sg', ARRAY(SELECT msg_id FROM got WHERE g = 'ga' AND p = 0 AND o = 2),
			  group_name => 'gt');                            -- 55000: not gt's
\set VERBOSITY default
SELECT mq.ack('sg', ARRAY(SELECT msg_id FROM got WHERE g = 'ga' AND (p = 1 OR o >= 2)),
			  group_name => 'ga');
SELECT mq.ack('sg', ARRAY(SELECT msg_id FROM got WHERE g = 'gl'), group_name => 'gl');
SELECT mq.extend_lease('sg', ARRAY(SELECT msg_id FROM got WHERE g = 'gt'), '1 hour',
					   group_name => 'gt');
SELECT * FROM sg_view('ga');
SELECT * FROM sg_view('gt');
SELECT queue, group_name, mode, "partition", consumer, idle IS NOT NULL AS idle
  FROM mq.consumer_groups WHERE group_name = 'gt' ORDER BY 4;

-- competing consumers in one group get disjoint messages
TRUNCATE got;
SELECT mq.group_declare('sg', 'gc');
SELECT count(*) FROM (SELECT mq.send('sg', 'c-' || i, "partition" => i % 2)
						FROM generate_series(0, 5) i) x;
SELECT count(*) FROM sg_take('gc', 3);
\c
-- the session end returned gc's three at once, redelivered
CREATE TEMP TABLE got (g text, msg_id bigint, body text, p int, o bigint, dc int, rt int);
SELECT * FROM sg_take('gc', 2);
SELECT * FROM sg_view('gc');
SELECT count(*), count(DISTINCT msg_id) FROM got;
SELECT * FROM sg_take('gc', 10);
SELECT count(*), count(DISTINCT msg_id) FROM got;
SELECT mq.ack('sg', ARRAY(SELECT DISTINCT msg_id FROM got), group_name => 'gc');
-- a rollback returns them at once too, delivery_count + 1
SELECT mq.send('sg', 'rb', "partition" => 0) IS NOT NULL;
BEGIN;
SELECT * FROM sg_take('gc', 1);
ROLLBACK;
SELECT * FROM sg_take('gc', 10);
SELECT * FROM sg_view('gc');
SELECT mq.ack('sg', ARRAY(SELECT msg_id FROM got WHERE body = 'rb'), group_name => 'gc');
SELECT * FROM sg_view('gc');

-- nack: a retry after the group's delay (1 s here), reconsume_times counts
TRUNCATE got;
SELECT mq.group_declare('sg', 'gr', max_retries => 2, retry_delays => '{1 s, 3 s}');
SELECT mq.send('sg', 'poison', "partition" => 1) IS NOT NULL;
SELECT * FROM sg_take('gr');
SELECT mq.nack('sg', ARRAY(SELECT msg_id FROM got), group_name => 'gr');
SELECT * FROM sg_take('gr');                                  -- not yet: delayed
SELECT retrying FROM sg_view('gr') WHERE p = 1;
SELECT pg_sleep(1.05);
SELECT * FROM sg_take('gr');                                  -- rt 1
SELECT mq.nack('sg', ARRAY(SELECT msg_id FROM got LIMIT 1), group_name => 'gr');
SELECT pg_sleep(1.05);
SELECT * FROM sg_take('gr');                                  -- not yet: 3 s now
SELECT pg_sleep(2);
SELECT * FROM sg_take('gr');                                  -- rt 2, the last try
-- nack with a delay overrides the backoff; over max_retries: to %DLQ%gr
SELECT mq.nack('sg', ARRAY(SELECT msg_id FROM got LIMIT 1), delay => '0', group_name => 'gr');
SELECT * FROM sg_take('gr');                                  -- dead-lettered instead
SELECT convert_from(body, 'UTF8') AS body, headers - 'x-dlq-origin-msg-id' AS headers,
	   (headers->>'x-dlq-origin-msg-id')::bigint = (SELECT msg_id FROM got LIMIT 1) AS same_id
  FROM mq.consume('%DLQ%gr', 10, auto_ack => true);
SELECT * FROM sg_view('gr');
-- a lease that runs out retries after the delay as well
TRUNCATE got;
SELECT mq.send('sg', 'slow', "partition" => 0) IS NOT NULL;
SELECT convert_from(body, 'UTF8'), delivery_count FROM mq.consume('sg', group_name => 'gr', lease => '10 ms');
SELECT pg_sleep(0.05);
SELECT * FROM sg_take('gr');                                  -- waits for 1 s
SELECT pg_sleep(1);
SELECT * FROM sg_take('gr');
-- nack(requeue => false): to the DLQ at once, reason nack
SELECT mq.nack('sg', ARRAY(SELECT msg_id FROM got), requeue => false, group_name => 'gr');
SELECT convert_from(body, 'UTF8') AS body, headers->>'x-dlq-reason' AS reason,
	   headers->>'x-reconsume-times' AS rt, headers->>'x-dlq-origin-partition' AS p
  FROM mq.consume('%DLQ%gr', 10, auto_ack => true);
SELECT dead FROM sg_view('gr');
-- auto_ack: at most once
SELECT mq.send('sg', 'auto', "partition" => 0) IS NOT NULL;
SELECT convert_from(body, 'UTF8') FROM mq.consume('sg', group_name => 'gr', auto_ack => true);
SELECT * FROM sg_take('gr');
SELECT committed, lag, in_flight FROM sg_view('gr') WHERE p = 0;

-- wait long-polls, woken by the publishing commit
SELECT mq.group_declare('sg', 'gw');
SELECT count(*) FROM mq.consume('sg', group_name => 'gw', wait => '200 ms');

-- a group_delete rolled back to a savepoint keeps the group's shared state:
-- the delivery taken before it is still this session's to ack
SELECT mq.group_declare('sg', 'gsub', start => 'earliest');
BEGIN;
CREATE TEMP TABLE sub_taken AS SELECT msg_id FROM mq.consume('sg', 1, group_name => 'gsub');
SAVEPOINT s;
SELECT mq.group_delete('sg', 'gsub');
ROLLBACK TO s;
COMMIT;
SELECT count(*) FROM sub_taken;
SELECT mq.ack('sg', ARRAY(SELECT msg_id FROM sub_taken), group_name => 'gsub');
SELECT mq.group_delete('sg', 'gsub');
DROP TABLE sub_taken;

-- group_delete; a group name may be declared on several streams
SELECT mq.queue_declare('sg2', 'stream');
SELECT mq.group_declare('sg2', 'ga', start => 'earliest');
SELECT mq.group_delete('sg', 'gw');
SELECT * FROM mq.consume('sg', group_name => 'gw');           -- 42704
SELECT DISTINCT queue, group_name FROM mq.consumer_groups ORDER BY 1, 2;
-- deleting a stream deletes its groups; re-created, it has none
SELECT mq.queue_delete('sg2');
SELECT mq.queue_declare('sg2', 'stream');
SELECT count(*) FROM mq.consumer_groups WHERE queue = 'sg2';
SELECT count(*) FROM pg_class WHERE relname ~ '^g[0-9]+_' AND relnamespace = 'mq_storage'::regnamespace
   AND relname NOT IN (SELECT format('g%s_%s_%s_0', g.queue_id, g.id, l)
						 FROM mq.cat_group g, generate_series(0, 1) l);
SELECT mq.queue_delete('sg');
SELECT count(*) FROM mq.consumer_groups;

-- classic queues: unchanged
SELECT mq.send('sg_classic', 'x') IS NOT NULL;
SELECT convert_from(body, 'UTF8'), "partition", "offset", reconsume_times
  FROM mq.consume('sg_classic', auto_ack => true);
SELECT mq.queue_delete('sg2');
SELECT mq.queue_delete('sg_classic');
SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue LIKE '\%DLQ\%%';
