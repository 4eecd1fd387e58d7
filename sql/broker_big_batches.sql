--
-- One call that publishes, consumes or settles many messages costs O(n).
-- Its n tuple slots share one unpinned copy of the relation's descriptor;
-- they used to pin the relation's own descriptor n times, and PostgreSQL 15's
-- resource owner finds n entries for one pointer by linear probing: O(n^2),
-- 50,000 messages in one send_batch took 4.7 s instead of 0.27 s (bench/groups.py
-- found it).  The statement timeout makes the old behaviour fail (200,000
-- messages: over a minute); the current one takes about a second.
--
SET statement_timeout = '30s';
SELECT mq.queue_declare('bb_classic');
SELECT count(*), count(DISTINCT id) FROM mq.send_batch('bb_classic',
       ARRAY(SELECT 'm' || i FROM generate_series(1, 200000) i)) id;
SELECT ready, unacked FROM mq.queues WHERE queue = 'bb_classic';
-- consume 50,000 (five calls) and ack them in one call
BEGIN;
CREATE TEMP TABLE bb_got (msg_id bigint, "offset" bigint);
INSERT INTO bb_got SELECT msg_id FROM mq.consume('bb_classic', 10000);
INSERT INTO bb_got SELECT msg_id FROM mq.consume('bb_classic', 10000);
INSERT INTO bb_got SELECT msg_id FROM mq.consume('bb_classic', 10000);
INSERT INTO bb_got SELECT msg_id FROM mq.consume('bb_classic', 10000);
INSERT INTO bb_got SELECT msg_id FROM mq.consume('bb_classic', 10000);

SELECT count(*), count(DISTINCT msg_id) FROM bb_got;
SELECT mq.ack('bb_classic', array_agg(msg_id)) FROM bb_got;
COMMIT;
SELECT ready, unacked FROM mq.queues WHERE queue = 'bb_classic';
SELECT convert_from(body, 'UTF8') FROM mq.consume('bb_classic', 1, auto_ack => true);

-- a stream and a consumer group: the group's settlement records in one batch
SELECT mq.queue_declare('bb_stream', type => 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('bb_stream', 'bb_g', start => 'earliest');
SELECT count(*) FROM mq.send_batch('bb_stream',
       ARRAY(SELECT 's' || i FROM generate_series(1, 100000) i), partition => 0);
BEGIN;
TRUNCATE bb_got;
INSERT INTO bb_got SELECT msg_id, "offset" FROM mq.consume('bb_stream', 10000, group_name => 'bb_g');
INSERT INTO bb_got SELECT msg_id, "offset" FROM mq.consume('bb_stream', 10000, group_name => 'bb_g');
INSERT INTO bb_got SELECT msg_id, "offset" FROM mq.consume('bb_stream', 10000, group_name => 'bb_g');
INSERT INTO bb_got SELECT msg_id, "offset" FROM mq.consume('bb_stream', 10000, group_name => 'bb_g');
INSERT INTO bb_got SELECT msg_id, "offset" FROM mq.consume('bb_stream', 10000, group_name => 'bb_g');

SELECT count(*), count(DISTINCT msg_id), min("offset"), max("offset") FROM bb_got;
SELECT mq.ack('bb_stream', array_agg(msg_id), group_name => 'bb_g') FROM bb_got;
COMMIT;
SELECT partition, committed_offset, end_offset, lag, in_flight
  FROM mq.consumer_groups WHERE queue = 'bb_stream' ORDER BY partition;
RESET statement_timeout;

DROP TABLE bb_got;
SELECT mq.queue_delete('bb_classic');
SELECT mq.queue_delete('bb_stream');
-- the group dead-lettered nothing: it has no dead-letter queue
SELECT count(*) FROM mq.cat_queue WHERE name = '%DLQ%bb_g';
