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
