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

int			mq_lane_segment_blocks = 8192;

#define MQ_FLOOR_INTERVAL 1024

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

static MqQueueShared *waiting_on = NULL;

static void tracked_fill(MqTracked *t, TupleTableSlot *slot);
static void tracked_set_pending(MqTracked *t);

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

static void
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

static void
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

/* ---------- floors ---------- */

static uint64
lane_floor(MqQueueShared *qs, int lane)
{
	uint64		f = qs->lanes[lane].scan_pos;
	dlist_iter	it;

	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state != MQ_T_SETTLED && mq_qpos_lane(t->qpos) == lane && t->qpos < f)
			f = t->qpos;
	}
	return f;
}

/*
 * Drop settled entries below their lane's floor; optionally return the
 * floors that moved since they were last written.
 */
static void
compact(MqQueueShared *qs, uint64 *floors)
{
	uint64		f[MQ_MAX_LANES];
	dlist_mutable_iter it;

	for (int lane = 0; lane < qs->nlanes; lane++)
		f[lane] = lane_floor(qs, lane);
	dlist_foreach_modify(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_SETTLED && t->qpos < f[mq_qpos_lane(t->qpos)])
			tracked_free(qs, t);
	}
	if (floors)
		memcpy(floors, f, sizeof(uint64) * qs->nlanes);
}

/* ---------- taking messages ---------- */

static bool
entry_expired(MqQueue *q, MqTracked *t, TimestampTz now)
{
	if (t->expires_at != DT_NOEND && t->expires_at <= now)
		return true;
	if (q->message_ttl_ms >= 0 &&
		t->visible_at + q->message_ttl_ms * 1000 <= now)
		return true;
	return false;
}

static uint32
consumer_hash(const char *consumer)
{
	uint32		h = 0;

	if (consumer)
		for (const char *p = consumer; *p; p++)
			h = h * 31 + (unsigned char) *p;
	return h;
}

/* Copy a committed entry's columns into t, which becomes READY */
static void
tracked_fill(MqTracked *t, TupleTableSlot *slot)
{
	bool		isnull;

	t->msg_id = DatumGetInt64(slot_getattr(slot, MQ_ENTRY_ATT_MSG_ID, &isnull));
	t->visible_at = DatumGetTimestampTz(slot_getattr(slot, MQ_ENTRY_ATT_VISIBLE_AT, &isnull));
	t->expires_at = DatumGetTimestampTz(slot_getattr(slot, MQ_ENTRY_ATT_EXPIRES_AT, &isnull));
	if (isnull)
		t->expires_at = DT_NOEND;
	/* appended again after a nack with delay: it was delivered before */
	t->delivery_count = DatumGetInt32(slot_getattr(slot, MQ_ENTRY_ATT_DELIVERY_COUNT, &isnull));
	if (isnull)
		t->delivery_count = 0;
	t->redelivered = t->delivery_count > 0;
	t->state = MQ_T_READY;
}

/* t waits for its publisher to end; a placeholder id no ack can name */
static void
tracked_set_pending(MqTracked *t)
{
	t->state = MQ_T_PENDING;
	t->msg_id = -(int64) (t->qpos & PG_INT64_MAX) - 1;
}

/*
 * A newly tracked entry as the scan found it: READY when its publisher
 * committed, else PENDING (in progress or our own), looked at again once
 * that transaction has ended.
 */
void
track_examined(MqTracked *t, MqlogRowState st, TupleTableSlot *slot)
{
	if (st != MQLOG_ROW_COMMITTED)
	{
		tracked_set_pending(t);
		return;
	}
	tracked_fill(t, slot);
}

