--
-- broker_bad_inputs: bad inputs to every public mq function, one call per
-- line, each with the SQLSTATE it must raise.  A NULL for an argument that
-- has no DEFAULT or a non-NULL DEFAULT is 22004; times out of range 22008;
-- bad values 22023.  After a bad call that would have changed something,
-- the state is shown unchanged.  Names start with "bi_".
--
\set VERBOSITY sqlstate
SELECT mq.queue_declare('bi_q');
SELECT mq.queue_declare('bi_dlq');
SELECT mq.exchange_declare('bi_x', 'direct');
SELECT mq.bind('bi_q', 'bi_x', 'k');
SELECT mq.send('bi_q', 'm' || g) IS NOT NULL AS sent FROM generate_series(1, 3) g;
-- one message delivered to this session (unacked), two ready
CREATE TEMP TABLE bi_got AS SELECT msg_id FROM mq.consume('bi_q', lease => '1 hour');
CREATE FUNCTION bi_check(bigint, jsonb, bytea) RETURNS text LANGUAGE sql AS $$ SELECT 'unknown' $$;
SELECT mq.producer_group_declare('bi_pg', 'bi_check(bigint,jsonb,bytea)');
CREATE TABLE bi_log (a int) USING mqlog;
INSERT INTO bi_log VALUES (1);
-- what the checks below compare against
CREATE VIEW bi_state AS
  SELECT (SELECT ready || '/' || unacked || '/' || delayed FROM mq.queues WHERE queue = 'bi_q') AS bi_q,
         (SELECT count(*) FROM mq.queues WHERE queue LIKE 'bi\_%') AS queues,
         (SELECT count(*) FROM mq.exchanges WHERE exchange LIKE 'bi\_%') AS exchanges,
         (SELECT string_agg(exchange || ':' || queue || ':' || binding_key, ',' ORDER BY 1)
            FROM mq.bindings WHERE queue LIKE 'bi\_%' AND exchange <> '') AS bindings,
         (SELECT count(*) FROM mq.half_messages WHERE producer_group = 'bi_pg') AS halves;
SELECT * FROM bi_state;

