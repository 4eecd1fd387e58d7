-- src/sql/base.sql: what only a fresh install creates and cannot be run
-- again (Makefile: the install script runs it before the function files;
-- the update scripts do what it gains in src/sql/updates/).

-- Schema mq is created by CREATE EXTENSION (control file: schema = mq).
-- Nothing in it is usable by ordinary roles unless granted below.
REVOKE ALL ON SCHEMA mq FROM PUBLIC;
GRANT USAGE ON SCHEMA mq TO PUBLIC;

-- Schema mq_storage holds what the broker makes at run time, per segment,
-- queue and group (src/mqutils.h, MQ_STORAGE_SCHEMA): message log segments
-- log_<n> and their indexes, entry logs q<id>_<lane>_<gen>, settlement logs
-- s<id>_<lane>_<gen>, consumer group logs g<id>_<group>_<lane>_<gen> and
-- each queue's lock anchor, the composite type a<id>.  Schema mq keeps the
-- API and the fixed catalog made here.  The same privileges as schema mq;
-- its relations belong to the extension owner and grant nothing: roles
-- reach them through the API only.
CREATE SCHEMA mq_storage;
REVOKE ALL ON SCHEMA mq_storage FROM PUBLIC;
GRANT USAGE ON SCHEMA mq_storage TO PUBLIC;
COMMENT ON SCHEMA mq_storage IS 'queue_ext storage made at run time: log segments, queue and consumer group logs; use the mq API';

------------------------------------------------------------------------
-- The mqlog table access method (src/am/)
------------------------------------------------------------------------
CREATE FUNCTION mq.mqlog_handler(internal)
RETURNS table_am_handler
AS 'MODULE_PATHNAME', 'mqlog_handler'
LANGUAGE C STRICT;

CREATE ACCESS METHOD mqlog TYPE TABLE HANDLER mq.mqlog_handler;
COMMENT ON ACCESS METHOD mqlog IS 'append-only, WAL-logged message log';

------------------------------------------------------------------------
-- Broker catalog (src/catalog.c caches it per backend)
------------------------------------------------------------------------
CREATE TABLE mq.cat_exchange (
	id			serial PRIMARY KEY,
	name		text NOT NULL UNIQUE,
	type		text NOT NULL,
	durable		boolean NOT NULL,
	alternate_exchange text,
	arguments	jsonb NOT NULL DEFAULT '{}',
	owner		oid NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE mq.cat_queue (
	id			serial PRIMARY KEY,
	name		text NOT NULL UNIQUE,
	type		text NOT NULL,
	durable		boolean NOT NULL,
	arguments	jsonb NOT NULL DEFAULT '{}',
	lanes		oid[] NOT NULL,		-- first entry log of each priority lane (identity)
	owner		oid NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now(),
	notify_channel text			-- mq.queue_notify: NOTIFY when made ready
);

CREATE TABLE mq.cat_binding (
	exchange_id int NOT NULL REFERENCES mq.cat_exchange ON DELETE CASCADE,
	queue_id	int NOT NULL REFERENCES mq.cat_queue ON DELETE CASCADE,
	binding_key text NOT NULL,
	arguments	jsonb NOT NULL DEFAULT '{}',
	PRIMARY KEY (exchange_id, queue_id, binding_key, arguments)
);

-- Message log segments: mqlog tables holding a contiguous range of ids
CREATE TABLE mq.cat_segment (
	segno		bigint PRIMARY KEY,
	relid		oid NOT NULL,
	durable		boolean NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);

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

-- Privileges on queues and exchanges (owners have all of them)
CREATE TABLE mq.cat_grant (
	object_kind "char" NOT NULL,	-- 'q' queue, 'x' exchange
	object_id	int NOT NULL,
	grantee		oid NOT NULL,
	privilege	text NOT NULL CHECK (privilege IN ('configure', 'publish', 'consume')),
	PRIMARY KEY (object_kind, object_id, grantee, privilege)
);

-- named consumers' settings (mq.consumer_declare); prefetch 0 = no limit
CREATE TABLE mq.cat_consumer (
	queue_id	int NOT NULL,
	consumer	text NOT NULL,
	prefetch	int NOT NULL CHECK (prefetch >= 0),
	PRIMARY KEY (queue_id, consumer)
);

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

REVOKE ALL ON ALL TABLES IN SCHEMA mq FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA mq FROM PUBLIC;

-- Config tables: pg_dump dumps their rows with the extension.  The live
-- catalog is not dumped (WHERE false): see "backup and restore" below.
SELECT pg_catalog.pg_extension_config_dump('mq.cat_exchange', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_queue', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_binding', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_grant', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_consumer', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group', 'WHERE false');

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
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group_consumer', 'WHERE false');
-- END broadcast consumer groups: DDL block 1/3

-- end of broker catalog section

------------------------------------------------------------------------
-- Transactional (half) messages (src/half.c, checked back by the worker)
------------------------------------------------------------------------
CREATE TABLE mq.cat_producer_group (
	name		text PRIMARY KEY,
	check_function regprocedure NOT NULL,
	check_after interval NOT NULL,
	check_interval interval NOT NULL,
	max_checks	int NOT NULL,
	on_exhausted text NOT NULL,
	owner		oid NOT NULL
);

-- One row per half message; small and short-lived (decided ones are
-- deleted by the maintenance worker after mq.half_retention).
CREATE TABLE mq.half (
	half_id		bigint PRIMARY KEY,
	producer_group text NOT NULL REFERENCES mq.cat_producer_group ON DELETE CASCADE,
	exchange	text NOT NULL,
	routing_key text NOT NULL,
	state		text NOT NULL DEFAULT 'pending',	-- committed, rolled_back, unroutable
	checks		int NOT NULL DEFAULT 0,
	last_check	timestamptz,
	last_outcome text,
	created_at	timestamptz NOT NULL DEFAULT now(),
	decided_at	timestamptz,
	decided_by	text,
	last_error	text				-- why the last check was unknown (an
									-- error, an unknown answer), bounded
);
CREATE INDEX half_pending ON mq.half (created_at) WHERE state = 'pending';
REVOKE ALL ON mq.cat_producer_group, mq.half FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('mq.cat_producer_group', 'WHERE false');

------------------------------------------------------------------------
-- Delayed messages and maintenance (src/worker.c)
------------------------------------------------------------------------
-- Timers of delayed messages, fired by the worker (src/timers.c)
CREATE TABLE mq.timer (
	due			timestamptz NOT NULL,
	queue_id	int4 NOT NULL,
	lane		int2 NOT NULL,
	msg_id		int8 NOT NULL,
	expires_at	timestamptz NOT NULL,
	delivery_count int,				-- a nack with delay: deliveries so far
	body_size	int,				-- for x-max-length-bytes queues only
	group_hash	int					-- for ordered queues only
);
CREATE INDEX timer_due ON mq.timer (due);
CREATE INDEX timer_msg ON mq.timer (msg_id);
REVOKE ALL ON mq.timer FROM PUBLIC;

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
