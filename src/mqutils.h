/*-------------------------------------------------------------------------
 *
 * mqutils.h
 *	  Small helpers every part of queue_ext uses.  A leaf: it depends on
 *	  nothing else of queue_ext (as contrib/bloom's blutils.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_UTILS_H
#define MQ_UTILS_H

#include "postgres.h"

#include "access/attnum.h"
#include "access/genam.h"
#include "catalog/pg_class.h"
#include "utils/rel.h"

/*
 * Schema that holds the public API and the extension's fixed catalog
 * tables (mq.cat_*, mq.half, mq.timer, mq.export_*: made at install)
 */
#define MQ_SCHEMA "mq"

/*
 * Schema that holds the storage the extension makes at run time: message
 * log segments log_<n> and their indexes, each queue's entry and
 * settlement logs q<id>_* and s<id>_*, consumer groups' logs g<id>_*, and
 * each queue's lock anchor a<id> (docs/architecture.md, "Storage")
 */
#define MQ_STORAGE_SCHEMA "mq_storage"

/* true when the library was loaded via shared_preload_libraries */
extern bool mq_preloaded;

/*
 * Set in the maintenance worker: every heavyweight lock it takes on a
 * queue, or on the segment roll-over, is only tried (55P03 when busy), so
 * that it never waits for a user's transaction while it holds locks of its
 * own (queue_load.c: mqq_queue_object_lock).
 */
extern bool mq_lock_nowait;

/* Error out (with a hint) when a feature needs shared_preload_libraries */
extern void mq_require_preload(const char *feature);

/*
 * Run fn(arg) in a subtransaction; swallow its error (returning false),
 * logging it prefixed with what, or handing its message back in *error.
 */
extern bool mq_run_guarded(const char *what, void (*fn) (void *arg), void *arg,
						   char **error);

/* The SQLSTATE of the error the last failed mq_run_guarded swallowed */
extern int	mq_run_guarded_sqlerrcode;

/*
 * Oid of the relation called name in schema nspname (MQ_SCHEMA or
 * MQ_STORAGE_SCHEMA), or InvalidOid.  For the tables other transactions
 * create while we run (log segments, lane generations, group logs): a miss
 * looks again in pg_class itself, with a new catalog snapshot (see
 * mqutils.c).
 */
extern Oid	mq_relid_fresh(const char *nspname, const char *name);

/*
 * Look a row of table mq.<relname> up by its unique index mq.<index>
 * (column keyatt equal to key, compared with eqproc), with the latest
 * snapshot: a row another transaction just committed counts.  Sets *out to
 * a copy of column outatt and returns true; false when there is no such
 * row, the column is NULL, or the table does not exist (an older schema).
 */
extern bool mq_lookup_unique(const char *relname, const char *index, AttrNumber keyatt,
							 RegProcedure eqproc, Datum key, AttrNumber outatt,
							 Datum *out);

/*
 * A walk over the tables of MQ_STORAGE_SCHEMA whose names begin with a
 * prefix (a queue's lane generations q<id>_<lane>_*, its consumer group
 * logs g<id>_*, the anchors a*), in name order: one scan of pg_class's name
 * index from the prefix to the first name past it, as the catalog snapshot
 * shows it.  Takes no lock but pg_class's own.
 *
 *	MqStorageScan s;
 *	Form_pg_class c;
 *	const char *rest;
 *
 *	mq_storage_scan_begin(&s, "q12_0_", false);
 *	while ((c = mq_storage_scan_next(&s, &rest)) != NULL)
 *		... rest is c's name after the prefix ...
 *	mq_storage_scan_end(&s);
 */
typedef struct MqStorageScan
{
	Oid			nsp;			/* InvalidOid: the schema is missing */
	Relation	pg_class;
	SysScanDesc scan;
	NameData	start;			/* the scan key's argument, kept for the scan */
	size_t		plen;
} MqStorageScan;

/*
 * Begin the walk over names starting with prefix.  A missing schema is an
 * error unless missing_ok, when the walk finds nothing.
 */
extern void mq_storage_scan_begin(MqStorageScan *s, const char *prefix, bool missing_ok);

/*
 * The next table of the walk, with *rest set to its name after the prefix
 * (pointing into the returned row, valid until the next call); NULL when
 * the names leave the prefix.
 */
extern Form_pg_class mq_storage_scan_next(MqStorageScan *s, const char **rest);

extern void mq_storage_scan_end(MqStorageScan *s);

#endif							/* MQ_UTILS_H */
