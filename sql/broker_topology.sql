--
-- broker_topology: exchanges, queues, bindings, queue arguments
-- (design.md "SQL contract": topology; RabbitMQ semantics).
-- Queue and exchange names start with "bt_"; everything is dropped at the end.
--
\set VERBOSITY sqlstate

-- predeclared exchanges
SELECT exchange, type, durable, alternate_exchange, predeclared
  FROM mq.exchanges ORDER BY exchange;

-- every queue is bound to '' by its name
SELECT mq.queue_declare('bt_q1');
SELECT * FROM mq.bindings WHERE queue = 'bt_q1' ORDER BY exchange;
SELECT mq.send('bt_q1', 'via default'::text) IS NOT NULL AS sent;
SELECT convert_from(body, 'UTF8') AS body, exchange, routing_key
  FROM mq.consume('bt_q1', auto_ack => true);
-- the default exchange cannot be bound to explicitly
SELECT mq.bind('bt_q1', '');
SELECT mq.unbind('bt_q1', '');

-- idempotent declares
SELECT mq.queue_declare('bt_q1');
SELECT mq.exchange_declare('bt_x_direct', 'direct');
SELECT mq.exchange_declare('bt_x_direct', 'direct');
SELECT mq.exchange_declare('bt_x_direct');
SELECT mq.queue_declare('bt_args', arguments => '{"x-message-ttl": 60000}');
SELECT mq.queue_declare('bt_args', arguments => '{"x-message-ttl": 60000}');
SELECT count(*) FROM mq.exchanges WHERE exchange = 'bt_x_direct';
SELECT count(*) FROM mq.queues WHERE queue IN ('bt_q1', 'bt_args');

-- redeclare with a different type/arguments: error naming the difference
\set VERBOSITY default
SELECT mq.exchange_declare('bt_x_direct', 'fanout');
SELECT mq.exchange_declare('bt_x_direct', 'direct', durable => false);
SELECT mq.exchange_declare('bt_x_direct', 'direct', alternate_exchange => 'amq.fanout');
SELECT mq.queue_declare('bt_args', arguments => '{"x-message-ttl": 1000}');
SELECT mq.queue_declare('bt_args', arguments => '{}');
SELECT mq.queue_declare('bt_args', durable => false, arguments => '{"x-message-ttl": 60000}');
SELECT mq.queue_declare('bt_args', 'quorum', arguments => '{"x-message-ttl": 60000}');
SELECT mq.exchange_declare('amq.direct', 'fanout');
\set VERBOSITY sqlstate
-- redeclaring a predeclared exchange identically is fine
SELECT mq.exchange_declare('amq.topic', 'topic');
-- reserved names
SELECT mq.exchange_declare('amq.mine', 'direct');
SELECT mq.queue_declare('amq.mine');
SELECT mq.exchange_delete('amq.direct');
SELECT mq.exchange_delete('');

-- direct exchange: exact key match, one message per queue even with two
-- matching bindings
SELECT mq.queue_declare('bt_d1'), mq.queue_declare('bt_d2');
SELECT mq.bind('bt_d1', 'bt_x_direct', 'red');
SELECT mq.bind('bt_d1', 'bt_x_direct', 'red');   -- idempotent
SELECT mq.bind('bt_d2', 'bt_x_direct', 'red');
SELECT mq.bind('bt_d2', 'bt_x_direct', 'green');
SELECT exchange, queue, binding_key FROM mq.bindings
 WHERE exchange = 'bt_x_direct' ORDER BY queue, binding_key;
SELECT mq.publish('bt_x_direct', 'red', 'r1'::text) IS NOT NULL AS routed;
SELECT mq.publish('bt_x_direct', 'green', 'g1'::text) IS NOT NULL AS routed;
SELECT mq.publish('bt_x_direct', 'RED', 'nomatch'::text) IS NULL AS unroutable;
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bt_d1', 10, auto_ack => true) ORDER BY 2;
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bt_d2', 10, auto_ack => true) ORDER BY 2;
-- unbind
SELECT mq.unbind('bt_d2', 'bt_x_direct', 'green');
SELECT mq.publish('bt_x_direct', 'green', 'g2'::text) IS NULL AS unroutable;

