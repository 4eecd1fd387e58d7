/*-------------------------------------------------------------------------
 *
 * queue_take.c
 *	  Taking messages from a queue: the scan of its lanes, leases,
 *	  prefetch, delivery records, and waiting for something to take.
 *
 * A take hands out, highest priority lane first, what is already tracked
 * and ready (redeliveries, expired leases, entries whose publisher has
 * committed since), then advances the lane's scan position over new
 * entries.  The correctness rule of the design is kept here: publishers
 * commit out of order, so an entry whose publisher is still in progress
 * is tracked as PENDING and looked at again later, never skipped because
 * a later one is visible already; an aborted one is dropped for good.
 *
 * What a restart must know of the deliveries made (DELIVERED or MARK
 * records) is collected under the queue lock and written once it is
 * released, before the messages reach the consumer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "lib/qunique.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/proc.h"

#include "filter.h"
#include "queue/queue_int.h"

/*
 * Nonces of receipts: 64 random bits per delivery, from pg_strong_random
 * (so that a receipt cannot be guessed from others), drawn in blocks to
 * keep the call out of the per-message path.
 */
#define MQ_NONCE_BLOCK 64
static uint64 nonces[MQ_NONCE_BLOCK];
static int	nnonces = 0;

static uint64
receipt_nonce(void)
{
	uint64		r;

	if (nnonces == 0)
	{
		if (!pg_strong_random(nonces, sizeof(nonces)))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate random receipts")));
		nnonces = MQ_NONCE_BLOCK;
	}
	r = nonces[--nnonces];
	return r != 0 ? r : 1;		/* 0 means "no receipt" */
}

/* The queue this backend waits on, between prepare_wait and cancel_wait */

/* Earliest time a tracked entry becomes deliverable, from the last take */
static TimestampTz next_due = 0;

/* The last take's answer for mq_queue_leases_ran_out */
static bool leases_ran_out = false;

/* The earliest lease end still to come, from the last take (0: none) */
static TimestampTz next_lease_end = 0;

int64		mq_stat_tag_skipped = 0;

/*
 * Hash of a consumer name: a tracked entry remembers its holder's consumer
 * by this hash, and prefetch counts this backend's leases with the same one.
 *
 * XXX Two consumer names of one session whose hashes collide share one
 * prefetch count; names themselves would cost shared memory per entry.
 */