/* Hand t over: lease, auto-ack or dead-letter it */
static void
take_one(MqQueue *q, MqQueueShared *qs, MqTracked *t, TimestampTz now,
		 TimestampTz lease_until, MqTakeMode mode, uint32 chash, MqDelivery *d)
{
	bool		was_ready = (t->state == MQ_T_READY || t->state == MQ_T_PENDING);

	d->msg_id = t->msg_id;
	d->qpos = t->qpos;
	d->dead = false;
	d->dead_reason = NULL;

	if (mode == MQ_TAKE_DROP_HEAD)
	{
		d->dead = true;
		d->dead_reason = "maxlen";
	}
	else if (mode == MQ_TAKE_EXPIRE)
	{
		d->dead = true;
		d->dead_reason = "expired";
	}
	else if (entry_expired(q, t, now))
	{
		d->dead = true;
		d->dead_reason = "expired";
	}
	else if (q->delivery_limit >= 0 && t->delivery_count > q->delivery_limit)
	{
		d->dead = true;
		d->dead_reason = "delivery_limit";
	}

	if (!d->dead)
	{
		t->delivery_count++;
		if (t->delivery_count > 1)
			t->redelivered = true;
	}
	d->redelivered = t->redelivered;
	d->delivery_count = t->delivery_count;

	t->owner = MyProc->pgprocno;
	t->prev_owner = -1;
	t->consumer_hash = chash;
	if (was_ready)
		qs->unacked++;
	if (d->dead || mode == MQ_TAKE_AUTO_ACK)
	{
		t->state = MQ_T_ACKING;
		local_add(MQ_L_LEASE, qs, t->msg_id, false);
		local_add(MQ_L_ACK, qs, t->msg_id, false);
	}
	else
	{
		t->state = MQ_T_LEASED;
		t->until = lease_until;
		local_add(MQ_L_LEASE, qs, t->msg_id, false);
		qs->last_delivery = now;
	}
	note_leased_queue(qs->key);
}

/*
 * Examine the entry at a lane's scan position and advance past it.  Sets
 * *end (returning NULL) at the end of the lane or when no tracking slot is
 * free.  Returns the new tracked entry, or NULL for one to ignore (aborted,
 * or settled before a restart).  With expire_before != 0 (head expiry),
 * stops instead at the first entry that is uncommitted or not expired,
 * leaving it unscanned.
 */
static MqTracked *
scan_next(MqQueue *q, MqQueueShared *qs, int lane, LaneRels *lr,
		  TimestampTz expire_before, bool *end)
{
	MqLaneState *ls = &qs->lanes[lane];
	uint64		qpos = ls->scan_pos;
	MqlogRowState st;
	TupleTableSlot *slot;
	MqTracked  *t;

	*end = false;
	if (lane_read_next(lr, q, qs, &qpos, &st, &slot) == MQLOG_READ_END)
	{
		ls->scan_pos = qpos;
		*end = true;
		return NULL;
	}
	if (st == MQLOG_ROW_ABORTED)
	{
		ls->scan_pos = qpos_next(qpos);
		return NULL;
	}

	/*
	 * After a restart, entries settled above the floor are tracked as
	 * SETTLED by the replay: the scan must pass over them, not deliver them
	 * again.
	 */
	if (replayed_settled(qs, qpos))
	{
		qs->nreplayed--;
		ls->scan_pos = qpos_next(qpos);
		return NULL;
	}
	if (expire_before != 0)
	{
		MqTracked	probe;

		if (st != MQLOG_ROW_COMMITTED)
		{
			*end = true;
			return NULL;
		}
		tracked_fill(&probe, slot);
		if (!entry_expired(q, &probe, expire_before))
		{
			*end = true;
			return NULL;
		}
	}
	t = track_new(qs, qpos);
	if (t == NULL)
	{
		*end = true;
		return NULL;
	}
	ls->scan_pos = qpos_next(qpos);
	track_examined(t, st, slot);
	return t;
}

/*
 * Collect the delivery records a restart needs for the deliveries just
 * made (qs->lock held; the caller writes them once it is released, before
 * the messages reach the consumer): one DELIVERED per message on queues
 * that count deliveries, else a MARK when deliveries come near the last.
 */
static void
note_deliveries(MqQueue *q, MqQueueShared *qs, MqDelivery *out, int n,
				MqSettleBatch *records)
{
	bool		counted = queue_counts_deliveries(q);

	mq_settle_batch_init(records, q);
	records->frozen = true;
	for (int i = 0; i < n; i++)
	{
		MqLaneState *ls = &qs->lanes[mq_qpos_lane(out[i].qpos)];

		if (out[i].dead)
			continue;			/* dead-lettered by the caller, not delivered */
		if (counted)
			mq_settle_batch_add(records, MQ_SETTLE_DELIVERED, out[i].qpos);
		else if (out[i].qpos + MQ_MARK_AHEAD / 2 > ls->mark)
		{
			ls->mark = out[i].qpos + MQ_MARK_AHEAD;
			mq_settle_batch_add(records, MQ_SETTLE_MARK, ls->mark);
		}
	}
}

