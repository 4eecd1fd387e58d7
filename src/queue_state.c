/*-------------------------------------------------------------------------
 *
 * queue_state.c
 *	  Shared-memory consumer state of classic and quorum queues: scan
 *	  positions, leases, redelivery, settlement and its replay.
 *
 * Invariants, per queue and priority lane:
 *	- every entry before the lane's floor is settled (acked, dead-lettered,
 *	  or written by an aborted transaction);
 *	- every entry between the floor and scan_pos that is not settled is on
 *	  the queue's tracked list (LEASED, READY for redelivery, ACKING by an
 *	  open transaction, or PENDING: its publisher had not finished when we
 *	  scanned it);
 *	- entries at or after scan_pos have not been looked at.
 * Publishers commit out of order, so an entry is never skipped because a
 * later one is already visible: it stays PENDING until its transaction
 * ends, and the floor cannot pass it.  Aborted entries are simply dropped.
 *
 * The tracked list is bounded by what is in flight, not by the backlog or
 * the history.  Settlements go to the settlement log in the settling
 * transaction; every MQ_FLOOR_INTERVAL settlements a FLOOR record per lane
 * is added so that a restart replays only what lies above the floors.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "executor/tuptable.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "queue_ext.h"
#include "am/mqlog.h"
#include "queue/queue_int.h"

/* ---------- backend-local bookkeeping for transaction ends ---------- */

typedef struct MqLocalAction
{
	MqLocalKind kind;
	int			nest;			/* (sub)transaction nesting level */
	MqQueueKey	qkey;
	int64		msg_id;			/* PUBLISH: number of entries */
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

/* ---------- shared memory ---------- */

void
register_callbacks(void)
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

void
local_add(MqLocalKind kind, MqQueueShared *qs, int64 msg_id, bool prev_leased)
{
	if (nlocal == maxlocal)
	{
		maxlocal *= 2;
		local_actions = repalloc(local_actions, sizeof(MqLocalAction) * maxlocal);
	}
	local_actions[nlocal].kind = kind;
	local_actions[nlocal].nest = GetCurrentTransactionNestLevel();
	local_actions[nlocal].qkey = qs->key;
	local_actions[nlocal].msg_id = msg_id;
	local_actions[nlocal].prev_leased = prev_leased;
	nlocal++;
}

void
note_leased_queue(MqQueueKey key)
{
	for (int i = 0; i < nleased_queues; i++)
		if (leased_queues[i].dbid == key.dbid && leased_queues[i].queue_id == key.queue_id)
			return;
	if (leased_queues == NULL)
		leased_queues = MemoryContextAlloc(TopMemoryContext, sizeof(MqQueueKey) * 16);
	else if (nleased_queues % 16 == 0)
		leased_queues = repalloc(leased_queues, sizeof(MqQueueKey) * (nleased_queues + 16));
	leased_queues[nleased_queues++] = key;
}

/* Entries this transaction appended to q so far (counted at commit) */
int64
local_published(MqQueue *q)
{
	int64		n = 0;

	for (int i = 0; i < nlocal; i++)
		if (local_actions[i].kind == MQ_L_PUBLISH &&
			local_actions[i].qkey.queue_id == q->id &&
			local_actions[i].qkey.dbid == MyDatabaseId)
			n += local_actions[i].msg_id;
	return n;
}

/* ---------- transaction and session ends ---------- */

/* Return a message we hold to ready (abort, session end) */
static void
release_to_ready(MqQueueShared *qs, MqTracked *t)
{
	t->state = MQ_T_READY;
	t->owner = -1;
	t->prev_owner = -1;
	t->until = 0;
	t->redelivered = true;
	qs->unacked--;
}

static void
local_commit(int from)
{
	for (int i = from; i < nlocal; i++)
	{
		MqLocalAction *a = &local_actions[i];
		MqQueueShared *qs;
		MqTracked  *t;

		if (a->kind == MQ_L_LEASE)
			continue;
		qs = queue_lock_key(a->qkey);
		if (qs == NULL)
			continue;
		if (a->kind == MQ_L_PUBLISH)
		{
			qs->backlog += a->msg_id;
			LWLockRelease(&qs->lock);
			ConditionVariableBroadcast(&qs->cv);
			continue;
		}
		t = tracked_find(qs, a->msg_id);
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
			if (++qs->settled_since_floor % 64 == 0)
				compact(qs, NULL);
		}
		LWLockRelease(&qs->lock);
	}
}