static uint32
consumer_hash(const char *consumer)
{
	uint32		h = 0;

	if (consumer)
		for (const char *p = consumer; *p; p++)
			h = h * 31 + (unsigned char) *p;
	return h;
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
	d->expires_at = t->expires_at;
	d->offset = t->offset;
	d->receipt = 0;

	if (mode == MQ_TAKE_DROP_HEAD)
	{
		d->dead = true;
		d->dead_reason = "maxlen";
	}
	else if (mqq_entry_expired(q, t, now))
	{
		d->dead = true;
		d->dead_reason = "expired";
	}
	else if (mqq_over_delivery_limit(q->delivery_limit, t))
	{
		/* returned without the catalog at hand (session end, abort) */
		d->dead = true;
		d->dead_reason = "delivery_limit";
	}
	else if (mode == MQ_TAKE_EXPIRE)
	{
		d->dead = true;
		d->dead_reason = "expired";
	}

	if (!d->dead)
	{
		t->delivery_count++;
		if (t->delivery_count > 1)
			t->redelivered = true;
		/* a delivery happened, whatever becomes of the transaction */
		qs->counters.n[MQ_C_DELIVERED]++;
		if (t->redelivered)
			qs->counters.n[MQ_C_REDELIVERED]++;
	}
	d->redelivered = t->redelivered;
	d->delivery_count = t->delivery_count;
	if (d->dead)
		t->returned = 0;
	else
		mqq_tracked_delivered(qs, t);

	t->owner = MyProc->pgprocno;
	t->prev_owner = -1;
	t->consumer_hash = chash;
	if (was_ready)
		qs->unacked++;
	if (d->dead || mode == MQ_TAKE_AUTO_ACK)
	{
		t->state = MQ_T_ACKING;
		mqq_local_add(MQ_L_LEASE, qs, t->msg_id, false);
		mqq_local_add(MQ_L_ACK, qs, t->msg_id, false);
	}
	else
	{
		t->state = MQ_T_LEASED;
		t->until = lease_until;
		t->receipt = d->receipt = receipt_nonce();
		t->detached = mode == MQ_TAKE_LEASE_DETACHED;
		t->lease_pid = MyProcPid;
		t->lease_lxid = MyProc->lxid;
		mqq_local_add(MQ_L_LEASE, qs, t->msg_id, false);
		qs->last_delivery = now;
	}
	mqq_note_leased_queue(qs->key);
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
scan_next_entry(MqQueue *q, MqQueueShared *qs, int lane, LaneRels *lr,
				TimestampTz expire_before, const MqFilter *skip, MqSettleBatch *skips,
				bool *end)
{
	MqLaneState *ls = &qs->lanes[lane];
	uint64		qpos = ls->scan_pos;
	MqlogRowState st;
	TupleTableSlot *slot;
	MqTracked  *t;

	*end = false;
	if (mqq_lane_read_next(lr, q, qs, &qpos, &st, &slot) == MQLOG_READ_END)
	{
		ls->scan_pos = qpos;
		*end = true;
		return NULL;
	}

	/*
	 * The read went on into a later generation: the scan's one is closed
	 * and read to its end.  The scan is past it even if it stops before
	 * this entry (head expiry does, at one that has not expired), so that
	 * rotation can drop it once its entries are settled.  Else a generation
	 * read to its end before the lane moved on to the next one would stay
	 * until a consumer's scan came by.
	 */
	if (mq_qpos_gen(qpos) != mq_qpos_gen(ls->scan_pos))
		ls->scan_pos = mq_qpos_gen_start(lane, mq_qpos_gen(qpos));
	if (st == MQLOG_ROW_ABORTED)
	{
		ls->scan_pos = mqq_qpos_next(qpos);
		return NULL;
	}

	/*
	 * An entry tracked ahead of the scan: settled above the floor before a
	 * restart (SETTLED by the replay), or taken by id before the scan got
	 * here (mq_queue_lease_ids).  The scan passes over it as it is now,
	 * never tracking it twice: a settled one is not delivered again, a
	 * ready one is the caller's as a new entry would be.  Head expiry
	 * stops at one that has not expired, as at any other.
	 */
	t = mqq_tracked_ahead(qs, qpos);
	if (t != NULL)
	{
		if (expire_before != 0 && t->state != MQ_T_SETTLED &&
			!mqq_entry_expired(q, t, expire_before))
		{
			*end = true;
			return NULL;
		}
		qs->nahead--;
		ls->scan_pos = mqq_qpos_next(qpos);
		mqq_passed_ahead(qs, lane);
		return t->state == MQ_T_SETTLED ? NULL : t;
	}
	if (expire_before != 0)
	{
		MqTracked	probe;

		if (st != MQLOG_ROW_COMMITTED)
		{
			*end = true;
			return NULL;
		}
		mqq_tracked_fill(&probe, slot);
		if (!mqq_entry_expired(q, &probe, expire_before))
		{
			*end = true;
			return NULL;
		}
	}

	/*
	 * A consumer group's tag filter: an entry whose tag hash no tag of the
	 * filter has is settled for the group at once, without reading its
	 * message and without tracking it (see skip_tracked).
	 */
	if (skip != NULL && st == MQLOG_ROW_COMMITTED &&
		slot->tts_tupleDescriptor->natts >= MQ_ENTRY_ATT_TAG_HASH)
	{
		bool		isnull;
		Datum		h = slot_getattr(slot, MQ_ENTRY_ATT_TAG_HASH, &isnull);

		if (!mq_filter_tag_hash_may_match(skip, isnull ? MQ_TAG_HASH_NONE :
										  (uint32) DatumGetInt32(h)))
		{
			int64		off = mqq_entry_offset(slot, st);

			ls->scan_pos = mqq_qpos_next(qpos);
			if (off >= 0)
				ls->scan_offset = off + 1;
			mq_settle_batch_add(skips, MQ_SETTLE_ACK, qpos);
			qs->settled_since_floor++;
			qs->counters.n[MQ_C_FILTERED]++;
			return NULL;
		}
	}
	t = mqq_track_new(qs, qpos);
	if (t == NULL)
	{
		*end = true;
		return NULL;
	}
	ls->scan_pos = mqq_qpos_next(qpos);
	mqq_track_examined(t, st, slot);
	if (t->offset >= 0)
		ls->scan_offset = t->offset + 1;	/* consumer groups' progress */
	return t;
}

/*
 * scan_next_entry; a scan that moved may have passed the lane's first
 * ready entry that mq.queues recorded (MqQueueShared.oldest_known)
 */
static MqTracked *
scan_next(MqQueue *q, MqQueueShared *qs, int lane, LaneRels *lr,
		  TimestampTz expire_before, const MqFilter *skip, MqSettleBatch *skips,
		  bool *end)
{
	uint64		scan_pos = qs->lanes[lane].scan_pos;
	MqTracked  *t = scan_next_entry(q, qs, lane, lr, expire_before, skip, skips, end);

	if (qs->lanes[lane].scan_pos != scan_pos)
		qs->oldest_known = false;
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
	bool		counted = mqq_counts_deliveries(q);
	uint64		last[MQ_MAX_LANES];

	mq_settle_batch_init(records, q);
	records->frozen = true;
	memset(last, 0, sizeof(uint64) * qs->nlanes);
	for (int i = 0; i < n; i++)
	{
		if (out[i].dead)
			continue;			/* dead-lettered by the caller, not delivered */
		if (counted)
			mq_settle_batch_add(records, MQ_SETTLE_DELIVERED, out[i].qpos);
		else
			last[mq_qpos_lane(out[i].qpos)] = Max(last[mq_qpos_lane(out[i].qpos)],
												  out[i].qpos);
	}
	/* one MARK per lane at most, after the furthest delivery of the call */
	for (int lane = 0; lane < qs->nlanes && !counted; lane++)
	{
		MqLaneState *ls = &qs->lanes[lane];

		if (last[lane] != 0 && last[lane] + MQ_MARK_AHEAD / 2 > ls->mark)
		{
			ls->mark = last[lane] + MQ_MARK_AHEAD;
			mq_settle_batch_add(records, MQ_SETTLE_MARK, ls->mark);
		}
	}
}

/*
 * Read the entry row of tracked entry t again (a PENDING one, to see how
 * its publisher ended): false if the row is gone (its generation dropped).
 */
bool
mqq_tracked_row(LaneRels *lr, MqQueue *q, MqTracked *t, MqlogRowState *st,
				TupleTableSlot **slot)
{
	ItemPointerData tid;
	Relation	rel = mqq_lane_rel(lr, q, mq_qpos_lane(t->qpos), mq_qpos_gen(t->qpos), slot);

	mq_qpos_tid(t->qpos, &tid);
	return rel != NULL &&
		mqlog_fetch_row_cached(rel, &tid, st, *slot, mqq_lane_rel_cache(lr, rel));
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

	if (!mqq_tracked_row(lr, q, t, &st, &slot) || st != MQLOG_ROW_OWN)
		return false;
	mqq_tracked_fill(t, slot);
	t->own = true;
	return true;
}

/* Earliest due time of a delayed message seen by the last take (0: none) */
TimestampTz
mq_queue_next_due(void)
{
	return next_due;
}

/*
 * Did leases of the queue run out, making their messages ready, since its
 * previous expiry take?  Answered by the last take if it was an expiry
 * take (MQ_TAKE_EXPIRE: the worker's, mq_maintain_queue), else false.
 * Leases run out in any take (a consumer's, a take by id) and the worker
 * notifies once for all of them (mq_notify_ready): a consumer may have
 * taken such a message again meanwhile, so the notification may find
 * nothing to read, as pgmq's notification of a send may.
 */
bool
mq_queue_leases_ran_out(void)
{
	return leases_ran_out;
}

/*
 * When the first lease of the queue still running ends (0: none), as the
 * last take saw it: the worker wakes then for a queue with a notification
 * channel, so that a LISTENer learns of the message soon (mq_maintain_queue)
 */
TimestampTz
mq_queue_next_lease_end(void)
{
	return next_lease_end;
}

/*
 * Is the transaction that took detached lease t still open?  Such a lease
 * does not run out before that transaction ends: a visibility timeout
 * (pgmq's read, SQS) shorter than the reading transaction must not hand
 * the message to another reader while the first may still commit its
 * work, and a rollback returns it anyway.  Session-bound leases run out
 * on time (RabbitMQ's consumer timeout).  The holder's PGPROC is read
 * without a lock: a stale lxid only makes the lease run out a pass later.
 */
static bool
lease_taker_open(MqTracked *t)
{
	PGPROC	   *proc;

	if (!t->detached || t->owner < 0 || t->lease_lxid == InvalidLocalTransactionId)
		return false;
	proc = GetPGProcByNumber(t->owner);
	return proc->pid == t->lease_pid && proc->lxid == t->lease_lxid;
}

/*
 * Leases that ran out return their messages to ready, redelivered (queue
 * lock held), before anything is taken; on a quorum queue they join the
 * returns in the order they were delivered.  True if any did.  Notes the
 * first lease end still to come (mq_queue_next_lease_end).
 */
static bool
expire_leases(MqQueueShared *qs, TimestampTz now, MqSettleBatch *retries)
{
	MqTracked **ts = NULL;
	int			n = 0;
	dlist_iter	it;

	next_lease_end = 0;
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_LEASED && t->until > now &&
			(next_lease_end == 0 || t->until < next_lease_end))
			next_lease_end = t->until;
		if (t->state != MQ_T_LEASED || t->until > now)
			continue;
		if (lease_taker_open(t))
			continue;
		t->state = MQ_T_READY;
		t->last_return = MQ_RETURN_LEASE;
		t->prev_owner = t->owner;
		t->owner = -1;
		/* a consumer group retries after its backoff (RocketMQ) */
		t->until = mqq_retry_until(qs, t->delivery_count, t->free_returns, now);
		/* and it must not come back earlier after a restart */
		if (t->until > now)
			mq_settle_batch_add_arg(retries, MQ_SETTLE_RETRY_AT, t->qpos, t->until);
		t->redelivered = true;
		qs->unacked--;
		qs->leases_ran_out = true;
		if (qs->returns_first)
		{
			if (ts == NULL)
				ts = palloc(sizeof(MqTracked *) * qs->ntracked);
			ts[n] = t;
		}
		n++;
	}
	if (ts != NULL)
	{
		mqq_return_together(qs, ts, n);
		pfree(ts);
	}
	return n > 0;
}

