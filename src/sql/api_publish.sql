------------------------------------------------------------------------
-- Public API: publish (src/publish_sql.c)
------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION mq.publish(exchange text, routing_key text, body bytea,
	headers jsonb DEFAULT NULL, mandatory boolean DEFAULT false,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_sql' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.publish(exchange text, routing_key text, body text,
	headers jsonb DEFAULT NULL, mandatory boolean DEFAULT false,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_sql' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.publish(exchange text, routing_key text, body jsonb,
	headers jsonb DEFAULT NULL, mandatory boolean DEFAULT false,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_sql' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.send(queue text, body bytea, headers jsonb DEFAULT NULL,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_send' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.send(queue text, body text, headers jsonb DEFAULT NULL,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_send' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.send(queue text, body jsonb, headers jsonb DEFAULT NULL,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_send' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.publish_batch(exchange text, routing_keys text[], bodies bytea[],
	headers jsonb[] DEFAULT NULL, mandatory boolean DEFAULT false,
	durability text DEFAULT NULL, delay interval DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL, tags text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_publish_batch' LANGUAGE C;
CREATE OR REPLACE FUNCTION mq.publish_batch(exchange text, routing_keys text[], bodies text[],
	headers jsonb[] DEFAULT NULL, mandatory boolean DEFAULT false,
	durability text DEFAULT NULL, delay interval DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL, tags text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_publish_batch' LANGUAGE C;
CREATE OR REPLACE FUNCTION mq.publish_batch(exchange text, routing_keys text[], bodies jsonb[],
	headers jsonb[] DEFAULT NULL, mandatory boolean DEFAULT false,
	durability text DEFAULT NULL, delay interval DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL, tags text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_publish_batch' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.send_batch(queue text, bodies bytea[], headers jsonb[] DEFAULT NULL,
	delay interval DEFAULT NULL, durability text DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL, tags text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_send_batch' LANGUAGE C;
CREATE OR REPLACE FUNCTION mq.send_batch(queue text, bodies text[], headers jsonb[] DEFAULT NULL,
	delay interval DEFAULT NULL, durability text DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL, tags text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_send_batch' LANGUAGE C;
CREATE OR REPLACE FUNCTION mq.send_batch(queue text, bodies jsonb[], headers jsonb[] DEFAULT NULL,
	delay interval DEFAULT NULL, durability text DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL, tags text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_send_batch' LANGUAGE C;

