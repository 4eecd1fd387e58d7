-- Every public function and view of schema mq (a name without a leading
-- underscore; mq._* are internal) has a one-line COMMENT, so that
-- \df+ mq.* and \dv+ mq.* give help, naming the page of docs/ that tells
-- more (src/sql/comments.sql, issue 37).  Each row below is an offender:
-- a new public function needs its line in src/sql/comments.sql.
WITH obj AS (
	SELECT 'function' AS kind, p.oid::regprocedure::text AS object,
		   obj_description(p.oid, 'pg_proc') AS help
	  FROM pg_proc p
	 WHERE p.pronamespace = 'mq'::regnamespace AND left(p.proname, 1) <> '_'
	UNION ALL
	SELECT 'view', c.oid::regclass::text, obj_description(c.oid, 'pg_class')
	  FROM pg_class c
	 WHERE c.relnamespace = 'mq'::regnamespace AND c.relkind IN ('v', 'm')
	   AND left(c.relname, 1) <> '_'
)
SELECT kind, object,
	   CASE WHEN help IS NULL OR btrim(help) = '' THEN 'no comment'
			WHEN help ~ '[\r\n]' THEN 'more than one line'
			WHEN help !~ 'docs/[a-z0-9_]+\.md' THEN 'names no page of docs/'
	   END AS problem
  FROM obj
 WHERE help IS NULL OR btrim(help) = '' OR help ~ '[\r\n]' OR help !~ 'docs/[a-z0-9_]+\.md'
 ORDER BY kind, object COLLATE "C";
-- and the public API is there to be commented (a query on the wrong schema
-- would find no offender either)
SELECT count(*) >= 50 AS functions, count(DISTINCT obj_description(p.oid, 'pg_proc')) >= 45 AS distinct_comments
  FROM pg_proc p
 WHERE p.pronamespace = 'mq'::regnamespace AND left(p.proname, 1) <> '_';
-- one comment per name: every overload of publish, send, ... has the same
SELECT p.proname, count(DISTINCT obj_description(p.oid, 'pg_proc')) AS comments
  FROM pg_proc p
 WHERE p.pronamespace = 'mq'::regnamespace AND left(p.proname, 1) <> '_'
 GROUP BY p.proname
HAVING count(DISTINCT obj_description(p.oid, 'pg_proc')) > 1 OR count(*) > count(obj_description(p.oid, 'pg_proc'))
 ORDER BY 1;
-- what psql's \df+ mq.publish shows (for each of its overloads)
SELECT DISTINCT obj_description(p.oid, 'pg_proc') AS publish_help
  FROM pg_proc p
 WHERE p.pronamespace = 'mq'::regnamespace AND p.proname = 'publish';
