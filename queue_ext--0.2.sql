/* queue_ext--0.2.sql: install script for queue_ext 0.2 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION queue_ext" to load this file. \quit

-- BEGIN lz4 for this script's catalog values (bench/README.md "Stream publish
-- at 1 msg/txn: the profile").  Every call of a function with DEFAULT
-- arguments reads them from pg_proc.proargdefaults twice (parser and
-- planner); mq.send's fifteen are stored compressed, and pglz decompression
-- was 6% of a single-message publish's instructions.  Where the server has
-- lz4, what this script stores compressed uses it (decompressing about
-- five times faster); the setting is put back at the end of the script.
SELECT pg_catalog.set_config('queue_ext.saved_toast_compression',
		pg_catalog.current_setting('default_toast_compression'), true),
	pg_catalog.set_config('default_toast_compression', 'lz4', true)
FROM pg_catalog.pg_settings
WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals);
-- END lz4 (the setting is restored at the end of the script)

-- Schema mq is created by CREATE EXTENSION (control file: schema = mq).
-- Nothing in it is usable by ordinary roles unless granted below.
REVOKE ALL ON SCHEMA mq FROM PUBLIC;
GRANT USAGE ON SCHEMA mq TO PUBLIC;

------------------------------------------------------------------------
-- The mqlog table access method (src/am/)
------------------------------------------------------------------------
CREATE FUNCTION mq.mqlog_handler(internal)
RETURNS table_am_handler
AS 'MODULE_PATHNAME', 'mqlog_handler'
LANGUAGE C STRICT;

CREATE ACCESS METHOD mqlog TYPE TABLE HANDLER mq.mqlog_handler;
COMMENT ON ACCESS METHOD mqlog IS 'append-only, WAL-logged message log';

-- Structural check of an mqlog table (amcheck-style); one row per problem.
-- Public functions are not STRICT: a NULL argument is an error (22004),
-- raised in C, rather than a silent NULL result.
CREATE FUNCTION mq.mqlog_verify(rel regclass)
RETURNS TABLE(blkno bigint, offnum integer, msg text)
AS 'MODULE_PATHNAME', 'mqlog_verify'
LANGUAGE C;
REVOKE ALL ON FUNCTION mq.mqlog_verify(regclass) FROM PUBLIC;

-- The rows of one page, decoded (pageinspect's heap_page_items for mqlog).
CREATE FUNCTION mq.mqlog_page_items(rel regclass, blkno bigint)
RETURNS TABLE(lp integer, lp_off integer, lp_len integer, xmin xid,
			  cmin bigint, natts integer, nulls text, data_len integer)
AS 'MODULE_PATHNAME', 'mqlog_page_items'
LANGUAGE C;
REVOKE ALL ON FUNCTION mq.mqlog_page_items(regclass, bigint) FROM PUBLIC;

-- end of mqlog section

------------------------------------------------------------------------
-- Broker catalog (src/catalog.c caches it per backend)
------------------------------------------------------------------------
CREATE TABLE mq.cat_exchange (
	id			serial PRIMARY KEY,
	name		text NOT NULL UNIQUE,
	type		text NOT NULL,
	durable		boolean NOT NULL,
	alternate_exchange text,
	arguments	jsonb NOT NULL DEFAULT '{}',
	owner		oid NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE mq.cat_queue (
	id			serial PRIMARY KEY,
	name		text NOT NULL UNIQUE,
	type		text NOT NULL,
	durable		boolean NOT NULL,
	arguments	jsonb NOT NULL DEFAULT '{}',
	lanes		oid[] NOT NULL,		-- first entry log of each priority lane (identity)
	owner		oid NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE mq.cat_binding (
	exchange_id int NOT NULL REFERENCES mq.cat_exchange ON DELETE CASCADE,
	queue_id	int NOT NULL REFERENCES mq.cat_queue ON DELETE CASCADE,
	binding_key text NOT NULL,
	arguments	jsonb NOT NULL DEFAULT '{}',
	PRIMARY KEY (exchange_id, queue_id, binding_key, arguments)
);

-- Message log segments: mqlog tables holding a contiguous range of ids
CREATE TABLE mq.cat_segment (
	segno		bigint PRIMARY KEY,
	relid		oid NOT NULL,
	durable		boolean NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);

-- Stream messages kept in their own entry rows (inline, src/queue/queue.h):
-- every entry log generation of a stream has a segment number of its own,
-- from a range apart from the message log's segments, so that the id of a
-- message kept in an entry row is a log address like any other
-- (segno << 26 | block << 9 | offset, src/msglog.h).  Ids stay below 2^53,
-- which a JSON number holds exactly.
CREATE SEQUENCE mq.inline_segno MINVALUE 67108864 MAXVALUE 134217727 START 67108864;
CREATE TABLE mq.cat_inline (
	segno		bigint PRIMARY KEY,
	relid		oid NOT NULL UNIQUE,
	queue_id	int NOT NULL,
	lane		int NOT NULL,
	gen			int NOT NULL
);
REVOKE ALL ON mq.cat_inline FROM PUBLIC;
REVOKE ALL ON SEQUENCE mq.inline_segno FROM PUBLIC;

-- Privileges on queues and exchanges (owners have all of them)
CREATE TABLE mq.cat_grant (
	object_kind "char" NOT NULL,	-- 'q' queue, 'x' exchange
	object_id	int NOT NULL,
	grantee		oid NOT NULL,
	privilege	text NOT NULL CHECK (privilege IN ('configure', 'publish', 'consume')),
	PRIMARY KEY (object_kind, object_id, grantee, privilege)
);

-- named consumers' settings (mq.consumer_declare); prefetch 0 = no limit
CREATE TABLE mq.cat_consumer (
	queue_id	int NOT NULL,
	consumer	text NOT NULL,
	prefetch	int NOT NULL CHECK (prefetch >= 0),
	PRIMARY KEY (queue_id, consumer)
);

-- consumer groups of stream queues (mq.group_declare); their progress is
-- in their settlement logs g<queue_id>_<id>_<lane>_<gen> (src/queue/queue_group.c)
CREATE TABLE mq.cat_group (
	id			serial PRIMARY KEY,
	queue_id	int NOT NULL,
	name		text NOT NULL,
	mode		text NOT NULL,
	start		text NOT NULL,
	filter		text,
	filter_type	text NOT NULL,
	ordered		boolean NOT NULL,
	max_retries	int NOT NULL,
	retry_delays interval[],
	created_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	UNIQUE (queue_id, name)
);

REVOKE ALL ON ALL TABLES IN SCHEMA mq FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA mq FROM PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('mq.cat_exchange', '');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_queue', '');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_binding', '');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_grant', '');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_consumer', '');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group', '');

-- BEGIN broadcast consumer groups (issue 12, stream-broadcast): DDL block 1/3
-- The consumers of broadcast groups: each (group, consumer name) is a queue
-- state of its own, like a clustering group, with its own settlement logs
-- g<queue_id>_<id>_<lane>_<gen>; its id comes from mq.cat_group's sequence,
-- so the log names of groups and consumers never collide.  Made at a
-- consumer's first mq.consume (mq._group_consumer_create).
CREATE TABLE mq.cat_group_consumer (
	id			int PRIMARY KEY DEFAULT pg_catalog.nextval('mq.cat_group_id_seq'),
	group_id	int NOT NULL REFERENCES mq.cat_group ON DELETE CASCADE,
	consumer	text NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	UNIQUE (group_id, consumer)
);
REVOKE ALL ON mq.cat_group_consumer FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group_consumer', '');
-- END broadcast consumer groups: DDL block 1/3

-- end of broker catalog section

------------------------------------------------------------------------
-- Topology: declare / delete / bind
--
-- Public functions are C (src/topology.c): they check the caller's
-- privileges in C, then run the internal implementation below through SPI
-- as the extension owner.  The _impl functions are not executable by PUBLIC.
------------------------------------------------------------------------

-- Validate the arguments of a stream queue (partitions, retention,
-- max_bytes, durability); classic-queue arguments are refused.
CREATE FUNCTION mq._stream_args_check(queue text, arguments jsonb)
RETURNS jsonb LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	k text;
	v jsonb;
	iv interval;
	known constant text[] := ARRAY['partitions', 'retention', 'max_bytes', 'durability',
		'x-queue-type'];
BEGIN
	FOR k, v IN SELECT * FROM jsonb_each(arguments) LOOP
		IF k LIKE 'x-%' AND k <> 'x-queue-type' THEN
			RAISE EXCEPTION 'argument "%" is not supported by stream queue "%"', k, queue
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Stream queues take partitions, retention, max_bytes and durability.';
		ELSIF NOT k = ANY (known) THEN
			RAISE EXCEPTION 'unknown argument "%" for stream queue "%"', k, queue
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Stream queues take partitions, retention, max_bytes and durability.';
		END IF;
		IF k = 'partitions' THEN
			-- a partition is a lane, and a queue has at most 256 lanes
			IF jsonb_typeof(v) <> 'number' OR v::text ~ '[.eE]' OR v::numeric < 1
			   OR v::numeric > 256 THEN
				RAISE EXCEPTION 'invalid value % for argument "partitions" of stream queue "%"', v, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The number of partitions must be an integer between 1 and 256.';
			END IF;
		ELSIF k = 'max_bytes' THEN
			IF jsonb_typeof(v) <> 'number' OR v::text ~ '[.eE]' OR v::numeric < 1
			   OR v::numeric > 9223372036854775807 THEN
				RAISE EXCEPTION 'invalid value % for argument "max_bytes" of stream queue "%"', v, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The value must be a positive integer (bytes).';
			END IF;
		ELSIF k = 'retention' THEN
			BEGIN
				IF jsonb_typeof(v) <> 'string' THEN
					RAISE invalid_text_representation;
				END IF;
				iv := (v #>> '{}')::interval;
			EXCEPTION WHEN invalid_text_representation OR invalid_datetime_format
					  OR datetime_field_overflow OR interval_field_overflow THEN
				RAISE EXCEPTION 'invalid value % for argument "retention" of stream queue "%"', v, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The value must be a positive interval, such as "72 hours".';
			END;
			IF iv <= interval '0' OR extract(epoch FROM iv) > 9223372036854.775807 THEN
				RAISE EXCEPTION 'invalid value % for argument "retention" of stream queue "%"', v, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The value must be a positive interval, such as "72 hours".';
			END IF;
		ELSIF k = 'durability' THEN
			IF jsonb_typeof(v) <> 'string' OR v #>> '{}' NOT IN ('local', 'quorum') THEN
				RAISE EXCEPTION 'invalid value % for argument "durability" of stream queue "%"', v, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'Supported values are "local" and "quorum".';
			END IF;
		ELSIF k = 'x-queue-type' THEN
			IF jsonb_typeof(v) <> 'string' OR v #>> '{}' <> 'stream' THEN
				RAISE EXCEPTION 'argument "x-queue-type" % of queue "%" contradicts type "stream"', v, queue
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
		END IF;
	END LOOP;
	RETURN arguments - 'x-queue-type';
END
$$;

-- Validate and normalise queue arguments; raises on anything unknown.
CREATE FUNCTION mq._queue_args_check(queue text, type text, arguments jsonb)
RETURNS jsonb LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	k text;
	v jsonb;
	known constant text[] := ARRAY['x-message-ttl', 'x-max-length', 'x-max-length-bytes', 'x-overflow',
		'x-dead-letter-exchange', 'x-dead-letter-routing-key', 'x-delivery-limit',
		'x-max-priority', 'x-queue-type', 'ordered'];
BEGIN
	IF arguments IS NULL THEN
		RETURN '{}';
	END IF;
	IF jsonb_typeof(arguments) <> 'object' THEN
		RAISE EXCEPTION 'arguments of queue "%" must be a JSON object', queue
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF type = 'stream' THEN
		RETURN mq._stream_args_check(queue, arguments);
	END IF;
	FOR k, v IN SELECT * FROM jsonb_each(arguments) LOOP
		IF NOT k = ANY (known) THEN
			RAISE EXCEPTION 'unknown argument "%" for queue "%"', k, queue
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Supported arguments: ' || array_to_string(known, ', ') || '.';
		END IF;
		IF k = 'x-delivery-limit' THEN
			-- a negative limit is none (RabbitMQ 4: -1)
			IF jsonb_typeof(v) <> 'number' OR v::text ~ '[.eE]' OR v::numeric < -2147483648
			   OR v::numeric > 2147483647 THEN
				RAISE EXCEPTION 'invalid value % for argument "%" of queue "%"', v, k, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The value must be an integer; a negative one means no limit.';
			END IF;
		ELSIF k IN ('x-message-ttl', 'x-max-length', 'x-max-priority') THEN
			IF jsonb_typeof(v) <> 'number' OR v::text ~ '[.eE]' OR v::numeric < 0
			   OR v::numeric > 2147483647 THEN
				RAISE EXCEPTION 'invalid value % for argument "%" of queue "%"', v, k, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The value must be a non-negative integer.';
			END IF;
			IF k = 'x-max-priority' AND (v::int < 1 OR v::int > 255) THEN
				RAISE EXCEPTION 'invalid value % for argument "x-max-priority" of queue "%"', v, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The maximum priority must be between 1 and 255.';
			END IF;
		ELSIF k = 'x-max-length-bytes' THEN
			-- total body bytes of ready messages: a bigint
			IF jsonb_typeof(v) <> 'number' OR v::text ~ '[.eE]' OR v::numeric < 0
			   OR v::numeric > 9223372036854775807 THEN
				RAISE EXCEPTION 'invalid value % for argument "%" of queue "%"', v, k, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The value must be a non-negative integer.';
			END IF;
		ELSIF k = 'x-overflow' THEN
			IF jsonb_typeof(v) <> 'string'
			   OR v #>> '{}' NOT IN ('drop-head', 'reject-publish', 'reject-publish-dlx') THEN
				RAISE EXCEPTION 'invalid value % for argument "x-overflow" of queue "%"', v, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'Supported values are "drop-head", "reject-publish" and "reject-publish-dlx".';
			END IF;
		ELSIF k = 'ordered' THEN
			-- messages of one message_group delivered in order, one at a time
			IF jsonb_typeof(v) <> 'boolean' THEN
				RAISE EXCEPTION 'invalid value % for argument "ordered" of queue "%"', v, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The value must be true or false.';
			END IF;
			IF v = 'true' AND arguments ? 'x-max-priority' THEN
				RAISE EXCEPTION 'queue "%" cannot be both ordered and a priority queue', queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'An ordered queue delivers the messages of a message group in publish order, whatever their priority.';
			END IF;
		ELSIF k = 'x-queue-type' THEN
			IF jsonb_typeof(v) <> 'string' OR v #>> '{}' <> type THEN
				RAISE EXCEPTION 'argument "x-queue-type" % of queue "%" contradicts type "%"', v, queue, type
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
		ELSE
			IF jsonb_typeof(v) <> 'string' THEN
				RAISE EXCEPTION 'invalid value % for argument "%" of queue "%"', v, k, queue
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'The value must be a string.';
			END IF;
		END IF;
	END LOOP;
	RETURN arguments - 'x-queue-type';
END
$$;

CREATE FUNCTION mq._exchange_declare_impl(exchange text, type text, durable boolean,
	alternate_exchange text, arguments jsonb, caller oid)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	ex mq.cat_exchange;
BEGIN
	IF type IS NULL OR type NOT IN ('direct', 'topic', 'fanout', 'headers') THEN
		RAISE EXCEPTION 'invalid exchange type "%" for exchange "%"', type, exchange
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Exchange types are direct, topic, fanout and headers.';
	END IF;
	IF arguments IS NULL THEN arguments := '{}'; END IF;
	IF jsonb_typeof(arguments) <> 'object' THEN
		RAISE EXCEPTION 'arguments of exchange "%" must be a JSON object', exchange
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF arguments ? 'alternate-exchange' THEN
		IF jsonb_typeof(arguments->'alternate-exchange') <> 'string' THEN
			RAISE EXCEPTION 'invalid value % for argument "alternate-exchange" of exchange "%"',
				arguments->'alternate-exchange', exchange
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = 'The value must be a string, the name of an exchange.';
		END IF;
		IF alternate_exchange IS NOT NULL AND alternate_exchange <> arguments->>'alternate-exchange' THEN
			RAISE EXCEPTION 'exchange "%" has two different alternate exchanges', exchange
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		alternate_exchange := arguments->>'alternate-exchange';
		arguments := arguments - 'alternate-exchange';
	END IF;
	IF arguments <> '{}' THEN
		RAISE EXCEPTION 'unknown argument "%" for exchange "%"',
			(SELECT min(k) FROM jsonb_object_keys(arguments) k), exchange
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Exchanges accept only "alternate-exchange".';
	END IF;
	SELECT * INTO ex FROM mq.cat_exchange e WHERE e.name = exchange FOR UPDATE;
	IF FOUND THEN
		IF ex.type <> type THEN
			RAISE EXCEPTION 'exchange "%" already exists with type "%"', exchange, ex.type
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('It was declared with type "%s", not "%s".', ex.type, type);
		ELSIF ex.durable <> durable THEN
			RAISE EXCEPTION 'exchange "%" already exists with durable = %', exchange, ex.durable
				USING ERRCODE = 'object_not_in_prerequisite_state';
		ELSIF ex.alternate_exchange IS DISTINCT FROM alternate_exchange THEN
			RAISE EXCEPTION 'exchange "%" already exists with alternate exchange %', exchange,
				coalesce(quote_literal(ex.alternate_exchange), 'none')
				USING ERRCODE = 'object_not_in_prerequisite_state';
		END IF;
		RETURN;
	END IF;
	IF exchange LIKE 'amq.%' THEN
		RAISE EXCEPTION 'exchange name "%" is reserved', exchange
			USING ERRCODE = 'reserved_name',
				  DETAIL = 'Names starting with "amq." are reserved for predeclared exchanges.';
	END IF;
	INSERT INTO mq.cat_exchange (name, type, durable, alternate_exchange, arguments, owner)
	VALUES (exchange, type, durable, alternate_exchange, arguments, caller);
	PERFORM mq._topology_changed();
END
$$;

CREATE FUNCTION mq._exchange_delete_impl(exchange text, if_unused boolean)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	ex mq.cat_exchange;
BEGIN
	SELECT * INTO ex FROM mq.cat_exchange e WHERE e.name = exchange FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'exchange "%" does not exist', exchange
			USING ERRCODE = 'undefined_object';
	END IF;
	IF exchange = '' OR exchange LIKE 'amq.%' THEN
		RAISE EXCEPTION 'cannot delete predeclared exchange "%"', exchange
			USING ERRCODE = 'reserved_name';
	END IF;
	IF if_unused AND EXISTS (SELECT 1 FROM mq.cat_binding b WHERE b.exchange_id = ex.id) THEN
		RAISE EXCEPTION 'exchange "%" is in use', exchange
			USING ERRCODE = 'object_in_use',
				  DETAIL = 'It has bindings and if_unused is true.';
	END IF;
	DELETE FROM mq.cat_exchange e WHERE e.id = ex.id;
	DELETE FROM mq.cat_grant g WHERE g.object_kind = 'x' AND g.object_id = ex.id;
	PERFORM mq._topology_changed();
END
$$;

-- One generation of a priority lane: its entry log (append-only, ordered)
-- and its settlement log.  See src/queue_state.c.
CREATE FUNCTION mq._lane_create(queue_id int, lane int, gen int)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	persistence text;
	qtype text;
BEGIN
	SELECT CASE WHEN c.durable THEN '' ELSE 'UNLOGGED' END, c.type INTO persistence, qtype
	  FROM mq.cat_queue c WHERE c.id = queue_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue % does not exist', queue_id USING ERRCODE = 'undefined_object';
	END IF;
	IF to_regclass(format('mq.%I', format('q%s_%s_%s', queue_id, lane, gen))) IS NOT NULL THEN
		RETURN;
	END IF;
	BEGIN
		-- expires_at NULL: never (and then not stored: a trailing NULL)
		-- visible_at first: see MqEntry in src/msglog.h
		-- delivery_count: deliveries before, for a message nacked with a delay
		-- body_size: the message body's bytes, only on queues with
		-- x-max-length-bytes and on streams (elsewhere NULL, and so not stored)
		-- offset: the entry's offset in its stream partition (streams only)
		-- group_hash: hash of the message's message_group, only on ordered
		-- queues and streams (MQ_ENTRY_ATT_GROUP_HASH in src/queue/queue_int.h)
		-- ---- issue 12, group worker (stream-group-worker): tag_hash ----
		-- tag_hash: hash of the message's tag, streams only, NULL without a
		-- tag (MQ_ENTRY_ATT_TAG_HASH): groups' tag filters skip entries by it.
		-- An upgrade must not add it to existing entry logs: in a log that
		-- has the column, NULL means "no tag"; without it, "unknown".
		-- A stream's rows may carry their message (src/queue/queue.h,
		-- "inline"): the columns of a message log segment follow, NULL (and
		-- so not stored) in the rows of messages kept in the log.
		EXECUTE format('CREATE %s TABLE mq.%I (visible_at timestamptz NOT NULL, msg_id int8 NOT NULL, '
					   'expires_at timestamptz, delivery_count int, body_size int, "offset" int8, '
					   'group_hash int, tag_hash int%s) USING mqlog',
					   persistence, format('q%s_%s_%s', queue_id, lane, gen),
					   CASE WHEN qtype = 'stream' THEN
					   ', published_at timestamptz, exchange text, routing_key text, body bytea, '
					   'headers jsonb, properties jsonb, key text COLLATE "C", tag text, '
					   'message_group text, dedup_id text COLLATE "C"' ELSE '' END);
	EXCEPTION WHEN duplicate_table THEN
		RETURN;
	END;
	IF qtype = 'stream' THEN
		INSERT INTO mq.cat_inline (segno, relid, queue_id, lane, gen)
		VALUES (nextval('mq.inline_segno'),
				format('mq.%I', format('q%s_%s_%s', queue_id, lane, gen))::regclass,
				queue_id, lane, gen);
	END IF;
	-- one int8 per settlement: kind << 56 | the entry's position within the
	-- lane (see mq_settle_encode in src/msglog.h)
	EXECUTE format('CREATE %s TABLE mq.%I (settlement int8 NOT NULL) USING mqlog',
				   persistence, format('s%s_%s_%s', queue_id, lane, gen));
	-- and each consumer group's settlement log of the generation
	PERFORM mq._group_log_create(_lane_create.queue_id, g.id, lane, gen)
	   FROM mq.cat_group g WHERE g.queue_id = _lane_create.queue_id;
	-- (broadcast consumer groups, stream-broadcast) and each broadcast
	-- consumer's
	PERFORM mq._group_log_create(_lane_create.queue_id, c.id, lane, gen)
	   FROM mq.cat_group g JOIN mq.cat_group_consumer c ON c.group_id = g.id
	  WHERE g.queue_id = _lane_create.queue_id;
END
$$;

-- A consumer group's settlement log of a lane generation: the same int8
-- column and records as s<queue>_<lane>_<gen>, and an argument column
-- (NULL but for RETRY_AT records: a retry's due time; queue.h)
-- ---- issue 12, group worker (stream-group-worker): the arg column ----
CREATE FUNCTION mq._group_log_create(queue_id int, group_id int, lane int, gen int)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	EXECUTE format('CREATE TABLE IF NOT EXISTS mq.%I (settlement int8 NOT NULL, arg int8) USING mqlog',
				   format('g%s_%s_%s_%s', queue_id, group_id, lane, gen));
END
$$;

CREATE FUNCTION mq._lane_drop(queue_id int, lane int, gen int)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	DELETE FROM mq.cat_inline i
	 WHERE i.queue_id = _lane_drop.queue_id AND i.lane = _lane_drop.lane AND i.gen = _lane_drop.gen;
	EXECUTE format('DROP TABLE IF EXISTS mq.%I, mq.%I',
				   format('q%s_%s_%s', queue_id, lane, gen),
				   format('s%s_%s_%s', queue_id, lane, gen));
	-- the consumer groups' logs of the generation go with it
	PERFORM mq._group_log_drop(format('g%s\_%%\_%s\_%s', queue_id, lane, gen));
END
$$;

-- Drop the consumer group logs whose names match pattern (LIKE)
CREATE FUNCTION mq._group_log_drop(pattern text)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rel oid;
BEGIN
	FOR rel IN SELECT c.oid FROM pg_class c
				WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r'
				  AND c.relname LIKE pattern LOOP
		EXECUTE format('DROP TABLE %s', rel::regclass);
	END LOOP;
END
$$;

CREATE FUNCTION mq._queue_declare_impl(queue text, type text, durable boolean, arguments jsonb, caller oid)
RETURNS text LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	q mq.cat_queue;
	qid int;
	nlanes int;
	lane_oids oid[] := '{}';
	relname text;
BEGIN
	IF type IS NULL OR type NOT IN ('classic', 'quorum', 'stream') THEN
		RAISE EXCEPTION 'invalid queue type "%" for queue "%"', type, queue
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Queue types are classic, quorum and stream.';
	END IF;
	IF type IN ('quorum', 'stream') AND NOT durable THEN
		RAISE EXCEPTION '% queue "%" must be durable', type, queue
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	arguments := mq._queue_args_check(queue, type, arguments);
	IF type = 'quorum' AND arguments ? 'x-max-priority' THEN
		RAISE EXCEPTION 'quorum queue "%" does not support "x-max-priority"', queue
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT * INTO q FROM mq.cat_queue c WHERE c.name = queue FOR UPDATE;
	IF FOUND THEN
		IF q.type <> type THEN
			RAISE EXCEPTION 'queue "%" already exists with type "%"', queue, q.type
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('It was declared with type "%s", not "%s".', q.type, type);
		ELSIF q.durable <> durable THEN
			RAISE EXCEPTION 'queue "%" already exists with durable = %', queue, q.durable
				USING ERRCODE = 'object_not_in_prerequisite_state';
		ELSIF q.arguments <> arguments THEN
			RAISE EXCEPTION 'queue "%" already exists with different arguments', queue
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('Existing arguments: %s; requested: %s.', q.arguments, arguments);
		END IF;
		RETURN queue;
	END IF;
	IF queue LIKE 'amq.%' AND queue NOT LIKE 'amq.gen-%' THEN
		RAISE EXCEPTION 'queue name "%" is reserved', queue
			USING ERRCODE = 'reserved_name',
				  DETAIL = 'Names starting with "amq." are reserved for server-named queues.';
	END IF;
	qid := nextval(pg_get_serial_sequence('mq.cat_queue', 'id'));
	-- a lane per priority level: x-max-priority + 1, and on quorum queues
	-- always 32 (RabbitMQ 4.3: priorities 0..31, MQ_QUORUM_LANES in catalog.h),
	-- on streams one per partition, and an ordered queue has one (the order
	-- of a message group wins)
	nlanes := CASE WHEN type = 'stream' THEN coalesce((arguments->>'partitions')::int, 1)
				   WHEN coalesce((arguments->>'ordered')::boolean, false) THEN 1
				   WHEN type = 'quorum' THEN 32
				   ELSE coalesce((arguments->>'x-max-priority')::int, 0) + 1 END;
	INSERT INTO mq.cat_queue (id, name, type, durable, arguments, lanes, owner)
	VALUES (qid, queue, type, durable, arguments, '{}', caller);
	-- the queue's lock (src/queue/queue_load.c, mqq_queue_object_lock): a
	-- relation of its own, so that its users take it on PostgreSQL's fast
	-- path; a storage-less composite type with no column.  One left by a
	-- restore of a dump (the id is new: nothing else can have it) goes first.
	IF to_regtype(format('mq.%I', 'a' || qid)) IS NOT NULL THEN
		EXECUTE format('DROP TYPE mq.%I', 'a' || qid);
	END IF;
	EXECUTE format('CREATE TYPE mq.%I AS ()', 'a' || qid);
	FOR lane IN 0 .. nlanes - 1 LOOP
		PERFORM mq._lane_create(qid, lane, 0);
		lane_oids := lane_oids || format('mq.%I', format('q%s_%s_0', qid, lane))::regclass::oid;
	END LOOP;
	UPDATE mq.cat_queue c SET lanes = lane_oids WHERE c.id = qid;
	PERFORM mq._topology_changed();
	RETURN queue;
END
$$;

CREATE FUNCTION mq._queue_delete_impl(queue text, if_unused boolean, if_empty boolean,
	queue_messages bigint, queue_consumers int)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	q mq.cat_queue;
	rel oid;
BEGIN
	SELECT * INTO q FROM mq.cat_queue c WHERE c.name = queue FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue
			USING ERRCODE = 'undefined_object';
	END IF;
	IF if_unused AND queue_consumers > 0 THEN
		RAISE EXCEPTION 'queue "%" is in use', queue
			USING ERRCODE = 'object_in_use',
				  DETAIL = format('It has %s consumer(s) and if_unused is true.', queue_consumers);
	END IF;
	IF if_empty AND queue_messages > 0 THEN
		RAISE EXCEPTION 'queue "%" is not empty', queue
			USING ERRCODE = 'object_in_use',
				  DETAIL = format('It holds %s message(s) and if_empty is true.', queue_messages);
	END IF;
	DELETE FROM mq.cat_queue c WHERE c.id = q.id;
	DELETE FROM mq.cat_grant g WHERE g.object_kind = 'q' AND g.object_id = q.id;
	DELETE FROM mq.cat_consumer c WHERE c.queue_id = q.id;
	DELETE FROM mq.cat_group g WHERE g.queue_id = q.id;
	DELETE FROM mq.timer t WHERE t.queue_id = q.id;
	DELETE FROM mq.cat_inline i WHERE i.queue_id = q.id;
	IF to_regtype(format('mq.%I', 'a' || q.id)) IS NOT NULL THEN
		EXECUTE format('DROP TYPE mq.%I', 'a' || q.id);
	END IF;
	-- every generation of every lane: entry logs q<id>_*, settlement logs
	-- s<id>_*, consumer groups' logs g<id>_*
	FOR rel IN SELECT c.oid FROM pg_class c
				WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r'
				  AND (c.relname LIKE 'q' || q.id || '\_%' OR c.relname LIKE 's' || q.id || '\_%'
					   OR c.relname LIKE 'g' || q.id || '\_%') LOOP
		EXECUTE format('DROP TABLE %s', rel::regclass);
	END LOOP;
	PERFORM mq._topology_changed();
END
$$;

CREATE FUNCTION mq._bind_impl(queue text, exchange text, binding_key text, arguments jsonb, unbind boolean)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	qid int;
	ex mq.cat_exchange;
BEGIN
	SELECT c.id INTO qid FROM mq.cat_queue c WHERE c.name = queue;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue USING ERRCODE = 'undefined_object';
	END IF;
	SELECT * INTO ex FROM mq.cat_exchange e WHERE e.name = exchange;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'exchange "%" does not exist', exchange USING ERRCODE = 'undefined_object';
	END IF;
	IF exchange = '' THEN
		RAISE EXCEPTION 'cannot % queue "%" % the default exchange',
			CASE WHEN unbind THEN 'unbind' ELSE 'bind' END, queue,
			CASE WHEN unbind THEN 'from' ELSE 'to' END
			USING ERRCODE = 'reserved_name',
				  DETAIL = 'Every queue is bound to the default exchange by its name.';
	END IF;
	IF binding_key IS NULL THEN binding_key := ''; END IF;
	IF arguments IS NULL THEN arguments := '{}'; END IF;
	IF jsonb_typeof(arguments) <> 'object' THEN
		RAISE EXCEPTION 'binding arguments must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF ex.type = 'headers' THEN
		PERFORM mq.headers_match(arguments, NULL);	-- validates x-match
	END IF;
	IF unbind THEN
		DELETE FROM mq.cat_binding b
		 WHERE b.exchange_id = ex.id AND b.queue_id = qid
		   AND b.binding_key = _bind_impl.binding_key AND b.arguments = _bind_impl.arguments;
	ELSE
		INSERT INTO mq.cat_binding (exchange_id, queue_id, binding_key, arguments)
		VALUES (ex.id, qid, binding_key, arguments)
		ON CONFLICT DO NOTHING;
	END IF;
	PERFORM mq._topology_changed();
END
$$;

CREATE FUNCTION mq._grant_impl(privilege text, object_type text, object_name text, role regrole, revoke boolean)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	kind "char";
	oid_ int;
BEGIN
	IF privilege NOT IN ('configure', 'publish', 'consume') THEN
		RAISE EXCEPTION 'invalid privilege "%"', privilege
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Privileges are configure, publish and consume.';
	END IF;
	IF object_type = 'queue' THEN
		kind := 'q';
		SELECT c.id INTO oid_ FROM mq.cat_queue c WHERE c.name = object_name;
	ELSIF object_type = 'exchange' THEN
		kind := 'x';
		SELECT e.id INTO oid_ FROM mq.cat_exchange e WHERE e.name = object_name;
	ELSE
		RAISE EXCEPTION 'invalid object type "%"', object_type
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Use queue or exchange.';
	END IF;
	IF oid_ IS NULL THEN
		RAISE EXCEPTION '% "%" does not exist', object_type, object_name
			USING ERRCODE = 'undefined_object';
	END IF;
	IF revoke THEN
		DELETE FROM mq.cat_grant g WHERE g.object_kind = kind AND g.object_id = oid_
		   AND g.grantee = coalesce(role::oid, 0) AND g.privilege = _grant_impl.privilege;
	ELSE
		INSERT INTO mq.cat_grant VALUES (kind, oid_, coalesce(role::oid, 0), privilege)
		ON CONFLICT DO NOTHING;
	END IF;
	PERFORM mq._topology_changed();
END
$$;

REVOKE ALL ON FUNCTION mq._lane_create, mq._lane_drop, mq._group_log_create,
	mq._group_log_drop FROM PUBLIC;
REVOKE ALL ON FUNCTION mq._exchange_declare_impl, mq._exchange_delete_impl,
	mq._queue_declare_impl, mq._queue_delete_impl, mq._bind_impl, mq._grant_impl FROM PUBLIC;

-- end of topology section

------------------------------------------------------------------------
-- routing matchers (src/routing_*.c)
------------------------------------------------------------------------
-- RabbitMQ topic matching of one binding key against one routing key
CREATE FUNCTION mq.topic_matches(binding_key text, routing_key text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mq_topic_matches_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- 1-based indexes of the binding keys matching routing_key, ascending,
-- computed through the topic trie used by topic exchanges
CREATE FUNCTION mq.topic_route(binding_keys text[], routing_key text)
RETURNS int[]
AS 'MODULE_PATHNAME', 'mq_topic_route_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- RabbitMQ headers-exchange matching; NULL headers = a message without headers
CREATE FUNCTION mq.headers_match(binding_arguments jsonb, headers jsonb)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mq_headers_match_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- end of routing matchers section

------------------------------------------------------------------------
-- message filters of consumer groups (src/filter.c, src/filter_sql.c)
------------------------------------------------------------------------
-- RocketMQ tag expressions ('tag') and SQL92 selectors ('sql92') over a
-- message's headers and its tag (TAGS), evaluated for one message.  Not
-- STRICT: a NULL expression is no filter; NULL headers and tag mean none.
-- NULL when the selector is null-valued or its evaluation fails.
CREATE FUNCTION mq.filter_match(filter_type text, expression text,
	headers jsonb, tag text DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mq_filter_match_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

------------------------------------------------------------------------
-- Message log segments (src/msglog.c)
------------------------------------------------------------------------
CREATE FUNCTION mq._segment_create(segno bigint, durable boolean)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rel text := format('log_%s', segno);
BEGIN
	-- serialise concurrent roll-overs; whoever comes second finds the table
	-- (the catalog cache may not have seen it yet, hence the exception)
	PERFORM pg_advisory_xact_lock(7170001, 0);
	IF to_regclass(format('mq.%I', rel)) IS NOT NULL THEN
		RETURN;
	END IF;
	BEGIN
		-- optional columns last: mqlog does not store trailing NULLs; the
		-- indexed ones compare bytewise (COLLATE "C": equality is all they
		-- are searched by, and a locale's strcoll made a key probe 10x dearer)
		EXECUTE format('CREATE %s TABLE mq.%I (published_at timestamptz NOT NULL, '
					   'exchange text, routing_key text, body bytea, headers jsonb, '
					   'properties jsonb, key text COLLATE "C", tag text, message_group text, '
					   'dedup_id text COLLATE "C") '
					   'USING mqlog',
					   CASE WHEN durable THEN '' ELSE 'UNLOGGED' END, rel);
	EXCEPTION WHEN duplicate_table THEN
		RETURN;
	END;
	EXECUTE format('CREATE INDEX %I ON mq.%I (key) WHERE key IS NOT NULL', rel || '_key', rel);
	EXECUTE format('CREATE INDEX %I ON mq.%I (dedup_id) WHERE dedup_id IS NOT NULL',
				   rel || '_dedup', rel);
	INSERT INTO mq.cat_segment (segno, relid, durable)
	VALUES (segno, format('mq.%I', rel)::regclass, durable)
	ON CONFLICT DO NOTHING;
END
$$;

-- Drop a segment.  The first segments were created by the install script
-- and belong to the extension: release them first.
CREATE FUNCTION mq._segment_drop(segno bigint)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rel oid := to_regclass(format('mq.%I', format('log_%s', segno)));
BEGIN
	IF rel IS NOT NULL THEN
		IF EXISTS (SELECT 1 FROM pg_depend d
					WHERE d.classid = 'pg_class'::regclass AND d.objid = rel
					  AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e') THEN
			EXECUTE format('ALTER EXTENSION queue_ext DROP TABLE %s', rel::regclass);
		END IF;
		EXECUTE format('DROP TABLE %s', rel::regclass);
	END IF;
	DELETE FROM mq.cat_segment s WHERE s.segno = _segment_drop.segno;
END
$$;

CREATE FUNCTION mq._segment_newest(durable boolean)
RETURNS bigint LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp AS $$
	SELECT max(s.segno) FROM mq.cat_segment s
	 WHERE s.durable = _segment_newest.durable
	   AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = s.relid)
$$;

-- msg_id of a row of segment segno: segno << 26 | block << 9 | offset
CREATE FUNCTION mq._msg_id(segno bigint, tid tid)
RETURNS bigint LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
	SELECT (segno << 26) | (((tid::text::point)[0])::bigint << 9) | ((tid::text::point)[1])::bigint
$$;

CREATE FUNCTION mq._log_find_key(key text, unused int, max_messages int)
RETURNS SETOF bigint LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	s record;
	found int := 0;
	id bigint;
BEGIN
	-- on a standby the unlogged (non-durable) segments cannot be read
	FOR s IN SELECT c.segno, c.relid FROM mq.cat_segment c
			  WHERE c.durable OR NOT pg_is_in_recovery() ORDER BY c.segno DESC LOOP
		FOR id IN EXECUTE format('SELECT mq._msg_id(%s, ctid) FROM %s WHERE key = $1 ORDER BY published_at DESC',
								 s.segno, s.relid::regclass) USING key LOOP
			RETURN NEXT id;
			found := found + 1;
			IF found >= max_messages THEN
				RETURN;
			END IF;
		END LOOP;
	END LOOP;
END
$$;

-- The newest message of each key sent to queue routing_key through the
-- default exchange, by one index scan per key and segment (src/consume.c;
-- queue_ext_pgmq maps its msg_ids with it).  Ids only, for internal callers.
CREATE FUNCTION mq._log_find_keys(routing_key text, keys text[])
RETURNS TABLE (key text, msg_id bigint)
AS 'MODULE_PATHNAME', 'mq_log_find_keys' LANGUAGE C STABLE;
REVOKE ALL ON FUNCTION mq._log_find_keys(text, text[]) FROM PUBLIC;

CREATE FUNCTION mq._log_find_dedup(dedup_id text, since timestamptz, max_messages int)
RETURNS SETOF bigint LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	s record;
	id bigint;
BEGIN
	FOR s IN SELECT c.segno, c.relid FROM mq.cat_segment c ORDER BY c.segno DESC LOOP
		EXECUTE format('SELECT mq._msg_id(%s, ctid) FROM %s WHERE dedup_id = $1 AND published_at >= $2 LIMIT 1',
					   s.segno, s.relid::regclass) INTO id USING dedup_id, since;
		IF id IS NOT NULL THEN
			RETURN NEXT id;
			RETURN;
		END IF;
	END LOOP;
END
$$;

-- Dead-lettering, as RabbitMQ 4.x's mc:record_death and
-- rabbit_dead_letter:publish: the copy's headers and properties, the
-- routing keys it is routed with, and the queues it must not reach (cycle).
--
-- The death history is the broker's own: the "deaths" member of the
-- message's annotations (properties->'annotations', never shown to
-- consumers) says that headers->'x-death' was written here.  Without it an
-- x-death header is the publisher's data: it is neither counted nor used for
-- cycles, and the first death replaces it, with x-first-death-* (RabbitMQ
-- keeps death history in message annotations apart from the headers).
-- The annotations also keep the message's routing keys ("routing-keys",
-- when more than its routing_key: CC and BCC) and its BCC keys ("bcc"),
-- which the x-death entry leaves out.
CREATE FUNCTION mq._x_death(headers jsonb, properties jsonb, reason text, queue text,
	exchange text, routing_key text, dl_routing_key text,
	OUT new_headers jsonb, OUT new_properties jsonb, OUT routing_keys text[],
	OUT cycle text[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	ann jsonb := coalesce(properties->'annotations', '{}');
	keys text[] := ARRAY[routing_key];
	rkeys text[];
	deaths jsonb := '[]';
	rec jsonb;
	rest jsonb := '[]';
	d jsonb;
	k text;
	i int;
BEGIN
	IF jsonb_typeof(ann->'routing-keys') = 'array' THEN
		keys := ARRAY(SELECT jsonb_array_elements_text(ann->'routing-keys'));
	END IF;
	-- the entry's routing-keys: CC included, BCC not (Erlang's RKeys -- Bcc
	-- removes one occurrence per BCC key)
	rkeys := keys;
	IF jsonb_typeof(ann->'bcc') = 'array' THEN
		FOR k IN SELECT jsonb_array_elements_text(ann->'bcc') LOOP
			i := array_position(rkeys, k);
			IF i IS NOT NULL THEN
				rkeys := rkeys[:i - 1] || rkeys[i + 1:];
			END IF;
		END LOOP;
	END IF;
	IF ann ? 'deaths' AND jsonb_typeof(headers->'x-death') = 'array' THEN
		deaths := headers->'x-death';
	END IF;
	-- a death in the same queue for the same reason counts up and moves to
	-- the front, keeping its first time, exchange and routing keys
	FOR d IN SELECT * FROM jsonb_array_elements(deaths) LOOP
		IF rec IS NULL AND d->>'queue' = queue AND d->>'reason' = reason THEN
			rec := d || jsonb_build_object('count', coalesce((d->>'count')::bigint, 0) + 1);
		ELSE
			rest := rest || jsonb_build_array(d);
		END IF;
	END LOOP;
	IF rec IS NULL THEN
		rec := jsonb_build_object('count', 1, 'reason', reason, 'queue', queue,
			'time', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
			'exchange', exchange, 'routing-keys', to_jsonb(rkeys));
		-- a per-message TTL, as a string like AMQP's expiration property
		IF properties ? 'expiration' THEN
			rec := rec || jsonb_build_object('original-expiration', properties->>'expiration');
		END IF;
	END IF;
	deaths := jsonb_build_array(rec) || rest;
	new_headers := coalesce(headers, '{}') || jsonb_build_object('x-death', deaths);
	IF NOT ann ? 'deaths' THEN
		new_headers := new_headers || jsonb_build_object('x-first-death-reason', reason,
			'x-first-death-queue', queue, 'x-first-death-exchange', exchange);
	END IF;
	new_headers := new_headers || jsonb_build_object('x-last-death-reason', reason,
		'x-last-death-queue', queue, 'x-last-death-exchange', exchange);
	-- the copy is routed by the queue's dead-letter routing key, else by the
	-- message's own keys (CC and BCC included)
	IF dl_routing_key IS NOT NULL THEN
		keys := ARRAY[dl_routing_key];
	END IF;
	routing_keys := keys;
	ann := (ann - 'routing-keys') || jsonb_build_object('deaths', true);
	IF cardinality(keys) > 1 THEN
		ann := ann || jsonb_build_object('routing-keys', to_jsonb(keys));
	END IF;
	-- the per-message TTL does not follow the copy
	new_properties := (coalesce(properties, '{}') - 'expiration')
		|| jsonb_build_object('annotations', ann);
	-- mc:is_death_cycle: a queue the message died in since the last
	-- rejection (newest first) would close a cycle of automatic deaths
	cycle := '{}';
	FOR d IN SELECT * FROM jsonb_array_elements(deaths) LOOP
		EXIT WHEN d->>'reason' = 'rejected';
		cycle := cycle || (d->>'queue');
	END LOOP;
END
$$;

-- The first segment of each chain exists from the start, so that the first
-- publishers do not create a table inside their transactions.
SELECT mq._segment_create(1, true);
SELECT mq._segment_create(2, false);

REVOKE ALL ON FUNCTION mq._segment_create, mq._segment_drop, mq._segment_newest, mq._log_find_key,
	mq._log_find_dedup, mq._x_death FROM PUBLIC;

CREATE FUNCTION mq._topology_changed() RETURNS void
AS 'MODULE_PATHNAME', 'mq_topology_changed' LANGUAGE C;
REVOKE ALL ON FUNCTION mq._topology_changed() FROM PUBLIC;

------------------------------------------------------------------------
-- Public API: topology (src/topology.c)
------------------------------------------------------------------------
CREATE FUNCTION mq.exchange_declare(exchange text, type text DEFAULT 'direct',
	durable boolean DEFAULT true, alternate_exchange text DEFAULT NULL,
	arguments jsonb DEFAULT '{}')
RETURNS void AS 'MODULE_PATHNAME', 'mq_exchange_declare' LANGUAGE C;

CREATE FUNCTION mq.exchange_delete(exchange text, if_unused boolean DEFAULT false)
RETURNS void AS 'MODULE_PATHNAME', 'mq_exchange_delete' LANGUAGE C;

CREATE FUNCTION mq.queue_declare(queue text, type text DEFAULT 'classic',
	durable boolean DEFAULT true, arguments jsonb DEFAULT '{}')
RETURNS text AS 'MODULE_PATHNAME', 'mq_queue_declare' LANGUAGE C;

CREATE FUNCTION mq.queue_delete(queue text, if_unused boolean DEFAULT false,
	if_empty boolean DEFAULT false)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_queue_delete' LANGUAGE C;

CREATE FUNCTION mq.queue_purge(queue text)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_queue_purge' LANGUAGE C;

-- A named consumer's prefetch (unacked deliveries it may hold; 0/NULL: no
-- limit), used by mq.consume(consumer => name) when given no prefetch
CREATE FUNCTION mq.consumer_declare(queue text, consumer text, prefetch int DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'mq_consumer_declare' LANGUAGE C;
CREATE FUNCTION mq.consumer_delete(queue text, consumer text)
RETURNS void AS 'MODULE_PATHNAME', 'mq_consumer_delete' LANGUAGE C;

CREATE FUNCTION mq._consumer_declare_impl(queue text, consumer text, prefetch int, drop boolean)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
	qid int;
BEGIN
	SELECT c.id INTO qid FROM mq.cat_queue c WHERE c.name = queue;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue USING ERRCODE = 'undefined_object';
	END IF;
	IF drop THEN
		DELETE FROM mq.cat_consumer c WHERE c.queue_id = qid AND c.consumer = _consumer_declare_impl.consumer;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'consumer "%" of queue "%" is not declared', consumer, queue
				USING ERRCODE = 'undefined_object';
		END IF;
	ELSE
		INSERT INTO mq.cat_consumer (queue_id, consumer, prefetch)
		VALUES (qid, _consumer_declare_impl.consumer, _consumer_declare_impl.prefetch)
		ON CONFLICT (queue_id, consumer) DO UPDATE SET prefetch = EXCLUDED.prefetch;
	END IF;
	PERFORM mq._topology_changed();
END
$$;
REVOKE ALL ON FUNCTION mq._consumer_declare_impl FROM PUBLIC;

CREATE FUNCTION mq.bind(queue text, exchange text, binding_key text DEFAULT '',
	arguments jsonb DEFAULT '{}')
RETURNS void AS 'MODULE_PATHNAME', 'mq_bind' LANGUAGE C;

CREATE FUNCTION mq.unbind(queue text, exchange text, binding_key text DEFAULT '',
	arguments jsonb DEFAULT '{}')
RETURNS void AS 'MODULE_PATHNAME', 'mq_unbind' LANGUAGE C;

CREATE FUNCTION mq.grant(privilege text, object_type text, object_name text, role regrole)
RETURNS void AS 'MODULE_PATHNAME', 'mq_grant' LANGUAGE C;

CREATE FUNCTION mq.revoke(privilege text, object_type text, object_name text, role regrole)
RETURNS void AS 'MODULE_PATHNAME', 'mq_revoke' LANGUAGE C;

------------------------------------------------------------------------
-- Public API: publish (src/publish_sql.c)
------------------------------------------------------------------------
CREATE FUNCTION mq.publish(exchange text, routing_key text, body bytea,
	headers jsonb DEFAULT NULL, mandatory boolean DEFAULT false,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_sql' LANGUAGE C;

CREATE FUNCTION mq.publish(exchange text, routing_key text, body text,
	headers jsonb DEFAULT NULL, mandatory boolean DEFAULT false,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_sql' LANGUAGE C;

CREATE FUNCTION mq.publish(exchange text, routing_key text, body jsonb,
	headers jsonb DEFAULT NULL, mandatory boolean DEFAULT false,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_sql' LANGUAGE C;

CREATE FUNCTION mq.send(queue text, body bytea, headers jsonb DEFAULT NULL,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_send' LANGUAGE C;

CREATE FUNCTION mq.send(queue text, body text, headers jsonb DEFAULT NULL,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_send' LANGUAGE C;

CREATE FUNCTION mq.send(queue text, body jsonb, headers jsonb DEFAULT NULL,
	delay interval DEFAULT NULL, deliver_at timestamptz DEFAULT NULL,
	key text DEFAULT NULL, tag text DEFAULT NULL, message_group text DEFAULT NULL,
	priority int DEFAULT NULL, expiration interval DEFAULT NULL,
	dedup_id text DEFAULT NULL, content_type text DEFAULT NULL,
	correlation_id text DEFAULT NULL, reply_to text DEFAULT NULL,
	durability text DEFAULT NULL, delay_level int DEFAULT NULL,
	"partition" int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_send' LANGUAGE C;

CREATE FUNCTION mq.publish_batch(exchange text, routing_keys text[], bodies bytea[],
	headers jsonb[] DEFAULT NULL, mandatory boolean DEFAULT false,
	durability text DEFAULT NULL, delay interval DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_publish_batch' LANGUAGE C;
CREATE FUNCTION mq.publish_batch(exchange text, routing_keys text[], bodies text[],
	headers jsonb[] DEFAULT NULL, mandatory boolean DEFAULT false,
	durability text DEFAULT NULL, delay interval DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_publish_batch' LANGUAGE C;
CREATE FUNCTION mq.publish_batch(exchange text, routing_keys text[], bodies jsonb[],
	headers jsonb[] DEFAULT NULL, mandatory boolean DEFAULT false,
	durability text DEFAULT NULL, delay interval DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_publish_batch' LANGUAGE C;

CREATE FUNCTION mq.send_batch(queue text, bodies bytea[], headers jsonb[] DEFAULT NULL,
	delay interval DEFAULT NULL, durability text DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_send_batch' LANGUAGE C;
CREATE FUNCTION mq.send_batch(queue text, bodies text[], headers jsonb[] DEFAULT NULL,
	delay interval DEFAULT NULL, durability text DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_send_batch' LANGUAGE C;
CREATE FUNCTION mq.send_batch(queue text, bodies jsonb[], headers jsonb[] DEFAULT NULL,
	delay interval DEFAULT NULL, durability text DEFAULT NULL, "partition" int DEFAULT NULL,
	keys text[] DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'mq_send_batch' LANGUAGE C;

------------------------------------------------------------------------
-- Public API: consume and settle (src/consume.c, src/settle.c)
------------------------------------------------------------------------
CREATE FUNCTION mq.consume(queue text, max_messages int DEFAULT 1,
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

CREATE FUNCTION mq.browse(queue text, max_messages int DEFAULT 10)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb)
AS 'MODULE_PATHNAME', 'mq_browse' LANGUAGE C;

-- Stateless read of a stream partition by offset or time (src/stream_sql.c)
CREATE FUNCTION mq.read(queue text, "partition" int, from_offset bigint DEFAULT NULL,
	max_messages int DEFAULT 100, from_time timestamptz DEFAULT NULL)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb, reconsume_times int,
	receipt text)
AS 'MODULE_PATHNAME', 'mq_read' LANGUAGE C;

CREATE FUNCTION mq.message(msg_id bigint)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb)
AS 'MODULE_PATHNAME', 'mq_message' LANGUAGE C ROWS 1;

CREATE FUNCTION mq.messages_by_key(key text, max_messages int DEFAULT 10)
RETURNS TABLE (msg_id bigint, queue text, exchange text, routing_key text,
	body bytea, headers jsonb, published_at timestamptz, redelivered boolean,
	delivery_count int, "partition" int, "offset" bigint, key text, tag text,
	message_group text, priority int, properties jsonb)
AS 'MODULE_PATHNAME', 'mq_messages_by_key' LANGUAGE C;

-- BEGIN pgmq support (issue 15, queue_ext_pgmq): leases by id
-- Lease messages by id whoever holds them (a visibility timeout that
-- belongs to nobody, as pgmq's vt): lease '0' makes them ready at once;
-- deliver => true takes only ready ones, as a delivery (src/consume.c)
CREATE FUNCTION mq.lease_ids(queue text, msg_ids bigint[],
	lease interval DEFAULT '30 seconds', deliver boolean DEFAULT false)
RETURNS TABLE (msg_id bigint, delivery_count int, was_leased boolean,
	was_until timestamptz)
AS 'MODULE_PATHNAME', 'mq_lease_ids' LANGUAGE C;
-- What is leased now, by anyone, with lease ends
CREATE FUNCTION mq.in_flight(queue text, max_messages int DEFAULT 1000)
RETURNS TABLE (msg_id bigint, delivery_count int, lease_until timestamptz)
AS 'MODULE_PATHNAME', 'mq_in_flight' LANGUAGE C;
-- Ack the message of each business key (the newest sent to the queue),
-- whoever holds it, ready ones too: pgmq's delete by msg_id in one call
CREATE FUNCTION mq.ack_keys(queue text, keys text[])
RETURNS TABLE (key text, msg_id bigint)
AS 'MODULE_PATHNAME', 'mq_ack_keys' LANGUAGE C;
-- END pgmq support

-- BEGIN broadcast consumer groups (issue 12, stream-broadcast): DDL block 3/3
-- (changed: mq.ack, mq.nack and mq.extend_lease gained a trailing
-- consumer text DEFAULT NULL, the consumer of a broadcast group)
CREATE FUNCTION mq.ack(queue text, msg_ids bigint[] DEFAULT NULL,
	group_name text DEFAULT NULL, consumer text DEFAULT NULL,
	receipts text[] DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'mq_ack' LANGUAGE C;

CREATE FUNCTION mq.nack(queue text, msg_ids bigint[] DEFAULT NULL,
	requeue boolean DEFAULT true, delay interval DEFAULT NULL,
	group_name text DEFAULT NULL, consumer text DEFAULT NULL,
	receipts text[] DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'mq_nack' LANGUAGE C;

CREATE FUNCTION mq.reject(queue text, msg_id bigint DEFAULT NULL,
	requeue boolean DEFAULT true, receipt text DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'mq_reject' LANGUAGE C;

CREATE FUNCTION mq.extend_lease(queue text, msg_ids bigint[] DEFAULT NULL,
	lease interval DEFAULT '30 seconds', group_name text DEFAULT NULL,
	consumer text DEFAULT NULL, receipts text[] DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'mq_extend_lease' LANGUAGE C;
-- END broadcast consumer groups: DDL block 3/3

------------------------------------------------------------------------
-- Inspection (src/stats.c)
------------------------------------------------------------------------
CREATE FUNCTION mq._queue_stats()
RETURNS TABLE (queue text, type text, durable boolean, ready bigint, unacked bigint,
	delayed bigint, total bigint, consumers int, oldest_ready_age interval,
	last_delivery timestamptz, arguments jsonb, ready_bytes bigint,
	partitions int, first_offset bigint[], last_offset bigint[], retention interval)
AS 'MODULE_PATHNAME', 'mq_queue_stats' LANGUAGE C;

-- ---- issue 12, group worker (stream-group-worker): session counters ----
-- What this backend did, for tests and benchmarks (src/stats.c): entries
-- consumer groups settled by their tag hash without reading the message,
-- and messages read from the message log.
CREATE FUNCTION mq._session_counters(OUT tag_skips bigint, OUT message_fetches bigint)
AS 'MODULE_PATHNAME', 'mq_session_counters' LANGUAGE C VOLATILE;
-- ---- end of issue 12 block ----

-- ---- issue 13: quorum commits (src/quorum.c, src/replication_sql.c) ----
-- Whether a quorum commit can be confirmed now: synchronous standbys the
-- configuration asks for and that stream now, commits made without a
-- quorum (mq.quorum_unavailable = wait, none configured) and since when,
-- and the WAL position the standbys' lag is measured from.
CREATE FUNCTION mq._replication_summary(OUT required_sync_standbys int,
	OUT connected_sync_standbys int, OUT quorum_met boolean,
	OUT commits_without_quorum bigint, OUT without_quorum_since timestamptz,
	OUT current_lsn pg_lsn)
AS 'MODULE_PATHNAME', 'mq_replication_summary' LANGUAGE C VOLATILE;
-- ---- end of issue 13 block ----

-- ready_bytes: body bytes of the ready messages (RabbitMQ's
-- message_bytes_ready), on queues with x-max-length-bytes, and the bytes a
-- stream retains; NULL elsewhere.  Streams also show their partitions, the
-- first and last retained offset of each (arrays indexed by partition + 1)
-- and their retention; NULL for other queues.
CREATE VIEW mq.queues AS
	SELECT queue, type, durable, ready, unacked, delayed, total, consumers,
		   oldest_ready_age, last_delivery, arguments, ready_bytes,
		   partitions, first_offset, last_offset, retention,
		   -- quorum queues and streams with "durability": "quorum"
		   CASE WHEN type = 'quorum' OR arguments->>'durability' = 'quorum'
				THEN (SELECT r.quorum_met FROM mq._replication_summary() r)
		   END AS quorum_met
	  FROM mq._queue_stats();

-- One row per partition of each stream (src/stream_sql.c)
CREATE FUNCTION mq._stream_partitions()
RETURNS TABLE (queue text, "partition" int, first_offset bigint, end_offset bigint,
	bytes bigint, first_time timestamptz, last_time timestamptz)
AS 'MODULE_PATHNAME', 'mq_stream_partitions' LANGUAGE C;

CREATE VIEW mq.stream_partitions AS SELECT * FROM mq._stream_partitions();

CREATE VIEW mq.exchanges AS
	SELECT e.name AS exchange, e.type, e.durable, e.alternate_exchange, e.arguments,
		   e.owner::regrole AS owner,
		   (e.name = '' OR e.name LIKE 'amq.%') AS predeclared
	  FROM mq.cat_exchange e;

CREATE VIEW mq.bindings AS
	SELECT e.name AS exchange, q.name AS queue, b.binding_key, b.arguments
	  FROM mq.cat_binding b
	  JOIN mq.cat_exchange e ON e.id = b.exchange_id
	  JOIN mq.cat_queue q ON q.id = b.queue_id
	UNION ALL
	SELECT '' AS exchange, q.name, q.name, '{}'::jsonb
	  FROM mq.cat_queue q;

GRANT SELECT ON mq.queues, mq.stream_partitions, mq.exchanges, mq.bindings TO PUBLIC;

-- ---- issue 13: mq.replication ----
-- One row per walsender (as pg_stat_replication shows it to the reader:
-- without pg_read_all_stats its columns are NULL), each with the summary;
-- with no standby one row, the summary alone (quorum_met false).
CREATE VIEW mq.replication AS
	SELECT s.required_sync_standbys, s.connected_sync_standbys, s.quorum_met,
		   s.commits_without_quorum, s.without_quorum_since,
		   r.application_name, r.client_addr, r.state, r.sync_state,
		   r.sync_priority, r.sent_lsn, r.write_lsn, r.flush_lsn, r.replay_lsn,
		   pg_wal_lsn_diff(s.current_lsn, r.flush_lsn)::bigint AS flush_lag_bytes,
		   pg_wal_lsn_diff(s.current_lsn, r.replay_lsn)::bigint AS replay_lag_bytes,
		   r.write_lag, r.flush_lag, r.replay_lag, r.reply_time
	  FROM mq._replication_summary() s
	  LEFT JOIN pg_stat_replication r ON true;
GRANT SELECT ON mq.replication TO PUBLIC;
-- ---- end of issue 13 block ----

-- Predeclared exchanges, usable (publish, bind) by everyone
INSERT INTO mq.cat_exchange (name, type, durable, owner)
SELECT x.name, x.type, true, (SELECT oid FROM pg_roles WHERE rolname = current_user)
  FROM (VALUES ('', 'direct'), ('amq.direct', 'direct'), ('amq.topic', 'topic'),
			   ('amq.fanout', 'fanout'), ('amq.headers', 'headers')) AS x(name, type);
INSERT INTO mq.cat_grant (object_kind, object_id, grantee, privilege)
SELECT 'x', e.id, 0, p.priv
  FROM mq.cat_exchange e, (VALUES ('publish'), ('consume')) AS p(priv);

-- end of broker API section

------------------------------------------------------------------------
-- Transactional (half) messages (src/half.c, checked back by the worker)
------------------------------------------------------------------------
CREATE TABLE mq.cat_producer_group (
	name		text PRIMARY KEY,
	check_function regprocedure NOT NULL,
	check_after interval NOT NULL,
	check_interval interval NOT NULL,
	max_checks	int NOT NULL,
	on_exhausted text NOT NULL,
	owner		oid NOT NULL
);

-- One row per half message; small and short-lived (decided ones are
-- deleted by the maintenance worker after mq.half_retention).
CREATE TABLE mq.half (
	half_id		bigint PRIMARY KEY,
	producer_group text NOT NULL REFERENCES mq.cat_producer_group ON DELETE CASCADE,
	exchange	text NOT NULL,
	routing_key text NOT NULL,
	state		text NOT NULL DEFAULT 'pending',	-- committed, rolled_back, unroutable
	checks		int NOT NULL DEFAULT 0,
	last_check	timestamptz,
	last_outcome text,
	created_at	timestamptz NOT NULL DEFAULT now(),
	decided_at	timestamptz,
	decided_by	text
);
CREATE INDEX half_pending ON mq.half (created_at) WHERE state = 'pending';
REVOKE ALL ON mq.cat_producer_group, mq.half FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('mq.cat_producer_group', '');

CREATE FUNCTION mq._producer_group_declare_impl(producer_group text, check_function regprocedure,
	check_after interval, check_interval interval, max_checks int, on_exhausted text, caller oid)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	pg mq.cat_producer_group;
	fn pg_proc;
BEGIN
	SELECT * INTO fn FROM pg_proc WHERE oid = check_function;
	IF fn.pronargs <> 3 OR fn.proargtypes[0] <> 'bigint'::regtype OR fn.proargtypes[1] <> 'jsonb'::regtype
	   OR fn.proargtypes[2] <> 'bytea'::regtype OR fn.prorettype <> 'text'::regtype THEN
		RAISE EXCEPTION 'check function % has the wrong signature', check_function
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'It must be f(half_id bigint, headers jsonb, body bytea) RETURNS text.';
	END IF;
	IF check_after IS NULL OR check_after < '0' OR check_interval IS NULL OR check_interval <= '0' THEN
		RAISE EXCEPTION 'check_after must not be negative and check_interval must be positive'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF max_checks IS NULL OR max_checks < 1 THEN
		RAISE EXCEPTION 'max_checks must be at least 1' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF on_exhausted IS NULL OR on_exhausted NOT IN ('commit', 'rollback') THEN
		RAISE EXCEPTION 'invalid on_exhausted "%"', on_exhausted
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Use commit or rollback.';
	END IF;
	SELECT * INTO pg FROM mq.cat_producer_group g WHERE g.name = producer_group FOR UPDATE;
	IF FOUND THEN
		IF (pg.check_function, pg.check_after, pg.check_interval, pg.max_checks, pg.on_exhausted)
		   IS DISTINCT FROM (check_function, check_after, check_interval, max_checks, on_exhausted) THEN
			RAISE EXCEPTION 'producer group "%" already exists with different settings', producer_group
				USING ERRCODE = 'object_not_in_prerequisite_state';
		END IF;
		RETURN;
	END IF;
	INSERT INTO mq.cat_producer_group VALUES (producer_group, check_function, check_after,
		check_interval, max_checks, on_exhausted, caller);
END
$$;
REVOKE ALL ON FUNCTION mq._producer_group_declare_impl FROM PUBLIC;

CREATE FUNCTION mq.producer_group_declare(producer_group text, check_function regprocedure,
	check_after interval DEFAULT '6 seconds', check_interval interval DEFAULT '60 seconds',
	max_checks int DEFAULT 15, on_exhausted text DEFAULT 'rollback')
RETURNS void AS 'MODULE_PATHNAME', 'mq_producer_group_declare' LANGUAGE C;

CREATE FUNCTION mq.publish_half(exchange text, routing_key text, body bytea,
	producer_group text, headers jsonb DEFAULT NULL, key text DEFAULT NULL,
	tag text DEFAULT NULL, message_group text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_half' LANGUAGE C;
CREATE FUNCTION mq.publish_half(exchange text, routing_key text, body text,
	producer_group text, headers jsonb DEFAULT NULL, key text DEFAULT NULL,
	tag text DEFAULT NULL, message_group text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_half' LANGUAGE C;
CREATE FUNCTION mq.publish_half(exchange text, routing_key text, body jsonb,
	producer_group text, headers jsonb DEFAULT NULL, key text DEFAULT NULL,
	tag text DEFAULT NULL, message_group text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_half' LANGUAGE C;

-- Decide a half message: 'commit' routes it (to the queues bound at this
-- moment; an error, changing nothing, when it routes nowhere), 'rollback'
-- discards it.  Returns the message id when committed.
CREATE FUNCTION mq.end_half(half_id bigint, action text)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_end_half' LANGUAGE C;

CREATE VIEW mq.half_messages AS
	SELECT h.half_id, h.producer_group, h.exchange, h.routing_key, h.state, h.checks,
		   h.last_check, h.last_outcome, h.created_at, h.decided_at, h.decided_by
	  FROM mq.half h;
GRANT SELECT ON mq.half_messages TO PUBLIC;

------------------------------------------------------------------------
-- Delayed messages and maintenance (src/worker.c)
------------------------------------------------------------------------
-- Timers of delayed messages, fired by the worker (src/timers.c)
CREATE TABLE mq.timer (
	due			timestamptz NOT NULL,
	queue_id	int4 NOT NULL,
	lane		int2 NOT NULL,
	msg_id		int8 NOT NULL,
	expires_at	timestamptz NOT NULL,
	delivery_count int,				-- a nack with delay: deliveries so far
	body_size	int,				-- for x-max-length-bytes queues only
	group_hash	int					-- for ordered queues only
);
CREATE INDEX timer_due ON mq.timer (due);
CREATE INDEX timer_msg ON mq.timer (msg_id);
REVOKE ALL ON mq.timer FROM PUBLIC;

-- Cancel a delayed message that is not due yet, in every queue holding it.
CREATE FUNCTION mq.cancel(msg_id bigint)
RETURNS int AS 'MODULE_PATHNAME', 'mq_cancel' LANGUAGE C;

-- Drop message log segments that no queue entry refers to any more.
CREATE FUNCTION mq.log_retire(max_segments int DEFAULT 1000)
RETURNS int AS 'MODULE_PATHNAME', 'mq_log_retire' LANGUAGE C;

CREATE VIEW mq.segments AS
	SELECT s.segno, s.relid::regclass AS relation, s.durable, s.created_at,
		   pg_relation_size(s.relid) AS bytes,
		   s.segno << 26 AS first_msg_id, ((s.segno + 1) << 26) - 1 AS last_msg_id
	  FROM mq.cat_segment s;
GRANT SELECT ON mq.segments TO PUBLIC;

-- end of half messages and maintenance section

------------------------------------------------------------------------
-- Tracing a message's life (src/consume.c checks the caller may read it)
------------------------------------------------------------------------
CREATE FUNCTION mq._trace_impl(msg_id bigint)
RETURNS TABLE (event text, queue text, at timestamptz, detail jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	q record;
	r record;
	t record;
	seg regclass;
	m record;
	mid bigint := msg_id;
	pos bigint;
	k bigint;
BEGIN
	SELECT s.relid::regclass INTO seg FROM mq.cat_segment s WHERE s.segno = mid >> 26
	UNION ALL
	SELECT i.relid::regclass FROM mq.cat_inline i WHERE i.segno = mid >> 26;
	IF seg IS NULL THEN
		RETURN;
	END IF;
	EXECUTE format('SELECT published_at, exchange, routing_key, key FROM %s WHERE ctid = $1', seg)
		INTO m USING format($f$(%s,%s)$f$, (mid >> 9) & 131071, mid & 511)::tid;
	IF m IS NULL THEN
		RETURN;
	END IF;
	event := 'published'; queue := NULL; at := m.published_at;
	detail := jsonb_build_object('exchange', m.exchange, 'routing_key', m.routing_key, 'key', m.key);
	RETURN NEXT;
	FOR r IN SELECT h.state, h.checks, h.decided_at, h.decided_by FROM mq.half h WHERE h.half_id = mid LOOP
		event := 'half_' || r.state; queue := NULL; at := r.decided_at;
		detail := jsonb_build_object('checks', r.checks, 'decided_by', r.decided_by);
		RETURN NEXT;
	END LOOP;
	FOR r IN SELECT c.name, tm.due FROM mq.timer tm JOIN mq.cat_queue c ON c.id = tm.queue_id
			  WHERE tm.msg_id = mid LOOP
		event := 'delayed'; queue := r.name; at := r.due; detail := NULL;
		RETURN NEXT;
	END LOOP;
	FOR q IN SELECT c.id, c.name FROM mq.cat_queue c ORDER BY c.name LOOP
		FOR t IN SELECT cl.relname FROM pg_class cl
				  WHERE cl.relnamespace = 'mq'::regnamespace AND cl.relname LIKE 'q' || q.id || '\_%'
				  ORDER BY cl.relname LOOP
			FOR r IN EXECUTE format('SELECT ctid, visible_at FROM mq.%I WHERE msg_id = $1', t.relname)
					 USING mid LOOP
				event := 'routed'; queue := q.name; at := r.visible_at;
				detail := jsonb_build_object('entry_log', t.relname);
				RETURN NEXT;
				-- its settlement: kind << 56 | generation << 40 | block << 16 | offset
				pos := (split_part(t.relname, '_', 3)::bigint << 40)
					| (((r.ctid::text::point)[0])::bigint << 16) | ((r.ctid::text::point)[1])::bigint;
				FOR k IN EXECUTE format('SELECT settlement >> 56 FROM mq.%I '
										'WHERE settlement & ((1::bigint << 56) - 1) = $1 '
										'AND settlement >> 56 IN (1, 2, 4, 5)',
										's' || substr(t.relname, 2)) USING pos LOOP
					queue := q.name; at := NULL; detail := NULL;
					IF k IN (1, 5) THEN
						-- an ack (or auto-ack) or a nack settles a delivery
						event := 'delivered';
						RETURN NEXT;
					END IF;
					event := CASE k WHEN 1 THEN 'acked' WHEN 2 THEN 'dead_lettered'
								WHEN 4 THEN 'dropped' ELSE 'requeued_with_delay' END;
					RETURN NEXT;
				END LOOP;
			END LOOP;
		END LOOP;
	END LOOP;
END
$$;
REVOKE ALL ON FUNCTION mq._trace_impl FROM PUBLIC;

-- The life of a message: published, routed to which queues, delayed,
-- acked or dead-lettered (settlements are kept until their generation of
-- the queue is retired), half-message decisions.
CREATE FUNCTION mq.trace(msg_id bigint)
RETURNS TABLE (event text, queue text, at timestamptz, detail jsonb)
AS 'MODULE_PATHNAME', 'mq_trace' LANGUAGE C;

------------------------------------------------------------------------
-- Consumer groups of stream queues (src/group_sql.c, src/queue/queue_group.c)
------------------------------------------------------------------------

-- A group's dead-letter queue %DLQ%<group>: a classic queue owned by the
-- extension owner, made when first needed; grantee (if any) gets consume.
CREATE FUNCTION mq._group_dlq_create(dlq text, grantee oid)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	qid int;
BEGIN
	BEGIN
		PERFORM mq._queue_declare_impl(dlq, 'classic', true, '{}',
			(SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'mq'));
	EXCEPTION WHEN unique_violation THEN
		NULL;					-- declared at the same time by another session
	END;
	SELECT c.id INTO qid FROM mq.cat_queue c WHERE c.name = dlq;
	IF grantee IS NOT NULL AND qid IS NOT NULL THEN
		INSERT INTO mq.cat_grant (object_kind, object_id, grantee, privilege)
		VALUES ('q', qid, grantee, 'consume') ON CONFLICT DO NOTHING;
		PERFORM mq._topology_changed();
	END IF;
END
$$;

-- Declare a group: 0 if it exists with these options (a NOTICE when only
-- start differs), else the new group's id; its logs for every existing
-- lane generation are created here, its start floors by the caller.
CREATE FUNCTION mq._group_declare_impl(queue_id int, group_name text, mode text, start text,
	filter text, filter_type text, ordered boolean, max_retries int,
	retry_delays interval[], caller oid)
RETURNS int LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	g mq.cat_group;
	gid int;
	rel record;
BEGIN
	-- declares of groups of one stream take turns (and see each other)
	PERFORM 1 FROM mq.cat_queue c WHERE c.id = queue_id FOR UPDATE;
	SELECT * INTO g FROM mq.cat_group c WHERE c.queue_id = _group_declare_impl.queue_id
	   AND c.name = group_name;
	IF FOUND THEN
		IF g.mode <> mode THEN
			RAISE EXCEPTION 'consumer group "%" already exists with mode "%"', group_name, g.mode
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('It was declared with mode "%s", not "%s".', g.mode, mode);
		ELSIF g.filter IS DISTINCT FROM filter OR g.filter_type <> filter_type THEN
			RAISE EXCEPTION 'consumer group "%" already exists with another filter', group_name
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('It was declared with filter %s (%s).',
									  coalesce(quote_literal(g.filter), 'NULL'), g.filter_type);
		ELSIF g.ordered <> ordered THEN
			RAISE EXCEPTION 'consumer group "%" already exists with ordered = %', group_name, g.ordered
				USING ERRCODE = 'object_not_in_prerequisite_state';
		ELSIF g.max_retries <> max_retries THEN
			RAISE EXCEPTION 'consumer group "%" already exists with max_retries = %', group_name, g.max_retries
				USING ERRCODE = 'object_not_in_prerequisite_state';
		ELSIF g.retry_delays IS DISTINCT FROM retry_delays THEN
			RAISE EXCEPTION 'consumer group "%" already exists with retry_delays = %', group_name,
					coalesce(g.retry_delays::text, 'NULL')
				USING ERRCODE = 'object_not_in_prerequisite_state';
		ELSIF g.start <> start THEN
			RAISE NOTICE 'consumer group "%" already exists: start "%" applies only when a group is created', group_name, start
				USING DETAIL = format('It was created with start "%s".', g.start);
		END IF;
		RETURN 0;
	END IF;
	INSERT INTO mq.cat_group (queue_id, name, mode, start, filter, filter_type, ordered,
							  max_retries, retry_delays)
	VALUES (queue_id, group_name, mode, start, filter, filter_type, ordered, max_retries,
			retry_delays)
	RETURNING id INTO gid;
	FOR rel IN SELECT (regexp_match(c.relname, '^q\d+_(\d+)_(\d+)$'))::int[] AS lg
				 FROM pg_class c
				WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r'
				  AND c.relname LIKE 'q' || queue_id || '\_%' LOOP
		PERFORM mq._group_log_create(queue_id, gid, rel.lg[1], rel.lg[2]);
	END LOOP;
	PERFORM mq._group_dlq_create('%DLQ%' || group_name, caller);
	PERFORM mq._topology_changed();
	RETURN gid;
END
$$;

-- BEGIN broadcast consumer groups (issue 12, stream-broadcast): DDL block 2/3
-- (changed: _group_delete_impl and _group_seek_impl now return int[], the
-- ids of the group's broadcast consumers, whose shared state the caller
-- drops after commit and, for a seek, whose logs it writes FLOORs to)
CREATE FUNCTION mq._group_delete_impl(queue_id int, group_id int)
RETURNS int[] LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	ids int[];
	cid int;
BEGIN
	-- waits for a consumer being created (it holds the row FOR KEY SHARE)
	PERFORM 1 FROM mq.cat_group g WHERE g.id = group_id FOR UPDATE;
	WITH d AS (DELETE FROM mq.cat_group_consumer c WHERE c.group_id = _group_delete_impl.group_id
			   RETURNING c.id)
	SELECT coalesce(array_agg(d.id ORDER BY d.id), '{}') INTO ids FROM d;
	DELETE FROM mq.cat_group g WHERE g.id = group_id;
	PERFORM mq._group_log_drop(format('g%s\_%s\_%%', queue_id, group_id));
	FOREACH cid IN ARRAY ids LOOP
		PERFORM mq._group_log_drop(format('g%s\_%s\_%%', queue_id, cid));
	END LOOP;
	PERFORM mq._topology_changed();
	RETURN ids;
END
$$;

-- mq.seek: empty the group's settlement logs of one partition (NULL: all)
-- in the seek's transaction, and those of each of its broadcast consumers
-- (returned); the caller then writes a FLOOR at the sought position in
-- each (src/group_sql.c).  TRUNCATE waits for the transactions that wrote
-- to those logs.
CREATE FUNCTION mq._group_seek_impl(queue_id int, group_id int, lane int)
RETURNS int[] LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rel oid;
	ids int[];
	sid int;
BEGIN
	-- waits for a consumer being created (it holds the row FOR KEY SHARE)
	PERFORM 1 FROM mq.cat_group g WHERE g.id = group_id FOR UPDATE;
	SELECT coalesce(array_agg(c.id ORDER BY c.id), '{}') INTO ids
	  FROM mq.cat_group_consumer c WHERE c.group_id = _group_seek_impl.group_id;
	FOREACH sid IN ARRAY group_id || ids LOOP
		FOR rel IN SELECT c.oid FROM pg_class c
					WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r'
					  AND c.relname LIKE CASE WHEN lane IS NULL
							THEN format('g%s\_%s\_%%', queue_id, sid)
							ELSE format('g%s\_%s\_%s\_%%', queue_id, sid, lane) END
					ORDER BY c.relname LOOP
			EXECUTE format('TRUNCATE %s', rel::regclass);
		END LOOP;
	END LOOP;
	RETURN ids;
END
$$;

-- A consumer of a broadcast group, at its first mq.consume: its id, and
-- whether it is new (then its logs of every existing lane generation are
-- made here and the caller copies the group's start into them).
-- Concurrent first consumes of one name: one inserts, the others find it.
CREATE FUNCTION mq._group_consumer_create(queue_id int, group_id int, consumer text)
RETURNS text LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	cid int;
	rel record;
BEGIN
	-- a group_delete or seek in progress: wait for it (and see it)
	PERFORM 1 FROM mq.cat_group g WHERE g.id = group_id AND g.mode = 'broadcast' FOR KEY SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'broadcast consumer group % of queue % does not exist', group_id, queue_id
			USING ERRCODE = 'undefined_object';
	END IF;
	INSERT INTO mq.cat_group_consumer (group_id, consumer)
	VALUES (group_id, consumer) ON CONFLICT DO NOTHING RETURNING id INTO cid;
	IF cid IS NULL THEN
		SELECT c.id INTO cid FROM mq.cat_group_consumer c
		 WHERE c.group_id = _group_consumer_create.group_id
		   AND c.consumer = _group_consumer_create.consumer;
		IF cid IS NULL THEN
			-- made by a transaction this one's snapshot does not see
			RAISE EXCEPTION 'consumer "%" of a broadcast group was created concurrently', consumer
				USING ERRCODE = 'serialization_failure';
		END IF;
		RETURN cid || ' old';
	END IF;
	FOR rel IN SELECT (regexp_match(c.relname, '^q\d+_(\d+)_(\d+)$'))::int[] AS lg
				 FROM pg_class c
				WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r'
				  AND c.relname LIKE 'q' || queue_id || '\_%' LOOP
		PERFORM mq._group_log_create(queue_id, cid, rel.lg[1], rel.lg[2]);
	END LOOP;
	PERFORM mq._topology_changed();
	RETURN cid || ' new';
END
$$;
REVOKE ALL ON FUNCTION mq._group_consumer_create FROM PUBLIC;
-- END broadcast consumer groups: DDL block 2/3

REVOKE ALL ON FUNCTION mq._group_dlq_create, mq._group_declare_impl,
	mq._group_delete_impl, mq._group_seek_impl FROM PUBLIC;

CREATE FUNCTION mq.group_declare(queue text, group_name text, mode text DEFAULT 'clustering',
	start text DEFAULT 'latest', filter text DEFAULT NULL, filter_type text DEFAULT 'tag',
	ordered boolean DEFAULT false, max_retries int DEFAULT 16,
	retry_delays interval[] DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'mq_group_declare' LANGUAGE C;
CREATE FUNCTION mq.group_delete(queue text, group_name text)
RETURNS void AS 'MODULE_PATHNAME', 'mq_group_delete' LANGUAGE C;
CREATE FUNCTION mq.seek(queue text, group_name text, to_offset bigint DEFAULT NULL,
	to_time timestamptz DEFAULT NULL, "partition" int DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'mq_seek' LANGUAGE C;

CREATE FUNCTION mq._consumer_groups()
RETURNS TABLE (queue text, group_name text, mode text, "partition" int, consumer text,
	committed_offset bigint, end_offset bigint, lag bigint, in_flight int, retrying int,
	dead_lettered bigint, consumers int, last_delivery timestamptz, idle interval)
AS 'MODULE_PATHNAME', 'mq_consumer_groups' LANGUAGE C;

-- One row per group and partition, from bounded state (src/group_sql.c)
CREATE VIEW mq.consumer_groups AS SELECT * FROM mq._consumer_groups();
GRANT SELECT ON mq.consumer_groups TO PUBLIC;

------------------------------------------------------------------------
-- Redrive (issue 12; new with ordered groups, src/redrive_sql.c): move the
-- ready messages of a dead-letter queue back to the queue they came from
-- (x-dlq-origin-queue, x-last-death-queue) or to target_queue; returns how
-- many moved.  Not STRICT: a NULL source_queue is 22004.
------------------------------------------------------------------------
CREATE FUNCTION mq.redrive(source_queue text, target_queue text DEFAULT NULL,
	max_messages int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_redrive' LANGUAGE C;

------------------------------------------------------------------------
-- BEGIN backup and restore (issue 13, dump-restore)
-- pg_dump cannot restore the broker from its own tables: message ids are
-- positions in the log segments (a COPY gives rows new ones), the lane
-- tables are made at run time, and cat_queue.lanes holds their OIDs.  So
-- the live catalog is not dumped (its config-dump filter is WHERE false)
-- and mq.export() writes a logical snapshot of the broker into the three
-- export_* tables, which pg_dump and pg_dumpall dump as extension
-- configuration; mq.import() in the restored database declares the
-- topology again and puts every message back (docs/operations.md,
-- "Backup and restore").
------------------------------------------------------------------------
SELECT pg_catalog.pg_extension_config_dump('mq.cat_exchange', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_queue', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_binding', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_grant', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_consumer', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_group_consumer', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('mq.cat_producer_group', 'WHERE false');

-- what to declare, in seq order: kind exchange, queue, binding, grant,
-- consumer, group, producer_group; args as the declaring call needs them
CREATE TABLE mq.export_topology (
	seq			int PRIMARY KEY,
	kind		text NOT NULL,
	args		jsonb NOT NULL
);
-- every message not acked: state ready (in a queue lane or a stream
-- partition, with its offset there), delayed (due then) or half (pending)
CREATE TABLE mq.export_message (
	seq			bigint PRIMARY KEY,
	queue		text,				-- NULL for a half message
	lane		int,
	state		text NOT NULL CHECK (state IN ('ready', 'delayed', 'half')),
	"offset"	bigint,
	due			timestamptz,		-- deliverable from (a stream: stored at)
	expires_at	timestamptz,
	producer_group text,
	exchange	text NOT NULL,
	routing_key text NOT NULL,
	body		bytea NOT NULL,
	headers		jsonb,
	properties	jsonb,
	key			text,
	tag			text,
	message_group text,
	published_at timestamptz NOT NULL
);
-- committed offsets of consumer groups (consumer: of a broadcast group;
-- NULL: the group itself)
CREATE TABLE mq.export_position (
	queue		text NOT NULL,
	group_name	text NOT NULL,
	consumer	text,
	"partition" int NOT NULL,
	committed_offset bigint NOT NULL,
	settled		bigint[] NOT NULL DEFAULT '{}'	-- offsets settled above it
);
REVOKE ALL ON mq.export_topology, mq.export_message, mq.export_position FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('mq.export_topology', '');
SELECT pg_catalog.pg_extension_config_dump('mq.export_message', '');
SELECT pg_catalog.pg_extension_config_dump('mq.export_position', '');

CREATE FUNCTION mq._import_message(queue text, lane int, visible_at timestamptz,
	expires_at timestamptz, exchange text, routing_key text, body bytea, headers jsonb,
	properties jsonb, key text, tag text, message_group text, published_at timestamptz)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_import_message' LANGUAGE C;
CREATE FUNCTION mq._import_position(queue text, group_name text, consumer text,
	"partition" int, to_offset bigint, settled bigint[])
RETURNS void AS 'MODULE_PATHNAME', 'mq_import_position' LANGUAGE C;
REVOKE ALL ON FUNCTION mq._import_message, mq._import_position FROM PUBLIC;

-- The snapshot of one transaction: REPEATABLE READ or SERIALIZABLE, so that
-- a timer that fires, a message that is acked or published meanwhile is
-- seen in one place only.  Returns the number of messages exported.
CREATE FUNCTION mq.export()
RETURNS bigint LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	q record;
	r record;
	gs record;
	n bigint;
	fl bigint;
	mask CONSTANT bigint := (1::bigint << 56) - 1;
BEGIN
	IF current_setting('transaction_isolation') NOT IN ('repeatable read', 'serializable') THEN
		RAISE EXCEPTION 'mq.export() needs a REPEATABLE READ or SERIALIZABLE transaction'
			USING ERRCODE = 'invalid_transaction_state',
				  HINT = 'BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT mq.export(); COMMIT;';
	END IF;
	TRUNCATE mq.export_topology, mq.export_message, mq.export_position;

	-- topology, in the order mq.import() declares it
	INSERT INTO mq.export_topology
	SELECT row_number() OVER (ORDER BY o, id), kind, args FROM (
		SELECT 1 AS o, e.id, 'exchange' AS kind,
			   jsonb_build_object('name', e.name, 'type', e.type, 'durable', e.durable,
				   'alternate_exchange', e.alternate_exchange, 'arguments', e.arguments,
				   'owner', e.owner::regrole::text) AS args
		  FROM mq.cat_exchange e WHERE e.name <> '' AND e.name NOT LIKE 'amq.%'
		UNION ALL
		SELECT 2, c.id, 'queue',
			   jsonb_build_object('name', c.name, 'type', c.type, 'durable', c.durable,
				   'arguments', c.arguments, 'owner', c.owner::regrole::text)
		  FROM mq.cat_queue c
		UNION ALL
		SELECT 3, 0, 'binding',
			   jsonb_build_object('queue', c.name, 'exchange', e.name,
				   'binding_key', b.binding_key, 'arguments', b.arguments)
		  FROM mq.cat_binding b JOIN mq.cat_queue c ON c.id = b.queue_id
			   JOIN mq.cat_exchange e ON e.id = b.exchange_id
		UNION ALL
		SELECT 4, 0, 'grant',
			   jsonb_build_object('object_kind', g.object_kind, 'privilege', g.privilege,
				   'object', coalesce(c.name, e.name),
				   'grantee', CASE WHEN g.grantee = 0 THEN NULL ELSE g.grantee::regrole::text END)
		  FROM mq.cat_grant g
			   LEFT JOIN mq.cat_queue c ON g.object_kind = 'q' AND c.id = g.object_id
			   LEFT JOIN mq.cat_exchange e ON g.object_kind = 'x' AND e.id = g.object_id
		 WHERE coalesce(c.name, e.name) IS NOT NULL
		UNION ALL
		SELECT 5, 0, 'consumer',
			   jsonb_build_object('queue', c.name, 'consumer', k.consumer, 'prefetch', k.prefetch)
		  FROM mq.cat_consumer k JOIN mq.cat_queue c ON c.id = k.queue_id
		UNION ALL
		SELECT 6, g.id, 'group',
			   jsonb_build_object('queue', c.name, 'name', g.name, 'mode', g.mode,
				   'start', g.start, 'filter', g.filter, 'filter_type', g.filter_type,
				   'ordered', g.ordered, 'max_retries', g.max_retries,
				   'retry_delays', g.retry_delays::text[],
				   'consumers', (SELECT coalesce(jsonb_agg(k.consumer ORDER BY k.id), '[]')
								   FROM mq.cat_group_consumer k WHERE k.group_id = g.id))
		  FROM mq.cat_group g JOIN mq.cat_queue c ON c.id = g.queue_id
		UNION ALL
		SELECT 7, 0, 'producer_group',
			   jsonb_build_object('name', p.name, 'check_function', p.check_function::text,
				   'check_after', p.check_after, 'check_interval', p.check_interval,
				   'max_checks', p.max_checks, 'on_exhausted', p.on_exhausted,
				   'owner', p.owner::regrole::text)
		  FROM mq.cat_producer_group p
	) t;

	CREATE TEMP TABLE IF NOT EXISTS mq_export_settled (lane int, pos bigint) ON COMMIT DROP;
	-- the entries of each queue lane not settled: above the lane's highest
	-- FLOOR and without an ACK, DEAD, DROPPED or RETRY record (the replay
	-- of queue_load.c, as of this snapshot); a stream's retained entries
	FOR q IN SELECT c.id, c.name, c.type FROM mq.cat_queue c ORDER BY c.id LOOP
		TRUNCATE mq_export_settled;
		FOR r IN SELECT m[1]::int AS lane, m[2]::int AS gen, c.relname
				   FROM pg_class c, regexp_match(c.relname, '^s' || q.id || '_(\d+)_(\d+)$') m
				  WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r' AND m IS NOT NULL
					AND q.type <> 'stream' LOOP
			EXECUTE format('INSERT INTO mq_export_settled SELECT $1, CASE WHEN s.settlement >> 56 = 3 '
						   'THEN -(s.settlement & $2) ELSE s.settlement & $2 END FROM mq.%I s '
						   'WHERE s.settlement >> 56 IN (1, 2, 3, 4, 5)', r.relname)
				USING r.lane, mask;
		END LOOP;
		FOR r IN SELECT m[1]::int AS lane, m[2]::int AS gen, c.relname
				   FROM pg_class c, regexp_match(c.relname, '^q' || q.id || '_(\d+)_(\d+)$') m
				  WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r' AND m IS NOT NULL
				  ORDER BY 1, 2 LOOP
			-- floors are kept negated: the highest is the lowest value
			SELECT coalesce(-min(s.pos), 0) INTO fl FROM mq_export_settled s
			 WHERE s.lane = r.lane AND s.pos < 0;
			EXECUTE format($x$
				INSERT INTO mq.export_message (seq, queue, lane, state, "offset", due, expires_at,
					exchange, routing_key, body, headers, properties, key, tag, message_group,
					published_at)
				SELECT (SELECT coalesce(max(seq), 0) FROM mq.export_message)
						 + row_number() OVER (ORDER BY e.pos),
					   $1, $2, 'ready', e."offset", e.visible_at, e.expires_at, m.exchange, m.routing_key,
					   m.body, m.headers, m.properties, m.key, m.tag, m.message_group,
					   m.published_at
				  FROM (SELECT x.visible_at, x.msg_id, x.expires_at, %s AS "offset",
							   ($3::bigint << 40) | (((x.ctid::text::point)[0])::bigint << 16)
								| ((x.ctid::text::point)[1])::bigint AS pos
						  FROM mq.%I x) e
					   CROSS JOIN LATERAL mq.message(e.msg_id) m
				 WHERE e.pos >= $4
				   AND NOT EXISTS (SELECT 1 FROM mq_export_settled s
									WHERE s.lane = $2 AND s.pos = e.pos)$x$,
				-- only streams have the column (0.1's entry logs have four)
				CASE WHEN q.type = 'stream' THEN 'x."offset"' ELSE 'NULL::bigint' END, r.relname)
				USING q.name, r.lane, r.gen, fl;
		END LOOP;
	END LOOP;

	-- delayed messages (and nacks with a delay): one per armed timer
	INSERT INTO mq.export_message (seq, queue, lane, state, due, expires_at, exchange,
		routing_key, body, headers, properties, key, tag, message_group, published_at)
	SELECT (SELECT coalesce(max(seq), 0) FROM mq.export_message)
			 + row_number() OVER (ORDER BY t.due, t.msg_id),
		   c.name, t.lane, 'delayed', t.due, t.expires_at, m.exchange, m.routing_key, m.body,
		   m.headers, m.properties, m.key, m.tag, m.message_group, m.published_at
	  FROM mq.timer t JOIN mq.cat_queue c ON c.id = t.queue_id
		   CROSS JOIN LATERAL mq.message(t.msg_id) m;

	-- half messages not decided yet
	INSERT INTO mq.export_message (seq, state, producer_group, exchange, routing_key, body,
		headers, properties, key, tag, message_group, published_at)
	SELECT (SELECT coalesce(max(seq), 0) FROM mq.export_message)
			 + row_number() OVER (ORDER BY h.half_id),
		   'half', h.producer_group, h.exchange, h.routing_key, m.body, m.headers,
		   m.properties, m.key, m.tag, m.message_group, m.published_at
	  FROM mq.half h CROSS JOIN LATERAL mq.message(h.half_id) m
	 WHERE h.state = 'pending';

	-- consumer groups, from their logs as of this snapshot: per group (a
	-- broadcast group: the group itself, where new consumers start, and
	-- each consumer) and partition, the committed offset (the first entry
	-- above the highest FLOOR not settled, else past the last) and the
	-- offsets settled above it (acked out of order)
	CREATE TEMP TABLE IF NOT EXISTS mq_export_entries (pos bigint, off bigint) ON COMMIT DROP;
	FOR q IN SELECT c.id AS qid, c.name AS queue, p.partition
			   FROM mq.cat_queue c JOIN mq.stream_partitions p ON p.queue = c.name
			  WHERE EXISTS (SELECT 1 FROM mq.cat_group g WHERE g.queue_id = c.id)
			  ORDER BY c.id, p.partition LOOP
		TRUNCATE mq_export_entries;
		FOR r IN SELECT m[1]::int AS gen, c.relname
				   FROM pg_class c, regexp_match(c.relname, '^q' || q.qid || '_' || q.partition || '_(\d+)$') m
				  WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r' AND m IS NOT NULL LOOP
			EXECUTE format('INSERT INTO mq_export_entries SELECT ($1::bigint << 40) '
						   '| (((x.ctid::text::point)[0])::bigint << 16) '
						   '| ((x.ctid::text::point)[1])::bigint, x."offset" FROM mq.%I x', r.relname)
				USING r.gen;
		END LOOP;
		FOR gs IN SELECT g.id AS sid, g.name AS group_name, NULL::text AS consumer
				   FROM mq.cat_group g WHERE g.queue_id = q.qid
				 UNION ALL
				 SELECT k.id, g.name, k.consumer
				   FROM mq.cat_group g JOIN mq.cat_group_consumer k ON k.group_id = g.id
				  WHERE g.queue_id = q.qid
				 ORDER BY 1 LOOP
			TRUNCATE mq_export_settled;
			FOR r IN SELECT c.relname, EXISTS (SELECT 1 FROM pg_attribute a
											   WHERE a.attrelid = c.oid AND a.attname = 'arg'
												 AND NOT a.attisdropped) AS has_arg
					   FROM pg_class c
					  WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r'
						AND c.relname ~ ('^g' || q.qid || '_' || gs.sid || '_' || q.partition || '_\d+$') LOOP
				EXECUTE format('INSERT INTO mq_export_settled SELECT $1, CASE WHEN s.settlement >> 56 = 3 '
							   'THEN -(s.settlement & $2) ELSE s.settlement & $2 END FROM mq.%I s '
							   'WHERE s.settlement >> 56 IN (1, 2, 3, 4, 5)', r.relname)
					USING q.partition, mask;
				-- ACK_RUN (12): arg entries acked from the record's position on
				-- (consecutive line pointers of one entry-log page)
				IF r.has_arg THEN
					EXECUTE format('INSERT INTO mq_export_settled SELECT $1, (s.settlement & $2) + i '
								   'FROM mq.%I s, generate_series(0, s.arg - 1) i '
								   'WHERE s.settlement >> 56 = 12', r.relname)
						USING q.partition, mask;
				END IF;
			END LOOP;
			SELECT coalesce(-min(s.pos), 0) INTO fl FROM mq_export_settled s WHERE s.pos < 0;
			SELECT coalesce(min(e.off) FILTER (WHERE NOT EXISTS (
						SELECT 1 FROM mq_export_settled s WHERE s.pos = e.pos)), max(e.off) + 1, 0)
			  INTO n FROM mq_export_entries e WHERE e.pos >= fl;
			INSERT INTO mq.export_position
			SELECT q.queue, gs.group_name, gs.consumer, q.partition, n,
				   coalesce(array_agg(e.off ORDER BY e.off), '{}')
			  FROM mq_export_entries e
			 WHERE e.pos >= fl AND e.off > n
			   AND EXISTS (SELECT 1 FROM mq_export_settled s WHERE s.pos = e.pos);
		END LOOP;
	END LOOP;

	SELECT count(*) INTO n FROM mq.export_message;
	RETURN n;
END
$$;

-- Into a database whose broker is empty (a fresh restore): declare what
-- mq.export() recorded, put its messages back, empty the export tables.
-- Returns the number of messages imported.
CREATE FUNCTION mq.import()
RETURNS bigint LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	t record;
	m record;
	rel regclass;
	owner_ oid := (SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'mq');
	n bigint := 0;
	tgt bigint;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM mq.export_topology) AND NOT EXISTS (SELECT 1 FROM mq.export_message) THEN
		RAISE EXCEPTION 'nothing to import'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Run mq.export() in the source database before pg_dump.';
	END IF;
	IF EXISTS (SELECT 1 FROM mq.cat_queue)
	   OR EXISTS (SELECT 1 FROM mq.cat_exchange e WHERE e.name <> '' AND e.name NOT LIKE 'amq.%')
	   OR EXISTS (SELECT 1 FROM mq.cat_producer_group) THEN
		RAISE EXCEPTION 'mq.import() needs a database whose broker is empty'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'It declares the exported queues and exchanges anew.';
	END IF;

	-- the lane tables and log segments pg_dump restored as plain tables
	-- (no catalog row refers to them): gone, their names are reused
	FOR rel IN SELECT c.oid::regclass FROM pg_class c
				WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'r'
				  AND c.relam = (SELECT a.oid FROM pg_am a WHERE a.amname = 'mqlog')
				  AND c.relname ~ '^([qsg]\d+_|log_\d+$)'
				  AND NOT EXISTS (SELECT 1 FROM pg_depend d
								   WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
									 AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e')
				  AND NOT EXISTS (SELECT 1 FROM mq.cat_segment s WHERE s.relid = c.oid) LOOP
		EXECUTE format('DROP TABLE %s', rel);
	END LOOP;
	-- and the queues' lock relations (composite types mq.a<id>)
	FOR rel IN SELECT c.oid::regclass FROM pg_class c
				WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind = 'c'
				  AND c.relname ~ '^a\d+$' LOOP
		EXECUTE format('DROP TYPE %s', rel);
	END LOOP;

	FOR t IN SELECT * FROM mq.export_topology ORDER BY seq LOOP
		CASE t.kind
		WHEN 'exchange' THEN
			PERFORM mq._exchange_declare_impl(t.args->>'name', t.args->>'type',
				(t.args->>'durable')::boolean, t.args->>'alternate_exchange',
				t.args->'arguments', (t.args->>'owner')::regrole::oid);
		WHEN 'queue' THEN
			PERFORM mq._queue_declare_impl(t.args->>'name', t.args->>'type',
				(t.args->>'durable')::boolean, t.args->'arguments',
				(t.args->>'owner')::regrole::oid);
		WHEN 'binding' THEN
			PERFORM mq._bind_impl(t.args->>'queue', t.args->>'exchange',
				t.args->>'binding_key', t.args->'arguments', false);
		WHEN 'grant' THEN
			INSERT INTO mq.cat_grant (object_kind, object_id, grantee, privilege)
			SELECT (t.args->>'object_kind')::"char",
				   CASE WHEN t.args->>'object_kind' = 'q'
						THEN (SELECT c.id FROM mq.cat_queue c WHERE c.name = t.args->>'object')
						ELSE (SELECT e.id FROM mq.cat_exchange e WHERE e.name = t.args->>'object') END,
				   coalesce((t.args->>'grantee')::regrole::oid, 0), t.args->>'privilege'
			ON CONFLICT DO NOTHING;
		WHEN 'consumer' THEN
			PERFORM mq._consumer_declare_impl(t.args->>'queue', t.args->>'consumer',
				(t.args->>'prefetch')::int, false);
		WHEN 'group' THEN
			PERFORM mq.group_declare(t.args->>'queue', t.args->>'name', t.args->>'mode',
				'earliest', t.args->>'filter', t.args->>'filter_type',
				(t.args->>'ordered')::boolean, (t.args->>'max_retries')::int,
				(SELECT array_agg(x::interval) FROM jsonb_array_elements_text(
					CASE WHEN jsonb_typeof(t.args->'retry_delays') = 'array'
						 THEN t.args->'retry_delays' ELSE '[]' END) x));
			UPDATE mq.cat_group g SET start = t.args->>'start'
			  FROM mq.cat_queue c
			 WHERE c.id = g.queue_id AND c.name = t.args->>'queue' AND g.name = t.args->>'name';
		WHEN 'producer_group' THEN
			INSERT INTO mq.cat_producer_group (name, check_function, check_after, check_interval,
				max_checks, on_exhausted, owner)
			VALUES (t.args->>'name', (t.args->>'check_function')::regprocedure,
				(t.args->>'check_after')::interval, (t.args->>'check_interval')::interval,
				(t.args->>'max_checks')::int, t.args->>'on_exhausted',
				(t.args->>'owner')::regrole::oid);
		ELSE
			RAISE EXCEPTION 'unknown kind "%" in mq.export_topology', t.kind
				USING ERRCODE = 'data_exception';
		END CASE;
	END LOOP;
	PERFORM mq._topology_changed();

	-- messages: queue lanes and stream partitions in their order (a
	-- stream's offsets are then 0, 1, ... per partition), delayed ones
	-- due at the same time, half ones pending again
	FOR m IN SELECT * FROM mq.export_message ORDER BY state = 'half', queue, lane, "offset", seq LOOP
		IF m.state = 'half' THEN
			PERFORM mq.publish_half(m.exchange, m.routing_key, m.body, m.producer_group,
				m.headers, m.key, m.tag, m.message_group);
		ELSE
			PERFORM mq._import_message(m.queue, m.lane,
				coalesce(m.due, m.published_at), m.expires_at,
				m.exchange, m.routing_key, m.body, m.headers, m.properties, m.key, m.tag,
				m.message_group, m.published_at);
		END IF;
		n := n + 1;
	END LOOP;

	-- groups: where they were, in offsets of the restored partitions (the
	-- number of exported messages of the partition below an old offset); a
	-- broadcast group itself first (where new consumers start: mq.seek
	-- moves its consumers too), then clustering groups and consumers
	FOR t IN SELECT p.*, g.mode FROM mq.export_position p
			   JOIN mq.cat_queue c ON c.name = p.queue
			   JOIN mq.cat_group g ON g.queue_id = c.id AND g.name = p.group_name
			  ORDER BY p.consumer IS NOT NULL, g.mode = 'clustering', p.queue, p.group_name,
					   p.consumer, p.partition LOOP
		SELECT count(*) INTO tgt FROM mq.export_message x
		 WHERE x.queue = t.queue AND x.lane = t.partition AND x."offset" < t.committed_offset;
		IF t.consumer IS NULL AND t.mode = 'broadcast' THEN
			PERFORM mq.seek(t.queue, t.group_name, to_offset => tgt, "partition" => t.partition);
		ELSE
			PERFORM mq._import_position(t.queue, t.group_name, t.consumer, t.partition, tgt,
				ARRAY(SELECT (SELECT count(*) FROM mq.export_message x
							   WHERE x.queue = t.queue AND x.lane = t.partition AND x."offset" < o)
						FROM unnest(t.settled) o ORDER BY o));
		END IF;
	END LOOP;

	TRUNCATE mq.export_topology, mq.export_message, mq.export_position;
	RETURN n;
END
$$;
REVOKE ALL ON FUNCTION mq.export(), mq.import() FROM PUBLIC;
-- END backup and restore

-- BEGIN RabbitMQ definitions (issue 15)
------------------------------------------------------------------------
-- RabbitMQ definitions: mq.definitions_import(json) declares what a
-- RabbitMQ definitions export (rabbitmqctl export_definitions, the
-- management API's GET /api/definitions) describes, as far as queue_ext
-- has it, and returns one row per object and decision, so that nothing is
-- dropped silently; mq.definitions_export() writes this database's
-- topology in that format.  docs/api.md, "RabbitMQ definitions".
------------------------------------------------------------------------

-- RabbitMQ's x-max-age ("7D", "12h", "1Y") as a retention ("7 days")
CREATE FUNCTION mq._rabbit_age(age text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
	m text[] := regexp_match(age, '^([0-9]+)([YMDhms])$');
BEGIN
	IF m IS NULL THEN
		RAISE EXCEPTION 'invalid x-max-age "%"', age
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'RabbitMQ''s form: a number and one of Y, M, D, h, m, s.';
	END IF;
	RETURN m[1]::bigint || ' ' || CASE m[2] WHEN 'Y' THEN 'years' WHEN 'M' THEN 'months'
		WHEN 'D' THEN 'days' WHEN 'h' THEN 'hours' WHEN 'm' THEN 'minutes' ELSE 'seconds' END;
END
$$;

-- A stream's retention as RabbitMQ's x-max-age, in the largest unit that
-- divides it (months count as 30 days, as for every queue_ext interval)
CREATE FUNCTION mq._rabbit_max_age(retention text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
	SELECT CASE WHEN s % 86400 = 0 THEN s / 86400 || 'D' WHEN s % 3600 = 0 THEN s / 3600 || 'h'
				WHEN s % 60 = 0 THEN s / 60 || 'm' ELSE s || 's' END
	  FROM (SELECT extract(epoch FROM retention::interval)::bigint AS s) x
$$;

CREATE FUNCTION mq.definitions_import(definitions jsonb, vhost text DEFAULT '/')
RETURNS TABLE (kind text, name text, action text, detail text)
LANGUAGE plpgsql AS $$
DECLARE
	o jsonb;
	p jsonb;
	args jsonb;
	pol jsonb;
	qtype text;
	xtype text;
	notes text[];
	k text;
	v jsonb;
	existed boolean;
	role_name text;
	-- queue arguments queue_ext has, by queue type
	classic_args CONSTANT text[] := ARRAY['x-message-ttl', 'x-max-length', 'x-max-length-bytes',
		'x-overflow', 'x-dead-letter-exchange', 'x-dead-letter-routing-key', 'x-delivery-limit',
		'x-max-priority'];
	-- policy keys that are queue arguments
	policy_args CONSTANT jsonb := '{"message-ttl": "x-message-ttl", "max-length": "x-max-length",
		"max-length-bytes": "x-max-length-bytes", "overflow": "x-overflow",
		"dead-letter-exchange": "x-dead-letter-exchange",
		"dead-letter-routing-key": "x-dead-letter-routing-key", "delivery-limit": "x-delivery-limit",
		"max-age": "x-max-age"}';
BEGIN
	IF definitions IS NULL OR jsonb_typeof(definitions) <> 'object' THEN
		RAISE EXCEPTION 'RabbitMQ definitions must be a JSON object'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Pass the file rabbitmqctl export_definitions writes.';
	END IF;
	IF vhost IS NULL THEN
		RAISE EXCEPTION 'vhost must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	FOR k IN SELECT jsonb_object_keys(definitions) LOOP
		IF k NOT IN ('rabbit_version', 'rabbitmq_version', 'product_name', 'product_version',
					 'vhosts', 'users', 'permissions', 'topic_permissions', 'parameters',
					 'global_parameters', 'policies', 'queues', 'exchanges', 'bindings') THEN
			RETURN QUERY SELECT 'definitions', k, 'skipped', 'unknown section';
		END IF;
	END LOOP;
	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'vhosts', '[]')) LOOP
		IF o->>'name' IS DISTINCT FROM vhost THEN
			RETURN QUERY SELECT 'vhost', o->>'name', 'skipped',
				format('only vhost %s is imported (import another into another database, vhost => %L)',
					   vhost, o->>'name');
		END IF;
	END LOOP;

	-- exchanges first: queues and bindings name them
	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'exchanges', '[]')) LOOP
		IF coalesce(o->>'vhost', '/') <> vhost THEN
			RETURN QUERY SELECT 'exchange', o->>'name', 'skipped', format('vhost %s', o->>'vhost');
			CONTINUE;
		END IF;
		notes := '{}';
		xtype := o->>'type';
		args := coalesce(o->'arguments', '{}');
		IF xtype = 'x-delayed-message' AND args ? 'x-delayed-type' THEN
			notes := notes || format('declared as %s: delays are per publish here (delay =>)',
									 args->>'x-delayed-type');
			xtype := args->>'x-delayed-type';
			args := args - 'x-delayed-type';
		END IF;
		IF coalesce((o->>'internal')::boolean, false) THEN
			notes := notes || 'internal is not supported: clients may publish to it'::text;
		END IF;
		IF coalesce((o->>'auto_delete')::boolean, false) THEN
			notes := notes || 'auto_delete is not supported: it stays until deleted'::text;
		END IF;
		IF xtype NOT IN ('direct', 'fanout', 'topic', 'headers') THEN
			RETURN QUERY SELECT 'exchange', o->>'name', 'skipped',
				format('exchange type %s is not supported', xtype);
			CONTINUE;
		END IF;
		existed := EXISTS (SELECT 1 FROM mq.cat_exchange e WHERE e.name = o->>'name');
		BEGIN
			PERFORM mq.exchange_declare(o->>'name', xtype,
				coalesce((o->>'durable')::boolean, true), arguments => args);
			RETURN QUERY SELECT 'exchange', o->>'name',
				CASE WHEN existed THEN 'exists' ELSE 'created' END,
				array_to_string(notes, '; ');
		EXCEPTION WHEN OTHERS THEN
			RETURN QUERY SELECT 'exchange', o->>'name', 'failed', SQLERRM;
		END;
	END LOOP;

	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'queues', '[]')) LOOP
		IF coalesce(o->>'vhost', '/') <> vhost THEN
			RETURN QUERY SELECT 'queue', o->>'name', 'skipped', format('vhost %s', o->>'vhost');
			CONTINUE;
		END IF;
		notes := '{}';
		args := coalesce(o->'arguments', '{}');
		qtype := coalesce(o->>'type', args->>'x-queue-type', 'classic');
		args := args - 'x-queue-type';
		IF qtype NOT IN ('classic', 'quorum', 'stream') THEN
			RETURN QUERY SELECT 'queue', o->>'name', 'skipped',
				format('queue type %s is not supported', qtype);
			CONTINUE;
		END IF;
		-- the policy that applies (highest priority), for what it sets of
		-- the queue's arguments; a queue's own argument wins
		SELECT x INTO pol FROM jsonb_array_elements(coalesce(definitions->'policies', '[]')) x
		 WHERE coalesce(x->>'vhost', '/') = vhost AND (o->>'name') ~ (x->>'pattern')
		   AND coalesce(x->>'apply-to', 'all') IN ('all', 'queues',
				CASE WHEN qtype = 'classic' THEN 'classic_queues' WHEN qtype = 'quorum' THEN 'quorum_queues'
					 ELSE 'streams' END)
		 ORDER BY coalesce((x->>'priority')::int, 0) DESC LIMIT 1;
		IF pol IS NOT NULL THEN
			FOR k, v IN SELECT * FROM jsonb_each(pol->'definition') LOOP
				IF policy_args ? k THEN
					IF NOT args ? (policy_args->>k) THEN
						args := args || jsonb_build_object(policy_args->>k, v);
					END IF;
				ELSE
					notes := notes || format('policy %s: %s not applied', pol->>'name', k);
				END IF;
			END LOOP;
			notes := notes || format('policy %s applied', pol->>'name');
		END IF;
		existed := EXISTS (SELECT 1 FROM mq.cat_queue c WHERE c.name = o->>'name');
		BEGIN
			IF qtype = 'stream' THEN
				-- a stream's arguments in queue_ext's words
				p := '{}';
				FOR k, v IN SELECT * FROM jsonb_each(args) LOOP
					IF k = 'x-max-age' THEN
						p := p || jsonb_build_object('retention', mq._rabbit_age(v #>> '{}'));
					ELSIF k = 'x-max-length-bytes' THEN
						p := p || jsonb_build_object('max_bytes', v);
					ELSE
						notes := notes || format('argument %s is not supported: dropped', k);
					END IF;
				END LOOP;
				args := p;
			ELSE
				FOR k IN SELECT jsonb_object_keys(args) LOOP
					IF NOT k = ANY (classic_args) OR (qtype = 'quorum' AND k = 'x-max-priority') THEN
						notes := notes || format('argument %s is not supported: dropped', k);
						args := args - k;
					END IF;
				END LOOP;
			END IF;
			IF coalesce((o->>'auto_delete')::boolean, false) THEN
				notes := notes || 'auto_delete is not supported: it stays until deleted'::text;
			END IF;
			PERFORM mq.queue_declare(o->>'name', qtype, coalesce((o->>'durable')::boolean, true), args);
			-- mq.queue_declare's warning (src/quorum.c), in the row too
			IF qtype = 'quorum' AND current_setting('synchronous_standby_names') = ''
			   AND (current_setting('mq.quorum_unavailable') = 'error'
					OR current_setting('mq.quorum_requires_standby')::boolean) THEN
				notes := notes || ('no synchronous standby is configured: publishes and acks will fail '
					'(53000) until one is; on a server without replicas: ALTER SYSTEM SET '
					'mq.quorum_unavailable = ''wait''; SELECT pg_reload_conf();')::text;
			END IF;
			RETURN QUERY SELECT 'queue', o->>'name',
				CASE WHEN existed THEN 'exists' ELSE 'created' END,
				array_to_string(notes, '; ');
		EXCEPTION WHEN OTHERS THEN
			RETURN QUERY SELECT 'queue', o->>'name', 'failed', SQLERRM;
		END;
	END LOOP;

	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'bindings', '[]')) LOOP
		k := format('%s -> %s (%s)', o->>'source', o->>'destination', o->>'routing_key');
		IF coalesce(o->>'vhost', '/') <> vhost THEN
			RETURN QUERY SELECT 'binding', k, 'skipped', format('vhost %s', o->>'vhost');
		ELSIF o->>'destination_type' = 'exchange' THEN
			RETURN QUERY SELECT 'binding', k, 'skipped', 'exchange-to-exchange bindings are not supported';
		ELSIF coalesce(o->>'source', '') = '' THEN
			RETURN QUERY SELECT 'binding', k, 'exists', 'the default exchange binds every queue';
		ELSE
			existed := EXISTS (SELECT 1 FROM mq.bindings b WHERE b.exchange = o->>'source'
								 AND b.queue = o->>'destination' AND b.binding_key = o->>'routing_key'
								 AND b.arguments = coalesce(o->'arguments', '{}'));
			BEGIN
				PERFORM mq.bind(o->>'destination', o->>'source', coalesce(o->>'routing_key', ''),
								coalesce(o->'arguments', '{}'));
				RETURN QUERY SELECT 'binding', k, CASE WHEN existed THEN 'exists' ELSE 'created' END, '';
			EXCEPTION WHEN OTHERS THEN
				RETURN QUERY SELECT 'binding', k, 'failed', SQLERRM;
			END;
		END IF;
	END LOOP;

	-- users become roles (without their passwords: RabbitMQ's hashes are
	-- not PostgreSQL's), permissions become grants on what exists now
	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'users', '[]')) LOOP
		role_name := o->>'name';
		IF role_name = 'guest' THEN
			RETURN QUERY SELECT 'user', role_name, 'skipped', 'RabbitMQ''s default user';
			CONTINUE;
		END IF;
		IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role_name) THEN
			RETURN QUERY SELECT 'user', role_name, 'exists', 'an existing role';
			CONTINUE;
		END IF;
		BEGIN
			EXECUTE format('CREATE ROLE %I LOGIN', role_name);
			RETURN QUERY SELECT 'user', role_name, 'created',
				concat_ws('; ', 'a login role without password: set one with ALTER ROLE ... PASSWORD',
						  CASE WHEN jsonb_array_length(coalesce(o->'tags', '[]')) > 0
							   THEN format('tags %s not applied', o->'tags') END);
		EXCEPTION WHEN OTHERS THEN
			RETURN QUERY SELECT 'user', role_name, 'failed', SQLERRM;
		END;
	END LOOP;
	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'permissions', '[]')) LOOP
		role_name := o->>'user';
		IF coalesce(o->>'vhost', '/') <> vhost THEN
			RETURN QUERY SELECT 'permission', role_name, 'skipped', format('vhost %s', o->>'vhost');
			CONTINUE;
		ELSIF NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role_name) THEN
			RETURN QUERY SELECT 'permission', role_name, 'skipped', 'no such role';
			CONTINUE;
		END IF;
		-- configure: queues and exchanges; write: publish to exchanges and
		-- queues; read: consume from queues (an empty or missing
		-- pattern grants nothing, as in RabbitMQ: nullif makes the match NULL)
		FOR k, xtype, qtype IN
			SELECT 'configure', 'queue', c.name FROM mq.cat_queue c WHERE c.name ~ nullif(o->>'configure', '')
			UNION ALL SELECT 'configure', 'exchange', e.name FROM mq.cat_exchange e
			 WHERE e.name ~ nullif(o->>'configure', '') AND e.name <> '' AND e.name NOT LIKE 'amq.%'
			UNION ALL SELECT 'publish', 'exchange', e.name FROM mq.cat_exchange e
			 WHERE e.name ~ nullif(o->>'write', '') AND e.name <> ''
			UNION ALL SELECT 'publish', 'queue', c.name FROM mq.cat_queue c WHERE c.name ~ nullif(o->>'write', '')
			UNION ALL SELECT 'consume', 'queue', c.name FROM mq.cat_queue c WHERE c.name ~ nullif(o->>'read', '')
		LOOP
			BEGIN
				PERFORM mq.grant(k, xtype, qtype, role_name::regrole);
				RETURN QUERY SELECT 'permission', role_name, 'granted', format('%s on %s %s', k, xtype, qtype);
			EXCEPTION WHEN OTHERS THEN
				RETURN QUERY SELECT 'permission', role_name, 'failed',
					format('%s on %s %s: %s', k, xtype, qtype, SQLERRM);
			END;
		END LOOP;
	END LOOP;

	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'policies', '[]')) LOOP
		RETURN QUERY SELECT 'policy', o->>'name',
			CASE WHEN coalesce(o->>'vhost', '/') = vhost THEN 'applied' ELSE 'skipped' END,
			CASE WHEN coalesce(o->>'vhost', '/') = vhost
				 THEN 'its queue arguments were given to the queues it matched at import; later queues do not get them'
				 ELSE format('vhost %s', o->>'vhost') END;
	END LOOP;
	FOR k IN SELECT unnest(ARRAY['topic_permissions', 'parameters', 'global_parameters']) LOOP
		FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->k, '[]')) LOOP
			IF k = 'global_parameters' AND o->>'name' IN ('cluster_name', 'internal_cluster_id') THEN
				CONTINUE;
			END IF;
			RETURN QUERY SELECT rtrim(k, 's'), coalesce(o->>'name', o->>'user'), 'skipped',
				format('%s are not supported', replace(k, '_', ' '));
		END LOOP;
	END LOOP;
END
$$;

CREATE FUNCTION mq.definitions_export()
RETURNS jsonb LANGUAGE sql STABLE AS $$
	SELECT jsonb_build_object(
		'product_name', 'queue_ext',
		'product_version', (SELECT extversion FROM pg_extension WHERE extname = 'queue_ext'),
		'vhosts', jsonb_build_array(jsonb_build_object('name', '/')),
		'users', '[]'::jsonb, 'permissions', '[]'::jsonb, 'topic_permissions', '[]'::jsonb,
		'parameters', '[]'::jsonb, 'global_parameters', '[]'::jsonb, 'policies', '[]'::jsonb,
		'queues', coalesce((SELECT jsonb_agg(jsonb_build_object(
				'name', c.name, 'vhost', '/', 'durable', c.durable, 'auto_delete', false,
				'type', c.type,
				'arguments', CASE WHEN c.type = 'stream' THEN
					jsonb_strip_nulls(jsonb_build_object('x-queue-type', 'stream',
						'x-max-age', mq._rabbit_max_age(c.arguments->>'retention'),
						'x-max-length-bytes', c.arguments->'max_bytes'))
					ELSE c.arguments || jsonb_build_object('x-queue-type', c.type) END)
				ORDER BY c.name)
			FROM mq.cat_queue c WHERE c.name NOT LIKE '\%DLQ\%%'), '[]'::jsonb),
		'exchanges', coalesce((SELECT jsonb_agg(jsonb_build_object(
				'name', e.name, 'vhost', '/', 'type', e.type, 'durable', e.durable,
				'auto_delete', false, 'internal', false,
				'arguments', e.arguments || CASE WHEN e.alternate_exchange IS NOT NULL
					THEN jsonb_build_object('alternate-exchange', e.alternate_exchange)
					ELSE '{}'::jsonb END)
				ORDER BY e.name)
			FROM mq.cat_exchange e WHERE e.name <> '' AND e.name NOT LIKE 'amq.%'), '[]'::jsonb),
		'bindings', coalesce((SELECT jsonb_agg(jsonb_build_object(
				'source', b.exchange, 'vhost', '/', 'destination', b.queue,
				'destination_type', 'queue', 'routing_key', b.binding_key, 'arguments', b.arguments)
				ORDER BY b.exchange, b.queue, b.binding_key)
			FROM mq.bindings b WHERE b.exchange <> ''), '[]'::jsonb))
$$;
-- END RabbitMQ definitions

-- ---- issue 15, metrics (src/stats.c, docs/metrics.md) ----
-- One row per Prometheus sample: the counters of each queue and consumer
-- group state since it was made (the first use after a start), and gauges
-- from bounded state (docs/metrics/queries.yaml maps them for
-- prometheus-postgres-exporter).
CREATE FUNCTION mq._metrics()
RETURNS TABLE (name text, labels jsonb, value double precision)
AS 'MODULE_PATHNAME', 'mq_metrics' LANGUAGE C;
CREATE VIEW mq.metrics AS SELECT * FROM mq._metrics();
GRANT SELECT ON mq.metrics TO PUBLIC;
-- ---- end of issue 15 metrics block ----
-- BEGIN lz4 restored (see the start of the script)
SELECT pg_catalog.set_config('default_toast_compression',
		pg_catalog.current_setting('queue_ext.saved_toast_compression'), true)
WHERE pg_catalog.current_setting('queue_ext.saved_toast_compression', true) <> '';
-- END lz4 restored
