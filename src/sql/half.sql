------------------------------------------------------------------------
-- Transactional (half) messages (src/half.c, checked back by the worker)
------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION mq._producer_group_declare_impl(producer_group text, check_function regprocedure,
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

CREATE OR REPLACE FUNCTION mq.producer_group_declare(producer_group text, check_function regprocedure,
	check_after interval DEFAULT '6 seconds', check_interval interval DEFAULT '60 seconds',
	max_checks int DEFAULT 15, on_exhausted text DEFAULT 'rollback')
RETURNS void AS 'MODULE_PATHNAME', 'mq_producer_group_declare' LANGUAGE C;

CREATE OR REPLACE FUNCTION mq.publish_half(exchange text, routing_key text, body bytea,
	producer_group text, headers jsonb DEFAULT NULL, key text DEFAULT NULL,
	tag text DEFAULT NULL, message_group text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_half' LANGUAGE C;
CREATE OR REPLACE FUNCTION mq.publish_half(exchange text, routing_key text, body text,
	producer_group text, headers jsonb DEFAULT NULL, key text DEFAULT NULL,
	tag text DEFAULT NULL, message_group text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_half' LANGUAGE C;
CREATE OR REPLACE FUNCTION mq.publish_half(exchange text, routing_key text, body jsonb,
	producer_group text, headers jsonb DEFAULT NULL, key text DEFAULT NULL,
	tag text DEFAULT NULL, message_group text DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_publish_half' LANGUAGE C;

-- Decide a half message: 'commit' routes it (to the queues bound at this
-- moment; an error, changing nothing, when it routes nowhere), 'rollback'
-- discards it.  Returns the message id when committed.
CREATE OR REPLACE FUNCTION mq.end_half(half_id bigint, action text)
RETURNS bigint AS 'MODULE_PATHNAME', 'mq_end_half' LANGUAGE C;

CREATE OR REPLACE VIEW mq.half_messages AS
	SELECT h.half_id, h.producer_group, h.exchange, h.routing_key, h.state, h.checks,
		   h.last_check, h.last_outcome, h.created_at, h.decided_at, h.decided_by,
		   h.last_error
	  FROM mq.half h;
GRANT SELECT ON mq.half_messages TO PUBLIC;
