-- Message size limit (mq.max_message_size, default 16MB) and large bodies
SHOW mq.max_message_size;
SELECT mq.queue_declare('lim_q');
-- over the limit: a clear error, nothing stored
\set VERBOSITY sqlstate
SELECT mq.send('lim_q', repeat('x', 17 * 1024 * 1024));
SELECT * FROM mq.send_batch('lim_q', ARRAY['small', repeat('y', 17 * 1024 * 1024)]);
\set VERBOSITY default
SELECT mq.send('lim_q', repeat('x', 17 * 1024 * 1024));
SELECT ready FROM mq.queues WHERE queue = 'lim_q';
-- a lower limit applies at once (superuser setting)
SET mq.max_message_size = '1kB';
SELECT mq.send('lim_q', repeat('x', 2000));
RESET mq.max_message_size;
-- large bodies (spanning pages) come back intact
SELECT mq.send('lim_q', repeat('abcdefgh', 1024 * 1024)) IS NOT NULL AS sent;   -- 8 MB
SELECT length(body), md5(body) = md5(convert_to(repeat('abcdefgh', 1024 * 1024), 'UTF8')) AS same
  FROM mq.consume('lim_q', auto_ack => true);
-- read-only transactions (and hot standbys) cannot publish or settle
BEGIN READ ONLY;
SELECT mq.send('lim_q', 'x');
ROLLBACK;
SELECT mq.send('lim_q', 'ro') IS NOT NULL AS sent;
BEGIN READ ONLY;
SELECT count(*) FROM mq.consume('lim_q', auto_ack => true);
ROLLBACK;
SELECT mq.queue_delete('lim_q');
