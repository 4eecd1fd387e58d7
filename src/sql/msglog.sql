------------------------------------------------------------------------
-- Message log segments (src/msglog.c)
------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION mq._segment_create(segno bigint, durable boolean)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rel text := format('log_%s', segno);
BEGIN
	-- serialise concurrent roll-overs; whoever comes second finds the table
	-- (the catalog cache may not have seen it yet, hence the exception)
	PERFORM pg_advisory_xact_lock(7170001, 0);
	IF to_regclass(format('mq_storage.%I', rel)) IS NOT NULL THEN
		RETURN;
	END IF;
	BEGIN
		-- optional columns last: mqlog does not store trailing NULLs; the
		-- indexed ones compare bytewise (COLLATE "C": equality is all they
		-- are searched by, and a locale's strcoll made a key probe 10x dearer)
		EXECUTE format('CREATE %s TABLE mq_storage.%I (published_at timestamptz NOT NULL, '
					   'exchange text, routing_key text, body bytea, headers jsonb, '
					   'properties jsonb, key text COLLATE "C", tag text, message_group text, '
					   'dedup_id text COLLATE "C") '
					   'USING mqlog',
					   CASE WHEN durable THEN '' ELSE 'UNLOGGED' END, rel);
	EXCEPTION WHEN duplicate_table THEN
		RETURN;
	END;
	EXECUTE format('CREATE INDEX %I ON mq_storage.%I (key) WHERE key IS NOT NULL', rel || '_key', rel);
	EXECUTE format('CREATE INDEX %I ON mq_storage.%I (dedup_id) WHERE dedup_id IS NOT NULL',
				   rel || '_dedup', rel);
	INSERT INTO mq.cat_segment (segno, relid, durable)
	VALUES (segno, format('mq_storage.%I', rel)::regclass, durable)
	ON CONFLICT DO NOTHING;
END
$$;

-- Drop a segment.  The first segments were created by the install script
-- and belong to the extension: release them first.
CREATE OR REPLACE FUNCTION mq._segment_drop(segno bigint)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rel oid := to_regclass(format('mq_storage.%I', format('log_%s', segno)));
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

CREATE OR REPLACE FUNCTION mq._segment_newest(durable boolean)
RETURNS bigint LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp AS $$
	SELECT max(s.segno) FROM mq.cat_segment s
	 WHERE s.durable = _segment_newest.durable
	   AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = s.relid)
$$;

-- msg_id of a row of segment segno: segno << 26 | block << 9 | offset
CREATE OR REPLACE FUNCTION mq._msg_id(segno bigint, tid tid)
RETURNS bigint LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
	SELECT (segno << 26) | (((tid::text::point)[0])::bigint << 9) | ((tid::text::point)[1])::bigint
$$;

CREATE OR REPLACE FUNCTION mq._log_find_key(key text, unused int, max_messages int)
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
-- default exchange, by one index scan per key and segment (src/consume_sql.c;
-- queue_ext_pgmq maps its msg_ids with it).  Ids only, for internal callers.
CREATE OR REPLACE FUNCTION mq._log_find_keys(routing_key text, keys text[])
RETURNS TABLE (key text, msg_id bigint)
AS 'MODULE_PATHNAME', 'mq_log_find_keys' LANGUAGE C STABLE;
REVOKE ALL ON FUNCTION mq._log_find_keys(text, text[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION mq._log_find_dedup(dedup_id text, since timestamptz, max_messages int)
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
CREATE OR REPLACE FUNCTION mq._x_death(headers jsonb, properties jsonb, reason text, queue text,
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


REVOKE ALL ON FUNCTION mq._segment_create, mq._segment_drop, mq._segment_newest, mq._log_find_key,
	mq._log_find_dedup, mq._x_death FROM PUBLIC;

CREATE OR REPLACE FUNCTION mq._topology_changed() RETURNS void
AS 'MODULE_PATHNAME', 'mq_topology_changed' LANGUAGE C;
REVOKE ALL ON FUNCTION mq._topology_changed() FROM PUBLIC;