/*
 * Read the entry row of tracked entry t again (a PENDING one, to see how
 * its publisher ended): false if the row is gone (its generation dropped).
 */
static bool
tracked_row(LaneRels *lr, MqQueue *q, MqTracked *t, MqlogRowState *st,
			TupleTableSlot **slot)
{
	ItemPointerData tid;
	Relation	rel = lane_rel(lr, q, mq_qpos_lane(t->qpos), mq_qpos_gen(t->qpos), slot);

	mq_qpos_tid(t->qpos, &tid);
	return rel != NULL && mqlog_fetch_row(rel, &tid, st, *slot);
}

/*
 * x-max-length must hold once the transaction commits, so overflow
 * (drop-head) also drops the transaction's own entries, oldest first, once
 * no committed one is left: fill t from its row if the row is ours (the
 * caller takes it at once).  On abort it goes back to PENDING (local_abort).
 */
static bool
own_entry_fill(LaneRels *lr, MqQueue *q, MqTracked *t)
{
	MqlogRowState st;
	TupleTableSlot *slot;

	if (!tracked_row(lr, q, t, &st, &slot) || st != MQLOG_ROW_OWN)
		return false;
	tracked_fill(t, slot);
	t->own = true;
	return true;
}

/* Earliest time a tracked entry becomes deliverable, from the last take */
static TimestampTz next_due = 0;

TimestampTz
mq_queue_next_due(void)
{
	return next_due;
}

int
mq_queue_take(MqQueue *q, int n, TimestampTz lease_until, MqTakeMode mode,
			  const char *consumer, int prefetch, MqDelivery *out)
{
	MqQueueShared *qs = queue_lock(q, LW_EXCLUSIVE);
	TimestampTz now = GetCurrentTimestamp();
	uint32		chash = consumer_hash(consumer);
	int			got = 0;
	bool		wake = false;
	LaneRels	lr;
	MqSettleBatch records;

	next_due = 0;

	/* prefetch: unacked deliveries held by this consumer */
	if (prefetch > 0 && mode != MQ_TAKE_DROP_HEAD && mode != MQ_TAKE_EXPIRE)
	{
		int			held = 0;
		dlist_iter	it;

		dlist_foreach(it, &qs->tracked)
		{
			MqTracked  *t = dlist_container(MqTracked, node, it.cur);

			if (t->state == MQ_T_LEASED && t->owner == MyProc->pgprocno &&
				t->consumer_hash == chash)
				held++;
		}
		n = Min(n, prefetch - held);
	}

	lane_rels_init(&lr);
	for (int lane = qs->nlanes - 1; lane >= 0 && got < n; lane--)
	{
		dlist_iter	it;

		/* First what we already track: redeliveries, late commits */
		dlist_foreach(it, &qs->tracked)
		{
			MqTracked  *t = dlist_container(MqTracked, node, it.cur);

			if (got >= n)
				break;
			if (mq_qpos_lane(t->qpos) != lane)
				continue;
			if (t->state == MQ_T_PENDING)
			{
				MqlogRowState st;
				TupleTableSlot *slot;

				if (!tracked_row(&lr, q, t, &st, &slot) || st == MQLOG_ROW_ABORTED)
				{
					t->state = MQ_T_SETTLED;
					continue;
				}
				if (st == MQLOG_ROW_OWN && mode == MQ_TAKE_DROP_HEAD)
				{
					/* taken below, at once: never READY for others to see */
					tracked_fill(t, slot);
					t->own = true;
					take_one(q, qs, t, now, lease_until, mode, chash, &out[got++]);
					continue;
				}
				if (st != MQLOG_ROW_COMMITTED)
					continue;
				tracked_fill(t, slot);
			}
			if (t->state == MQ_T_LEASED && t->until <= now)
			{
				/* lease expired: back to ready, redelivered */
				t->state = MQ_T_READY;
				t->prev_owner = t->owner;
				t->owner = -1;
				t->until = 0;
				t->redelivered = true;
				qs->unacked--;
				wake = true;
			}
			if (t->state != MQ_T_READY)
				continue;
			if (t->until > now || t->visible_at > now)
			{
				TimestampTz due = Max(t->until, t->visible_at);

				if (next_due == 0 || due < next_due)
					next_due = due;
				continue;
			}
			if (mode == MQ_TAKE_EXPIRE && !entry_expired(q, t, now))
			{
				wake = true;	/* a ready message: consumers may be waiting */
				continue;
			}
			take_one(q, qs, t, now, lease_until, mode, chash, &out[got++]);
		}

		/* Then new entries from the scan position on */
		while (got < n)
		{
			MqTracked  *t;
			bool		end;

			t = scan_next(q, qs, lane, &lr, mode == MQ_TAKE_EXPIRE ? now : 0, &end);
			if (end)
			{
				if (t == NULL && got == 0 && qs->ntracked > 0 && mq_shared->nfree == 0)
					ereport(WARNING,
							(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
							 errmsg("queue_ext is tracking mq.max_in_flight = %d messages; queue \"%s\" waits for settlements",
									mq_max_tracked, q->name)));
				break;
			}
			if (t != NULL && t->state == MQ_T_PENDING && mode == MQ_TAKE_DROP_HEAD &&
				own_entry_fill(&lr, q, t))
			{
				take_one(q, qs, t, now, lease_until, mode, chash, &out[got++]);
				continue;
			}
			if (t == NULL || t->state != MQ_T_READY)
				continue;
			if (t->visible_at > now)
			{
				/* delayed: stays tracked until due */
				if (next_due == 0 || t->visible_at < next_due)
					next_due = t->visible_at;
				continue;
			}
			take_one(q, qs, t, now, lease_until, mode, chash, &out[got++]);
		}
	}
	lane_rels_close(&lr);
	note_deliveries(q, qs, out, got, &records);
	LWLockRelease(&qs->lock);
	if (wake)
		ConditionVariableBroadcast(&qs->cv);
	if (records.n > 0)
		mq_settle_batch_flush(&records);
	return got;
}

