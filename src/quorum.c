/*-------------------------------------------------------------------------
 *
 * quorum.c
 *	  Quorum commits: whether enough synchronous standbys are connected for
 *	  a quorum queue's COMMIT to be confirmed, and what a quorum publish or
 *	  ack does when they are not (mq.quorum_unavailable):
 *
 *	  error (default): the publish or ack fails at once (53000), and again
 *		just before COMMIT if the standbys went away meanwhile, so that a
 *		client learns that its transaction is not confirmed instead of
 *		waiting without end (RabbitMQ's quorum queues without a majority).
 *		With no synchronous standby configured at all, declaring a quorum
 *		queue warns that this will be so, and the warning and the error
 *		hint at wait for a server without replicas by design.  An empty
 *		synchronous_standby_names is not taken to mean that by itself: a
 *		failover manager empties it when the standbys are lost.
 *	  wait: PostgreSQL's behaviour: COMMIT waits for the standbys that
 *		synchronous_standby_names names; when it names none the commit is
 *		local only, which is warned once per condition server-wide (not
 *		once per transaction) and counted in shared memory.
 *
 *	  Deliveries of quorum queues: a message is handed out only once its
 *	  commit is on the synchronous standbys.  A commit normally becomes
 *	  visible only after they confirmed it, but its wait for them can end
 *	  early (the session is cancelled or terminated, or the postmaster dies:
 *	  a kill -9 of the primary leaves its backends running a moment), and
 *	  then the commit is visible here though no standby has it; a failover
 *	  loses it, and the publisher, which saw no confirmation, publishes it
 *	  again.  Each quorum commit marks its backend's slot before its commit
 *	  record and, once visible, raises a server-wide mark to its commit's
 *	  end when the standbys had not confirmed it; a consume of a quorum
 *	  queue waits for the standbys up to that mark, and up to the WAL flushed
 *	  when a marked commit is between becoming visible and raising the mark.
 *	  Normally neither holds and the consume does not wait.
 *
 *	  "Connected" is what the commit's wait would be released by: walsenders
 *	  that are streaming (or stopping), have a synchronous priority and a
 *	  valid flush position (SyncRepGetCandidateStandbys, as
 *	  pg_stat_get_wal_senders reads them), against the number of standbys
 *	  the configuration asks for (SyncRepConfig->num_sync).  A standby that
 *	  vanishes without closing its connection still counts until
 *	  wal_sender_timeout ends its walsender.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "replication/syncrep.h"
#include "replication/walsender_private.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/wait_event.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "quorum.h"

/* GUCs */
int			mq_quorum_unavailable = MQ_QUORUM_UNAVAILABLE_ERROR;
/* 0.1's setting, kept: on means error whatever mq.quorum_unavailable says */
static bool mq_quorum_requires_standby = false;

static const struct config_enum_entry quorum_unavailable_options[] = {
	{"error", MQ_QUORUM_UNAVAILABLE_ERROR, false},
	{"wait", MQ_QUORUM_UNAVAILABLE_WAIT, false},
	{NULL, 0, false}
};

/* Server-wide: the "no synchronous standby configured" condition */
typedef struct MqQuorumShared
{
	pg_atomic_uint32 warned;	/* warned since the condition began */
	pg_atomic_uint64 since;		/* TimestampTz it began; 0: not now */
	pg_atomic_uint64 commits_without_quorum;
	/* the end of the newest quorum commit visible before the standbys had it */
	pg_atomic_uint64 unconfirmed_lsn;
	/* per backend (pgprocno): the xid of its quorum commit under way */
	pg_atomic_uint32 committing[FLEXIBLE_ARRAY_MEMBER];
} MqQuorumShared;

/* NULL unless the library was preloaded */
static MqQuorumShared *quorum_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* This transaction: check the standbys at PRE_COMMIT / count it at COMMIT */
static bool xact_check_at_commit = false;
static bool xact_without_quorum = false;
/* This transaction's commit waits for the synchronous standbys */
static bool xact_quorum_commit = false;
/* ... and its xid is in our slot (quorum_shared->committing) */
static bool xact_slot_set = false;

static Size
quorum_shmem_size(void)
{
	return add_size(offsetof(MqQuorumShared, committing),
					mul_size(sizeof(pg_atomic_uint32), MaxBackends));
}

