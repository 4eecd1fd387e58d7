--
-- broker_errors: every bad input raises an error with a proper SQLSTATE,
-- and a failed call stores nothing.  Names start with "be_".
--
\set VERBOSITY sqlstate
SELECT mq.queue_declare('be_q');
SELECT mq.exchange_declare('be_x', 'topic');

-- unknown objects: 42704
SELECT mq.publish('be_nosuch', 'k', 'x'::text);
SELECT mq.send('be_nosuch', 'x'::text);
SELECT * FROM mq.publish_batch('be_nosuch', ARRAY['k'], ARRAY['x']::text[]);
SELECT * FROM mq.send_batch('be_nosuch', ARRAY['x']::text[]);
SELECT * FROM mq.consume('be_nosuch');
SELECT * FROM mq.browse('be_nosuch');
SELECT mq.ack('be_nosuch', ARRAY[1]::bigint[]);
SELECT mq.nack('be_nosuch', ARRAY[1]::bigint[]);
SELECT mq.reject('be_nosuch', 1);
SELECT mq.extend_lease('be_nosuch', ARRAY[1]::bigint[], '1 min');
SELECT mq.queue_purge('be_nosuch');
SELECT mq.queue_delete('be_nosuch');
SELECT mq.exchange_delete('be_nosuch');
SELECT mq.bind('be_nosuch', 'be_x', 'a');
SELECT mq.bind('be_q', 'be_nosuch', 'a');
SELECT mq.unbind('be_q', 'be_nosuch', 'a');
SELECT mq.grant('publish', 'queue', 'be_nosuch', current_user::regrole);
SELECT mq.grant('publish', 'exchange', 'be_nosuch', current_user::regrole);

-- wrong types / bad values: 22023
SELECT mq.exchange_declare('be_y', 'fifo');
SELECT mq.exchange_declare('be_y', NULL);
SELECT mq.queue_declare('be_y', NULL, arguments => '{"x-queue-type": "lifo"}');
SELECT mq.queue_declare('be_y', 'lifo');
SELECT mq.grant('drink', 'queue', 'be_q', current_user::regrole);
SELECT mq.grant('publish', 'table', 'be_q', current_user::regrole);
SELECT mq.bind('be_q', 'be_x', 'a', '[]');
SELECT mq.publish('be_x', 'a', 'x'::text, headers => '[1, 2]');
SELECT mq.publish('be_x', 'a', 'x'::text, headers => '"s"');
SELECT mq.send('be_q', 'x'::text, priority => -1);
SELECT mq.send('be_q', 'x'::text, priority => 256);
SELECT mq.send('be_q', 'x'::text, expiration => '-1 s');
SELECT mq.send('be_q', 'x'::text, durability => 'eventually');
SELECT * FROM mq.send_batch('be_q', ARRAY['x']::text[], durability => 'sometimes');
-- delays: negative, out-of-range levels, more than one of them
SELECT mq.send('be_q', 'x'::text, delay => '-1 s');
SELECT mq.send('be_q', 'x'::text, delay_level => 0);
SELECT mq.send('be_q', 'x'::text, delay_level => 19);
SELECT mq.send('be_q', 'x'::text, delay_level => -3);
SELECT mq.send('be_q', 'x'::text, deliver_at => 'infinity');     -- 22008
SELECT mq.send('be_q', 'x'::text, delay => '1 s', delay_level => 1);
SELECT mq.send('be_q', 'x'::text, delay => '1 s', deliver_at => now() + '1 s');
SELECT * FROM mq.send_batch('be_q', ARRAY['x']::text[], delay => '-1 s');
SELECT * FROM mq.publish_batch('', ARRAY['be_q'], ARRAY['x']::text[], delay => '-5 min');
SELECT mq.nack('be_q', ARRAY[]::bigint[], delay => '-1 s');
-- valid delay levels are accepted (1 and 18), and the message is delayed
SELECT mq.send('be_q', 'lvl1'::text, delay_level => 1) IS NOT NULL AS ok;
SELECT mq.send('be_q', 'lvl18'::text, delay_level => 18) IS NOT NULL AS ok;
SELECT count(*) FROM mq.consume('be_q', 10);   -- both delayed: nothing ready

-- nulls: 22004
SELECT mq.publish(NULL, 'k', 'x'::text);
SELECT mq.publish('be_x', 'k', NULL::text);
SELECT mq.send(NULL, 'x'::text);
SELECT mq.send('be_q', NULL::bytea);
SELECT * FROM mq.publish_batch('be_x', NULL, ARRAY['x']::text[]);
SELECT * FROM mq.publish_batch('be_x', ARRAY['k'], NULL::text[]);
SELECT * FROM mq.publish_batch('be_x', ARRAY[NULL], ARRAY['x']::text[]);
SELECT * FROM mq.send_batch('be_q', NULL::text[]);
SELECT * FROM mq.consume(NULL);
SELECT mq.ack(NULL, ARRAY[1]::bigint[]);
SELECT mq.queue_declare(NULL);
SELECT mq.exchange_declare(NULL);
SELECT mq.queue_delete(NULL);
SELECT mq.queue_purge(NULL);
SELECT mq.bind(NULL, 'be_x');
SELECT mq.bind('be_q', NULL);
-- a NULL routing key is not '' (see broker_bad_inputs for every function)
SELECT mq.publish('be_x', NULL, 'x'::text);

-- routing keys: up to 255 bytes (AMQP shortstr)
SELECT mq.bind('be_q', 'be_x', repeat('a', 255));
SELECT mq.publish('be_x', repeat('a', 255), 'max key'::text) IS NOT NULL AS routed;
SELECT mq.publish('be_x', repeat('a', 256), 'x'::text);
SELECT mq.publish('be_x', repeat('é', 128), 'x'::text);   -- 256 bytes
SELECT * FROM mq.publish_batch('be_x', ARRAY['ok', repeat('b', 300)], ARRAY['1', '2']::text[]);
SELECT mq.bind('be_q', 'be_x', repeat('a', 256));
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('be_q', 10, auto_ack => true);

-- nothing stored by any failed call above
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'be_q';
SELECT count(*) FROM mq.browse('be_q');
SELECT count(*) FROM mq.exchanges WHERE exchange LIKE 'be\_%';

-- clean up
SELECT mq.queue_delete('be_q');
SELECT mq.exchange_delete('be_x');
