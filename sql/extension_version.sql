-- The library refuses a database whose queue_ext is at another version
-- than its own (new binaries before ALTER EXTENSION queue_ext UPDATE):
-- 55000, checked when the topology cache is rebuilt.  The upgrade itself
-- is tested by test/t/016_upgrade_from_0_1.pl.
SET client_min_messages = warning;
SELECT extversion FROM pg_extension WHERE extname = 'queue_ext';
SELECT mq.queue_declare('ev_q');
-- the version an older install script left, seen by this session only
BEGIN;
UPDATE pg_extension SET extversion = '0.1' WHERE extname = 'queue_ext';
SELECT mq._topology_changed();
SELECT mq.send('ev_q', 'refused');
ROLLBACK;
-- in the codes-only style, for every kind of entry point
\set VERBOSITY sqlstate
BEGIN;
UPDATE pg_extension SET extversion = '0.1' WHERE extname = 'queue_ext';
SELECT mq._topology_changed();
SAVEPOINT s;
SELECT count(*) FROM mq.consume('ev_q', 1);
ROLLBACK TO s;
SELECT count(*) FROM mq.queues;
ROLLBACK TO s;
SELECT mq.queue_declare('ev_q2');
ROLLBACK TO s;
SELECT mq.ack('ev_q', ARRAY[1::bigint]);
ROLLBACK;
\set VERBOSITY default
-- the session's version is right again after the rollback
SELECT mq.send('ev_q', 'accepted') IS NOT NULL AS sent;
SELECT convert_from(body, 'UTF8') FROM mq.consume('ev_q', 10, auto_ack => true);
SELECT mq.queue_delete('ev_q');
-- The install script stores what it compresses in the catalogs with lz4
-- where the server has it (mq.send's DEFAULT arguments are read from
-- pg_proc.proargdefaults on every call): bench/README.md, "Stream publish
-- at 1 msg/txn: the profile"
SELECT pg_column_compression(p.proargdefaults) =
       CASE WHEN 'lz4' = ANY (s.enumvals) THEN 'lz4' ELSE 'pglz' END AS send_defaults_compression_ok
FROM pg_proc p, pg_settings s
WHERE p.oid = 'mq.send(text, bytea, jsonb, interval, timestamptz, text, text, text, int,
                       interval, text, text, text, text, text, int, int)'::regprocedure
  AND s.name = 'default_toast_compression';