------------------------------------------------------------------------
-- NULL for a required or guard argument: 22004
------------------------------------------------------------------------
-- queue_delete: the guards do not default to "delete anyway"
SELECT mq.queue_delete('bi_q', if_empty => NULL);
SELECT mq.queue_delete('bi_q', if_unused => NULL);
SELECT mq.queue_delete(NULL);
SELECT * FROM bi_state;
-- exchange_delete
SELECT mq.exchange_delete('bi_x', if_unused => NULL);
SELECT mq.exchange_delete(NULL);
SELECT * FROM bi_state;
-- exchange_declare
SELECT mq.exchange_declare(NULL);
SELECT mq.exchange_declare('bi_y', NULL);
SELECT mq.exchange_declare('bi_y', durable => NULL);
SELECT mq.exchange_declare('bi_y', arguments => NULL);
-- queue_declare
SELECT mq.queue_declare(NULL);
-- a NULL type is the default: the arguments' x-queue-type, else classic
SELECT mq.queue_declare('bi_y', NULL, arguments => '{"x-queue-type": "lifo"}');
SELECT mq.queue_declare('bi_y', durable => NULL);
SELECT mq.queue_declare('bi_y', arguments => NULL);
SELECT * FROM bi_state;
-- queue_purge
SELECT mq.queue_purge(NULL);
-- bind / unbind: no NULL key or arguments
SELECT mq.bind(NULL, 'bi_x', 'k2');
SELECT mq.bind('bi_q', NULL, 'k2');
SELECT mq.bind('bi_q', 'bi_x', NULL);
SELECT mq.bind('bi_q', 'bi_x', 'k2', NULL);
SELECT * FROM bi_state;
SELECT mq.unbind(NULL, 'bi_x', 'k');
SELECT mq.unbind('bi_q', NULL, 'k');
SELECT mq.unbind('bi_q', 'bi_x', NULL);
SELECT mq.unbind('bi_q', 'bi_x', 'k', NULL);
SELECT * FROM bi_state;
-- grant / revoke (role => NULL means PUBLIC, see docs/api.md)
SELECT mq.grant(NULL, 'queue', 'bi_q', current_user::regrole);
SELECT mq.grant('publish', NULL, 'bi_q', current_user::regrole);
SELECT mq.grant('publish', 'queue', NULL, current_user::regrole);
SELECT mq.revoke(NULL, 'queue', 'bi_q', current_user::regrole);
SELECT mq.revoke('publish', NULL, 'bi_q', current_user::regrole);
SELECT mq.revoke('publish', 'queue', NULL, current_user::regrole);
-- consumer_declare / consumer_delete
SELECT mq.consumer_declare(NULL, 'c');
SELECT mq.consumer_declare('bi_q', NULL);
SELECT mq.consumer_delete(NULL, 'c');
SELECT mq.consumer_delete('bi_q', NULL);
-- publish: no NULL routing key, no NULL mandatory
SELECT mq.publish(NULL, 'k', 'x'::text);
SELECT mq.publish('bi_x', NULL, 'x'::text);
SELECT mq.publish('bi_x', 'k', NULL::text);
SELECT mq.publish('bi_x', 'k', NULL::bytea);
SELECT mq.publish('bi_x', 'k', NULL::jsonb);
SELECT mq.publish('bi_x', 'nowhere', 'x'::text, mandatory => NULL);
SELECT mq.publish('bi_x', 'k', 'x'::text, mandatory => NULL);
SELECT * FROM bi_state;
-- send
SELECT mq.send(NULL, 'x'::text);
SELECT mq.send('bi_q', NULL::text);
-- publish_batch / send_batch
SELECT * FROM mq.publish_batch(NULL, ARRAY['k'], ARRAY['x']::text[]);
SELECT * FROM mq.publish_batch('bi_x', NULL, ARRAY['x']::text[]);
SELECT * FROM mq.publish_batch('bi_x', ARRAY[NULL], ARRAY['x']::text[]);
SELECT * FROM mq.publish_batch('bi_x', ARRAY['k'], NULL::text[]);
SELECT * FROM mq.publish_batch('bi_x', ARRAY['k'], ARRAY['x', NULL]::text[]);
SELECT * FROM mq.publish_batch('bi_x', ARRAY['k'], ARRAY['x']::text[], ARRAY[NULL]::jsonb[]);
SELECT * FROM mq.publish_batch('bi_x', ARRAY['nowhere'], ARRAY['x']::text[], mandatory => NULL);
-- headers of a batch must be JSON objects, as for mq.publish (22023)
SELECT * FROM mq.publish_batch('bi_x', ARRAY['k'], ARRAY['x']::text[], ARRAY['[1]']::jsonb[]);
SELECT * FROM mq.send_batch(NULL, ARRAY['x']::text[]);
SELECT * FROM mq.send_batch('bi_q', NULL::text[]);
SELECT * FROM mq.send_batch('bi_q', ARRAY[NULL]::text[]);
SELECT * FROM bi_state;
-- consume
SELECT * FROM mq.consume(NULL);
SELECT * FROM mq.consume('bi_q', max_messages => NULL);
SELECT * FROM mq.consume('bi_q', wait => NULL);
SELECT * FROM mq.consume('bi_q', lease => NULL);
SELECT * FROM mq.consume('bi_q', auto_ack => NULL);
SELECT * FROM bi_state;
-- browse, message, messages_by_key, trace, cancel
SELECT * FROM mq.browse(NULL);
SELECT * FROM mq.browse('bi_q', NULL);
SELECT * FROM mq.message(NULL);
SELECT * FROM mq.messages_by_key(NULL);
SELECT * FROM mq.messages_by_key('bi_k', NULL);
SELECT * FROM mq.trace(NULL);
SELECT mq.cancel(NULL);
-- ack / nack / reject / extend_lease: no NULL id list, no NULL element,
-- no NULL requeue (the delivered message stays delivered)
SELECT mq.ack(NULL, ARRAY[1]::bigint[]);
SELECT mq.ack('bi_q', NULL);
SELECT mq.ack('bi_q', ARRAY[NULL]::bigint[]);
SELECT mq.ack('bi_q', (SELECT array_agg(msg_id) FROM bi_got) || NULL::bigint);
SELECT mq.nack(NULL, ARRAY[1]::bigint[]);
SELECT mq.nack('bi_q', NULL);
SELECT mq.nack('bi_q', ARRAY[NULL]::bigint[]);
SELECT mq.nack('bi_q', (SELECT array_agg(msg_id) FROM bi_got), requeue => NULL);
SELECT mq.reject(NULL, 1);
SELECT mq.reject('bi_q', NULL);
SELECT mq.reject('bi_q', (SELECT msg_id FROM bi_got), requeue => NULL);
SELECT mq.extend_lease(NULL, ARRAY[1]::bigint[], '1 min');
SELECT mq.extend_lease('bi_q', NULL, '1 min');
SELECT mq.extend_lease('bi_q', ARRAY[NULL]::bigint[], '1 min');
SELECT mq.extend_lease('bi_q', (SELECT array_agg(msg_id) FROM bi_got), NULL);
SELECT * FROM bi_state;
-- transactional messages
SELECT mq.producer_group_declare(NULL, 'bi_check(bigint,jsonb,bytea)');
SELECT mq.producer_group_declare('bi_pg2', NULL);
SELECT mq.producer_group_declare('bi_pg2', 'bi_check(bigint,jsonb,bytea)', check_after => NULL);
SELECT mq.producer_group_declare('bi_pg2', 'bi_check(bigint,jsonb,bytea)', check_interval => NULL);
SELECT mq.producer_group_declare('bi_pg2', 'bi_check(bigint,jsonb,bytea)', max_checks => NULL);
SELECT mq.producer_group_declare('bi_pg2', 'bi_check(bigint,jsonb,bytea)', on_exhausted => NULL);
SELECT mq.publish_half(NULL, 'k', 'x'::text, 'bi_pg');
SELECT mq.publish_half('bi_x', NULL, 'x'::text, 'bi_pg');
SELECT mq.publish_half('bi_x', 'k', NULL::text, 'bi_pg');
SELECT mq.publish_half('bi_x', 'k', 'x'::text, NULL);
SELECT mq.publish_half('bi_x', 'k', 'x'::text, 'bi_pg', headers => '[1]');
SELECT mq.publish_half('bi_x', 'k', 'x'::text, 'bi_pg', headers => '"h"');
SELECT mq.end_half(NULL, 'commit');
SELECT mq.end_half(1, NULL);
SELECT * FROM bi_state;
-- stream stubs: the arguments are checked before "not implemented"
SELECT mq.group_declare(NULL, 'g');
SELECT mq.group_declare('bi_q', NULL);
SELECT mq.group_declare('bi_q', 'g', mode => NULL);
SELECT mq.group_declare('bi_q', 'g', start => NULL);
SELECT mq.group_declare('bi_q', 'g');                           -- 42809: not a stream
SELECT mq.seek(NULL, 'g');
SELECT mq.seek('bi_q', NULL);
SELECT mq.seek('bi_q', 'g');                                    -- 42809: not a stream
-- maintenance
SELECT mq.log_retire(NULL);
-- routing matchers (headers => NULL is a message without headers)
SELECT mq.topic_matches(NULL, 'a');
SELECT mq.topic_matches('a', NULL);
SELECT mq.topic_route(NULL, 'a');
SELECT mq.topic_route('{a}', NULL);
SELECT mq.topic_route('{a,NULL,#}', 'a');
SELECT mq.headers_match(NULL, '{}');
SELECT mq.headers_match('{}', NULL) AS matches_no_headers;
-- mqlog inspection
SELECT * FROM mq.mqlog_verify(NULL);
SELECT * FROM mq.mqlog_page_items(NULL, 0);
SELECT * FROM mq.mqlog_page_items('bi_log', NULL);

