-- src/sql/base_data.sql: the rows a fresh install starts with, after the
-- function files (it calls mq._segment_create); not run by updates.
-- The first segment of each chain exists from the start, so that the first
-- publishers do not create a table inside their transactions.
SELECT mq._segment_create(1, true);
SELECT mq._segment_create(2, false);
-- Predeclared exchanges, usable (publish, bind) by everyone
INSERT INTO mq.cat_exchange (name, type, durable, owner)
SELECT x.name, x.type, true, (SELECT oid FROM pg_roles WHERE rolname = current_user)
  FROM (VALUES ('', 'direct'), ('amq.direct', 'direct'), ('amq.topic', 'topic'),
			   ('amq.fanout', 'fanout'), ('amq.headers', 'headers')) AS x(name, type);
INSERT INTO mq.cat_grant (object_kind, object_id, grantee, privilege)
SELECT 'x', e.id, 0, p.priv
  FROM mq.cat_exchange e, (VALUES ('publish'), ('consume')) AS p(priv);
