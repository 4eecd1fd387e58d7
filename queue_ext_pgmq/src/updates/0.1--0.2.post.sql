-- queue_ext_pgmq 0.1 -> 0.2, after functions.sql: every queue's view again
-- (with last_read_at, and its trigger for UPDATE and DELETE), last_read_at in its archive, and its sequence and
-- archive no longer members of the extension (pgmq since 1.6: they stay
-- when the extension is dropped)
DO $$
DECLARE
    r record;
    qtable TEXT;
    atable TEXT;
    ext OID := (SELECT e.oid FROM pg_extension e WHERE e.extname = 'queue_ext_pgmq');
BEGIN
    FOR r IN SELECT m.queue_name FROM pgmq.meta m LOOP
        qtable := pgmq.format_table_name(r.queue_name, 'q');
        atable := pgmq.format_table_name(r.queue_name, 'a');
        -- the messages sent so far carry 0.1's keys: up to the sequence's
        -- last value (whether or not it was called: a bound, not a count)
        IF to_regclass(format('pgmq.%I', qtable || '_msg_id_seq')) IS NOT NULL THEN
            EXECUTE format('INSERT INTO pgmq._legacy_keys (seq_oid, queue_name, last_msg_id)
                              SELECT %L::regclass::oid, %L, last_value FROM pgmq.%I',
                           format('pgmq.%I', qtable || '_msg_id_seq'), r.queue_name,
                           qtable || '_msg_id_seq');
        END IF;
        IF to_regclass(format('pgmq.%I', qtable)) IS NULL THEN
            EXECUTE format('CREATE VIEW pgmq.%I AS
                              SELECT msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers
                                FROM pgmq._queue_rows(%L)', qtable, 'pgmq.' || qtable);
            EXECUTE format('CREATE TRIGGER pgmq_q_write INSTEAD OF UPDATE OR DELETE ON pgmq.%I
                              FOR EACH ROW EXECUTE FUNCTION pgmq._q_write()', qtable);
        END IF;
        IF to_regclass(format('pgmq.%I', atable)) IS NOT NULL THEN
            EXECUTE format('ALTER TABLE pgmq.%I ADD COLUMN IF NOT EXISTS last_read_at TIMESTAMP WITH TIME ZONE',
                           atable);
            IF EXISTS (SELECT 1 FROM pg_depend d
                        WHERE d.refobjid = ext AND d.deptype = 'e'
                          AND d.objid = format('pgmq.%I', atable)::regclass) THEN
                EXECUTE format('ALTER EXTENSION queue_ext_pgmq DROP TABLE pgmq.%I', atable);
            END IF;
        END IF;
        IF EXISTS (SELECT 1 FROM pg_depend d
                    WHERE d.refobjid = ext AND d.deptype = 'e'
                      AND d.objid = to_regclass(format('pgmq.%I', qtable || '_msg_id_seq'))) THEN
            EXECUTE format('ALTER EXTENSION queue_ext_pgmq DROP SEQUENCE pgmq.%I', qtable || '_msg_id_seq');
        END IF;
    END LOOP;
END
$$;

-- pg_monitor as pgmq 1.13 grants it: no longer every table and sequence of
-- schema pgmq (messages in the archives, the views), only pgmq.meta and,
-- per queue, what pgmq.metrics needs (pgmq._grant_monitor)
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT d.defaclrole::regrole AS role_name
               FROM pg_default_acl d
               JOIN pg_namespace n ON n.oid = d.defaclnamespace
               CROSS JOIN LATERAL aclexplode(d.defaclacl) a
              WHERE n.nspname = 'pgmq' AND d.defaclobjtype IN ('r', 'S')
                AND a.grantee = 'pg_monitor'::regrole LOOP
        EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %s IN SCHEMA pgmq REVOKE SELECT ON TABLES FROM pg_monitor',
                       r.role_name);
        EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %s IN SCHEMA pgmq REVOKE SELECT ON SEQUENCES FROM pg_monitor',
                       r.role_name);
    END LOOP;
    FOR r IN SELECT DISTINCT c.oid::regclass AS rel, c.relkind = 'S' AS is_seq
               FROM pg_class c
               CROSS JOIN LATERAL aclexplode(c.relacl) a
              WHERE c.relnamespace = 'pgmq'::regnamespace
                AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND c.relname <> 'meta'
                AND a.grantee = 'pg_monitor'::regrole AND a.privilege_type = 'SELECT' LOOP
        EXECUTE format('REVOKE SELECT ON %s %s FROM pg_monitor',
                       CASE WHEN r.is_seq THEN 'SEQUENCE' ELSE 'TABLE' END, r.rel);
    END LOOP;
    FOR r IN SELECT m.queue_name FROM pgmq.meta m LOOP
        IF to_regclass(format('pgmq.%I', pgmq.format_table_name(r.queue_name, 'q'))) IS NOT NULL
           AND to_regclass(format('pgmq.%I', pgmq.format_table_name(r.queue_name, 'q') || '_msg_id_seq')) IS NOT NULL THEN
            PERFORM pgmq._grant_monitor(pgmq.format_table_name(r.queue_name, 'q'));
        END IF;
    END LOOP;
END
$$;
