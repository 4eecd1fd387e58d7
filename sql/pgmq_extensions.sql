-- queue_ext_pgmq's extensions of pgmq's API (docs/pgmq.md, "Extensions"),
-- and what keeps a send cheap: pgmq._notify_wanted(qtable) follows which
-- queues have enable_notify_insert.  queue_ext is loaded by the runner.
CREATE EXTENSION queue_ext_pgmq;
SELECT pgmq.create('ext');
SELECT pgmq.create('ext2');

-- Exact dedup: a send whose headers carry "x-pgmq-dedup-id" stores nothing
-- when that id was sent to the queue within mq.dedup_window, and returns
-- the msg_id of the first send (the sequence's next id is left unused)
SELECT * FROM pgmq.send('ext', '{"n": 1}', '{"x-pgmq-dedup-id": "a"}'::jsonb);
SELECT * FROM pgmq.send('ext', '{"n": 2}', '{"x-pgmq-dedup-id": "a"}'::jsonb);
SELECT * FROM pgmq.send('ext', NULL, '{"x-pgmq-dedup-id": "a"}'::jsonb);
-- delayed or not, with any send form that takes headers
SELECT * FROM pgmq.send('ext', '{"n": 3}', '{"x-pgmq-dedup-id": "b"}'::jsonb, 3600);
SELECT * FROM pgmq.send('ext', '{"n": 4}', '{"x-pgmq-dedup-id": "b"}'::jsonb, 0);
SELECT * FROM pgmq.send('ext', '{"n": 5}', '{"x-pgmq-dedup-id": "b"}'::jsonb, clock_timestamp());
-- send_batch: each message by its own headers, duplicates within the batch too
SELECT * FROM pgmq.send_batch('ext', ARRAY['{"n": 6}', '{"n": 7}', '{"n": 8}']::jsonb[],
                              ARRAY['{"x-pgmq-dedup-id": "a"}', '{"x-pgmq-dedup-id": "c"}',
                                    '{"x-pgmq-dedup-id": "c"}']::jsonb[]);
-- other headers, or none: not deduplicated
SELECT * FROM pgmq.send('ext', '{"n": 9}', '{"dedup": "a"}'::jsonb);
SELECT * FROM pgmq.send('ext', '{"n": 10}', '{"x-pgmq-dedup-id": null}'::jsonb);
-- what is stored: n 1, 3 (delayed), 7, 9, 10
SELECT queue_length, queue_visible_length, total_messages FROM pgmq.metrics('ext');
SELECT msg_id, message, headers FROM pgmq.read('ext', 30, 10) ORDER BY msg_id;
-- the first one deleted: still a duplicate within the window
SELECT pgmq.delete('ext', 1);
SELECT * FROM pgmq.send('ext', '{"n": 11}', '{"x-pgmq-dedup-id": "a"}'::jsonb);
SELECT queue_length FROM pgmq.metrics('ext');
-- a rolled-back send does not hold its dedup id
BEGIN;
SELECT count(*) FROM pgmq.send('ext', '{"n": 12}', '{"x-pgmq-dedup-id": "r"}'::jsonb);
ROLLBACK;
SELECT * FROM pgmq.send('ext', '{"n": 13}', '{"x-pgmq-dedup-id": "r"}'::jsonb);
SELECT msg_id, message FROM pgmq.read('ext', 30, 10) ORDER BY msg_id;
-- send_topic goes through send: each bound queue deduplicates
SELECT pgmq.bind_topic('t.#', 'ext2');
SELECT pgmq.send_topic('t.x', '{"n": 0}', '{"x-pgmq-dedup-id": "t1"}'::jsonb, 0);
SELECT pgmq.send_topic('t.x', '{"n": 0}', '{"x-pgmq-dedup-id": "t1"}'::jsonb, 0);
SELECT queue_length FROM pgmq.metrics('ext2');
SELECT pgmq.unbind_topic('t.#', 'ext2');
-- dedup ids are per queue ("a" was sent to ext)
SELECT * FROM pgmq.send('ext2', '{"n": 1}', '{"x-pgmq-dedup-id": "a"}'::jsonb);
SELECT queue_length FROM pgmq.metrics('ext2');

-- Notifications of sends: pgmq._notify_wanted(qtable) is inlined into the
-- plans of the sends; it names the queues of pgmq.notify_insert_throttle
-- (lower case), so that a send to another queue does not look at it
SELECT pgmq._notify_wanted('q_ext') AS ext, pgmq._notify_wanted('q_ext2') AS ext2;
SELECT * FROM pgmq.send('ext2', '{"n": 2}');     -- plans made with false
SELECT pgmq.enable_notify_insert('ext2', 0);
SELECT pgmq._notify_wanted('q_ext') AS ext, pgmq._notify_wanted('q_ext2') AS ext2;
SELECT * FROM pgmq.send('ext2', '{"n": 3}');     -- the same plans, made again
SELECT queue_name, last_notified_at > to_timestamp(0) AS notified FROM pgmq.list_notify_insert_throttles();
-- a send to 'ext', which has no notifications, does not call
-- pgmq._notify_insert (which looks at the table), a send to 'ext2' does
SET track_functions = 'all';
BEGIN;
SELECT * FROM pgmq.send('ext', '{"n": 15}');
SELECT * FROM pgmq.send_batch('ext', ARRAY['{"n": 16}']::jsonb[]);
SELECT pg_stat_get_xact_function_calls('pgmq._notify_insert(text)'::regprocedure) AS calls;
SELECT * FROM pgmq.send('ext2', '{"n": 5}');
SELECT pg_stat_get_xact_function_calls('pgmq._notify_insert(text)'::regprocedure) AS calls;
COMMIT;
RESET track_functions;
-- a notification's UPDATE of last_notified_at does not write the function
SELECT xmin AS fn_xmin FROM pg_proc WHERE oid = 'pgmq._notify_wanted(text)'::regprocedure \gset
SELECT * FROM pgmq.send('ext2', '{"n": 4}');
SELECT xmin = :'fn_xmin'::xid AS unchanged FROM pg_proc WHERE oid = 'pgmq._notify_wanted(text)'::regprocedure;
SELECT pgmq.enable_notify_insert('ext', 0);
SELECT pgmq._notify_wanted('q_ext') AS ext, pgmq._notify_wanted('q_ext2') AS ext2;
SELECT pgmq.disable_notify_insert('ext2');
SELECT pgmq._notify_wanted('q_ext') AS ext, pgmq._notify_wanted('q_ext2') AS ext2;
SELECT pgmq.disable_notify_insert('ext');
SELECT pgmq._notify_wanted('q_ext') AS ext, pgmq._notify_wanted('q_ext2') AS ext2;
-- a mixed-case queue name: matched as the send's lower-case table name
SELECT pgmq.create('Ext_Mixed');
SELECT pgmq.enable_notify_insert('Ext_Mixed', 0);
SELECT pgmq._notify_wanted('q_ext_mixed') AS mixed, pgmq._notify_wanted('q_ext') AS ext;
SELECT pgmq.drop_queue('Ext_Mixed');
SELECT pgmq._notify_wanted('q_ext_mixed') AS mixed;
-- in REPEATABLE READ the function only gains queues (its snapshot may miss
-- rows committed since): the disable leaves 'ext2' named, the next change
-- in READ COMMITTED removes it
SELECT pgmq.enable_notify_insert('ext2', 0);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pgmq.disable_notify_insert('ext2');
COMMIT;
SELECT pgmq._notify_wanted('q_ext2') AS ext2;
SELECT pgmq.enable_notify_insert('ext', 0);
SELECT pgmq.disable_notify_insert('ext');
SELECT pgmq._notify_wanted('q_ext') AS ext, pgmq._notify_wanted('q_ext2') AS ext2;
-- a rolled-back enable leaves it false; drop_queue's cascade sets it back
BEGIN;
SELECT pgmq.enable_notify_insert('ext2');
SELECT pgmq._notify_wanted('q_ext2') AS ext2;
ROLLBACK;
SELECT pgmq._notify_wanted('q_ext2') AS ext2;
SELECT pgmq.enable_notify_insert('ext2');
SELECT pgmq.drop_queue('ext2');
SELECT pgmq._notify_wanted('q_ext2') AS ext2;
-- sends go on without it
SELECT * FROM pgmq.send('ext', '{"n": 14}');
SELECT count(*) FROM pgmq.list_notify_insert_throttles();

-- Dead-lettering after N reads (pgmq.set_max_reads): a read that would
-- return a message for the (max_reads + 1)-th time moves it, in the read's
-- transaction, to the dead-letter queue (or the archive) and returns the rest
SELECT pgmq.create('mr');
SELECT pgmq.create('mr_dlq');
-- bad inputs: errors, nothing stored
SELECT pgmq.set_max_reads('nope', 2);
SELECT pgmq.set_max_reads('mr', 0, 'mr_dlq');
SELECT pgmq.set_max_reads('mr', 2, 'nope');
SELECT pgmq.set_max_reads('mr', 2, 'MR');
SELECT * FROM pgmq.list_max_reads();
SELECT pgmq.set_max_reads('mr', 2, 'mr_dlq');
SELECT * FROM pgmq.list_max_reads();
-- one read: read twice, the third read moves it (message, headers, and
-- where it came from; not the first queue's dedup id)
SELECT * FROM pgmq.send('mr', '{"n": 1}', '{"k": "v", "x-pgmq-dedup-id": "d1"}'::jsonb);
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 1);
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 1);
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 1);
SELECT queue_length FROM pgmq.metrics('mr');
SELECT msg_id, message, headers FROM pgmq.pop('mr_dlq', 10);
-- a read of many: those past the limit move, the others are returned
SELECT * FROM pgmq.send_batch('mr', ARRAY['{"n": 2}', '{"n": 3}', NULL]::jsonb[]);
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 10) ORDER BY msg_id;
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 10) ORDER BY msg_id;
SELECT * FROM pgmq.send('mr', '{"n": 5}');
SELECT msg_id, read_ct, message FROM pgmq.read('mr', 0, 10) ORDER BY msg_id;
SELECT message, headers->'x-pgmq-original-msg-id' AS original, headers->'x-pgmq-read-ct' AS read_ct
  FROM pgmq.pop('mr_dlq', 10) ORDER BY msg_id;
