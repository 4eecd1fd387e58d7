--
-- workers_half: transactional (half) messages: producer_group_declare and
-- its errors, publish_half, end_half (commit, rollback, idempotent,
-- conflicting), and check-back by the background worker (commit, rollback,
-- unknown until exhausted, errors counted as unknown).
-- Names start with "wh_".  Worker-driven results are polled for with a
-- generous timeout (a new database gets its worker within
-- mq.launcher_naptime); no ids or timestamps are printed.
--
\set VERBOSITY sqlstate

\ir test/regress/wait.sql

-- the check function answers from a table, by body; 'error' raises
CREATE TABLE wh_answer (body text PRIMARY KEY, answer text);
CREATE TABLE wh_calls (body text, half_id bigint, headers jsonb);
CREATE FUNCTION wh_check(half_id bigint, headers jsonb, body bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	a text;
BEGIN
	INSERT INTO wh_calls VALUES (convert_from(body, 'UTF8'), half_id, headers);
	SELECT w.answer INTO a FROM wh_answer w WHERE w.body = convert_from($3, 'UTF8');
	IF a = 'error' THEN
		RAISE EXCEPTION 'check of % failed on purpose', convert_from($3, 'UTF8');
	END IF;
	RETURN coalesce(a, 'unknown');
END $$;
CREATE FUNCTION wh_two_args(half_id bigint, headers jsonb) RETURNS text
	LANGUAGE sql AS $$ SELECT 'commit' $$;
CREATE FUNCTION wh_returns_int(half_id bigint, headers jsonb, body bytea) RETURNS int
	LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION wh_wrong_types(half_id int, headers json, body text) RETURNS text
	LANGUAGE sql AS $$ SELECT 'commit' $$;

-- producer_group_declare: idempotent, different settings = error, bad inputs = 22023
SELECT mq.producer_group_declare('wh_manual', 'wh_check(bigint,jsonb,bytea)', check_after => '1 hour');
SELECT mq.producer_group_declare('wh_manual', 'wh_check(bigint,jsonb,bytea)', check_after => '1 hour');
SELECT mq.producer_group_declare('wh_manual', 'wh_check(bigint,jsonb,bytea)', check_after => '2 hours'); -- 55000
SELECT mq.producer_group_declare('wh_bad', 'wh_two_args(bigint,jsonb)');                      -- 22023
SELECT mq.producer_group_declare('wh_bad', 'wh_returns_int(bigint,jsonb,bytea)');            -- 22023
SELECT mq.producer_group_declare('wh_bad', 'wh_wrong_types(int,json,text)');                 -- 22023
SELECT mq.producer_group_declare('wh_bad', 'wh_check(bigint,jsonb,bytea)', on_exhausted => 'maybe');  -- 22023
SELECT mq.producer_group_declare('wh_bad', 'wh_check(bigint,jsonb,bytea)', on_exhausted => NULL);     -- 22004
SELECT mq.producer_group_declare('wh_bad', 'wh_check(bigint,jsonb,bytea)', max_checks => 0);          -- 22023
SELECT mq.producer_group_declare('wh_bad', 'wh_check(bigint,jsonb,bytea)', max_checks => -1);         -- 22023
SELECT mq.producer_group_declare('wh_bad', 'wh_check(bigint,jsonb,bytea)', check_interval => '0 s');  -- 22023
SELECT mq.producer_group_declare('wh_bad', 'wh_check(bigint,jsonb,bytea)', check_after => '-1 s');    -- 22023
SELECT mq.producer_group_declare(NULL, 'wh_check(bigint,jsonb,bytea)');                       -- 22004
SELECT mq.producer_group_declare('wh_bad', NULL);                                             -- 22004
SELECT mq.producer_group_declare('wh_bad', 'wh_nosuch(bigint,jsonb,bytea)');                  -- 42883
\set VERBOSITY default
SELECT mq.producer_group_declare('wh_bad', 'wh_returns_int(bigint,jsonb,bytea)');
\set VERBOSITY sqlstate

-- publish_half: unknown group 42704, unknown exchange 42704, nulls 22004
SELECT mq.publish_half('', 'wh_q', 'x', producer_group => 'wh_nosuch');       -- 42704
SELECT mq.publish_half('wh_nosuch_x', 'wh_q', 'x', producer_group => 'wh_manual'); -- 42704
SELECT mq.publish_half('', 'wh_q', 'x', producer_group => NULL);              -- 22004
SELECT count(*) FROM mq.half_messages;

SELECT mq.queue_declare('wh_q');
CREATE TEMP TABLE wh_ids (name text PRIMARY KEY, id bigint);

-- commit: invisible until decided, then delivered once; same decision again is
-- a no-op, the other decision an error
INSERT INTO wh_ids SELECT 'm1', mq.publish_half('', 'wh_q', 'm1', producer_group => 'wh_manual',
	headers => '{"h": 1}', key => 'k1');
SELECT producer_group, exchange, routing_key, state, checks, last_outcome, decided_by
  FROM mq.half_messages WHERE half_id = (SELECT id FROM wh_ids WHERE name = 'm1');
SELECT ready, unacked, delayed, total FROM mq.queues WHERE queue = 'wh_q';
SELECT count(*) FROM mq.consume('wh_q');
SELECT count(*) FROM mq.browse('wh_q');
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm1'), 'commit') = (SELECT id FROM wh_ids WHERE name = 'm1') AS returns_id;
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm1'), 'commit') = (SELECT id FROM wh_ids WHERE name = 'm1') AS again_noop;
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm1'), 'rollback');     -- 55000
SELECT state, decided_by, decided_at IS NOT NULL AS decided FROM mq.half_messages
 WHERE half_id = (SELECT id FROM wh_ids WHERE name = 'm1');
SELECT convert_from(body, 'UTF8') AS body, headers, routing_key, key, redelivered, delivery_count
  FROM mq.consume('wh_q', 10, auto_ack => true);
SELECT count(*) FROM mq.consume('wh_q', 10);

-- rollback: never delivered; same again no-op (NULL), commit afterwards 55000
INSERT INTO wh_ids SELECT 'm2', mq.publish_half('', 'wh_q', 'm2', producer_group => 'wh_manual');
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm2'), 'rollback');
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm2'), 'rollback');
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm2'), 'commit');       -- 55000
SELECT state, decided_by FROM mq.half_messages WHERE half_id = (SELECT id FROM wh_ids WHERE name = 'm2');
SELECT count(*) FROM mq.consume('wh_q', 10);

-- end_half errors
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm2'), 'maybe');        -- 22023
SELECT mq.end_half(1, 'commit');                                               -- 42704
SELECT mq.end_half(NULL, 'commit');                                            -- 22004
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm2'), NULL);           -- 22004

-- the decision is transactional: a rolled-back end_half leaves it pending
INSERT INTO wh_ids SELECT 'm3', mq.publish_half('', 'wh_q', 'm3', producer_group => 'wh_manual');
BEGIN;
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm3'), 'commit') IS NOT NULL AS committed;
ROLLBACK;
SELECT state FROM mq.half_messages WHERE half_id = (SELECT id FROM wh_ids WHERE name = 'm3');
SELECT count(*) FROM mq.consume('wh_q', 10);
-- and a publish_half that rolls back leaves nothing
BEGIN;
SELECT mq.publish_half('', 'wh_q', 'gone', producer_group => 'wh_manual') IS NOT NULL AS published;
ROLLBACK;
SELECT count(*) FROM mq.half_messages WHERE producer_group = 'wh_manual';

-- routed at decision time: a queue bound after publish_half gets it too
SELECT mq.exchange_declare('wh_x', 'fanout');
SELECT mq.queue_declare('wh_early');
SELECT mq.bind('wh_early', 'wh_x');
INSERT INTO wh_ids SELECT 'm4', mq.publish_half('wh_x', '', 'm4', producer_group => 'wh_manual');
SELECT mq.queue_declare('wh_late');
SELECT mq.bind('wh_late', 'wh_x');
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm4'), 'commit') IS NOT NULL AS committed;
SELECT convert_from(body, 'UTF8') AS body, exchange FROM mq.consume('wh_late', 10, auto_ack => true);
SELECT convert_from(body, 'UTF8') AS body, exchange FROM mq.consume('wh_early', 10, auto_ack => true);
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'm3'), 'rollback');

