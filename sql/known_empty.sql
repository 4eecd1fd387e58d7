--
-- known_empty: queues found unused (declared, no state in shared memory,
-- nothing stored) are recorded so in shared memory, and mq.queues then
-- spares their tables (queue_shmem.c, KnownEmpty).  Each case below has a
-- queue found unused by mq.queues (so recorded), then given messages by
-- one of the paths that write a queue's entry log; mq.queues must show
-- them.  A record that outlived the path's append would show zeros.
-- Names start with "ke_".
--
\set VERBOSITY sqlstate
\ir test/regress/wait.sql

-- delayed messages are fired by this database's worker
SELECT wait_until($$SELECT EXISTS (SELECT 1 FROM pg_stat_activity
								 WHERE backend_type = 'queue_ext worker' AND datname = current_database())$$);

-- q's row in the views, until q is recorded as found unused: a look does
-- not record it when a queue state was made or dropped meanwhile (any
-- queue's: the worker loads and deletes some), the next one does
CREATE FUNCTION pg_temp.recorded(q text) RETURNS boolean LANGUAGE sql AS $f$
	SELECT wait_until(format('SELECT bool_and(mq._queue_known_empty(queue)) FROM mq._queue_stats(%L)', q))
$f$;

SELECT mq.queue_declare('ke_direct');
SELECT mq.queue_declare('ke_batch');
SELECT mq.queue_declare('ke_routed');
SELECT mq.queue_declare('ke_dlq');
SELECT mq.queue_declare('ke_src', arguments => '{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "ke_dlq"}');
SELECT mq.queue_declare('ke_delayed');
SELECT mq.queue_declare('ke_half');
SELECT mq.queue_declare('ke_prio', arguments => '{"x-max-priority": 3}');
SELECT mq.exchange_declare('ke_x', 'direct');
SELECT mq.bind('ke_routed', 'ke_x', 'k');

-- none has a state: each is looked at, found unused and recorded; looked
-- at again (from the record), still zeros
-- (the worker may record them too: it looks at each queue in its passes)
SELECT name, mq._queue_has_state(name) AS has_state FROM mq.cat_queue WHERE name LIKE 'ke\_%' ORDER BY 1;
SELECT queue, ready, unacked, delayed, total FROM mq.queues WHERE queue LIKE 'ke\_%' ORDER BY 1;
SELECT name, pg_temp.recorded(name) FROM mq.cat_queue WHERE name LIKE 'ke\_%' ORDER BY 1;
SELECT name, mq._queue_has_state(name) AS has_state, mq._queue_known_empty(name) AS known_empty
  FROM mq.cat_queue WHERE name LIKE 'ke\_%' ORDER BY 1;
SELECT queue, ready, unacked, delayed, total FROM mq.queues WHERE queue LIKE 'ke\_%' ORDER BY 1;

-- published to directly, in a batch, through an exchange, to a priority
-- lane
SELECT mq.send('ke_direct', 'one') IS NOT NULL AS sent;
SELECT count(*) FROM mq.send_batch('ke_batch', ARRAY['a', 'b', 'c']::bytea[]);
SELECT mq.publish('ke_x', 'k', 'routed') IS NOT NULL AS published;
SELECT mq.send('ke_prio', 'p', priority => 2) IS NOT NULL AS sent;
SELECT queue, ready, total FROM mq.queues
 WHERE queue IN ('ke_direct', 'ke_batch', 'ke_routed', 'ke_prio') ORDER BY 1;
SELECT name, mq._queue_known_empty(name) AS known_empty FROM mq.cat_queue
 WHERE name IN ('ke_direct', 'ke_batch', 'ke_routed', 'ke_prio') ORDER BY 1;

-- dead-lettered into a recorded queue (ke_src has a state now, ke_dlq not)
SELECT mq.send('ke_src', 'dead') IS NOT NULL AS sent;
SELECT queue, ready, total FROM mq.queues WHERE queue IN ('ke_src', 'ke_dlq') ORDER BY 1;
SELECT pg_temp.recorded('ke_dlq');
SELECT mq.reject('ke_src', (SELECT msg_id FROM mq.consume('ke_src')), requeue => false);
SELECT mq._queue_known_empty('ke_dlq') AS dlq_known_empty;
SELECT queue, ready, total FROM mq.queues WHERE queue IN ('ke_src', 'ke_dlq') ORDER BY 1;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('ke_dlq', 10, auto_ack => true);

-- a delayed message held by a timer, appended by the worker when due
SELECT mq.send('ke_delayed', 'later', delay => '1 s') IS NOT NULL AS sent;
SELECT wait_until($$SELECT ready = 1 FROM mq.queues WHERE queue = 'ke_delayed'$$);
SELECT queue, ready, delayed, total FROM mq.queues WHERE queue = 'ke_delayed';
SELECT mq._queue_known_empty('ke_delayed') AS known_empty;

-- a half message, committed
CREATE FUNCTION ke_check(half_id bigint, headers jsonb, body bytea) RETURNS text
	LANGUAGE sql AS $$ SELECT 'unknown' $$;
SELECT mq.producer_group_declare('ke_pg', 'ke_check(bigint,jsonb,bytea)', check_after => '1 hour');
SELECT mq.publish_half('', 'ke_half', 'half', producer_group => 'ke_pg') AS half_id \gset
SELECT queue, ready, total FROM mq.queues WHERE queue = 'ke_half';
SELECT mq.end_half(:half_id, 'commit') = :half_id AS committed;
SELECT mq._queue_known_empty('ke_half') AS known_empty;
SELECT queue, ready, total FROM mq.queues WHERE queue = 'ke_half';

-- a queue deleted and declared again under the same name and the same id
-- (the id's sequence set back), its messages imported: shown
SELECT mq.queue_declare('ke_again');
SELECT id AS again_id FROM mq.cat_queue WHERE name = 'ke_again' \gset
SELECT pg_temp.recorded('ke_again');
SELECT mq.queue_delete('ke_again');
SELECT setval('mq.cat_queue_id_seq', :again_id - 1) IS NOT NULL AS set_back;
SELECT mq.queue_declare('ke_again');
SELECT id = :again_id AS same_id FROM mq.cat_queue WHERE name = 'ke_again';
SELECT pg_temp.recorded('ke_again');
SELECT mq._import_message('ke_again', 0, now(), NULL, '', 'ke_again', 'imported'::bytea,
						  '{}', '{}', NULL, NULL, NULL, now()) IS NOT NULL AS imported;
SELECT mq._queue_known_empty('ke_again') AS known_empty;
SELECT queue, ready, total FROM mq.queues WHERE queue = 'ke_again';
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('ke_again', 10, auto_ack => true);
SELECT setval('mq.cat_queue_id_seq', (SELECT max(id) FROM mq.cat_queue)) IS NOT NULL AS restored;

-- a publish that rolls back leaves the queue empty (and loaded)
SELECT mq.queue_declare('ke_rollback');
SELECT pg_temp.recorded('ke_rollback');
BEGIN;
SELECT mq.send('ke_rollback', 'gone') IS NOT NULL AS sent;
ROLLBACK;
SELECT mq._queue_known_empty('ke_rollback') AS known_empty;
SELECT queue, ready, total FROM mq.queues WHERE queue = 'ke_rollback';
SELECT mq._queue_known_empty('ke_rollback') AS known_empty;
SELECT mq.send('ke_rollback', 'kept') IS NOT NULL AS sent;
SELECT queue, ready, total FROM mq.queues WHERE queue = 'ke_rollback';

-- clean up
SELECT mq.queue_delete(q) FROM unnest(ARRAY['ke_direct', 'ke_batch', 'ke_routed', 'ke_dlq',
	'ke_src', 'ke_delayed', 'ke_half', 'ke_prio', 'ke_again', 'ke_rollback']) q;
SELECT mq.exchange_delete('ke_x');
DROP FUNCTION wait_until(text, interval);
