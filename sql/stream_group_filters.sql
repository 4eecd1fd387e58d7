-- Filters of consumer groups on streams (issue 12, slice 3): tag and SQL92
-- filters evaluated per group; rejected messages are settled for that group
-- only and its committed offset moves past them.
CREATE TEMP TABLE got (g text, msg_id bigint, body text, p int, o bigint);
CREATE FUNCTION sf_take(g text, n int DEFAULT 100)
RETURNS TABLE (body text, p int, o bigint) LANGUAGE sql AS $$
	WITH c AS (
		INSERT INTO got
		SELECT g, c.msg_id, convert_from(c.body, 'UTF8'), c."partition", c."offset"
		  FROM mq.consume('sf', n, group_name => g, lease => '1 hour') c
		RETURNING *)
	SELECT body, p, o FROM c ORDER BY p, o
$$;
CREATE FUNCTION sf_view(g text)
RETURNS TABLE (p int, committed bigint, e bigint, lag bigint, in_flight int) LANGUAGE sql AS $$
	SELECT "partition", committed_offset, end_offset, lag, in_flight
	  FROM mq.consumer_groups WHERE queue = 'sf' AND group_name = g ORDER BY 1
$$;

SELECT mq.queue_declare('sf', 'stream', arguments => '{"partitions": 2}');

-- declare: filters are checked here
SELECT mq.group_declare('sf', 'ab', start => 'earliest', filter => 'TagA || TagB');
SELECT mq.group_declare('sf', 'all', start => 'earliest', filter => '*');
SELECT mq.group_declare('sf', 'empty', start => 'earliest', filter => '');
SELECT mq.group_declare('sf', 'none', start => 'earliest');
SELECT mq.group_declare('sf', 'sq', start => 'earliest', filter_type => 'sql92',
						filter => 'region = ''eu'' AND amount > 5');
SELECT mq.group_declare('sf', 'c', start => 'earliest', filter => 'TagC');
SELECT mq.group_declare('sf', 'bad', filter_type => 'sql92', filter => 'a = 1)');  -- 42601
SELECT mq.group_declare('sf', 'bad', filter_type => 'sql92', filter => 'a = = 1'); -- 42601
SELECT mq.group_declare('sf', 'bad', filter_type => 'xpath', filter => 'a');      -- 22023
SELECT mq.group_declare('sf', 'bad', filter_type => 'sql92');  -- no filter: fine
SELECT mq.group_delete('sf', 'bad');
-- tag expressions are tolerant, as RocketMQ's: empty alternatives are ignored
SELECT mq.group_declare('sf', 'bad', filter => 'TagA || ');
SELECT mq.group_delete('sf', 'bad');
-- redeclare: the same filter is nothing, another one an error naming it
SELECT mq.group_declare('sf', 'ab', start => 'earliest', filter => 'TagA || TagB');
SELECT mq.group_declare('sf', 'ab', start => 'earliest', filter => 'TagA');      -- 55000
SELECT mq.group_declare('sf', 'ab', start => 'earliest');                         -- 55000
SELECT mq.group_declare('sf', 'sq', start => 'earliest',
						filter => 'region = ''eu'' AND amount > 5');             -- 55000: type
SELECT name, filter, filter_type FROM mq.cat_group WHERE queue_id =
	(SELECT id FROM mq.cat_queue WHERE name = 'sf') ORDER BY id;

SELECT count(*) FROM (
	SELECT mq.send('sf', 'm' || i, "partition" => i % 2,
				   tag => (ARRAY['TagA', 'TagB', 'TagC', NULL])[i % 4 + 1],
				   headers => jsonb_build_object('region', CASE WHEN i < 4 THEN 'eu' ELSE 'us' END,
												 'amount', i * 3))
	  FROM generate_series(0, 7) i) x;
-- what was sent: m0 TagA eu 0, m1 TagB eu 3, m2 TagC eu 6, m3 - eu 9,
-- m4 TagA us 12, m5 TagB us 15, m6 TagC us 18, m7 - us 21

-- each group gets exactly its messages
SELECT * FROM sf_take('ab');
SELECT * FROM sf_take('all');
SELECT * FROM sf_take('empty');
SELECT * FROM sf_take('none');
SELECT * FROM sf_take('sq');    -- m2, m3 (eu, amount > 5)
SELECT * FROM sf_take('c');
-- nothing more, and filtered messages are not in flight
SELECT * FROM sf_take('ab');
SELECT * FROM sf_view('ab');
SELECT * FROM sf_view('sq');
-- acking ab's deliveries: its committed offset passes the filtered ones
SELECT mq.ack('sf', array_agg(msg_id), group_name => 'ab') FROM got WHERE g = 'ab';
SELECT * FROM sf_view('ab');
-- c acks its two (partition 0); partition 1 had no TagC: all of it filtered
SELECT mq.ack('sf', array_agg(msg_id), group_name => 'c') FROM got WHERE g = 'c' AND p = 0;
SELECT * FROM sf_view('c');
-- auto_ack with a filter
SELECT mq.group_declare('sf', 'auto', start => 'earliest', filter => 'TagB');
SELECT convert_from(body, 'UTF8') AS body FROM
	mq.consume('sf', 10, group_name => 'auto', auto_ack => true) ORDER BY 1;
SELECT * FROM sf_view('auto');
-- a new message: only the groups whose filter it passes see it
SELECT mq.send('sf', 'm8', "partition" => 0, tag => 'TagB',
			   headers => '{"region": "eu", "amount": 100}') > 0 AS sent;