-- the conditional read, read_with_poll and the FIFO reads too (5 was read
-- once above)
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 10, '{"n": 5}');
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 10, '{"n": 5}');
SELECT * FROM pgmq.send('mr', '{"n": 6}');
SELECT msg_id, read_ct FROM pgmq.read_with_poll('mr', 0, 10, 1);
SELECT msg_id, read_ct FROM pgmq.read_grouped('mr', 0, 10);
SELECT msg_id, read_ct FROM pgmq.read_grouped('mr', 0, 10);
SELECT queue_length FROM pgmq.metrics('mr');
SELECT headers->'x-pgmq-original-msg-id' AS original FROM pgmq.pop('mr_dlq', 10) ORDER BY msg_id;
-- several reads in one transaction, rolled back: nothing moved (but the
-- reads counted, as queue_ext's deliveries)
SELECT pgmq.set_max_reads('mr', 1, 'mr_dlq');
SELECT * FROM pgmq.send_batch('mr', ARRAY['{"n": 7}', '{"n": 8}']::jsonb[]);
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 10) ORDER BY msg_id;
BEGIN;
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 1);
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 1);
SELECT msg_id FROM pgmq.q_mr ORDER BY msg_id;
ROLLBACK;
SELECT msg_id, read_ct FROM pgmq.q_mr ORDER BY msg_id;
SELECT queue_length FROM pgmq.metrics('mr_dlq');
-- and committed: both moved
BEGIN;
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 1);
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 1);
COMMIT;
SELECT queue_length FROM pgmq.metrics('mr');
SELECT message, headers->'x-pgmq-original-msg-id' AS original FROM pgmq.pop('mr_dlq', 10) ORDER BY msg_id;
-- to the archive (no dead-letter queue): read_ct counts the read that moved it
SELECT pgmq.set_max_reads('mr', 1);
SELECT * FROM pgmq.list_max_reads();
SELECT * FROM pgmq.send('mr', '{"n": 9}', '{"h": 1}'::jsonb);
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 1);
SELECT msg_id, read_ct FROM pgmq.read('mr', 0, 1);
SELECT msg_id, read_ct, message, headers FROM pgmq.a_mr ORDER BY msg_id;
SELECT queue_length FROM pgmq.metrics('mr');
-- a dead-letter queue in use cannot be dropped; a dropped queue takes its setting
SELECT pgmq.set_max_reads('mr', 3, 'mr_dlq');
SELECT pgmq.drop_queue('mr_dlq');
SELECT pgmq.set_max_reads('mr', NULL);
SELECT count(*) FROM pgmq.list_max_reads();
SELECT pgmq.set_max_reads('mr', 3, 'mr_dlq');
SELECT pgmq.drop_queue('mr');
SELECT count(*) FROM pgmq.list_max_reads();
SELECT pgmq.drop_queue('mr_dlq');

