-- queue_ext_pgmq: pgmq's SQL API on queue_ext queues (docs/pgmq.md).
-- queue_ext is loaded by the runner; this test loads the pgmq layer.
CREATE EXTENSION queue_ext_pgmq;
CREATE EXTENSION pg_partman;

-- errors as SQLSTATE: message (no CONTEXT, no source locations)
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- The surface: pgmq 1.12.0's functions with its argument names, defaults
-- and results (helpers starting with _ are this layer's own)
SELECT p.proname, pg_get_function_arguments(p.oid) AS args,
       pg_get_function_result(p.oid) AS result
  FROM pg_proc p
 WHERE p.pronamespace = 'pgmq'::regnamespace AND p.proname !~ '^_'
 ORDER BY 1, 2;
-- and its types
SELECT t.typname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod)
  FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid
 WHERE t.typnamespace = 'pgmq'::regnamespace
   AND t.typname IN ('message_record', 'queue_record', 'metrics_result')
 ORDER BY 1, 2;
-- pgmq.meta is a table
SELECT tablename FROM pg_tables WHERE schemaname = 'pgmq' ORDER BY 1;

-- Names: pgmq's checks and errors
SELECT pgmq.format_table_name('Jobs-EU', 'q');
SELECT pg_temp.err($$SELECT pgmq.create('semi;colon')$$);
SELECT pg_temp.err($$SELECT pgmq.create('dash--dash')$$);
SELECT pg_temp.err($$SELECT pgmq.create(repeat('x', 48))$$);
SELECT pg_temp.err($$SELECT pgmq.send('never_created', '1')$$);
SELECT pg_temp.err($$SELECT pgmq.read('never_created', 10, 1)$$);

-- A queue: a queue_ext queue, a view, a sequence and an archive table
SELECT pgmq.create('jobs');
SELECT pgmq.create('jobs');                  -- idempotent, with pgmq's notices
SELECT queue, type, durable FROM mq.queues WHERE queue LIKE 'pgmq.%' ORDER BY 1;
SELECT c.relname, c.relkind FROM pg_class c
 WHERE c.relnamespace = 'pgmq'::regnamespace AND c.relname LIKE '%jobs%' ORDER BY 1;
SELECT queue_name, is_partitioned, is_unlogged, created_at <= now() FROM pgmq.list_queues();

-- msg_ids count from 1 per queue, in every form of send
SELECT pgmq.send('jobs', '{"n": 1}');
SELECT pgmq.send('jobs', '{"n": 2}', '{"trace": "a"}'::jsonb);
SELECT pgmq.send('jobs', '{"n": 3}', 0);
SELECT pgmq.send('jobs', '{"n": 4}', clock_timestamp() - interval '1 second');
SELECT pgmq.send('jobs', '{"n": 5}', '{"trace": "b"}'::jsonb, 0);
SELECT pgmq.send('jobs', NULL);
SELECT pgmq.send_batch('jobs', ARRAY['{"n": 7}', '{"n": 8}']::jsonb[]);
SELECT pgmq.send_batch('jobs', ARRAY['{"n": 9}', '10']::jsonb[], ARRAY['{"h": 9}', NULL]::jsonb[]);
-- pgmq's checks of send_batch's arguments (nothing is sent)
SELECT pg_temp.err($$SELECT pgmq.send_batch('jobs', ARRAY['1', '2']::jsonb[], ARRAY['{}']::jsonb[])$$);
SELECT pg_temp.err($$SELECT pgmq.send_batch('jobs', ARRAY[]::jsonb[])$$);
SELECT pg_temp.err($$SELECT pgmq.send_batch('jobs', NULL::jsonb[], 0)$$);
SELECT pgmq.send_batch('jobs', ARRAY['11']::jsonb[], 0);
SELECT pgmq.send_batch('jobs', ARRAY['12']::jsonb[], clock_timestamp());
SELECT pgmq.send_batch('jobs', ARRAY['13']::jsonb[], ARRAY['{"h": 13}']::jsonb[], 0);
SELECT msg_id, read_ct, vt = enqueued_at AS fresh, message, headers FROM pgmq.q_jobs ORDER BY msg_id;

-- read: in order, qty at most, read_ct counts, vt in the future
SELECT msg_id, read_ct, vt > clock_timestamp() + interval '50 seconds' AS vt_ok, message, headers
  FROM pgmq.read('jobs', 60, 3);
