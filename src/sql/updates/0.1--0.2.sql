-- src/sql/updates/0.1--0.2.sql: what takes a 0.1 schema to 0.2 and cannot
-- be run again: new tables and columns, changed config dumps, and the
-- functions and views that must be dropped because their arguments, result
-- or columns change.  The Makefile appends every function file of src/sql/
-- to it (queue_ext--0.1--0.2.sql): they are written CREATE OR REPLACE, so
-- running them on 0.1 replaces what 0.1 had in place (keeping its
-- privileges) and creates what is new, and the install script gives
-- dropped ones their privileges again.  Test 017_upgrade_from_0_1.pl
-- compares the result with a fresh install (test/upgrade/schema_diff.sh).
--
-- Data: every catalog row, message, segment and lane table stays (moved
-- to schema mq_storage, below).  The lane tables of 0.1 queues (entry
-- logs q<id>_<lane>_<gen>, four columns) are otherwise left as they are:
-- 0.2 added the trailing columns body_size,
-- "offset" and group_hash for x-max-length-bytes queues, streams and
-- ordered queues, none of which a 0.1 queue can be (0.1 refused those
-- arguments and types), and the library reads and writes entry logs with
-- or without them (it checks the relation's column count, see
-- mqq_entry_values in src/queue/queue_lane.c and
-- mqq_tracked_fill in src/queue/queue_shmem.c).  Generations created
-- from now on by mq._lane_create have all seven columns.  (mqlog would take
-- ALTER TABLE ... ADD COLUMN, a catalog-only change, but that locks every
-- lane table of every queue for nothing the library needs.)  A 0.1 quorum
-- queue keeps the lanes it had (one per priority level of x-max-priority,
-- usually one) instead of 0.2's 32 priority lanes.  mq.timer (a heap
-- table the library reads and writes by column name) gets its two new
-- columns.
--
-- A function whose arguments or result change is dropped here (the file
-- that defines it makes it again); so is a view whose columns change.
-- New tables, columns and config dumps go here and in src/sql/base.sql.

------------------------------------------------------------------------
-- storage in a schema of its own: mq_storage
------------------------------------------------------------------------
-- 0.1 made its run-time storage in schema mq, beside the API: the message
-- log segments log_<n> (with their indexes log_<n>_key, log_<n>_dedup)
-- and each queue's entry and settlement logs q<id>_<lane>_<gen> and
-- s<id>_<lane>_<gen>.  0.2 keeps them in mq_storage (src/sql/base.sql), so
-- they move there: ALTER TABLE ... SET SCHEMA takes a table's indexes, row
-- type and TOAST table along and keeps its OID (mq.cat_queue.lanes and
-- mq.cat_segment.relid refer to it) and its data; the segments the 0.1
-- install made stay members of the extension.  (0.1 had no consumer group
-- logs g<id>_* and no queue anchors a<id>; the patterns take them anyway.)
CREATE SCHEMA mq_storage;
REVOKE ALL ON SCHEMA mq_storage FROM PUBLIC;
GRANT USAGE ON SCHEMA mq_storage TO PUBLIC;
COMMENT ON SCHEMA mq_storage IS 'queue_ext storage made at run time: log segments, queue and consumer group logs; use the mq API';
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT c.relname, c.relkind FROM pg_catalog.pg_class c
			  WHERE c.relnamespace = 'mq'::pg_catalog.regnamespace
				AND ((c.relkind = 'r' AND c.relname ~ '^([qs][0-9]+_[0-9]+_[0-9]+|g[0-9]+_[0-9]+_[0-9]+_[0-9]+|log_[0-9]+)$')
					 OR (c.relkind = 'c' AND c.relname ~ '^a[0-9]+$'))
			  ORDER BY c.relname LOOP
		EXECUTE pg_catalog.format('ALTER %s mq.%I SET SCHEMA mq_storage',
								  CASE r.relkind WHEN 'c' THEN 'TYPE' ELSE 'TABLE' END, r.relname);
	END LOOP;
END
$$;

