
------------------------------------------------------------
-- DROP EXTENSION queue_ext_pgmq leaves pgmq's queue tables
------------------------------------------------------------
-- pgmq since 1.6 keeps every queue's table pgmq.q_<name>, with its rows,
-- when the extension is dropped.  Here pgmq.q_<name> is a view made of this
-- extension's functions and goes with it, so the drop leaves in its place a
-- table of pgmq's shape holding a copy of the rows the view showed at that
-- moment (the messages themselves stay in the queue_ext queue, with their
-- msg_id sequence), marked by its comment (pgmq._left_table).
-- pgmq.create makes the view again in its place, over the same messages;
-- pgmq.drop_queue drops it.
--
-- An event trigger that is a member of the extension does not fire when
-- the extension is dropped: it goes with the extension before sql_drop
-- fires.  So three event triggers, all for the command tag DROP EXTENSION
-- only (no other command fires them):
--   pgmq_drop_start (ddl_command_start, a member) takes pgmq_drop_leave and
--     its function out of the extension, before the drop;
--   pgmq_drop_leave (sql_drop) fires after the drop: when it dropped this
--     extension, it makes the tables and then drops itself and its
--     function, so nothing of this extension stays outside it (pg_dump
--     never sees them, DROP SCHEMA pgmq finds no function of ours);
--   pgmq_drop_end (ddl_command_end, a member: it is still there when
--     another extension was dropped, or none, as DROP EXTENSION IF EXISTS
--     may) puts pgmq_drop_leave back into the extension.
-- As the extension's owner (SECURITY DEFINER): whoever drops another
-- extension need not own this one, and the copy reads queue_ext's timers.
-- (Dropped first when they exist: a pgmq_drop_leave left outside the
-- extension by a drop that did not fire event triggers, as in single-user
-- mode, could not be replaced by CREATE OR REPLACE.)
DROP EVENT TRIGGER IF EXISTS pgmq_drop_start;
DROP EVENT TRIGGER IF EXISTS pgmq_drop_end;
DROP EVENT TRIGGER IF EXISTS pgmq_drop_leave;
DROP FUNCTION IF EXISTS pgmq._drop_start();
DROP FUNCTION IF EXISTS pgmq._drop_end();
DROP FUNCTION IF EXISTS pgmq._drop_leave();