SELECT msg_id FROM pgmq.read('jobs', 60, 0);                  -- nothing
SELECT pg_temp.err($$SELECT pgmq.read('jobs', NULL, 1)$$);
SELECT msg_id, message FROM pgmq.read('jobs', 60, 2, '{"n": 8}');   -- conditional
-- read ones show in the view with their vt and read_ct
SELECT msg_id, read_ct, vt > clock_timestamp() AS invisible FROM pgmq.q_jobs ORDER BY msg_id;

-- delete: read and never-read messages, by one id and by array
SELECT pgmq.delete('jobs', 1);               -- read
SELECT pgmq.delete('jobs', 4);               -- never read
SELECT pgmq.delete('jobs', 4);               -- gone
SELECT pgmq.delete('jobs', 999);             -- never existed
SELECT * FROM pgmq.delete('jobs', ARRAY[2, 5, 999, 2]::bigint[]);
SELECT msg_id FROM pgmq.q_jobs ORDER BY msg_id;

-- archive: a read one (read_ct kept) and a never-read one
SELECT pgmq.archive('jobs', 3);
SELECT pgmq.archive('jobs', 6);
SELECT pgmq.archive('jobs', 6);
SELECT * FROM pgmq.archive('jobs', ARRAY[7, 9, 1000]::bigint[]);
SELECT msg_id, read_ct, archived_at >= enqueued_at AS ok, message, headers FROM pgmq.a_jobs ORDER BY msg_id;
SELECT msg_id FROM pgmq.q_jobs ORDER BY msg_id;

-- set_vt: hides a ready message, shows a read one again, any message
SELECT msg_id, read_ct, vt > clock_timestamp() + interval '90 seconds' AS later
  FROM pgmq.set_vt('jobs', 10, 100);
SELECT msg_id FROM pgmq.read('jobs', 1, 10);                  -- 10 is hidden, 8 read
SELECT msg_id, read_ct FROM pgmq.set_vt('jobs', 8, 0);        -- visible again
SELECT msg_id, read_ct FROM pgmq.read('jobs', 30, 1);         -- 8 once more
SELECT msg_id FROM pgmq.set_vt('jobs', 424242, 10);           -- no such message: no row
-- (11, 12 and 13 are read for 1 s, 8 for 30 s, 10 hidden: pop finds
-- nothing visible)
SELECT msg_id FROM pgmq.pop('jobs');
-- a pop takes the first visible message and deletes it
SELECT pgmq.create('popq');
SELECT pgmq.send_batch('popq', ARRAY['"a"', '"b"', '"c"']::jsonb[]);
SELECT msg_id FROM pgmq.read('popq', 60, 1);
SELECT msg_id, read_ct, message FROM pgmq.pop('popq');
SELECT msg_id, read_ct, message FROM pgmq.pop('popq');
SELECT msg_id, read_ct, message FROM pgmq.pop('popq');
SELECT msg_id FROM pgmq.q_popq ORDER BY msg_id;

-- a read in a transaction that rolls back leaves the message visible, and
-- a delete that rolls back leaves it there
BEGIN;
SELECT msg_id FROM pgmq.set_vt('jobs', 10, 0);
SELECT msg_id FROM pgmq.read('jobs', 60, 1);
ROLLBACK;
BEGIN;
SELECT pgmq.delete('jobs', 10);
SELECT count(*) FROM pgmq.q_jobs WHERE msg_id = 10;           -- gone for us
ROLLBACK;
SELECT msg_id, read_ct FROM pgmq.read('jobs', 60, 1);

-- delayed messages: in the view with their vt, invisible to read, and
-- delete, archive, set_vt and purge reach them
SELECT pgmq.create('later');
SELECT pgmq.send('later', '"a"', 3600);
SELECT pgmq.send('later', '"b"', clock_timestamp() + interval '1 hour');
SELECT pgmq.send_batch('later', ARRAY['"c"', '"d"']::jsonb[], 3600);
SELECT msg_id, read_ct, vt > clock_timestamp() + interval '50 minutes' AS due_later, message FROM pgmq.q_later ORDER BY msg_id;
SELECT msg_id FROM pgmq.read('later', 10, 10);
SELECT pgmq.delete('later', 1);
SELECT pgmq.archive('later', 2);
SELECT msg_id, read_ct, vt > clock_timestamp() AS due_later, message FROM pgmq.a_later;
SELECT msg_id, vt <= clock_timestamp() AS now_visible FROM pgmq.set_vt('later', 3, 0);
SELECT msg_id, message FROM pgmq.read('later', 10, 10);
SELECT pgmq.purge_queue('later');            -- 3 (read) and 4 (delayed)
SELECT count(*) FROM pgmq.q_later;

