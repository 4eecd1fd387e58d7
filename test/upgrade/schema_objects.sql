-- test/upgrade/schema_objects.sql
--	  The queue_ext schema of the current database as sorted text lines,
--	  one fact a line, each starting with the object it is about, so that
--	  two databases compare with diff (test/upgrade/schema_diff.sh).
--
-- Covers: the extension's members (pg_describe_object), its config tables,
-- every function of schema mq (pg_get_functiondef: arguments, defaults,
-- result, language, volatility, strictness, parallel safety, security,
-- cost, rows, SET options, body or C symbol), ACLs and pg_init_privs,
-- tables, views, sequences and indexes of schema mq (kind, persistence,
-- access method, options, columns in order with type, NOT NULL, default,
-- collation, constraints, index definitions, triggers, view definitions),
-- types and comments, schema mq_storage (owner, ACL; the storage made at
-- run time must all be there: a line names any left in schema mq).  Left
-- out: what queues and the message log create at run time in mq_storage
-- (entry, settlement and group logs q/s/g<id>_..., log segments log_<n>
-- and their indexes, queue anchors a<id>), and table contents.
\set QUIET on
\pset format unaligned
\pset tuples_only on
\pset footer off
SET search_path = pg_catalog;

WITH ext AS (
	SELECT oid, extconfig, extcondition, extrelocatable, extnamespace
	  FROM pg_extension WHERE extname = 'queue_ext'
),
-- relations made at run time, not by the install or upgrade script
rel AS (
	SELECT c.* FROM pg_class c
	 WHERE c.relnamespace = 'mq'::regnamespace
	   AND c.relname !~ '^([qsg][0-9]+_[0-9_]+|log_[0-9]+|a[0-9]+)(_key|_dedup|_pkey)?$'
),
fn AS (
	SELECT p.*, format('function %s(%s)', p.oid::regproc, pg_get_function_identity_arguments(p.oid)) AS id
	  FROM pg_proc p WHERE p.pronamespace = 'mq'::regnamespace
),
member AS (
	SELECT d.classid, d.objid, d.objsubid, pg_describe_object(d.classid, d.objid, d.objsubid) AS descr
	  FROM pg_depend d, ext
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
	   AND NOT (d.classid = 'pg_class'::regclass AND d.objid IN (
				SELECT c.oid FROM pg_class c
				 WHERE (c.relnamespace = 'mq'::regnamespace AND c.oid NOT IN (SELECT oid FROM rel))
					OR c.relnamespace = 'mq_storage'::regnamespace))
),
lines(line) AS (
	-- the extension itself
	SELECT format('extension queue_ext: relocatable %s, schema %s', extrelocatable,
				  extnamespace::regnamespace) FROM ext
	UNION ALL
	SELECT format('extension queue_ext: config table %s condition %L', c.cfg::regclass, c.cond)
	  FROM ext, unnest(ext.extconfig, ext.extcondition) AS c(cfg, cond)
	UNION ALL
	SELECT format('extension queue_ext: member %s', descr) FROM member
	UNION ALL
	SELECT format('schema mq: owner is extension owner %s, acl %s',
				  n.nspowner = (SELECT extowner FROM pg_extension WHERE extname = 'queue_ext'),
				  n.nspacl)
	  FROM pg_namespace n WHERE n.nspname = 'mq'
	UNION ALL
	SELECT format('schema mq_storage: owner is extension owner %s, acl %s',
				  n.nspowner = (SELECT extowner FROM pg_extension WHERE extname = 'queue_ext'),
				  n.nspacl)
	  FROM pg_namespace n WHERE n.nspname = 'mq_storage'
	UNION ALL
	-- storage made at run time belongs in mq_storage, never in mq
	SELECT format('schema mq: holds run-time storage %s (kind %s)', c.relname, c.relkind::text)
	  FROM pg_class c
	 WHERE c.relnamespace = 'mq'::regnamespace AND c.oid NOT IN (SELECT oid FROM rel)
	UNION ALL
	-- functions: the whole definition, line by line
	SELECT format('%s %s: %s', fn.id, lpad(l.n::text, 3, '0'), l.line)
	  FROM fn, LATERAL regexp_split_to_table(pg_get_functiondef(fn.oid), E'\n') WITH ORDINALITY AS l(line, n)
	 WHERE fn.prokind IN ('f', 'p', 'w')
	UNION ALL
	SELECT format('%s: kind %s, acl %s', fn.id, fn.prokind::text, fn.proacl) FROM fn
	UNION ALL
	-- relations
	SELECT format('%s %s: persistence %s, access method %s, options %s, acl %s',
				  CASE relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'S' THEN 'sequence'
				  WHEN 'i' THEN 'index' WHEN 'm' THEN 'materialized view' ELSE 'relation ' || relkind::text END,
				  oid::regclass, relpersistence,
				  (SELECT amname FROM pg_am WHERE oid = rel.relam), reloptions, relacl)
	  FROM rel
	UNION ALL
	SELECT format('column %s.%s: position %s, %s%s%s%s', a.attrelid::regclass, a.attname,
				  row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum),
				  format_type(a.atttypid, a.atttypmod),
				  CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
				  ' DEFAULT ' || pg_get_expr(ad.adbin, ad.adrelid),
				  CASE WHEN a.attidentity <> '' THEN ' identity ' || a.attidentity::text ELSE '' END
				  || CASE WHEN a.attgenerated <> '' THEN ' generated' ELSE '' END
				  || CASE WHEN a.attcollation <> 0 AND a.attcollation <> 100
						  THEN ' collate ' || a.attcollation::regcollation::text ELSE '' END
				  || CASE WHEN a.attacl IS NOT NULL THEN ' acl ' || a.attacl::text ELSE '' END)
	  FROM pg_attribute a JOIN rel ON rel.oid = a.attrelid
	  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
	 WHERE a.attnum > 0 AND NOT a.attisdropped AND rel.relkind IN ('r', 'v', 'm', 'p', 'f')
	UNION ALL
	SELECT format('constraint %s on %s: %s', co.conname, co.conrelid::regclass, pg_get_constraintdef(co.oid))
	  FROM pg_constraint co JOIN rel ON rel.oid = co.conrelid
	UNION ALL
	SELECT format('index %s: %s', i.indexrelid::regclass, pg_get_indexdef(i.indexrelid))
	  FROM pg_index i JOIN rel ON rel.oid = i.indrelid
	UNION ALL
	SELECT format('trigger %s on %s: %s', t.tgname, t.tgrelid::regclass, pg_get_triggerdef(t.oid))
	  FROM pg_trigger t JOIN rel ON rel.oid = t.tgrelid WHERE NOT t.tgisinternal
	UNION ALL
	SELECT format('view %s %s: %s', rel.oid::regclass, lpad(l.n::text, 3, '0'), l.line)
	  FROM rel, LATERAL regexp_split_to_table(pg_get_viewdef(rel.oid), E'\n') WITH ORDINALITY AS l(line, n)
	 WHERE rel.relkind IN ('v', 'm')
	UNION ALL
	SELECT format('sequence %s: %s start %s increment %s min %s max %s cache %s cycle %s',
				  s.seqrelid::regclass, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement,
				  s.seqmin, s.seqmax, s.seqcache, s.seqcycle)
	  FROM pg_sequence s JOIN rel ON rel.oid = s.seqrelid
	UNION ALL
	-- types of their own (not a table's row type or an array)
	SELECT format('type %s: kind %s', t.oid::regtype, t.typtype::text)
	  FROM pg_type t
	 WHERE t.typnamespace = 'mq'::regnamespace AND t.typelem = 0
	   AND (t.typrelid = 0 OR t.typrelid IN (SELECT oid FROM rel WHERE relkind = 'c'))
	UNION ALL
	SELECT format('access method %s: type %s, handler %s', amname, amtype::text, amhandler::regproc)
	  FROM pg_am WHERE amhandler::regproc::text LIKE 'mq.%'
	UNION ALL
	-- comments and initial privileges of the extension's members
	SELECT format('comment on %s: %s', m.descr, d.description)
	  FROM member m JOIN pg_description d ON d.classoid = m.classid AND d.objoid = m.objid
	   AND d.objsubid = m.objsubid
	UNION ALL
	SELECT format('initial privileges of %s: %s %s', m.descr, ip.privtype::text, ip.initprivs)
	  FROM member m JOIN pg_init_privs ip ON ip.classoid = m.classid AND ip.objoid = m.objid
	   AND ip.objsubid = m.objsubid
)
SELECT line FROM lines ORDER BY line COLLATE "C";