/*
 * May ready entry t be taken now in this mode?  Not while it is delayed (a
 * nack with delay, a delayed message: next_due learns when), nor, for head
 * expiry, unless it has expired (*wake: a ready message that consumers
 * waiting on the queue may take).
 */
static bool
take_now(MqQueue *q, MqTracked *t, TimestampTz now, MqTakeMode mode, bool *wake)
{
	if (t->until > now || t->visible_at > now)
	{
		TimestampTz due = Max(t->until, t->visible_at);

		if (next_due == 0 || due < next_due)
			next_due = due;
		return false;
	}
	if (mode == MQ_TAKE_EXPIRE && !mqq_entry_expired(q, t, now) &&
		!mqq_over_delivery_limit(q->delivery_limit, t))
	{
		*wake = true;			/* a ready message: consumers may be waiting */
		return false;
	}
	return true;
}

/* qsort order of returned entries: the order they were returned in */
static int
return_order_cmp(const void *a, const void *b)
{
	return mqq_return_cmp((*(MqTracked *const *) a)->returned,
						  (*(MqTracked *const *) b)->returned);
}

/*
 * On a queue that delivers returns first (quorum), take returned messages
 * that are ready, in the order they were returned, whatever their lane.
 * Returns how many were taken into out[].
 */
static int
take_returns(MqQueue *q, MqQueueShared *qs, int n, TimestampTz now,
			 TimestampTz lease_until, MqTakeMode mode, uint32 chash,
			 MqDelivery *out, bool *wake, MqOrderGate *gate)
{
	MqTracked **ret;
	int			nret = 0;
	int			got = 0;
	dlist_iter	it;

	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_READY && t->returned != 0)
			nret++;
	}
	if (nret == 0 || n <= 0)
		return 0;
	ret = palloc(sizeof(MqTracked *) * nret);
	nret = 0;
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_READY && t->returned != 0 &&
			!mqq_is_ahead(qs, t) && take_now(q, t, now, mode, wake))
			ret[nret++] = t;
	}
	if (nret > 1)
		qsort(ret, nret, sizeof(MqTracked *), return_order_cmp);
	for (int i = 0; i < nret && got < n; i++)
		if (mqq_gate_pass(gate, ret[i]))
			take_one(q, qs, ret[i], now, lease_until, mode, chash, &out[got++]);
	pfree(ret);
	return got;
}