/* ---------- settling ---------- */

MqSettleResult
mq_queue_settle(MqQueue *q, int64 msg_id, MqSettleOp op, TimestampTz when,
				uint64 *qpos, int32 *delivery_count, TimestampTz *expires_at)
{
	MqQueueShared *qs = queue_lock(q, LW_EXCLUSIVE);
	MqTracked  *t = tracked_find(qs, msg_id);
	TimestampTz now = GetCurrentTimestamp();

	if (t && t->state == MQ_T_READY && t->prev_owner == MyProc->pgprocno)
	{
		/* our lease ran out but nobody has taken the message since: ours */
		t->state = MQ_T_LEASED;
		t->owner = MyProc->pgprocno;
		t->prev_owner = -1;
		t->until = now;
		qs->unacked++;
	}
	if (t == NULL || (t->state != MQ_T_LEASED))
	{
		LWLockRelease(&qs->lock);
		return MQ_SETTLE_NOT_FOUND;
	}
	if (t->owner != MyProc->pgprocno)
	{
		LWLockRelease(&qs->lock);
		return MQ_SETTLE_NOT_OWNER;
	}
	*qpos = t->qpos;
	*delivery_count = t->delivery_count;
	if (expires_at)
		*expires_at = t->expires_at;
	switch (op)
	{
		case MQ_SETTLE_OP_ACK:
		case MQ_SETTLE_OP_DEAD:
		case MQ_SETTLE_OP_RETRY:
			t->state = MQ_T_ACKING;
			local_add(MQ_L_ACK, qs, msg_id, true);
			break;
		case MQ_SETTLE_OP_REQUEUE:
			t->state = MQ_T_READY;
			t->owner = -1;
			t->prev_owner = -1;
			t->until = when > now ? when : 0;
			t->redelivered = true;
			qs->unacked--;
			ConditionVariableBroadcast(&qs->cv);
			break;
		case MQ_SETTLE_OP_EXTEND:
			t->until = when;
			break;
	}
	LWLockRelease(&qs->lock);
	return MQ_SETTLE_OK;
}

/*
 * Called by the settling code after it appended settlement records: every
 * MQ_FLOOR_INTERVAL settlements, record each lane's floor so that a restart
 * replays only what lies above it.
 */
