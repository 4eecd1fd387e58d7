/*-------------------------------------------------------------------------
 *
 * queue_xact.c
 *	  What a backend did to queue state in its transaction, and what
 *	  becomes of it when the transaction, a subtransaction or the session
 *	  ends.
 *
 * Leases, settlements and appends change shared state at once (so that
 * others see a leased message as taken), but they only hold if the
 * transaction commits.  Each backend therefore keeps a list of what it
 * did, with the (sub)transaction level that did it: at commit, settled
 * entries become SETTLED and appended ones count in the backlog; at abort
 * (or the abort of a subtransaction), settlements go back to leased and
 * leases taken go back to ready, redelivered.  When the session ends,
 * everything it still holds becomes ready at once (but deliveries not
 * bound to the session, which wait for their lease or a receipt).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/wait_event.h"

#include "queue/queue_int.h"
#include "worker_shmem.h"

static void wait_abort(void);

/* ---------- backend-local bookkeeping for transaction ends ---------- */

typedef struct MqLocalAction
{
	MqLocalKind kind;
	int			nest;			/* (sub)transaction nesting level */
	MqQueueKey	qkey;
	MqQueueShared *slot;		/* where qkey's state was, if known: a hint,
								 * checked when the transaction ends */
	int64		msg_id;			/* PUBLISH: number of entries; COUNT: how
								 * many to add */
	int64		bytes;			/* PUBLISH: their body bytes, if recorded;
								 * COUNT: the MqCounter */
	bool		prev_leased;	/* ACK: message was leased before */
} MqLocalAction;

static MqLocalAction *local_actions = NULL;
static int	nlocal = 0;
static int	maxlocal = 0;

/* Queues this session holds leases on (for release at exit) */
static MqQueueKey *leased_queues = NULL;
static int	nleased_queues = 0;
static bool callbacks_registered = false;

static void mq_xact_callback(XactEvent event, void *arg);
static void mq_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								SubTransactionId parentSubid, void *arg);
static void mq_session_exit(int code, Datum arg);
static void state_drops_subxact(SubXactEvent event, int nest);
static bool state_drops_pending(void);

/* Register the transaction, subtransaction and session-exit callbacks, once */
void
mqq_register_callbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(mq_xact_callback, NULL);
	RegisterSubXactCallback(mq_subxact_callback, NULL);
	before_shmem_exit(mq_session_exit, (Datum) 0);
	local_actions = MemoryContextAlloc(TopMemoryContext, sizeof(MqLocalAction) * 64);
	maxlocal = 64;
	callbacks_registered = true;
}

/*
 * Remember what this (sub)transaction did to message msg_id of qs (for
 * MQ_L_PUBLISH, msg_id is the number of entries appended).
 */
static void
local_add_key(MqLocalKind kind, MqQueueKey key, MqQueueShared *slot,
			  int64 msg_id, bool prev_leased)
{
	mqq_register_callbacks();
	if (nlocal == maxlocal)
	{
		maxlocal *= 2;
		local_actions = repalloc(local_actions, sizeof(MqLocalAction) * maxlocal);
	}
	local_actions[nlocal].kind = kind;
	local_actions[nlocal].nest = GetCurrentTransactionNestLevel();
	local_actions[nlocal].qkey = key;
	local_actions[nlocal].slot = slot;
	local_actions[nlocal].msg_id = msg_id;
	local_actions[nlocal].bytes = 0;
	local_actions[nlocal].prev_leased = prev_leased;
	nlocal++;
}

void
mqq_local_add(MqLocalKind kind, MqQueueShared *qs, int64 msg_id, bool prev_leased)
{
	local_add_key(kind, qs->key, qs, msg_id, prev_leased);
}

/*
 * Remember that this (sub)transaction appended n entries to qs, of bytes
 * body bytes (0 where the queue does not record them)
 */
