--
-- broker_batch_fetch: mq.consume reads a call's messages in one pass over
-- the message log (mq_log_fetch_many: sorted by position, one open per
-- segment), yet emits them in delivery order, with the same redelivered
-- flags, and warns about a message missing from the log as before.
--
-- Small segments, so that one call reads from several
SET mq.segment_size = 16;
-- ~1.9 KB incompressible bodies, known from i
CREATE FUNCTION pg_temp.cbf_body(i int) RETURNS text LANGUAGE sql AS
$$ SELECT string_agg(md5(i || '-' || j), '' ORDER BY j) FROM generate_series(1, 60) j $$;
SELECT mq.queue_declare('cbf_q');
-- one statement filling more than two segments (~38 blocks): it used to
-- loop for ever creating the second, which its snapshot did not see
SELECT count(mq.send('cbf_q', pg_temp.cbf_body(i), jsonb_build_object('i', i))) FROM generate_series(1, 150) i;
SELECT count(DISTINCT msg_id >> 26) >= 3 AS spans_segments FROM mq.browse('cbf_q', 1000);

-- rolled back: the first 40 come again, redelivered, before the others
BEGIN;
SELECT count(*) FROM mq.consume('cbf_q', 40);
ROLLBACK;
WITH c AS (
  SELECT row_number() OVER () AS n, (headers->>'i')::int AS i, redelivered, delivery_count,
         convert_from(body, 'UTF8') = pg_temp.cbf_body((headers->>'i')::int) AS body_ok
  FROM mq.consume('cbf_q', 1000))
SELECT count(*) AS rows, bool_and(n = i) AS in_publish_order, bool_and(body_ok) AS bodies_ok,
       count(*) FILTER (WHERE redelivered AND delivery_count = 2 AND i <= 40) AS redelivered_first_40,
       count(*) FILTER (WHERE NOT redelivered AND delivery_count = 1 AND i > 40) AS new_others
FROM c;
SELECT mq.queue_delete('cbf_q');

-- delivery order is not log order: priorities (higher first, then FIFO)
SELECT mq.queue_declare('cbf_prio', arguments => '{"x-max-priority": 5}');
SELECT count(mq.send('cbf_prio', pg_temp.cbf_body(i), jsonb_build_object('i', i),
                     priority => CASE WHEN i % 3 = 0 THEN 5 WHEN i % 3 = 1 THEN 1 ELSE 3 END))
FROM generate_series(1, 90) i;
WITH c AS (
  SELECT row_number() OVER () AS n, (headers->>'i')::int AS i, priority,
         convert_from(body, 'UTF8') = pg_temp.cbf_body((headers->>'i')::int) AS body_ok
  FROM mq.consume('cbf_prio', 1000)),
e AS (
  SELECT row_number() OVER (ORDER BY CASE WHEN i % 3 = 0 THEN 0 WHEN i % 3 = 2 THEN 1 ELSE 2 END, i) AS n, i
  FROM generate_series(1, 90) i)
SELECT count(*) AS rows, bool_and(c.i = e.i) AS in_priority_order, bool_and(body_ok) AS bodies_ok
FROM c JOIN e USING (n);
SELECT mq.queue_delete('cbf_prio');

-- a message missing from the log: a WARNING (XX001) in its place, the
-- others delivered.  m1-m3 go to a segment of their own (filled up with
-- cbf_fill's messages), m4 to the next one; that segment is then emptied
-- behind the broker's back, so m1-m3 point beyond its end.
SELECT mq.queue_declare('cbf_fill');
SELECT mq.queue_declare('cbf_m');
CREATE TEMP TABLE cbf_seg (seg bigint);
CREATE FUNCTION pg_temp.cbf_roll() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  first bigint := mq.send('cbf_fill', pg_temp.cbf_body(0)) >> 26;
  s bigint;
BEGIN
  LOOP
    s := mq.send('cbf_fill', pg_temp.cbf_body(0)) >> 26;
    EXIT WHEN s <> first;
  END LOOP;
  RETURN s;
END $$;
INSERT INTO cbf_seg SELECT pg_temp.cbf_roll();
SELECT count(mq.send('cbf_m', 'm' || i, jsonb_build_object('i', i))) FROM generate_series(1, 3) i;
SELECT pg_temp.cbf_roll() <> (SELECT seg FROM cbf_seg) AS rolled;
SELECT mq.send('cbf_m', 'm4'::text, '{"i": 4}') >> 26 <> (SELECT seg FROM cbf_seg) AS m4_elsewhere;
SELECT count(*) FILTER (WHERE msg_id >> 26 = (SELECT seg FROM cbf_seg)) AS in_emptied_segment
FROM mq.browse('cbf_m', 10);
SELECT mq.queue_delete('cbf_fill') > 0 AS deleted;
DO $$ BEGIN EXECUTE format('TRUNCATE mq_storage.%I', 'log_' || (SELECT seg FROM cbf_seg)); END $$;
\set VERBOSITY sqlstate
SELECT convert_from(body, 'UTF8') AS body, headers->>'i' AS i FROM mq.consume('cbf_m', 10);
\set VERBOSITY default
SELECT mq.queue_delete('cbf_m');
RESET mq.segment_size;