void
mq_queue_write_floors(MqQueue *q)
{
	MqQueueShared *qs = queue_lock(q, LW_EXCLUSIVE);
	uint64		floors[MQ_MAX_LANES];
	int			nlanes = qs->nlanes;
	bool		due = qs->settled_since_floor >= MQ_FLOOR_INTERVAL;

	if (due)
	{
		compact(qs, floors);
		qs->settled_since_floor = 0;
	}
	LWLockRelease(&qs->lock);
	if (!due)
		return;
	for (int lane = 0; lane < nlanes; lane++)
	{
		if (floors[lane] > qs->lanes[lane].floor_written)
		{
			mq_settle_append(q, MQ_SETTLE_FLOOR, floors[lane]);
			qs->lanes[lane].floor_written = floors[lane];
		}
	}
}

/* ---------- publishing ---------- */

/*
 * Appending entries to a lane.  The generation is read and the rows are
 * written under gen_lock in shared mode, so the worker's switch to a new
 * generation (exclusive) never overlaps an append: once a reader sees the
 * switch, the old generation is complete.
 *
 * queue_append_begin returns the entry log of the lane's write generation,
 * holding gen_lock in shared mode until queue_append_end().
 */
static Oid
queue_append_begin(MqQueue *q, int lane, int *gen, MqQueueShared **qsp)
{
	MqQueueShared *qs = queue_lock(q, LW_SHARED);
	Oid			relid;

	LWLockRelease(&qs->lock);
	LWLockAcquire(&qs->gen_lock, LW_SHARED);
	*gen = qs->lanes[lane].write_gen;
	relid = mq_lane_relid(q->id, lane, *gen, false);
	if (!OidIsValid(relid))
	{
		/* a generation created since we last looked: refresh the caches */
		AcceptInvalidationMessages();
		relid = mq_lane_relid(q->id, lane, *gen, false);
	}
	if (!OidIsValid(relid))
	{
		LWLockRelease(&qs->gen_lock);
		elog(ERROR, "entry log of queue \"%s\" lane %d generation %d does not exist",
			 q->name, lane, *gen);
	}
	*qsp = qs;
	return relid;
}

/* End an append of n entries: they count in the backlog when we commit */
static void
queue_append_end(MqQueueShared *qs, int n)
{
	LWLockRelease(&qs->gen_lock);
	local_add(MQ_L_PUBLISH, qs, n, false);
}

void
mq_queue_append(MqQueue *q, int lane, MqEntry *entries, int n)
{
	uint64	   *qpos = palloc(sizeof(uint64) * n);
	MqQueueShared *qs;
	int			gen;
	Oid			relid = queue_append_begin(q, lane, &gen, &qs);

	mq_entry_append(relid, lane, gen, entries, n, qpos);
	queue_append_end(qs, n);
	pfree(qpos);
}

void
mq_queue_publish_one(MqQueue *q, int lane, MqMessage *msg, MqEntry *entry,
					 bool durable)
{
	int64		segno;
	Relation	seg;
	MqQueueShared *qs;
	int			gen;
	Oid			relid;
	uint64		qpos;

	/* first: a full segment is replaced by DDL, not to be run under gen_lock */
	seg = mq_log_open_append(durable, &segno);
	relid = queue_append_begin(q, lane, &gen, &qs);
	mq_log_append_linked(seg, segno, msg, relid, lane, gen, entry, &qpos);
	queue_append_end(qs, 1);
	table_close(seg, NoLock);
}

/*
 * Called by the maintenance worker for each queue, in its transaction:
 * - switch a lane to its next generation once that exists (it was created
 *   and committed in an earlier pass), so appends move on;
 * - create the next generation when the current one is large;
 * - drop old generations that are entirely below the lane's floor.
 */