static void
local_abort(int from)
{
	/* settlements first: they go back to leased */
	for (int pass = 0; pass < 2; pass++)
	{
		for (int i = nlocal - 1; i >= from; i--)
		{
			MqLocalAction *a = &local_actions[i];
			MqQueueShared *qs;
			MqTracked  *t;

			if ((pass == 0) != (a->kind == MQ_L_ACK))
				continue;
			if (a->kind == MQ_L_PUBLISH)
				continue;
			qs = queue_lock_key(a->qkey);
			if (qs == NULL)
				continue;
			t = tracked_find(qs, a->msg_id);
			if (t && t->owner == MyProc->pgprocno)
			{
				if (a->kind == MQ_L_ACK && t->state == MQ_T_ACKING)
					t->state = MQ_T_LEASED;
				else if (a->kind == MQ_L_LEASE && t->own &&
						 (t->state == MQ_T_LEASED || t->state == MQ_T_ACKING))
				{
					/* our own entry, dropped by overflow: its row decides */
					tracked_set_pending(t);
					t->own = false;
					t->owner = -1;
					qs->unacked--;
				}
				else if (a->kind == MQ_L_LEASE &&
						 (t->state == MQ_T_LEASED || t->state == MQ_T_ACKING))
				{
					release_to_ready(qs, t);
					ConditionVariableBroadcast(&qs->cv);
				}
			}
			LWLockRelease(&qs->lock);
		}
	}
}

static void
mq_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			for (int i = 0; i < nlocal; i++)
				if (local_actions[i].kind != MQ_L_PUBLISH)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("cannot prepare a transaction that consumed or settled messages")));
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
			break;
		case XACT_EVENT_PREPARE:
			nlocal = 0;
			break;
		default:
			break;
	}
	if (event == XACT_EVENT_ABORT)
		queue_wait_abort();
}

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
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (int i = first; i < nlocal; i++)
			local_actions[i].nest = level - 1;
	}
}

/* Session end: everything this session holds becomes ready at once */
static void
mq_session_exit(int code, Datum arg)
{
	if (mq_shared == NULL)
		return;
	for (int i = 0; i < nleased_queues; i++)
	{
		MqQueueShared *qs = queue_lock_key(leased_queues[i]);
		dlist_iter	it;
		bool		any = false;

		if (qs == NULL)
			continue;
		dlist_foreach(it, &qs->tracked)
		{
			MqTracked  *t = dlist_container(MqTracked, node, it.cur);

			if (t->owner == MyProc->pgprocno &&
				(t->state == MQ_T_LEASED || t->state == MQ_T_ACKING))
			{
				release_to_ready(qs, t);
				any = true;
			}
			if (t->prev_owner == MyProc->pgprocno)
				t->prev_owner = -1;	/* our procno will be someone else's */
		}
		LWLockRelease(&qs->lock);
		if (any)
			ConditionVariableBroadcast(&qs->cv);
	}
	nleased_queues = 0;
	nlocal = 0;
}

/* ---------- inspection and administration ---------- */

void
mq_queue_counts(MqQueue *q, MqQueueCounts *c)
{
	MqQueueShared *qs;
	TimestampTz now = GetCurrentTimestamp();
	dlist_iter	it;
	int			owners[64];
	int			nowners = 0;
	LaneRels	lr;

	memset(c, 0, sizeof(*c));
	/* a standby has none of a non-durable queue's messages (see queue_lock) */
	if (!q->durable && RecoveryInProgress())
		return;
	qs = queue_lock(q, LW_SHARED);
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_READY && (t->visible_at > now || t->until > now))
			c->delayed++;
		else if (t->state == MQ_T_READY &&
				 (c->oldest_ready == 0 || t->visible_at < c->oldest_ready))
			c->oldest_ready = t->visible_at;
		if (t->state == MQ_T_LEASED && t->owner >= 0)
		{
			bool		seen = false;

			for (int i = 0; i < nowners; i++)
				seen |= owners[i] == t->owner;
			if (!seen && nowners < lengthof(owners))
				owners[nowners++] = t->owner;
		}
	}
	c->total = Max(qs->backlog, 0);
	c->unacked = qs->unacked;
	c->ready = Max(qs->backlog - qs->unacked - c->delayed, 0);
	c->consumers = nowners + qs->nwaiting;
	c->last_delivery = qs->last_delivery;

	/* oldest ready not yet scanned: the first committed entry of a lane */
	lane_rels_init(&lr);
	for (int lane = 0; lane < qs->nlanes && c->ready > 0; lane++)
	{
		uint64		qpos = qs->lanes[lane].scan_pos;
		MqlogRowState st;
		TupleTableSlot *slot;

		while (lane_read_next(&lr, q, qs, &qpos, &st, &slot) == MQLOG_READ_ROW)
		{
			if (st == MQLOG_ROW_COMMITTED && !replayed_settled(qs, qpos))
			{
				bool		isnull;
				TimestampTz v = DatumGetTimestampTz(slot_getattr(slot, MQ_ENTRY_ATT_VISIBLE_AT, &isnull));

				if (c->oldest_ready == 0 || v < c->oldest_ready)
					c->oldest_ready = v;
				break;
			}
			qpos = qpos_next(qpos);
		}
	}
	lane_rels_close(&lr);
	LWLockRelease(&qs->lock);
}

