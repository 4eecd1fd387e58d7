--
-- dump_restore: the error paths of mq.export() and mq.import() and of
-- their internal steps (queue_ext--0.2.sql, src/dump_sql.c).  The round
-- trip itself (pg_dump, pg_restore, pg_dumpall into fresh servers) is TAP
-- test 029_dump_restore.pl.
--
\set VERBOSITY sqlstate
SET client_min_messages = warning;
SELECT mq.queue_declare('dr_q', arguments => '{"x-max-priority": 2}');
SELECT mq.queue_declare('dr_s', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('dr_s', 'dr_gc', start => 'earliest');
SELECT mq.group_declare('dr_s', 'dr_gb', mode => 'broadcast', start => 'earliest');

-- nothing exported yet: 55000
SELECT mq.import();
-- a READ COMMITTED transaction has no single snapshot: 25000
SELECT mq.export();
-- not for ordinary roles: 42501
CREATE ROLE dr_user;
SET ROLE dr_user;
SELECT mq.export();
SELECT mq.import();
SELECT mq._import_message('dr_q', 0, now(), NULL, '', 'dr_q', '\x00', NULL, NULL, NULL, NULL, NULL, now());
SELECT mq._import_position('dr_s', 'dr_gc', NULL, 0, 0, NULL);
RESET ROLE;
DROP ROLE dr_user;

-- an export, then an import into this broker, which is not empty: 55000
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT mq.export() >= 0 AS exported;
COMMIT;
SELECT count(*) > 0 AS has_topology FROM mq.export_topology WHERE args->>'name' = 'dr_q';
SELECT mq.import();
TRUNCATE mq.export_topology, mq.export_message, mq.export_position;

-- mq._import_message: NULLs 22004, an unknown queue 42704, a lane out of range 22023
SELECT mq._import_message(NULL, 0, now(), NULL, '', 'dr_q', '\x00', NULL, NULL, NULL, NULL, NULL, now());
SELECT mq._import_message('dr_q', NULL, now(), NULL, '', 'dr_q', '\x00', NULL, NULL, NULL, NULL, NULL, now());
SELECT mq._import_message('dr_q', 0, NULL, NULL, '', 'dr_q', '\x00', NULL, NULL, NULL, NULL, NULL, now());
SELECT mq._import_message('dr_q', 0, now(), NULL, NULL, 'dr_q', '\x00', NULL, NULL, NULL, NULL, NULL, now());
SELECT mq._import_message('dr_q', 0, now(), NULL, '', 'dr_q', NULL, NULL, NULL, NULL, NULL, NULL, now());
SELECT mq._import_message('dr_q', 0, now(), NULL, '', 'dr_q', '\x00', NULL, NULL, NULL, NULL, NULL, NULL);
SELECT mq._import_message('dr_nope', 0, now(), NULL, '', 'dr_q', '\x00', NULL, NULL, NULL, NULL, NULL, now());
SELECT mq._import_message('dr_q', 3, now(), NULL, '', 'dr_q', '\x00', NULL, NULL, NULL, NULL, NULL, now());
SELECT mq._import_message('dr_q', -1, now(), NULL, '', 'dr_q', '\x00', NULL, NULL, NULL, NULL, NULL, now());
-- what it does: lane 2 (priority 2) now, lane 0 delayed to a time
SELECT mq._import_message('dr_q', 2, now(), NULL, 'ex', 'rk', 'p2', '{"h": 1}', NULL, 'k', NULL, NULL,
						  '2000-01-01 00:00:00+00') > 0 AS imported;
SELECT mq._import_message('dr_q', 0, now() + interval '1 hour', NULL, 'ex', 'rk', 'later', NULL,
						  NULL, NULL, NULL, NULL, now()) > 0 AS imported;
SELECT ready, delayed FROM mq.queues WHERE queue = 'dr_q';
SELECT convert_from(body, 'UTF8') AS body, exchange, routing_key, headers, key, published_at
  FROM mq.consume('dr_q', 10, auto_ack => true);

-- mq._import_position: NULLs 22004, unknown stream or group 42704, a
-- partition out of range 22023, a broadcast group needs its consumer
-- (22023), bad arrays 22004 / 2202E, a classic queue 42809
SELECT mq._import_position(NULL, 'dr_gc', NULL, 0, 0, NULL);
SELECT mq._import_position('dr_s', NULL, NULL, 0, 0, NULL);
SELECT mq._import_position('dr_s', 'dr_gc', NULL, NULL, 0, NULL);
SELECT mq._import_position('dr_s', 'dr_gc', NULL, 0, NULL, NULL);
SELECT mq._import_position('dr_nope', 'dr_gc', NULL, 0, 0, NULL);
SELECT mq._import_position('dr_s', 'dr_nope', NULL, 0, 0, NULL);
SELECT mq._import_position('dr_s', 'dr_gc', NULL, 2, 0, NULL);
SELECT mq._import_position('dr_s', 'dr_gb', NULL, 0, 0, NULL);
SELECT mq._import_position('dr_s', 'dr_gc', NULL, 0, 0, '{1,NULL}');
SELECT mq._import_position('dr_s', 'dr_gc', NULL, 0, 0, '{{1},{2}}');
SELECT mq._import_position('dr_q', 'dr_gc', NULL, 0, 0, NULL);
-- what it does: offsets 0, 2 and 3 of partition 0 settled, the group
-- goes on at 1 and 4; a broadcast consumer made at offset 2
SELECT count(*) FROM (SELECT mq.send('dr_s', 'm' || i, "partition" => 0)
						FROM generate_series(0, 5) i) x;
SELECT mq._import_position('dr_s', 'dr_gc', NULL, 0, 1, '{2,3,9}');
SELECT mq._import_position('dr_s', 'dr_gb', 'c1', 0, 2, NULL);
SELECT "partition", consumer, committed_offset FROM mq.consumer_groups
 WHERE queue = 'dr_s' ORDER BY group_name, consumer, "partition";
SELECT convert_from(body, 'UTF8') AS body, "offset"
  FROM mq.consume('dr_s', 10, group_name => 'dr_gc', auto_ack => true) ORDER BY "offset";
SELECT convert_from(body, 'UTF8') AS body, "offset"
  FROM mq.consume('dr_s', 10, group_name => 'dr_gb', consumer => 'c1', auto_ack => true) ORDER BY "offset";

-- an export_topology row of an unknown kind: 22000
INSERT INTO mq.export_topology VALUES (1, 'bogus', '{}');
DO $$ BEGIN
	-- the broker must look empty for import to read the rows: this
	-- statement deletes every queue and exchange, and its error undoes that
	PERFORM mq.queue_delete(queue) FROM mq.queues;
	PERFORM mq.exchange_delete(exchange) FROM mq.exchanges WHERE NOT predeclared;
	DELETE FROM mq.cat_producer_group;
	PERFORM mq.import();
END $$;
TRUNCATE mq.export_topology;

SELECT mq.queue_delete('dr_q');
SELECT mq.queue_delete('dr_s');
-- the groups dead-lettered nothing: they have no dead-letter queues
SELECT count(*) FROM mq.cat_queue WHERE name LIKE '\%DLQ\%dr\_g_';
\set VERBOSITY default
