\set qe_wait_echo :ECHO \set ECHO none
-- The regression tests' wait helper, included by sql/NAME.sql with
--	\ir test/regress/wait.sql
-- (pg_regress feeds psql the test on stdin, so the path is relative to the
-- directory make installcheck runs in: the top of the tree).  This file is
-- not echoed into the expected output; the \set line above and the one at
-- the end turn psql's echo off and back on.
--
-- wait_until(query, timeout): run query, a SELECT of one boolean, every
-- 50 ms until it returns true, then return true.  Each try takes a new
-- snapshot, of the tables and of pg_stat_activity.  If it is still not
-- true after timeout, raise an error that names the query: a wait never
-- ends quietly, so what follows it never runs on a state it did not reach.
-- The timeout is generous on purpose: it only bounds how long a real
-- defect hangs the suite, never how fast a loaded machine must be.
-- Tests that \c to another database include this file again there; a test
-- drops the function when it is done with it.
CREATE OR REPLACE FUNCTION wait_until(query text, timeout interval DEFAULT '60 s')
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
	ok boolean;
BEGIN
	LOOP
		PERFORM pg_stat_clear_snapshot();
		EXECUTE query INTO ok;
		IF ok THEN
			RETURN true;
		END IF;
		IF clock_timestamp() >= deadline THEN
			RAISE EXCEPTION 'wait_until: not true after %: %', timeout, query;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
END
$$;
\set ECHO :qe_wait_echo \unset qe_wait_echo