bool
mq_queue_delivery_state(MqQueue *q, int64 msg_id, MqDeliveryState *st)
{
	MqQueueShared *qs = queue_lock(q, LW_SHARED);
	MqTracked  *t = tracked_find(qs, msg_id);
	bool		found = false;

	if (t != NULL && t->delivery_count > 0 &&
		(t->state == MQ_T_LEASED || t->state == MQ_T_READY))
	{
		st->delivery_count = t->delivery_count;
		st->leased = (t->state == MQ_T_LEASED);
		st->until = t->until;
		found = true;
	}
	LWLockRelease(&qs->lock);
	return found;
}

/* Browse: ids of up to n ready messages, in delivery order */
int
mq_queue_peek(MqQueue *q, int n, int64 *msg_ids, int32 *delivery_counts)
{
	MqQueueShared *qs = queue_lock(q, LW_SHARED);
	TimestampTz now = GetCurrentTimestamp();
	int			got = 0;
	LaneRels	lr;

	lane_rels_init(&lr);
	for (int lane = qs->nlanes - 1; lane >= 0 && got < n; lane--)
	{
		TupleTableSlot *slot;
		uint64		qpos;
		MqlogRowState st;
		dlist_iter	it;

		dlist_foreach(it, &qs->tracked)
		{
			MqTracked  *t = dlist_container(MqTracked, node, it.cur);

			if (got >= n)
				break;
			if (mq_qpos_lane(t->qpos) != lane)
				continue;
			if (t->state == MQ_T_READY && t->visible_at <= now && t->until <= now)
			{
				delivery_counts[got] = t->delivery_count;
				msg_ids[got++] = t->msg_id;
			}
			else if (t->state == MQ_T_PENDING &&
					 tracked_row(&lr, q, t, &st, &slot) && st == MQLOG_ROW_COMMITTED)
			{
				/* its publisher committed since a consumer last looked */
				MqTracked	probe;

				tracked_fill(&probe, slot);
				if (probe.visible_at <= now)
				{
					delivery_counts[got] = probe.delivery_count;
					msg_ids[got++] = probe.msg_id;
				}
			}
		}
		qpos = qs->lanes[lane].scan_pos;
		while (got < n && lane_read_next(&lr, q, qs, &qpos, &st, &slot) == MQLOG_READ_ROW)
		{
			if (st == MQLOG_ROW_COMMITTED && !replayed_settled(qs, qpos))
			{
				bool		isnull;

				if (DatumGetTimestampTz(slot_getattr(slot, MQ_ENTRY_ATT_VISIBLE_AT, &isnull)) <= now)
				{
					delivery_counts[got] = 0;
					msg_ids[got++] = DatumGetInt64(slot_getattr(slot, MQ_ENTRY_ATT_MSG_ID, &isnull));
				}
			}
			qpos = qpos_next(qpos);
		}
	}
	lane_rels_close(&lr);
	LWLockRelease(&qs->lock);
	return got;
}

/*
 * Lowest message log segment that an unsettled entry of q refers to: the
 * tracked entries, then every committed entry not scanned yet (this reads
 * the backlog, so it is for maintenance only).  The caller holds an
 * exclusive lock on the segments it wants to drop, so no entry referring
 * to them is still being written.
 */
int64
mq_queue_min_segno(MqQueue *q)
{
	MqQueueShared *qs = queue_lock(q, LW_SHARED);
	int64		min = PG_INT64_MAX;
	dlist_iter	it;
	LaneRels	lr;

	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state != MQ_T_SETTLED && t->msg_id > 0)
			min = Min(min, mq_msgid_segno(t->msg_id));
	}
	lane_rels_init(&lr);
	for (int lane = 0; lane < qs->nlanes; lane++)
	{
		uint64		qpos = qs->lanes[lane].scan_pos;
		MqlogRowState st;
		TupleTableSlot *slot;

		while (lane_read_next(&lr, q, qs, &qpos, &st, &slot) == MQLOG_READ_ROW)
		{
			if (st == MQLOG_ROW_COMMITTED || st == MQLOG_ROW_OWN)
			{
				bool		isnull;

				min = Min(min, mq_msgid_segno(DatumGetInt64(slot_getattr(slot, MQ_ENTRY_ATT_MSG_ID,
																			  &isnull))));
			}
			else if (st == MQLOG_ROW_IN_PROGRESS)
				min = 0;		/* cannot tell yet: keep everything */
			qpos = qpos_next(qpos);
		}
	}
	lane_rels_close(&lr);
	LWLockRelease(&qs->lock);
	return min;
}
