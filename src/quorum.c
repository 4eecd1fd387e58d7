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
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
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
} MqQuorumShared;

/* NULL unless the library was preloaded */
static MqQuorumShared *quorum_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* This transaction: check the standbys at PRE_COMMIT / count it at COMMIT */
static bool xact_check_at_commit = false;
static bool xact_without_quorum = false;

static void
quorum_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(MqQuorumShared));
}

static void
quorum_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	quorum_shared = ShmemInitStruct("queue_ext quorum", sizeof(MqQuorumShared), &found);
	if (!found)
	{
		pg_atomic_init_u32(&quorum_shared->warned, 0);
		pg_atomic_init_u64(&quorum_shared->since, 0);
		pg_atomic_init_u64(&quorum_shared->commits_without_quorum, 0);
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
		return "on";
	}
	if (required > 0)
		return "on";

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
			break;
		case XACT_EVENT_COMMIT:
			if (xact_without_quorum && quorum_shared)
				pg_atomic_fetch_add_u64(&quorum_shared->commits_without_quorum, 1);
			xact_check_at_commit = false;
			xact_without_quorum = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			xact_check_at_commit = false;
			xact_without_quorum = false;
			break;
		default:
			break;
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
