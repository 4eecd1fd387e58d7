--
-- broker_publish: mq.publish / send / publish_batch / send_batch with bytea,
-- text and jsonb bodies; unroutable; fanout stores the body once;
-- transactional all-or-nothing; dedup_id; lookups by key and id.
-- Names start with "bp_".
--
\set VERBOSITY sqlstate
SELECT mq.queue_declare('bp_a'), mq.queue_declare('bp_b'), mq.queue_declare('bp_c');
SELECT mq.exchange_declare('bp_fan', 'fanout');
SELECT mq.bind(q, 'bp_fan') FROM unnest(ARRAY['bp_a', 'bp_b', 'bp_c']) q;

-- three body types, through publish and send
SELECT mq.publish('', 'bp_a', '\x00ff01'::bytea) > 0 AS bytea_id;
SELECT mq.publish('', 'bp_a', 'hello text'::text) > 0 AS text_id;
SELECT mq.publish('', 'bp_a', '{"n": 1, "s": "x"}'::jsonb) > 0 AS jsonb_id;
SELECT mq.send('bp_a', '\xdeadbeef'::bytea) > 0 AS sent;
SELECT mq.send('bp_a', 'send text'::text) > 0 AS sent;
SELECT mq.send('bp_a', '[1, 2]'::jsonb) > 0 AS sent;
SELECT body, headers, properties->>'content_type' AS content_type
  FROM mq.consume('bp_a', 10, auto_ack => true);
-- ids increase in publish order
SELECT mq.send('bp_a', 'first'::text) < mq.send('bp_a', 'second'::text) AS increasing;
SELECT mq.queue_purge('bp_a');

-- unroutable, non-mandatory: NULL; send is always mandatory
SELECT mq.publish('', 'bp_nosuchqueue', 'x'::text) IS NULL AS dropped;
SELECT mq.publish('amq.direct', 'nobody', 'x'::text) IS NULL AS dropped;
SELECT mq.send('bp_nosuchqueue', 'x'::text);
SELECT mq.publish('amq.direct', 'nobody', 'x'::text, mandatory => true);

-- fanout to 3 queues stores the body once: every queue gets the same msg_id
CREATE TEMP TABLE bp_ids (id bigint);
INSERT INTO bp_ids SELECT mq.publish('bp_fan', '', 'fanned'::text, headers => '{"h": 1}');
SELECT q.queue, c.msg_id = (SELECT id FROM bp_ids) AS same_id,
       convert_from(c.body, 'UTF8') AS body, c.headers
  FROM unnest(ARRAY['bp_a', 'bp_b', 'bp_c']) q(queue),
       LATERAL mq.consume(q.queue, 10, auto_ack => true) c
 ORDER BY 1;
-- one row in the message log for it
SELECT count(*) AS log_rows FROM mq.message((SELECT id FROM bp_ids));

-- publish_batch / send_batch return one id per body (NULL when unroutable)
SELECT count(*) AS ids, count(DISTINCT i) AS distinct_ids
  FROM mq.send_batch('bp_a', ARRAY['b1', 'b2', 'b3']::text[]) i;
SELECT i IS NULL AS unroutable
  FROM mq.publish_batch('', ARRAY['bp_a', 'bp_nosuchqueue', 'bp_b'], ARRAY['x1', 'x2', 'x3']::text[]) i;
SELECT count(*) FROM mq.publish_batch('', ARRAY['bp_b'], ARRAY['{"a":1}', '{"a":2}']::jsonb[]);
SELECT count(*) FROM mq.send_batch('bp_b', ARRAY['\x01', '\x02']::bytea[],
	headers => ARRAY['{"k":1}', '{"k":2}']::jsonb[]);
SELECT queue, convert_from(body, 'UTF8') AS body FROM mq.consume('bp_a', 10, auto_ack => true);
SELECT queue, body, headers FROM mq.consume('bp_b', 10, auto_ack => true);
-- batch with mandatory: one unroutable fails the whole call
SELECT * FROM mq.publish_batch('', ARRAY['bp_a', 'bp_nosuchqueue'], ARRAY['m1', 'm2']::text[], mandatory => true);
SELECT ready FROM mq.queues WHERE queue = 'bp_a';
-- mismatched array lengths
SELECT * FROM mq.publish_batch('', ARRAY['bp_a', 'bp_b'], ARRAY['1', '2', '3']::text[]);
SELECT * FROM mq.send_batch('bp_a', ARRAY['1', '2']::text[], headers => ARRAY['{}']::jsonb[]);
SELECT * FROM mq.send_batch('bp_a', ARRAY['1', NULL]::text[]);
SELECT count(*) FROM mq.send_batch('bp_a', ARRAY[]::text[]);

