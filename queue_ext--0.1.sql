/* queue_ext--0.1.sql: install script for queue_ext 0.1 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION queue_ext" to load this file. \quit

-- Schema mq is created by CREATE EXTENSION (control file: schema = mq).
-- Nothing in it is usable by ordinary roles unless granted below.
REVOKE ALL ON SCHEMA mq FROM PUBLIC;
GRANT USAGE ON SCHEMA mq TO PUBLIC;

------------------------------------------------------------------------
-- The mqlog table access method (src/am/)
------------------------------------------------------------------------
CREATE FUNCTION mq.mqlog_handler(internal)
RETURNS table_am_handler
AS 'MODULE_PATHNAME', 'mqlog_handler'
LANGUAGE C STRICT;

CREATE ACCESS METHOD mqlog TYPE TABLE HANDLER mq.mqlog_handler;
COMMENT ON ACCESS METHOD mqlog IS 'append-only, WAL-logged message log';

-- end of mqlog section
