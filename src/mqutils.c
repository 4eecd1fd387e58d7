/*-------------------------------------------------------------------------
 *
 * mqutils.c
 *	  Small helpers every part of queue_ext uses: the preload check and the
 *	  guarded step of the background worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "mqutils.h"

/* set by _PG_init */
bool		mq_preloaded = false;
bool		mq_lock_nowait = false;

/*
 * Raise a clear error when a feature that needs shared_preload_libraries is
 * used in a server that did not preload the library.
 */
void
mq_require_preload(const char *feature)
{
	if (!mq_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s requires queue_ext to be loaded via shared_preload_libraries", feature),
				 errhint("Add queue_ext to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* the SQLSTATE of the error the last failed mq_run_guarded swallowed */
int			mq_run_guarded_sqlerrcode = 0;

/*
 * Run fn(arg) in a subtransaction: an error in it is rolled back and the
 * caller goes on; its message is logged (prefixed with what), or handed
 * back in *error when error is not NULL.  Used by the background worker so
 * that one failing step (a broken queue, a bad check function) does not
 * stop the others.  Returns false if fn failed.
 */
bool
mq_run_guarded(const char *what, void (*fn) (void *arg), void *arg, char **error)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	bool		ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		mq_run_guarded_sqlerrcode = edata->sqlerrcode;
		if (error)
			*error = pstrdup(edata->message ? edata->message : "error");
		else
		{
			/*
			 * A queue locked by a user's DDL (the worker only tries its
			 * locks), or deleted since the pass began, is skipped quietly:
			 * the next pass looks again.
			 */
			bool		skipped = edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
				edata->sqlerrcode == ERRCODE_UNDEFINED_OBJECT;

			ereport(skipped ? DEBUG1 : LOG,
					(errmsg("queue_ext worker: %s %s: %s", what,
							skipped ? "skipped" : "failed", edata->message)));
		}
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * A table another transaction created is found by name once that
 * transaction is seen as committed by what we read in shared memory or in
 * its rows (an entry pointing into a new log segment, a lane's new write
 * generation), which can happen before our catalog view shows the table:
 * our catalog snapshot may be older than that commit, and the syscache may
 * hold a negative entry for the name, whose invalidation the creator sends
 * only after its commit is visible.  So a miss in the syscache scans
 * pg_class's name index with a new catalog snapshot (the rows we saw are
 * committed per the proc array, so the new snapshot sees the table too).
 * Takes no lock but pg_class's own, like the syscache.
 */
Oid
mq_relid_fresh(const char *nspname, const char *name)
{
	Oid			nsp = get_namespace_oid(nspname, false);
	Oid			relid = get_relname_relid(name, nsp);
	Relation	pg_class;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	NameData	relname;

	if (OidIsValid(relid))
		return relid;
	InvalidateCatalogSnapshot();
	namestrcpy(&relname, name);
	pg_class = table_open(RelationRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_class_relname, BTEqualStrategyNumber,
				F_NAMEEQ, NameGetDatum(&relname));
	ScanKeyInit(&key[1], Anum_pg_class_relnamespace, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(nsp));
	scan = systable_beginscan(pg_class, ClassNameNspIndexId, true, NULL, 2, key);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
		relid = ((Form_pg_class) GETSTRUCT(tup))->oid;
	systable_endscan(scan);
	table_close(pg_class, AccessShareLock);
	return relid;
}

void
mq_storage_scan_begin(MqStorageScan *s, const char *prefix, bool missing_ok)
{
	ScanKeyData key;

	s->nsp = get_namespace_oid(MQ_STORAGE_SCHEMA, missing_ok);
	s->pg_class = NULL;
	s->scan = NULL;
	if (!OidIsValid(s->nsp))
		return;
	namestrcpy(&s->start, prefix);
	s->plen = strlen(NameStr(s->start));
	s->pg_class = table_open(RelationRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_class_relname, BTGreaterEqualStrategyNumber,
				F_NAMEGE, NameGetDatum(&s->start));
	s->scan = systable_beginscan(s->pg_class, ClassNameNspIndexId, true, NULL, 1, &key);
}

Form_pg_class
mq_storage_scan_next(MqStorageScan *s, const char **rest)
{
	HeapTuple	tup;

	if (s->scan == NULL)
		return NULL;
	while (HeapTupleIsValid(tup = systable_getnext(s->scan)))
	{
		Form_pg_class c = (Form_pg_class) GETSTRUCT(tup);
		const char *name = NameStr(c->relname);

		if (strncmp(name, NameStr(s->start), s->plen) != 0)
			break;				/* past the names with the prefix */
		if (c->relnamespace != s->nsp)
			continue;
		*rest = name + s->plen;
		return c;
	}
	return NULL;
}

void
mq_storage_scan_end(MqStorageScan *s)
{
	if (s->scan == NULL)
		return;
	systable_endscan(s->scan);
	table_close(s->pg_class, AccessShareLock);
	s->scan = NULL;
}

bool
mq_lookup_unique(const char *relname, const char *index, AttrNumber keyatt,
				 RegProcedure eqproc, Datum key, AttrNumber outatt, Datum *out)
{
	Oid			relid = mq_relid_fresh(MQ_SCHEMA, relname);
	Relation	rel;
	ScanKeyData skey;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, AccessShareLock);
	ScanKeyInit(&skey, keyatt, BTEqualStrategyNumber, eqproc, key);
	scan = systable_beginscan(rel, mq_relid_fresh(MQ_SCHEMA, index), true, GetLatestSnapshot(), 1, &skey);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), outatt - 1);
		Datum		d = heap_getattr(tup, outatt, RelationGetDescr(rel), &isnull);

		if (!isnull)
		{
			*out = datumCopy(d, att->attbyval, att->attlen);
			found = true;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}