static void
quorum_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(quorum_shmem_size());
}

static void
quorum_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	quorum_shared = ShmemInitStruct("queue_ext quorum", quorum_shmem_size(), &found);
	if (!found)
	{
		pg_atomic_init_u32(&quorum_shared->warned, 0);
		pg_atomic_init_u64(&quorum_shared->since, 0);
		pg_atomic_init_u64(&quorum_shared->commits_without_quorum, 0);
		pg_atomic_init_u64(&quorum_shared->unconfirmed_lsn, 0);
		for (int i = 0; i < MaxBackends; i++)
			pg_atomic_init_u32(&quorum_shared->committing[i], InvalidTransactionId);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Configured and connected synchronous standbys */
static void
quorum_count(int *required, int *connected)
{
	SyncRepStandbyData *standbys;

	*required = 0;
	*connected = 0;
	if (SyncRepStandbyNames == NULL || SyncRepStandbyNames[0] == '\0' ||
		SyncRepConfig == NULL)
		return;
	*required = SyncRepConfig->num_sync;
	*connected = SyncRepGetCandidateStandbys(&standbys);
	pfree(standbys);
}

/* Standbys are configured again: the next loss of them warns again */
static void
quorum_condition_cleared(void)
{
	if (quorum_shared && pg_atomic_read_u32(&quorum_shared->warned) != 0)
	{
		pg_atomic_write_u64(&quorum_shared->since, 0);
		pg_atomic_write_u32(&quorum_shared->warned, 0);
	}
}

/*
 * What makes quorum commits work on a server without synchronous standbys
 * by design: the superuser's commands, exactly (the hint of the warning at
 * declare and of the 53000 error).  Kept short: the AMQP gateway appends it
 * to a channel-close reply text, at most 255 bytes.
 */
static int
quorum_lone_server_hint(void)
{
	if (mq_quorum_requires_standby)
		return errhint("Configure a synchronous standby, or on a server without replicas: "
					   "ALTER SYSTEM SET mq.quorum_unavailable = 'wait'; "
					   "ALTER SYSTEM RESET mq.quorum_requires_standby; SELECT pg_reload_conf();");
	return errhint("Configure a synchronous standby, or on a server without replicas: "
				   "ALTER SYSTEM SET mq.quorum_unavailable = 'wait'; SELECT pg_reload_conf();");
}

static void
quorum_error(int required, int connected, bool at_commit)
{
	if (required == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("quorum commit unavailable: no synchronous standby is configured"),
				 errdetail("The transaction is not confirmed: it is rolled back, and nothing it published or acknowledged is kept."),
				 quorum_lone_server_hint()));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
			 errmsg("quorum commit unavailable: %d synchronous standbys connected, %d needed",
					connected, required),
			 at_commit ?
			 errdetail("A synchronous standby disconnected during the transaction.  The transaction is not confirmed: it is rolled back, and nothing it published or acknowledged is kept.") :
			 errdetail("The transaction is not confirmed: it is rolled back, and nothing it published or acknowledged is kept."),
			 errhint("Retry when a synchronous standby streams again (see mq.replication), or set mq.quorum_unavailable = wait to have COMMIT wait for one.")));
}

const char *
mq_quorum_require(void)
{
	int			required;
	int			connected;

	quorum_count(&required, &connected);
	if (required > 0)
		quorum_condition_cleared();

	if (mq_quorum_unavailable == MQ_QUORUM_UNAVAILABLE_ERROR ||
		mq_quorum_requires_standby)
	{
		if (connected < required || required == 0)
			quorum_error(required, connected, false);
		xact_check_at_commit = true;
		xact_quorum_commit = true;
		return "on";
	}
	if (required > 0)
	{
		xact_quorum_commit = true;
		return "on";
	}

	/* wait, and nothing to wait for: local commit, warned once */
	xact_without_quorum = true;
	if (quorum_shared == NULL ||
		pg_atomic_exchange_u32(&quorum_shared->warned, 1) == 0)
	{
		if (quorum_shared)
			pg_atomic_write_u64(&quorum_shared->since,
								(uint64) GetCurrentTimestamp());
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("quorum durability requested but no synchronous standbys are configured"),
				 errdetail("Quorum commits are durable on this server only.  This is reported once until synchronous standbys are configured again; mq.replication counts such commits."),
				 errhint("On a server without replicas by design this is expected.  Otherwise configure synchronous standbys through the failover manager if there is one (pg_autoctl set formation number-sync-standbys, Patroni's synchronous_mode), or with synchronous_standby_names (e.g. 'ANY 1 (s1, s2)').")));
	}
	return "local";
}

