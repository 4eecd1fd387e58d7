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
#include "miscadmin.h"

#include "queue_ext.h"
#include "am/mqlog.h"

PG_MODULE_MAGIC;

bool		mq_preloaded = false;

void		_PG_init(void);

/*
 * Module load.  The WAL resource manager and shared memory can only be set
 * up from shared_preload_libraries; loaded any other way the access method
 * still works for reading but writers refuse (see mq_require_preload).
 */
void
_PG_init(void)
{
	mq_preloaded = process_shared_preload_libraries_in_progress;

	mqlog_init();
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