/*
 * Tracked entry t, ready, has a tag hash that no tag of the group's filter
 * has: settle it for the group (an ACK record, like a message the filter
 * rejects after its fetch) without delivering it.  The record is written
 * frozen and the entry is SETTLED at once: whatever becomes of the taking
 * transaction, the filter will never let the message through.
 */
static bool
skip_tracked(const MqFilter *skip, MqQueueShared *qs, MqTracked *t,
			 MqSettleBatch *skips)
{
	if (skip == NULL || !t->tag_known || mq_filter_tag_hash_may_match(skip, t->tag_hash))
		return false;
	t->state = MQ_T_SETTLED;
	t->owner = -1;
	mq_settle_batch_add(skips, MQ_SETTLE_ACK, t->qpos);
	qs->settled_since_floor++;
	qs->counters.n[MQ_C_FILTERED]++;
	return true;
}

void
mq_queue_uncount_delivered(MqQueue *q, int n, int nredelivered)
{
	MqQueueShared *qs;

	if (n == 0)
		return;
	qs = mqq_queue_lock(q, LW_EXCLUSIVE);
	qs->counters.n[MQ_C_DELIVERED] -= n;
	qs->counters.n[MQ_C_REDELIVERED] -= nredelivered;
	LWLockRelease(&qs->lock);
}

