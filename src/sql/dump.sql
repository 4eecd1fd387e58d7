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

CREATE OR REPLACE FUNCTION mq._import_message(queue text, lane int, visible_at timestamptz,
	expires_at timestamptz, exchange text, routing_key text, body bytea, headers jsonb,
	properties jsonb, key text, tag text, message_group text, published_at timestamptz)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_import_message' LANGUAGE C;
CREATE OR REPLACE FUNCTION mq._import_position(queue text, group_name text, consumer text,
	"partition" int, to_offset bigint, settled bigint[])
RETURNS void AS 'MODULE_PATHNAME', 'mq_import_position' LANGUAGE C;
REVOKE ALL ON FUNCTION mq._import_message, mq._import_position FROM PUBLIC;

-- The snapshot of one transaction: REPEATABLE READ or SERIALIZABLE, so that
-- a timer that fires, a message that is acked or published meanwhile is
-- seen in one place only.  Returns the number of messages exported.
CREATE OR REPLACE FUNCTION mq.export()
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
			   || CASE WHEN c.notify_channel IS NOT NULL
					   THEN jsonb_build_object('notify_channel', c.notify_channel)
					   ELSE '{}' END
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
				  WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r' AND m IS NOT NULL
					AND q.type <> 'stream' LOOP
			EXECUTE format('INSERT INTO mq_export_settled SELECT $1, CASE WHEN s.settlement >> 56 = 3 '
						   'THEN -(s.settlement & $2) ELSE s.settlement & $2 END FROM mq_storage.%I s '
						   'WHERE s.settlement >> 56 IN (1, 2, 3, 4, 5)', r.relname)
				USING r.lane, mask;
		END LOOP;
		FOR r IN SELECT m[1]::int AS lane, m[2]::int AS gen, c.relname
				   FROM pg_class c, regexp_match(c.relname, '^q' || q.id || '_(\d+)_(\d+)$') m
				  WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r' AND m IS NOT NULL
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
						  FROM mq_storage.%I x) e
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
				  WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r' AND m IS NOT NULL LOOP
			EXECUTE format('INSERT INTO mq_export_entries SELECT ($1::bigint << 40) '
						   '| (((x.ctid::text::point)[0])::bigint << 16) '
						   '| ((x.ctid::text::point)[1])::bigint, x."offset" FROM mq_storage.%I x', r.relname)
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
					  WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r'
						AND c.relname ~ ('^g' || q.qid || '_' || gs.sid || '_' || q.partition || '_\d+$') LOOP
				EXECUTE format('INSERT INTO mq_export_settled SELECT $1, CASE WHEN s.settlement >> 56 = 3 '
							   'THEN -(s.settlement & $2) ELSE s.settlement & $2 END FROM mq_storage.%I s '
							   'WHERE s.settlement >> 56 IN (1, 2, 3, 4, 5)', r.relname)
					USING q.partition, mask;
				-- ACK_RUN (12): arg entries acked from the record's position on
				-- (consecutive line pointers of one entry-log page)
				IF r.has_arg THEN
					EXECUTE format('INSERT INTO mq_export_settled SELECT $1, (s.settlement & $2) + i '
								   'FROM mq_storage.%I s, generate_series(0, s.arg - 1) i '
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
CREATE OR REPLACE FUNCTION mq.import()
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
				WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r'
				  AND c.relam = (SELECT a.oid FROM pg_am a WHERE a.amname = 'mqlog')
				  AND c.relname ~ '^([qsg]\d+_|log_\d+$)'
				  AND NOT EXISTS (SELECT 1 FROM pg_depend d
								   WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
									 AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e')
				  AND NOT EXISTS (SELECT 1 FROM mq.cat_segment s WHERE s.relid = c.oid) LOOP
		EXECUTE format('DROP TABLE %s', rel);
	END LOOP;
	-- and the queues' lock relations (composite types mq_storage.a<id>)
	FOR rel IN SELECT c.oid::regclass FROM pg_class c
				WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'c'
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
			UPDATE mq.cat_queue c SET notify_channel = t.args->>'notify_channel'
			 WHERE c.name = t.args->>'name' AND t.args ? 'notify_channel';
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
