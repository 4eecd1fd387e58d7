--
-- mqlog: indexes, ANALYZE, bitmap scans
--
CREATE TABLE mqi (id int, k text, body text) USING mqlog;
INSERT INTO mqi SELECT g, 'k' || (g % 100), repeat('b', 50) FROM generate_series(1, 20000) g;
-- an aborted row must not reach the index nor block a unique index
BEGIN;
INSERT INTO mqi VALUES (5, 'aborted', 'aborted');
ROLLBACK;

CREATE UNIQUE INDEX mqi_id ON mqi (id);
CREATE INDEX mqi_k ON mqi (k) WHERE id > 10000;
ANALYZE mqi;
SELECT reltuples FROM pg_class WHERE relname = 'mqi';
SELECT attname, n_distinct, null_frac FROM pg_stats
  WHERE tablename = 'mqi' ORDER BY attname;

SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM mqi WHERE id = 4242;
SELECT id, k FROM mqi WHERE id = 4242;
SELECT count(*) FROM mqi WHERE id BETWEEN 100 AND 199;
EXPLAIN (COSTS OFF) SELECT count(*) FROM mqi WHERE k = 'k7' AND id > 10000;
SELECT count(*) FROM mqi WHERE k = 'k7' AND id > 10000;
-- index-only scans are never used to skip the table (no visibility map)
SELECT id FROM mqi WHERE id = 5;
-- no bitmap scans (NULL bitmap callbacks): never planned
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM mqi WHERE id < 50;
SELECT count(*) FROM mqi WHERE id < 50;
RESET enable_indexscan;
RESET enable_indexonlyscan;
RESET enable_seqscan;

-- unique violation
INSERT INTO mqi VALUES (1, 'dup', 'dup');
-- new rows are found through the index, also in the inserting transaction
BEGIN;
INSERT INTO mqi VALUES (20001, 'new', 'new');
SET LOCAL enable_seqscan = off;
SELECT id, k FROM mqi WHERE id = 20001;
COMMIT;
-- after an aborted insert the key can be inserted again
BEGIN;
INSERT INTO mqi VALUES (20002, 'x', 'x');
ROLLBACK;
INSERT INTO mqi VALUES (20002, 'y', 'y');
SELECT id, k FROM mqi WHERE id = 20002;

-- CREATE INDEX CONCURRENTLY and REINDEX
CREATE INDEX CONCURRENTLY mqi_k_conc ON mqi (k);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'mqi_k_conc'::regclass;
REINDEX INDEX CONCURRENTLY mqi_id;
REINDEX TABLE mqi;
SET enable_seqscan = off;
SELECT count(*) FROM mqi WHERE k = 'k42';
RESET enable_seqscan;
SELECT count(*) FROM mqi WHERE k = 'k42';

-- the index matches the table
CREATE EXTENSION IF NOT EXISTS amcheck;
SELECT bt_index_check('mqi_id', true);
SELECT bt_index_check('mqi_k_conc', true);
SELECT * FROM mq.mqlog_verify('mqi');

DROP TABLE mqi;
