--
-- receipts: settling a delivery by the receipt mq.consume returns with it,
-- from any session, within its lease; deliveries not bound to the session
-- (session_bound => false).  Names start with "rc_".
--
\set VERBOSITY sqlstate
SELECT mq.queue_declare('rc_q');
SELECT mq.queue_declare('rc_other');
CREATE TABLE rc_receipts (name text PRIMARY KEY, msg_id bigint, receipt text,
	at timestamptz DEFAULT clock_timestamp());

\ir test/regress/wait.sql

-- every delivery has a receipt: 48 hex digits, a new one per delivery
SELECT mq.send('rc_q', 'one') AS m1 \gset
INSERT INTO rc_receipts SELECT 'first', msg_id, receipt FROM mq.consume('rc_q');
SELECT msg_id = :m1 AS same, receipt ~ '^[0-9a-f]{48}$' AS shape FROM rc_receipts;
SELECT mq.nack('rc_q', ARRAY[:m1]::bigint[]);
INSERT INTO rc_receipts SELECT 'second', msg_id, receipt FROM mq.consume('rc_q');
SELECT count(DISTINCT receipt) AS receipts, count(DISTINCT msg_id) AS messages FROM rc_receipts;

-- the first delivery's receipt is refused (55000): it would settle the
-- redelivery; the second's acks it
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts WHERE name = 'first';
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts WHERE name = 'second';
-- settled: refused again
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts WHERE name = 'second';
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_q';

-- auto_ack deliveries have nothing to settle: no receipt
SELECT mq.send('rc_q', 'auto') IS NOT NULL AS sent;
SELECT receipt IS NULL AS no_receipt FROM mq.consume('rc_q', auto_ack => true);