------------------------------------------------------------------------
-- times out of range: 22008
------------------------------------------------------------------------
SELECT mq.send('bi_q', 'x'::text, delay => '600000 years');
SELECT mq.send('bi_q', 'x'::text, delay => '300000 years');
SELECT mq.send('bi_q', 'x'::text, delay => '296520 years');     -- fits in us, not after now
SELECT mq.send('bi_q', 'x'::text, delay => '2562047788 hours');
SELECT mq.send('bi_q', 'x'::text, delay => '-300000 years');
SELECT mq.send('bi_q', 'x'::text, delay => '-1000 years');      -- 22023: negative
SELECT mq.send('bi_q', 'x'::text, deliver_at => 'infinity');
SELECT mq.send('bi_q', 'x'::text, deliver_at => '-infinity');
SELECT mq.send('bi_q', 'x'::text, expiration => '600000 years');
SELECT mq.send('bi_q', 'x'::text, expiration => '296520 years');
SELECT mq.send('bi_q', 'x'::text, deliver_at => '294276-12-01 00:00+00', expiration => '60 days');
SELECT mq.send('bi_q', 'x'::text, deliver_at => '294276-12-30 00:00+00', expiration => '5 days');
SELECT mq.publish('bi_x', 'k', 'x'::text, delay => '600000 years');
SELECT * FROM mq.publish_batch('bi_x', ARRAY['k'], ARRAY['x']::text[], delay => '600000 years');
SELECT * FROM mq.send_batch('bi_q', ARRAY['x']::text[], delay => '300000 years');
SELECT * FROM bi_state;
SELECT * FROM mq.consume('bi_q', lease => '600000 years');
SELECT * FROM mq.consume('bi_q', lease => '296520 years');
SELECT * FROM mq.consume('bi_q', wait => '600000 years');
SELECT * FROM mq.consume('bi_q', wait => '296520 years');
SELECT * FROM bi_state;
SELECT mq.nack('bi_q', ARRAY[]::bigint[], delay => '600000 years');
SELECT mq.nack('bi_q', (SELECT array_agg(msg_id) FROM bi_got), delay => '296520 years');
SELECT mq.extend_lease('bi_q', ARRAY[]::bigint[], '600000 years');
SELECT mq.extend_lease('bi_q', (SELECT array_agg(msg_id) FROM bi_got), '296520 years');
SELECT * FROM bi_state;
SELECT mq.producer_group_declare('bi_pg2', 'bi_check(bigint,jsonb,bytea)', check_after => '600000 years');
SELECT mq.producer_group_declare('bi_pg2', 'bi_check(bigint,jsonb,bytea)', check_after => '296520 years');
SELECT mq.producer_group_declare('bi_pg2', 'bi_check(bigint,jsonb,bytea)', check_interval => '600000 years');
SELECT mq.producer_group_declare('bi_pg2', 'bi_check(bigint,jsonb,bytea)', check_interval => '296520 years');
-- x-message-ttl is an integer of ms (22023 beyond 2^31 - 1)
SELECT mq.queue_declare('bi_ttl', arguments => '{"x-message-ttl": 99999999999999999999}');
SELECT mq.queue_declare('bi_ttl', arguments => '{"x-message-ttl": 2147483648}');
SELECT * FROM bi_state;

