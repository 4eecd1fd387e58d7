-- Stream messages kept in their own entry rows ("inline", src/queue/queue.h):
-- their ids, what still goes to the message log, reading them back every
-- way, dead letters that outlive the stream's generation, retention and
-- delete taking their segment numbers along.
ALTER SYSTEM SET mq.maintenance_naptime = '100ms';
SELECT pg_reload_conf();

\ir test/regress/wait.sql
-- rows in the message log's segments
CREATE FUNCTION si_log_rows() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint := 0; c bigint; r record;
BEGIN
	FOR r IN SELECT relid::regclass AS rel FROM mq.cat_segment LOOP
		EXECUTE format('SELECT count(*) FROM %s', r.rel) INTO c;
		n := n + c;
	END LOOP;
	RETURN n;
END $$;

-- each entry log of a stream has a segment number of its own, in a range
-- apart from the message log's; a classic queue's have none
SELECT mq.queue_declare('si', type => 'stream', arguments => '{"partitions": 2}');
SELECT mq.queue_declare('si_classic');
SELECT q.name, count(i.segno) AS segnos,
	   bool_and(i.segno >= 1::bigint << 26 AND i.segno < 1::bigint << 27) AS in_range
  FROM mq.cat_queue q LEFT JOIN mq.cat_inline i ON i.queue_id = q.id
 WHERE q.name LIKE 'si%' GROUP BY q.name ORDER BY 1;

-- a plain message is kept inline: its id, in [2^52, 2^53), is its own
-- row's address in its partition's entry log, and the log gets no row
SELECT si_log_rows() AS log_rows \gset
SELECT mq.send('si', 'plain', headers => '{"h": 1}', tag => 't1', message_group => 'mg',
			   "partition" => 0) AS id1 \gset
SELECT :id1 >= 1::bigint << 52 AND :id1 < 1::bigint << 53 AS inline_id,
	   (SELECT lane FROM mq.cat_inline WHERE segno = :id1 >> 26) AS lane,
	   si_log_rows() - :log_rows AS log_rows_added;
-- a batch to a stream too: one row per message, in order; round robin
-- over the partitions puts them in both entry logs
SELECT array_agg(id >= 1::bigint << 52 ORDER BY o) AS inline_ids,
	   array_agg(id ORDER BY o) = array_agg(id ORDER BY id) AS in_order
  FROM mq.send_batch('si', ARRAY['r1', 'r2', 'r3'], "partition" => 1) WITH ORDINALITY b(id, o);
SELECT mq.queue_declare('si_rr', type => 'stream', arguments => '{"partitions": 2}');
SELECT bool_and(id >= 1::bigint << 52) AS inline_ids, count(DISTINCT id >> 26) AS entry_logs
  FROM mq.send_batch('si_rr', ARRAY['a', 'b', 'c', 'd']) id;
SELECT si_log_rows() - :log_rows AS log_rows_added;
-- what must be found in the log goes there, as before: a message with a
-- key or a dedup_id (indexed in the log), a batch with keys, a delayed one,
-- one routed to another queue as well
SELECT mq.send('si', 'keyed', key => 'si_k1', "partition" => 1) < 1::bigint << 52 AS keyed_in_log;
SELECT mq.send('si', 'dedup', dedup_id => 'si_d1', "partition" => 1) AS id_d \gset
SELECT :id_d < 1::bigint << 52 AS dedup_in_log,
	   mq.send('si', 'dedup', dedup_id => 'si_d1', "partition" => 1) = :id_d AS same_id;
SELECT bool_and(id < 1::bigint << 52) AS keyed_batch_in_log
  FROM mq.send_batch('si', ARRAY['b1', 'b2'], "partition" => 1, keys => ARRAY[NULL, 'si_k2']) id;
SELECT mq.send('si', 'later', delay => '1 hour', "partition" => 1) < 1::bigint << 52 AS delayed_in_log;
SELECT mq.exchange_declare('si_fan', 'fanout');
SELECT mq.bind('si', 'si_fan');
SELECT mq.bind('si_classic', 'si_fan');
SELECT mq.publish('si_fan', '', 'both', "partition" => 0) < 1::bigint << 52 AS shared_in_log;
SELECT mq.unbind('si', 'si_fan');
SELECT si_log_rows() - :log_rows AS log_rows_added;

