--
-- broker_queue_delete: a queue's in-memory state (leases, counts) goes
-- only when its deletion commits: a rolled-back delete, or one in a
-- rolled-back savepoint, leaves the queue as it was, leases included.
-- Names start with "bqd_".
--
\set VERBOSITY sqlstate
SELECT mq.queue_declare('bqd_q');
SELECT count(*) FROM mq.send_batch('bqd_q', ARRAY['m1', 'm2', 'm3']::text[]);
SELECT msg_id AS m1 FROM mq.consume('bqd_q', lease => '1 hour') \gset
SELECT ready, unacked FROM mq.queues WHERE queue = 'bqd_q';

-- delete, then roll back: the lease is still ours
BEGIN;
SELECT mq.queue_delete('bqd_q');
ROLLBACK;
SELECT ready, unacked FROM mq.queues WHERE queue = 'bqd_q';
SELECT mq.extend_lease('bqd_q', ARRAY[:m1]::bigint[], '1 hour');

-- in a savepoint rolled back, then the transaction commits
BEGIN;
SAVEPOINT sp;
SELECT mq.queue_delete('bqd_q');
ROLLBACK TO sp;
COMMIT;
SELECT ready, unacked FROM mq.queues WHERE queue = 'bqd_q';
SELECT mq.ack('bqd_q', ARRAY[:m1]::bigint[]);
SELECT string_agg(convert_from(body, 'UTF8'), ',' ORDER BY msg_id) FROM mq.browse('bqd_q');

-- committed: gone; a new queue of the same name starts empty
SELECT mq.queue_delete('bqd_q');
SELECT count(*) FROM mq.queues WHERE queue = 'bqd_q';
SELECT mq.queue_declare('bqd_q');
SELECT ready, unacked, total FROM mq.queues WHERE queue = 'bqd_q';
SELECT count(*) FROM mq.consume('bqd_q', 10);
SELECT mq.queue_delete('bqd_q');

-- a queue whose logs were dropped by hand: writing to it (a publish, an
-- ack) is XX001 with a hint; it can still be deleted
\set VERBOSITY default
SELECT mq.queue_declare('bqd_broken');
SELECT mq.send('bqd_broken', 'x') IS NOT NULL;
SELECT msg_id AS bx FROM mq.consume('bqd_broken') \gset
SELECT format('DROP TABLE mq_storage.%I, mq_storage.%I', 'q' || id || '_0_0', 's' || id || '_0_0') AS drop_sql
  FROM mq.cat_queue WHERE name = 'bqd_broken' \gset
:drop_sql;
SELECT mq.ack('bqd_broken', ARRAY[:bx]::bigint[]);
SELECT mq.send('bqd_broken', 'y');
SELECT mq.queue_delete('bqd_broken');
SELECT count(*) FROM mq.queues WHERE queue = 'bqd_broken';

-- an entry log given more columns by hand: a publish is XX001 and writes
-- nothing (single and batch), the message already there stays
SELECT mq.queue_declare('bqd_wide');
SELECT mq.send('bqd_wide', 'kept') IS NOT NULL;
SELECT format('ALTER TABLE mq_storage.%I ADD COLUMN x1 int, ADD COLUMN x2 int', 'q' || id || '_0_0') AS alter_sql
  FROM mq.cat_queue WHERE name = 'bqd_wide' \gset
:alter_sql;
SELECT mq.send('bqd_wide', 'refused');
SELECT count(*) FROM mq.send_batch('bqd_wide', ARRAY['a', 'b']::text[]);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT convert_from(body, 'UTF8') FROM mq.browse('bqd_wide');
SELECT mq.queue_delete('bqd_wide');

-- two-phase commit: a transaction that deleted a queue cannot be prepared
-- (its shared state would be dropped at PREPARE, before COMMIT PREPARED),
-- nor one that consumed; the queue and its message stay
SELECT mq.queue_declare('bqd_2pc');
SELECT mq.send('bqd_2pc', 'kept') IS NOT NULL;
BEGIN;
SELECT mq.queue_delete('bqd_2pc');
PREPARE TRANSACTION 'bqd_delete';
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
BEGIN;
SELECT count(*) FROM mq.consume('bqd_2pc');
PREPARE TRANSACTION 'bqd_consume';
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'bqd_%';
SELECT convert_from(body, 'UTF8') FROM mq.consume('bqd_2pc', auto_ack => true);
SELECT mq.queue_delete('bqd_2pc');

-- a queue's lock is a relation lock on its anchor mq_storage.a<id>, a composite
-- type with no column: its users take it in AccessShareLock (a weak
-- relation lock, which PostgreSQL takes on its per-backend fast path while
-- the transaction holds fewer than 16), its delete waits for them there
-- and drops it
SELECT mq.queue_declare('bqd_anchor');
SELECT format('mq_storage.a%s', id) AS anchor FROM mq.cat_queue WHERE name = 'bqd_anchor' \gset
SELECT relkind, relnatts FROM pg_class WHERE oid = :'anchor'::regclass;
BEGIN;
SELECT mq.send('bqd_anchor', 'x') IS NOT NULL AS sent;
SELECT locktype, mode, granted FROM pg_locks
 WHERE relation = :'anchor'::regclass AND pid = pg_backend_pid();
SELECT count(*) AS object_locks FROM pg_locks
 WHERE locktype = 'object' AND classid = 'mq.cat_queue'::regclass AND pid = pg_backend_pid();
COMMIT;
SELECT mq.queue_delete('bqd_anchor');
SELECT to_regtype(:'anchor') IS NULL AS anchor_dropped;
