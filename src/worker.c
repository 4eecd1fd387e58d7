/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  Background workers: a launcher that starts one worker per database,
 *	  and the per-database worker that runs maintenance, delayed-message
 *	  wakeups and half-message check-back.
 *
 * Like autovacuum, the launcher connects to no database: it lists the
 * databases every mq.launcher_naptime and starts a worker in each that has
 * none.  A worker in a database without the extension exits at once and
 * is tried again only after the next launcher nap, so such databases cost
 * nothing.  Workers that die are restarted the same way.  A worker in a
 * database whose extension is at another version than the library (new
 * binaries before ALTER EXTENSION queue_ext UPDATE) says so once in the log
 * and waits, looking again every mq.launcher_naptime, without touching the
 * database's queues: their schema is not the one this library reads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "commands/dbcommands.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/resowner.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"

#include "mqutils.h"
#include "half.h"
#include "catalog.h"
#include "maintenance.h"
#include "msglog.h"
#include "publish.h"
#include "queue/queue.h"
#include "timers.h"
#include "timers_fire.h"
#include "worker.h"
#include "worker_shmem.h"

PGDLLEXPORT void mq_launcher_main(Datum arg);
PGDLLEXPORT void mq_worker_main(Datum arg);

/* Settings (see mq_worker_init) */
int			mq_maintenance_naptime = 1000;
int			mq_launcher_naptime = 10000;
int			mq_retire_interval = 10000;

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * DROP DATABASE and ALTER DATABASE ... RENAME need the database to have no
 * connections; ours would make them fail after a 5 s wait, so stop our
 * worker there first.
 */
static void
mq_ProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				  ProcessUtilityContext context, ParamListInfo params,
				  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *node = pstmt->utilityStmt;
	const char *dbname = NULL;

	if (IsA(node, DropdbStmt))
		dbname = ((DropdbStmt *) node)->dbname;
	else if (IsA(node, RenameStmt) && ((RenameStmt *) node)->renameType == OBJECT_DATABASE)
		dbname = ((RenameStmt *) node)->subname;
	else if (IsA(node, AlterDatabaseStmt))
		dbname = ((AlterDatabaseStmt *) node)->dbname;	/* SET TABLESPACE */
	if (dbname)
	{
		Oid			dbid = get_database_oid(dbname, true);

		if (OidIsValid(dbid) && dbid != MyDatabaseId)
		{
			mq_worker_stop_for(dbid, 15000);
			pg_usleep(100 * 1000L);		/* let it go before the check */
		}
	}
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

/*
 * Define the workers' settings and, when preloading, set up the worker
 * registry, register the launcher and install the ProcessUtility hook;
 * from _PG_init.
 */
void
mq_worker_init(void)
{
	BackgroundWorker bgw;

	DefineCustomIntVariable("mq.maintenance_naptime",
							"Time between maintenance passes of the per-database worker.",
							"Lease expiry, TTL expiry, delayed-message wakeups and check-back run this often.",
							&mq_maintenance_naptime, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.launcher_naptime",
							"Time between checks of the launcher for databases needing a worker.",
							NULL,
							&mq_launcher_naptime, 10000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.retire_interval",
							"Time between attempts to retire message log segments.",
							NULL,
							&mq_retire_interval, 10000, 100, 24 * 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;

	mq_worker_shmem_init();

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 5;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "queue_ext");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "mq_launcher_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "queue_ext launcher");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "queue_ext launcher");
	RegisterBackgroundWorker(&bgw);

	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = mq_ProcessUtility;
}

typedef struct DbWorker
{
	Oid			dbid;
	BackgroundWorkerHandle *handle;
	TimestampTz started;		/* last start, to pace restarts */
} DbWorker;

/* Databases that accept connections (reads pg_database directly) */
static List *
database_list(void)
{
	List	   *dbs = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext cxt = CurrentMemoryContext;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;

		if (!db->datallowconn || db->datistemplate)
			continue;
		old = MemoryContextSwitchTo(cxt);
		dbs = lappend_oid(dbs, db->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return dbs;
}

static BackgroundWorkerHandle *
start_worker(Oid dbid)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "queue_ext");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "mq_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "queue_ext worker for database %u", dbid);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "queue_ext worker");
	bgw.bgw_main_arg = ObjectIdGetDatum(dbid);
	bgw.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
		return NULL;
	return handle;
}