void
mqq_local_add_publish(MqQueueShared *qs, int64 n, int64 bytes)
{
	mqq_local_add(MQ_L_PUBLISH, qs, n, false);
	local_actions[nlocal - 1].bytes = bytes;
}

/*
 * Add n to counter c of the queue state known by key once this
 * (sub)transaction commits.  Counts in a row for one state and counter
 * share one action (a batch settles or publishes many messages).
 */
static void
local_count_key(MqQueueKey key, MqQueueShared *slot, MqCounter c, int64 n)
{
	MqLocalAction *last = nlocal > 0 ? &local_actions[nlocal - 1] : NULL;

	if (n == 0)
		return;
	if (last != NULL && last->kind == MQ_L_COUNT && last->bytes == c &&
		last->nest == GetCurrentTransactionNestLevel() &&
		mqq_key_equal(last->qkey, key))
	{
		last->msg_id += n;
		return;
	}
	local_add_key(MQ_L_COUNT, key, slot, n, false);
	local_actions[nlocal - 1].bytes = c;
}

void
mqq_local_count(MqQueueShared *qs, MqCounter c, int64 n)
{
	local_count_key(qs->key, qs, c, n);
}

/* Only the key is needed now: the state is locked at commit */
void
mq_queue_count_at_commit(MqQueue *q, MqCounter c, int64 n)
{
	local_count_key(mqq_key(q), NULL, c, n);
}

/* Remember that this session holds leases on the queue key, for its exit */
void
mqq_note_leased_queue(MqQueueKey key)
{
	mqq_register_callbacks();
	for (int i = 0; i < nleased_queues; i++)
		if (mqq_key_equal(leased_queues[i], key))
			return;
	if (leased_queues == NULL)
		leased_queues = MemoryContextAlloc(TopMemoryContext, sizeof(MqQueueKey) * 16);
	else if (nleased_queues % 16 == 0)
		leased_queues = repalloc(leased_queues, sizeof(MqQueueKey) * (nleased_queues + 16));
	leased_queues[nleased_queues++] = key;
}

bool
mq_queue_session_leased(MqQueue *q)
{
	MqQueueKey	key = mqq_key(q);

	for (int i = 0; i < nleased_queues; i++)
		if (mqq_key_equal(leased_queues[i], key))
			return true;
	return false;
}

/*
 * Entries this transaction appended to q so far (counted at commit), and
 * in *bytes their body bytes
 */
int64
mqq_local_published(MqQueue *q, int64 *bytes)
{
	int64		n = 0;

	*bytes = 0;
	for (int i = 0; i < nlocal; i++)
		if (local_actions[i].kind == MQ_L_PUBLISH &&
			local_actions[i].qkey.queue_id == q->id &&
			local_actions[i].qkey.group_id == q->group_id &&
			local_actions[i].qkey.dbid == MyDatabaseId)
		{
			n += local_actions[i].msg_id;
			*bytes += local_actions[i].bytes;
		}
	return n;
}

/* ---------- transaction and session ends ---------- */

/* A return needs the worker (see release_to_ready) */
static bool worker_wanted = false;

static void
wake_worker_if_wanted(void)
{
	if (worker_wanted && MyDatabaseId != InvalidOid)
		mq_worker_wake(GetCurrentTimestamp());
	worker_wanted = false;
}

/*
 * Return a message we hold to ready (abort, session end).  Such a return
 * happens outside any query, so what RabbitMQ does at the return -- dead-
 * letter a message over x-delivery-limit, trim a drop-head queue back to
 * x-max-length -- is left to this database's worker, woken at once
 * (worker_wanted).
 */
static void
release_to_ready(MqQueueShared *qs, MqTracked *t, MqReturnReason why)
{
	t->state = MQ_T_READY;
	t->last_return = (uint8) why;
	t->owner = -1;
	t->prev_owner = -1;
	t->until = 0;
	t->redelivered = true;
	qs->unacked--;
	if (qs->drop_head_limit || mqq_over_delivery_limit(qs->delivery_limit, t))
		worker_wanted = true;
}

