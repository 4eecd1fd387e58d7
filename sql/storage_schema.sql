--
-- storage_schema: what the broker makes at run time, per segment, queue
-- and consumer group (message log segments log_<n> and their indexes,
-- entry logs q<id>_*, settlement logs s<id>_*, group logs g<id>_*, queue
-- anchors a<id>), lives in schema mq_storage; schema mq holds only the API
-- and the fixed catalog CREATE EXTENSION made (issue 37: `\dt mq.*` listed
-- 141 relations after the tutorials).  Names start with "ss_".
--
\set VERBOSITY sqlstate
SET mq.quorum_unavailable = wait;
SET client_min_messages = error;

-- the tutorials' topology: a work queue behind a topic exchange, a
-- priority queue, a quorum queue, a stream of two partitions with a
-- consumer group that has consumed, a delayed message
SELECT mq.exchange_declare('ss_logs', 'topic');
SELECT mq.queue_declare('ss_tasks');
SELECT mq.bind('ss_tasks', 'ss_logs', 'kern.*');
SELECT mq.queue_declare('ss_prio', arguments => '{"x-max-priority": 2}');
SELECT mq.queue_declare('ss_quorum', 'quorum');
SELECT mq.queue_declare('ss_events', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('ss_events', 'ss_g', start => 'earliest');
SELECT mq.publish('ss_logs', 'kern.info', 'hello') IS NOT NULL AS published;
SELECT mq.send('ss_tasks', 'later', delay => '1 hour') IS NOT NULL AS delayed;
SELECT mq.send('ss_prio', 'p', priority => 2) IS NOT NULL AS sent;
SELECT mq.send('ss_quorum', 'q') IS NOT NULL AS sent;
SELECT count(mq.send('ss_events', 'e' || i, partition => i % 2)) AS sent FROM generate_series(1, 4) i;
SELECT mq.ack('ss_events', ARRAY(SELECT msg_id FROM mq.consume('ss_events', 10, group_name => 'ss_g',
	consumer => 'c1')), group_name => 'ss_g') AS acked;
SELECT queue, ready, delayed FROM mq.queues WHERE queue LIKE 'ss\_%' ORDER BY queue;

-- Schema mq: every relation in it is a member of the extension (an index:
-- of a member table), made by CREATE EXTENSION; none is storage
SELECT c.relname, c.relkind FROM pg_class c LEFT JOIN pg_index i ON i.indexrelid = c.oid
 WHERE c.relnamespace = 'mq'::regnamespace
   AND NOT EXISTS (SELECT 1 FROM pg_depend d
					WHERE d.classid = 'pg_class'::regclass AND d.objid = coalesce(i.indrelid, c.oid)
					  AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e')
 ORDER BY 1;
SELECT c.relname, c.relkind FROM pg_class c
 WHERE c.relnamespace = 'mq'::regnamespace
   AND c.relname ~ '^([qsg][0-9]+_[0-9_]+|log_[0-9]+(_key|_dedup)?|a[0-9]+)$'
 ORDER BY 1;
-- ... and so is every type of its own (not a relation's row type, not an
-- array type)
SELECT t.typname FROM pg_type t
 WHERE t.typnamespace = 'mq'::regnamespace AND t.typrelid = 0
   AND NOT EXISTS (SELECT 1 FROM pg_type e WHERE e.typarray = t.oid)
   AND NOT EXISTS (SELECT 1 FROM pg_depend d
					WHERE d.classid = 'pg_type'::regclass AND d.objid = t.oid
					  AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e')
 ORDER BY 1;
SELECT t.typname FROM pg_type t
 WHERE t.typnamespace = 'mq'::regnamespace
   AND t.typname ~ '^_?([qsg][0-9]+_[0-9_]+|log_[0-9]+|a[0-9]+)$'
 ORDER BY 1;

-- Schema mq_storage: a member of the extension, owned by its owner, with
-- schema mq's privileges
SELECT n.nspowner = e.extowner AS owned_by_extension_owner,
	   n.nspacl = (SELECT m.nspacl FROM pg_namespace m WHERE m.nspname = 'mq') AS acl_as_mq,
	   EXISTS (SELECT 1 FROM pg_depend d
				WHERE d.classid = 'pg_namespace'::regclass AND d.objid = n.oid
				  AND d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
				  AND d.deptype = 'e') AS member
  FROM pg_namespace n, pg_extension e
 WHERE n.nspname = 'mq_storage' AND e.extname = 'queue_ext';
-- each queue's logs and anchor are there
SELECT q.name,
	   (SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'mq_storage'::regnamespace
		   AND c.relkind = 'r' AND c.relname ~ ('^q' || q.id || '_[0-9]+_[0-9]+$')) AS entry_logs,
	   (SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'mq_storage'::regnamespace
		   AND c.relkind = 'r' AND c.relname ~ ('^s' || q.id || '_[0-9]+_[0-9]+$')) AS settlement_logs,
	   (SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'mq_storage'::regnamespace
		   AND c.relkind = 'r' AND c.relname ~ ('^g' || q.id || '_[0-9]+_[0-9]+_[0-9]+$')) AS group_logs,
	   to_regtype(format('mq_storage.%I', 'a' || q.id)) IS NOT NULL AS anchor,
	   (SELECT bool_and(l::regclass::text LIKE 'mq\_storage.%') FROM unnest(q.lanes) l) AS lanes_there
  FROM mq.cat_queue q WHERE q.name LIKE 'ss\_%' ORDER BY q.name;
-- every message log segment and its indexes, every stream entry log that
-- carries messages
SELECT bool_and(c.relnamespace = 'mq_storage'::regnamespace) AS segments_there, count(*) > 0 AS some
  FROM mq.cat_segment s JOIN pg_class c ON c.oid = s.relid;
SELECT bool_and(c.relnamespace = 'mq_storage'::regnamespace) AS segment_indexes_there, count(*) > 0 AS some
  FROM mq.cat_segment s JOIN pg_index i ON i.indrelid = s.relid JOIN pg_class c ON c.oid = i.indexrelid;
SELECT bool_and(c.relnamespace = 'mq_storage'::regnamespace) AS inline_logs_there, count(*) > 0 AS some
  FROM mq.cat_inline s JOIN pg_class c ON c.oid = s.relid;
-- owned by the extension owner, granting nothing: the API is the way in
SELECT count(*) AS not_private FROM pg_class c, pg_extension e
 WHERE e.extname = 'queue_ext' AND c.relnamespace = 'mq_storage'::regnamespace
   AND (c.relowner <> e.extowner OR c.relacl IS NOT NULL);

-- a role with consume on a queue consumes through the API as before, and
-- reads no storage directly
CREATE ROLE ss_reader;
SELECT mq.grant('consume', 'queue', 'ss_tasks', 'ss_reader');
SELECT format('mq_storage.%I', 'q' || id || '_0_0') AS ss_entry_log FROM mq.cat_queue WHERE name = 'ss_tasks' \gset
SET ROLE ss_reader;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('ss_tasks', 10, auto_ack => true);
SELECT count(*) FROM :ss_entry_log;
RESET ROLE;

-- deleting a group and the queues takes their storage along
SELECT id AS ss_events_id FROM mq.cat_queue WHERE name = 'ss_events' \gset
SELECT mq.group_delete('ss_events', 'ss_g');
SELECT count(*) AS group_logs FROM pg_class
 WHERE relnamespace = 'mq_storage'::regnamespace AND relname ~ ('^g' || :ss_events_id || '_');
CREATE TABLE ss_ids AS SELECT id FROM mq.cat_queue WHERE name LIKE 'ss\_%';
SELECT count(mq.queue_delete(name)) AS deleted FROM mq.cat_queue WHERE name LIKE 'ss\_%';
SELECT count(*) AS left_over FROM pg_class c, ss_ids q
 WHERE c.relnamespace IN ('mq'::regnamespace, 'mq_storage'::regnamespace)
   AND c.relname ~ ('^([qsg]' || q.id || '_|a' || q.id || '$)');
SELECT mq.exchange_delete('ss_logs');
DROP TABLE ss_ids;
DROP ROLE ss_reader;