/*
 * A queue whose commits need a quorum was declared (or declared again).
 * When no synchronous standby is configured and quorum commits fail
 * (mq.quorum_unavailable = error), every publish and ack on it will fail
 * with 53000: say so now, with the remedy for a server that has no replicas
 * by design.  Standbys configured but not connected now is an HA server's
 * passing state, and not warned.
 */
void
mq_quorum_declare_check(const char *queue)
{
	int			required;
	int			connected;

	if (mq_quorum_unavailable != MQ_QUORUM_UNAVAILABLE_ERROR &&
		!mq_quorum_requires_standby)
		return;
	quorum_count(&required, &connected);
	if (required > 0)
		return;
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("publishes and acks on queue \"%s\" will fail: no synchronous standby is configured",
					queue),
			 errdetail("Its commits need a quorum, and with mq.quorum_unavailable = error they fail with SQLSTATE 53000 until a synchronous standby is configured (synchronous_standby_names)."),
			 quorum_lone_server_hint()));
}

/*
 * Whether commits wait for synchronous standbys now (as SyncRepWaitForLSN
 * decides; minor releases from 15.13 on keep it in sync_standbys_status)
 */
static bool
sync_standbys_defined(void)
{
#ifdef SYNC_STANDBY_DEFINED
	bits8		status = ((volatile WalSndCtlData *) WalSndCtl)->sync_standbys_status;

	if (!(status & SYNC_STANDBY_INIT))
		return SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0';
	return (status & SYNC_STANDBY_DEFINED) != 0;
#else
	return ((volatile WalSndCtlData *) WalSndCtl)->sync_standbys_defined;
#endif
}

/* Whether the synchronous standbys confirmed WAL up to lsn (or none are set) */
static bool
quorum_confirmed(XLogRecPtr lsn)
{
	bool		confirmed;

	if (!sync_standbys_defined())
		return true;
	LWLockAcquire(SyncRepLock, LW_SHARED);
	confirmed = WalSndCtl->lsn[SYNC_REP_WAIT_FLUSH] >= lsn;
	LWLockRelease(SyncRepLock);
	return confirmed;
}

/* This backend's slot of quorum_shared->committing (NULL: none) */
static pg_atomic_uint32 *
committing_slot(void)
{
	if (quorum_shared == NULL || MyProc == NULL || MyProc->pgprocno >= MaxBackends)
		return NULL;
	return &quorum_shared->committing[MyProc->pgprocno];
}

/*
 * PRE_COMMIT of a quorum commit: our xid into our slot, before the commit
 * record, so that a consumer that sees the commit before quorum_committed
 * ran knows to wait (see the head of the file)
 */
static void
quorum_committing(void)
{
	pg_atomic_uint32 *slot = committing_slot();
	TransactionId xid = GetTopTransactionIdIfAny();

	if (slot == NULL || !TransactionIdIsValid(xid))
		return;
	pg_atomic_write_u32(slot, xid);
	pg_memory_barrier();
	xact_slot_set = true;
}

/*
 * COMMIT (visible now): when the standbys have not confirmed the commit,
 * its wait ended early; raise the mark to its end, then free the slot
 */
static void
quorum_committed(bool committed)
{
	pg_atomic_uint32 *slot = committing_slot();

	if (!xact_slot_set || slot == NULL)
		return;
	xact_slot_set = false;
	if (committed && !quorum_confirmed(XactLastCommitEnd))
	{
		uint64		cur = pg_atomic_read_u64(&quorum_shared->unconfirmed_lsn);

		while (cur < (uint64) XactLastCommitEnd &&
			   !pg_atomic_compare_exchange_u64(&quorum_shared->unconfirmed_lsn, &cur,
											   (uint64) XactLastCommitEnd))
			;
	}
	pg_write_barrier();
	pg_atomic_write_u32(slot, InvalidTransactionId);
}

