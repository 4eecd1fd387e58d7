-- Where a stream message went: mq.message_position and the partition and
-- offset of mq.message (issue 39: mq-rocketmq's send result carries the
-- offset).  An inline message is known from any session, a message kept in
-- the log (here: with a key) in the transaction that sent it; the offset is
-- taken at the append, before commit, and a rolled back one stays a gap.
SELECT mq.queue_declare('sp', type => 'stream', arguments => '{"partitions": 2}');

-- in the statement that sends
SELECT p.queue, p."partition", p."offset"
  FROM mq.send('sp', 'a', "partition" => 0) AS s(id), mq.message_position(s.id) p;
SELECT mq.send('sp', 'b', "partition" => 0) AS id_b \gset
-- an inline message: from a later transaction too, and in mq.message
SELECT * FROM mq.message_position(:id_b);
SELECT convert_from(body, 'UTF8') AS body, "partition", "offset" FROM mq.message(:id_b);
SELECT "offset", convert_from(body, 'UTF8') AS body FROM mq.read('sp', 0);

-- a keyed message is kept in the log: known in its transaction only
BEGIN;
SELECT mq.send('sp', 'keyed', key => 'sp_k1', "partition" => 0) AS id_k \gset
SELECT :id_k < 1::bigint << 52 AS in_log;
SELECT * FROM mq.message_position(:id_k);
SELECT convert_from(body, 'UTF8') AS body, "partition", "offset" FROM mq.message(:id_k);
COMMIT;
SELECT count(*) AS later FROM mq.message_position(:id_k);
SELECT "partition", "offset" IS NULL AS no_offset FROM mq.message(:id_k);

-- several in one transaction, and a batch: consecutive offsets of its partition
BEGIN;
SELECT p."partition", p."offset"
  FROM mq.send_batch('sp', ARRAY['b1', 'b2', 'b3'], "partition" => 1) AS s(id),
	   mq.message_position(s.id) p ORDER BY 2;
SELECT p."partition", p."offset"
  FROM mq.send('sp', 'c', key => 'sp_k2', "partition" => 1) AS s(id), mq.message_position(s.id) p;
COMMIT;
SELECT "offset", convert_from(body, 'UTF8') AS body FROM mq.read('sp', 1);

-- visible before commit; a rolled back send leaves its offset a gap
BEGIN;
SELECT p."offset" AS rolled_back_offset
  FROM mq.send('sp', 'gone', "partition" => 0) AS s(id), mq.message_position(s.id) p;
ROLLBACK;
SELECT p."offset" AS next_offset
  FROM mq.send('sp', 'after', "partition" => 0) AS s(id), mq.message_position(s.id) p;
SELECT "offset", convert_from(body, 'UTF8') AS body FROM mq.read('sp', 0);

-- a savepoint rolled back takes its sends' positions along
BEGIN;
SAVEPOINT s1;
SELECT mq.send('sp', 'undone', key => 'sp_k3', "partition" => 1) AS id_u \gset
SELECT count(*) AS in_savepoint FROM mq.message_position(:id_u);
ROLLBACK TO SAVEPOINT s1;
SELECT count(*) AS after_rollback_to FROM mq.message_position(:id_u);
COMMIT;

-- routed to two streams: one position each (in its transaction);
-- mq.message shows none then
SELECT mq.queue_declare('sp2', type => 'stream');
SELECT mq.exchange_declare('sp_fan', 'fanout');
SELECT mq.bind('sp', 'sp_fan');
SELECT mq.bind('sp2', 'sp_fan');
BEGIN;
SELECT mq.publish('sp_fan', '', 'both', "partition" => 0) AS id_f \gset
SELECT * FROM mq.message_position(:id_f) ORDER BY 1;
SELECT "partition", "offset" FROM mq.message(:id_f);
COMMIT;

-- none: a delayed message (its offset comes when it is due), a classic
-- queue's message, an id where no message is
SELECT mq.queue_declare('sp_classic');
SELECT count(*) AS delayed FROM mq.send('sp', 'later', delay => '1 hour') AS s(id),
	   mq.message_position(s.id);
