------------------------------------------------------------------------
-- Topology: declare / delete / bind
--
-- Public functions are C (src/topology_sql.c): they check the caller's
-- privileges in C, then run the internal implementation below through SPI
-- as the extension owner.  The _impl functions are not executable by PUBLIC.
------------------------------------------------------------------------

-- A stream's retention (a JSON value) as an interval: 22023 when it is not
-- a positive interval or does not fit in microseconds (months count as 30
-- days, as src/catalog.c reads it).
CREATE OR REPLACE FUNCTION mq._stream_retention(queue text, v jsonb)
RETURNS interval LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	iv interval;
	secs numeric;
BEGIN
	BEGIN
		IF jsonb_typeof(v) <> 'string' THEN
			RAISE invalid_text_representation;
		END IF;
		iv := (v #>> '{}')::interval;
	EXCEPTION
		WHEN datetime_field_overflow OR interval_field_overflow THEN
			RAISE EXCEPTION 'retention % of stream queue "%" is too large', v, queue
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = 'The largest retention accepted is 106751991 days (about 292271 years).';
		WHEN invalid_text_representation OR invalid_datetime_format THEN
			RAISE EXCEPTION 'invalid value % for argument "retention" of stream queue "%"', v, queue
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = 'The value must be a positive interval, such as "72 hours".';
	END;
	secs := ((extract(year FROM iv) * 12 + extract(month FROM iv)) * 30 + extract(day FROM iv)) * 86400
		+ extract(hour FROM iv) * 3600 + extract(minute FROM iv) * 60 + extract(second FROM iv);
	IF secs <= 0 THEN
		RAISE EXCEPTION 'invalid value % for argument "retention" of stream queue "%"', v, queue
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The value must be a positive interval, such as "72 hours".';
	END IF;
	IF secs > 9223372036854.775807 THEN
		RAISE EXCEPTION 'retention % of stream queue "%" is too large', v, queue
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The largest retention accepted is 106751991 days (about 292271 years).';
	END IF;
	RETURN iv;
END
$$;

-- Validate the arguments of a stream queue (partitions, retention,
-- max_bytes, durability); classic-queue arguments are refused.  RabbitMQ's
-- x-max-age becomes the retention (mq._rabbit_age) and x-max-length-bytes
-- the max_bytes unless the native argument is given, which it must then
-- equal.
CREATE OR REPLACE FUNCTION mq._stream_args_check(queue text, arguments jsonb)
RETURNS jsonb LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	k text;
	v jsonb;
	age text;
	known constant text[] := ARRAY['partitions', 'retention', 'max_bytes', 'durability',
		'x-queue-type', 'x-max-age', 'x-max-length-bytes'];
	takes constant text := 'Stream queues take partitions, retention (or RabbitMQ''s x-max-age), '
		'max_bytes (or x-max-length-bytes), durability and x-queue-type.';
BEGIN
	IF arguments ? 'x-max-age' THEN
		IF jsonb_typeof(arguments->'x-max-age') <> 'string' THEN
			RAISE EXCEPTION 'invalid value % for argument "x-max-age" of stream queue "%"',
				arguments->'x-max-age', queue
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'RabbitMQ''s form: a positive number and one of Y, M, D, h, m, s, such as "7D".';
		END IF;
		age := mq._rabbit_age(arguments->>'x-max-age');
		BEGIN
			PERFORM mq._stream_retention(queue, to_jsonb(age));
		EXCEPTION WHEN invalid_parameter_value THEN
			-- positive: only too large
			RAISE EXCEPTION 'x-max-age % of stream queue "%" is too large', arguments->'x-max-age', queue
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = 'The largest retention accepted is 106751991 days (about 292271 years).';
		END;
		IF NOT arguments ? 'retention' THEN
			arguments := arguments || jsonb_build_object('retention', age);
		ELSIF mq._stream_retention(queue, arguments->'retention')
			  <> mq._stream_retention(queue, to_jsonb(age)) THEN
			RAISE EXCEPTION 'arguments "retention" % and "x-max-age" % of stream queue "%" disagree',
				arguments->'retention', arguments->'x-max-age', queue
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Give one of them.';
		END IF;
		arguments := arguments - 'x-max-age';
	END IF;
	IF arguments ? 'x-max-length-bytes' THEN
		v := arguments->'x-max-length-bytes';
		IF jsonb_typeof(v) <> 'number' OR v::text ~ '[.eE]' OR v::numeric < 1
		   OR v::numeric > 9223372036854775807 THEN
			RAISE EXCEPTION 'invalid value % for argument "x-max-length-bytes" of stream queue "%"', v, queue
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = 'The value must be a positive integer (bytes).';
		END IF;
		IF NOT arguments ? 'max_bytes' THEN
			arguments := arguments || jsonb_build_object('max_bytes', v);
		ELSIF arguments->'max_bytes' <> v THEN
			RAISE EXCEPTION 'arguments "max_bytes" % and "x-max-length-bytes" % of stream queue "%" disagree',
				arguments->'max_bytes', v, queue
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Give one of them.';
		END IF;
		arguments := arguments - 'x-max-length-bytes';
	END IF;
	FOR k, v IN SELECT * FROM jsonb_each(arguments) LOOP
		IF k LIKE 'x-%' AND k <> 'x-queue-type' THEN
			RAISE EXCEPTION 'argument "%" is not supported by stream queue "%"', k, queue
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = takes;
		ELSIF NOT k = ANY (known) THEN
			RAISE EXCEPTION 'unknown argument "%" for stream queue "%"', k, queue
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = takes;
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
			PERFORM mq._stream_retention(queue, v);
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
CREATE OR REPLACE FUNCTION mq._queue_args_check(queue text, type text, arguments jsonb)
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

CREATE OR REPLACE FUNCTION mq._exchange_declare_impl(exchange text, type text, durable boolean,
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

CREATE OR REPLACE FUNCTION mq._exchange_delete_impl(exchange text, if_unused boolean)
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
-- and its settlement log (src/queue/queue.h, src/queue/queue_lane.c).
CREATE OR REPLACE FUNCTION mq._lane_create(queue_id int, lane int, gen int)
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
	IF to_regclass(format('mq_storage.%I', format('q%s_%s_%s', queue_id, lane, gen))) IS NOT NULL THEN
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
		EXECUTE format('CREATE %s TABLE mq_storage.%I (visible_at timestamptz NOT NULL, msg_id int8 NOT NULL, '
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
				format('mq_storage.%I', format('q%s_%s_%s', queue_id, lane, gen))::regclass,
				queue_id, lane, gen);
	END IF;
	-- one int8 per settlement: kind << 56 | the entry's position within the
	-- lane (see mq_settle_encode in src/msglog.h)
	EXECUTE format('CREATE %s TABLE mq_storage.%I (settlement int8 NOT NULL) USING mqlog',
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
CREATE OR REPLACE FUNCTION mq._group_log_create(queue_id int, group_id int, lane int, gen int)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	EXECUTE format('CREATE TABLE IF NOT EXISTS mq_storage.%I (settlement int8 NOT NULL, arg int8) USING mqlog',
				   format('g%s_%s_%s_%s', queue_id, group_id, lane, gen));
END
$$;

CREATE OR REPLACE FUNCTION mq._lane_drop(queue_id int, lane int, gen int)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	DELETE FROM mq.cat_inline i
	 WHERE i.queue_id = _lane_drop.queue_id AND i.lane = _lane_drop.lane AND i.gen = _lane_drop.gen;
	EXECUTE format('DROP TABLE IF EXISTS mq_storage.%I, mq_storage.%I',
				   format('q%s_%s_%s', queue_id, lane, gen),
				   format('s%s_%s_%s', queue_id, lane, gen));
	-- the consumer groups' logs of the generation go with it
	PERFORM mq._group_log_drop(format('g%s\_%%\_%s\_%s', queue_id, lane, gen));
END
$$;

-- Drop the consumer group logs whose names match pattern (LIKE)
CREATE OR REPLACE FUNCTION mq._group_log_drop(pattern text)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rel oid;
BEGIN
	FOR rel IN SELECT c.oid FROM pg_class c
				WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r'
				  AND c.relname LIKE pattern LOOP
		EXECUTE format('DROP TABLE %s', rel::regclass);
	END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION mq._queue_declare_impl(queue text, type text, durable boolean, arguments jsonb, caller oid)
RETURNS text LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	q mq.cat_queue;
	qid int;
	nlanes int;
	lane_oids oid[] := '{}';
	relname text;
BEGIN
	-- no type: RabbitMQ's x-queue-type, else classic
	IF type IS NULL AND jsonb_typeof(arguments) = 'object' THEN
		type := coalesce(arguments->>'x-queue-type', 'classic');
	END IF;
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
	IF to_regtype(format('mq_storage.%I', 'a' || qid)) IS NOT NULL THEN
		EXECUTE format('DROP TYPE mq_storage.%I', 'a' || qid);
	END IF;
	EXECUTE format('CREATE TYPE mq_storage.%I AS ()', 'a' || qid);
	FOR lane IN 0 .. nlanes - 1 LOOP
		PERFORM mq._lane_create(qid, lane, 0);
		lane_oids := lane_oids || format('mq_storage.%I', format('q%s_%s_0', qid, lane))::regclass::oid;
	END LOOP;
	UPDATE mq.cat_queue c SET lanes = lane_oids WHERE c.id = qid;
	PERFORM mq._topology_changed();
	RETURN queue;
END
$$;

CREATE OR REPLACE FUNCTION mq._queue_delete_impl(queue text, if_unused boolean, if_empty boolean,
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
	IF to_regtype(format('mq_storage.%I', 'a' || q.id)) IS NOT NULL THEN
		EXECUTE format('DROP TYPE mq_storage.%I', 'a' || q.id);
	END IF;
	-- every generation of every lane: entry logs q<id>_*, settlement logs
	-- s<id>_*, consumer groups' logs g<id>_*
	FOR rel IN SELECT c.oid FROM pg_class c
				WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r'
				  AND (c.relname LIKE 'q' || q.id || '\_%' OR c.relname LIKE 's' || q.id || '\_%'
					   OR c.relname LIKE 'g' || q.id || '\_%') LOOP
		EXECUTE format('DROP TABLE %s', rel::regclass);
	END LOOP;
	PERFORM mq._topology_changed();
END
$$;

CREATE OR REPLACE FUNCTION mq._bind_impl(queue text, exchange text, binding_key text, arguments jsonb, unbind boolean)
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

CREATE OR REPLACE FUNCTION mq._grant_impl(privilege text, object_type text, object_name text, role regrole, revoke boolean)
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
