-- Tracing a message's life; stream features that are not built yet
SELECT mq.exchange_declare('tr_dlx', 'fanout');
SELECT mq.queue_declare('tr_dead');
SELECT mq.bind('tr_dead', 'tr_dlx');
SELECT mq.queue_declare('tr_a', arguments => '{"x-dead-letter-exchange": "tr_dlx"}');
SELECT mq.queue_declare('tr_b');
SELECT mq.exchange_declare('tr_fan', 'fanout');
SELECT mq.bind('tr_a', 'tr_fan');
SELECT mq.bind('tr_b', 'tr_fan');
SELECT mq.publish('tr_fan', 'k', 'hello', key => 'tr-key') AS id \gset
SELECT event, queue, detail - 'entry_log' AS detail FROM mq.trace(:id) ORDER BY queue NULLS FIRST, event;
SELECT mq.ack('tr_b', ARRAY(SELECT msg_id FROM mq.consume('tr_b')));
SELECT mq.nack('tr_a', ARRAY(SELECT msg_id FROM mq.consume('tr_a')), requeue => false);
SELECT event, queue FROM mq.trace(:id) ORDER BY queue NULLS FIRST, event;
-- the dead letter is a new message whose trace starts at the dead-letter exchange
SELECT event, queue, detail->>'exchange' AS exchange
  FROM mq.trace((SELECT msg_id FROM mq.browse('tr_dead'))) ORDER BY queue NULLS FIRST, event;
-- in flight: delivered (leased), ready again after a nack; a purge drops it
SELECT mq.send('tr_b', 'second'::text) AS id2 \gset
SELECT count(*) FROM mq.consume('tr_b');
SELECT event, queue, detail->>'delivery_count' AS n, detail->>'state' AS state,
       (detail->>'lease_until')::timestamptz > now() AS leased_ahead
  FROM mq.trace(:id2) WHERE event = 'delivered';
SELECT mq.nack('tr_b', ARRAY[:id2]);
SELECT event, queue, detail->>'delivery_count' AS n, detail->>'state' AS state
  FROM mq.trace(:id2) WHERE event = 'delivered';
SELECT mq.queue_purge('tr_b');
SELECT event, queue FROM mq.trace(:id2) ORDER BY queue NULLS FIRST, event;
-- a nack with a delay settles the delivery and arms a timer
SELECT mq.send('tr_b', 'third'::text) AS id3 \gset
SELECT mq.nack('tr_b', ARRAY(SELECT msg_id FROM mq.consume('tr_b')), delay => '1 hour');
SELECT event, queue FROM mq.trace(:id3) ORDER BY queue NULLS FIRST, event;
SELECT ready, delayed FROM mq.queues WHERE queue = 'tr_b';
SELECT mq.cancel(:id3);
-- an id no message has: 42704, as mq.cancel
SELECT count(*) FROM mq.trace(1);
-- a role without consume on the exchange may not trace
CREATE ROLE regress_mq_tracer;
SET ROLE regress_mq_tracer;
\set VERBOSITY sqlstate
SELECT count(*) FROM mq.trace(:id);
\set VERBOSITY default
RESET ROLE;
DROP ROLE regress_mq_tracer;

-- consumer groups are not implemented: a clear 0A000 (stream queues are,
-- see sql/stream.sql; one without groups refuses consume)
\set VERBOSITY sqlstate
SELECT mq.queue_declare('tr_s', 'stream');
SELECT * FROM mq.consume('tr_s', group_name => 'g1');
SELECT mq.queue_delete('tr_s');
SELECT mq.group_declare('tr_a', 'g1');
SELECT mq.seek('tr_a', 'g1', to_offset => 0);
\set VERBOSITY default
SELECT count(*) FROM mq.consumer_groups;

SELECT mq.queue_delete(q) FROM unnest(ARRAY['tr_a', 'tr_b', 'tr_dead']) q;
SELECT mq.exchange_delete(x) FROM unnest(ARRAY['tr_fan', 'tr_dlx']) x;
