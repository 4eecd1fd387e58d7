--
-- rabbit_priority: classic priority queues (x-max-priority) as RabbitMQ
-- 4.3's deps/rabbit/test/priority_queue_SUITE.erl has them, one case per
-- block named after the suite's test; and mq.browse showing what consume
-- would deliver, in the same order.  Bodies name the priority they were
-- published with.  Names start with "rp_".
--
\set VERBOSITY sqlstate
-- everything a consumer gets now, one call, settled at once
CREATE FUNCTION rp_get_all(q text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(convert_from(body, 'UTF8'), ' '), '-')
	  FROM mq.consume(q, 1000, auto_ack => true)
$$;
-- what browse shows, in its order
CREATE FUNCTION rp_browse(q text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(convert_from(body, 'UTF8'), ' '), '-')
	  FROM mq.browse(q, 1000)
$$;

-- priority_queue_SUITE: simple_order
SELECT mq.queue_declare('rp_simple', arguments => '{"x-max-priority": 3}');
SELECT count(mq.send('rp_simple', p::text, priority => p))
  FROM unnest(ARRAY[1, 2, 3, 1, 2, 3, 1, 2, 3]) p;
SELECT rp_browse('rp_simple');
SELECT rp_get_all('rp_simple');
SELECT count(mq.send('rp_simple', p::text, priority => p))
  FROM unnest(ARRAY[2, 3, 1, 2, 3, 1, 2, 3, 1]) p;
SELECT rp_get_all('rp_simple');

-- priority_queue_SUITE: matching (priorities above the maximum count as
-- the maximum, and no priority is 0)
SELECT mq.queue_declare('rp_matching', arguments => '{"x-max-priority": 5}');
SELECT count(mq.send('rp_matching', b, priority => p))
  FROM (VALUES (1, 'none-a', NULL), (2, '0', 0), (3, '5', 5), (4, '10', 10),
			   (5, 'none-b', NULL)) v(i, b, p);
SELECT rp_browse('rp_matching');
SELECT rp_get_all('rp_matching');

-- priority_queue_SUITE: straight_through
SELECT mq.queue_declare('rp_straight', arguments => '{"x-max-priority": 3}');
SELECT mq.send('rp_straight', '1', priority => 1) IS NOT NULL;
SELECT rp_get_all('rp_straight');
SELECT mq.send('rp_straight', '2', priority => 2) IS NOT NULL;
SELECT rp_get_all('rp_straight');
SELECT mq.send('rp_straight', '3', priority => 3) IS NOT NULL;
SELECT rp_get_all('rp_straight');
SELECT rp_get_all('rp_straight');

-- priority_queue_SUITE: requeue (a requeued message goes back to its place
-- in its priority: the same order again)
SELECT mq.queue_declare('rp_requeue', arguments => '{"x-max-priority": 3}');
SELECT count(mq.send('rp_requeue', p::text, priority => p)) FROM unnest(ARRAY[1, 2, 3]) p;
CREATE TEMP TABLE rp_got AS
	SELECT msg_id, convert_from(body, 'UTF8') AS body FROM mq.consume('rp_requeue', 3);
SELECT string_agg(body, ' ' ORDER BY msg_id DESC) FROM rp_got;
SELECT mq.nack('rp_requeue', ARRAY(SELECT msg_id FROM rp_got ORDER BY msg_id DESC));
SELECT rp_browse('rp_requeue');
SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered, ' ')
  FROM mq.consume('rp_requeue', 10, auto_ack => true);
DROP TABLE rp_got;

-- priority_queue_SUITE: drop (x-max-length, drop-head: the head is the
-- highest priority message, and that is what overflow drops)
SELECT mq.queue_declare('rp_dropped');
SELECT mq.queue_declare('rp_drop', arguments => '{"x-max-length": 4, "x-max-priority": 3,
	"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rp_dropped"}');
-- one publish per transaction, as the suite's
SELECT mq.send('rp_drop', '1a', priority => 1) IS NOT NULL;
SELECT mq.send('rp_drop', '2a', priority => 2) IS NOT NULL;
SELECT mq.send('rp_drop', '3a', priority => 3) IS NOT NULL;
SELECT mq.send('rp_drop', '1b', priority => 1) IS NOT NULL;
SELECT mq.send('rp_drop', '2b', priority => 2) IS NOT NULL;
SELECT mq.send('rp_drop', '3b', priority => 3) IS NOT NULL;
SELECT mq.send('rp_drop', '1c', priority => 1) IS NOT NULL;
SELECT mq.send('rp_drop', '2c', priority => 2) IS NOT NULL;
SELECT mq.send('rp_drop', '3c', priority => 3) IS NOT NULL;
SELECT ready FROM mq.queues WHERE queue = 'rp_drop';
SELECT rp_browse('rp_drop');
SELECT rp_get_all('rp_drop');
SELECT string_agg(convert_from(body, 'UTF8') || ':' || (headers->'x-death'->0->>'reason'), ' ')
  FROM mq.consume('rp_dropped', 100, auto_ack => true);
-- the same in one transaction: the limit holds at commit, the same survive
BEGIN;
SELECT count(mq.send('rp_drop', b, priority => p))
  FROM (VALUES (1, '1a', 1), (2, '2a', 2), (3, '3a', 3), (4, '1b', 1), (5, '2b', 2),
			   (6, '3b', 3), (7, '1c', 1), (8, '2c', 2), (9, '3c', 3)) v(i, b, p);
