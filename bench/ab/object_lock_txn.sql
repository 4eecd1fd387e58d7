BEGIN;
SELECT mq.send('q', 'x');
COMMIT;
BEGIN;
SELECT mq.ack('q', ARRAY(SELECT msg_id FROM mq.consume('q', 1)));
COMMIT;