-- a half message is never lost silently.  publish_half refuses one that
-- routes nowhere now, as mq.send refuses a missing queue (42704) and a
-- mandatory publish an unroutable message (P0002); nothing is stored
SELECT mq.publish_half('', 'wh_nosuch_q', 'x', producer_group => 'wh_manual');  -- 42704
SELECT mq.send('wh_nosuch_q', 'x');                                            -- 42704
SELECT mq.exchange_declare('wh_t', 'topic');
SELECT mq.publish_half('wh_t', 'a.b', 'x', producer_group => 'wh_manual');      -- P0002
SELECT mq.publish('wh_t', 'a.b', 'x', mandatory => true);                      -- P0002
SELECT count(*) FROM mq.half_messages WHERE routing_key IN ('wh_nosuch_q', 'a.b');
-- a producer's commit of one that routes nowhere by then fails and changes
-- nothing: the producer declares the destination and commits again, or
-- rolls back
SELECT mq.queue_declare('wh_gone');
SELECT mq.bind('wh_gone', 'wh_t', 'a.*');
INSERT INTO wh_ids SELECT 'u1', mq.publish_half('', 'wh_gone', 'u1', producer_group => 'wh_manual');
INSERT INTO wh_ids SELECT 'u2', mq.publish_half('wh_t', 'a.b', 'u2', producer_group => 'wh_manual');
INSERT INTO wh_ids SELECT 'u3', mq.publish_half('wh_t', 'a.c', 'u3', producer_group => 'wh_manual');
SELECT mq.queue_delete('wh_gone') >= 0 AS deleted;
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'u1'), 'commit');       -- 42704
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'u2'), 'commit');       -- P0002
SELECT i.name, h.state, h.decided_by FROM mq.half_messages h JOIN wh_ids i ON i.id = h.half_id
 WHERE i.name LIKE 'u_' ORDER BY 1;
