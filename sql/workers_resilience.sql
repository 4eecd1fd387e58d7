-- One broken queue does not stop the maintenance of the others: every
-- step of the worker's pass runs in its own subtransaction.
SELECT mq.queue_declare('wr_broken');
SELECT mq.queue_declare('wr_ok');
SELECT queue, ready FROM mq.queues ORDER BY 1;	-- (loads their state)
\ir test/regress/wait.sql
-- wait for this database's worker
SELECT wait_until($$SELECT EXISTS (SELECT 1 FROM pg_stat_activity
								 WHERE backend_type = 'queue_ext worker' AND datname = current_database())$$);
SELECT pid AS worker_pid FROM pg_stat_activity
 WHERE backend_type = 'queue_ext worker' AND datname = current_database() \gset
-- break wr_broken behind the extension's back: its entry log disappears
SELECT format('mq_storage.%I', 'q' || id || '_0_0') AS broken_rel FROM mq.cat_queue WHERE name = 'wr_broken' \gset
DROP TABLE :broken_rel;
SELECT pg_sleep(1.5);	-- a few passes that fail on wr_broken
-- delayed messages to the healthy queue are still fired by the same worker,
-- even when one due at the same time cannot be delivered to the broken one
SELECT mq.send('wr_broken', 'lost', delay => '300 ms') IS NOT NULL AS sent;
SELECT mq.send('wr_ok', 'still delivered', delay => '300 ms') IS NOT NULL AS sent;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wr_ok', wait => '10 s', auto_ack => true);
SELECT pid = :worker_pid AS same_worker FROM pg_stat_activity
 WHERE backend_type = 'queue_ext worker' AND datname = current_database();
-- the broken queue's timer was fired (and its message logged as lost)
SELECT count(*) AS timers_left FROM mq.queues WHERE delayed > 0;
SELECT mq.queue_delete('wr_ok');
SELECT mq.queue_delete('wr_broken');
DROP FUNCTION wait_until(text, interval);