SELECT * FROM sf_take('ab');
SELECT * FROM sf_take('c');
SELECT * FROM sf_take('sq');
SELECT * FROM sf_view('c');

-- filters survive a reload of the catalog cache (another group's declare)
SELECT mq.group_declare('sf', 'later', filter => 'TagZ');
SELECT mq.send('sf', 'm9', "partition" => 1, tag => 'TagA') > 0 AS sent;
SELECT * FROM sf_take('ab');
SELECT * FROM sf_take('c');
SELECT * FROM sf_take('later');
SELECT * FROM sf_view('later');

-- two tags whose hashes collide (hashtext('tag15566') = hashtext('tag66554'),
-- the hash stream entries carry): the hash lets the other tag through, the
-- filter itself rejects it; it is settled for the group, never delivered
SELECT hashtext('tag15566') = hashtext('tag66554') AS hashes_collide;
SELECT mq.group_declare('sf', 'coll', filter => 'tag15566');
SELECT mq.send('sf', 'm10', "partition" => 0, tag => 'tag66554') > 0 AS sent;
SELECT mq.send('sf', 'm11', "partition" => 0, tag => 'tag15566') > 0 AS sent;
SELECT mq.send('sf', 'm12', "partition" => 0, tag => 'tag66554') > 0 AS sent;
SELECT mq.send('sf', 'm13', "partition" => 0, tag => 'tag15567') > 0 AS sent;
SELECT tag_skips AS skips_before FROM mq._session_counters() \gset
SELECT * FROM sf_take('coll');
-- only the fourth (another hash) was skipped by its hash: the colliding
-- two were read and rejected by the filter
SELECT tag_skips - :skips_before AS skipped_by_hash FROM mq._session_counters();
SELECT mq.ack('sf', array_agg(msg_id), group_name => 'coll') FROM got WHERE g = 'coll';
SELECT * FROM sf_view('coll');

-- the nesting limit of sql92 filters (1000) is one, checked when the filter
-- is parsed: group_declare refuses what consume could not evaluate, with
-- filter_match's SQLSTATE (54001), and creates nothing
SELECT mq.queue_declare('sf_deep', 'stream');
CREATE FUNCTION sf_ors(n int) RETURNS text LANGUAGE sql AS $$
	SELECT string_agg('a = ' || i, ' OR ' ORDER BY i) FROM generate_series(1, n) i $$;
\set VERBOSITY sqlstate
SELECT mq.filter_match('sql92', sf_ors(8000), '{}');                              -- 54001
SELECT mq.group_declare('sf_deep', 'deep', filter_type => 'sql92', filter => sf_ors(8000)); -- 54001
SELECT mq.filter_match('sql92', repeat('NOT ', 9000) || 'a', '{}');              -- 54001
SELECT mq.group_declare('sf_deep', 'deep', filter_type => 'sql92',
						filter => repeat('NOT ', 9000) || 'a');                    -- 54001
-- just over the limit: 1000 terms joined by OR (1001 deep), 999 NOTs,
-- 1000 parentheses
SELECT mq.filter_match('sql92', sf_ors(1000), '{}');                              -- 54001
SELECT mq.group_declare('sf_deep', 'deep', filter_type => 'sql92', filter => sf_ors(1000)); -- 54001
SELECT mq.group_declare('sf_deep', 'deep', filter_type => 'sql92',
						filter => repeat('NOT ', 999) || 'a');                     -- 54001
SELECT mq.group_declare('sf_deep', 'deep', filter_type => 'sql92',
						filter => repeat('(', 1000) || 'a' || repeat(')', 1000));  -- 54001
SELECT count(*) FROM mq.cat_group WHERE queue_id = (SELECT id FROM mq.cat_queue WHERE name = 'sf_deep');
\set VERBOSITY default
SELECT mq.group_declare('sf_deep', 'deep', filter_type => 'sql92', filter => sf_ors(9000));
-- just under it, a filter works at declare and at every consume
SELECT mq.filter_match('sql92', sf_ors(999), '{"a": 999}') AS ors_match,
	   mq.filter_match('sql92', repeat('NOT ', 998) || 'a', '{"a": true}') AS nots_match,
	   mq.filter_match('sql92', repeat('(', 999) || 'a' || repeat(')', 999),
					   '{"a": true}') AS parens_match;
SELECT mq.group_declare('sf_deep', 'deep', start => 'earliest', filter_type => 'sql92',
						filter => sf_ors(999));
SELECT mq.group_declare('sf_deep', 'nots', start => 'earliest', filter_type => 'sql92',
						filter => repeat('NOT ', 998) || 'a');
SELECT mq.send('sf_deep', 'hit', headers => '{"a": 999}') > 0 AS sent,
	   mq.send('sf_deep', 'miss', headers => '{"a": 1000}') > 0 AS sent,
	   mq.send('sf_deep', 'true', headers => '{"a": true}') > 0 AS sent;
SELECT convert_from(body, 'UTF8') AS body
  FROM mq.consume('sf_deep', 10, group_name => 'deep', auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body
  FROM mq.consume('sf_deep', 10, group_name => 'nots', auto_ack => true);
SELECT mq.queue_delete('sf_deep');
-- dead-letter queues are made at a group's first dead letter: none here
SELECT count(*) FROM mq.cat_queue WHERE name LIKE '\%DLQ\%%';
DROP FUNCTION sf_ors;

SELECT mq.queue_delete('sf');
SELECT mq.queue_delete(name) FROM mq.cat_queue WHERE name LIKE '\%DLQ\%%' ORDER BY name;
DROP FUNCTION sf_take, sf_view;
