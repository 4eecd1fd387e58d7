------------------------------------------------------------------------
-- Tracing a message's life (src/consume_sql.c checks the caller may read it)
------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION mq._trace_impl(msg_id bigint)
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
				  WHERE cl.relnamespace = 'mq_storage'::regnamespace AND cl.relname LIKE 'q' || q.id || '\_%'
				  ORDER BY cl.relname LOOP
			FOR r IN EXECUTE format('SELECT ctid, visible_at FROM mq_storage.%I WHERE msg_id = $1', t.relname)
					 USING mid LOOP
				event := 'routed'; queue := q.name; at := r.visible_at;
				detail := jsonb_build_object('entry_log', t.relname);
				RETURN NEXT;
				-- its settlement: kind << 56 | generation << 40 | block << 16 | offset
				pos := (split_part(t.relname, '_', 3)::bigint << 40)
					| (((r.ctid::text::point)[0])::bigint << 16) | ((r.ctid::text::point)[1])::bigint;
				FOR k IN EXECUTE format('SELECT settlement >> 56 FROM mq_storage.%I '
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
CREATE OR REPLACE FUNCTION mq.trace(msg_id bigint)
RETURNS TABLE (event text, queue text, at timestamptz, detail jsonb)
AS 'MODULE_PATHNAME', 'mq_trace' LANGUAGE C;

