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
GRANT SELECT ON pgmq.notify_insert_throttle TO pg_monitor;

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
