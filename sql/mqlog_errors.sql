--
-- mqlog: everything that would change or lock existing rows is refused
--
CREATE TABLE mqe (id int PRIMARY KEY, v text) USING mqlog;
INSERT INTO mqe SELECT g, 'v' || g FROM generate_series(1, 10) g;
CREATE TABLE mqe_before AS SELECT * FROM mqe;

\set VERBOSITY default
UPDATE mqe SET v = 'changed' WHERE id = 1;
DELETE FROM mqe WHERE id = 2;
DELETE FROM mqe;
SELECT * FROM mqe WHERE id = 3 FOR UPDATE;
SELECT * FROM mqe FOR SHARE;
SELECT * FROM mqe FOR KEY SHARE;
INSERT INTO mqe VALUES (1, 'dup') ON CONFLICT DO NOTHING;
INSERT INTO mqe VALUES (1, 'dup') ON CONFLICT (id) DO UPDATE SET v = 'x';
MERGE INTO mqe USING (VALUES (1)) s(id) ON mqe.id = s.id
  WHEN MATCHED THEN UPDATE SET v = 'merged';
WITH d AS (DELETE FROM mqe RETURNING *) SELECT count(*) FROM d;
CLUSTER mqe USING mqe_pkey;
VACUUM FULL mqe;
SELECT count(*) FROM mqe TABLESAMPLE SYSTEM (50);
-- a foreign key referencing an mqlog table needs row locks
CREATE TABLE mqe_ref (id int REFERENCES mqe);
INSERT INTO mqe_ref VALUES (1);
DROP TABLE mqe_ref;
-- a unique violation is still reported as such
INSERT INTO mqe VALUES (1, 'dup');
\set VERBOSITY terse

-- nothing changed
SELECT count(*) AS differences FROM
  ((TABLE mqe EXCEPT TABLE mqe_before) UNION ALL (TABLE mqe_before EXCEPT TABLE mqe)) d;
SELECT count(*) FROM mqe;

-- joins with mqlog tables in UPDATE of another table are fine
CREATE TABLE mqe_heap (id int, v text);
INSERT INTO mqe_heap VALUES (1, 'old');
UPDATE mqe_heap h SET v = m.v FROM mqe m WHERE m.id = h.id;
SELECT * FROM mqe_heap;

-- verification refuses other tables
SELECT * FROM mq.mqlog_verify('mqe_heap');

DROP TABLE mqe, mqe_before, mqe_heap;