CREATE FUNCTION pgmq._drop_leave()
RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    qe TEXT;
    durable BOOLEAN;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_event_trigger_dropped_objects() o
                    WHERE o.object_type = 'extension' AND o.object_identity = 'queue_ext_pgmq') THEN
        RETURN;                 -- not this extension: pgmq_drop_end puts this back
    END IF;
    -- (queue_ext dropped too, by DROP EXTENSION queue_ext CASCADE: the
    -- queues and their messages are gone, there is nothing to copy)
    IF NOT EXISTS (SELECT 1 FROM pg_event_trigger_dropped_objects() o
                    WHERE o.object_type = 'extension' AND o.object_identity = 'queue_ext') THEN
        FOR r IN SELECT o.object_name FROM pg_event_trigger_dropped_objects() o
                  WHERE o.object_type = 'view' AND o.schema_name = 'pgmq'
                    AND o.object_name LIKE 'q\_%'
                  ORDER BY o.object_name LOOP
            qe := 'pgmq.' || r.object_name;
            SELECT q.durable INTO durable FROM mq._queue_stats(qe) q WHERE q.queue = qe;
            IF NOT FOUND OR to_regclass(format('pgmq.%I', r.object_name)) IS NOT NULL THEN
                CONTINUE;
            END IF;
            -- pgmq's queue table (pgmq.create_non_partitioned, unlogged
            -- for create_unlogged; msg_id without its identity: the
            -- queue's msg_id sequence stays, pgmq.q_<name>_msg_id_seq)
            EXECUTE format('CREATE %s TABLE pgmq.%I (
                msg_id BIGINT PRIMARY KEY,
                read_ct INT DEFAULT 0 NOT NULL,
                enqueued_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
                last_read_at TIMESTAMP WITH TIME ZONE,
                vt TIMESTAMP WITH TIME ZONE NOT NULL,
                message JSONB,
                headers JSONB)',
                CASE WHEN durable THEN '' ELSE 'UNLOGGED' END, r.object_name);
            EXECUTE format('CREATE INDEX %I ON pgmq.%I (vt ASC)', r.object_name || '_vt_idx', r.object_name);
            -- what the view showed (pgmq._queue_rows, whose functions are
            -- gone now): ready messages, leased ones (up to 10000), delayed
            -- ones, as pgmq's rows
            EXECUTE format($q$
                INSERT INTO pgmq.%I (msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers)
                SELECT CASE WHEN strpos(x.key, ':pgmq.') > 0 THEN split_part(x.key, ':', 1)::bigint
                            ELSE substr(x.key, strpos(x.key, ':') + 2)::bigint END, x.read_ct, x.enqueued_at,
                       CASE WHEN x.read_ct > 0 THEN x.enqueued_at END, x.vt,
                       CASE WHEN octet_length(x.body) = 0
                                 AND x.properties->>'content_type' = 'application/x-pgmq-null' THEN NULL
                            ELSE convert_from(x.body, pg_catalog.getdatabaseencoding())::jsonb END,
                       x.headers
                  FROM (SELECT b.key, b.delivery_count AS read_ct, b.published_at AS enqueued_at,
                               b.published_at AS vt, b.body, b.properties, b.headers
                          FROM mq._browse_all(%2$L) b
                        UNION ALL
                        SELECT m.key, f.delivery_count, m.published_at, f.lease_until,
                               m.body, m.properties, m.headers
                          FROM mq.in_flight(%2$L, 10000) f, LATERAL mq.message(f.msg_id) m
                        UNION ALL
                        SELECT m.key, 0, m.published_at, t.due, m.body, m.properties, m.headers
                          FROM mq.timer t JOIN mq.cat_queue c ON c.id = t.queue_id,
                               LATERAL mq.message(t.msg_id) m
                         WHERE c.name = %2$L) x
                ON CONFLICT (msg_id) DO NOTHING$q$, r.object_name, qe);
            EXECUTE format('COMMENT ON TABLE pgmq.%I IS %L', r.object_name,
                           format('queue_ext_pgmq: left by DROP EXTENSION queue_ext_pgmq at %s: a copy of '
                                  'the messages of queue_ext queue %s, which keeps them; pgmq.create(%L) '
                                  'makes the view pgmq.%I again in its place, pgmq.drop_queue(%L) drops it',
                                  to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'), qe, substr(r.object_name, 3), r.object_name, substr(r.object_name, 3)));
            -- pgmq 1.13's grant to pg_monitor on a queue table
            EXECUTE format('GRANT SELECT (vt, enqueued_at) ON pgmq.%I TO pg_monitor', r.object_name);
        END LOOP;
    END IF;
    DROP EVENT TRIGGER pgmq_drop_leave;
    DROP FUNCTION pgmq._drop_leave();
END
$$;
REVOKE ALL ON FUNCTION pgmq._drop_leave() FROM PUBLIC;

CREATE FUNCTION pgmq._drop_start()
RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_depend d JOIN pg_event_trigger t ON t.oid = d.objid
                WHERE d.classid = 'pg_event_trigger'::regclass AND t.evtname = 'pgmq_drop_leave'
                  AND d.deptype = 'e') THEN
        ALTER EXTENSION queue_ext_pgmq DROP EVENT TRIGGER pgmq_drop_leave;
        ALTER EXTENSION queue_ext_pgmq DROP FUNCTION pgmq._drop_leave();
    END IF;
END
$$;
REVOKE ALL ON FUNCTION pgmq._drop_start() FROM PUBLIC;

CREATE FUNCTION pgmq._drop_end()
RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_event_trigger t WHERE t.evtname = 'pgmq_drop_leave')
       AND NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_event_trigger t ON t.oid = d.objid
                        WHERE d.classid = 'pg_event_trigger'::regclass AND t.evtname = 'pgmq_drop_leave'
                          AND d.deptype = 'e') THEN
        ALTER EXTENSION queue_ext_pgmq ADD FUNCTION pgmq._drop_leave();
        ALTER EXTENSION queue_ext_pgmq ADD EVENT TRIGGER pgmq_drop_leave;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION pgmq._drop_end() FROM PUBLIC;

CREATE EVENT TRIGGER pgmq_drop_leave ON sql_drop
    WHEN TAG IN ('DROP EXTENSION') EXECUTE FUNCTION pgmq._drop_leave();
CREATE EVENT TRIGGER pgmq_drop_start ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION') EXECUTE FUNCTION pgmq._drop_start();
CREATE EVENT TRIGGER pgmq_drop_end ON ddl_command_end
    WHEN TAG IN ('DROP EXTENSION') EXECUTE FUNCTION pgmq._drop_end();