-- read_with_poll: returns as soon as a message becomes visible
SELECT pgmq.create('poll');
SELECT pgmq.send('poll', '"p"');
SELECT msg_id FROM pgmq.read('poll', 1, 1);
SELECT clock_timestamp() AS t0 \gset
SELECT msg_id, read_ct FROM pgmq.read_with_poll('poll', 30, 1, 5, 50);
SELECT clock_timestamp() - :'t0' BETWEEN interval '0.3 s' AND interval '4 s' AS woke_in_time;
SELECT clock_timestamp() AS t0 \gset
SELECT msg_id FROM pgmq.read_with_poll('poll', 30, 1, 1);       -- nothing: after 1 s
SELECT clock_timestamp() - :'t0' >= interval '0.9 s' AS waited;
SELECT msg_id FROM pgmq.set_vt('poll', 1, 1);
SELECT msg_id FROM pgmq.read_with_poll('poll', 30, 1, 5, 50, '{"x": 1}');  -- no match
SELECT msg_id, message FROM pgmq.read_with_poll('poll', 30, 1, 5, 50, '"p"');

-- metrics
SELECT pgmq.create('m');
SELECT pgmq.send_batch('m', ARRAY['1', '2', '3']::jsonb[]);
SELECT pgmq.send('m', '4', 600);
SELECT msg_id FROM pgmq.read('m', 60, 1);
SELECT queue_name, queue_length, queue_visible_length, total_messages,
       newest_msg_age_sec BETWEEN 0 AND 60 AS newest_ok,
       oldest_msg_age_sec BETWEEN newest_msg_age_sec AND 60 AS oldest_ok, scrape_time = now() AS now
  FROM pgmq.metrics('m');
SELECT queue_name, queue_length FROM pgmq.metrics_all() ORDER BY 1;
SELECT pg_temp.err($$SELECT pgmq.metrics('no_such_queue')$$);

-- purge counts ready, read and delayed messages; ids go on
SELECT pgmq.purge_queue('m');
SELECT pgmq.send('m', '5');

-- unlogged queues: a queue_ext queue that is not durable
SELECT pgmq.create_unlogged('scratch');
SELECT durable FROM mq.queues WHERE queue = 'pgmq.q_scratch';
SELECT is_unlogged FROM pgmq.meta WHERE queue_name = 'scratch';

-- names keep pgmq's case and characters; tables are lower-cased
SELECT pgmq.create('Mixed-Case');
SELECT pgmq.send('Mixed-Case', '{"k": true}');
SELECT msg_id, message FROM pgmq.read('Mixed-Case', 10, 1);
SELECT pgmq.archive('Mixed-Case', 1);
SELECT msg_id FROM pgmq."a_mixed-case";

-- partitioned queues: the archive partitioned by pg_partman
SELECT pgmq.create_partitioned('parted', '100', '1000');
SELECT relkind FROM pg_class WHERE oid = 'pgmq.a_parted'::regclass;
SELECT parent_table, control FROM part_config WHERE parent_table LIKE 'pgmq.%' ORDER BY 1;
SELECT pgmq.send_batch('parted', ARRAY['1', '2']::jsonb[]);
SELECT * FROM pgmq.archive('parted', ARRAY[1, 2]::bigint[]);
SELECT count(*) FROM pgmq.a_parted;
SELECT is_partitioned FROM pgmq.meta WHERE queue_name = 'parted';

-- dropping: true, then false with pgmq's notice; the old form warns
SELECT pgmq.drop_queue('parted');
SELECT count(*) FROM part_config WHERE parent_table LIKE 'pgmq.%';
SELECT pgmq.drop_queue('parted');
SELECT pgmq.drop_queue('scratch', false);
SELECT count(*) FROM mq.queues WHERE queue = 'pgmq.q_scratch';
-- created again, a queue counts from 1 again
SELECT pgmq.drop_queue('poll');
SELECT pgmq.create('poll');
SELECT pgmq.send('poll', '"again"');
SELECT msg_id, message FROM pgmq.read('poll', 10, 5);

-- the queue_ext operations under it, by themselves
SELECT mq.queue_declare('plain');
SELECT mq.send('plain', 'x') AS x_id \gset
SELECT msg_id = :x_id AS same, delivery_count, was_leased, was_until IS NOT NULL AS ready_since
  FROM mq.lease_ids('plain', ARRAY[:x_id, :x_id, 1]::bigint[], '1 minute');