------------------------------------------------------------------------
-- inconsistencies, settled
------------------------------------------------------------------------
-- an empty consumer name is refused everywhere: 22023
SELECT mq.consumer_declare('bi_q', '');
SELECT mq.consumer_delete('bi_q', '');
SELECT * FROM mq.consume('bi_q', consumer => '');
-- counts are at least 1 everywhere: 22023
SELECT * FROM mq.browse('bi_q', -1);
SELECT * FROM mq.browse('bi_q', 0);
SELECT * FROM mq.consume('bi_q', -1);
SELECT * FROM mq.consume('bi_q', 0);
SELECT * FROM mq.messages_by_key('bi_k', -5);
SELECT * FROM mq.messages_by_key('bi_k', 0);
SELECT * FROM mq.messages_by_key('bi_k', 10001);
SELECT mq.log_retire(-1);
SELECT mq.log_retire(0);
-- the default exchange cannot be redeclared: 42501
SELECT mq.exchange_declare('');
SELECT mq.exchange_declare('', 'direct');
SELECT mq.exchange_declare('', 'topic');
-- ... a predeclared amq.* exchange can, with its settings
SELECT mq.exchange_declare('amq.direct', 'direct');
SELECT mq.exchange_declare('amq.direct', 'topic');                 -- 55000
-- alternate-exchange must be a JSON string: 22023
SELECT mq.exchange_declare('bi_y', arguments => '{"alternate-exchange": 5}');
SELECT mq.exchange_declare('bi_y', arguments => '{"alternate-exchange": null}');
SELECT mq.exchange_declare('bi_y', arguments => '{"alternate-exchange": ["bi_x"]}');
SELECT mq.exchange_declare('bi_y', arguments => '{"alternate-exchange": {"name": "bi_x"}}');
SELECT * FROM bi_state;

-- the messages name the argument
\set VERBOSITY default
SELECT mq.queue_delete('bi_q', if_empty => NULL);
SELECT mq.send('bi_q', 'x'::text, delay => '600000 years');
SELECT mq.send('bi_q', 'x'::text, deliver_at => 'infinity');
SELECT mq.send('bi_q', 'x'::text, deliver_at => '294276-12-30 00:00+00', expiration => '5 days');
SELECT * FROM mq.messages_by_key('bi_k', -5);
SELECT mq.exchange_declare('');
SELECT mq.exchange_declare('bi_y', arguments => '{"alternate-exchange": 5}');
\set VERBOSITY sqlstate