/* Most entries one take settles by their tag hash before it returns */
#define MQ_SKIP_MAX 4096

int
mq_queue_take(MqQueue *q, int n, TimestampTz lease_until, MqTakeMode mode,
			  const char *consumer, int prefetch, MqDelivery *out)
{
	return mq_queue_take_filtered(q, n, lease_until, mode, consumer, prefetch,
								  NULL, NULL, out);
}

static int	take_filtered(MqQueue *q, int n, TimestampTz lease_until, MqTakeMode mode,
						  const char *consumer, int prefetch,
						  const struct MqFilter *tag_filter, int *skipped,
						  MqDelivery *out);

/*
 * A take reads the queue's entries under a hold (mqlog.h): the messages of
 * one transaction become deliverable together, in their order, even when
 * the take races that transaction's commit.
 */
int
mq_queue_take_filtered(MqQueue *q, int n, TimestampTz lease_until, MqTakeMode mode,
					   const char *consumer, int prefetch,
					   const struct MqFilter *tag_filter, int *skipped,
					   MqDelivery *out)
{
	int			got;

	mqlog_hold_begin();
	PG_TRY();
	{
		got = take_filtered(q, n, lease_until, mode, consumer, prefetch,
							tag_filter, skipped, out);
	}
	PG_FINALLY();
	{
		mqlog_hold_end();
	}
	PG_END_TRY();
	return got;
}

/*
 * Take up to n messages of q for this session, in delivery order: on a
 * quorum queue first the returned messages, in the order they came back;
 * then, highest priority lane first, what is tracked and ready
 * (redeliveries on classic queues, entries whose publisher committed
 * since), then new entries from the scan position.  With prefetch > 0, no
 * more than prefetch leases per consumer.
 * mode says what becomes of them: leased until lease_until, settled at once
 * (auto-ack), or handed back dead, for the caller to dead-letter or drop
 * (overflow, expiry).  The delivery records a restart needs are written
 * once the queue lock is released, before returning.
 */
