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
