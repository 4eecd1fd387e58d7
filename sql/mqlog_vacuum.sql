--
-- mqlog: VACUUM freezes pages and advances relfrozenxid
--
CREATE TABLE mqv (id int, body text) USING mqlog;
INSERT INTO mqv SELECT g, repeat('v', 100) FROM generate_series(1, 5000) g;
BEGIN;
INSERT INTO mqv SELECT -g, 'aborted' FROM generate_series(1, 100) g;
ROLLBACK;
CREATE INDEX mqv_id ON mqv (id);

-- burn transaction ids: one per row, each in its own transaction
CREATE PROCEDURE mqv_burn(n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..n LOOP
    INSERT INTO mqv VALUES (100000 + i, 'burn');
    COMMIT;
  END LOOP;
END $$;
CALL mqv_burn(300);

SELECT age(relfrozenxid) >= 300 AS old_enough FROM pg_class WHERE relname = 'mqv';
SET vacuum_freeze_min_age = 0;
VACUUM mqv;
SELECT age(relfrozenxid) < 10 AS advanced FROM pg_class WHERE relname = 'mqv';
SELECT relfrozenxid <> '0'::xid AS valid FROM pg_class WHERE relname = 'mqv';
SELECT reltuples FROM pg_class WHERE relname = 'mqv';

-- all rows still visible, aborted ones still not
SELECT count(*), sum(id) FROM mqv;
SELECT count(*) FROM mqv WHERE id < 0;
SET enable_seqscan = off;
SELECT count(*) FROM mqv WHERE id < 0;
SELECT id FROM mqv WHERE id = 100300;
RESET enable_seqscan;
SELECT * FROM mq.mqlog_verify('mqv');

-- inserts after freezing go to new pages and stay visible
INSERT INTO mqv VALUES (-1000, 'after freeze');
SELECT count(*) FROM mqv;
VACUUM (FREEZE) mqv;
SELECT count(*) FROM mqv;
SELECT age(relfrozenxid) < 10 AS advanced FROM pg_class WHERE relname = 'mqv';
-- VACUUM ANALYZE works as well
VACUUM (ANALYZE) mqv;
SELECT * FROM mq.mqlog_verify('mqv');

DROP TABLE mqv;
DROP PROCEDURE mqv_burn(int);