static int
take_filtered(MqQueue *q, int n, TimestampTz lease_until, MqTakeMode mode,
			  const char *consumer, int prefetch,
			  const struct MqFilter *tag_filter, int *skipped,
			  MqDelivery *out)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_EXCLUSIVE);
	TimestampTz now = GetCurrentTimestamp();
	uint32		chash = consumer_hash(consumer);
	int			got = 0;
	bool		wake = false;
	LaneRels	lr;
	MqSettleBatch records;
	MqOrderGate gate;
	int			held_back = 0;
	MqSettleBatch frozen;		/* RETRY_AT records, tag-filter skips */
	const MqFilter *skip = NULL;

	next_due = 0;
	leases_ran_out = false;
	next_lease_end = 0;			/* (set again by expire_leases below) */
	mq_settle_batch_init(&frozen, q);
	frozen.frozen = true;
	if (skipped)
		*skipped = 0;
	/* only a tag filter that does not take everything skips by hash */
	if (tag_filter != NULL && mode != MQ_TAKE_DROP_HEAD && mode != MQ_TAKE_EXPIRE &&
		mq_filter_kind(tag_filter) == MQ_FILTER_TAG && !mq_filter_matches_all(tag_filter))
		skip = tag_filter;

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

	wake |= expire_leases(qs, now, &frozen);
	if (mode == MQ_TAKE_EXPIRE)
	{
		leases_ran_out = qs->leases_ran_out;
		qs->leases_ran_out = false;
	}
	mqq_gate_init(&gate, q, qs,
				  mode != MQ_TAKE_DROP_HEAD && mode != MQ_TAKE_EXPIRE, now);
	if (qs->returns_first)
		got = take_returns(q, qs, n, now, lease_until, mode, chash, out, &wake, &gate);

	mqq_lane_rels_init(&lr);
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
			/* taken by id ahead of the scan: it keeps its place */
			if (mqq_is_ahead(qs, t))
				continue;
			if (t->state == MQ_T_PENDING)
			{
				MqlogRowState st;
				TupleTableSlot *slot;

				if (!mqq_tracked_row(&lr, q, t, &st, &slot) || st == MQLOG_ROW_ABORTED)
				{
					t->state = MQ_T_SETTLED;
					continue;
				}
				if (st == MQLOG_ROW_OWN && mode == MQ_TAKE_DROP_HEAD)
				{
					/* taken below, at once: never READY for others to see */
					mqq_tracked_fill(t, slot);
					t->own = true;
					take_one(q, qs, t, now, lease_until, mode, chash, &out[got++]);
					continue;
				}
				if (st != MQLOG_ROW_COMMITTED)
					continue;
				mqq_tracked_fill(t, slot);
			}
			/* returns (quorum) were offered first, and stay there */
			if (t->state != MQ_T_READY || t->returned != 0)
				continue;
			if (skip_tracked(skip, qs, t, &frozen))
				continue;
			if (!take_now(q, t, now, mode, &wake) || !mqq_gate_pass(&gate, t))
				continue;
			take_one(q, qs, t, now, lease_until, mode, chash, &out[got++]);
		}

		/* Then new entries from the scan position on */
		while (got < n)
		{
			MqTracked  *t;
			bool		end;

			if (frozen.n >= MQ_SKIP_MAX)
			{
				next_due = now; /* a waiting consumer goes on at once */
				break;
			}
			t = scan_next(q, qs, lane, &lr, mode == MQ_TAKE_EXPIRE ? now : 0,
						  skip, &frozen, &end);
			if (end)
			{
				if (t == NULL && got == 0 && qs->ntracked > 0 && mqq_shared->nfree == 0)
					ereport(WARNING,
							(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
							 errmsg("queue_ext is tracking mq.max_in_flight = %d messages; queue \"%s\" waits for settlements",
									mq_max_in_flight, q->name)));
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
				mqq_gate_note_ready(&gate, t);
				continue;
			}
			if (!mqq_gate_pass(&gate, t))
			{
				/*
				 * Held back by an earlier message of its group; it stays
				 * tracked.  A take scans past a bounded number of them, so
				 * that one long group cannot keep the queue lock for its
				 * whole backlog (the next take goes on from here).
				 */
				mqq_gate_note_ready(&gate, t);
				if (++held_back >= MQ_ORDER_SCAN_MAX)
				{
					next_due = now;		/* a waiting consumer looks again */
					break;
				}
				continue;
			}
			take_one(q, qs, t, now, lease_until, mode, chash, &out[got++]);
		}
	}
	mqq_gate_end(&gate);
	mqq_lane_rels_close(&lr);
	note_deliveries(q, qs, out, got, &records);
	LWLockRelease(&qs->lock);
	if (wake)
		ConditionVariableBroadcast(&qs->cv);
	if (records.n > 0)
		mq_settle_batch_flush(&records);
	if (frozen.n > 0)
	{
		int			nskipped = 0;

		for (int i = 0; i < frozen.n; i++)
			nskipped += frozen.kinds[i] == MQ_SETTLE_ACK;
		mq_settle_batch_flush(&frozen);
		if (skipped)
			*skipped = nskipped;
		if (nskipped > 0)
		{
			mq_stat_tag_skipped += nskipped;
			mq_queue_write_floors(q);
		}
	}
	return got;
}

/* qsort/bsearch order of int64s */
static int
int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * Entries tracked PENDING whose publisher has committed since get their
 * ids, as a take gives them when it meets them (aborted ones are settled)
 */
