--
-- mqlog: large rows (self-TOAST overflow pages) and the size limit
--
SHOW mq.max_message_size;
CREATE TABLE mqb (id int, body text) USING mqlog;

-- values from a toasted heap table: the heap's TOAST pointers must not be
-- stored; read everything back after dropping the source
CREATE TABLE mqb_src (id int, body text);
ALTER TABLE mqb_src ALTER COLUMN body SET STORAGE EXTERNAL;
INSERT INTO mqb_src VALUES
  (1, repeat('0123456789abcdef', 65536)),         -- 1 MB
  (2, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 491520) g)), -- 15 MB
  (3, repeat('z', 5000)),
  (4, 'small');
CREATE TABLE mqb_expect AS SELECT id, length(body) AS len, md5(body) AS md5 FROM mqb_src;
INSERT INTO mqb SELECT * FROM mqb_src;
DROP TABLE mqb_src;
SELECT b.id, length(b.body) = e.len AS len_ok, md5(b.body) = e.md5 AS md5_ok
  FROM mqb b JOIN mqb_expect e USING (id) ORDER BY id;
SELECT id, length(body), pg_column_size(body) < length(body) AS compressed_or_external
  FROM mqb ORDER BY id;
-- slices
SELECT substr(body, 1048570, 10) FROM mqb WHERE id = 1;
SELECT substr(body, 8000, 300) = substr(repeat('0123456789abcdef', 100), 16, 300) FROM mqb WHERE id = 1;
-- slices of a value on overflow pages, across a chunk boundary
SELECT substr(body, 8100, 200) = substr((SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) g), 8100, 200) AS slice_ok
  FROM mqb WHERE id = 2;
SELECT right(body, 32) = md5('491520') AS tail_ok FROM mqb WHERE id = 2;
-- the table grew by overflow pages, not by a TOAST table
SELECT pg_relation_size('mqb') > 15 * 1024 * 1024 AS big;

-- copy from itself: self-pointers are detoasted and stored again
INSERT INTO mqb SELECT id + 10, body FROM mqb WHERE id <= 2;
SELECT id, md5(body) = (SELECT md5 FROM mqb_expect e WHERE e.id = mqb.id - 10) AS md5_ok
  FROM mqb WHERE id > 10 ORDER BY id;
-- an index over a long value detoasts it
CREATE INDEX mqb_md5 ON mqb (md5(body));
SET enable_seqscan = off;
SELECT id FROM mqb WHERE md5(body) = (SELECT md5 FROM mqb_expect WHERE id = 2) ORDER BY id;
RESET enable_seqscan;
-- aborted large insert leaves nothing visible
BEGIN;
INSERT INTO mqb VALUES (99, repeat('q', 3000000));
ROLLBACK;
SELECT count(*) FROM mqb WHERE id = 99;
SELECT * FROM mq.mqlog_verify('mqb');

-- too big: error before anything is written
SELECT pg_relation_size('mqb') AS size_before \gset
INSERT INTO mqb VALUES (100, repeat('x', 17 * 1024 * 1024));
SELECT pg_relation_size('mqb') = :size_before AS unchanged;
-- the limit is a setting
SET mq.max_message_size = '64kB';
INSERT INTO mqb VALUES (101, repeat('x', 70000));
INSERT INTO mqb VALUES (102, repeat('x', 60000));
RESET mq.max_message_size;
SELECT id, length(body) FROM mqb WHERE id > 100;
-- an incompressible row spanning pages with a PLAIN column cannot be stored
CREATE TABLE mqb_plain (b text) USING mqlog;
ALTER TABLE mqb_plain ALTER COLUMN b SET STORAGE PLAIN;
INSERT INTO mqb_plain SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) g;
DROP TABLE mqb_plain;

DROP TABLE mqb, mqb_expect;