-- bad receipts: 22P02 (not a receipt), 22023 (another queue's), 22004
SELECT mq.ack('rc_q', receipts => ARRAY['nonsense']);
SELECT mq.ack('rc_q', receipts => ARRAY[repeat('g', 48)]);
SELECT mq.ack('rc_q', receipts => ARRAY[repeat('0', 48)]);
SELECT mq.send('rc_other', 'x') IS NOT NULL AS sent;
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'other', msg_id, receipt FROM mq.consume('rc_other');
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;
SELECT mq.ack('rc_q', receipts => ARRAY[NULL]::text[]);
-- msg_ids or receipts, exactly one: 22004 (neither), 22023 (both)
SELECT mq.ack('rc_q');
SELECT mq.ack('rc_q', ARRAY[1]::bigint[], receipts => ARRAY['x']);
SELECT mq.nack('rc_q');
SELECT mq.reject('rc_q');
SELECT mq.reject('rc_q', 1, receipt => 'x');
SELECT mq.extend_lease('rc_q', lease => '1 min');
SELECT mq.extend_lease('rc_q', receipts => ARRAY['x'], lease => NULL);
SELECT * FROM mq.consume('rc_q', session_bound => NULL);
-- a group_name on a classic queue: 42809
SELECT mq.ack('rc_other', receipts => ARRAY[receipt], group_name => 'g') FROM rc_receipts;
-- nothing of the failed calls was stored: the message is still leased
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_other';
SELECT mq.ack('rc_other', receipts => ARRAY[receipt]) FROM rc_receipts;

-- nack, reject and extend_lease by receipt
SELECT mq.send('rc_q', 'n') IS NOT NULL AS sent;
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'n', msg_id, receipt FROM mq.consume('rc_q', lease => '2 seconds');
SELECT mq.extend_lease('rc_q', receipts => ARRAY[receipt], lease => '1 hour') FROM rc_receipts;
SELECT (SELECT (detail->>'lease_until')::timestamptz FROM mq.trace(msg_id)
		WHERE event = 'delivered') > now() + interval '50 minutes' AS extended
	FROM rc_receipts;
SELECT mq.nack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;
-- requeued: the receipt no longer names a delivery
SELECT mq.nack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'r', msg_id, receipt FROM mq.consume('rc_q');
SELECT count(*) AS leased FROM mq.consume('rc_q');
SELECT mq.reject('rc_q', receipt => receipt, requeue => false) FROM rc_receipts;
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_q';

-- a receipt of an expired lease is refused, even before anyone took the
-- message again, and even by the session it was delivered to
SELECT mq.send('rc_q', 'e') IS NOT NULL AS sent;
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'e', msg_id, receipt FROM mq.consume('rc_q', lease => '100 milliseconds');
SELECT pg_sleep(0.3);
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;
SELECT mq.extend_lease('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;
-- (by id, the session it was delivered to still may, as before)
SELECT mq.ack('rc_q', ARRAY[msg_id]) FROM rc_receipts;

-- a rolled back ack by receipt leaves the delivery leased, and its receipt valid
SELECT mq.send('rc_q', 'rb') IS NOT NULL AS sent;
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'rb', msg_id, receipt FROM mq.consume('rc_q');
BEGIN;
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;
ROLLBACK;
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_q';
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;

-- one call, several receipts; one that is not valid (here: of another
-- queue) fails the whole call
SELECT count(*) FROM (SELECT mq.send('rc_q', 'm' || i) FROM generate_series(1, 3) i) s;
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'b' || msg_id, msg_id, receipt FROM mq.consume('rc_q', 3);
SELECT mq.ack('rc_q', receipts => array_agg(receipt) || ARRAY[repeat('0', 47) || '1'])
	FROM rc_receipts;
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_q';
SELECT mq.ack('rc_q', receipts => array_agg(receipt ORDER BY msg_id DESC)) FROM rc_receipts;
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_q';

-- session end: a session-bound delivery is ready again at once, one not
-- bound to the session stays leased until its lease runs out
SELECT mq.send('rc_q', 'bound') IS NOT NULL AS sent;
SELECT mq.send('rc_q', 'free') IS NOT NULL AS sent;
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'bound', msg_id, receipt FROM mq.consume('rc_q');
INSERT INTO rc_receipts SELECT 'free', msg_id, receipt
	FROM mq.consume('rc_q', session_bound => false, lease => '1 minute');
\c
\set VERBOSITY sqlstate
-- (a reconnect ends the old session asynchronously: wait until it is gone)
SELECT wait_until($$SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity
								   WHERE datname = current_database() AND pid <> pg_backend_pid()
									 AND backend_type = 'client backend')$$) AS alone;
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_q';
-- the bound one is delivered again; its old receipt is refused
INSERT INTO rc_receipts SELECT 'bound again', msg_id, receipt FROM mq.consume('rc_q', 5);
SELECT count(*) AS delivered_again FROM rc_receipts
	WHERE name = 'bound again' AND msg_id = (SELECT msg_id FROM rc_receipts WHERE name = 'bound');
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts WHERE name = 'bound';
SELECT mq.ack('rc_q', ARRAY[msg_id]) FROM rc_receipts WHERE name = 'bound again';
-- the free one acks by its receipt from this session, not by its id
SELECT mq.ack('rc_q', ARRAY[msg_id]) FROM rc_receipts WHERE name = 'free';
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts WHERE name = 'free';
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_q';

-- not bound, not acked: back after its lease, not before
SELECT mq.send('rc_q', 'lease') IS NOT NULL AS sent;
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'lease', msg_id, receipt
	FROM mq.consume('rc_q', session_bound => false, lease => '4 seconds');
\c
\set VERBOSITY sqlstate
SELECT wait_until($$SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity
								   WHERE datname = current_database() AND pid <> pg_backend_pid()
									 AND backend_type = 'client backend')$$) AS alone;
SELECT count(*) AS before_lease_end FROM mq.consume('rc_q');
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_q';
SELECT pg_sleep(4.2 - extract(epoch FROM clock_timestamp() - at)) FROM rc_receipts;
SELECT redelivered, delivery_count FROM mq.consume('rc_q', lease => '1 hour', session_bound => false);
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;
-- the session it is delivered to may settle it by its id while it lasts
SELECT mq.ack('rc_q', ARRAY[msg_id]) FROM rc_receipts;

