--
-- quorum_standby: quorum queues on a server without synchronous standbys
-- (issue 13, row 5).  mq.quorum_unavailable = error (the default): a
-- publish or ack that needs a quorum fails at once with 53000 and the
-- transaction is not confirmed; classic queues keep working.  wait: the
-- commit is local, warned once per condition server-wide, and counted in
-- mq.replication.  The standbys themselves (row 4, a standby lost during a
-- transaction) are in TAP test 024.  Declaring a queue that needs a quorum
-- here warns (issue 34): every publish and ack on it would fail, and the
-- hint, like the 53000 error's, gives the commands that make a server
-- without replicas commit them locally.  Names start with "qs_".
--
\set VERBOSITY sqlstate
SHOW mq.quorum_unavailable;

-- no standby: mq.replication still has one row, saying quorum is not met
SELECT required_sync_standbys, connected_sync_standbys, quorum_met,
	   application_name IS NULL AS no_standby, sync_state
  FROM mq.replication;

-- a quorum queue, and a stream whose commits need a quorum, warn at
-- declare, again when declared again; other queues do not
\set VERBOSITY default
SELECT mq.queue_declare('qs_q', 'quorum');
SELECT mq.queue_declare('qs_q', 'quorum');
SELECT mq.queue_declare('qs_c', 'classic');
SELECT mq.queue_declare('qs_s', type => 'stream', arguments => '{"durability": "quorum"}');
SELECT mq.queue_declare('qs_s_local', type => 'stream');
\set VERBOSITY sqlstate
SELECT queue, type, quorum_met FROM mq.queues WHERE queue LIKE 'qs\_%' ORDER BY queue;

-- a quorum publish fails, with the same hint; so does a classic one asking
-- for quorum, and a quorum stream's; classic queues work
\set VERBOSITY default
SELECT mq.send('qs_q', 'q1'::text);
\set VERBOSITY sqlstate
SELECT mq.send('qs_c', 'c1'::text, durability => 'quorum');
SELECT mq.send('qs_s', 's1'::text);
SELECT mq.send('qs_c', 'c1'::text) IS NOT NULL AS sent;
SELECT mq.send('qs_c', 'c2'::text, durability => 'local') IS NOT NULL AS sent;
SELECT mq.send('qs_s_local', 's1'::text) IS NOT NULL AS sent;

-- the whole transaction goes: its classic publish too
BEGIN;
SELECT mq.send('qs_c', 'c3'::text) IS NOT NULL AS sent;
SELECT mq.send('qs_q', 'q2'::text);
COMMIT;
SELECT queue, ready FROM mq.queues WHERE queue IN ('qs_q', 'qs_c') ORDER BY queue;

-- 0.1's mq.quorum_requires_standby = on is error whatever the mode: its
-- hint resets it too
SET mq.quorum_unavailable = wait;
SET mq.quorum_requires_standby = on;
\set VERBOSITY default
SELECT mq.send('qs_q', 'q3'::text);
\set VERBOSITY sqlstate
RESET mq.quorum_requires_standby;

-- wait: a local commit.  The warning comes once per server until standbys
-- are configured again (the first one may have been given to an earlier
-- test: silenced here); the next quorum transaction does not warn, and
-- each committed one is counted
SELECT commits_without_quorum AS before FROM mq.replication \gset
SET client_min_messages = error;
SELECT mq.send('qs_q', 'q4'::text) IS NOT NULL AS sent;
RESET client_min_messages;
SELECT without_quorum_since IS NOT NULL AS warned, without_quorum_since <= now() AS since_ok
  FROM mq.replication;
SELECT mq.send('qs_q', 'q5'::text) IS NOT NULL AS sent;
SELECT mq.send('qs_c', 'c4'::text, durability => 'quorum') IS NOT NULL AS sent;
-- several quorum statements in one transaction: one commit
BEGIN;
SELECT mq.send('qs_q', 'q6'::text) IS NOT NULL AS sent;
SELECT mq.send('qs_q', 'q7'::text) IS NOT NULL AS sent;
COMMIT;
-- rolled back: not counted
BEGIN;
SELECT mq.send('qs_q', 'lost'::text) IS NOT NULL AS sent;
ROLLBACK;
SELECT commits_without_quorum - :before AS counted, quorum_met FROM mq.replication;
SHOW synchronous_commit;
-- a quorum publish never lowers what the session asks for (remote_apply)
SET synchronous_commit = remote_apply;
BEGIN;
SELECT mq.send('qs_c', 'c5'::text, durability => 'quorum') IS NOT NULL AS sent;
SHOW synchronous_commit;
COMMIT;
RESET synchronous_commit;

-- acks: a lease alone needs no quorum, nor does giving it back (nack with
-- requeue); settling does (ack, auto_ack), and fails: nothing is settled
RESET mq.quorum_unavailable;
CREATE TEMP TABLE qs_got AS
	SELECT msg_id, convert_from(body, 'UTF8') AS body FROM mq.consume('qs_q', 2);
SELECT body FROM qs_got ORDER BY msg_id;
SELECT mq.ack('qs_q', (SELECT array_agg(msg_id ORDER BY msg_id) FROM qs_got));
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'qs_q';
SELECT mq.nack('qs_q', (SELECT array_agg(msg_id ORDER BY msg_id) FROM qs_got));
SELECT count(*) FROM mq.consume('qs_q', 1, auto_ack => true);
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'qs_q';
-- with wait they commit locally
SET mq.quorum_unavailable = wait;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('qs_q', 1, auto_ack => true);
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'qs_q';
RESET mq.quorum_unavailable;

-- the setting is the superuser's (a user must not lower durability), and
-- takes error or wait; everyone reads mq.replication (standby details as
-- pg_stat_replication shows them to that role); mq.queues shows it the
-- queues it holds a privilege on
CREATE ROLE regress_qs_user;
SELECT mq.grant('consume', 'queue', 'qs_q', 'regress_qs_user');
SET ROLE regress_qs_user;
SET mq.quorum_unavailable = wait;
SELECT quorum_met, required_sync_standbys FROM mq.replication;
SELECT queue, quorum_met FROM mq.queues WHERE queue = 'qs_q';
RESET ROLE;
SET mq.quorum_unavailable = maybe;
DROP ROLE regress_qs_user;

-- the remedy the hint gives (ALTER SYSTEM SET mq.quorum_unavailable =
-- 'wait', here the superuser's SET; wait's own warning was given above):
-- no warning at declare, and a quorum queue's publish, consume and ack
-- commit on this server
SET mq.quorum_unavailable = wait;
\set VERBOSITY default
SELECT mq.queue_declare('qs_lone', 'quorum');
\set VERBOSITY sqlstate
SELECT mq.send('qs_lone', 'l1'::text) IS NOT NULL AS sent;
CREATE TEMP TABLE qs_lone_got AS SELECT msg_id, convert_from(body, 'UTF8') AS body FROM mq.consume('qs_lone', 1);
SELECT body FROM qs_lone_got;
SELECT mq.ack('qs_lone', (SELECT array_agg(msg_id) FROM qs_lone_got));
SELECT queue, ready, unacked FROM mq.queues WHERE queue = 'qs_lone';
RESET mq.quorum_unavailable;

SELECT mq.queue_delete(q) FROM unnest(ARRAY['qs_q', 'qs_c', 'qs_s', 'qs_s_local', 'qs_lone']) q ORDER BY q;
