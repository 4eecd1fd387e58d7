/*-------------------------------------------------------------------------
 *
 * queue_settle.c
 *	  Settling deliveries in queue state, and the floors of the lanes.
 *
 * A settlement (ack, dead-letter, retry) marks the tracked entry ACKING;
 * the caller appends the settlement record in the same transaction, and
 * the entry becomes SETTLED when that transaction commits (queue_xact.c).
 * A requeue makes it READY again at once -- or, when that return takes it
 * over x-delivery-limit, settles it for the caller to dead-letter -- and
 * an extension moves its lease end.
 *
 * A lane's floor is the lowest position not known to be settled: the
 * lowest unsettled tracked entry, or the scan position.  Settled entries
 * below it are dropped from the tracked list (compaction), and every
 * MQ_FLOOR_INTERVAL settlements a FLOOR record per lane is appended, so
 * that a restart replays only what lies above it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/proc.h"

#include "queue/queue_int.h"

#define MQ_FLOOR_INTERVAL 1024

/* ---------- settling ---------- */

/* Settle one tracked entry we hold with op (see mq_queue_settle) */
static MqSettleResult
settle_one(MqQueue *q, MqQueueShared *qs, MqTracked *t, MqSettleOp op,
		   TimestampTz when, TimestampTz now, MqSettled *out)
{
	out->qpos = t->qpos;
	out->delivery_count = t->delivery_count;
	out->expires_at = t->expires_at;
	out->offset = t->offset;
	switch (op)
	{
		case MQ_SETTLE_OP_ACK:
		case MQ_SETTLE_OP_DEAD:
		case MQ_SETTLE_OP_RETRY:
			t->state = MQ_T_ACKING;
			mqq_local_add(MQ_L_ACK, qs, t->msg_id, true);
			/* a nack without requeue (DEAD) or with a delay (RETRY) */
			if (op != MQ_SETTLE_OP_ACK)
				mqq_local_count(qs, MQ_C_NACKED, 1);
			break;
		case MQ_SETTLE_OP_REQUEUE:
		case MQ_SETTLE_OP_REQUEUE_FREE:
			if (op == MQ_SETTLE_OP_REQUEUE_FREE)
				t->free_returns++;
			if (mqq_over_delivery_limit(q->delivery_limit, t))
			{
				/* dead-lettered at the return, as RabbitMQ does */
				t->state = MQ_T_ACKING;
				mqq_local_add(MQ_L_ACK, qs, t->msg_id, true);
				mqq_local_count(qs, MQ_C_NACKED, 1);
				return MQ_SETTLE_RESULT_OVER_LIMIT;
			}
			/* the return holds at once, and so does its count */
			qs->counters.n[MQ_C_NACKED]++;
			t->state = MQ_T_READY;
			t->last_return = MQ_RETURN_NACK;
			t->owner = -1;
			t->prev_owner = -1;
			/* a consumer group's backoff unless the nack gave a delay */
			t->until = when > now ? when :
				mqq_retry_until(qs, t->delivery_count, t->free_returns, now);
			t->redelivered = true;
			qs->unacked--;
			mqq_tracked_returned(qs, t);
			break;
		case MQ_SETTLE_OP_EXTEND:
			t->until = when;
			break;
	}
	return MQ_SETTLE_RESULT_OK;
}

/*
 * Settle t by receipt: the delivery the receipt was handed out with, still
 * leased (to any session) and within its lease.  A settlement passes it to
 * this session, whose transaction's end then makes it hold or undoes it
 * (back to leased, held by this session).
 */
static MqSettleResult
settle_receipt(MqQueue *q, MqQueueShared *qs, MqTracked *t, uint64 receipt,
			   MqSettleOp op, TimestampTz when, TimestampTz now, MqSettled *out)
{
	if (t == NULL || t->state != MQ_T_LEASED || t->receipt != receipt ||
		t->until <= now)
		return MQ_SETTLE_RESULT_STALE;
	if (op != MQ_SETTLE_OP_EXTEND && t->owner != MyProc->pgprocno)
	{
		t->owner = MyProc->pgprocno;
		mqq_note_leased_queue(qs->key);
	}
	return settle_one(q, qs, t, op, when, now, out);
}

/* What t is, not being delivered to this session (settle's error messages) */
static void
not_found_state(MqTracked *t, MqSettled *out)
{
	out->returned = MQ_RETURN_NONE;
	if (t == NULL)
		out->not_found = MQ_NOT_FOUND_UNTRACKED;
	else if (t->state == MQ_T_PENDING)
		out->not_found = MQ_NOT_FOUND_PENDING;
	else if (t->state == MQ_T_ACKING)
		out->not_found = MQ_NOT_FOUND_SETTLING;
	else if (t->state == MQ_T_SETTLED)
		out->not_found = MQ_NOT_FOUND_SETTLED;
	else if (t->redelivered || t->delivery_count > 0)
	{
		out->not_found = MQ_NOT_FOUND_RETURNED;
		out->returned = (MqReturnReason) t->last_return;
	}
	else
		out->not_found = MQ_NOT_FOUND_READY;
}

/*
 * Settle the messages msg_ids[0..n-1] of q, leased by this session (or
 * with receipts, see mq_queue_settle_receipts), in
 * that order and under one hold of the queue lock: ack, dead-letter or
 * retry (ACKING until this transaction ends; the caller appends the
 * settlement records), requeue (ready again, not before when), or extend
 * their leases (until when).  A message whose lease ran out but that
 * nobody has taken since is still ours.  out[i] tells what became of
 * msg_ids[i]; it stops after the first that is not ours (NOT_FOUND,
 * NOT_OWNER, STALE) and returns how many out[] entries it filled.
 */
