--
-- rabbit_quorum: quorum queues as RabbitMQ 4.3's rabbit_fifo has them,
-- after deps/rabbit/test/quorum_queue_SUITE.erl (one block per case, named
-- after it):
-- - message priorities without x-max-priority (which a quorum queue
--   refuses): 32 levels 0..31, higher first, FIFO within a level, larger
--   priorities count as 31, no priority is priority 4;
-- - returned messages (nack or reject with requeue, lease expiry,
--   rollback, session end) are delivered before all others, in the order
--   they came back, whatever their priority;
-- - mq.browse shows that same order.
-- Publishing to a quorum queue without synchronous standbys fails (53000,
-- see quorum_standby); here they commit locally (mq.quorum_unavailable =
-- wait) and its one warning is silenced.  Names start with "rq_".
--
\ir test/regress/wait.sql
\set VERBOSITY sqlstate
SET mq.quorum_unavailable = wait;
SET client_min_messages = error;
CREATE FUNCTION rq_get_all(q text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(convert_from(body, 'UTF8'), ' '), '-')
	  FROM mq.consume(q, 1000, auto_ack => true)
$$;
CREATE FUNCTION rq_browse(q text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(convert_from(body, 'UTF8'), ' '), '-')
	  FROM mq.browse(q, 1000)
$$;

-- a quorum queue has its 32 priority lanes from the start
SELECT mq.queue_declare('rq_fifo', 'quorum');
SELECT cardinality(lanes) FROM mq.cat_queue WHERE name = 'rq_fifo';

-- quorum_queue_SUITE: priority_queue_fifo (high priorities published
-- first are consumed first, strictly by priority)
SELECT count(mq.send('rq_fifo', p::text, priority => p)) FROM generate_series(5, 10) p;
SELECT count(mq.send('rq_fifo', p::text, priority => p)) FROM generate_series(0, 4) p;
SELECT rq_browse('rq_fifo');
SELECT rq_get_all('rq_fifo');

-- quorum_queue_SUITE: priority_queue_2_1_ratio (low priorities published
-- first: 4.3 is strict, highest first, no 2:1 ratio any more)
SELECT mq.queue_declare('rq_ratio', 'quorum');
SELECT count(mq.send('rq_ratio', p::text, priority => p)) FROM generate_series(0, 4) p;
SELECT count(mq.send('rq_ratio', p::text, priority => p)) FROM generate_series(5, 14) p;
SELECT rq_browse('rq_ratio');
SELECT rq_get_all('rq_ratio');

-- rabbit_fifo: no priority is priority 4; above 31 counts as 31
SELECT mq.queue_declare('rq_levels', 'quorum');
SELECT count(mq.send('rq_levels', b, priority => p))
  FROM (VALUES (1, 'none-a', NULL), (2, '3', 3), (3, '4', 4), (4, '5', 5),
			   (5, '255', 255), (6, '31', 31), (7, '0', 0), (8, 'none-b', NULL)) v(i, b, p);
SELECT rq_browse('rq_levels');
SELECT rq_get_all('rq_levels');

-- quorum_queue_SUITE: requeue_multiple_true (nack all at once: returned in
-- the order delivered, before anything else)
SELECT mq.queue_declare('rq_multi', 'quorum', arguments => '{"x-delivery-limit": 3}');
SELECT count(mq.send('rq_multi', i::text)) FROM generate_series(1, 100) i;
CREATE TEMP TABLE rq_got AS
	SELECT row_number() OVER () AS n, msg_id, convert_from(body, 'UTF8') AS body, redelivered
	  FROM mq.consume('rq_multi', 100);
SELECT count(*), bool_or(redelivered), string_agg(body, ' ' ORDER BY n) =
	   (SELECT string_agg(i::text, ' ') FROM generate_series(1, 100) i) AS in_order
  FROM rq_got;
SELECT mq.nack('rq_multi', ARRAY(SELECT msg_id FROM rq_got ORDER BY n));
SELECT rq_browse('rq_multi') = (SELECT string_agg(i::text, ' ') FROM generate_series(1, 100) i) AS browsed_in_order;
SELECT count(*), bool_and(redelivered),
	   string_agg(convert_from(body, 'UTF8'), ' ') = (SELECT string_agg(i::text, ' ') FROM generate_series(1, 100) i) AS in_order
  FROM mq.consume('rq_multi', 100, auto_ack => true);
DROP TABLE rq_got;

-- quorum_queue_SUITE: requeue_multiple_false (each nacked on its own, in a
-- shuffled order: redelivered in the order they were nacked)
SELECT count(mq.send('rq_multi', i::text)) FROM generate_series(1, 100) i;
CREATE TEMP TABLE rq_got AS
	SELECT msg_id, convert_from(body, 'UTF8')::int AS i FROM mq.consume('rq_multi', 100);
CREATE TEMP TABLE rq_shuffled AS
	SELECT row_number() OVER (ORDER BY (i * 37) % 101) AS n, msg_id, i FROM rq_got;
