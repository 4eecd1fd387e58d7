-- queue_ext_pgmq: pg_monitor's privileges as pgmq 1.13 grants them: the
-- list of queues and what pgmq.metrics needs (the columns vt and
-- enqueued_at of pgmq.q_<name>, its msg_id sequence), never a message nor
-- an archive; the same after the update from 0.1, which granted every
-- table and sequence of schema pgmq
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE EXTENSION queue_ext_pgmq VERSION '0.1';
SELECT pgmq.create('g_old');
ALTER EXTENSION queue_ext_pgmq UPDATE TO '0.2';
SELECT pgmq.create('g_new');
SELECT pgmq.send('g_old', '{"a": 1}');
SELECT pgmq.send_batch('g_new', ARRAY['{"b": 2}', '{"b": 3}']::jsonb[]);
SELECT pgmq.archive('g_new', 1);

-- what pg_monitor may read: whole relations, and columns
SELECT c.relname, c.relkind,
       has_table_privilege('pg_monitor', c.oid, 'SELECT') AS whole,
       has_any_column_privilege('pg_monitor', c.oid, 'SELECT') AS some_columns
  FROM pg_class c
 WHERE c.relnamespace = 'pgmq'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'S')
 ORDER BY 1;
SELECT a.attrelid::regclass AS relation, a.attname
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE c.relnamespace = 'pgmq'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
   AND has_column_privilege('pg_monitor', a.attrelid, a.attnum, 'SELECT')
   AND NOT has_table_privilege('pg_monitor', a.attrelid, 'SELECT')
 ORDER BY 1, 2;
-- no default privileges in schema pgmq any more
SELECT count(*) FROM pg_default_acl d WHERE d.defaclnamespace = 'pgmq'::regnamespace;
SELECT has_schema_privilege('pg_monitor', 'pgmq', 'USAGE');

-- a member of pg_monitor: metrics and the list of queues, no message
CREATE ROLE regress_pgmq_mon IN ROLE pg_monitor;
SET ROLE regress_pgmq_mon;
SELECT queue_name, queue_length, queue_visible_length, total_messages,
       newest_msg_age_sec >= 0 AS newest, oldest_msg_age_sec >= 0 AS oldest
  FROM pgmq.metrics('g_new');
SELECT queue_name, queue_length FROM pgmq.metrics_all() ORDER BY 1;
SELECT queue_name FROM pgmq.list_queues() ORDER BY 1;
SELECT pg_temp.err($$SELECT message FROM pgmq.q_g_new$$);
SELECT pg_temp.err($$SELECT message FROM pgmq.a_g_new$$);
SELECT pg_temp.err($$SELECT * FROM pgmq.read('g_new', 30, 1)$$);
RESET ROLE;

-- a role without them: denied, as pgmq denies it
CREATE ROLE regress_pgmq_other;
GRANT USAGE ON SCHEMA pgmq TO regress_pgmq_other;
GRANT SELECT ON pgmq.meta TO regress_pgmq_other;
SET ROLE regress_pgmq_other;
SELECT pg_temp.err($$SELECT * FROM pgmq.metrics('g_new')$$);
RESET ROLE;
-- (pg_monitor reads the ages as the extension's owner; nobody else may)
SELECT has_function_privilege('regress_pgmq_other', 'pgmq._monitor_ages(text)', 'EXECUTE') AS other,
       has_function_privilege('pg_monitor', 'pgmq._monitor_ages(text)', 'EXECUTE') AS pg_monitor;

-- a queue created now gets the same grants
SELECT pgmq.create('g_later');
SELECT has_column_privilege('pg_monitor', 'pgmq.q_g_later', 'enqueued_at', 'SELECT') AS enqueued_at,
       has_column_privilege('pg_monitor', 'pgmq.q_g_later', 'message', 'SELECT') AS message,
       has_sequence_privilege('pg_monitor', 'pgmq.q_g_later_msg_id_seq', 'SELECT') AS seq,
       has_table_privilege('pg_monitor', 'pgmq.a_g_later', 'SELECT') AS archive;

-- pgmq 1.13: premake must be at least 1
CREATE EXTENSION pg_partman;
SELECT pg_temp.err($$SELECT pgmq.create_partitioned('g_part', '10', '100', 0)$$);
DROP EXTENSION pg_partman;

SELECT pgmq.drop_queue('g_old'), pgmq.drop_queue('g_new'), pgmq.drop_queue('g_later');
DROP ROLE regress_pgmq_mon;
REVOKE ALL ON SCHEMA pgmq FROM regress_pgmq_other;
REVOKE ALL ON pgmq.meta FROM regress_pgmq_other;
DROP ROLE regress_pgmq_other;
DROP EXTENSION queue_ext_pgmq CASCADE;
DROP SCHEMA pgmq;