SELECT mq.queue_declare('wh_gone');
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'u1'), 'commit') IS NOT NULL AS committed;
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wh_gone', 10, auto_ack => true);
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'u2'), 'rollback');
-- its exchange deleted: 42704, still pending
SELECT mq.exchange_delete('wh_t');
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'u3'), 'commit');       -- 42704
SELECT i.name, h.state, h.decided_by FROM mq.half_messages h JOIN wh_ids i ON i.id = h.half_id
 WHERE i.name LIKE 'u_' ORDER BY 1;
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'u3'), 'rollback');

-- check-back: the producer never decides; the worker asks wh_check
SELECT mq.producer_group_declare('wh_auto', 'wh_check(bigint,jsonb,bytea)',
	check_after => '0 s', check_interval => '1 s', max_checks => 3, on_exhausted => 'rollback');
SELECT mq.producer_group_declare('wh_auto_c', 'wh_check(bigint,jsonb,bytea)',
	check_after => '0 s', check_interval => '1 s', max_checks => 2, on_exhausted => 'commit');
INSERT INTO wh_answer VALUES ('c_commit', 'commit'), ('c_rollback', 'rollback'),
	('c_error', 'error'), ('c_bogus', 'yes please'), ('c_lost', 'commit');
-- committed by the check function (c_lost) or by on_exhausted (c_lost_x)
-- when its queue is gone: recorded as unroutable, not committed
SELECT mq.queue_declare('wh_lost');
BEGIN;
INSERT INTO wh_ids SELECT 'c_lost', mq.publish_half('', 'wh_lost', 'c_lost', producer_group => 'wh_auto');
INSERT INTO wh_ids SELECT 'c_lost_x', mq.publish_half('', 'wh_lost', 'c_lost_x', producer_group => 'wh_auto_c');
SELECT mq.queue_delete('wh_lost') >= 0 AS deleted;
COMMIT;
INSERT INTO wh_ids SELECT 'c_commit', mq.publish_half('', 'wh_q', 'c_commit', producer_group => 'wh_auto',
	headers => '{"order": 42}');