-- fanout: routing key ignored
SELECT mq.exchange_declare('bt_x_fan', 'fanout');
SELECT mq.bind('bt_d1', 'bt_x_fan'), mq.bind('bt_d2', 'bt_x_fan', 'whatever');
SELECT mq.publish('bt_x_fan', 'any.key', 'f1'::text) IS NOT NULL AS routed;
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bt_d1', 10, auto_ack => true);
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bt_d2', 10, auto_ack => true);

-- topic: a few cases (the matcher is covered by sql/routing.sql)
SELECT mq.exchange_declare('bt_x_topic', 'topic');
SELECT mq.bind('bt_d1', 'bt_x_topic', 'stock.*.nyse');
SELECT mq.bind('bt_d2', 'bt_x_topic', 'stock.#');
SELECT rk, mq.publish('bt_x_topic', rk, rk) IS NOT NULL AS routed
  FROM unnest(ARRAY['stock.ibm.nyse', 'stock', 'stock.ibm.lse.x', 'bond.ibm.nyse']) rk;
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bt_d1', 10, auto_ack => true) ORDER BY 2;
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bt_d2', 10, auto_ack => true) ORDER BY 2;
-- bad topic binding keys are fine in RabbitMQ (any string); empty key matches empty rk
SELECT mq.bind('bt_d1', 'bt_x_topic', '');
SELECT mq.publish('bt_x_topic', '', 'empty'::text) IS NOT NULL AS routed;
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bt_d1', 10, auto_ack => true);

-- headers exchange: x-match all (default) / any
SELECT mq.exchange_declare('bt_x_hdr', 'headers');
SELECT mq.bind('bt_d1', 'bt_x_hdr', arguments => '{"format": "pdf", "type": "report"}');
SELECT mq.bind('bt_d2', 'bt_x_hdr', arguments => '{"x-match": "any", "format": "pdf", "type": "log"}');
SELECT h, mq.publish('bt_x_hdr', 'ignored', h::text, headers => h::jsonb) IS NOT NULL AS routed
  FROM unnest(ARRAY['{"format": "pdf", "type": "report"}', '{"format": "pdf"}',
                    '{"type": "log"}', '{"format": "zip", "type": "report"}']) h;
SELECT publish IS NULL AS unroutable FROM mq.publish('bt_x_hdr', '', 'noheaders'::text) publish;
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bt_d1', 10, auto_ack => true) ORDER BY 2;
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bt_d2', 10, auto_ack => true) ORDER BY 2;
-- bad x-match
SELECT mq.bind('bt_d1', 'bt_x_hdr', arguments => '{"x-match": "some"}');

-- alternate exchange: unroutable goes to the AE; mandatory unroutable is an error
SELECT mq.queue_declare('bt_unrouted');
SELECT mq.exchange_declare('bt_x_ae', 'fanout');
SELECT mq.bind('bt_unrouted', 'bt_x_ae');
SELECT mq.exchange_declare('bt_x_main', 'direct', alternate_exchange => 'bt_x_ae');
SELECT exchange, alternate_exchange FROM mq.exchanges WHERE exchange = 'bt_x_main';
SELECT mq.bind('bt_d1', 'bt_x_main', 'known');
SELECT mq.publish('bt_x_main', 'known', 'k'::text) IS NOT NULL AS routed;
SELECT mq.publish('bt_x_main', 'unknown', 'u'::text) IS NOT NULL AS routed_to_ae;
SELECT queue, convert_from(body, 'UTF8') AS body, exchange, routing_key
  FROM mq.consume('bt_d1', 10, auto_ack => true);
SELECT queue, convert_from(body, 'UTF8') AS body, exchange, routing_key
  FROM mq.consume('bt_unrouted', 10, auto_ack => true);
