------------------------------------------------------------------------
-- Inspection (src/stats_sql.c)
------------------------------------------------------------------------
-- The rows of mq.queues; with queue_name, that queue's row alone (none
-- when it does not exist or the caller may not see it), read without
-- reading the state of every other queue.  The last four columns, which
-- the view does not show, are the queue's counters (mq.metrics's
-- queue_ext_*_total of the queue): the management API lists queues with
-- their rates from one read of their state (docs/management.md).
CREATE OR REPLACE FUNCTION mq._queue_stats(queue_name text DEFAULT NULL)
RETURNS TABLE (queue text, type text, durable boolean, ready bigint, unacked bigint,
	delayed bigint, total bigint, consumers int, oldest_ready_age interval,
	last_delivery timestamptz, arguments jsonb, ready_bytes bigint,
	partitions int, first_offset bigint[], last_offset bigint[], retention interval,
	published bigint, delivered bigint, redelivered bigint, acked bigint)
AS 'MODULE_PATHNAME', 'mq_queue_stats' LANGUAGE C;

-- ---- issue 12, group worker (stream-group-worker): session counters ----
-- What this backend did, for tests and benchmarks (src/stats_sql.c): entries
-- consumer groups settled by their tag hash without reading the message,
-- and messages read from the message log.
CREATE OR REPLACE FUNCTION mq._session_counters(OUT tag_skips bigint, OUT message_fetches bigint)
AS 'MODULE_PATHNAME', 'mq_session_counters' LANGUAGE C VOLATILE;
-- ---- end of issue 12 block ----

-- Whether a queue has a state in shared memory (at most mq.max_queues
-- states in all; made at its first use, kept until it is deleted), for
-- tests: reading the views must not make one for a queue nobody uses.
CREATE OR REPLACE FUNCTION mq._queue_has_state(queue text)
RETURNS boolean AS 'MODULE_PATHNAME', 'mq_queue_has_state_sql' LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION mq._queue_has_state FROM PUBLIC;

-- Whether a queue is recorded as found unused (declared, no state, nothing
-- stored: the views then spare its tables; queue_shmem.c, KnownEmpty), for
-- tests: the record must go whenever something is appended to the queue.
-- Always false on a standby, which neither reads nor sets the record.
CREATE OR REPLACE FUNCTION mq._queue_known_empty(queue text)
RETURNS boolean AS 'MODULE_PATHNAME', 'mq_queue_known_empty_sql' LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION mq._queue_known_empty FROM PUBLIC;

-- ---- issue 13: quorum commits (src/quorum.c, src/replication_sql.c) ----
-- Whether a quorum commit can be confirmed now: synchronous standbys the
-- configuration asks for and that stream now, commits made without a
-- quorum (mq.quorum_unavailable = wait, none configured) and since when,
-- and the WAL position the standbys' lag is measured from.
CREATE OR REPLACE FUNCTION mq._replication_summary(OUT required_sync_standbys int,
	OUT connected_sync_standbys int, OUT quorum_met boolean,
	OUT commits_without_quorum bigint, OUT without_quorum_since timestamptz,
	OUT current_lsn pg_lsn)
AS 'MODULE_PATHNAME', 'mq_replication_summary' LANGUAGE C VOLATILE;
-- ---- end of issue 13 block ----

-- ready_bytes: body bytes of the ready messages (RabbitMQ's
-- message_bytes_ready), on queues with x-max-length-bytes, and the bytes a
-- stream retains; NULL elsewhere.  Streams also show their partitions, the
-- first and last retained offset of each (arrays indexed by partition + 1)
-- and their retention; NULL for other queues.
CREATE OR REPLACE VIEW mq.queues AS
	SELECT queue, type, durable, ready, unacked, delayed, total, consumers,
		   oldest_ready_age, last_delivery, arguments, ready_bytes,
		   partitions, first_offset, last_offset, retention,
		   -- quorum queues and streams with "durability": "quorum"
		   CASE WHEN type = 'quorum' OR arguments->>'durability' = 'quorum'
				THEN (SELECT r.quorum_met FROM mq._replication_summary() r)
		   END AS quorum_met
	  FROM mq._queue_stats();