static int
settle_common(MqQueue *q, const int64 *msg_ids, const uint64 *receipts, int n,
			  MqSettleOp op, TimestampTz when, MqSettled *out)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_EXCLUSIVE);
	TimestampTz now = GetCurrentTimestamp();
	dlist_node *cursor = NULL;
	bool		requeued = false;
	int			done = 0;
	MqSettleBatch returned;

	mq_settle_batch_init(&returned, q);
	returned.frozen = true;
	while (done < n)
	{
		MqTracked  *t = mqq_tracked_find_from(qs, msg_ids[done], &cursor);
		MqSettled  *o = &out[done++];

		if (receipts != NULL)
			o->result = settle_receipt(q, qs, t, receipts[done - 1], op, when,
									   now, o);
		else
		{
			if (t && t->state == MQ_T_READY && t->prev_owner == MyProc->pgprocno)
			{
				/* our lease ran out but nobody has taken it since: ours */
				t->state = MQ_T_LEASED;
				t->owner = MyProc->pgprocno;
				t->prev_owner = -1;
				t->until = now;
				qs->unacked++;
			}
			if (t == NULL || t->state != MQ_T_LEASED)
			{
				o->result = MQ_SETTLE_RESULT_NOT_FOUND;
				not_found_state(t, o);
			}
			else if (t->owner == -1)
			{
				/* detached, its session gone (mq_session_exit) */
				o->result = MQ_SETTLE_RESULT_NOT_FOUND;
				o->not_found = MQ_NOT_FOUND_ORPHANED;
				o->returned = MQ_RETURN_NONE;
			}
			else if (t->owner != MyProc->pgprocno)
				o->result = MQ_SETTLE_RESULT_NOT_OWNER;
			else
				o->result = settle_one(q, qs, t, op, when, now, o);
		}
		if (o->result == MQ_SETTLE_RESULT_NOT_FOUND ||
			o->result == MQ_SETTLE_RESULT_NOT_OWNER ||
			o->result == MQ_SETTLE_RESULT_STALE)
			break;
		if (o->result == MQ_SETTLE_RESULT_OK &&
			(op == MQ_SETTLE_OP_REQUEUE || op == MQ_SETTLE_OP_REQUEUE_FREE))
		{
			requeued = true;
			if (op == MQ_SETTLE_OP_REQUEUE_FREE && mqq_counts_deliveries(q))
				mq_settle_batch_add(&returned, MQ_SETTLE_RETURNED, o->qpos);
			/* a consumer group's retry waits as long after a restart */
			if (qs->nretry_delays > 0 && t->until > now)
				mq_settle_batch_add_arg(&returned, MQ_SETTLE_RETRY_AT, o->qpos,
										t->until);
		}
	}
	LWLockRelease(&qs->lock);
	if (requeued)
		mqq_wake(qs);

	/*
	 * A nack's return is remembered, frozen like a delivery record (the
	 * message is ready again whatever becomes of this transaction), so that
	 * it still does not count after a restart; in a consumer group, with
	 * the time its retry is due (RETRY_AT).
	 */
	if (returned.n > 0)
		mq_settle_batch_flush(&returned);
	return done;
}

int
mq_queue_settle(MqQueue *q, const int64 *msg_ids, int n, MqSettleOp op,
				TimestampTz when, MqSettled *out)
{
	return settle_common(q, msg_ids, NULL, n, op, when, out);
}

int
mq_queue_settle_receipts(MqQueue *q, const int64 *msg_ids, const uint64 *receipts,
						 int n, MqSettleOp op, TimestampTz when, MqSettled *out)
{
	return settle_common(q, msg_ids, receipts, n, op, when, out);
}

int
mq_queue_leased_here(MqQueue *q, const int64 *msg_ids, int n, bool *here)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_SHARED);
	dlist_node *cursor = NULL;
	int			found = 0;

	for (int i = 0; i < n; i++)
	{
		MqTracked  *t = mqq_tracked_find_from(qs, msg_ids[i], &cursor);

		here[i] = t != NULL &&
			((t->state == MQ_T_LEASED && t->owner == MyProc->pgprocno) ||
			 (t->state == MQ_T_READY && t->prev_owner == MyProc->pgprocno));
		if (here[i])
			found++;
	}
	LWLockRelease(&qs->lock);
	return found;
}

/* ---------- floors ---------- */

/*
 * Called by the settling code after it appended settlement records: every
 * MQ_FLOOR_INTERVAL settlements, record each lane's floor so that a restart
 * replays only what lies above it.
 */
void
mq_queue_write_floors(MqQueue *q)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_EXCLUSIVE);
	uint64		floors[MQ_MAX_LANES];
	int			nlanes = qs->nlanes;
	bool		due = qs->settled_since_floor >= MQ_FLOOR_INTERVAL;

	if (due)
	{
		mqq_compact(qs, floors);
		qs->settled_since_floor = 0;
	}
	LWLockRelease(&qs->lock);
	if (!due)
		return;

	/*
	 * The records are appended without the queue lock (an insert may do
	 * I/O and wait); floor_written is only a hint, read and written here
	 * without it (see MqLaneState).
	 */
	for (int lane = 0; lane < nlanes; lane++)
	{
		if (floors[lane] > qs->lanes[lane].floor_written)
		{
			mqq_settle_append(q, MQ_SETTLE_FLOOR, floors[lane]);
			qs->lanes[lane].floor_written = floors[lane];
		}
	}
}
