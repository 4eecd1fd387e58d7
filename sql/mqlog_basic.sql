--
-- mqlog table access method: basic DML, scans and DDL
--
CREATE TABLE mql (id int, body text) USING mqlog;

-- single-row, multi-row, COPY
INSERT INTO mql VALUES (1, 'one');
INSERT INTO mql VALUES (2, 'two'), (3, 'three'), (4, NULL);
COPY mql FROM STDIN;
5	five
6	six
7	\N
\.
SELECT * FROM mql ORDER BY id;
SELECT ctid, id FROM mql ORDER BY ctid;

-- INSERT ... SELECT from itself does not see its own rows
INSERT INTO mql SELECT id + 100, body FROM mql;
SELECT count(*), sum(id) FROM mql;

-- bigger multi-insert across many pages
INSERT INTO mql SELECT g, repeat('x', 200) FROM generate_series(1000, 4999) g;
SELECT count(*), sum(id), count(DISTINCT (ctid::text::point)[0]) > 100 AS many_pages FROM mql;

-- own rows are visible to later commands, rolled-back ones never
BEGIN;
INSERT INTO mql VALUES (-1, 'in xact');
SELECT count(*) FROM mql WHERE id = -1;
SAVEPOINT s1;
INSERT INTO mql VALUES (-2, 'rolled back savepoint');
SELECT count(*) FROM mql WHERE id = -2;
ROLLBACK TO s1;
SELECT count(*) FROM mql WHERE id = -2;
SAVEPOINT s2;
INSERT INTO mql VALUES (-3, 'kept savepoint');
RELEASE s2;
COMMIT;
BEGIN;
INSERT INTO mql VALUES (-4, 'aborted');
ROLLBACK;
SELECT id, body FROM mql WHERE id < 0 ORDER BY id;

-- a volatile function sees rows of earlier commands only
CREATE FUNCTION mql_count() RETURNS bigint LANGUAGE sql VOLATILE
AS 'SELECT count(*) FROM mql';
BEGIN;
SELECT mql_count() AS before;
INSERT INTO mql SELECT -100, mql_count()::text;
SELECT body FROM mql WHERE id = -100;
ROLLBACK;

-- SCROLL cursor, forward and backward
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id FROM mql WHERE id BETWEEN 1 AND 7;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
FETCH LAST FROM c;
FETCH BACKWARD 3 FROM c;
FETCH ABSOLUTE 1 FROM c;
FETCH PRIOR FROM c;
FETCH NEXT FROM c;
CLOSE c;
COMMIT;

-- TID scan and system columns
SELECT id, body FROM mql WHERE ctid = '(0,1)';
SELECT count(*) FROM mql WHERE xmin = xmin AND cmin = cmin;

-- parallel sequential scan
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT count(*), sum(id) FROM mql;
SELECT count(*), sum(id) FROM mql;
SET force_parallel_mode = regress;
SELECT count(*), sum(id) FROM mql WHERE body IS NOT NULL;
RESET force_parallel_mode;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- size functions and \d+
SELECT pg_relation_size('mql') > 0 AS has_size,
       pg_relation_size('mql') % 8192 = 0 AS whole_pages,
       pg_table_size('mql') >= pg_relation_size('mql') AS table_size;
SELECT reltoastrelid = 0 AS no_toast_table FROM pg_class WHERE relname = 'mql';
\d+ mql

-- verification of a healthy table
SELECT * FROM mq.mqlog_verify('mql');

-- TRUNCATE, also in the creating transaction
TRUNCATE mql;
SELECT count(*) FROM mql;
INSERT INTO mql VALUES (1, 'after truncate');
SELECT * FROM mql;
BEGIN;
CREATE TABLE mql_tx (a int) USING mqlog;
INSERT INTO mql_tx SELECT generate_series(1, 10);
TRUNCATE mql_tx;
INSERT INTO mql_tx VALUES (42);
SELECT * FROM mql_tx;
COMMIT;
SELECT * FROM mql_tx;

-- temporary and unlogged tables
CREATE TEMP TABLE mql_temp (a int, b text) USING mqlog;
INSERT INTO mql_temp SELECT g, 'temp' FROM generate_series(1, 2000) g;
SELECT count(*), sum(a) FROM mql_temp;
CREATE TEMP TABLE mql_temp2 (a int) USING mqlog ON COMMIT DELETE ROWS;
BEGIN;
INSERT INTO mql_temp2 VALUES (1);
SELECT count(*) FROM mql_temp2;
COMMIT;
SELECT count(*) FROM mql_temp2;
CREATE UNLOGGED TABLE mql_unlogged (a int) USING mqlog;
INSERT INTO mql_unlogged SELECT generate_series(1, 1000);
SELECT count(*), sum(a) FROM mql_unlogged;
SELECT relpersistence FROM pg_class WHERE relname = 'mql_unlogged';

-- CREATE TABLE AS and ALTER TABLE SET ACCESS METHOD both ways
CREATE TABLE mql_heap AS SELECT g AS a, 'h' || g AS b FROM generate_series(1, 100) g;
ALTER TABLE mql_heap SET ACCESS METHOD mqlog;
SELECT count(*), sum(a) FROM mql_heap;
ALTER TABLE mql_heap SET ACCESS METHOD heap;
SELECT count(*), sum(a) FROM mql_heap;
CREATE TABLE mql_ctas USING mqlog AS SELECT * FROM mql_heap;
SELECT count(*), sum(a) FROM mql_ctas;

-- trailing NULL columns are not stored (rows carry fewer attributes and
-- often no null bitmap) and read back as NULL, whichever insert path
CREATE TABLE mql_trail (a int8, b text, c text, d int) USING mqlog;
INSERT INTO mql_trail VALUES (1, 'x', NULL, NULL);
INSERT INTO mql_trail VALUES (2, NULL, 'y', NULL), (3, 'z', 'w', 4), (4, NULL, NULL, NULL);
COPY mql_trail FROM stdin;
5	v	\N	\N
6	\N	\N	6
\.
SELECT * FROM mql_trail ORDER BY a;
SELECT a FROM mql_trail WHERE c IS NULL AND d IS NULL ORDER BY a;
SELECT lp, lp_len, cmin, natts, nulls, data_len
  FROM mq.mqlog_page_items('mql_trail', 0) ORDER BY lp;
-- a row stores its cmin only when it is not the transaction's first command
CREATE TABLE mql_cid (a int8) USING mqlog;
BEGIN;
INSERT INTO mql_cid VALUES (1);
INSERT INTO mql_cid VALUES (2);
SELECT a FROM mql_cid ORDER BY a;
COMMIT;
SELECT lp, lp_len, cmin, natts, data_len FROM mq.mqlog_page_items('mql_cid', 0) ORDER BY lp;
SELECT * FROM mq.mqlog_page_items('mql_cid', 1);
SELECT * FROM mq.mqlog_page_items('pg_class', 0);
DROP TABLE mql_cid;
-- a column added with a default reads as the default in older rows, but an
-- explicit NULL in it stays NULL (such a NULL is stored, not trimmed)
ALTER TABLE mql_trail ADD COLUMN e text DEFAULT 'dflt';
INSERT INTO mql_trail VALUES (7, 'u', NULL, NULL, NULL);
INSERT INTO mql_trail (a, b) VALUES (8, 't');
SELECT a, d, e FROM mql_trail ORDER BY a;
SELECT * FROM mq.mqlog_verify('mql_trail');

DROP TABLE mql, mql_tx, mql_temp, mql_temp2, mql_unlogged, mql_heap, mql_ctas, mql_trail;
DROP FUNCTION mql_count();