-- all-or-nothing within a transaction
BEGIN;
SELECT mq.publish('bp_fan', '', 'rolled back'::text) IS NOT NULL AS routed;
SELECT mq.send('bp_a', 'rolled back too'::text) IS NOT NULL AS sent;
-- own transaction: not ready for consumers yet (uncommitted)
ROLLBACK;
SELECT queue, ready, unacked, total FROM mq.queues WHERE queue LIKE 'bp\__' ORDER BY 1;
SELECT count(*) FROM mq.consume('bp_a', 10, auto_ack => true);
SELECT count(*) FROM mq.consume('bp_b', 10, auto_ack => true);
-- error in the middle of a transaction: nothing from it remains
BEGIN;
SELECT mq.send('bp_a', 'before error'::text) IS NOT NULL AS sent;
SELECT mq.send('bp_nosuchqueue', 'boom'::text);
ROLLBACK;
SELECT count(*) FROM mq.consume('bp_a', 10, auto_ack => true);
-- savepoint: only the rolled back part disappears
BEGIN;
SELECT mq.send('bp_a', 'kept'::text) IS NOT NULL AS sent;
SAVEPOINT s;
SELECT mq.send('bp_a', 'undone'::text) IS NOT NULL AS sent;
ROLLBACK TO s;
COMMIT;
SELECT convert_from(body, 'UTF8') FROM mq.consume('bp_a', 10, auto_ack => true);

-- dedup_id: a retry returns the first id and stores nothing
SELECT mq.send('bp_c', 'd1'::text, dedup_id => 'bp-dedup-1') AS d1 \gset
SELECT mq.send('bp_c', 'd1 retry'::text, dedup_id => 'bp-dedup-1') = :d1 AS same_id;
SELECT mq.publish('', 'bp_c', 'd1 again'::text, dedup_id => 'bp-dedup-1') = :d1 AS same_id;
SELECT mq.send('bp_c', 'd2'::text, dedup_id => 'bp-dedup-2') <> :d1 AS new_id;
SELECT ready FROM mq.queues WHERE queue = 'bp_c';
SELECT convert_from(body, 'UTF8') FROM mq.consume('bp_c', 10, auto_ack => true);
-- a rolled-back publish does not reserve its dedup_id
BEGIN;
SELECT mq.send('bp_c', 'd3 aborted'::text, dedup_id => 'bp-dedup-3') IS NOT NULL;
ROLLBACK;
SELECT mq.send('bp_c', 'd3'::text, dedup_id => 'bp-dedup-3') IS NOT NULL AS sent;
SELECT convert_from(body, 'UTF8') FROM mq.consume('bp_c', 10, auto_ack => true);

-- key lookup and mq.message(id)
SELECT mq.send('bp_c', 'order 1 created'::text, key => 'bp-order-1') AS k1 \gset
SELECT mq.send('bp_c', 'order 1 paid'::text, key => 'bp-order-1') AS k2 \gset
SELECT mq.send('bp_c', 'order 2'::text, key => 'bp-order-2', tag => 'TagA',
	correlation_id => 'c-1', reply_to => 'bp_a', priority => 3,
	headers => '{"x": "y"}') AS k3 \gset
SELECT msg_id = :k2 AS newest_first, convert_from(body, 'UTF8'), key
  FROM mq.messages_by_key('bp-order-1');
SELECT convert_from(body, 'UTF8'), key FROM mq.messages_by_key('bp-order-1', 1);
SELECT count(*) FROM mq.messages_by_key('bp-no-such-key');
SELECT msg_id = :k3 AS same, exchange, routing_key, convert_from(body, 'UTF8'), headers,
       key, tag, priority, properties
  FROM mq.message(:k3);
SELECT count(*) FROM mq.message(-1);
SELECT count(*) FROM mq.message(NULL);                  -- 22004
-- a consumed and acked message can still be looked up
SELECT count(*) FROM mq.consume('bp_c', 10, auto_ack => true);
SELECT convert_from(body, 'UTF8') FROM mq.message(:k1);

