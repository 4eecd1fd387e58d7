/*-------------------------------------------------------------------------
 *
 * mqutils.c
 *	  Small helpers every part of queue_ext uses: the preload check and the
 *	  guarded step of the background worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

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
