/* queue_ext--0.1.sql: install script for queue_ext 0.1 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION queue_ext" to load this file. \quit

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
CREATE FUNCTION mq.mqlog_verify(rel regclass)
RETURNS TABLE(blkno bigint, offnum integer, msg text)
AS 'MODULE_PATHNAME', 'mqlog_verify'
LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION mq.mqlog_verify(regclass) FROM PUBLIC;

-- end of mqlog section

------------------------------------------------------------------------
-- routing matchers (src/routing_*.c)
------------------------------------------------------------------------
-- RabbitMQ topic matching of one binding key against one routing key
CREATE FUNCTION mq.topic_matches(binding_key text, routing_key text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mq_topic_matches_sql'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- 1-based indexes of the binding keys matching routing_key, ascending,
-- computed through the topic trie used by topic exchanges
CREATE FUNCTION mq.topic_route(binding_keys text[], routing_key text)
RETURNS int[]
AS 'MODULE_PATHNAME', 'mq_topic_route_sql'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- RabbitMQ headers-exchange matching; NULL headers = a message without headers
CREATE FUNCTION mq.headers_match(binding_arguments jsonb, headers jsonb)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mq_headers_match_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- end of routing matchers section