------------------------------------------------------------------------
-- broker catalog: stream messages kept inline
------------------------------------------------------------------------
-- Stream messages kept in their own entry rows (inline, src/queue/queue.h):
-- every entry log generation of a stream has a segment number of its own,
-- from a range apart from the message log's segments, so that the id of a
-- message kept in an entry row is a log address like any other
-- (segno << 26 | block << 9 | offset, src/msglog.h).  Ids stay below 2^53,
-- which a JSON number holds exactly.
CREATE SEQUENCE mq.inline_segno MINVALUE 67108864 MAXVALUE 134217727 START 67108864;
CREATE TABLE mq.cat_inline (
	segno		bigint PRIMARY KEY,
	relid		oid NOT NULL UNIQUE,
	queue_id	int NOT NULL,
	lane		int NOT NULL,
	gen			int NOT NULL
);
REVOKE ALL ON mq.cat_inline FROM PUBLIC;
REVOKE ALL ON SEQUENCE mq.inline_segno FROM PUBLIC;

------------------------------------------------------------------------
-- broker catalog: consumer groups of stream queues
------------------------------------------------------------------------
-- consumer groups of stream queues (mq.group_declare); their progress is
-- in their settlement logs g<queue_id>_<id>_<lane>_<gen> (src/queue/queue_group.c)
CREATE TABLE mq.cat_group (
	id			serial PRIMARY KEY,
	queue_id	int NOT NULL,
	name		text NOT NULL,
	mode		text NOT NULL,
	start		text NOT NULL,
	filter		text,
	filter_type	text NOT NULL,
	ordered		boolean NOT NULL,
	max_retries	int NOT NULL,
	retry_delays interval[],
	created_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	declared_by	oid,			-- gets consume on the group's DLQ (made at its first dead letter)
	UNIQUE (queue_id, name)
);
REVOKE ALL ON mq.cat_group FROM PUBLIC;
REVOKE ALL ON SEQUENCE mq.cat_group_id_seq FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group', '');

-- BEGIN broadcast consumer groups (issue 12, stream-broadcast): DDL block 1/3
-- The consumers of broadcast groups: each (group, consumer name) is a queue
-- state of its own, like a clustering group, with its own settlement logs
-- g<queue_id>_<id>_<lane>_<gen>; its id comes from mq.cat_group's sequence,
-- so the log names of groups and consumers never collide.  Made at a
-- consumer's first mq.consume (mq._group_consumer_create).
CREATE TABLE mq.cat_group_consumer (
	id			int PRIMARY KEY DEFAULT pg_catalog.nextval('mq.cat_group_id_seq'),
	group_id	int NOT NULL REFERENCES mq.cat_group ON DELETE CASCADE,
	consumer	text NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	UNIQUE (group_id, consumer)
);
REVOKE ALL ON mq.cat_group_consumer FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group_consumer', '');
-- END broadcast consumer groups: DDL block 1/3

------------------------------------------------------------------------
-- dead-lettering as RabbitMQ 4: new arguments and results
------------------------------------------------------------------------
DROP FUNCTION mq._x_death(jsonb, text, text, text, text);


------------------------------------------------------------------------
-- publishing: the "partition" argument
------------------------------------------------------------------------
DROP FUNCTION mq.publish(text, text, bytea, jsonb, boolean, interval, timestamptz, text, text,
	text, int, interval, text, text, text, text, text, int);
DROP FUNCTION mq.publish(text, text, text, jsonb, boolean, interval, timestamptz, text, text,
	text, int, interval, text, text, text, text, text, int);
DROP FUNCTION mq.publish(text, text, jsonb, jsonb, boolean, interval, timestamptz, text, text,
	text, int, interval, text, text, text, text, text, int);
DROP FUNCTION mq.send(text, bytea, jsonb, interval, timestamptz, text, text, text, int,
	interval, text, text, text, text, text, int);
DROP FUNCTION mq.send(text, text, jsonb, interval, timestamptz, text, text, text, int,
	interval, text, text, text, text, text, int);
DROP FUNCTION mq.send(text, jsonb, jsonb, interval, timestamptz, text, text, text, int,
	interval, text, text, text, text, text, int);
DROP FUNCTION mq.publish_batch(text, text[], bytea[], jsonb[], boolean, text, interval);
DROP FUNCTION mq.publish_batch(text, text[], text[], jsonb[], boolean, text, interval);
DROP FUNCTION mq.publish_batch(text, text[], jsonb[], jsonb[], boolean, text, interval);
DROP FUNCTION mq.send_batch(text, bytea[], jsonb[], interval, text);
DROP FUNCTION mq.send_batch(text, text[], jsonb[], interval, text);
DROP FUNCTION mq.send_batch(text, jsonb[], jsonb[], interval, text);


------------------------------------------------------------------------
-- consuming: reconsume_times, mq.read, extend_lease in a group
------------------------------------------------------------------------
DROP FUNCTION mq.consume(text, int, interval, interval, text, text, boolean, int);

