-- The planner hook of src/plan_defaults.c puts the DEFAULT arguments of
-- mq functions into positional calls at the top of a SELECT from a copy
-- it parsed once; the results must be those of the planner's own
-- insertion, also after a default changes.
SET client_min_messages = warning;
BEGIN;
CREATE FUNCTION mq.pd_add(a int, b int DEFAULT 1, c int DEFAULT 100)
RETURNS int LANGUAGE sql AS 'SELECT a + b + c';
-- completed by the hook: the target list and a FROM function
SELECT mq.pd_add(1) AS top, mq.pd_add(1, 2) AS one_default;
SELECT * FROM mq.pd_add(1) AS f(x);
-- left to the planner: nested, named notation, inside an expression
SELECT mq.pd_add(mq.pd_add(1)) AS nested, mq.pd_add(1, c => 3) AS named,
       mq.pd_add(1) + 0 AS in_expression;
-- a default changed: the copy is dropped with the pg_proc invalidation
CREATE OR REPLACE FUNCTION mq.pd_add(a int, b int DEFAULT 5, c int DEFAULT 100)
RETURNS int LANGUAGE sql AS 'SELECT a + b + c';
SELECT mq.pd_add(1) AS top, mq.pd_add(mq.pd_add(1)) AS nested;
SELECT * FROM mq.pd_add(1) AS f(x);
-- the plan has the arguments the planner would give it
EXPLAIN (VERBOSE, COSTS OFF) SELECT mq.send('pd_q', 'x'::bytea);
-- functions of other schemas are left alone
CREATE FUNCTION public.pd_add(a int, b int DEFAULT 7) RETURNS int
LANGUAGE sql AS 'SELECT a + b';
SELECT public.pd_add(1) AS other_schema;
ROLLBACK;
-- a real call with defaults
SELECT mq.queue_declare('pd_q');
SELECT mq.send('pd_q', 'hello') IS NOT NULL AS sent;
SELECT convert_from(body, 'UTF8') AS body, headers, redelivered
FROM mq.consume('pd_q', 10, auto_ack => true);
SELECT mq.queue_delete('pd_q');