SELECT count(*) AS classic FROM mq.send('sp_classic', 'x') AS s(id), mq.message_position(s.id);
SELECT count(*) AS no_message FROM mq.message_position(((:id_b >> 26) << 26) | 400);
SELECT count(*) AS no_message FROM mq.message_position(0);
SELECT * FROM mq.message_position(NULL);

-- privileges: publish or consume on the stream
CREATE ROLE regress_sp_pub;
CREATE ROLE regress_sp_none;
SELECT mq.grant('publish', 'queue', 'sp', 'regress_sp_pub');
SET ROLE regress_sp_pub;
SELECT p."partition", p."offset" >= 0 AS has_offset
  FROM mq.send('sp', 'by pub', "partition" => 1) AS s(id), mq.message_position(s.id) p;
SELECT * FROM mq.message_position(:id_b);
RESET ROLE;
SET ROLE regress_sp_none;
SELECT * FROM mq.message_position(:id_b);
RESET ROLE;

-- mq.message_offset: the scalar form, one offset or NULL (no FunctionScan:
-- mq-rocketmq's SendMessage sends and learns the offset with it)
SELECT mq.message_offset(mq.send('sp', 'scalar', "partition" => 0)) AS scalar_offset;
SELECT mq.message_offset(:id_b) = (SELECT "offset" FROM mq.message_position(:id_b))
         AS same_as_message_position;
BEGIN;
SELECT mq.send('sp', 'keyed2', key => 'sp_k4', "partition" => 1) AS id_k2 \gset
SELECT mq.message_offset(:id_k2) = (SELECT "offset" FROM mq.message_position(:id_k2))
         AS keyed_in_its_transaction;
-- routed to two streams: two positions, so no one offset
SELECT mq.publish('sp_fan', '', 'both again', "partition" => 0) AS id_f2 \gset
SELECT count(*) AS positions, mq.message_offset(:id_f2) IS NULL AS offset_null
  FROM mq.message_position(:id_f2);
COMMIT;
SELECT mq.message_offset(:id_k2) IS NULL AS keyed_later_null;
SELECT mq.message_offset(mq.send('sp', 'later', delay => '1 hour')) IS NULL AS delayed_null;
SELECT mq.message_offset(mq.send('sp_classic', 'x')) IS NULL AS classic_null;
SELECT mq.message_offset(((:id_b >> 26) << 26) | 400) IS NULL AS no_message,
       mq.message_offset(0) IS NULL AS zero, mq.message_offset(NULL) IS NULL AS null_arg;
-- a batch as the gateway sends one, over unnest: consecutive offsets
SELECT u.b, mq.message_offset(mq.send(u.t, u.b::bytea, "partition" => 1)) AS "offset"
  FROM unnest(ARRAY['sp', 'sp', 'sp'], ARRAY['u1', 'u2', 'u3']) AS u(t, b);
SELECT "offset", convert_from(body, 'UTF8') AS body FROM mq.read('sp', 1, 0, 100)
 WHERE convert_from(body, 'UTF8') LIKE 'u_';
-- privileges as mq.message_position's: publish or consume on the stream
SET ROLE regress_sp_pub;
SELECT mq.message_offset(mq.send('sp', 'by pub 2', "partition" => 1)) >= 0 AS pub_sees_offset;
RESET ROLE;
SET ROLE regress_sp_none;
SELECT mq.message_offset(:id_b);
RESET ROLE;

-- a message read back has its publish time, not its offset, as published_at
SELECT count(*) > 0 AND bool_and(published_at > now() - interval '1 day' AND published_at <= now())
         AS published_at_is_the_publish_time
  FROM mq.read('sp', 0, 0, 100);
SELECT mq.queue_delete('sp') > 0 AS deleted;
SELECT mq.queue_delete('sp2');
SELECT mq.queue_delete('sp_classic');
SELECT mq.exchange_delete('sp_fan');
DROP ROLE regress_sp_pub;
DROP ROLE regress_sp_none;
