--
-- broker_deadletter: queue arguments x-message-ttl, per-message expiration,
-- x-max-length with x-overflow, x-dead-letter-exchange / -routing-key,
-- x-delivery-limit, x-max-priority; x-death headers.  Names start with "bd_".
--
\set VERBOSITY sqlstate
\ir test/regress/wait.sql
-- x-death without its timestamp
CREATE FUNCTION pg_temp.death(h jsonb) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_set(h, '{x-death}',
		(SELECT jsonb_agg(d - 'time') FROM jsonb_array_elements(h->'x-death') d))
$$;
SELECT mq.exchange_declare('bd_dlx', 'direct');
SELECT mq.queue_declare('bd_dead');
SELECT mq.bind('bd_dead', 'bd_dlx', 'bd_src');
SELECT mq.bind('bd_dead', 'bd_dlx', 'dl-key');
SELECT mq.queue_declare('bd_src', arguments => '{"x-dead-letter-exchange": "bd_dlx"}');

-- nack / reject without requeue -> dead-lettered, reason rejected,
-- original routing key kept (no x-dead-letter-routing-key)
SELECT mq.send('bd_src', 'r1'::text, headers => '{"app": "x"}') AS r1 \gset
SELECT mq.nack('bd_src', ARRAY(SELECT msg_id FROM mq.consume('bd_src')), requeue => false);
SELECT convert_from(body, 'UTF8') AS body, exchange, routing_key, pg_temp.death(headers) AS headers
  FROM mq.consume('bd_dead', 10, auto_ack => true);
SELECT mq.send('bd_src', 'r2'::text) IS NOT NULL;
SELECT mq.reject('bd_src', (SELECT msg_id FROM mq.consume('bd_src')), requeue => false);
SELECT convert_from(body, 'UTF8') AS body, pg_temp.death(headers) AS headers
  FROM mq.consume('bd_dead', 10, auto_ack => true);
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue IN ('bd_src', 'bd_dead') ORDER BY 1;

