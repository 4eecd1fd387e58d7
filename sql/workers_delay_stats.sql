--
-- workers_delay_stats: mq.queues.delayed counts pending delayed messages
-- (and ready does not count them) as soon as they are published, without
-- any consumer scanning the queue.  Names start with "wds_".
--
\set VERBOSITY sqlstate
-- mq.queues.delayed counts pending delayed messages
SELECT mq.queue_declare('wds_q');
SELECT count(mq.send('wds_q', 'later' || i, delay => '1 hour')) FROM generate_series(1, 3) i;
SELECT mq.send('wds_q', 'soon', delay => '1 s') IS NOT NULL AS sent;
SELECT mq.send('wds_q', 'now') IS NOT NULL AS sent;
SELECT queue, ready, unacked, delayed, total FROM mq.queues WHERE queue = 'wds_q';
SELECT pg_sleep(2.5);
SELECT queue, ready, unacked, delayed, total FROM mq.queues WHERE queue = 'wds_q';
SELECT convert_from(body, 'UTF8') AS body FROM mq.consume('wds_q', 10, auto_ack => true) ORDER BY 1;
SELECT queue, ready, unacked, delayed, total FROM mq.queues WHERE queue = 'wds_q';

SELECT mq.queue_delete('wds_q') >= 0 AS deleted;