/*
 * At commit, for the actions from "from" on: appended entries count in the
 * backlog (and wake consumers), settlements become SETTLED.
 */
static void
local_commit(int from)
{
	/*
	 * Consecutive actions on one queue (a consume or ack of a batch) share
	 * one acquisition of its lock; wake-ups wait for its release.
	 */
	MqQueueShared *qs = NULL;
	MqQueueKey	held_key;
	bool		broadcast = false;
	bool		wake = false;

	memset(&held_key, 0, sizeof(held_key));
	for (int i = from; i <= nlocal; i++)
	{
		MqLocalAction *a = i < nlocal ? &local_actions[i] : NULL;
		MqTracked  *t;

		if (a != NULL && a->kind == MQ_L_LEASE)
			continue;
		if (qs != NULL && (a == NULL || !mqq_key_equal(held_key, a->qkey)))
		{
			LWLockRelease(&qs->lock);
			if (broadcast)
				ConditionVariableBroadcast(&qs->cv);
			if (wake)
				mqq_wake(qs);	/* a group's consumers wait on the stream */
			qs = NULL;
			broadcast = wake = false;
		}
		if (a == NULL)
			break;
		if (qs == NULL)
		{
			qs = mqq_queue_lock_key(a->qkey, a->slot);
			if (qs == NULL)
				continue;
			held_key = a->qkey;
		}
		if (a->kind == MQ_L_DEAD)
		{
			if (a->msg_id >= 0 && a->msg_id < qs->nlanes)
				qs->lanes[a->msg_id].dead_lettered++;
			continue;
		}
		if (a->kind == MQ_L_COUNT)
		{
			qs->counters.n[a->bytes] += a->msg_id;
			continue;
		}
		if (a->kind == MQ_L_PUBLISH)
		{
			qs->backlog += a->msg_id;
			qs->backlog_bytes += a->bytes;
			/* a lane may have a new first ready entry (mq_queue_counts) */
			qs->oldest_known = false;
			broadcast = true;
			continue;
		}
		t = mqq_tracked_find(qs, a->msg_id);
		if (t && t->state == MQ_T_ACKING && t->owner == MyProc->pgprocno)
		{
			t->state = MQ_T_SETTLED;
			t->owner = -1;
			qs->unacked--;
			/*
			 * No clamp: a consumer can settle a message before its
			 * publisher's commit callback has counted it; the two meet in
			 * the middle.  Readers clamp what they show.
			 */
			qs->backlog--;
			qs->backlog_bytes -= t->body_size;
			if (++qs->settled_since_floor % 64 == 0)
				mqq_compact(qs, NULL);
			/* ordered queue: the next message of its group may go now */
			if (t->group_hash != 0)
				wake = true;
		}
	}
}

/*
 * At the abort of a transaction or subtransaction, undo the actions from
 * "from" on: settlements first (back to leased), then leases (back to
 * ready, redelivered; our own entries taken by an overflow, back to
 * pending).  Leases are undone in the order they were taken, so that a
 * quorum queue gets its messages back in the order it delivered them.
 */
