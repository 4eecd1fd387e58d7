-- Settlement runs of consumer groups: a consume call's deliveries and an
-- ack call's settlements at consecutive positions of one entry-log page
-- are one DELIVERED_RUN (11) / ACK_RUN (12) record, the run's length in
-- the log's second column; the rest stay single records (DELIVERED 6,
-- ACK 1, RETRY_AT 10).  What a consumer sees is unchanged.
CREATE FUNCTION gr_log(lane int, g text DEFAULT 'gr')
RETURNS TABLE (kind bigint, lp bigint, arg bigint) LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT settlement >> 56, settlement & 65535, '
		'CASE WHEN settlement >> 56 = 10 THEN NULL ELSE arg END FROM mq_storage.%I',
		(SELECT format('g%s_%s_%s_0', q.id, gr.id, lane)
		   FROM mq.cat_queue q JOIN mq.cat_group gr ON gr.queue_id = q.id
		  WHERE q.name = 'rs' AND gr.name = g));
END $$;
CREATE TABLE grgot (msg_id bigint, body text, p int, o bigint, rd boolean, dc int);
CREATE FUNCTION gr_take(n int) RETURNS TABLE (body text, p int, o bigint, rd boolean, dc int)
LANGUAGE sql AS $$
	WITH t AS (
		INSERT INTO grgot
		SELECT msg_id, convert_from(body, 'UTF8'), "partition", "offset", redelivered,
			   delivery_count
		  FROM mq.consume('rs', n, group_name => 'gr', lease => '1 hour')
		RETURNING *)
	SELECT body, p, o, rd, dc FROM t ORDER BY p, o
$$;
CREATE FUNCTION gr_ids(cond text) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE r bigint[];
BEGIN
	EXECUTE 'SELECT ARRAY(SELECT DISTINCT msg_id FROM grgot WHERE ' || cond || ')' INTO r;
	RETURN r;
END $$;

SELECT mq.queue_declare('rs', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('rs', 'gr', start => 'earliest', retry_delays => '{1 hour}');
SELECT count(*) FROM (SELECT mq.send('rs', 'a' || i, "partition" => 0)
						FROM generate_series(0, 11) i) x;
SELECT count(*) FROM (SELECT mq.send('rs', 'b' || i, "partition" => 1)
						FROM generate_series(0, 3) i) x;

-- one consume call: one DELIVERED_RUN per partition (lane 1 is read first)
SELECT * FROM gr_take(10);
SELECT * FROM gr_log(0);
SELECT * FROM gr_log(1);

-- an ack of part of the run: runs of what is consecutive, a single ACK
-- for a lone one
SELECT mq.ack('rs', gr_ids($$p = 0 AND o IN (0, 1, 2, 4)$$), group_name => 'gr');
SELECT * FROM gr_log(0) WHERE kind <> 11;
-- a nack of one member: its RETRY_AT alone; it waits for its hour
SELECT mq.nack('rs', gr_ids($$p = 0 AND o = 3$$), group_name => 'gr');
SELECT * FROM gr_log(0) WHERE kind = 10;
-- the next call: the rest of partition 0 in one run
SELECT * FROM gr_take(10);
SELECT * FROM gr_log(0) WHERE kind = 11;
SELECT "partition", committed_offset, lag, in_flight, retrying
  FROM mq.consumer_groups WHERE queue = 'rs' AND group_name = 'gr' ORDER BY 1;

-- the state rebuilt from the logs (a seek of partition 1 drops the group's
-- state; partition 0's logs are replayed): partition 0 as before it
SELECT mq.seek('rs', 'gr', to_offset => 4, "partition" => 1);
SELECT "partition", committed_offset, lag, in_flight, retrying
  FROM mq.consumer_groups WHERE queue = 'rs' AND group_name = 'gr' ORDER BY 1;
-- the unacked of partition 0 are leased no longer: they come back
-- redelivered, counted; partition 1 is sought past its end
SELECT * FROM gr_take(20);

-- an ack in the consuming transaction: one ACK_RUN for the whole call
SELECT count(*) FROM (SELECT mq.send('rs', 'c' || i, "partition" => 0)
						FROM generate_series(0, 4) i) x;
BEGIN;
SELECT mq.ack('rs', ARRAY(SELECT msg_id FROM mq.consume('rs', 5, group_name => 'gr')),
			  group_name => 'gr');
COMMIT;
SELECT * FROM gr_log(0) WHERE kind = 12 ORDER BY lp DESC LIMIT 1;

-- a broadcast consumer's log has runs too
SELECT mq.group_declare('rs', 'gb', mode => 'broadcast', start => 'earliest');
SELECT count(*) FROM mq.consume('rs', 100, group_name => 'gb', consumer => 'A');
SELECT format('g%s_%s_0_0', q.id, k.id) AS gb_log0
  FROM mq.cat_queue q JOIN mq.cat_group g ON g.queue_id = q.id
  JOIN mq.cat_group_consumer k ON k.group_id = g.id
 WHERE q.name = 'rs' AND g.name = 'gb' AND k.consumer = 'A' \gset
SELECT settlement >> 56 AS kind, settlement & 65535 AS lp, arg FROM mq_storage.:"gb_log0" ORDER BY 1, 2;

-- a classic queue that counts deliveries (its logs have no argument
-- column): single DELIVERED records
SELECT mq.queue_declare('rq', arguments => '{"x-delivery-limit": 5}');
SELECT count(*) FROM (SELECT mq.send('rq', 'q' || i) FROM generate_series(1, 3) i) x;
SELECT count(*) FROM mq.consume('rq', 3);
SELECT format('s%s_0_0', id) AS rq_log FROM mq.cat_queue WHERE name = 'rq' \gset
SELECT settlement >> 56 AS kind, count(*) FROM mq_storage.:"rq_log" GROUP BY 1;

-- a run of a length that no page holds: the log is damaged (XX001 when
-- the state is rebuilt)
SELECT format('g%s_%s_1_0', q.id, gr.id) AS gr_log1
  FROM mq.cat_queue q JOIN mq.cat_group gr ON gr.queue_id = q.id
 WHERE q.name = 'rs' AND gr.name = 'gr' \gset
INSERT INTO mq_storage.:"gr_log1" VALUES ((11::bigint << 56) | 1, 1000);
SELECT mq.seek('rs', 'gr', to_offset => 0, "partition" => 0);
\set VERBOSITY sqlstate
SELECT * FROM gr_take(1);
\set VERBOSITY default
SELECT * FROM gr_take(1);

SELECT mq.queue_delete('rs');
SELECT mq.queue_delete('rq');
SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue LIKE '\%DLQ\%%';
DROP TABLE grgot;
