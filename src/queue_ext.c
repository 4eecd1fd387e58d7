/*-------------------------------------------------------------------------
 *
 * queue_ext.c
 *	  Module entry point: _PG_init registers settings, the WAL resource
 *	  manager, shared memory and background workers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "utils/guc.h"

#include "queue_ext.h"
#include "am/mqlog.h"
#include "msglog.h"
#include "queue/queue.h"
#include "worker.h"


PG_MODULE_MAGIC;

bool		mq_preloaded = false;

void		_PG_init(void);

/*
 * Module load.  mqlog_init (the access method), mq_queue_init (queue state)
 * and mq_worker_init (background workers) each define their own settings
 * and, when preloading, set up their WAL resource manager, shared memory,
 * hooks and workers; the other settings are defined here.  Every mq.*
 * setting must be defined before MarkGUCPrefixReserved, which would
 * otherwise drop its value from postgresql.conf.
 *
 * The WAL resource manager and shared memory can only be set up from
 * shared_preload_libraries; loaded any other way the access method still
 * works for reading but writers refuse (see mq_require_preload).
 */
void
_PG_init(void)
{
	mq_preloaded = process_shared_preload_libraries_in_progress;

	mqlog_init();

	DefineCustomIntVariable("mq.segment_size",
							"Size at which the message log starts a new segment.",
							"Whole segments are retired once every queue entry in them is settled.",
							&mq_segment_blocks, 32768, 16, (1 << 17) / 2,
							PGC_SUSET, GUC_UNIT_BLOCKS, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.dedup_window",
							"How long a publish dedup_id is remembered.",
							NULL,
							&mq_dedup_window_ms, 5 * 60 * 1000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomBoolVariable("mq.quorum_requires_standby",
							 "Refuse quorum-durable commits when no synchronous standby is configured.",
							 "When off, such commits only raise a warning.",
							 &mq_quorum_requires_standby, false,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.check_timeout",
							"Longest a half-message check function may run; longer counts as unknown.",
							NULL,
							&mq_check_timeout_ms, 10000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	mq_queue_init();
	mq_worker_init();
	MarkGUCPrefixReserved("mq");
}

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
			ereport(LOG,
					(errmsg("queue_ext worker: %s failed: %s", what, edata->message)));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}
