------------------------------------------------------------------------
-- Public API: topology (src/topology_sql.c)
------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION mq.exchange_declare(exchange text, type text DEFAULT 'direct',
	durable boolean DEFAULT true, alternate_exchange text DEFAULT NULL,
	arguments jsonb DEFAULT '{}')
RETURNS void AS 'MODULE_PATHNAME', 'mq_exchange_declare' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.exchange_delete(exchange text, if_unused boolean DEFAULT false)
RETURNS void AS 'MODULE_PATHNAME', 'mq_exchange_delete' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.queue_declare(queue text, type text DEFAULT NULL,
	durable boolean DEFAULT true, arguments jsonb DEFAULT '{}')
RETURNS text AS 'MODULE_PATHNAME', 'mq_queue_declare' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.queue_delete(queue text, if_unused boolean DEFAULT false,
	if_empty boolean DEFAULT false)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_queue_delete' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.queue_purge(queue text)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_queue_purge' LANGUAGE C;

-- The channel the worker notifies when a delayed message falls due or an
-- expired lease makes a message of the queue ready (NULL: none, issue 40)
CREATE OR REPLACE FUNCTION mq.queue_notify(queue text, channel text)
RETURNS void AS 'MODULE_PATHNAME', 'mq_queue_notify' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.queue_notify_channel(queue text)
RETURNS text AS 'MODULE_PATHNAME', 'mq_queue_notify_channel' LANGUAGE C STABLE;

CREATE OR REPLACE FUNCTION mq._queue_notify_impl(queue text, channel text)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	UPDATE mq.cat_queue c SET notify_channel = channel WHERE c.name = queue;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue USING ERRCODE = 'undefined_object';
	END IF;
	PERFORM mq._topology_changed();
END
$$;
REVOKE ALL ON FUNCTION mq._queue_notify_impl FROM PUBLIC;

-- A named consumer's prefetch (unacked deliveries it may hold; 0/NULL: no
-- limit), used by mq.consume(consumer => name) when given no prefetch
CREATE OR REPLACE FUNCTION mq.consumer_declare(queue text, consumer text, prefetch int DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'mq_consumer_declare' LANGUAGE C;
CREATE OR REPLACE FUNCTION mq.consumer_delete(queue text, consumer text)
RETURNS void AS 'MODULE_PATHNAME', 'mq_consumer_delete' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq._consumer_declare_impl(queue text, consumer text, prefetch int, drop boolean)
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

CREATE OR REPLACE FUNCTION mq.bind(queue text, exchange text, binding_key text DEFAULT '',
	arguments jsonb DEFAULT '{}')
RETURNS void AS 'MODULE_PATHNAME', 'mq_bind' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.unbind(queue text, exchange text, binding_key text DEFAULT '',
	arguments jsonb DEFAULT '{}')
RETURNS void AS 'MODULE_PATHNAME', 'mq_unbind' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.grant(privilege text, object_type text, object_name text, role regrole)
RETURNS void AS 'MODULE_PATHNAME', 'mq_grant' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.revoke(privilege text, object_type text, object_name text, role regrole)
RETURNS void AS 'MODULE_PATHNAME', 'mq_revoke' LANGUAGE C;