static void
resolve_pending(MqQueue *q, MqQueueShared *qs, LaneRels *lr)
{
	dlist_iter	it;

	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *p = dlist_container(MqTracked, node, it.cur);
		MqlogRowState st;
		TupleTableSlot *slot;

		if (p->state != MQ_T_PENDING)
			continue;
		if (!mqq_tracked_row(lr, q, p, &st, &slot) || st == MQLOG_ROW_ABORTED)
			p->state = MQ_T_SETTLED;
		else if (st == MQLOG_ROW_COMMITTED)
			mqq_tracked_fill(p, slot);
	}
}

/*
 * Track the messages of want[] (sorted, distinct ids, none of them
 * tracked) that are in q's lanes ahead of the scan positions, however deep:
 * one read of each lane from its scan position (highest lane first) that
 * stops once all are found, and tracks nothing else.  Each one found is
 * tracked ahead of the scan (queue_int.h), ready, in its place: the scan
 * passes over it when it gets there, and no take gives it before.  A
 * message not in a lane (settled, delayed in a timer, or its publisher
 * has not committed) is not found; all of them may be, as the whole
 * backlog is read.  Either every message found is tracked or, when the
 * tracking pool cannot hold them, none is and 53400 is raised.
 */
static void
track_ids_ahead(MqQueue *q, MqQueueShared *qs, LaneRels *lr, const int64 *want,
				int nwant)
{
	uint64	   *pos = palloc(sizeof(uint64) * nwant);
	bool	   *found = palloc0(sizeof(bool) * nwant);
	MqTracked **made = palloc(sizeof(MqTracked *) * nwant);
	int			nfound = 0;

	for (int lane = qs->nlanes - 1; lane >= 0 && nfound < nwant; lane--)
	{
		uint64		qpos = qs->lanes[lane].scan_pos;
		MqlogRowState st;
		TupleTableSlot *slot;
		MqAheadCursor ahead;

		mqq_ahead_cursor_init(&ahead, qs, lane);
		while (nfound < nwant &&
			   mqq_lane_read_next(lr, q, qs, &qpos, &st, &slot) == MQLOG_READ_ROW)
		{
			if (st == MQLOG_ROW_COMMITTED && mqq_ahead_at(&ahead, qpos) == NULL)
			{
				bool		isnull;
				int64		id = DatumGetInt64(slot_getattr(slot, MQ_ENTRY_ATT_MSG_ID, &isnull));
				const int64 *hit = bsearch(&id, want, nwant, sizeof(int64), int64_cmp);

				if (hit != NULL && !found[hit - want])
				{
					found[hit - want] = true;
					pos[nfound++] = qpos;
				}
			}
			qpos = mqq_qpos_next(qpos);
			CHECK_FOR_INTERRUPTS();
		}
		mqq_ahead_cursor_end(&ahead);
	}

	/* every slot first: a call that cannot track them all tracks none */
	for (int i = 0; i < nfound; i++)
	{
		made[i] = mqq_track_new(qs, pos[i]);
		if (made[i] == NULL)
		{
			while (--i >= 0)
				mqq_tracked_free(qs, made[i]);
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("cannot take %d messages of queue \"%s\" by id: queue_ext tracks at most mq.max_in_flight = %d messages",
							nfound, q->name, mq_max_in_flight),
					 errhint("Take fewer at a time, settle messages in flight, or raise mq.max_in_flight.")));
		}
	}
	for (int i = 0; i < nfound; i++)
	{
		MqlogRowState st;
		TupleTableSlot *slot;

		/* committed a moment ago, under the same lock: committed now */
		if (!mqq_tracked_row(lr, q, made[i], &st, &slot) || st != MQLOG_ROW_COMMITTED)
			elog(ERROR, "entry of queue \"%s\" changed under the queue lock", q->name);
		mqq_tracked_fill(made[i], slot);
		mqq_track_ahead(qs, made[i]);
	}
	pfree(pos);
	pfree(found);
	pfree(made);
}

