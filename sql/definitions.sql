--
-- definitions: RabbitMQ definitions import and export (mq.definitions_import,
-- mq.definitions_export).  The round trip through a real RabbitMQ is TAP
-- test 036.  Names start with "df_".
--
\set VERBOSITY sqlstate
-- not an object: 22023; a NULL vhost: 22004
SELECT * FROM mq.definitions_import('[]');
SELECT * FROM mq.definitions_import(NULL);
SELECT * FROM mq.definitions_import('{}', NULL);
-- nothing in it: nothing to say
SELECT * FROM mq.definitions_import('{}');

\set VERBOSITY terse
SELECT * FROM mq.definitions_import($${
 "rabbit_version": "3.10.8", "future_section": [],
 "vhosts": [{"name": "/"}, {"name": "df_other"}],
 "users": [{"name": "guest", "tags": ["administrator"]}, {"name": "df_app", "tags": []},
           {"name": "df_ops", "tags": ["administrator"]}],
 "permissions": [{"user": "df_app", "vhost": "/", "configure": "^$", "write": "^df_orders$",
                  "read": "^df_(jobs|events)$"},
                 {"user": "df_nobody", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"},
                 {"user": "df_app", "vhost": "df_other", "configure": ".*", "write": ".*", "read": ".*"}],
 "topic_permissions": [{"user": "df_app", "vhost": "/", "exchange": "df_orders", "write": ".*", "read": ".*"}],
 "parameters": [{"vhost": "/", "component": "shovel", "name": "df_shovel", "value": {}}],
 "global_parameters": [{"name": "cluster_name", "value": "rabbit@x"}],
 "policies": [{"vhost": "/", "name": "df_dlx", "pattern": "^df_jobs$", "apply-to": "queues",
               "definition": {"dead-letter-exchange": "df_dead", "ha-mode": "all"}, "priority": 1},
              {"vhost": "/", "name": "df_low", "pattern": "^df_", "apply-to": "queues",
               "definition": {"max-length": 5}, "priority": 0}],
 "exchanges": [
  {"name": "df_orders", "vhost": "/", "type": "topic", "durable": true, "auto_delete": false,
   "internal": false, "arguments": {"alternate-exchange": "df_unrouted"}},
  {"name": "df_unrouted", "vhost": "/", "type": "fanout", "durable": true, "auto_delete": false,
   "internal": false, "arguments": {}},
  {"name": "df_dead", "vhost": "/", "type": "fanout", "durable": true, "auto_delete": false,
   "internal": true, "arguments": {}},
  {"name": "df_later", "vhost": "/", "type": "x-delayed-message", "durable": true,
   "auto_delete": false, "internal": false, "arguments": {"x-delayed-type": "direct"}},
  {"name": "df_hash", "vhost": "/", "type": "x-consistent-hash", "durable": true,
   "auto_delete": false, "internal": false, "arguments": {}},
  {"name": "amq.topic", "vhost": "/", "type": "topic", "durable": true, "auto_delete": false,
   "internal": false, "arguments": {}},
  {"name": "df_far", "vhost": "df_other", "type": "fanout", "durable": true,
   "auto_delete": false, "internal": false, "arguments": {}}],
 "queues": [
  {"name": "df_jobs", "vhost": "/", "durable": true, "auto_delete": false,
   "arguments": {"x-queue-type": "classic", "x-max-length": 1000, "x-overflow": "reject-publish",
                 "x-queue-mode": "lazy"}},
  {"name": "df_payments", "vhost": "/", "durable": true, "auto_delete": false, "type": "quorum",
   "arguments": {"x-queue-type": "quorum", "x-delivery-limit": 5, "x-max-priority": 3,
                 "x-quorum-initial-group-size": 3}},
  {"name": "df_events", "vhost": "/", "durable": true, "auto_delete": false,
   "arguments": {"x-queue-type": "stream", "x-max-age": "7D", "x-max-length-bytes": 1000000,
                 "x-stream-max-segment-size-bytes": 500000}},
  {"name": "df_badage", "vhost": "/", "durable": true, "auto_delete": false,
   "arguments": {"x-queue-type": "stream", "x-max-age": "7 days"}},
  {"name": "df_bigage", "vhost": "/", "durable": true, "auto_delete": false,
   "arguments": {"x-queue-type": "stream", "x-max-age": "1000000Y"}},
  {"name": "df_temp", "vhost": "/", "durable": false, "auto_delete": true, "arguments": {}},
  {"name": "df_bad", "vhost": "/", "durable": true, "auto_delete": false,
   "arguments": {"x-max-length": "many"}},
  {"name": "df_odd", "vhost": "/", "durable": true, "auto_delete": false,
   "arguments": {"x-queue-type": "delayed"}},
  {"name": "df_far", "vhost": "df_other", "durable": true, "auto_delete": false, "arguments": {}}],
 "bindings": [
  {"source": "df_orders", "vhost": "/", "destination": "df_jobs", "destination_type": "queue",
   "routing_key": "order.*.created", "arguments": {}},
  {"source": "df_orders", "vhost": "/", "destination": "df_payments", "destination_type": "queue",
   "routing_key": "order.#", "arguments": {}},
  {"source": "df_orders", "vhost": "/", "destination": "df_unrouted", "destination_type": "exchange",
   "routing_key": "#", "arguments": {}},
  {"source": "df_dead", "vhost": "/", "destination": "df_nosuch", "destination_type": "queue",
   "routing_key": "", "arguments": {}}]
}$$) ORDER BY 1, 2, 3, 4;
\set VERBOSITY sqlstate

SELECT queue, type, durable, arguments FROM mq.queues WHERE queue LIKE 'df\_%' ORDER BY 1;
SELECT exchange, type, alternate_exchange FROM mq.exchanges WHERE exchange LIKE 'df\_%' ORDER BY 1;
SELECT * FROM mq.bindings WHERE exchange LIKE 'df\_%' ORDER BY 1, 2, 3;
SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname LIKE 'df\_%' ORDER BY 1;
-- the topology works: a publish to df_orders reaches df_jobs and df_payments
-- (a quorum queue: no standby here)
SET mq.quorum_unavailable = wait;
SET client_min_messages = error;	-- its warning comes once per server
SELECT mq.publish('df_orders', 'order.eu.created', 'o1') IS NOT NULL AS published;
RESET client_min_messages;
SELECT queue, ready FROM mq.queues WHERE queue IN ('df_jobs', 'df_payments') ORDER BY 1;
-- and df_app may publish and consume as granted, not more
SET ROLE df_app;
SELECT mq.publish('df_orders', 'order.us.created', 'o2') IS NOT NULL AS published;
SELECT convert_from(body, 'UTF8') FROM mq.consume('df_jobs', 1, auto_ack => true);
SELECT count(*) FROM mq.consume('df_payments', 1, auto_ack => true);
RESET ROLE;

-- importing again changes nothing: everything exists
SELECT action, kind, name, detail FROM mq.definitions_import(
	jsonb_build_object('queues', (SELECT jsonb_agg(q) FROM jsonb_array_elements(mq.definitions_export()->'queues') q
								   WHERE q->>'name' LIKE 'df\_%'),
					   'exchanges', mq.definitions_export()->'exchanges',
					   'bindings', mq.definitions_export()->'bindings'))
	WHERE action <> 'exists' ORDER BY 1, 2, 3;

-- the export, in RabbitMQ's format (what an import into RabbitMQ reads)
SELECT q FROM jsonb_array_elements(mq.definitions_export()->'queues') q
	WHERE q->>'name' LIKE 'df\_%' ORDER BY q->>'name';
SELECT e FROM jsonb_array_elements(mq.definitions_export()->'exchanges') e
	WHERE e->>'name' LIKE 'df\_%' ORDER BY e->>'name';
SELECT b FROM jsonb_array_elements(mq.definitions_export()->'bindings') b
	WHERE b->>'source' LIKE 'df\_%' ORDER BY 1;
SELECT mq.definitions_export() ?& ARRAY['vhosts', 'queues', 'exchanges', 'bindings', 'users',
	'permissions', 'policies', 'parameters', 'global_parameters'] AS sections;

-- an empty or missing permission pattern grants nothing (RabbitMQ's rule,
-- same as "^$"); a non-empty one grants what it matches, no more
SELECT kind, name, action, detail FROM mq.definitions_import($${
 "users": [{"name": "df_empty"}, {"name": "df_missing"}, {"name": "df_some"}],
 "permissions": [{"user": "df_empty", "vhost": "/", "configure": "", "write": "", "read": ""},
                 {"user": "df_missing", "vhost": "/"},
                 {"user": "df_some", "vhost": "/", "configure": "", "write": "^df_jobs$",
                  "read": "^df_(jobs|events)$"}]
}$$) ORDER BY 1, 2, 3, 4;
SET ROLE df_empty;
SELECT count(*) FROM mq.consume('df_jobs', 1);
SELECT mq.publish('df_orders', 'order.eu.created', 'o3');
RESET ROLE;
SET ROLE df_missing;
SELECT count(*) FROM mq.consume('df_jobs', 1);
RESET ROLE;

SELECT count(*) FROM (SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue LIKE 'df\_%') d;
SELECT count(*) FROM (SELECT mq.exchange_delete(exchange) FROM mq.exchanges
	WHERE exchange LIKE 'df\_%' ORDER BY exchange = 'df_unrouted') d;
DROP OWNED BY df_app, df_ops, df_empty, df_missing, df_some;
DROP ROLE df_app, df_ops, df_empty, df_missing, df_some;
