--
-- rabbit_dead_lettering: dead-lettering as RabbitMQ 4.3 does it, case by
-- case after deps/rabbit/test/dead_lettering_SUITE.erl (each case names the
-- one it follows): dead-letter cycles, the x-death history (broker-written,
-- not the publisher's header), original-expiration, x-first-death-* and
-- x-last-death-*, and sender-selected distribution (CC and BCC headers)
-- on publish and on dead-lettering.  Names start with "rd_".  Expiry is
-- driven by consume (which dead-letters expired messages it meets), and
-- once by the worker; no ids or timestamps are printed.
--
\set VERBOSITY sqlstate

-- x-death without its timestamps
CREATE FUNCTION pg_temp.death(h jsonb) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_agg(d - 'time') FROM jsonb_array_elements(h->'x-death') d
$$;
-- take every ready message of a queue: body, x-death and the other headers
CREATE FUNCTION pg_temp.take(q text)
RETURNS TABLE (body text, x_death jsonb, other_headers jsonb) LANGUAGE sql AS $$
	SELECT convert_from(c.body, 'UTF8'), pg_temp.death(c.headers), c.headers - 'x-death'
	  FROM mq.consume(q, 100, auto_ack => true) c
$$;
\ir test/regress/wait.sql
-- (waits for a queue to be empty: the worker may be expiring a message
-- right now, and an expired message gone means its dead letter committed)
CREATE FUNCTION pg_temp.counts(qs text[])
RETURNS TABLE (queue text, ready bigint, unacked bigint, total bigint) LANGUAGE sql AS $$
	SELECT queue, ready, unacked, total FROM mq.queues WHERE queue = ANY (qs) ORDER BY queue
$$;

------------------------------------------------------------------------
-- Dead-letter cycles
------------------------------------------------------------------------

-- dead_lettering_SUITE: dead_letter_routing_key_cycle_ttl
-- x-message-ttl and the default exchange back to the same queue: the
-- expired message is dead-lettered and dropped, not looped
SELECT mq.queue_declare('rd_cyc_ttl', arguments => '{"x-message-ttl": 1, "x-dead-letter-exchange": ""}');
SELECT count(*) FROM mq.send_batch('rd_cyc_ttl', ARRAY['msg1', 'msg2']::text[]);
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_cyc_ttl', 10);
SELECT wait_until($$SELECT total = 0 FROM mq.queues WHERE queue = 'rd_cyc_ttl'$$);
SELECT * FROM pg_temp.counts('{rd_cyc_ttl}');
-- the same through the worker's expiry at the head of the queue
SELECT wait_until($$SELECT EXISTS (SELECT 1 FROM pg_stat_activity
								 WHERE backend_type = 'queue_ext worker' AND datname = current_database())$$);
SELECT mq.send('rd_cyc_ttl', 'msg3'::text) IS NOT NULL;
-- the worker expires it within a pass or two (mq.maintenance_naptime 1s);
-- wait for that, then show what is left (a loop would keep it there)
SELECT wait_until($$SELECT total = 0 FROM mq.queues WHERE queue = 'rd_cyc_ttl'$$);
SELECT pg_sleep(1.5);		-- and a pass more: nothing comes back
SELECT * FROM pg_temp.counts('{rd_cyc_ttl}');

-- dead_lettering_SUITE: dead_letter_routing_key_cycle_max_length
-- x-max-length 1 into itself: the dropped head is not republished, and the
-- limit holds
SELECT mq.queue_declare('rd_cyc_len', arguments => '{"x-max-length": 1, "x-dead-letter-exchange": ""}');
SELECT mq.send('rd_cyc_len', 'msg1'::text) IS NOT NULL;
SELECT mq.send('rd_cyc_len', 'msg2'::text) IS NOT NULL;
SELECT * FROM pg_temp.counts('{rd_cyc_len}');
SELECT * FROM pg_temp.take('rd_cyc_len');
SELECT * FROM pg_temp.counts('{rd_cyc_len}');
-- a batch: one held, the others dropped
SELECT count(*) FROM mq.send_batch('rd_cyc_len', ARRAY['b1', 'b2', 'b3']::text[]);
SELECT * FROM pg_temp.take('rd_cyc_len');

-- dead_lettering_SUITE: dead_letter_routing_key_cycle_with_reject and
-- dead_letter_headers_cycle: a rejection breaks the cycle; the same queue
-- and reason count up in one x-death entry
SELECT mq.queue_declare('rd_cyc_rej', arguments => '{"x-dead-letter-exchange": ""}');
SELECT mq.send('rd_cyc_rej', 'msg1'::text) IS NOT NULL;
SELECT mq.nack('rd_cyc_rej', ARRAY(SELECT msg_id FROM mq.consume('rd_cyc_rej')), requeue => false);
SELECT convert_from(body, 'UTF8') AS body, pg_temp.death(headers) AS x_death
  FROM mq.browse('rd_cyc_rej');
SELECT mq.nack('rd_cyc_rej', ARRAY(SELECT msg_id FROM mq.consume('rd_cyc_rej')), requeue => false);
SELECT * FROM pg_temp.take('rd_cyc_rej');

-- x-max-length with a rejection into the same full queue: the rejected
-- message comes back (no cycle), the head it pushes out is dropped (its
-- cycle has no rejection), and one message stays
SELECT mq.queue_declare('rd_cyc_rejlen', arguments => '{"x-max-length": 1, "x-dead-letter-exchange": ""}');
SELECT mq.send('rd_cyc_rejlen', 'first'::text) IS NOT NULL;
SELECT msg_id AS first_id FROM mq.consume('rd_cyc_rejlen') \gset
SELECT mq.send('rd_cyc_rejlen', 'second'::text) IS NOT NULL;
SELECT mq.reject('rd_cyc_rejlen', :first_id, requeue => false);
SELECT * FROM pg_temp.take('rd_cyc_rejlen');

-- two limited queues dead-lettering into each other: each keeps its
-- limit; a message that would go back to the queue it died in is dropped
SELECT mq.queue_declare('rd_len_a', arguments => '{"x-max-length": 1, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_len_b"}');
SELECT mq.queue_declare('rd_len_b', arguments => '{"x-max-length": 1, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_len_a"}');
SELECT mq.send('rd_len_a', b) IS NOT NULL FROM unnest(ARRAY['m1', 'm2', 'm3']) b;
SELECT * FROM pg_temp.counts('{rd_len_a,rd_len_b}');
SELECT * FROM pg_temp.take('rd_len_a');
SELECT * FROM pg_temp.take('rd_len_b');

-- rabbit_dead_letter:detect_cycles drops the copy for the cycling queue
-- only: other destinations of the dead-letter exchange still receive it
SELECT mq.exchange_declare('rd_fan', 'fanout');
SELECT mq.queue_declare('rd_cyc_fan', arguments => '{"x-message-ttl": 1, "x-dead-letter-exchange": "rd_fan"}');
SELECT mq.queue_declare('rd_fan_other');
SELECT mq.bind('rd_cyc_fan', 'rd_fan');
SELECT mq.bind('rd_fan_other', 'rd_fan');
SELECT mq.send('rd_cyc_fan', 'fanned'::text) IS NOT NULL;
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_cyc_fan');
SELECT wait_until($$SELECT total = 0 FROM mq.queues WHERE queue = 'rd_cyc_fan'$$);
SELECT * FROM pg_temp.counts('{rd_cyc_fan,rd_fan_other}');
SELECT * FROM pg_temp.take('rd_fan_other');

-- dead_lettering_SUITE: dead_letter_reject_expire_expire
-- b --rejected--> a2 --expired--> a3 --expired--> b, twice: the rejection
-- in the loop keeps it going (the 3.13.0-3.13.2 bug dropped it)
SELECT mq.queue_declare('rd_b', arguments => '{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_a2"}');
SELECT mq.queue_declare('rd_a2', arguments => '{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_a3", "x-message-ttl": 5}');
SELECT mq.queue_declare('rd_a3', arguments => '{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_b", "x-message-ttl": 5}');
SELECT mq.send('rd_b', 'msg'::text) IS NOT NULL;
SELECT mq.reject('rd_b', (SELECT msg_id FROM mq.consume('rd_b')), requeue => false);
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_a2');
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_a3');
SELECT wait_until($$SELECT ready > 0 FROM mq.queues WHERE queue = 'rd_b'$$);
SELECT convert_from(body, 'UTF8') AS body, pg_temp.death(headers) AS x_death FROM mq.browse('rd_b');
SELECT mq.reject('rd_b', (SELECT msg_id FROM mq.consume('rd_b')), requeue => false);
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_a2');
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_a3');
SELECT wait_until($$SELECT ready > 0 FROM mq.queues WHERE queue = 'rd_b'$$);
SELECT * FROM pg_temp.take('rd_b');
SELECT * FROM pg_temp.counts('{rd_b,rd_a2,rd_a3}');

------------------------------------------------------------------------
-- x-death and the first/last death headers
------------------------------------------------------------------------
SELECT mq.exchange_declare('rd_dlx', 'direct');
SELECT mq.queue_declare('rd_dead');
SELECT mq.bind('rd_dead', 'rd_dlx', 'rd_dead');
SELECT mq.queue_declare('rd_src', arguments => '{"x-dead-letter-exchange": "rd_dlx", "x-dead-letter-routing-key": "rd_dead"}');

-- dead_lettering_SUITE: dead_letter_headers (reason rejected, one entry)
SELECT mq.send('rd_src', 'msg1'::text) IS NOT NULL;
SELECT mq.nack('rd_src', ARRAY(SELECT msg_id FROM mq.consume('rd_src')), requeue => false);
SELECT * FROM pg_temp.take('rd_dead');

-- dead_lettering_SUITE: dead_letter_headers_reason_expired (queue TTL: no
-- original-expiration)
SELECT mq.queue_declare('rd_src_ttl', arguments => '{"x-message-ttl": 1, "x-dead-letter-exchange": "rd_dlx", "x-dead-letter-routing-key": "rd_dead"}');
SELECT mq.send('rd_src_ttl', 'msg1'::text) IS NOT NULL;
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_src_ttl');
SELECT wait_until($$SELECT total = 0 FROM mq.queues WHERE queue = 'rd_src_ttl'$$);
SELECT * FROM pg_temp.take('rd_dead');

-- dead_lettering_SUITE: dead_letter_headers_reason_expired_per_message
-- the per-message TTL is kept as original-expiration (a string, as AMQP's
-- expiration property) and removed from the copy's properties
SELECT mq.send('rd_src', 'msg1'::text, expiration => '1 ms', correlation_id => 'c1') IS NOT NULL;
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_src');
SELECT wait_until($$SELECT total = 0 FROM mq.queues WHERE queue = 'rd_src'$$);
SELECT convert_from(body, 'UTF8') AS body, pg_temp.death(headers) AS x_death, properties
  FROM mq.consume('rd_dead', 10, auto_ack => true);
-- mc:record_death records a message's TTL whatever the reason of its death
SELECT mq.send('rd_src', 'msg2'::text, expiration => '1 hour') IS NOT NULL;
SELECT mq.reject('rd_src', (SELECT msg_id FROM mq.consume('rd_src')), requeue => false);
SELECT convert_from(body, 'UTF8') AS body, pg_temp.death(headers) AS x_death, properties
  FROM mq.consume('rd_dead', 10, auto_ack => true);

-- dead_lettering_SUITE: dead_letter_headers_reason_maxlen
SELECT mq.queue_declare('rd_src_len', arguments => '{"x-max-length": 1, "x-dead-letter-exchange": "rd_dlx", "x-dead-letter-routing-key": "rd_dead"}');
SELECT count(*) FROM mq.send_batch('rd_src_len', ARRAY['msg1', 'msg2']::text[]);
SELECT * FROM pg_temp.take('rd_dead');

-- dead_lettering_SUITE: dead_letter_headers_should_be_appended_for_each_event
-- newest first
SELECT mq.queue_declare('rd_ev', arguments => '{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_ev_dlx1"}');
SELECT mq.queue_declare('rd_ev_dlx1', arguments => '{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_ev_dlx2"}');
SELECT mq.queue_declare('rd_ev_dlx2');
SELECT mq.send('rd_ev', 'msg1'::text) IS NOT NULL;
SELECT mq.nack('rd_ev', ARRAY(SELECT msg_id FROM mq.consume('rd_ev')), requeue => false);
SELECT mq.nack('rd_ev_dlx1', ARRAY(SELECT msg_id FROM mq.consume('rd_ev_dlx1')), requeue => false);
SELECT * FROM pg_temp.take('rd_ev_dlx2');

-- dead_lettering_SUITE: dead_letter_headers_should_not_be_appended_for_republish
-- a publisher's x-death (and x-first-death-*) is not death history: it is
-- delivered as it was published, and the first death replaces it
SELECT mq.send('rd_src', 'msg1'::text) IS NOT NULL;
SELECT mq.nack('rd_src', ARRAY(SELECT msg_id FROM mq.consume('rd_src')), requeue => false);
SELECT headers AS republished FROM mq.consume('rd_dead', auto_ack => true) \gset
SELECT mq.send('rd_dead', 'as published'::text, headers => :'republished') IS NOT NULL;
SELECT convert_from(body, 'UTF8') AS body, headers = :'republished' AS unchanged
  FROM mq.consume('rd_dead', 10, auto_ack => true);
SELECT mq.send('rd_src_ttl', 'msg1'::text, headers => :'republished') IS NOT NULL;
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_src_ttl');
SELECT wait_until($$SELECT total = 0 FROM mq.queues WHERE queue = 'rd_src_ttl'$$);
SELECT * FROM pg_temp.take('rd_dead');

-- a forged x-death does not close a cycle either: it claims the message
-- died in rd_fg_dest already, yet the dead letter reaches it
SELECT mq.queue_declare('rd_fg_dest');
SELECT mq.queue_declare('rd_fg', arguments => '{"x-message-ttl": 1, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_fg_dest"}');
SELECT mq.send('rd_fg', 'forged'::text, headers => '{"x-death": [{"count": 7, "queue": "rd_fg_dest", "reason": "expired", "exchange": "", "routing-keys": ["rd_fg_dest"]}, {"count": 3, "queue": "rd_fg", "reason": "expired"}]}') IS NOT NULL;
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_fg');
SELECT wait_until($$SELECT total = 0 FROM mq.queues WHERE queue = 'rd_fg'$$);
SELECT * FROM pg_temp.take('rd_fg_dest');
-- a header that is not an array is just the publisher's data too
SELECT mq.send('rd_fg', 'odd'::text, headers => '{"x-death": "yes", "x-first-death-queue": 5}') IS NOT NULL;
SELECT pg_sleep(0.05);
SELECT count(*) FROM mq.consume('rd_fg');
SELECT wait_until($$SELECT total = 0 FROM mq.queues WHERE queue = 'rd_fg'$$);
SELECT * FROM pg_temp.take('rd_fg_dest');

-- dead_lettering_SUITE: dead_letter_headers_first_death
-- a loop rd_fd -> rd_fd_dlx -> rd_fd by rejections: x-first-death-* keep
-- the first death, x-last-death-* follow the latest
SELECT mq.queue_declare('rd_fd', arguments => '{"x-dead-letter-exchange": "rd_dlx", "x-dead-letter-routing-key": "rd_fd_dlx"}');
SELECT mq.queue_declare('rd_fd_dlx', arguments => '{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rd_fd"}');
SELECT mq.bind('rd_fd_dlx', 'rd_dlx', 'rd_fd_dlx');
SELECT mq.send('rd_fd', 'msg1'::text) IS NOT NULL;
SELECT mq.nack('rd_fd', ARRAY(SELECT msg_id FROM mq.consume('rd_fd')), requeue => false);
SELECT headers - 'x-death' AS first_and_last FROM mq.browse('rd_fd_dlx');
SELECT mq.nack('rd_fd_dlx', ARRAY(SELECT msg_id FROM mq.consume('rd_fd_dlx')), requeue => false);
SELECT * FROM pg_temp.take('rd_fd');

-- dead_lettering_SUITE: dead_letter_headers_first_death_route
-- a headers exchange routes dead letters by x-first-death-* (all-with-x,
-- any-with-x)
SELECT mq.exchange_declare('rd_hdlx', 'headers');
SELECT mq.queue_declare('rd_fdr_src1', arguments => '{"x-dead-letter-exchange": "rd_hdlx"}');
SELECT mq.queue_declare('rd_fdr_src2', arguments => '{"x-dead-letter-exchange": "rd_hdlx"}');
SELECT mq.queue_declare('rd_fdr_expired');
SELECT mq.queue_declare('rd_fdr_rejected');
SELECT mq.bind('rd_fdr_expired', 'rd_hdlx', arguments => '{"x-match": "all-with-x", "x-first-death-reason": "expired", "x-first-death-queue": "rd_fdr_src1"}');
SELECT mq.bind('rd_fdr_rejected', 'rd_hdlx', arguments => '{"x-match": "any-with-x", "x-first-death-reason": "rejected"}');
SELECT mq.send('rd_fdr_src1', 'msg1'::text, expiration => '0') IS NOT NULL;
SELECT mq.send('rd_fdr_src2', 'msg2'::text, expiration => '0') IS NOT NULL;
SELECT count(*) FROM mq.consume('rd_fdr_src1');
SELECT count(*) FROM mq.consume('rd_fdr_src2');
SELECT mq.send('rd_fdr_src2', 'msg3'::text) IS NOT NULL;
SELECT mq.reject('rd_fdr_src2', (SELECT msg_id FROM mq.consume('rd_fdr_src2')), requeue => false);
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('rd_fdr_expired', 10, auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('rd_fdr_rejected', 10, auto_ack => true);
SELECT * FROM pg_temp.counts('{rd_fdr_src1,rd_fdr_src2,rd_fdr_expired,rd_fdr_rejected}');

------------------------------------------------------------------------
-- Sender-selected distribution: CC and BCC
------------------------------------------------------------------------
SELECT mq.queue_declare('rd_to');
SELECT mq.queue_declare('rd_cc');
SELECT mq.queue_declare('rd_bcc');

-- CC: the message is stored once and routed by its routing key and the CC
-- keys; consumers see the CC header
SELECT mq.publish('', 'rd_to', 'cc1'::text, headers => '{"app": 1, "CC": ["rd_cc", "rd_nowhere"]}') AS cc_id \gset
SELECT msg_id = :cc_id AS same_message, queue, headers FROM mq.consume('rd_to', auto_ack => true);
SELECT msg_id = :cc_id AS same_message, queue, headers FROM mq.consume('rd_cc', auto_ack => true);
-- BCC: routes the same way, but nobody sees the header (nor the keys)
SELECT mq.publish('', 'rd_to', 'bcc1'::text, headers => '{"CC": ["rd_cc"], "BCC": ["rd_bcc", "rd_cc"]}',
                  correlation_id => 'c2') IS NOT NULL;
SELECT queue, convert_from(body, 'UTF8') AS body, headers, properties
  FROM (SELECT * FROM mq.consume('rd_to', auto_ack => true)
        UNION ALL SELECT * FROM mq.consume('rd_cc', auto_ack => true)
        UNION ALL SELECT * FROM mq.consume('rd_bcc', auto_ack => true)) c ORDER BY queue;
SELECT headers, properties FROM mq.message((SELECT mq.publish('', 'rd_bcc', 'bcc2'::text, headers => '{"BCC": ["rd_to"]}')));
SELECT count(*) FROM mq.consume('rd_to', auto_ack => true);
SELECT count(*) FROM mq.consume('rd_bcc', auto_ack => true);
-- through a direct exchange, in a batch (per message keys), mandatory met
-- by a CC key alone
SELECT mq.exchange_declare('rd_direct', 'direct');
SELECT mq.bind('rd_cc', 'rd_direct', 'k-cc');
SELECT mq.bind('rd_bcc', 'rd_direct', 'k-bcc');
SELECT count(*) FROM mq.publish_batch('rd_direct', ARRAY['none'], ARRAY['b1', 'b2', 'b3']::text[],
	headers => ARRAY['{"CC": ["k-cc"]}', '{"BCC": ["k-bcc"]}', '{}']::jsonb[]) id WHERE id IS NOT NULL;
SELECT mq.publish('rd_direct', 'none', 'm1'::text, headers => '{"CC": ["k-bcc"]}', mandatory => true) IS NOT NULL;
SELECT mq.publish('rd_direct', 'none', 'm2'::text, headers => '{"CC": ["none"]}', mandatory => true); -- P0002
SELECT queue, convert_from(body, 'UTF8') AS body, headers
  FROM (SELECT * FROM mq.consume('rd_cc', 10, auto_ack => true)
        UNION ALL SELECT * FROM mq.consume('rd_bcc', 10, auto_ack => true)) c ORDER BY queue, body;
-- rabbit_basic:header_routes: a CC or BCC that is not an array refuses the
-- message; strings in the array are keys, anything else in it is ignored
SELECT mq.publish('', 'rd_to', 'x'::text, headers => '{"CC": "rd_cc"}');             -- 22023
SELECT mq.publish('', 'rd_to', 'x'::text, headers => '{"BCC": {"a": 1}}');           -- 22023
SELECT mq.publish('', 'rd_to', 'x'::text, headers => '{"CC": null}');                -- 22023
SELECT mq.send_batch('rd_to', ARRAY['x', 'y']::text[], ARRAY['{}', '{"BCC": 1}']::jsonb[]); -- 22023
SELECT mq.publish('', 'rd_to', 'x'::text, headers => jsonb_build_object('CC', jsonb_build_array(repeat('k', 256)))); -- 22023
SELECT * FROM pg_temp.counts('{rd_to,rd_cc,rd_bcc}');
SELECT mq.publish('', 'rd_to', 'odd'::text, headers => '{"CC": [1, null, ["rd_cc"], "rd_cc"], "BCC": []}') IS NOT NULL;
SELECT queue, headers FROM (SELECT * FROM mq.consume('rd_to', auto_ack => true)
        UNION ALL SELECT * FROM mq.consume('rd_cc', auto_ack => true)) c ORDER BY queue;
-- a CC key still needs publish on the queue it reaches through the
-- default exchange
CREATE ROLE regress_rd_publisher;
SELECT mq.grant('publish', 'queue', 'rd_to', 'regress_rd_publisher');
SET ROLE regress_rd_publisher;
SELECT mq.publish('', 'rd_to', 'x'::text, headers => '{"CC": ["rd_cc"]}');         -- 42501
SELECT mq.publish('', 'rd_to', 'x'::text, headers => '{"CC": ["rd_to"]}') IS NOT NULL;
RESET ROLE;
SELECT count(*) FROM mq.consume('rd_to', 10, auto_ack => true);

-- dead_lettering_SUITE: dead_letter_routing_key_header_CC
-- no x-dead-letter-routing-key: the dead letter is routed by the message's
-- routing key and its CC keys
SELECT mq.exchange_declare('rd_ccdlx', 'direct');
SELECT mq.queue_declare('rd_cc_src', arguments => '{"x-dead-letter-exchange": "rd_ccdlx"}');
SELECT mq.queue_declare('rd_cc_dlq');
SELECT mq.bind('rd_cc_dlq', 'rd_ccdlx', 'rd_cc_dlq');
SELECT mq.send('rd_cc_src', 'msg1'::text) IS NOT NULL;
SELECT mq.send('rd_cc_src', 'msg2'::text, headers => '{"CC": ["rd_cc_dlq"]}') IS NOT NULL;
SELECT * FROM pg_temp.take('rd_cc_dlq');
SELECT mq.nack('rd_cc_src', ARRAY(SELECT msg_id FROM mq.consume('rd_cc_src', 2)), requeue => false);
SELECT * FROM pg_temp.counts('{rd_cc_src,rd_cc_dlq}');
-- dead_lettering_SUITE: dead_letter_headers_CC (the copy keeps CC; x-death
-- routing-keys include it)
SELECT * FROM pg_temp.take('rd_cc_dlq');

-- dead_lettering_SUITE: dead_letter_routing_key_header_BCC and
-- dead_letter_headers_BCC: BCC keys route the dead letter too, but never
-- show, neither as a header nor in x-death's routing-keys
SELECT mq.send('rd_cc_src', 'msg3'::text, headers => '{"CC": ["cc 1", "cc 2"], "BCC": ["rd_cc_dlq", "bcc 2"]}') IS NOT NULL;
SELECT * FROM pg_temp.take('rd_cc_dlq');
SELECT mq.nack('rd_cc_src', ARRAY(SELECT msg_id FROM mq.consume('rd_cc_src')), requeue => false);
SELECT * FROM pg_temp.take('rd_cc_dlq');
SELECT * FROM pg_temp.counts('{rd_cc_src,rd_cc_dlq}');

-- dead_lettering_SUITE: dead_letter_headers_CC_with_routing_key
-- with x-dead-letter-routing-key only that key routes the dead letter; the
-- CC header stays on the copy (RabbitMQ 3.13+)
SELECT mq.queue_declare('rd_ccrk_src', arguments => '{"x-dead-letter-exchange": "rd_ccdlx", "x-dead-letter-routing-key": "rd_cc_dlq"}');
SELECT mq.queue_declare('rd_ccrk_other');
SELECT mq.bind('rd_ccrk_other', 'rd_ccdlx', 'k-other');
SELECT mq.send('rd_ccrk_src', 'msg1'::text, headers => '{"CC": ["k-other"]}') IS NOT NULL;
SELECT mq.nack('rd_ccrk_src', ARRAY(SELECT msg_id FROM mq.consume('rd_ccrk_src')), requeue => false);
SELECT * FROM pg_temp.take('rd_cc_dlq');
SELECT * FROM pg_temp.counts('{rd_ccrk_other}');
-- without it, the CC key reaches rd_ccrk_other too
SELECT mq.queue_declare('rd_ccrk_src2', arguments => '{"x-dead-letter-exchange": "rd_ccdlx"}');
SELECT mq.bind('rd_ccrk_src2', 'rd_ccdlx', 'rd_ccrk_src2');
SELECT mq.send('rd_ccrk_src2', 'msg2'::text, headers => '{"CC": ["k-other"]}') IS NOT NULL;
SELECT mq.nack('rd_ccrk_src2', ARRAY(SELECT msg_id FROM mq.consume('rd_ccrk_src2')), requeue => false);
SELECT * FROM pg_temp.counts('{rd_ccrk_src2,rd_ccrk_other}');
SELECT * FROM pg_temp.take('rd_ccrk_src2');
SELECT * FROM pg_temp.take('rd_ccrk_other');
-- rabbit_dead_letter:publish: a dead letter's routing keys are the ones it
-- was dead-lettered with, so once routed by x-dead-letter-routing-key its
-- CC header (still there) routes nothing when it dies again
SELECT mq.queue_declare('rd_ccrk_src3', arguments => '{"x-dead-letter-exchange": "rd_ccdlx", "x-dead-letter-routing-key": "k-mid"}');
SELECT mq.queue_declare('rd_ccrk_mid', arguments => '{"x-dead-letter-exchange": "rd_ccdlx"}');
SELECT mq.bind('rd_ccrk_mid', 'rd_ccdlx', 'k-mid');
SELECT mq.send('rd_ccrk_src3', 'msg3'::text, headers => '{"CC": ["k-other"]}') IS NOT NULL;
SELECT mq.nack('rd_ccrk_src3', ARRAY(SELECT msg_id FROM mq.consume('rd_ccrk_src3')), requeue => false);
SELECT mq.nack('rd_ccrk_mid', ARRAY(SELECT msg_id FROM mq.consume('rd_ccrk_mid')), requeue => false);
SELECT * FROM pg_temp.counts('{rd_ccrk_src3,rd_ccrk_mid,rd_ccrk_other}');
SELECT * FROM pg_temp.take('rd_ccrk_mid');

-- half messages: CC and BCC are read at publish_half (BCC not stored) and
-- route at the commit
CREATE FUNCTION rd_check(half_id bigint, headers jsonb, body bytea) RETURNS text
LANGUAGE sql AS $$ SELECT 'unknown' $$;
SELECT mq.producer_group_declare('rd_pg', 'rd_check(bigint,jsonb,bytea)', check_after => '1 hour');
SELECT mq.publish_half('', 'rd_to', 'half'::text, producer_group => 'rd_pg',
                       headers => '{"CC": ["rd_cc"], "BCC": ["rd_bcc"]}') AS half_id \gset
SELECT mq.end_half(:half_id, 'commit') = :half_id;
SELECT queue, convert_from(body, 'UTF8') AS body, headers, properties
  FROM (SELECT * FROM mq.consume('rd_to', auto_ack => true)
        UNION ALL SELECT * FROM mq.consume('rd_cc', auto_ack => true)
        UNION ALL SELECT * FROM mq.consume('rd_bcc', auto_ack => true)) c ORDER BY queue;

-- clean up
SELECT count(*) FROM (SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue LIKE 'rd\_%') d;
SELECT mq.exchange_delete(e) FROM unnest(ARRAY['rd_fan', 'rd_dlx', 'rd_hdlx', 'rd_direct', 'rd_ccdlx']) e;
DROP FUNCTION rd_check(bigint, jsonb, bytea);
DROP ROLE regress_rd_publisher;
DROP FUNCTION wait_until(text, interval);