int
mq_queue_lease_ids(MqQueue *q, const int64 *msg_ids, int n, TimestampTz lease_until,
				   bool deliver, MqLeased *out)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_EXCLUSIVE);
	TimestampTz now = GetCurrentTimestamp();
	MqDelivery *dl = palloc(sizeof(MqDelivery) * Max(n, 1));
	int			ndl = 0;
	int			got = 0;
	dlist_node *cursor = NULL;	/* ids mostly come in the list's order */
	int64	   *missing = palloc(sizeof(int64) * Max(n, 1));
	int			nmissing = 0;
	bool		wake = false;
	LaneRels	lr;
	MqSettleBatch records;
	MqSettleBatch frozen;

	Assert(!deliver || lease_until != 0);
	next_due = 0;
	mq_settle_batch_init(&frozen, q);
	frozen.frozen = true;
	wake |= expire_leases(qs, now, &frozen);
	mqq_lane_rels_init(&lr);

	/*
	 * The messages not tracked yet (those read before mostly are) are found
	 * in one read of the lanes, before anything is changed: they may be
	 * anywhere in the backlog.  Pending entries whose publisher committed
	 * since are looked at first, as a take would.
	 */
	for (int i = 0; i < n; i++)
		if (mqq_tracked_find_from(qs, msg_ids[i], &cursor) == NULL)
			missing[nmissing++] = msg_ids[i];
	if (nmissing > 0)
	{
		int			still = 0;

		resolve_pending(q, qs, &lr);
		cursor = NULL;
		for (int i = 0; i < nmissing; i++)
			if (mqq_tracked_find_from(qs, missing[i], &cursor) == NULL)
				missing[still++] = missing[i];
		nmissing = still;
	}
	if (nmissing > 0)
	{
		qsort(missing, nmissing, sizeof(int64), int64_cmp);
		nmissing = qunique(missing, nmissing, sizeof(int64), int64_cmp);
		track_ids_ahead(q, qs, &lr, missing, nmissing);
	}
	cursor = NULL;
	for (int i = 0; i < n; i++)
	{
		MqTracked  *t;
		MqLeased   *o = &out[got];

		/* an id twice in one call: the first took it */
		for (int j = 0; j < i; j++)
			if (msg_ids[j] == msg_ids[i])
				goto next;
		t = mqq_tracked_find_from(qs, msg_ids[i], &cursor);
		if (t == NULL || (t->state != MQ_T_READY && t->state != MQ_T_LEASED))
			continue;
		o->msg_id = t->msg_id;
		o->was_leased = t->state == MQ_T_LEASED;
		o->was_until = o->was_leased ? t->until : Max(t->until, t->visible_at);
		if (deliver)
		{
			bool		dummy = false;

			/*
			 * Only a ready message, due now; one that a take would
			 * dead-letter (expired, over x-delivery-limit) is left to it.
			 */
			if (t->state != MQ_T_READY || !take_now(q, t, now, MQ_TAKE_LEASE_DETACHED, &dummy) ||
				mqq_entry_dead(q, t, now))
				continue;
			take_one(q, qs, t, now, lease_until, MQ_TAKE_LEASE_DETACHED, 0, &dl[ndl++]);
		}
		else if (lease_until == 0)
		{
			/* ready at once: a return, as a nack with requeue */
			if (t->state == MQ_T_LEASED)
			{
				t->state = MQ_T_READY;
				t->last_return = MQ_RETURN_NACK;
				t->owner = -1;
				t->prev_owner = -1;
				t->redelivered = true;
				qs->unacked--;
				mqq_tracked_returned(qs, t);
			}
			t->until = 0;
			wake = true;
		}
		else
		{
			/* leased to this session, not a delivery: the count stays */
			if (t->state == MQ_T_READY)
			{
				qs->unacked++;
				mqq_tracked_delivered(qs, t);
			}
			t->state = MQ_T_LEASED;
			t->owner = MyProc->pgprocno;
			t->prev_owner = -1;
			t->consumer_hash = 0;
			t->until = lease_until;
			t->receipt = receipt_nonce();	/* the holder's receipt is void */
			t->detached = true;
			t->lease_pid = MyProcPid;
			t->lease_lxid = MyProc->lxid;
			mqq_local_add(MQ_L_LEASE, qs, t->msg_id, false);
			mqq_note_leased_queue(qs->key);
		}
		o->delivery_count = t->delivery_count;
		got++;
next:	;
	}
	mqq_lane_rels_close(&lr);
	note_deliveries(q, qs, dl, ndl, &records);
	LWLockRelease(&qs->lock);
	if (wake)
		mqq_wake(qs);
	if (records.n > 0)
		mq_settle_batch_flush(&records);
	if (frozen.n > 0)
		mq_settle_batch_flush(&frozen);
	pfree(dl);
	pfree(missing);
	return got;
}