------------------------------------------------------------------------
-- mqlog inspection of what is not an mqlog table
------------------------------------------------------------------------
CREATE TABLE bi_heap (a int);
CREATE INDEX bi_heap_a ON bi_heap (a);
CREATE SEQUENCE bi_seq;
CREATE VIEW bi_view AS SELECT 1 AS a;
CREATE TYPE bi_type AS (a int);
SELECT * FROM mq.mqlog_verify('4294967000'::oid::regclass);              -- 42P01
SELECT * FROM mq.mqlog_page_items('4294967000'::oid::regclass, 0);       -- 42P01
SELECT * FROM mq.mqlog_verify('bi_heap');                                -- 42809
SELECT * FROM mq.mqlog_verify('bi_heap_a');
SELECT * FROM mq.mqlog_verify('bi_seq');
SELECT * FROM mq.mqlog_verify('bi_view');
SELECT * FROM mq.mqlog_verify('bi_type');
SELECT * FROM mq.mqlog_page_items('bi_heap', 0);
SELECT * FROM mq.mqlog_page_items('bi_heap_a', 0);
SELECT * FROM mq.mqlog_page_items('bi_log', -1);                        -- 22023
\set VERBOSITY default
SELECT * FROM mq.mqlog_verify('4294967000'::oid::regclass);
SELECT * FROM mq.mqlog_verify('bi_heap_a');
\set VERBOSITY sqlstate
-- and an mqlog table is still checked
SELECT count(*) FROM mq.mqlog_verify('bi_log');
SELECT lp, natts FROM mq.mqlog_page_items('bi_log', 0);

------------------------------------------------------------------------
-- sensible edge values still work
------------------------------------------------------------------------
SELECT mq.send('bi_q', 'd0'::text, delay => '0') IS NOT NULL AS sent;
SELECT mq.send('bi_q', 'x100'::text, expiration => '100 years') IS NOT NULL AS sent;
SELECT mq.send('bi_q', 'past'::text, deliver_at => '4000-01-01 BC') IS NOT NULL AS sent;
SELECT mq.send('bi_q', 'd100'::text, delay => '100 years') IS NOT NULL AS sent;
SELECT count(*) FROM mq.send_batch('bi_q', ARRAY['b100']::text[], delay => '100 years');
-- the 100-year ones are delayed, not ready
SELECT * FROM bi_state;
SELECT convert_from(body, 'UTF8') AS body FROM mq.browse('bi_q') ORDER BY 1;
SELECT count(*) FROM mq.browse('bi_q', 10000);
SELECT count(*) FROM mq.messages_by_key('bi_none', 10000);
SELECT count(*) FROM mq.consume('bi_q', 10000, lease => '100 years');
SELECT count(*) FROM mq.consume('bi_q', wait => '10 ms');
SELECT mq.extend_lease('bi_q', (SELECT array_agg(msg_id) FROM bi_got), '100 years');
SELECT mq.nack('bi_q', (SELECT array_agg(msg_id) FROM bi_got), delay => '100 years');
SELECT * FROM bi_state;
SELECT mq.log_retire(1) >= 0 AS ok;
-- the largest x-message-ttl, and a message due near the end of time
SELECT mq.queue_declare('bi_ttl', arguments => '{"x-message-ttl": 2147483647}');
SELECT mq.send('bi_ttl', 'late'::text, deliver_at => '294276-12-01 00:00+00') IS NOT NULL AS sent;
SELECT ready, delayed FROM mq.queues WHERE queue = 'bi_ttl';
SELECT mq.queue_delete('bi_ttl');
SELECT mq.exchange_declare('bi_ae', arguments => '{"alternate-exchange": "bi_x"}');
SELECT exchange, alternate_exchange FROM mq.exchanges WHERE exchange = 'bi_ae';
SELECT mq.producer_group_declare('bi_pg3', 'bi_check(bigint,jsonb,bytea)',
                                 check_after => '100 years', check_interval => '100 years');
SELECT mq.grant('publish', 'queue', 'bi_q', NULL);               -- PUBLIC
SELECT mq.revoke('publish', 'queue', 'bi_q', NULL);

-- clean up
SELECT mq.queue_delete('bi_q');
SELECT mq.queue_delete('bi_dlq');
SELECT mq.exchange_delete('bi_ae');
SELECT mq.exchange_delete('bi_x');
DROP VIEW bi_state;
DROP TABLE bi_heap, bi_log;
DROP SEQUENCE bi_seq;
DROP VIEW bi_view;
DROP TYPE bi_type;
