------------------------------------------------------------------------
-- Public API: consume and settle (src/consume_sql.c, src/settle_sql.c)
------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION mq.consume(queue text, max_messages int DEFAULT 1,
	wait interval DEFAULT '0', lease interval DEFAULT '30 seconds',
	group_name text DEFAULT NULL, consumer text DEFAULT NULL,
	auto_ack boolean DEFAULT false, prefetch int DEFAULT NULL,
	session_bound boolean DEFAULT true)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb, reconsume_times int,
	receipt text)
AS 'MODULE_PATHNAME', 'mq_consume' LANGUAGE C;

-- the mq.consume that session pid waits in returns now, without an error
-- (mq-amqp's basic.cancel); only a role with the privileges of that
-- session's role may wake it
CREATE OR REPLACE FUNCTION mq._consume_wake(pid int)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mq_consume_wake' LANGUAGE C STRICT VOLATILE;

-- body_text: the body as text, NULL when it is not valid in the database
-- encoding (binary)
CREATE OR REPLACE FUNCTION mq.browse(queue text, max_messages int DEFAULT 10)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb, body_text text)
AS 'MODULE_PATHNAME', 'mq_browse' LANGUAGE C;

-- browse of every ready message, however many (queue_ext_pgmq's view
-- pgmq.q_<name>); it holds the queue's lock while it reads the backlog
CREATE OR REPLACE FUNCTION mq._browse_all(queue text)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb, body_text text)
AS 'MODULE_PATHNAME', 'mq_browse_all' LANGUAGE C;

-- Stateless read of a stream partition by offset or time (src/stream_sql.c)
CREATE OR REPLACE FUNCTION mq.read(queue text, "partition" int, from_offset bigint DEFAULT NULL,
	max_messages int DEFAULT 100, from_time timestamptz DEFAULT NULL)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb, reconsume_times int,
	receipt text)
AS 'MODULE_PATHNAME', 'mq_read' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.message(msg_id bigint)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb)
AS 'MODULE_PATHNAME', 'mq_message' LANGUAGE C ROWS 1;

-- where a stream message is: its stream, partition and offset (a message
-- kept inline from any session; one kept in the log in the transaction
-- that sent it), for a role that may publish to or consume from the stream
CREATE OR REPLACE FUNCTION mq.message_position(msg_id bigint)
RETURNS TABLE (queue text, "partition" int, "offset" bigint)
AS 'MODULE_PATHNAME', 'mq_message_position' LANGUAGE C ROWS 1;

-- the offset of a message in its one stream (NULL when none or several are
-- known), the scalar form of mq.message_position: a send and its offset in
-- one statement without a FunctionScan (mq-rocketmq's SendMessage).
-- PARALLEL RESTRICTED: it reads this transaction's note of its appends,
-- which a parallel worker does not have.
CREATE OR REPLACE FUNCTION mq.message_offset(msg_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'mq_message_offset' LANGUAGE C STRICT PARALLEL RESTRICTED;

CREATE OR REPLACE FUNCTION mq.messages_by_key(key text, max_messages int DEFAULT 10)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb)
AS 'MODULE_PATHNAME', 'mq_messages_by_key' LANGUAGE C;

-- BEGIN pgmq support (issue 15, queue_ext_pgmq): leases by id
-- Lease messages by id whoever holds them (a visibility timeout that
-- belongs to nobody, as pgmq's vt): lease '0' makes them ready at once;
-- deliver => true takes only ready ones, as a delivery (src/consume_sql.c)
CREATE OR REPLACE FUNCTION mq.lease_ids(queue text, msg_ids bigint[],
	lease interval DEFAULT '30 seconds', deliver boolean DEFAULT false)
RETURNS TABLE (msg_id bigint, delivery_count int, was_leased boolean,
	was_until timestamptz)
AS 'MODULE_PATHNAME', 'mq_lease_ids' LANGUAGE C;
-- What is leased now, by anyone, with lease ends
CREATE OR REPLACE FUNCTION mq.in_flight(queue text, max_messages int DEFAULT 1000)
RETURNS TABLE (msg_id bigint, delivery_count int, lease_until timestamptz)
AS 'MODULE_PATHNAME', 'mq_in_flight' LANGUAGE C;
-- Ack the message of each business key (the newest sent to the queue),
-- whoever holds it, ready ones too: pgmq's delete by msg_id in one call
CREATE OR REPLACE FUNCTION mq.ack_keys(queue text, keys text[])
RETURNS TABLE (key text, msg_id bigint)
AS 'MODULE_PATHNAME', 'mq_ack_keys' LANGUAGE C;
-- END pgmq support

-- BEGIN broadcast consumer groups (issue 12, stream-broadcast): DDL block 3/3
-- (changed: mq.ack, mq.nack and mq.extend_lease gained a trailing
-- consumer text DEFAULT NULL, the consumer of a broadcast group)
CREATE OR REPLACE FUNCTION mq.ack(queue text, msg_ids bigint[] DEFAULT NULL,
	group_name text DEFAULT NULL, consumer text DEFAULT NULL,
	receipts text[] DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'mq_ack' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.nack(queue text, msg_ids bigint[] DEFAULT NULL,
	requeue boolean DEFAULT true, delay interval DEFAULT NULL,
	group_name text DEFAULT NULL, consumer text DEFAULT NULL,
	receipts text[] DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'mq_nack' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.reject(queue text, msg_id bigint DEFAULT NULL,
	requeue boolean DEFAULT true, receipt text DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'mq_reject' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.extend_lease(queue text, msg_ids bigint[] DEFAULT NULL,
	lease interval DEFAULT '30 seconds', group_name text DEFAULT NULL,
	consumer text DEFAULT NULL, receipts text[] DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'mq_extend_lease' LANGUAGE C;
-- END broadcast consumer groups: DDL block 3/3
