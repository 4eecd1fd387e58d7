/*-------------------------------------------------------------------------
 *
 * worker_shmem.c
 *	  Registry of the background workers in shared memory: per-database
 *	  worker slots and the launcher's process number.
 *
 * Backends use it to wake their database's worker when a timer they
 * commit falls due before the worker's next wake-up (or to ask the
 * launcher for a worker where none runs), and DROP DATABASE uses it to
 * stop a worker and pause the launcher there.  It has nothing to do with
 * queue state, and its own spinlock: every operation is a few loads and
 * stores on one slot, and signalling (SetLatch, kill) happens after the
 * lock is released.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "worker_shmem.h"

#define MQ_MAX_DB_WORKERS 64

typedef struct MqWorkerSlot
{
	Oid			dbid;			/* InvalidOid: free */
	int			pgprocno;
	pid_t		pid;
	TimestampTz next_wake;		/* when the worker plans to wake up */
	TimestampTz paused_until;	/* DROP DATABASE in progress: stay away */
	bool		wanted;			/* a backend asked for a worker here */
} MqWorkerSlot;

typedef struct MqWorkerShared
{
	slock_t		mutex;			/* protects everything below */
	int			launcher_procno;	/* -1: not running */
	MqWorkerSlot slots[MQ_MAX_DB_WORKERS];
} MqWorkerShared;

/* NULL unless the library was preloaded */
static MqWorkerShared *mq_workers = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* shmem_request_hook: room for the registry */
static void
worker_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(MqWorkerShared));
}

/* shmem_startup_hook: set up the registry */
static void
worker_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	mq_workers = ShmemInitStruct("queue_ext workers", sizeof(MqWorkerShared), &found);
	if (!found)
	{
		memset(mq_workers, 0, sizeof(MqWorkerShared));
		SpinLockInit(&mq_workers->mutex);
		mq_workers->launcher_procno = -1;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Install the registry's shmem hooks; from mq_worker_init, when preloading */
void
mq_worker_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = worker_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = worker_shmem_startup;
}

/*
 * The slot of dbid; with create, a free slot is taken for it if it has
 * none (NULL when all are taken).  Caller holds the mutex.
 */
static MqWorkerSlot *
worker_slot(Oid dbid, bool create)
{
	MqWorkerSlot *free_slot = NULL;

	for (int i = 0; i < MQ_MAX_DB_WORKERS; i++)
	{
		MqWorkerSlot *w = &mq_workers->slots[i];

		if (w->dbid == dbid)
			return w;
		if (w->dbid == InvalidOid && free_slot == NULL)
			free_slot = w;
	}
	if (create && free_slot)
	{
		free_slot->dbid = dbid;
		free_slot->pid = 0;
		free_slot->pgprocno = -1;
		free_slot->next_wake = 0;
		free_slot->paused_until = 0;
		free_slot->wanted = false;
	}
	return create ? free_slot : NULL;
}

/* The worker of this database announces itself and its next wake-up */
void
mq_worker_announce(TimestampTz next_wake)
{
	MqWorkerSlot *w;

	if (mq_workers == NULL)
		return;
	SpinLockAcquire(&mq_workers->mutex);
	w = worker_slot(MyDatabaseId, true);
	if (w)
	{
		w->pgprocno = MyProc->pgprocno;
		w->pid = MyProcPid;
		w->next_wake = next_wake;
	}
	SpinLockRelease(&mq_workers->mutex);
}

/* The worker of this database exits */
void
mq_worker_retire(void)
{
	MqWorkerSlot *w;
	TimestampTz now = GetCurrentTimestamp();

	if (mq_workers == NULL)
		return;
	SpinLockAcquire(&mq_workers->mutex);
	w = worker_slot(MyDatabaseId, false);
	if (w && w->pgprocno == MyProc->pgprocno)
	{
		w->pid = 0;
		w->pgprocno = -1;
		w->next_wake = 0;
		/* free the slot unless it carries a pause or a request */
		if (w->paused_until <= now && !w->wanted)
			w->dbid = InvalidOid;
	}
	SpinLockRelease(&mq_workers->mutex);
}

/*
 * Wake this database's worker if it would sleep past 'due'; if it has none
 * (a new database, or it exited), ask the launcher for one at once.
 */
void
mq_worker_wake(TimestampTz due)
{
	MqWorkerSlot *w;
	int			procno = -1;

	if (mq_workers == NULL)
		return;
	SpinLockAcquire(&mq_workers->mutex);
	w = worker_slot(MyDatabaseId, true);
	if (w && w->pgprocno >= 0)
	{
		if (w->next_wake == 0 || due < w->next_wake)
		{
			procno = w->pgprocno;
			w->next_wake = due;
		}
	}
	else if (w)
	{
		w->wanted = true;
		procno = mq_workers->launcher_procno;
	}
	SpinLockRelease(&mq_workers->mutex);
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/*
 * Stop the worker of a database about to be dropped or renamed (which
 * needs it to have no connections), and keep the launcher from starting
 * another for a while.
 */
void
mq_worker_stop_for(Oid dbid, int pause_ms)
{
	MqWorkerSlot *w;
	pid_t		pid = 0;
	TimestampTz now = GetCurrentTimestamp();

	if (mq_workers == NULL || !OidIsValid(dbid))
		return;
	SpinLockAcquire(&mq_workers->mutex);
	w = worker_slot(dbid, true);
	if (w)
	{
		w->paused_until = now + (int64) pause_ms * 1000;
		pid = w->pid;
	}
	SpinLockRelease(&mq_workers->mutex);
	if (pid > 0)
		kill(pid, SIGTERM);
}

/* Must workers stay away from this database for now (DROP DATABASE)? */
bool
mq_worker_paused(Oid dbid)
{
	MqWorkerSlot *w;
	bool		paused = false;
	TimestampTz now = GetCurrentTimestamp();

	if (mq_workers == NULL)
		return false;
	SpinLockAcquire(&mq_workers->mutex);
	w = worker_slot(dbid, false);
	if (w && w->paused_until > now)
		paused = true;
	SpinLockRelease(&mq_workers->mutex);
	return paused;
}

/* The launcher announces itself (procno) or leaves (-1) */
void
mq_launcher_announce(int procno)
{
	if (mq_workers == NULL)
		return;
	SpinLockAcquire(&mq_workers->mutex);
	mq_workers->launcher_procno = procno;
	SpinLockRelease(&mq_workers->mutex);
}

/* Did a backend ask for a worker in this database?  Clears the request. */
bool
mq_worker_wanted(Oid dbid)
{
	MqWorkerSlot *w;
	bool		wanted = false;

	if (mq_workers == NULL)
		return false;
	SpinLockAcquire(&mq_workers->mutex);
	w = worker_slot(dbid, false);
	if (w && w->wanted)
	{
		wanted = true;
		w->wanted = false;
	}
	SpinLockRelease(&mq_workers->mutex);
	return wanted;
}