SELECT string_agg(i::text, ' ' ORDER BY n) AS nack_order FROM rq_shuffled WHERE n <= 10;
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT msg_id FROM rq_shuffled ORDER BY n LOOP
		PERFORM mq.nack('rq_multi', ARRAY[r.msg_id]);
	END LOOP;
END
$$;
SELECT rq_browse('rq_multi') = (SELECT string_agg(i::text, ' ' ORDER BY n) FROM rq_shuffled) AS browsed_in_nack_order;
SELECT count(*), bool_and(redelivered),
	   string_agg(convert_from(body, 'UTF8'), ' ') =
	   (SELECT string_agg(i::text, ' ' ORDER BY n) FROM rq_shuffled) AS in_nack_order
  FROM mq.consume('rq_multi', 100, auto_ack => true);
DROP TABLE rq_got, rq_shuffled;

-- returns go before every ready message, whatever the priorities
SELECT mq.queue_declare('rq_ret', 'quorum');
SELECT count(mq.send('rq_ret', b, priority => p))
  FROM (VALUES (1, 'p1', 1), (2, 'p9', 9), (3, 'none', NULL)) v(i, b, p);
CREATE TEMP TABLE rq_got AS
	SELECT msg_id, convert_from(body, 'UTF8') AS body FROM mq.consume('rq_ret', 3);
SELECT string_agg(body, ' ') FROM rq_got;
SELECT mq.reject('rq_ret', (SELECT msg_id FROM rq_got WHERE body = 'p1'));
SELECT count(mq.send('rq_ret', b, priority => p))
  FROM (VALUES (1, 'p31', 31), (2, 'p0', 0)) v(i, b, p);
SELECT mq.nack('rq_ret', ARRAY[(SELECT msg_id FROM rq_got WHERE body = 'p9')]);
SELECT rq_browse('rq_ret');
SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered || ':' || delivery_count, ' ')
  FROM mq.consume('rq_ret', 2);
-- a rollback returns what the transaction consumed, in delivery order;
-- a nack after it returns its message after those
BEGIN;
SELECT string_agg(convert_from(body, 'UTF8'), ' ') FROM mq.consume('rq_ret', 2);
ROLLBACK;
SELECT mq.nack('rq_ret', ARRAY(SELECT msg_id FROM rq_got WHERE body = 'none'));
SELECT rq_browse('rq_ret');
-- a lease that runs out: a return too, at the end of the returns
SELECT string_agg(convert_from(body, 'UTF8'), ' ') FROM mq.consume('rq_ret', 1, lease => '10 ms');
SELECT pg_sleep(0.05);
SELECT rq_browse('rq_ret');
SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered, ' ')
  FROM mq.consume('rq_ret', 10, auto_ack => true);

-- the end of the consuming session returns its messages, in the order
-- they were delivered to it (a second session through dblink)
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT mq.queue_declare('rq_session', 'quorum');
SELECT count(mq.send('rq_session', b, priority => p))
  FROM (VALUES (1, 'a', NULL), (2, 'b', 7), (3, 'c', NULL), (4, 'd', 2)) v(i, b, p);
SELECT dblink_connect('rq_other', format('dbname=%s port=%s host=%s options=-cmq.quorum_unavailable=wait', current_database(),
	current_setting('port'), split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT * FROM dblink('rq_other', $$SELECT string_agg(convert_from(body, 'UTF8'), ' ')
	FROM mq.consume('rq_session', 3)$$) AS t(bodies text);
SELECT mq.send('rq_session', 'e', priority => 9) IS NOT NULL;
SELECT rq_browse('rq_session');
SELECT dblink_disconnect('rq_other');
-- wait for the other backend to exit (mq.queues reads shared memory)
SELECT wait_until($$SELECT unacked = 0 FROM mq.queues WHERE queue = 'rq_session'$$);
SELECT rq_browse('rq_session');
SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered, ' ')
  FROM mq.consume('rq_session', 10, auto_ack => true);

-- drop-head takes the head in delivery order: the oldest return first
SELECT mq.queue_declare('rq_drop', 'quorum', arguments => '{"x-max-length": 2}');
SELECT count(mq.send('rq_drop', b, priority => p))
  FROM (VALUES (1, 'lo', 1), (2, 'hi', 9)) v(i, b, p);
SELECT mq.nack('rq_drop', ARRAY(SELECT msg_id FROM mq.consume('rq_drop', 2) ORDER BY priority));
SELECT rq_browse('rq_drop');
SELECT mq.send('rq_drop', 'mid', priority => 5) IS NOT NULL;
SELECT rq_browse('rq_drop');
SELECT rq_get_all('rq_drop');

SELECT mq.ack('rq_ret', ARRAY(SELECT msg_id FROM rq_got WHERE body IN ('p1', 'p9')));
DROP TABLE rq_got;
SELECT mq.queue_delete(q) FROM unnest(ARRAY['rq_fifo', 'rq_ratio', 'rq_levels', 'rq_multi',
	'rq_ret', 'rq_session', 'rq_drop']) q;
DROP FUNCTION rq_get_all, rq_browse;
RESET client_min_messages;
DROP FUNCTION wait_until(text, interval);
