/*-------------------------------------------------------------------------
 *
 * queue_ext.c
 *	  Module entry point: _PG_init calls each part's init function (its
 *	  settings, the WAL resource manager, shared memory, background
 *	  workers).  Nothing calls into this file.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "mqutils.h"
#include "am/mqlog.h"
#include "half.h"
#include "msglog.h"
#include "plan_defaults.h"
#include "publish.h"
#include "queue/queue.h"
#include "quorum.h"
#include "worker.h"


PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Module load.  Each part defines its own settings beside their variables
 * and, when preloading, sets up what it needs: mqlog_init (the access
 * method and its WAL resource manager), mq_msglog_init, mq_publish_init,
 * mq_quorum_init (quorum commits: settings, shared memory),
 * mq_half_init, mq_queue_init (queue state, its shared memory),
 * mq_worker_init (background workers) and mq_plan_defaults_init (the
 * planner hook that inserts the DEFAULT arguments of mq functions).  Every mq.* setting must be defined
 * before MarkGUCPrefixReserved, which would otherwise drop its value from
 * postgresql.conf.
 *
 * The WAL resource manager and shared memory can only be set up from
 * shared_preload_libraries; loaded any other way the access method still
 * works for reading but writers refuse (see mq_require_preload and
 * mqlog_require_rmgr).
 */
void
_PG_init(void)
{
	mq_preloaded = process_shared_preload_libraries_in_progress;

	mqlog_init();
	mq_msglog_init();
	mq_publish_init();
	mq_quorum_init();
	mq_half_init();
	mq_queue_init();
	mq_worker_init();
	mq_plan_defaults_init();
	MarkGUCPrefixReserved("mq");
}