void
mq_queue_rotate(MqQueue *q)
{
	MqQueueShared *qs = queue_lock(q, LW_SHARED);
	int			nlanes = qs->nlanes;

	LWLockRelease(&qs->lock);
	for (int lane = 0; lane < nlanes; lane++)
	{
		MqLaneState *ls = &qs->lanes[lane];
		int			write_gen = ls->write_gen;

		if (write_gen < MQ_QPOS_MAX_GEN &&
			OidIsValid(mq_lane_relid(q->id, lane, write_gen + 1, false)))
		{
			LWLockAcquire(&qs->gen_lock, LW_EXCLUSIVE);
			LWLockAcquire(&qs->lock, LW_EXCLUSIVE);
			if (ls->write_gen == write_gen)
				ls->write_gen = write_gen + 1;
			LWLockRelease(&qs->lock);
			LWLockRelease(&qs->gen_lock);
		}
		else if (write_gen < MQ_QPOS_MAX_GEN)
		{
			Oid			relid = mq_lane_relid(q->id, lane, write_gen, false);
			Relation	rel = OidIsValid(relid) ? try_table_open(relid, AccessShareLock) : NULL;

			if (rel)
			{
				BlockNumber nblocks = RelationGetNumberOfBlocks(rel);

				table_close(rel, AccessShareLock);
				if (nblocks >= (BlockNumber) mq_lane_segment_blocks)
					mq_lane_create(q, lane, write_gen + 1);
			}
		}

		/* drop generations every entry of which is settled */
		for (;;)
		{
			int			low;
			uint64		floor;

			LWLockAcquire(&qs->lock, LW_SHARED);
			low = ls->low_gen;
			floor = lane_floor(qs, lane);
			LWLockRelease(&qs->lock);
			if (low >= ls->write_gen || floor < mq_qpos_gen_start(lane, low + 1))
				break;
			{
				Oid			qrel = mq_lane_relid(q->id, lane, low, false);
				Oid			srel = mq_lane_relid(q->id, lane, low, true);

				/* nobody may be reading them; try again later if busy */
				if ((OidIsValid(qrel) && !ConditionalLockRelationOid(qrel, AccessExclusiveLock)) ||
					(OidIsValid(srel) && !ConditionalLockRelationOid(srel, AccessExclusiveLock)))
					break;
				mq_lane_drop(q->id, lane, low);
			}
			LWLockAcquire(&qs->lock, LW_EXCLUSIVE);
			if (ls->low_gen == low)
				ls->low_gen = low + 1;
			LWLockRelease(&qs->lock);
		}
	}
}

/* Ready messages of q as they will be once this transaction commits (x-max-length) */
int64
mq_queue_ready_for_publish(MqQueue *q)
{
	MqQueueShared *qs = queue_lock(q, LW_SHARED);
	int64		own_dropped = 0;
	int64		ready;
	dlist_iter	it;

	/*
	 * Our own entries dropped by overflow are in unacked (they are ACKING)
	 * but not yet in the backlog: count them apart.
	 */
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->own && t->state == MQ_T_ACKING && t->owner == MyProc->pgprocno)
			own_dropped++;
	}
	ready = Max(qs->backlog - (qs->unacked - own_dropped), 0) - own_dropped;
	LWLockRelease(&qs->lock);
	/* plus what this transaction already published to q */
	for (int i = 0; i < nlocal; i++)
		if (local_actions[i].kind == MQ_L_PUBLISH &&
			local_actions[i].qkey.queue_id == q->id &&
			local_actions[i].qkey.dbid == MyDatabaseId)
			ready += local_actions[i].msg_id;
	return ready;
}

/* ---------- waiting ---------- */

void
mq_queue_prepare_wait(MqQueue *q)
{
	MqQueueShared *qs = queue_lock(q, LW_EXCLUSIVE);

	qs->nwaiting++;
	LWLockRelease(&qs->lock);
	waiting_on = qs;
	ConditionVariablePrepareToSleep(&qs->cv);
}

bool
mq_queue_wait(MqQueue *q, long timeout_ms)
{
	Assert(waiting_on != NULL);
	return !ConditionVariableTimedSleep(&waiting_on->cv, timeout_ms,
										PG_WAIT_EXTENSION);
}

void
mq_queue_cancel_wait(void)
{
	if (waiting_on == NULL)
		return;
	ConditionVariableCancelSleep();
	LWLockAcquire(&waiting_on->lock, LW_EXCLUSIVE);
	waiting_on->nwaiting--;
	LWLockRelease(&waiting_on->lock);
	waiting_on = NULL;
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
	if (event == XACT_EVENT_ABORT && waiting_on != NULL)
	{
		/* ConditionVariableCancelSleep already ran in AbortTransaction */
		LWLockAcquire(&waiting_on->lock, LW_EXCLUSIVE);
		waiting_on->nwaiting--;
		LWLockRelease(&waiting_on->lock);
		waiting_on = NULL;
	}
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
