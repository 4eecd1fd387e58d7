-- Entry logs rotate: a lane starts a new generation when its entry log
-- reaches mq.lane_segment_size, and drops a generation (entry log and
-- settlement log) once every entry in it is settled.  Disk use follows the
-- live backlog, not the history.
ALTER SYSTEM SET mq.lane_segment_size = 2;		-- blocks: rotate quickly
ALTER SYSTEM SET mq.maintenance_naptime = '100ms';
SELECT pg_reload_conf();

\ir test/regress/wait.sql

SELECT mq.queue_declare('rot_q');
SELECT format('^[qs]%s_0_', id) AS pat FROM mq.cat_queue WHERE name = 'rot_q' \gset

-- 400 messages fill more than two pages of the first generation
SELECT count(*) FROM mq.send_batch('rot_q', (SELECT array_agg('a' || g) FROM generate_series(1, 400) g));
-- the worker creates generation 1 and switches the lane to it
SELECT wait_until(format($$SELECT count(*) = 4 FROM pg_class WHERE relname ~ %L$$, :'pat'));
SELECT wait_until($$SELECT EXISTS (SELECT 1 FROM pg_class WHERE relname ~ '^q[0-9]+_0_1$')$$);
SELECT pg_sleep(0.5);
-- later messages go to generation 1; nothing is lost or reordered across it
SELECT count(*) FROM mq.send_batch('rot_q', (SELECT array_agg('b' || g) FROM generate_series(1, 10) g));
SELECT ready, total FROM mq.queues WHERE queue = 'rot_q';
CREATE TEMP TABLE rot_got AS
	SELECT msg_id, convert_from(body, 'UTF8') AS b, row_number() OVER () AS n
	  FROM mq.consume('rot_q', 1000);
SELECT count(*), count(DISTINCT b),
	   bool_and(b = CASE WHEN n <= 400 THEN 'a' || n ELSE 'b' || (n - 400) END) AS in_order
  FROM rot_got;
SELECT mq.ack('rot_q', ARRAY(SELECT msg_id FROM rot_got));

-- all of generation 0 is settled: its entry and settlement logs go away
SELECT mq.send('rot_q', 'after') IS NOT NULL AS sent;
SELECT wait_until(format($$SELECT NOT EXISTS (SELECT 1 FROM pg_class WHERE relname ~ %L)$$,
					   replace(:'pat', '_0_', '_0_0$')));
SELECT convert_from(body, 'UTF8') FROM mq.consume('rot_q', 10);
SELECT ready, unacked, total FROM mq.queues WHERE queue = 'rot_q';

SELECT mq.queue_delete('rot_q');
SELECT count(*) FROM pg_class WHERE relname ~ :'pat';
DROP FUNCTION wait_until(text, interval);
ALTER SYSTEM RESET mq.lane_segment_size;
ALTER SYSTEM RESET mq.maintenance_naptime;
SELECT pg_reload_conf();