-- the internal batch lookup by key (queue_ext_pgmq maps its msg_ids with
-- it): the newest message of each key sent to that queue through the
-- default exchange; a message routed by another exchange does not count
SELECT mq.publish('bp_fan', '', 'order 1 via fanout'::text, key => 'bp-order-1') AS k4 \gset
SELECT key, msg_id = :k2 AS newest_sent_to_bp_c, msg_id = :k3 AS k3
  FROM mq._log_find_keys('bp_c', ARRAY['bp-order-1', NULL, 'bp-order-2', 'bp-no-such-key'])
 ORDER BY key;
SELECT count(*) FROM mq._log_find_keys('bp_a', ARRAY['bp-order-1', 'bp-order-2']);
SELECT count(*) FROM mq._log_find_keys('bp_c', '{}');
SELECT count(*) FROM mq._log_find_keys(NULL, '{}');    -- 22004

-- business keys per message in a batch (keys: one per body, NULL for none)
SELECT count(*) FROM mq.send_batch('bp_b', ARRAY['k1', 'k2', 'k3']::text[],
	keys => ARRAY['bp-batch-1', NULL, 'bp-batch-3']);
SELECT count(*) FROM mq.publish_batch('bp_fan', ARRAY['x'], ARRAY['p1', 'p2']::text[],
	keys => ARRAY['bp-batch-p1', 'bp-batch-p2']);
SELECT convert_from(body, 'UTF8'), key, routing_key FROM mq.messages_by_key('bp-batch-3');
SELECT convert_from(body, 'UTF8'), exchange FROM mq.messages_by_key('bp-batch-p2');
SELECT convert_from(body, 'UTF8') AS body, key FROM mq.consume('bp_b', 10, auto_ack => true);
SELECT mq.send_batch('bp_b', ARRAY['a', 'b']::text[], keys => ARRAY['only one']);     -- 2202E
SELECT mq.send_batch('bp_b', ARRAY['a']::text[], keys => ARRAY[['x']]);              -- 2202E
SELECT mq.publish_batch('bp_fan', ARRAY['x'], ARRAY['a']::text[], keys => '{}');    -- 2202E
SELECT ready FROM mq.queues WHERE queue = 'bp_b';                  -- nothing stored by those

-- tags per message in a batch (tags: one per body, NULL for none), as the
-- single tag of send / publish; in one transaction with the keys
SELECT count(*) FROM mq.send_batch('bp_b', ARRAY['t1', 't2', 't3']::text[],
	keys => ARRAY['bp-tag-1', NULL, NULL], tags => ARRAY['TagA', NULL, 'TagB']);
SELECT count(*) FROM mq.publish_batch('bp_fan', ARRAY['x'], ARRAY['{"n": 1}']::jsonb[],
	tags => ARRAY['TagC']);
SELECT convert_from(body, 'UTF8') AS body, key, tag
  FROM mq.consume('bp_b', 10, auto_ack => true) ORDER BY msg_id;
-- on a stream the tags reach the groups' tag filters
SELECT mq.queue_declare('bp_s', type => 'stream');
SELECT mq.group_declare('bp_s', 'bp_g', start => 'earliest', filter => 'TagA || TagC');
SELECT count(*) FROM mq.send_batch('bp_s', ARRAY['s1', 's2', 's3', 's4']::bytea[],
	tags => ARRAY['TagA', 'TagB', NULL, 'TagC']);
SELECT convert_from(body, 'UTF8') AS body, tag
  FROM mq.consume('bp_s', 10, group_name => 'bp_g', auto_ack => true) ORDER BY "offset";
SELECT mq.send_batch('bp_b', ARRAY['a', 'b']::text[], tags => ARRAY['TagA']);     -- 2202E
SELECT mq.send_batch('bp_b', ARRAY['a']::text[], tags => ARRAY[['TagA']]);        -- 2202E
SELECT mq.publish_batch('bp_fan', ARRAY['x'], ARRAY['a']::text[], tags => '{}');  -- 2202E
SELECT mq.publish_batch('bp_fan', ARRAY['x'], ARRAY['a', 'b']::bytea[],
	tags => ARRAY['TagA', 'TagB', 'TagC']);                                       -- 2202E
SELECT ready FROM mq.queues WHERE queue = 'bp_b';                  -- nothing stored by those

-- clean up
SELECT mq.queue_delete(q) FROM unnest(ARRAY['bp_a', 'bp_b', 'bp_c', 'bp_s']) q;
-- the group's dead-letter queue, where it was created
SELECT count(*) >= 0 AS dlq_gone
  FROM (SELECT mq.queue_delete(queue) FROM mq.queues WHERE queue = '%DLQ%bp_g') d;
SELECT mq.exchange_delete('bp_fan');