INSERT INTO wh_ids SELECT 'c_rollback', mq.publish_half('', 'wh_q', 'c_rollback', producer_group => 'wh_auto');
INSERT INTO wh_ids SELECT 'c_unknown', mq.publish_half('', 'wh_q', 'c_unknown', producer_group => 'wh_auto');
INSERT INTO wh_ids SELECT 'c_error', mq.publish_half('', 'wh_q', 'c_error', producer_group => 'wh_auto_c');
INSERT INTO wh_ids SELECT 'c_bogus', mq.publish_half('', 'wh_q', 'c_bogus', producer_group => 'wh_auto_c');
-- a producer that decides before the check is never checked
INSERT INTO wh_ids SELECT 'c_early', mq.publish_half('', 'wh_q', 'c_early', producer_group => 'wh_auto');
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'c_early'), 'commit') IS NOT NULL AS committed;

SELECT wait_until($$SELECT count(*) = 0 FROM mq.half_messages h JOIN wh_ids i ON i.id = h.half_id
                    WHERE i.name LIKE 'c\_%' AND h.state = 'pending'$$) AS all_decided;
SELECT i.name, h.producer_group, h.state, h.checks, h.last_outcome, h.decided_by
  FROM mq.half_messages h JOIN wh_ids i ON i.id = h.half_id
 WHERE i.name LIKE 'c\_%' ORDER BY i.name;
-- the check function saw the half id, headers and body
SELECT c.body, c.half_id = i.id AS right_id, c.headers, count(*) AS calls
  FROM wh_calls c JOIN wh_ids i ON i.name = c.body
 GROUP BY 1, 2, 3 ORDER BY 1;
-- committed ones are delivered exactly once; rolled-back ones never
SELECT convert_from(body, 'UTF8') AS body, headers
  FROM mq.consume('wh_q', 10, auto_ack => true) ORDER BY 1;
SELECT count(*) FROM mq.consume('wh_q', 10);
-- the producer's late decision agrees (no-op) or conflicts (55000)
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'c_commit'), 'commit') IS NOT NULL AS noop;
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'c_unknown'), 'commit');  -- 55000
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'c_error'), 'rollback');  -- 55000
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'c_lost'), 'commit');     -- P0002
SELECT mq.end_half((SELECT id FROM wh_ids WHERE name = 'c_lost_x'), 'rollback'); -- 55000
SELECT event, detail FROM mq.trace((SELECT id FROM wh_ids WHERE name = 'c_lost')) WHERE event LIKE 'half%';
-- no more checks after the decision
SELECT count(*) AS calls_before FROM wh_calls \gset
SELECT pg_sleep(2.5);
SELECT count(*) = :calls_before AS no_more_checks FROM wh_calls;

-- why a check counted as unknown is kept where SQL shows it: last_error
-- (the error's message, or the answer that is none of commit, rollback
-- and unknown; at most 1000 bytes), NULL after a decision or an answer of
-- unknown
SELECT i.name, h.last_outcome, h.last_error
  FROM mq.half_messages h JOIN wh_ids i ON i.id = h.half_id
 WHERE i.name IN ('c_bogus', 'c_commit', 'c_error', 'c_unknown') ORDER BY 1;
INSERT INTO wh_answer VALUES ('l_long', repeat('é', 3000));
INSERT INTO wh_ids SELECT 'l_long', mq.publish_half('', 'wh_q', 'l_long', producer_group => 'wh_auto');
SELECT wait_until($$SELECT h.state <> 'pending' FROM mq.half_messages h JOIN wh_ids i ON i.id = h.half_id
                    WHERE i.name = 'l_long'$$) AS decided;
SELECT h.state, h.last_outcome, octet_length(h.last_error) <= 1000 AS bounded,
	   left(h.last_error, 27) AS starts, right(h.last_error, 4) AS ends
  FROM mq.half_messages h JOIN wh_ids i ON i.id = h.half_id WHERE i.name = 'l_long';

-- clean up
SELECT mq.queue_delete('wh_q') >= 0 AS deleted, mq.queue_delete('wh_late') >= 0 AS deleted;
SELECT mq.queue_delete('wh_early') >= 0 AS deleted, mq.queue_delete('wh_gone') >= 0 AS deleted;
SELECT mq.exchange_delete('wh_x');
DROP FUNCTION wait_until(text, interval);