SELECT msg_id = :x_id AS same, delivery_count FROM mq.in_flight('plain');
SELECT count(*) FROM mq.browse('plain');                      -- leased: not ready
SELECT msg_id = :x_id AS same, was_leased FROM mq.lease_ids('plain', ARRAY[:x_id]::bigint[], '0');
SELECT count(*) FROM mq.in_flight('plain');
SELECT msg_id = :x_id AS same, delivery_count FROM mq.lease_ids('plain', ARRAY[:x_id]::bigint[], '1 minute', deliver => true);
SELECT count(*) FROM mq.lease_ids('plain', ARRAY[:x_id]::bigint[], '1 minute', deliver => true);  -- leased: not taken
SELECT mq.ack('plain', ARRAY[:x_id]::bigint[]);
SELECT count(*) FROM mq.lease_ids('plain', ARRAY[:x_id]::bigint[]);   -- settled
SELECT count(*) FROM mq.lease_ids('plain', ARRAY[]::bigint[]);
SELECT pg_temp.err($$SELECT * FROM mq.lease_ids('plain', ARRAY[1]::bigint[], '0', true)$$);
SELECT pg_temp.err($$SELECT * FROM mq.lease_ids('plain', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM mq.lease_ids('plain', ARRAY[1]::bigint[], '-1 s')$$);
SELECT pg_temp.err($$SELECT * FROM mq.lease_ids('nope', ARRAY[1]::bigint[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.in_flight('plain', 0)$$);
-- mq.ack_keys: ack by business key, ready or leased by anyone; a key twice
-- counts once; unknown, settled and other queues' keys give no row
SELECT mq.send('plain', 'a', key => 'ak-a') AS a_id \gset
SELECT mq.send('plain', 'b', key => 'ak-b') AS b_id \gset
SELECT mq.queue_declare('ak_other');
SELECT mq.send('ak_other', 'c', key => 'ak-c') IS NOT NULL AS sent_elsewhere;
SELECT count(*) FROM mq.consume('plain', 1, lease => '1 hour', session_bound => false);  -- a, leased
SELECT key, msg_id = CASE key WHEN 'ak-a' THEN :a_id ELSE :b_id END AS right_id
  FROM mq.ack_keys('plain', ARRAY['ak-b', 'nope', 'ak-a', 'ak-b', 'ak-c']);
SELECT count(*) FROM mq.ack_keys('plain', ARRAY['ak-a']);        -- settled
SELECT count(*) FROM mq.in_flight('plain');
SELECT count(*) FROM mq.browse('plain');
SELECT count(*) FROM mq.ack_keys('plain', '{}');
SELECT pg_temp.err($$SELECT * FROM mq.ack_keys('plain', ARRAY['x', NULL])$$);
SELECT pg_temp.err($$SELECT * FROM mq.ack_keys('plain', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM mq.ack_keys('nope', ARRAY['x'])$$);
SELECT mq.queue_declare('ev', type => 'stream');
SELECT pg_temp.err($$SELECT * FROM mq.lease_ids('ev', ARRAY[1]::bigint[])$$);
SELECT pg_temp.err($$SELECT * FROM mq.in_flight('ev')$$);
SELECT pg_temp.err($$SELECT * FROM mq.ack_keys('ev', ARRAY['x'])$$);

-- FIFO reads by message group (header x-pgmq-group): a group is readable
-- while its oldest message is visible, and only up to its first message in
-- flight; messages without the header form one group of their own
SELECT pgmq.create('fq');
SELECT pgmq.send('fq', jsonb_build_object('n', v.i),
                 CASE WHEN v.g IS NOT NULL THEN jsonb_build_object('x-pgmq-group', v.g) END)
  FROM (VALUES (1, 'A'), (2, 'A'), (3, 'A'), (4, 'B'), (5, 'B'), (6, NULL), (7, 'A')) v(i, g)
 ORDER BY v.i;
SELECT pgmq.create_fifo_index('fq'), pgmq.create_fifo_indexes_all();
SELECT msg_id, read_ct, message, headers FROM pgmq.read_grouped('fq', 30, 3);   -- the oldest group first
SELECT array_agg(msg_id) FROM pgmq.read_grouped('fq', 30, 10);                  -- A is held by 1-3
SELECT array_agg(msg_id) FROM pgmq.read_grouped('fq', 30, 10);                  -- everything held
SELECT pgmq.delete('fq', ARRAY[1, 2]::bigint[]);
SELECT array_agg(msg_id) FROM pgmq.read_grouped_head('fq', 30, 10);             -- 3 still in flight
SELECT pgmq.delete('fq', 3::bigint);
SELECT array_agg(msg_id) FROM pgmq.read_grouped_head('fq', 30, 10);             -- now 7
SELECT pgmq.purge_queue('fq');
SELECT pgmq.send('fq', jsonb_build_object('n', v.i),
                 CASE WHEN v.g IS NOT NULL THEN jsonb_build_object('x-pgmq-group', v.g) END)
  FROM (VALUES (1, 'A'), (2, 'A'), (3, 'A'), (4, 'B'), (5, 'B'), (6, NULL), (7, 'A')) v(i, g)
 ORDER BY v.i;
SELECT array_agg(msg_id) FROM pgmq.read_grouped_rr('fq', 0, 10);                -- layered round robin
SELECT array_agg(msg_id) FROM pgmq.read_grouped_head('fq', 0, 2);
SELECT array_agg(msg_id) FROM pgmq.read_grouped_rr_with_poll('fq', 30, 4, 1, 10);
SELECT count(*) FROM pgmq.read_grouped_with_poll('fq', 30, 10, 1, 10);          -- every head in flight
SELECT count(*) FROM pgmq.read_grouped_head_with_poll('fq', 30, 10, 1, 10);
SELECT count(*) FROM pgmq.read_grouped('fq', 30, 0);
-- a delayed message holds its group back too
SELECT pgmq.send('fq', '"later"', '{"x-pgmq-group": "C"}'::jsonb, 3600);
SELECT pgmq.send('fq', '"now"', '{"x-pgmq-group": "C"}'::jsonb);
SELECT msg_id FROM pgmq.read('fq', 0, 10) WHERE message = '"now"';        -- a plain read takes it
SELECT count(*) FROM pgmq.read_grouped('fq', 30, 10);
SELECT pg_temp.err($$SELECT * FROM pgmq.read_grouped('nope', 30, 1)$$);
SELECT pg_temp.err($$SELECT pgmq.create_fifo_index('nope')$$);
SELECT pgmq.drop_queue('fq');

-- topics: send_topic sends a copy to every queue bound with a matching
-- pattern (* one word, # any run), each a message of its own queue
SELECT pgmq.create('t_all'), pgmq.create('t_errors'), pgmq.create('t_api');
SELECT pgmq.bind_topic('logs.#', 't_all'), pgmq.bind_topic('*.error', 't_errors'),
       pgmq.bind_topic('logs.api.*', 't_api'), pgmq.bind_topic('logs.#', 't_all');
SELECT pattern, queue_name, compiled_regex FROM pgmq.list_topic_bindings() ORDER BY 1, 2;
SELECT pattern FROM pgmq.list_topic_bindings('t_api');
SELECT * FROM pgmq.test_routing('logs.error');
SELECT pgmq.send_topic('logs.error', '{"m": 1}');
SELECT pgmq.send_topic('logs.api.get', '{"m": 2}', '{"h": 1}', 0);
SELECT pgmq.send_topic('nothing', '{"m": 3}', 5);
SELECT * FROM pgmq.send_batch_topic('logs.api.put', ARRAY['{"a": 1}', '{"a": 2}']::jsonb[]) ORDER BY 1, 2;
SELECT msg_id, message, headers FROM pgmq.read('t_api', 30, 10);
SELECT queue_name, queue_length FROM pgmq.metrics_all() WHERE queue_name LIKE 't\_%' ORDER BY 1;
SELECT pgmq.unbind_topic('logs.#', 't_all'), pgmq.unbind_topic('logs.#', 't_all');
SELECT pgmq.drop_queue('t_errors');
SELECT pattern, queue_name FROM pgmq.topic_bindings;          -- the dropped queue's binding went with it
SELECT pg_temp.err($$SELECT pgmq.send_topic('logs..x', '{}')$$);
SELECT pg_temp.err($$SELECT pgmq.send_topic('logs.x', NULL)$$);
SELECT pg_temp.err($$SELECT pgmq.send_topic('', '{}')$$);
SELECT pg_temp.err($$SELECT pgmq.bind_topic('logs.**', 't_api')$$);
SELECT pg_temp.err($$SELECT pgmq.bind_topic('logs.*#', 't_api')$$);
SELECT pg_temp.err($$SELECT pgmq.bind_topic('logs', 'nope')$$);
SELECT pg_temp.err($$SELECT * FROM pgmq.send_batch_topic('logs.x', ARRAY[]::jsonb[])$$);
SELECT pgmq.drop_queue('t_all'), pgmq.drop_queue('t_api');

-- a queue dropped and created again numbers its messages from 1 again:
-- its ids reach its own messages, never the earlier queue's
SELECT pgmq.create('reborn');
SELECT pgmq.send_batch('reborn', ARRAY['"old 1"', '"old 2"', '"old 3"']::jsonb[]);
SELECT pgmq.drop_queue('reborn');
SELECT pgmq.create('reborn');
SELECT pgmq.send('reborn', '"new 1"');
SELECT pgmq.delete('reborn', 2::bigint);            -- f: only the old queue had a 2
SELECT pgmq.archive('reborn', 3::bigint);           -- f
SELECT msg_id, message FROM pgmq.set_vt('reborn', 1, 0);
SELECT msg_id, message FROM pgmq.read('reborn', 30, 5);
SELECT pgmq.delete('reborn', ARRAY[1, 2, 3]::bigint[]);
SELECT queue_length FROM pgmq.metrics('reborn');
SELECT pgmq.drop_queue('reborn');

-- pgmq 1.12's additions: pop of several, set_vt by time and by array,
-- last_read_at, writes to the view, notifications of sends
SELECT pgmq.create('news');
SELECT pgmq.send_batch('news', ARRAY['1', '2', '3', '4', '5', '6']::jsonb[]);
SELECT msg_id, read_ct, last_read_at FROM pgmq.pop('news', 2);     -- never read: NULL
SELECT msg_id, read_ct, last_read_at IS NOT NULL AS read_now,
       last_read_at <= clock_timestamp() AS past FROM pgmq.read('news', 0, 1);
SELECT msg_id, read_ct, last_read_at IS NOT NULL AS was_read FROM pgmq.pop('news');
SELECT msg_id, vt = '2100-01-01 00:00:00+00' AS vt_ok
  FROM pgmq.set_vt('news', 4, '2100-01-01 00:00:00+00'::timestamptz);
SELECT msg_id, vt > clock_timestamp() + interval '50 seconds' AS later
  FROM pgmq.set_vt('news', ARRAY[5, 99, 6, 5], 60);                 -- each id once, in order
SELECT count(*) FROM pgmq.read('news', 30, 10);                     -- 0: all hidden
SELECT msg_id FROM pgmq.set_vt('news', ARRAY[4, 5]::bigint[], clock_timestamp());
SELECT msg_id FROM pgmq.read('news', 30, 10);                       -- 4, 5
SELECT pgmq.pop('news', 0), pgmq.set_vt('news', ARRAY[6]::bigint[], NULL::timestamptz);
-- UPDATE of vt through the view is set_vt, DELETE is delete; nothing else
UPDATE pgmq.q_news SET vt = clock_timestamp() - interval '1 second' WHERE msg_id IN (4, 6);
SELECT msg_id FROM pgmq.read('news', 30, 10);                       -- 4, 6
DELETE FROM pgmq.q_news WHERE msg_id = 5;
SELECT msg_id FROM pgmq.q_news ORDER BY 1;                          -- 4, 6
SELECT pg_temp.err($$UPDATE pgmq.q_news SET message = '{}'$$);
SELECT pg_temp.err($$UPDATE pgmq.q_news SET vt = NULL$$);
-- notifications: enabled per queue, throttled; a send marks the time
SELECT pgmq.enable_notify_insert('news', 0);
SELECT pgmq.enable_notify_insert('news', 1000);                     -- again: no notice
SELECT queue_name, throttle_interval_ms, last_notified_at = to_timestamp(0) AS never
  FROM pgmq.list_notify_insert_throttles();
SELECT pgmq.send('news', '7');
SELECT last_notified_at > to_timestamp(0) AS notified FROM pgmq.list_notify_insert_throttles();
SELECT pgmq.update_notify_insert('news', 0);
-- a sender needs no privilege on the throttle table (pgmq's trigger
-- updates it for any sender)
CREATE ROLE regress_pgmq_sender;
GRANT USAGE ON SCHEMA pgmq TO regress_pgmq_sender;
GRANT USAGE ON SEQUENCE pgmq.q_news_msg_id_seq TO regress_pgmq_sender;
SELECT mq.grant('publish', 'queue', 'pgmq.q_news', 'regress_pgmq_sender');
SET ROLE regress_pgmq_sender;
SELECT pgmq.send('news', '8');
RESET ROLE;
SELECT last_notified_at > to_timestamp(0) AS notified FROM pgmq.list_notify_insert_throttles();
SELECT mq.revoke('publish', 'queue', 'pgmq.q_news', 'regress_pgmq_sender');
REVOKE ALL ON SEQUENCE pgmq.q_news_msg_id_seq FROM regress_pgmq_sender;
REVOKE ALL ON SCHEMA pgmq FROM regress_pgmq_sender;
DROP ROLE regress_pgmq_sender;
SELECT pg_temp.err($$SELECT pgmq.update_notify_insert('news', -1)$$);
SELECT pg_temp.err($$SELECT pgmq.enable_notify_insert('nope')$$);
SELECT pg_temp.err($$SELECT pgmq.update_notify_insert('jobs', 5)$$);
SELECT pgmq.disable_notify_insert('news');
SELECT count(*) FROM pgmq.list_notify_insert_throttles();
-- pgmq 1.13: create_partitioned's premake (the archive's partitions made
-- ahead), metrics' default_partition_length (NULL: not partitioned; the
-- queue itself has no partitions, so never a message in a default one)
SELECT pgmq.create_partitioned('premade', '10', '100', 2);
SELECT count(*) FROM pg_tables WHERE schemaname = 'pgmq' AND tablename LIKE 'a\_premade\_p%';
SELECT queue_name, default_partition_length FROM pgmq.metrics_all()
 WHERE queue_name IN ('premade', 'news') ORDER BY 1;
SELECT pgmq.drop_queue('premade');
SELECT pgmq.drop_queue('news');

-- DROP EXTENSION keeps each queue's archive and msg_id sequence, and its
-- queue_ext queue with its messages (as pgmq since 1.6 keeps its tables);
-- the views go, and in their place it leaves tables of pgmq's shape with
-- a copy of their rows, as pgmq keeps its table and rows.  After CREATE
-- EXTENSION, pgmq.create gives a queue its view back in place of the
-- table, its messages and ids as they were; drop_queue drops the table
SELECT count(*) AS jobs_before FROM pgmq.q_jobs \gset
CREATE TEMP TABLE jobs_rows AS
  SELECT msg_id, read_ct, enqueued_at, message, headers FROM pgmq.q_jobs;
SELECT pgmq.detach_archive('jobs');
-- another extension's drop, and a drop of none, leave everything as it was
CREATE EXTENSION citext;
DROP EXTENSION citext;
DROP EXTENSION IF EXISTS no_such_extension;
SELECT e.evtname, e.evtevent, e.evttags, d.deptype
  FROM pg_event_trigger e
  LEFT JOIN pg_depend d ON d.classid = 'pg_event_trigger'::regclass AND d.objid = e.oid
                       AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'queue_ext_pgmq')
 ORDER BY 1;
SELECT c.relname, c.relkind FROM pg_class c
 WHERE c.relnamespace = 'pgmq'::regnamespace AND c.relname IN ('q_jobs', 'q_later') ORDER BY 1;
DROP EXTENSION queue_ext_pgmq CASCADE;
SELECT tablename FROM pg_tables WHERE schemaname = 'pgmq' ORDER BY 1;
-- nothing of the extension stays but them (the event triggers went too)
SELECT count(*) FROM pg_event_trigger;
SELECT count(*) FROM pg_proc WHERE pronamespace = 'pgmq'::regnamespace;
-- pgmq's columns and types, a copy of the view's rows, marked by a comment
SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
  FROM pg_attribute a WHERE a.attrelid = 'pgmq.q_jobs'::regclass AND a.attnum > 0 ORDER BY a.attnum;
SELECT indexrelid::regclass, indisprimary FROM pg_index WHERE indrelid = 'pgmq.q_jobs'::regclass ORDER BY 1;
SELECT regexp_replace(obj_description('pgmq.q_jobs'::regclass, 'pg_class'),
                      ' at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC:', ' at ...:');
SELECT count(*) = :jobs_before AS all_rows,
       NOT EXISTS (SELECT * FROM jobs_rows
                   EXCEPT SELECT msg_id, read_ct, enqueued_at, message, headers FROM pgmq.q_jobs) AS same_rows
  FROM pgmq.q_jobs;
SELECT msg_id, read_ct, message, headers FROM pgmq.q_jobs ORDER BY msg_id LIMIT 3;
CREATE EXTENSION queue_ext_pgmq;
SELECT count(*) FROM mq.queues WHERE queue LIKE 'pgmq.%';
-- a table of a queue's name that DROP EXTENSION did not leave is not
-- taken: create refuses it, drop_queue does not drop it
CREATE TABLE pgmq.q_stranger (msg_id bigint);
SELECT pg_temp.err($$SELECT pgmq.create('stranger')$$);
SELECT pg_temp.err($$SELECT pgmq.drop_queue('stranger')$$);
DROP TABLE pgmq.q_stranger;
SELECT pgmq.drop_queue('stranger');
-- a left table with rows whose queue_ext queue is gone is not replaced
-- (its rows would be lost); drop_queue drops it
SELECT mq.queue_delete('pgmq.q_popq');
INSERT INTO pgmq.q_popq (msg_id, vt, message) VALUES (1000, now(), '"kept"') ON CONFLICT DO NOTHING;
SELECT pg_temp.err($$SELECT pgmq.create('popq')$$);
SELECT pgmq.drop_queue('popq');
SELECT pgmq.create('jobs');
SELECT c.relkind FROM pg_class c WHERE c.oid = 'pgmq.q_jobs'::regclass;
SELECT count(*) = :jobs_before AS all_rows,
       NOT EXISTS (SELECT msg_id, message, headers FROM jobs_rows
                   EXCEPT SELECT msg_id, message, headers FROM pgmq.q_jobs) AS same_messages
  FROM pgmq.q_jobs;
SELECT pgmq.send('jobs', '"fresh"');
SELECT count(*) = :jobs_before + 1 AS kept FROM pgmq.q_jobs;
-- a queue left without its view can be dropped all the same, its table too
SELECT pgmq.drop_queue(substr(sequencename, 3, length(sequencename) - 13))
  FROM pg_sequences WHERE schemaname = 'pgmq' ORDER BY sequencename;
SELECT count(*) FROM mq.queues WHERE queue LIKE 'pgmq.%';
SELECT tablename FROM pg_tables WHERE schemaname = 'pgmq' AND tablename LIKE 'q\_%';
DROP EXTENSION queue_ext_pgmq CASCADE;
DROP SCHEMA pgmq;
DROP TABLE jobs_rows;

-- The update from 0.1: the queues, their messages and archives stay, with
-- pgmq 1.12's shape
CREATE EXTENSION queue_ext_pgmq VERSION '0.1';
SELECT pgmq.create('up');
SELECT pgmq.send_batch('up', ARRAY['1', '2', '3']::jsonb[]);
SELECT msg_id FROM pgmq.read('up', 30, 1);
SELECT pgmq.archive('up', 2);
ALTER EXTENSION queue_ext_pgmq UPDATE TO '0.2';
SELECT msg_id, read_ct, last_read_at IS NOT NULL AS was_read, message FROM pgmq.q_up ORDER BY 1;
SELECT msg_id, read_ct, last_read_at, message FROM pgmq.a_up;
UPDATE pgmq.q_up SET vt = clock_timestamp() WHERE msg_id = 1;
-- messages of 0.1 are found by 0.1's keys, later ones by 0.2's (the
-- sequence's oid, the id led by its length): delete, archive and set_vt
-- find both
SELECT queue_name, last_msg_id FROM pgmq._legacy_keys;
SELECT pgmq.delete('up', 3);
SELECT * FROM pgmq.send('up', '4');
SELECT * FROM pgmq.send('up', '5');
SELECT regexp_replace(regexp_replace(b.key, ':[0-9]+$', ':<oid>'), '^[0-9]+:([A-S])', '<oid>:\1') AS key,
       pgmq._msg_id(b.key)
  FROM mq.browse('pgmq.q_up') b ORDER BY 2;
SELECT pgmq.archive('up', ARRAY[1, 5]);
SELECT msg_id, message FROM pgmq.a_up ORDER BY 1;
SELECT msg_id FROM pgmq.set_vt('up', 4, 0);
SELECT msg_id, read_ct FROM pgmq.pop('up', 5);
SELECT c.relname FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'queue_ext_pgmq')
   AND d.classid = 'pg_class'::regclass AND d.deptype = 'e' ORDER BY 1;
-- the event triggers of DROP EXTENSION, as a fresh install has them
SELECT e.evtname, e.evtevent, e.evttags, e.evtfoid::regprocedure, d.deptype
  FROM pg_event_trigger e
  LEFT JOIN pg_depend d ON d.classid = 'pg_event_trigger'::regclass AND d.objid = e.oid
                       AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'queue_ext_pgmq')
 ORDER BY 1;
SELECT pgmq.drop_queue('up');
DROP EXTENSION queue_ext_pgmq CASCADE;
DROP SCHEMA pgmq;
DROP EXTENSION pg_partman;