-- read back by id, by offset, by a group
SELECT convert_from(body, 'UTF8') AS body, queue, exchange, routing_key, headers, tag,
	   message_group, key, "partition", "offset"
  FROM mq.message(:id1);
SELECT "offset", convert_from(body, 'UTF8') AS body, msg_id = :id1 AS same_id
  FROM mq.read('si', 0);
SELECT "offset", convert_from(body, 'UTF8') AS body, msg_id >= 1::bigint << 52 AS inline_id
  FROM mq.read('si', 1);
SELECT mq.group_declare('si', 'g', start => 'earliest', max_retries => 0);
SELECT "partition", convert_from(body, 'UTF8') AS body, msg_id >= 1::bigint << 52 AS inline_id
  FROM mq.consume('si', 10, group_name => 'g', consumer => 'c') ORDER BY 1, 2;
SELECT event, queue FROM mq.trace(:id1);

-- over max_retries, the group's dead letter is a copy in the log: it
-- outlives the stream's generations
SELECT mq.nack('si', ARRAY[:id1], group_name => 'g');
SELECT msg_id < 1::bigint << 52 AS in_log, convert_from(body, 'UTF8') AS body,
	   (headers->>'x-dlq-origin-msg-id')::bigint = :id1 AS origin
  FROM mq.consume('%DLQ%g', 10, auto_ack => true);

-- the publishing transaction reads its own; a rolled back one leaves an id
-- that reads as nothing, as does an address where no row is
BEGIN;
SELECT mq.send('si', 'rolled back', "partition" => 0) AS id2 \gset
SELECT convert_from(body, 'UTF8') AS body FROM mq.message(:id2);
ROLLBACK;
SELECT count(*) AS rolled_back FROM mq.message(:id2);
SELECT count(*) AS no_row FROM mq.message(((:id1 >> 26) << 26) | 400);
-- an entry row that refers to the log carries no message of its own:
-- partition 1's rows 3 ('r3', inline) and 4 ('keyed', in the log)
SELECT count(*) AS entry_only, min(convert_from(body, 'UTF8')) AS body
  FROM unnest(ARRAY[3, 4]) r,
	   mq.message(((SELECT i.segno FROM mq.cat_inline i JOIN mq.cat_queue q ON q.id = i.queue_id
					 WHERE q.name = 'si' AND i.lane = 1) << 26) | r);

-- retention drops a generation with its messages and its segment number
SELECT mq.queue_declare('si_ret', type => 'stream', arguments => '{"retention": "1 second"}');
SELECT mq.send('si_ret', 'old') AS id3 \gset
SELECT wait_until($$SELECT count(*) = 0 FROM mq.read('si_ret', 0)$$);
SELECT wait_until(format('SELECT count(*) = 0 FROM mq.message(%s)', :id3));
SELECT wait_until(format('SELECT count(*) = 0 FROM mq.cat_inline WHERE segno = %s', :id3 >> 26));
SELECT mq.send('si_ret', 'new') >= 1::bigint << 52 AS inline_id;
SELECT "offset", convert_from(body, 'UTF8') AS body FROM mq.read('si_ret', 0);

-- a value stored out of line adds pages after the partition's last page:
-- the next row goes after them, never back on the page before them (a
-- cursor may have left it).  The id names the row's block (id >> 9).
SELECT mq.queue_declare('si_big', type => 'stream');
SELECT mq.send('si_big', 'small 1') AS b1 \gset
SELECT mq.send('si_big', (SELECT string_agg(md5(i::text), '')::bytea
						  FROM generate_series(1, 800) i)) AS b2 \gset
SELECT mq.send('si_big', 'small 3') AS b3 \gset
SELECT ((:b2 >> 9) & 131071) - ((:b1 >> 9) & 131071) > 1 AS big_after_its_run,
	   ((:b3 >> 9) & 131071) = ((:b2 >> 9) & 131071) AS next_on_its_page;
SELECT "offset", length(body) AS len FROM mq.read('si_big', 0);
SELECT mq.queue_delete('si_big');

-- delete takes every segment number of the stream along
SELECT mq.queue_delete(q) FROM unnest(ARRAY['si', 'si_ret', 'si_rr', 'si_classic', '%DLQ%g']) q;
SELECT mq.exchange_delete('si_fan');
SELECT count(*) AS left_over FROM mq.cat_inline;

DROP FUNCTION wait_until(text, interval), si_log_rows();
ALTER SYSTEM RESET mq.maintenance_naptime;
SELECT pg_reload_conf();