static void
local_abort(int from)
{
	/* settlements first: they go back to leased */
	for (int pass = 0; pass < 2; pass++)
	{
		for (int k = from; k < nlocal; k++)
		{
			int			i = pass == 0 ? nlocal - 1 - (k - from) : k;
			MqLocalAction *a = &local_actions[i];
			MqQueueShared *qs;
			MqTracked  *t;

			if ((pass == 0) != (a->kind == MQ_L_ACK))
				continue;
			if (a->kind == MQ_L_PUBLISH || a->kind == MQ_L_DEAD ||
				a->kind == MQ_L_COUNT)
				continue;
			qs = mqq_queue_lock_key(a->qkey, a->slot);
			if (qs == NULL)
				continue;
			t = mqq_tracked_find(qs, a->msg_id);
			if (t && t->owner == MyProc->pgprocno)
			{
				if (a->kind == MQ_L_ACK && t->state == MQ_T_ACKING)
					t->state = MQ_T_LEASED;
				else if (a->kind == MQ_L_LEASE && t->own &&
						 (t->state == MQ_T_LEASED || t->state == MQ_T_ACKING))
				{
					/* our own entry, dropped by overflow: its row decides */
					mqq_tracked_set_pending(t);
					t->own = false;
					t->owner = -1;
					qs->unacked--;
				}
				else if (a->kind == MQ_L_LEASE &&
						 (t->state == MQ_T_LEASED || t->state == MQ_T_ACKING))
				{
					/* delivered, not taken dead: a return (quorum) */
					bool		delivered = t->returned != 0;

					release_to_ready(qs, t, MQ_RETURN_ROLLBACK);
					if (delivered)
						mqq_tracked_returned(qs, t);
					mqq_wake(qs);
				}
			}
			LWLockRelease(&qs->lock);
		}
	}
}

/*
 * Transaction end: make what it did to queue state hold, or undo it.  A
 * transaction that consumed or settled cannot be prepared.
 */
static void
mq_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			for (int i = 0; i < nlocal; i++)
				if (local_actions[i].kind != MQ_L_PUBLISH &&
					local_actions[i].kind != MQ_L_COUNT)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("cannot prepare a transaction that consumed or settled messages")));
			/* its state would go at PREPARE, whatever COMMIT PREPARED does */
			if (state_drops_pending())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that deleted a queue or consumer group, or sought a group")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			local_commit(0);
			nlocal = 0;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			local_abort(0);
			nlocal = 0;
			wake_worker_if_wanted();
			break;
		case XACT_EVENT_PREPARE:
			nlocal = 0;
			break;
		default:
			break;
	}
	if (event == XACT_EVENT_ABORT)
		wait_abort();
}

/* Subtransaction end: undo its actions (abort) or pass them up (commit) */
static void
mq_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	int			first = nlocal;

	for (int i = nlocal - 1; i >= 0 && local_actions[i].nest >= level; i--)
		first = i;
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		local_abort(first);
		nlocal = first;
		wake_worker_if_wanted();
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (int i = first; i < nlocal; i++)
			local_actions[i].nest = level - 1;
	}
	state_drops_subxact(event, level);
}

/*
 * Session end: everything this session holds becomes ready at once, but
 * for deliveries not bound to it (mq.consume(session_bound => false)),
 * which stay leased, held by no session, until their lease runs out.
 */
static void
mq_session_exit(int code, Datum arg)
{
	if (mqq_shared == NULL)
		return;

	/*
	 * A transaction still open is aborted after this callback (it was
	 * registered after the one that aborts it, and they run in reverse):
	 * undo it first, so that what it consumed -- bound or not -- is ready
	 * again and what it settled is leased again, as the abort would.
	 */
	if (nlocal > 0)
	{
		local_abort(0);
		nlocal = 0;
	}
	for (int i = 0; i < nleased_queues; i++)
	{
		MqQueueShared *qs = mqq_queue_lock_key(leased_queues[i], NULL);
		dlist_iter	it;
		MqTracked **ts = NULL;
		int			n = 0;
		bool		any = false;

		if (qs == NULL)
			continue;
		dlist_foreach(it, &qs->tracked)
		{
			MqTracked  *t = dlist_container(MqTracked, node, it.cur);

			if (t->owner == MyProc->pgprocno && t->state == MQ_T_LEASED &&
				t->detached)
				t->owner = -1;	/* its lease or a receipt settles it */
			else if (t->owner == MyProc->pgprocno &&
					 (t->state == MQ_T_LEASED || t->state == MQ_T_ACKING))
			{
				release_to_ready(qs, t, MQ_RETURN_SESSION_END);
				any = true;
				/* returned below, all together, in delivery order */
				if (t->returned != 0)
				{
					if (ts == NULL)
						ts = MemoryContextAlloc(TopMemoryContext,
												sizeof(MqTracked *) * qs->ntracked);
					ts[n++] = t;
				}
			}
			if (t->prev_owner == MyProc->pgprocno)
				t->prev_owner = -1;	/* our procno will be someone else's */
		}
		if (ts != NULL)
		{
			mqq_return_together(qs, ts, n);
			pfree(ts);
		}
		LWLockRelease(&qs->lock);
		if (any)
			mqq_wake(qs);
	}
	nleased_queues = 0;
	nlocal = 0;
	wake_worker_if_wanted();
}

