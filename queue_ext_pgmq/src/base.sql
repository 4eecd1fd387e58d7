-- queue_ext_pgmq 0.2: pgmq's SQL API (its release 1.12.0) on queue_ext.
-- (Generated with functions.sql into sql/queue_ext_pgmq--0.2.sql; the
-- update from 0.1 is updates/0.1--0.2.sql + functions.sql +
-- updates/0.1--0.2.post.sql: see the Makefile.)
--
-- A pgmq queue <name> is the queue_ext classic queue "pgmq.q_<name>"
-- (lower-cased, as pgmq names its tables): messages live in queue_ext's
-- append-only logs, so reading and deleting them leaves no dead tuples.
-- pgmq's per-queue msg_id is taken from a sequence pgmq.q_<name>_msg_id_seq
-- (as pgmq's identity column) and stored as the message's business key
-- '<the sequence's oid>:<msg_id led by its number of digits as a letter>'
-- (pgmq._key; 0.1 stored '<msg_id>:pgmq.q_<name>:<oid>'), by which the queue_ext
-- message is found again (the oid tells a queue from an earlier one of
-- the same name, whose msg_ids started at 1 too).
-- A read is a queue_ext consume with a detached lease of vt seconds
-- (session_bound => false: nobody owns it, as pgmq's visibility timeout);
-- delete, archive and set_vt take the message by id whoever holds it
-- (mq.lease_ids), then ack it or leave it leased.  pgmq.q_<name> is a view,
-- pgmq.a_<name> a real, insert-only table.  docs/pgmq.md lists what
-- differs from pgmq.


------------------------------------------------------------
-- Tables and types (pgmq's)
------------------------------------------------------------
CREATE TABLE pgmq.meta (
    queue_name VARCHAR UNIQUE NOT NULL,
    is_partitioned BOOLEAN NOT NULL,
    is_unlogged BOOLEAN NOT NULL,
    created_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL
);

-- Topic bindings (pgmq's later releases): a pattern of dot-separated words
-- (* one word, # any run of characters) that routes pgmq.send_topic to a
-- queue; the pattern's regular expression is kept beside it, as pgmq keeps
-- it (patterns are checked to words, dots, * and #, so only dots need
-- escaping)
CREATE TABLE pgmq.topic_bindings (
    pattern TEXT NOT NULL,
    queue_name TEXT NOT NULL
        CONSTRAINT topic_bindings_meta_queue_name_fk
            REFERENCES pgmq.meta (queue_name) ON DELETE CASCADE,
    bound_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
    compiled_regex TEXT GENERATED ALWAYS AS
        ('^' || replace(replace(replace(pattern, '.', '\.'), '*', '[^.]+'), '#', '.*') || '$') STORED,
    CONSTRAINT topic_bindings_unique_pattern_queue UNIQUE (pattern, queue_name)
);

-- pgmq's throttle of the notification a send gives (enable_notify_insert):
-- at most one per throttle_interval_ms per queue
CREATE UNLOGGED TABLE pgmq.notify_insert_throttle (
    queue_name VARCHAR UNIQUE NOT NULL
        CONSTRAINT notify_insert_throttle_meta_queue_name_fk
            REFERENCES pgmq.meta (queue_name) ON DELETE CASCADE,
    throttle_interval_ms INTEGER NOT NULL DEFAULT 0,
    last_notified_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT to_timestamp(0)
);

-- queue_ext_pgmq's dead-lettering after N reads (pgmq.set_max_reads, not
-- pgmq's): a message of queue_name read more than max_reads times is moved
-- by the read that would return it once more to dead_letter_queue (NULL:
-- archived in a_<queue_name>).  A queue used as a dead-letter queue cannot
-- be dropped while this names it.
CREATE TABLE pgmq.max_reads (
    queue_name VARCHAR UNIQUE NOT NULL
        CONSTRAINT max_reads_meta_queue_name_fk
            REFERENCES pgmq.meta (queue_name) ON DELETE CASCADE,
    max_reads INTEGER NOT NULL CONSTRAINT max_reads_positive CHECK (max_reads >= 1),
    dead_letter_queue VARCHAR
        CONSTRAINT max_reads_dead_letter_queue_fk
            REFERENCES pgmq.meta (queue_name)
);

-- The queues whose messages up to last_msg_id were sent by 0.1, under its
-- keys (pgmq._key_legacy): filled by the update from 0.1, empty in a fresh
-- install
CREATE TABLE pgmq._legacy_keys (
    seq_oid OID PRIMARY KEY,
    queue_name VARCHAR NOT NULL
        CONSTRAINT legacy_keys_meta_queue_name_fk
            REFERENCES pgmq.meta (queue_name) ON DELETE CASCADE,
    last_msg_id BIGINT NOT NULL
);

-- pg_monitor (pgmq 1.13): what pgmq.metrics and list_queues need, and no
-- message: the list of queues here, and per queue (pgmq._create_queue)
-- the columns vt and enqueued_at of pgmq.q_<name> and its msg_id sequence
GRANT USAGE ON SCHEMA pgmq TO pg_monitor;
GRANT SELECT ON pgmq.meta TO pg_monitor;

CREATE TYPE pgmq.message_record AS (
    msg_id BIGINT,
    read_ct INTEGER,
    enqueued_at TIMESTAMP WITH TIME ZONE,
    last_read_at TIMESTAMP WITH TIME ZONE,
    vt TIMESTAMP WITH TIME ZONE,
    message JSONB,
    headers JSONB
);

CREATE TYPE pgmq.queue_record AS (
    queue_name VARCHAR,
    is_partitioned BOOLEAN,
    is_unlogged BOOLEAN,
    created_at TIMESTAMP WITH TIME ZONE
);

CREATE TYPE pgmq.metrics_result AS (
    queue_name text,
    queue_length bigint,
    newest_msg_age_sec int,
    oldest_msg_age_sec int,
    total_messages bigint,
    scrape_time timestamp with time zone,
    queue_visible_length bigint,
    default_partition_length bigint
);

-- A queue_ext queue left from an earlier installation of this extension
-- (DROP EXTENSION drops the views, but queue_ext's queues are not members
-- of this extension): as pgmq's tables since its 1.6, it stays with its
-- messages when its msg_id sequence stayed too (pgmq.create makes its view
-- again); one whose sequence was dropped (by queue_ext_pgmq 0.1) has lost
-- its msg_ids and goes.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT q.queue FROM mq.queues q WHERE q.queue LIKE 'pgmq.q\_%' LOOP
        IF to_regclass(format('pgmq.%I', substr(r.queue, 6) || '_msg_id_seq')) IS NULL THEN
            PERFORM mq.queue_delete(r.queue);
        END IF;
    END LOOP;
END
$$;