/* PRE_COMMIT: the standbys may have gone since the publish; COMMIT: count */
static void
quorum_xact_cb(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (xact_check_at_commit)
			{
				int			required;
				int			connected;

				xact_check_at_commit = false;
				quorum_count(&required, &connected);
				if (connected < required || required == 0)
					quorum_error(required, connected, true);
			}
			if (xact_quorum_commit)
				quorum_committing();
			break;
		case XACT_EVENT_COMMIT:
			if (xact_without_quorum && quorum_shared)
				pg_atomic_fetch_add_u64(&quorum_shared->commits_without_quorum, 1);
			quorum_committed(true);
			xact_check_at_commit = false;
			xact_without_quorum = false;
			xact_quorum_commit = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			quorum_committed(false);
			xact_check_at_commit = false;
			xact_without_quorum = false;
			xact_quorum_commit = false;
			break;
		default:
			break;
	}
}

/*
 * Before a consume of quorum queue "queue" hands out what it read: wait
 * until the synchronous standbys have every commit it could have seen
 * whose wait for them ended early (see the head of the file).  Normally
 * there is none and this returns at once.  Waiting, mq.quorum_unavailable
 * = error fails (53000) while too few standbys are connected; a cancel
 * ends the wait with an error, the postmaster's death ends the session:
 * either way the consume's deliveries are undone, nothing is handed out.
 */
void
mq_quorum_wait_delivered(const char *queue)
{
	XLogRecPtr	need = InvalidXLogRecPtr;

	if (quorum_shared == NULL || !sync_standbys_defined())
		return;

	/* a quorum commit visible but not yet marked: all WAL flushed now */
	for (int i = 0; i < MaxBackends; i++)
	{
		TransactionId xid = pg_atomic_read_u32(&quorum_shared->committing[i]);

		if (TransactionIdIsValid(xid) && !TransactionIdIsInProgress(xid))
		{
			need = GetFlushRecPtr(NULL);
			break;
		}
	}
	pg_read_barrier();
	need = Max(need, (XLogRecPtr) pg_atomic_read_u64(&quorum_shared->unconfirmed_lsn));

	while (!quorum_confirmed(need))
	{
		int			required;
		int			connected;

		quorum_count(&required, &connected);
		if ((mq_quorum_unavailable == MQ_QUORUM_UNAVAILABLE_ERROR ||
			 mq_quorum_requires_standby) && connected < required)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("quorum commit unavailable: %d synchronous standbys connected, %d needed",
							connected, required),
					 errdetail("A message of quorum queue \"%s\" was committed without reaching the synchronous standbys (its commit's wait for them ended early); it is delivered once they have it.  Nothing was delivered.",
							   queue),
					 errhint("Retry when a synchronous standby streams again (see mq.replication).")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

void
mq_quorum_state(MqQuorumState *st)
{
	quorum_count(&st->required, &st->connected);
	if (st->required > 0)
		quorum_condition_cleared();
	st->met = st->required > 0 && st->connected >= st->required;
	st->commits_without_quorum = quorum_shared ?
		(int64) pg_atomic_read_u64(&quorum_shared->commits_without_quorum) : 0;
	st->without_quorum_since = quorum_shared ?
		(TimestampTz) pg_atomic_read_u64(&quorum_shared->since) : 0;
}

void
mq_quorum_init(void)
{
	DefineCustomEnumVariable("mq.quorum_unavailable",
							 "What a quorum publish or ack does when too few synchronous standbys are connected.",
							 "error: it fails at once (SQLSTATE 53000) and the transaction is not confirmed; "
							 "wait: COMMIT waits for the standbys as PostgreSQL does, and commits locally "
							 "(warned once) when none are configured.",
							 &mq_quorum_unavailable, MQ_QUORUM_UNAVAILABLE_ERROR,
							 quorum_unavailable_options,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("mq.quorum_requires_standby",
							 "Deprecated (0.1): on is mq.quorum_unavailable = error.",
							 "When off, mq.quorum_unavailable decides.",
							 &mq_quorum_requires_standby, false,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	RegisterXactCallback(quorum_xact_cb, NULL);
	if (process_shared_preload_libraries_in_progress)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = quorum_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = quorum_shmem_startup;
	}
}