-- x-message-ttl: expired messages are never delivered; dead-lettered as expired
SELECT mq.queue_declare('bd_ttl', arguments => '{"x-message-ttl": 100, "x-dead-letter-exchange": "bd_dlx", "x-dead-letter-routing-key": "dl-key"}');
SELECT mq.send('bd_ttl', 't1'::text) IS NOT NULL;
SELECT pg_sleep(0.3);
SELECT mq.send('bd_ttl', 't2 fresh'::text) IS NOT NULL;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('bd_ttl', 10, auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body, routing_key, pg_temp.death(headers) AS headers
  FROM mq.consume('bd_dead', 10, wait => '10 seconds', auto_ack => true);
-- per-message expiration
SELECT mq.send('bd_src', 'e1'::text, expiration => '100 ms') IS NOT NULL;
SELECT mq.send('bd_src', 'e2 long'::text, expiration => '1 hour') IS NOT NULL;
SELECT pg_sleep(0.3);
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('bd_src', 10, auto_ack => true);
-- (the worker may be dead-lettering e1 right now: wait for its commit)
SELECT convert_from(body, 'UTF8') AS body, pg_temp.death(headers)->'x-death' AS x_death
  FROM mq.consume('bd_dead', 10, wait => '10 seconds', auto_ack => true);
-- expired without a DLX: dropped
SELECT mq.queue_declare('bd_ttl_nodlx', arguments => '{"x-message-ttl": 100}');
SELECT mq.send('bd_ttl_nodlx', 'gone'::text) IS NOT NULL;
SELECT pg_sleep(0.3);
SELECT count(*) FROM mq.consume('bd_ttl_nodlx', 10);
-- (the worker may be dropping it right now: wait for that)
SELECT wait_until($$SELECT total = 0 FROM mq.queues WHERE queue = 'bd_ttl_nodlx'$$);
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bd_ttl_nodlx';
SELECT count(*) FROM mq.consume('bd_dead', 10);

-- x-max-length + drop-head: the oldest are dead-lettered (maxlen)
SELECT mq.queue_declare('bd_len', arguments => '{"x-max-length": 2, "x-dead-letter-exchange": "bd_dlx", "x-dead-letter-routing-key": "dl-key"}');
SELECT count(*) FROM mq.send_batch('bd_len', ARRAY['l1', 'l2', 'l3']::text[]);
SELECT mq.send('bd_len', 'l4'::text) IS NOT NULL;
SELECT queue, ready, total FROM mq.queues WHERE queue = 'bd_len';
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('bd_len', 10, auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body, headers->'x-death'->0->>'reason' AS reason,
       headers->'x-death'->0->>'queue' AS queue
  FROM mq.consume('bd_dead', 10, auto_ack => true);
-- x-max-length + reject-publish: the publish fails (53400), nothing stored
SELECT mq.queue_declare('bd_rej', arguments => '{"x-max-length": 2, "x-overflow": "reject-publish"}');
SELECT count(*) FROM mq.send_batch('bd_rej', ARRAY['j1', 'j2']::text[]);
SELECT mq.send('bd_rej', 'j3'::text);
SELECT count(*) FROM mq.send_batch('bd_rej', ARRAY['j3', 'j4']::text[]);
SELECT queue, ready, total FROM mq.queues WHERE queue = 'bd_rej';
-- unacked messages do not count against x-max-length
SELECT count(*) FROM mq.consume('bd_rej', 1);
SELECT mq.send('bd_rej', 'j3'::text) IS NOT NULL AS accepted;
SELECT convert_from(body, 'UTF8') AS body FROM mq.browse('bd_rej');

-- x-delivery-limit: after limit+1 unsuccessful deliveries -> dead-lettered (delivery_limit)
-- (rejects: a nack with requeue does not count, as in RabbitMQ 4; see
-- rabbit_delivery_limit.sql)
SELECT mq.queue_declare('bd_lim', arguments => '{"x-delivery-limit": 2, "x-dead-letter-exchange": "bd_dlx", "x-dead-letter-routing-key": "dl-key"}');
SELECT mq.send('bd_lim', 'poison'::text) IS NOT NULL;
SELECT mq.reject('bd_lim', (SELECT msg_id FROM mq.consume('bd_lim')), true);
SELECT mq.reject('bd_lim', (SELECT msg_id FROM mq.consume('bd_lim')), true);
SELECT mq.reject('bd_lim', (SELECT msg_id FROM mq.consume('bd_lim')), true);
SELECT count(*) FROM mq.consume('bd_lim');
SELECT convert_from(body, 'UTF8') AS body, pg_temp.death(headers)->'x-death' AS x_death
  FROM mq.consume('bd_dead', 10, auto_ack => true);
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = 'bd_lim';

-- dead-lettering twice through the same queue counts up in x-death
SELECT mq.queue_declare('bd_loop', arguments => '{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "bd_loop"}');
SELECT mq.send('bd_loop', 'loop'::text) IS NOT NULL;
SELECT mq.reject('bd_loop', (SELECT msg_id FROM mq.consume('bd_loop')), false);
SELECT mq.reject('bd_loop', (SELECT msg_id FROM mq.consume('bd_loop')), false);
SELECT convert_from(body, 'UTF8') AS body, redelivered, pg_temp.death(headers) AS headers
  FROM mq.consume('bd_loop', auto_ack => true);

-- x-max-priority: higher priority first, FIFO within a priority;
-- priorities above the maximum count as the maximum
SELECT mq.queue_declare('bd_prio', arguments => '{"x-max-priority": 5}');
SELECT mq.send('bd_prio', b, priority => p) IS NOT NULL
  FROM (VALUES ('p0-a', NULL), ('p1-a', 1), ('p5-a', 5), ('p1-b', 1), ('p9', 9),
               ('p0-b', 0), ('p3', 3), ('p5-b', 5)) v(b, p);
SELECT convert_from(body, 'UTF8') AS body, priority FROM mq.browse('bd_prio', 10);
SELECT convert_from(body, 'UTF8') AS body, priority FROM mq.consume('bd_prio', 3, auto_ack => true);
SELECT mq.send('bd_prio', 'p4 late'::text, priority => 4) IS NOT NULL;
SELECT convert_from(body, 'UTF8') AS body, priority FROM mq.consume('bd_prio', 10, auto_ack => true);
-- without x-max-priority, priority is ignored (FIFO)
SELECT mq.send('bd_src', b, priority => p) IS NOT NULL
  FROM (VALUES ('n1', 1), ('n9', 9), ('n0', 0)) v(b, p);
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('bd_src', 10, auto_ack => true);

-- clean up
SELECT mq.queue_delete(q) FROM unnest(ARRAY['bd_src', 'bd_dead', 'bd_ttl', 'bd_ttl_nodlx',
	'bd_len', 'bd_rej', 'bd_lim', 'bd_loop', 'bd_prio']) q;
SELECT mq.exchange_delete('bd_dlx');
DROP FUNCTION wait_until(text, interval);
