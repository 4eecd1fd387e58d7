------------------------------------------------------------------------
-- routing matchers (src/routing_*.c)
------------------------------------------------------------------------
-- RabbitMQ topic matching of one binding key against one routing key
CREATE OR REPLACE FUNCTION mq.topic_matches(binding_key text, routing_key text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mq_topic_matches_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- 1-based indexes of the binding keys matching routing_key, ascending,
-- computed through the topic trie used by topic exchanges
CREATE OR REPLACE FUNCTION mq.topic_route(binding_keys text[], routing_key text)
RETURNS int[]
AS 'MODULE_PATHNAME', 'mq_topic_route_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- RabbitMQ headers-exchange matching; NULL headers = a message without headers
CREATE OR REPLACE FUNCTION mq.headers_match(binding_arguments jsonb, headers jsonb)
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
CREATE OR REPLACE FUNCTION mq.filter_match(filter_type text, expression text,
	headers jsonb, tag text DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'mq_filter_match_sql'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

