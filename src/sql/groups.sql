------------------------------------------------------------------------
-- Consumer groups of stream queues (src/group_sql.c, src/queue/queue_group.c)
------------------------------------------------------------------------

-- A group's dead-letter queue %DLQ%<group>: a classic queue owned by the
-- extension owner, made at the group's first dead letter, in the
-- transaction that dead-letters (src/publish.c, group_dlq); the role that
-- declared the group gets consume on it.  Returns its name, or NULL when
-- the group is gone (deleted since the caller's catalog was read).  Two
-- sessions dead-lettering a group's first messages at once: the second one
-- waits for the first at the queue's name (a unique key) and uses its queue
-- if it commits, or makes it if it rolls back.
CREATE OR REPLACE FUNCTION mq._group_dlq_create(group_id int)
RETURNS text LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	g mq.cat_group;
	dlq text;
	qid int;
BEGIN
	SELECT * INTO g FROM mq.cat_group c WHERE c.id = group_id;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	dlq := '%DLQ%' || g.name;
	BEGIN
		PERFORM mq._queue_declare_impl(dlq, 'classic', true, '{}',
			(SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'mq'));
	EXCEPTION WHEN unique_violation THEN
		NULL;					-- made at the same time by another session
	END;
	SELECT c.id INTO qid FROM mq.cat_queue c WHERE c.name = dlq;
	IF g.declared_by IS NOT NULL AND qid IS NOT NULL THEN
		INSERT INTO mq.cat_grant (object_kind, object_id, grantee, privilege)
		VALUES ('q', qid, g.declared_by, 'consume') ON CONFLICT DO NOTHING;
		PERFORM mq._topology_changed();
	END IF;
	RETURN dlq;
END
$$;

-- Declare a group: 0 if it exists with these options (a NOTICE when only
-- start differs), else the new group's id; its logs for every existing
-- lane generation are created here, its start floors by the caller.
CREATE OR REPLACE FUNCTION mq._group_declare_impl(queue_id int, group_name text, mode text, start text,
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
							  max_retries, retry_delays, declared_by)
	VALUES (queue_id, group_name, mode, start, filter, filter_type, ordered, max_retries,
			retry_delays, caller)
	RETURNING id INTO gid;
	FOR rel IN SELECT (regexp_match(c.relname, '^q\d+_(\d+)_(\d+)$'))::int[] AS lg
				 FROM pg_class c
				WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r'
				  AND c.relname LIKE 'q' || queue_id || '\_%' LOOP
		PERFORM mq._group_log_create(queue_id, gid, rel.lg[1], rel.lg[2]);
	END LOOP;
	PERFORM mq._topology_changed();
	RETURN gid;
END
$$;

-- BEGIN broadcast consumer groups (issue 12, stream-broadcast): DDL block 2/3
-- (changed: _group_delete_impl and _group_seek_impl now return int[], the
-- ids of the group's broadcast consumers, whose shared state the caller
-- drops after commit and, for a seek, whose logs it writes FLOORs to)
CREATE OR REPLACE FUNCTION mq._group_delete_impl(queue_id int, group_id int)
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
CREATE OR REPLACE FUNCTION mq._group_seek_impl(queue_id int, group_id int, lane int)
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
					WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r'
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
CREATE OR REPLACE FUNCTION mq._group_consumer_create(queue_id int, group_id int, consumer text)
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
				WHERE c.relnamespace = 'mq_storage'::regnamespace AND c.relkind = 'r'
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

CREATE OR REPLACE FUNCTION mq.group_declare(queue text, group_name text, mode text DEFAULT 'clustering',
	start text DEFAULT 'latest', filter text DEFAULT NULL, filter_type text DEFAULT 'tag',
	ordered boolean DEFAULT false, max_retries int DEFAULT 16,
	retry_delays interval[] DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'mq_group_declare' LANGUAGE C;
-- The group's dead-letter queue goes with it when it is empty, or with
-- drop_dead_letters whatever it holds (the AMQP gateway's stream consumers'
-- groups); one that holds messages is otherwise kept (src/group_sql.c).
CREATE OR REPLACE FUNCTION mq.group_delete(queue text, group_name text,
	drop_dead_letters boolean DEFAULT false)
RETURNS void AS 'MODULE_PATHNAME', 'mq_group_delete' LANGUAGE C;
CREATE OR REPLACE FUNCTION mq.seek(queue text, group_name text, to_offset bigint DEFAULT NULL,
	to_time timestamptz DEFAULT NULL, "partition" int DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'mq_seek' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq._consumer_groups()
RETURNS TABLE (queue text, group_name text, mode text, "partition" int, consumer text,
	committed_offset bigint, end_offset bigint, lag bigint, in_flight int, retrying int,
	dead_lettered bigint, consumers int, last_delivery timestamptz, idle interval)
AS 'MODULE_PATHNAME', 'mq_consumer_groups' LANGUAGE C;

-- One row per group and partition, from bounded state (src/group_sql.c)
CREATE OR REPLACE VIEW mq.consumer_groups AS SELECT * FROM mq._consumer_groups();
GRANT SELECT ON mq.consumer_groups TO PUBLIC;

-- The consumer groups' declared options (mq.group_declare), one row per
-- group of the streams the caller sees (mq._queue_visible, as mq.bindings):
-- what a client of a gateway is told of its group (mq-rocketmq's Settings:
-- retry policy, FIFO).  retry_delays NULL: RocketMQ's 16 levels.
CREATE OR REPLACE VIEW mq.group_options AS
	SELECT q.name AS queue, g.name AS group_name, g.mode, g.start, g.filter,
		   g.filter_type, g.ordered, g.max_retries, g.retry_delays
	  FROM mq.cat_group g
	  JOIN mq.cat_queue q ON q.id = g.queue_id
	 WHERE mq._queue_visible(q.name);
GRANT SELECT ON mq.group_options TO PUBLIC;

------------------------------------------------------------------------
-- Redrive (issue 12; new with ordered groups, src/redrive_sql.c): move the
-- ready messages of a dead-letter queue back to the queue they came from
-- (x-dlq-origin-queue, x-last-death-queue) or to target_queue; returns how
-- many moved.  Not STRICT: a NULL source_queue is 22004.
------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION mq.redrive(source_queue text, target_queue text DEFAULT NULL,
	max_messages int DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_redrive' LANGUAGE C;

