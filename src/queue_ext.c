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

#include "queue_ext.h"
#include "am/mqlog.h"
#include "half.h"
#include "msglog.h"
#include "publish.h"
#include "queue_state.h"


PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Module load.  The WAL resource manager and shared memory can only be set
 * up from shared_preload_libraries; loaded any other way the access method
 * still works for reading but writers refuse (see mq_require_preload and
 * mqlog_require_rmgr).  Each part defines its own settings.
 */
void
_PG_init(void)
{
	mq_preloaded = process_shared_preload_libraries_in_progress;

	mqlog_init();
	mq_msglog_init();
	mq_publish_init();
	mq_half_init();

	DefineCustomIntVariable("mq.lane_segment_size",
							"Size at which a queue's entry log starts a new generation.",
							"Generations whose entries are all settled are dropped whole.",
							&mq_lane_segment_blocks, 8192, 2, MQ_LANE_MAX_BLOCKS / 2,
							PGC_SIGHUP, GUC_UNIT_BLOCKS, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.max_queues",
							"Most queues (in all databases) with consumer state in shared memory.",
							NULL,
							&mq_max_queues, 4096, 16, 1 << 20,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.max_in_flight",
							"Most messages tracked at once in shared memory (leased, awaiting redelivery or settlement).",
							NULL,
							&mq_max_tracked, 65536, 1024, 1 << 26,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.maintenance_naptime",
							"Time between maintenance passes of the per-database worker.",
							"Lease expiry, TTL expiry, delayed-message wakeups and check-back run this often.",
							&mq_maintenance_naptime_ms, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.launcher_naptime",
							"Time between checks of the launcher for databases needing a worker.",
							NULL,
							&mq_launcher_naptime_ms, 10000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.retire_interval",
							"Time between attempts to retire message log segments.",
							NULL,
							&mq_retire_interval_ms, 10000, 100, 24 * 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	MarkGUCPrefixReserved("mq");

	if (mq_preloaded)
	{
		mq_queue_state_shmem_init();
		mq_workers_register();
	}
}