void
mq_launcher_main(Datum arg)
{
	MemoryContext cxt;
	List	   *workers = NIL;	/* of DbWorker */

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("queue_ext launcher");

	cxt = AllocSetContextCreate(TopMemoryContext, "queue_ext launcher",
								ALLOCSET_DEFAULT_SIZES);
	mq_launcher_announce(MyProc->pgprocno);

	for (;;)
	{
		List	   *dbs;

		ListCell   *lc;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		dbs = database_list();
		old = MemoryContextSwitchTo(cxt);
		foreach(lc, dbs)
		{
			Oid			dbid = lfirst_oid(lc);
			DbWorker   *w = NULL;
			ListCell   *wc;
			pid_t		pid;

			foreach(wc, workers)
				if (((DbWorker *) lfirst(wc))->dbid == dbid)
					w = lfirst(wc);
			if (w == NULL)
			{
				w = palloc0(sizeof(DbWorker));
				w->dbid = dbid;
				workers = lappend(workers, w);
			}
			/*
			 * (Re)start a stopped worker, at most once per naptime: a worker
			 * that finds no extension, or fails, exits, and we notice at
			 * once because we are its notify_pid.
			 */
			if ((w->handle == NULL ||
				 GetBackgroundWorkerPid(w->handle, &pid) == BGWH_STOPPED) &&
				!mq_worker_paused(dbid) &&
				(mq_worker_wanted(dbid) ||
				 TimestampDifferenceExceeds(w->started, GetCurrentTimestamp(),
											mq_launcher_naptime)))
			{
				if (w->handle)
					pfree(w->handle);
				w->handle = start_worker(dbid);
				w->started = GetCurrentTimestamp();
			}
		}
		MemoryContextSwitchTo(old);
		list_free(dbs);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 mq_launcher_naptime, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

typedef struct PassState
{
	TimestampTz next_due;		/* earliest due time seen in the pass */
	int32		queue_id;		/* queue of step_queue, step_group */
	int32		group_id;		/* group of step_group */
} PassState;

/* Name of a group's step, in TopMemoryContext (it outlives transactions) */
static char *
group_step_name(const char *group, const char *queue)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	char	   *s = psprintf("consumer group \"%s\" of stream \"%s\"", group, queue);

	MemoryContextSwitchTo(old);
	return s;
}

static void
note_due(PassState *ps, TimestampTz due)
{
	if (due != 0 && (ps->next_due == 0 || due < ps->next_due))
		ps->next_due = due;
}

static void
step_timers(void *arg)
{
	int			fired;

	note_due((PassState *) arg, mq_fire_due_timers(&fired));
}

/*
 * One queue's maintenance, in a transaction of its own: the catalog is
 * read again first (the queue may be gone, or the extension dropped, since
 * the pass began; an error here is the step's, not the worker's).
 */
static void
step_queue(void *arg)
{
	PassState  *ps = arg;
	MqQueue    *q;

	mq_catalog_refresh();
	q = mq_queue_by_id(ps->queue_id);
	if (q != NULL)
		note_due(ps, mq_maintain_queue(q));
}

/*
 * One consumer group's maintenance, in a transaction of its own, looked up
 * again as a queue's step is (a group deleted since the pass began is
 * skipped quietly).  Its dead-letter queue is made at its first dead
 * letter, if one goes there now (publish.c).
 */
static void
step_group(void *arg)
{
	PassState  *ps = arg;
	MqQueue    *q;
	ListCell   *lc;

	mq_catalog_refresh();
	q = mq_queue_by_id(ps->queue_id);
	if (q == NULL)
		return;
	foreach(lc, q->groups)
	{
		MqGroup    *g = lfirst(lc);

		if (g->id == ps->group_id)
		{
			note_due(ps, mq_maintain_queue(g->view));
			return;
		}
	}
}

static void
step_half(void *arg)
{
	(void) mq_half_check_due();
}

static void
step_retire(void *arg)
{
	(void) mq_retire_segments(100);
}

/*
 * Apart from the retirement, in a transaction of their own: a queue busy
 * there must not hold these up, and the segment roll-over lock
 * (mq._segment_create), which publishers hold to the end of their
 * transaction, is waited for holding nothing.
 */
static void
step_segments(void *arg)
{
	mq_segments_prepare();
	mq_half_cleanup();
}

/*
 * One maintenance pass, inside the worker's transaction (an active snapshot
 * pushed).  Each queue's step runs in a transaction of its own: a step runs
 * in a subtransaction, and the locks of a released subtransaction stay with
 * the top transaction, so in one transaction for the whole pass the worker
 * would hold the relation locks of every queue it had visited while it
 * waited for the next one, and deadlock with a backend deleting several
 * queues in one statement (seen: the worker held a stream's lane table
 * while it waited for one the deleter had locked before).
 */
static TimestampTz
maintenance_pass(bool retire)
{
	PassState	ps;
	ListCell   *lc;
	int32	   *ids;
	int32	   *gids;
	char	  **names;
	int			n = 0;
	int			nsteps = 0;
	bool		stopped = false;
	bool		step_ran = true;	/* timers ran in this transaction */

	memset(&ps, 0, sizeof(ps));
	mq_catalog_refresh();
	mq_run_guarded("firing timers", step_timers, &ps, NULL);
	foreach(lc, mq_queue_list())
		nsteps += 1 + list_length(((MqQueue *) lfirst(lc))->groups);
	ids = MemoryContextAlloc(TopMemoryContext, sizeof(int32) * Max(nsteps, 1));
	gids = MemoryContextAlloc(TopMemoryContext, sizeof(int32) * Max(nsteps, 1));
	names = MemoryContextAlloc(TopMemoryContext, sizeof(char *) * Max(nsteps, 1));
	/* every queue, then every consumer group of every stream */
	foreach(lc, mq_queue_list())
	{
		ids[n] = ((MqQueue *) lfirst(lc))->id;
		gids[n] = 0;
		names[n++] = MemoryContextStrdup(TopMemoryContext, ((MqQueue *) lfirst(lc))->name);
	}
	foreach(lc, mq_queue_list())
	{
		MqQueue    *q = lfirst(lc);
		ListCell   *gc;

		foreach(gc, q->groups)
		{
			ids[n] = q->id;
			gids[n] = ((MqGroup *) lfirst(gc))->id;
			names[n++] = group_step_name(((MqGroup *) lfirst(gc))->name, q->name);
		}
	}
	for (int i = 0; i < n; i++)
	{
		char	   *what;

		/*
		 * The last step's transaction ends first: the check below waits for
		 * a group's queue lock, whose holder may wait for a relation the
		 * step still holds (a generation retention dropped).
		 */
		if (step_ran)
		{
			PopActiveSnapshot();
			CommitTransactionCommand();
			CHECK_FOR_INTERRUPTS();
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			step_ran = false;
		}

		/*
		 * An idle group costs nothing: what its state in shared memory says
		 * is checked before any transaction of its own, catalog or relation.
		 */
		if (gids[i] != 0)
		{
			TimestampTz next_lease;

			if (stopped ||
				!mq_group_maintenance_due(ids[i], gids[i], GetCurrentTimestamp(),
										  &next_lease))
			{
				if (!stopped)
					note_due(&ps, next_lease);
				pfree(names[i]);
				continue;
			}
		}
		else if (stopped)
		{
			pfree(names[i]);
			continue;
		}

		if (!OidIsValid(get_extension_oid("queue_ext", true)))
		{
			/* DROP EXTENSION since the pass began: the main loop exits */
			stopped = true;
			pfree(names[i]);
			continue;
		}
		step_ran = true;
		ps.queue_id = ids[i];
		ps.group_id = gids[i];
		if (gids[i] != 0)
		{
			what = psprintf("maintenance of %s", names[i]);
			mq_run_guarded(what, step_group, &ps, NULL);
		}
		else
		{
			what = psprintf("maintenance of queue \"%s\"", names[i]);
			mq_run_guarded(what, step_queue, &ps, NULL);
		}
		pfree(what);
		pfree(names[i]);
	}
	pfree(ids);
	pfree(gids);
	pfree(names);
	/* nor do these hold the last queue's locks */
	PopActiveSnapshot();
	CommitTransactionCommand();
	CHECK_FOR_INTERRUPTS();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (stopped || !OidIsValid(get_extension_oid("queue_ext", true)))
		return ps.next_due;
	mq_run_guarded("half-message check-back", step_half, &ps, NULL);
	if (retire)
	{
		mq_run_guarded("retiring segments", step_retire, &ps, NULL);
		/* its segment locks are let go before the roll-over lock is taken */
		PopActiveSnapshot();
		CommitTransactionCommand();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		mq_run_guarded("preparing segments", step_segments, &ps, NULL);
	}
	return ps.next_due;
}

/* Is the extension installed in the database we are connected to? */
static bool
extension_present(void)
{
	bool		present;

	StartTransactionCommand();
	present = OidIsValid(get_extension_oid("queue_ext", true));
	CommitTransactionCommand();
	return present;
}

/*
 * Is the extension at the library's version (see the file header)?  *said
 * remembers that the LOG line about a mismatch was written.
 */
static bool
extension_current(bool *said)
{
	char	   *version = mq_extension_version();
	bool		current = version != NULL && strcmp(version, MQ_EXTENSION_VERSION) == 0;

	if (!current && !*said)
		ereport(LOG,
				(errmsg("queue_ext worker: database \"%s\" has queue_ext version %s, the library is version %s: skipped until ALTER EXTENSION queue_ext UPDATE",
						get_database_name(MyDatabaseId), version ? version : "(none)",
						MQ_EXTENSION_VERSION)));
	else if (current && *said)
		ereport(LOG,
				(errmsg("queue_ext worker: database \"%s\" now has queue_ext version %s: maintenance resumes",
						get_database_name(MyDatabaseId), version)));
	*said = !current;
	if (version != NULL)
		pfree(version);
	return current;
}

static void
worker_exit(int code, Datum arg)
{
	mq_worker_retire();
}

void
mq_worker_main(Datum arg)
{
	Oid			dbid = DatumGetObjectId(arg);
	TimestampTz last_retire = 0;
	bool		said_version = false;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pqsignal(SIGINT, StatementCancelHandler);	/* mq.check_timeout */
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dbid, InvalidOid, 0);
	pgstat_report_appname("queue_ext worker");

	/*
	 * Every lock the worker takes on a queue is only tried (queue_load.c):
	 * it must never wait for a user's DDL while it holds locks of its own.
	 */
	mq_lock_nowait = true;

	/* be known (and killable by DROP DATABASE) before doing anything */
	before_shmem_exit(worker_exit, (Datum) 0);
	mq_worker_announce(0);
	if (mq_worker_paused(dbid) || !extension_present())
		proc_exit(0);

	for (;;)
	{
		TimestampTz next_due = 0;
		TimestampTz now;
		long		sleep_ms = mq_maintenance_naptime;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (mq_worker_paused(dbid))
			proc_exit(0);		/* DROP DATABASE or RENAME in progress */

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		if (!OidIsValid(get_extension_oid("queue_ext", true)))
		{
			/* DROP EXTENSION: nothing left to do here */
			PopActiveSnapshot();
			CommitTransactionCommand();
			proc_exit(0);
		}
		if (!extension_current(&said_version))
		{
			/* an older schema: wait for ALTER EXTENSION queue_ext UPDATE */
			PopActiveSnapshot();
			CommitTransactionCommand();
			sleep_ms = mq_launcher_naptime;
			mq_worker_announce(GetCurrentTimestamp() + (int64) sleep_ms * 1000);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 sleep_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			continue;
		}
		pgstat_report_activity(STATE_RUNNING, "queue_ext maintenance");
		now = GetCurrentTimestamp();
		{
			bool		retire = now - last_retire >= (int64) mq_retire_interval * 1000;

			next_due = maintenance_pass(retire);
			if (retire)
				last_retire = now;
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
		pgstat_report_stat(false);
		pgstat_report_activity(STATE_IDLE, NULL);

		if (next_due != 0)
		{
			long		until_due = (long) ((next_due - GetCurrentTimestamp()) / 1000) + 1;

			sleep_ms = Max(Min(sleep_ms, until_due), 0);
		}
		/* publishers arming an earlier timer set our latch */
		mq_worker_announce(GetCurrentTimestamp() + (int64) sleep_ms * 1000);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
