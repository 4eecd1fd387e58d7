-- queue_ext_pgmq: delete, archive and set_vt by msg_id reach a message
-- however deep in a backlog nobody has read (issue 40): in one call, by an
-- array of ids, and in several statements of one transaction; what they
-- leave is read once each, in msg_id order.  And the view pgmq.q_<name>
-- shows every ready message, not the first 10000.
CREATE EXTENSION queue_ext_pgmq;

CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

SELECT pgmq.create('deep');
SELECT count(*) FROM pgmq.send_batch('deep',
    ARRAY(SELECT jsonb_build_object('i', i) FROM generate_series(1, 30000) i));

-- one call each, past the first 10000
SELECT pgmq.delete('deep', 10001::bigint);
SELECT pgmq.archive('deep', 10002::bigint);
SELECT msg_id, read_ct, message FROM pgmq.set_vt('deep', 10003::bigint, 3600);
SELECT msg_id, read_ct, message
  FROM pgmq.set_vt('deep', 10004::bigint, clock_timestamp() + interval '1 hour');
-- made visible at once: stays where it is
SELECT msg_id, read_ct FROM pgmq.set_vt('deep', 10005::bigint, 0);
-- a second time: already gone
SELECT pgmq.delete('deep', 10001::bigint), pgmq.archive('deep', 10002::bigint);

-- arrays, deeper still, with an id given twice and one that never existed
SELECT * FROM pgmq.delete('deep', ARRAY[20001, 29999, 20001, 40000]::bigint[]);
SELECT * FROM pgmq.archive('deep', ARRAY[29998, 20002]::bigint[]);
SELECT msg_id, message FROM pgmq.set_vt('deep', ARRAY[29997, 20003]::bigint[], 3600);

-- several statements in one transaction, one of them on a message the
-- transaction made invisible a moment before
BEGIN;
SELECT pgmq.delete('deep', 25001::bigint);
SELECT pgmq.archive('deep', 25002::bigint);
SELECT msg_id FROM pgmq.set_vt('deep', 25003::bigint, 3600);
SELECT pgmq.delete('deep', 25003::bigint);
SELECT * FROM pgmq.archive('deep', ARRAY[25004, 25005]::bigint[]);
COMMIT;

-- rolled back: nothing of it stays
BEGIN;
SELECT pgmq.delete('deep', 26001::bigint);
SELECT pgmq.archive('deep', 26002::bigint);
SELECT msg_id FROM pgmq.set_vt('deep', 26003::bigint, 3600);
ROLLBACK;

SELECT msg_id, read_ct, message FROM pgmq.a_deep ORDER BY msg_id;

-- what is left: 30000 - 11 deleted or archived, 4 of them invisible
SELECT queue_length, queue_visible_length FROM pgmq.metrics('deep');
-- the view counts the same: every ready message, and those read
SELECT count(*) AS q_rows,
       count(*) FILTER (WHERE vt > clock_timestamp()) AS invisible
  FROM pgmq.q_deep;
SELECT msg_id FROM pgmq.q_deep WHERE vt > clock_timestamp() ORDER BY msg_id;

-- reading it all: each message left once, in msg_id order (the deep ones
-- made visible again, by set_vt 0 or a rollback, in their place)
CREATE TEMP TABLE deep_got (n serial, msg_id bigint);
INSERT INTO deep_got (msg_id) SELECT msg_id FROM pgmq.pop('deep', 10000);
INSERT INTO deep_got (msg_id) SELECT msg_id FROM pgmq.pop('deep', 10000);
INSERT INTO deep_got (msg_id) SELECT msg_id FROM pgmq.pop('deep', 10000);
INSERT INTO deep_got (msg_id) SELECT msg_id FROM pgmq.pop('deep', 10000);
SELECT count(*), count(DISTINCT msg_id) FROM deep_got;
SELECT g AS not_read FROM generate_series(1, 30000) g
 WHERE g NOT IN (SELECT msg_id FROM deep_got) ORDER BY g;
SELECT count(*) AS out_of_order
  FROM deep_got a JOIN deep_got b ON b.n = a.n + 1 WHERE b.msg_id < a.msg_id;
-- and the invisible ones can be deleted in one call
SELECT * FROM pgmq.delete('deep', ARRAY[10003, 10004, 20003, 29997]::bigint[]);
SELECT queue_length FROM pgmq.metrics('deep');
SELECT pgmq.drop_queue('deep');

-- queue_ext's own: mq.lease_ids and mq.ack_keys of ready messages deep in
-- a backlog, and a consumer then gets the rest in order, without them
SELECT mq.queue_declare('deep_q');
CREATE TEMP TABLE deep_ids AS
    SELECT s.i, s.msg_id FROM mq.send_batch('deep_q',
        ARRAY(SELECT 'm' || i FROM generate_series(1, 15000) i),
        keys => ARRAY(SELECT 'k' || i FROM generate_series(1, 15000) i))
        WITH ORDINALITY AS s(msg_id, i);
SELECT count(*), count(DISTINCT msg_id) FROM deep_ids;
SELECT count(*) AS leased, bool_and(NOT was_leased) AS were_ready, max(delivery_count)
  FROM mq.lease_ids('deep_q', ARRAY(SELECT msg_id FROM deep_ids WHERE i IN (12000, 14000)), '1 hour');
SELECT key FROM mq.ack_keys('deep_q', ARRAY['k13000', 'k14999', 'k13000', 'k99999']);
SELECT ready, unacked, total FROM mq.queues WHERE queue = 'deep_q';
CREATE TEMP TABLE deep_q_got (n serial, msg_id bigint);
INSERT INTO deep_q_got (msg_id) SELECT msg_id FROM mq.consume('deep_q', 10000, auto_ack => true);
INSERT INTO deep_q_got (msg_id) SELECT msg_id FROM mq.consume('deep_q', 10000, auto_ack => true);
SELECT count(*), count(DISTINCT msg_id) FROM deep_q_got;
SELECT d.i AS not_consumed FROM deep_ids d
 WHERE d.msg_id NOT IN (SELECT msg_id FROM deep_q_got) ORDER BY 1;
SELECT count(*) AS out_of_order
  FROM deep_q_got a JOIN deep_q_got b ON b.n = a.n + 1 WHERE b.msg_id < a.msg_id;
-- the leased ones, made ready again, come next
SELECT count(*) FROM mq.lease_ids('deep_q', ARRAY(SELECT msg_id FROM deep_ids WHERE i IN (12000, 14000)), '0');
SELECT d.i FROM mq.consume('deep_q', 10, auto_ack => true) c JOIN deep_ids d USING (msg_id) ORDER BY 1;

-- more messages than mq.max_in_flight can track, taken by id in one call:
-- 53400, and nothing changed (no message taken, none tracked)
SELECT count(*) FROM mq.send_batch('deep_q',
    ARRAY(SELECT 'n' || i FROM generate_series(1, 70000) i),
    keys => ARRAY(SELECT 'n' || i FROM generate_series(1, 70000) i));
SELECT regexp_replace(pg_temp.err($$SELECT mq.ack_keys('deep_q', ARRAY(SELECT 'n' || i FROM generate_series(1, 70000) i))$$),
                      'take \d+ messages', 'take N messages');
SELECT ready, unacked, total FROM mq.queues WHERE queue = 'deep_q';
SELECT count(*) FROM mq.ack_keys('deep_q', ARRAY['n69999', 'n1']);
SELECT ready, unacked, total FROM mq.queues WHERE queue = 'deep_q';
SELECT mq.queue_delete('deep_q');

DROP EXTENSION queue_ext_pgmq CASCADE;
DROP SCHEMA pgmq;