COMMIT;
SELECT rp_browse('rp_drop');
SELECT rp_get_all('rp_drop');
SELECT rp_get_all('rp_dropped');

-- priority_queue_SUITE: reject (x-overflow reject-publish: the first four
-- stay, every later publish fails)
SELECT mq.queue_declare('rp_reject', arguments => '{"x-max-length": 4, "x-max-priority": 3,
	"x-overflow": "reject-publish"}');
SELECT mq.send('rp_reject', '1a', priority => 1) IS NOT NULL;
SELECT mq.send('rp_reject', '2a', priority => 2) IS NOT NULL;
SELECT mq.send('rp_reject', '3a', priority => 3) IS NOT NULL;
SELECT mq.send('rp_reject', '1b', priority => 1) IS NOT NULL;
SELECT mq.send('rp_reject', '2b', priority => 2) IS NOT NULL;
SELECT mq.send('rp_reject', '3b', priority => 3) IS NOT NULL;
SELECT rp_browse('rp_reject');
SELECT rp_get_all('rp_reject');

-- priority_queue_SUITE: purge
SELECT mq.queue_declare('rp_purge', arguments => '{"x-max-priority": 3}');
SELECT count(mq.send('rp_purge', p::text, priority => p)) FROM unnest(ARRAY[1, 2, 3]) p;
SELECT mq.queue_purge('rp_purge');
SELECT rp_get_all('rp_purge');

-- priority_queue_SUITE: ackfold (nack without requeue, all at once:
-- dead-lettered in the order delivered)
SELECT mq.queue_declare('rp_ackfold2');
SELECT mq.queue_declare('rp_ackfold', arguments => '{"x-max-priority": 3,
	"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rp_ackfold2"}');
SELECT count(mq.send('rp_ackfold', p::text, priority => p)) FROM unnest(ARRAY[1, 2, 3]) p;
SELECT mq.nack('rp_ackfold', ARRAY(SELECT msg_id FROM mq.consume('rp_ackfold', 3)), requeue => false);
SELECT rp_get_all('rp_ackfold2');

-- priority_queue_SUITE: dropwhile_fetchwhile (expired messages are neither
-- browsed nor delivered)
SELECT mq.queue_declare('rp_ttl', arguments => '{"x-max-priority": 3, "x-message-ttl": 1}');
SELECT count(mq.send('rp_ttl', p::text, priority => p))
  FROM unnest(ARRAY[1, 2, 3, 1, 2, 3, 1, 2, 3]) p;
SELECT pg_sleep(0.05);
SELECT rp_browse('rp_ttl');
SELECT rp_get_all('rp_ttl');

-- browse = delivery order: x-max-length with x-max-priority, a lease that
-- ran out (its message is ready: consume gives it first, browse shows it)
SELECT mq.queue_declare('rp_lease', arguments => '{"x-max-length": 10, "x-max-priority": 3}');
SELECT mq.send('rp_lease', '2', priority => 2) IS NOT NULL;
SELECT convert_from(body, 'UTF8') FROM mq.consume('rp_lease', lease => '10 ms');
SELECT pg_sleep(0.05);
SELECT ready, unacked FROM mq.queues WHERE queue = 'rp_lease';
SELECT convert_from(body, 'UTF8'), redelivered, delivery_count FROM mq.browse('rp_lease');
SELECT mq.send('rp_lease', '1', priority => 1) IS NOT NULL;
SELECT mq.send('rp_lease', '3', priority => 3) IS NOT NULL;
SELECT rp_browse('rp_lease');
SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered, ' ')
  FROM mq.consume('rp_lease', 10, auto_ack => true);

-- classic queues: a requeued message keeps its place (publish order),
-- whatever order the nacks came in
SELECT mq.queue_declare('rp_classic');
SELECT count(mq.send('rp_classic', b)) FROM unnest(ARRAY['a', 'b', 'c', 'd']) b;
CREATE TEMP TABLE rp_got AS
	SELECT msg_id, convert_from(body, 'UTF8') AS body FROM mq.consume('rp_classic', 4);
SELECT mq.nack('rp_classic', ARRAY[(SELECT msg_id FROM rp_got WHERE body = 'c')]);
SELECT mq.nack('rp_classic', ARRAY[(SELECT msg_id FROM rp_got WHERE body = 'a')]);
SELECT mq.nack('rp_classic', ARRAY(SELECT msg_id FROM rp_got WHERE body IN ('d', 'b') ORDER BY body DESC));
SELECT rp_browse('rp_classic');
SELECT rp_get_all('rp_classic');
-- and after a rollback
SELECT count(mq.send('rp_classic', b)) FROM unnest(ARRAY['e', 'f']) b;
BEGIN;
SELECT string_agg(convert_from(body, 'UTF8'), ' ') FROM mq.consume('rp_classic', 1);
ROLLBACK;
SELECT mq.send('rp_classic', 'g') IS NOT NULL;
SELECT rp_browse('rp_classic');
SELECT rp_get_all('rp_classic');

SELECT mq.queue_delete(q) FROM unnest(ARRAY['rp_simple', 'rp_matching', 'rp_straight',
	'rp_requeue', 'rp_drop', 'rp_dropped', 'rp_reject', 'rp_purge', 'rp_ackfold',
	'rp_ackfold2', 'rp_ttl', 'rp_lease', 'rp_classic']) q;
DROP TABLE rp_got;
DROP FUNCTION rp_get_all, rp_browse;