-- Notifications of messages made readable again (pgmq.enable_notify_visible):
-- the queue_ext queue gets pgmq's channel (mq.queue_notify), which the
-- worker notifies (test/t/061_pgmq_notify_visible.pl sees them arrive)
SELECT pgmq.create('nv');
SELECT * FROM pgmq.list_notify_visible();
SELECT pgmq.enable_notify_visible('nv');
SELECT pgmq.enable_notify_visible('NV');             -- pgmq's names are lower-cased
SELECT * FROM pgmq.list_notify_visible();
SELECT mq.queue_notify_channel('pgmq.q_nv');
SELECT pgmq.enable_notify_visible('nope');
SELECT pgmq.disable_notify_visible('nope');
SELECT pgmq.enable_notify_visible(repeat('x', 48));  -- longer than pgmq's names: none such
SELECT pgmq.disable_notify_visible('nv');
SELECT pgmq.disable_notify_visible('nv');             -- already off: nothing to do
SELECT * FROM pgmq.list_notify_visible();
-- independent of enable_notify_insert, which keeps its own throttle
SELECT pgmq.enable_notify_visible('nv');
SELECT count(*) FROM pgmq.list_notify_insert_throttles();
SELECT pgmq._notify_wanted('q_nv');
-- dropped with its queue
SELECT pgmq.drop_queue('nv');
SELECT * FROM pgmq.list_notify_visible();
-- queue_ext's mq.queue_notify: checked as NOTIFY checks a channel; a
-- failed call changes nothing
SELECT mq.queue_declare('qn');
SELECT mq.queue_notify('qn', 'qn_ready');
SELECT mq.queue_notify_channel('qn');
SELECT mq.queue_notify('qn', '');
SELECT mq.queue_notify('qn', repeat('c', 64));
SELECT mq.queue_notify('qn', repeat('c', 63));
SELECT length(mq.queue_notify_channel('qn'));
SELECT mq.queue_notify(NULL, 'x');
SELECT mq.queue_notify('qn_nope', 'x');
SELECT mq.queue_notify_channel('qn_nope');
SELECT mq.queue_declare('qn_stream', 'stream');
SELECT mq.queue_notify('qn_stream', 'x');
SELECT mq.queue_notify_channel('qn_stream');
-- configure on the queue to set it; any privilege to read it
CREATE ROLE regress_qn_nobody;
SET ROLE regress_qn_nobody;
SELECT mq.queue_notify('qn', 'x');
SELECT mq.queue_notify_channel('qn');
RESET ROLE;
SELECT mq.grant('consume', 'queue', 'qn', 'regress_qn_nobody');
SET ROLE regress_qn_nobody;
SELECT mq.queue_notify('qn', NULL);
SELECT length(mq.queue_notify_channel('qn'));
RESET ROLE;
SELECT mq.queue_notify('qn', NULL);
SELECT mq.queue_notify_channel('qn');
-- rolled back: the channel stays as it was
BEGIN;
SELECT mq.queue_notify('qn', 'qn_ready');
SELECT mq.queue_notify_channel('qn');
ROLLBACK;
SELECT mq.queue_notify_channel('qn');
SELECT mq.queue_delete('qn');
SELECT mq.queue_delete('qn_stream');
DROP ROLE regress_qn_nobody;

-- a queue made again is another queue for its dedup ids
SELECT pgmq.drop_queue('ext');
SELECT pgmq.create('ext');
SELECT * FROM pgmq.send('ext', '{"n": 1}', '{"x-pgmq-dedup-id": "a"}'::jsonb);
SELECT queue_length FROM pgmq.metrics('ext');
SELECT pgmq.drop_queue('ext');
DROP EXTENSION queue_ext_pgmq CASCADE;
DROP SCHEMA pgmq;
