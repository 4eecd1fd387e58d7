------------------------------------------------------------------------
-- The mqlog table access method (src/am/): its handler and the access
-- method are made in base.sql; these are its inspection functions.
------------------------------------------------------------------------
-- Structural check of an mqlog table (amcheck-style); one row per problem.
-- Public functions are not STRICT: a NULL argument is an error (22004),
-- raised in C, rather than a silent NULL result.
CREATE OR REPLACE FUNCTION mq.mqlog_verify(rel regclass)
RETURNS TABLE(blkno bigint, offnum integer, msg text)
AS 'MODULE_PATHNAME', 'mqlog_verify'
LANGUAGE C;
REVOKE ALL ON FUNCTION mq.mqlog_verify(regclass) FROM PUBLIC;

-- The rows of one page, decoded (pageinspect's heap_page_items for mqlog).
CREATE OR REPLACE FUNCTION mq.mqlog_page_items(rel regclass, blkno bigint)
RETURNS TABLE(lp integer, lp_off integer, lp_len integer, xmin xid,
			  cmin bigint, natts integer, nulls text, data_len integer)
AS 'MODULE_PATHNAME', 'mqlog_page_items'
LANGUAGE C;
REVOKE ALL ON FUNCTION mq.mqlog_page_items(regclass, bigint) FROM PUBLIC;

-- end of mqlog section