/* ---------- shared state dropped when the transaction ends ---------- */

/*
 * The shared state of a deleted group is dropped once the deleting
 * transaction has ended and released its locks, that of a deleted queue
 * once it has committed, before its locks go (see state_drops_release) --
 * not before: a
 * rollback keeps the queue (and its leases), and a consumer may hold the
 * queue's lock while it waits for a lock on one of the queue's relations,
 * which the delete holds until it ends (dropping the state inside the
 * transaction could wait for that consumer forever, an LWLock wait the
 * deadlock detector cannot see).
 */
typedef struct MqStateDrop
{
	int32		queue_id;
	int32		group_id;		/* 0: the queue and its groups */
	int			nest;			/* (sub)transaction that asked for it */
	bool		at_commit;
	bool		at_abort;
} MqStateDrop;

static List *state_drops = NIL; /* in TopMemoryContext */
static bool state_drop_registered = false;

static void
state_drops_release(ResourceReleasePhase phase, bool isCommit, bool isTopLevel,
					void *arg)
{
	ListCell   *lc;

	if ((phase != RESOURCE_RELEASE_BEFORE_LOCKS && phase != RESOURCE_RELEASE_AFTER_LOCKS) ||
		!isTopLevel || state_drops == NIL)
		return;
	foreach(lc, state_drops)
	{
		MqStateDrop *d = lfirst(lc);
		bool		before_locks;

		if (!(isCommit ? d->at_commit : d->at_abort))
			continue;

		/*
		 * A deleted queue's state goes before its object lock is let go
		 * (queue_load.c): whoever waited for that lock then finds no state
		 * and sees that the queue is gone, rather than use the state of a
		 * queue whose tables are gone.  Waiting for its queue locks is safe
		 * then: whoever takes one has taken the object lock first (held by
		 * us), but for the memory-only users (commit and session-end
		 * callbacks), which wait for nothing while they hold it.  A group's
		 * state (group_delete, seek, which take no object lock) waits for
		 * the locks to go, as above.
		 */
		before_locks = isCommit && d->group_id == 0;
		if (before_locks != (phase == RESOURCE_RELEASE_BEFORE_LOCKS))
			continue;
		if (d->group_id == 0)
			mq_queue_state_drop(d->queue_id);
		else
			mq_group_state_drop(d->queue_id, d->group_id);
	}
	if (phase == RESOURCE_RELEASE_AFTER_LOCKS)
	{
		list_free_deep(state_drops);
		state_drops = NIL;
	}
}

/*
 * A subtransaction ended: its drops pass to its parent (commit), or (abort)
 * those asked for at commit are void, and those asked for at abort (state
 * made by it) happen whatever the transaction does then
 */
static void
state_drops_subxact(SubXactEvent event, int nest)
{
	ListCell   *lc;

	foreach(lc, state_drops)
	{
		MqStateDrop *d = lfirst(lc);

		if (d->nest < nest)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			d->nest = nest - 1;
		else if (event == SUBXACT_EVENT_ABORT_SUB && d->at_abort)
		{
			d->at_commit = true;
			d->nest = 0;
		}
		else if (event == SUBXACT_EVENT_ABORT_SUB)
		{
			state_drops = foreach_delete_current(state_drops, lc);
			pfree(d);
		}
	}
}

static bool
state_drops_pending(void)
{
	return state_drops != NIL;
}