-- extend_lease, ack, nack: group_name, consumer and receipts
DROP FUNCTION mq.extend_lease(text, bigint[], interval);
DROP FUNCTION mq.ack(text, bigint[], text);
DROP FUNCTION mq.nack(text, bigint[], boolean, interval, text);
-- receipts: settling a delivery from any session (connection poolers)
DROP FUNCTION mq.reject(text, bigint, boolean);
-- browse: body_text, the body readable (issue 37)
DROP FUNCTION mq.browse(text, int);

------------------------------------------------------------------------
-- half messages: the error of their last check (issue 37; the view
-- mq.half_messages gets the column at its end)
------------------------------------------------------------------------
ALTER TABLE mq.half ADD COLUMN last_error text;

------------------------------------------------------------------------
-- notification when a delayed message or an expired lease makes a
-- message ready (issue 40; mq.queue_notify): the queue's channel
------------------------------------------------------------------------
ALTER TABLE mq.cat_queue ADD COLUMN notify_channel text;

------------------------------------------------------------------------
-- inspection: mq.queues.ready_bytes (the view is made again on the new
-- mq._queue_stats, which also takes an optional queue name, for the
-- management API's one-queue reads; mq._metrics, new in 0.2, too)
------------------------------------------------------------------------
DROP VIEW mq.queues;
DROP FUNCTION mq._queue_stats();


------------------------------------------------------------------------
-- delayed messages: timers of x-max-length-bytes and ordered queues
------------------------------------------------------------------------
ALTER TABLE mq.timer ADD COLUMN body_size int, ADD COLUMN group_hash int;

------------------------------------------------------------------------
-- consumer groups of stream queues (0.1 had placeholders that raised)
------------------------------------------------------------------------
DROP VIEW mq.consumer_groups;
DROP FUNCTION mq.group_declare(text, text, text, text, text);
DROP FUNCTION mq.seek(text, text, bigint, timestamptz);


------------------------------------------------------------------------
-- BEGIN backup and restore (issue 13, dump-restore)
-- pg_dump cannot restore the broker from its own tables: message ids are
-- positions in the log segments (a COPY gives rows new ones), the lane
-- tables are made at run time, and cat_queue.lanes holds their OIDs.  So
-- the live catalog is not dumped (its config-dump filter is WHERE false)
-- and mq.export() writes a logical snapshot of the broker into the three
-- export_* tables, which pg_dump and pg_dumpall dump as extension
-- configuration; mq.import() in the restored database declares the
-- topology again and puts every message back (docs/operations.md,
-- "Backup and restore").
------------------------------------------------------------------------
SELECT pg_catalog.pg_extension_config_dump('mq.cat_exchange', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_queue', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_binding', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_grant', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_consumer', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group_consumer', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_producer_group', 'WHERE false');

-- what to declare, in seq order: kind exchange, queue, binding, grant,
-- consumer, group, producer_group; args as the declaring call needs them
CREATE TABLE mq.export_topology (
	seq			int PRIMARY KEY,
	kind		text NOT NULL,
	args		jsonb NOT NULL
);
-- every message not acked: state ready (in a queue lane or a stream
-- partition, with its offset there), delayed (due then) or half (pending)
CREATE TABLE mq.export_message (
	seq			bigint PRIMARY KEY,
	queue		text,				-- NULL for a half message
	lane		int,
	state		text NOT NULL CHECK (state IN ('ready', 'delayed', 'half')),
	"offset"	bigint,
	due			timestamptz,		-- deliverable from (a stream: stored at)
	expires_at	timestamptz,
	producer_group text,
	exchange	text NOT NULL,
	routing_key text NOT NULL,
	body		bytea NOT NULL,
	headers		jsonb,
	properties	jsonb,
	key			text,
	tag			text,
	message_group text,
	published_at timestamptz NOT NULL
);
-- committed offsets of consumer groups (consumer: of a broadcast group;
-- NULL: the group itself)
CREATE TABLE mq.export_position (
	queue		text NOT NULL,
	group_name	text NOT NULL,
	consumer	text,
	"partition" int NOT NULL,
	committed_offset bigint NOT NULL,
	settled		bigint[] NOT NULL DEFAULT '{}'	-- offsets settled above it
);
REVOKE ALL ON mq.export_topology, mq.export_message, mq.export_position FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('mq.export_topology', '');
SELECT pg_catalog.pg_extension_config_dump('mq.export_message', '');
SELECT pg_catalog.pg_extension_config_dump('mq.export_position', '');
-- END backup and restore