-- AE given in arguments, as RabbitMQ does
SELECT mq.exchange_declare('bt_x_main2', 'direct', arguments => '{"alternate-exchange": "bt_x_ae"}');
SELECT exchange, alternate_exchange, arguments FROM mq.exchanges WHERE exchange = 'bt_x_main2';
SELECT mq.exchange_declare('bt_x_bad', 'direct', arguments => '{"x-foo": 1}');
-- mandatory and nothing bound (AE of a direct exchange without match)
SELECT mq.publish('bt_x_direct', 'nowhere', 'm'::text, mandatory => true);
-- mandatory with an AE that routes: fine
SELECT mq.publish('bt_x_main', 'nowhere', 'm2'::text, mandatory => true) IS NOT NULL AS routed;
SELECT count(*) FROM mq.consume('bt_unrouted', 10, auto_ack => true);

-- deleting a queue removes its bindings; deleting an exchange removes its bindings
SELECT mq.queue_declare('bt_tmp');
SELECT mq.bind('bt_tmp', 'bt_x_direct', 'tmp');
SELECT mq.bind('bt_tmp', 'bt_x_fan');
SELECT count(*) FROM mq.bindings WHERE queue = 'bt_tmp';
SELECT mq.queue_delete('bt_tmp');
SELECT count(*) FROM mq.bindings WHERE queue = 'bt_tmp';
SELECT count(*) FROM mq.queues WHERE queue = 'bt_tmp';
SELECT mq.publish('bt_x_direct', 'tmp', 'gone'::text) IS NULL AS unroutable;
SELECT mq.exchange_declare('bt_x_tmp', 'fanout');
SELECT mq.bind('bt_d1', 'bt_x_tmp');
SELECT mq.exchange_delete('bt_x_tmp', if_unused => true);  -- in use: 55006
SELECT mq.exchange_delete('bt_x_tmp');
SELECT count(*) FROM mq.bindings WHERE exchange = 'bt_x_tmp';
SELECT count(*) FROM mq.exchanges WHERE exchange = 'bt_x_tmp';
SELECT mq.exchange_declare('bt_x_tmp', 'fanout');
SELECT mq.exchange_delete('bt_x_tmp', if_unused => true);  -- unused now
SELECT mq.exchange_delete('bt_x_tmp');                     -- gone: 42704

-- queue_delete if_empty / if_unused, returns the number of messages
SELECT mq.queue_declare('bt_del');
SELECT mq.send('bt_del', 'one'::text) IS NOT NULL AS sent;
SELECT mq.send('bt_del', 'two'::text) IS NOT NULL AS sent;
SELECT mq.queue_delete('bt_del', if_empty => true);   -- 55006
SELECT mq.queue_purge('bt_del');
SELECT mq.queue_delete('bt_del', if_empty => true);
SELECT mq.queue_declare('bt_del2');
SELECT mq.send('bt_del2', 'x'::text) IS NOT NULL AS sent;
BEGIN;
SELECT count(*) FROM mq.consume('bt_del2');
SELECT mq.queue_delete('bt_del2', if_unused => true); -- has a consumer: 55006
ROLLBACK;
SELECT mq.queue_delete('bt_del2', if_unused => true);
SELECT mq.queue_delete('bt_del2');                    -- gone: 42704