void
mq_queue_state_drop_at_end(int32 queue_id, int32 group_id, bool at_commit,
						   bool at_abort)
{
	MemoryContext old;
	MqStateDrop *d;

	mqq_register_callbacks();
	if (!state_drop_registered)
	{
		RegisterResourceReleaseCallback(state_drops_release, NULL);
		state_drop_registered = true;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	d = palloc(sizeof(MqStateDrop));
	d->queue_id = queue_id;
	d->group_id = group_id;
	d->nest = GetCurrentTransactionNestLevel();
	d->at_commit = at_commit;
	d->at_abort = at_abort;
	state_drops = lappend(state_drops, d);
	MemoryContextSwitchTo(old);
}

/* ---------- waiting (backend-local: which queue this backend sleeps on) ---------- */

/* The queue this backend is waiting on, if any */
static MqQueueShared *waiting_on = NULL;
static ConditionVariable *waiting_cv = NULL;

/* Count as waiting on q, and prepare to sleep on its condition variable */
void
mq_queue_prepare_wait(MqQueue *q)
{
	MqQueueShared *qs;

	mqq_register_callbacks();	/* an error while waiting must stop the count */
	qs = mqq_queue_lock(q, LW_EXCLUSIVE);
	qs->nwaiting++;
	LWLockRelease(&qs->lock);
	waiting_on = qs;
	/* a consumer group's consumers wake when its stream is published to */
	waiting_cv = qs->stream ? &qs->stream->cv : &qs->cv;
	ConditionVariablePrepareToSleep(waiting_cv);
}

/*
 * Sleep until q is signalled, the backend is woken (mq_queue_wake), or
 * timeout_ms has passed; false after the timeout.  A plain wait on the
 * latch, not ConditionVariableTimedSleep, which sleeps on until the
 * condition variable itself is signalled: a wake must end it too.  The
 * backend stays in the variable's wakeup list from mq_queue_prepare_wait
 * on, so no broadcast is missed; any other latch set is a spurious wakeup
 * the caller's loop takes in its stride.
 */
bool
mq_queue_wait(MqQueue *q, long timeout_ms)
{
	int			rc;

	Assert(waiting_on != NULL);
	rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				   timeout_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	return (rc & WL_LATCH_SET) != 0;
}

/*
 * Ask the backend proc (of process pid) to return from its mq.consume
 * with what it has, without an error: its slot says so, its latch wakes
 * it.  A wake that comes while it does not wait ends its next wait at
 * once; a slot left by an ended backend names its pid, which no later
 * backend of the slot has.
 */
void
mq_queue_wake(PGPROC *proc, int pid)
{
	pg_atomic_write_u32(&mqq_wakes[proc->pgprocno], (uint32) pid);
	SetLatch(&proc->procLatch);
}

/* Was this backend woken (mq_queue_wake)?  The wake is used up. */
bool
mq_queue_woken(void)
{
	uint32		me = (uint32) MyProcPid;

	if (mqq_wakes == NULL || pg_atomic_read_u32(&mqq_wakes[MyProc->pgprocno]) != me)
		return false;
	return pg_atomic_compare_exchange_u32(&mqq_wakes[MyProc->pgprocno], &me, 0);
}

/* Stop waiting (after mq_queue_prepare_wait); nothing to do when not waiting */
void
mq_queue_cancel_wait(void)
{
	if (waiting_on == NULL)
		return;
	ConditionVariableCancelSleep();
	wait_abort();
}

/*
 * At abort: stop counting as a waiting consumer.  The sleep itself is
 * already cancelled (AbortTransaction runs ConditionVariableCancelSleep).
 */
static void
wait_abort(void)
{
	if (waiting_on == NULL)
		return;
	LWLockAcquire(&waiting_on->lock, LW_EXCLUSIVE);
	waiting_on->nwaiting--;
	LWLockRelease(&waiting_on->lock);
	waiting_on = NULL;
}