-- a consume rolled back returns a not-bound delivery too
SELECT mq.send('rc_q', 'rolled') IS NOT NULL AS sent;
BEGIN;
SELECT count(*) FROM mq.consume('rc_q', session_bound => false);
ROLLBACK;
SELECT ready, unacked FROM mq.queues WHERE queue = 'rc_q';

-- the consume privilege is needed to settle by receipt: 42501
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'priv', msg_id, receipt FROM mq.consume('rc_q');
CREATE ROLE rc_stranger;
GRANT SELECT ON rc_receipts TO rc_stranger;
GRANT USAGE ON SCHEMA mq TO rc_stranger;
SET ROLE rc_stranger;
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;
RESET ROLE;
SELECT mq.grant('consume', 'queue', 'rc_q', 'rc_stranger');
SET ROLE rc_stranger;
SELECT mq.ack('rc_q', receipts => ARRAY[receipt]) FROM rc_receipts;
RESET ROLE;

-- consumer groups: a receipt names the group (and a broadcast consumer)
SELECT mq.queue_declare('rc_s', type => 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('rc_s', 'rc_g');
SELECT mq.group_declare('rc_s', 'rc_b', mode => 'broadcast');
SELECT count(*) FROM (SELECT mq.send('rc_s', 's' || i) FROM generate_series(1, 4) i) s;
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'g' || msg_id, msg_id, receipt
	FROM mq.consume('rc_s', 2, group_name => 'rc_g');
INSERT INTO rc_receipts SELECT 'b' || msg_id, msg_id, receipt
	FROM mq.consume('rc_s', 2, group_name => 'rc_b', consumer => 'c1');
-- the wrong group or consumer: 22023
SELECT mq.ack('rc_s', receipts => array_agg(receipt), group_name => 'rc_b')
	FROM rc_receipts WHERE name LIKE 'g%';
SELECT mq.ack('rc_s', receipts => array_agg(receipt), group_name => 'rc_b', consumer => 'c2')
	FROM rc_receipts WHERE name LIKE 'b%';
-- without group_name: the receipts say which group
SELECT mq.ack('rc_s', receipts => array_agg(receipt ORDER BY name)) FROM rc_receipts;
SELECT group_name, consumer, sum(in_flight) AS in_flight
	FROM mq.consumer_groups WHERE queue = 'rc_s' GROUP BY 1, 2 ORDER BY 1, 2;
-- a nack by receipt in a group retries later (its backoff) or dead-letters
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'g', msg_id, receipt FROM mq.consume('rc_s', 1, group_name => 'rc_g');
SELECT mq.nack('rc_s', receipts => ARRAY[receipt], requeue => false) FROM rc_receipts;
SELECT count(*) AS dead_letters FROM mq.browse('%DLQ%rc_g');
-- reject refuses streams, by receipt as by id: 0A000
SELECT mq.reject('rc_s', receipt => receipt) FROM rc_receipts;
-- a deleted group's receipts: 55000
DELETE FROM rc_receipts;
INSERT INTO rc_receipts SELECT 'g', msg_id, receipt FROM mq.consume('rc_s', 1, group_name => 'rc_g');
SELECT mq.group_delete('rc_s', 'rc_g');
SELECT mq.ack('rc_s', receipts => ARRAY[receipt]) FROM rc_receipts;
-- mq.read has the columns of mq.consume; nothing to settle
SELECT count(*) AS reads, bool_and(receipt IS NULL) AS no_receipts FROM mq.read('rc_s', 0);

SELECT mq.queue_delete('%DLQ%rc_g');
SELECT mq.queue_delete(q) FROM unnest(ARRAY['rc_q', 'rc_other', 'rc_s']) q;
DROP OWNED BY rc_stranger;
DROP ROLE rc_stranger;
DROP TABLE rc_receipts;
DROP FUNCTION wait_until(text, interval);
