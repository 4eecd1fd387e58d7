-- queue_ext_pgmq's extensions of pgmq's API (docs/pgmq.md, "Extensions"),
-- and what keeps a send cheap: pgmq._notify_wanted() follows whether any
-- queue has enable_notify_insert.  queue_ext is loaded by the runner.
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

-- Notifications of sends: pgmq._notify_wanted() is a constant the plans of
-- the sends fold; it says whether pgmq.notify_insert_throttle has rows
SELECT pgmq._notify_wanted();
SELECT * FROM pgmq.send('ext2', '{"n": 2}');     -- plans made with false
SELECT pgmq.enable_notify_insert('ext2', 0);
SELECT pgmq._notify_wanted();
SELECT * FROM pgmq.send('ext2', '{"n": 3}');     -- the same plans, made again
SELECT queue_name, last_notified_at > to_timestamp(0) AS notified FROM pgmq.list_notify_insert_throttles();
SELECT pgmq.enable_notify_insert('ext', 0);
SELECT pgmq.disable_notify_insert('ext2');
SELECT pgmq._notify_wanted();                    -- 'ext' still has it
SELECT pgmq.disable_notify_insert('ext');
SELECT pgmq._notify_wanted();
-- a rolled-back enable leaves it false; drop_queue's cascade sets it back
BEGIN;
SELECT pgmq.enable_notify_insert('ext2');
SELECT pgmq._notify_wanted();
ROLLBACK;
SELECT pgmq._notify_wanted();
SELECT pgmq.enable_notify_insert('ext2');
SELECT pgmq.drop_queue('ext2');
SELECT pgmq._notify_wanted();
-- sends go on without it
SELECT * FROM pgmq.send('ext', '{"n": 14}');
SELECT count(*) FROM pgmq.list_notify_insert_throttles();

-- a queue made again is another queue for its dedup ids
SELECT pgmq.drop_queue('ext');
SELECT pgmq.create('ext');
SELECT * FROM pgmq.send('ext', '{"n": 1}', '{"x-pgmq-dedup-id": "a"}'::jsonb);
SELECT queue_length FROM pgmq.metrics('ext');
SELECT pgmq.drop_queue('ext');
DROP EXTENSION queue_ext_pgmq CASCADE;
DROP SCHEMA pgmq;