-- queue arguments: unknown or malformed -> 22023
SELECT mq.queue_declare('bt_bad', arguments => '{"x-unknown": 1}');
SELECT mq.queue_declare('bt_bad', arguments => '{"x-message-ttl": -1}');
SELECT mq.queue_declare('bt_bad', arguments => '{"x-message-ttl": "10"}');
SELECT mq.queue_declare('bt_bad', arguments => '{"x-message-ttl": 1.5}');
SELECT mq.queue_declare('bt_bad', arguments => '{"x-max-length": 99999999999}');
SELECT mq.queue_declare('bt_bad', arguments => '{"x-overflow": "drop-tail"}');
SELECT mq.queue_declare('bt_bad', arguments => '{"x-dead-letter-exchange": 5}');
SELECT mq.queue_declare('bt_bad', arguments => '{"x-max-priority": 0}');
SELECT mq.queue_declare('bt_bad', arguments => '{"x-max-priority": 256}');
SELECT mq.queue_declare('bt_bad', arguments => '[1]');
SELECT mq.queue_declare('bt_bad', 'classic', arguments => '{"x-queue-type": "quorum"}');
SELECT mq.queue_declare('bt_bad', 'fifo');
SELECT mq.queue_declare('bt_bad', 'stream', durable => false);	-- 22023: streams are durable
SELECT mq.queue_declare('bt_bad', 'quorum', durable => false);
SELECT mq.queue_declare('bt_bad', 'quorum', arguments => '{"x-max-priority": 5}');
SELECT mq.exchange_declare('bt_bad', 'x-custom');
SELECT count(*) FROM mq.queues WHERE queue = 'bt_bad';
SELECT count(*) FROM mq.exchanges WHERE exchange = 'bt_bad';
-- x-queue-type agreeing with type is accepted and not stored
SELECT mq.queue_declare('bt_qt', arguments => '{"x-queue-type": "classic"}');
SELECT queue, type, arguments FROM mq.queues WHERE queue = 'bt_qt';

-- durable => false queues and exchanges
SELECT mq.queue_declare('bt_transient', durable => false);
SELECT mq.exchange_declare('bt_x_transient', 'fanout', durable => false);
SELECT queue, type, durable FROM mq.queues WHERE queue = 'bt_transient';
SELECT exchange, durable FROM mq.exchanges WHERE exchange = 'bt_x_transient';
SELECT c.relpersistence FROM mq.cat_queue q, unnest(q.lanes) l, pg_class c
 WHERE q.name = 'bt_transient' AND c.oid = l;
SELECT mq.bind('bt_transient', 'bt_x_transient');
SELECT mq.publish('bt_x_transient', '', 'tr'::text) IS NOT NULL AS routed;
SELECT convert_from(body, 'UTF8') FROM mq.consume('bt_transient', auto_ack => true);

-- quorum queue: no synchronous standby here -> the publish fails (53000,
-- mq.quorum_unavailable = error, the default); with wait it commits
-- locally (warned once per server: quorum_standby); 0.1's
-- mq.quorum_requires_standby = on still means error
SELECT mq.queue_declare('bt_quorum', 'quorum');
SELECT queue, type, durable, quorum_met FROM mq.queues WHERE queue = 'bt_quorum';
SELECT mq.send('bt_quorum', 'q0'::text) IS NOT NULL AS sent;
SET mq.quorum_unavailable = wait;
SET client_min_messages = error;
SELECT mq.send('bt_quorum', 'q1'::text) IS NOT NULL AS sent;
RESET client_min_messages;
SET mq.quorum_requires_standby = on;
SELECT mq.send('bt_quorum', 'q2'::text) IS NOT NULL AS sent;
RESET mq.quorum_requires_standby;
RESET mq.quorum_unavailable;
SELECT ready FROM mq.queues WHERE queue = 'bt_quorum';

-- clean up
SELECT mq.queue_delete(q) FROM unnest(ARRAY['bt_q1', 'bt_args', 'bt_d1', 'bt_d2',
	'bt_unrouted', 'bt_qt', 'bt_transient', 'bt_quorum']) q ORDER BY q;
SELECT mq.exchange_delete(x) FROM unnest(ARRAY['bt_x_direct', 'bt_x_fan', 'bt_x_topic',
	'bt_x_hdr', 'bt_x_main', 'bt_x_main2', 'bt_x_ae', 'bt_x_transient']) x ORDER BY x;
SELECT count(*) FROM mq.queues WHERE queue LIKE 'bt\_%';
SELECT count(*) FROM mq.exchanges WHERE exchange LIKE 'bt\_%';
SELECT count(*) FROM mq.bindings WHERE queue LIKE 'bt\_%';
