-- queue_ext_pgmq 0.1 -> 0.2 (pgmq 1.5.1 -> pgmq 1.12.0), before
-- functions.sql: what its CREATE OR REPLACE cannot change.

-- pgmq's throttle of send notifications (as in base.sql)
CREATE UNLOGGED TABLE pgmq.notify_insert_throttle (
    queue_name VARCHAR UNIQUE NOT NULL
        CONSTRAINT notify_insert_throttle_meta_queue_name_fk
            REFERENCES pgmq.meta (queue_name) ON DELETE CASCADE,
    throttle_interval_ms INTEGER NOT NULL DEFAULT 0,
    last_notified_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT to_timestamp(0)
);

-- queue_ext_pgmq's dead-lettering after N reads (as in base.sql)
CREATE TABLE pgmq.max_reads (
    queue_name VARCHAR UNIQUE NOT NULL
        CONSTRAINT max_reads_meta_queue_name_fk
            REFERENCES pgmq.meta (queue_name) ON DELETE CASCADE,
    max_reads INTEGER NOT NULL CONSTRAINT max_reads_positive CHECK (max_reads >= 1),
    dead_letter_queue VARCHAR
        CONSTRAINT max_reads_dead_letter_queue_fk
            REFERENCES pgmq.meta (queue_name)
);

-- 0.1's keys of the messages it sent (pgmq._key_legacy; as in base.sql,
-- filled by 0.1--0.2.post.sql)
CREATE TABLE pgmq._legacy_keys (
    seq_oid OID PRIMARY KEY,
    queue_name VARCHAR NOT NULL
        CONSTRAINT legacy_keys_meta_queue_name_fk
            REFERENCES pgmq.meta (queue_name) ON DELETE CASCADE,
    last_msg_id BIGINT NOT NULL
);

-- message_record gains last_read_at before vt (pgmq's shape): the type is
-- made again, and with it every function that returns it and the views
-- pgmq.q_<name> (made again by updates/0.1--0.2.post.sql)
DROP TYPE pgmq.message_record CASCADE;
CREATE TYPE pgmq.message_record AS (
    msg_id BIGINT,
    read_ct INTEGER,
    enqueued_at TIMESTAMP WITH TIME ZONE,
    last_read_at TIMESTAMP WITH TIME ZONE,
    vt TIMESTAMP WITH TIME ZONE,
    message JSONB,
    headers JSONB
);

-- metrics_result gains default_partition_length (pgmq 1.13): metrics and
-- metrics_all are made again by functions.sql
DROP TYPE pgmq.metrics_result CASCADE;
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

-- functions whose arguments changed
DROP FUNCTION pgmq._partman_parent(text, text, text, text);
