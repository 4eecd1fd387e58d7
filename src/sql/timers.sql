------------------------------------------------------------------------
-- Delayed messages and maintenance (src/worker.c)
------------------------------------------------------------------------
-- Cancel a delayed message that is not due yet, in every queue holding it.
CREATE OR REPLACE FUNCTION mq.cancel(msg_id bigint)
RETURNS int AS 'MODULE_PATHNAME', 'mq_cancel' LANGUAGE C;

-- Drop message log segments that no queue entry refers to any more.
CREATE OR REPLACE FUNCTION mq.log_retire(max_segments int DEFAULT 1000)
RETURNS int AS 'MODULE_PATHNAME', 'mq_log_retire' LANGUAGE C;

CREATE OR REPLACE VIEW mq.segments AS
	SELECT s.segno, s.relid::regclass AS relation, s.durable, s.created_at,
		   pg_relation_size(s.relid) AS bytes,
		   s.segno << 26 AS first_msg_id, ((s.segno + 1) << 26) - 1 AS last_msg_id
	  FROM mq.cat_segment s;
GRANT SELECT ON mq.segments TO PUBLIC;

-- end of half messages and maintenance section