-- One row per partition of each stream (src/stream_sql.c)
CREATE OR REPLACE FUNCTION mq._stream_partitions()
RETURNS TABLE (queue text, "partition" int, first_offset bigint, end_offset bigint,
	bytes bigint, first_time timestamptz, last_time timestamptz)
AS 'MODULE_PATHNAME', 'mq_stream_partitions' LANGUAGE C;

CREATE OR REPLACE VIEW mq.stream_partitions AS SELECT * FROM mq._stream_partitions();

CREATE OR REPLACE VIEW mq.exchanges AS
	SELECT e.name AS exchange, e.type, e.durable, e.alternate_exchange, e.arguments,
		   e.owner::regrole AS owner,
		   (e.name = '' OR e.name LIKE 'amq.%') AS predeclared
	  FROM mq.cat_exchange e;

-- Whether the caller sees a queue in the views: some privilege on it, or
-- pg_read_all_stats (src/acl.c, mq_queue_visible).  mq.bindings shows the
-- bindings of the queues the caller sees, as mq.queues shows the queues.
CREATE OR REPLACE FUNCTION mq._queue_visible(queue text) RETURNS boolean
AS 'MODULE_PATHNAME', 'mq_queue_visible_sql' LANGUAGE C STABLE STRICT;

CREATE OR REPLACE VIEW mq.bindings AS
	SELECT e.name AS exchange, q.name AS queue, b.binding_key, b.arguments
	  FROM mq.cat_binding b
	  JOIN mq.cat_exchange e ON e.id = b.exchange_id
	  JOIN mq.cat_queue q ON q.id = b.queue_id
	 WHERE mq._queue_visible(q.name)
	UNION ALL
	SELECT '' AS exchange, q.name, q.name, '{}'::jsonb
	  FROM mq.cat_queue q
	 WHERE mq._queue_visible(q.name);

GRANT SELECT ON mq.queues, mq.stream_partitions, mq.exchanges, mq.bindings TO PUBLIC;

-- ---- issue 13: mq.replication ----
-- One row per walsender (as pg_stat_replication shows it to the reader:
-- without pg_read_all_stats its columns are NULL), each with the summary;
-- with no standby one row, the summary alone (quorum_met false).
CREATE OR REPLACE VIEW mq.replication AS
	SELECT s.required_sync_standbys, s.connected_sync_standbys, s.quorum_met,
		   s.commits_without_quorum, s.without_quorum_since,
		   r.application_name, r.client_addr, r.state, r.sync_state,
		   r.sync_priority, r.sent_lsn, r.write_lsn, r.flush_lsn, r.replay_lsn,
		   pg_wal_lsn_diff(s.current_lsn, r.flush_lsn)::bigint AS flush_lag_bytes,
		   pg_wal_lsn_diff(s.current_lsn, r.replay_lsn)::bigint AS replay_lag_bytes,
		   r.write_lag, r.flush_lag, r.replay_lag, r.reply_time
	  FROM mq._replication_summary() s
	  LEFT JOIN pg_stat_replication r ON true;
GRANT SELECT ON mq.replication TO PUBLIC;
-- ---- end of issue 13 block ----

-- ---- issue 15, metrics (src/stats_sql.c, docs/metrics.md) ----
-- One row per Prometheus sample: the counters of each queue and consumer
-- group state since it was made (the first use after a start), and gauges
-- from bounded state (docs/metrics/queries.yaml maps them for
-- prometheus-postgres-exporter).
-- With queue_name: the samples of that queue (and its groups') alone.
CREATE OR REPLACE FUNCTION mq._metrics(queue_name text DEFAULT NULL)
RETURNS TABLE (name text, labels jsonb, value double precision)
AS 'MODULE_PATHNAME', 'mq_metrics' LANGUAGE C;
CREATE OR REPLACE VIEW mq.metrics AS SELECT * FROM mq._metrics();
GRANT SELECT ON mq.metrics TO PUBLIC;
-- ---- end of issue 15 metrics block ----
