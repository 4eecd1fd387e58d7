--
-- stream_summaries: what a stream's partition holds (bytes, oldest message,
-- times) is summed once for all sessions.  Each backend records in shared
-- memory how far it has summed a generation of a partition's entry log, and
-- a new session takes over from there (queue_stream.c,
-- gen_summary_entry): its first mq.queues reads the pages appended
-- since, not the whole log.  Counted here by the entry log's block reads
-- requested in a transaction (pg_stat_get_xact_blocks_fetched).
--
SELECT mq.queue_declare('sum_s', type => 'stream');
SELECT count(*) FROM mq.send_batch('sum_s',
	(SELECT array_agg('m' || g) FROM generate_series(1, 20000) g));
SELECT format('mq_storage.q%s_0_0', id) AS entry_log FROM mq.cat_queue WHERE name = 'sum_s' \gset
SELECT pg_relation_size(:'entry_log') / 8192 > 40 AS entry_log_pages_many;

-- this session sums the partition (and records how far it got)
SELECT ready_bytes FROM mq.queues WHERE queue = 'sum_s';

-- a new session: its first look reads a few pages, not the 40 and more
-- (block requests of this backend's transaction)
\c
BEGIN;
SELECT ready_bytes FROM mq.queues WHERE queue = 'sum_s';
SELECT pg_stat_get_xact_blocks_fetched(:'entry_log'::regclass) < 10 AS first_look_reads_few_pages;
COMMIT;

-- what was appended since is read, and counted
SELECT count(*) FROM mq.send_batch('sum_s', ARRAY['one more', 'and another']);
\c
SELECT ready_bytes FROM mq.queues WHERE queue = 'sum_s';

-- a stream deleted and declared again under the same name starts from nothing
SELECT mq.queue_delete('sum_s');
SELECT mq.queue_declare('sum_s', type => 'stream');
SELECT count(*) FROM mq.send_batch('sum_s', ARRAY['x']);
SELECT ready_bytes FROM mq.queues WHERE queue = 'sum_s';

SELECT mq.queue_delete('sum_s');
