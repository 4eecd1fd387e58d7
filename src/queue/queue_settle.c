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

/*
 * Settle msg_id of q, leased by this session: ack, dead-letter or retry
 * (ACKING until this transaction ends; the caller appends the settlement
 * record), requeue (ready again, not before when), or extend its lease
 * (until when).  A message whose lease ran out but that nobody has taken
 * since is still ours.
 */
MqSettleResult
mq_queue_settle(MqQueue *q, int64 msg_id, MqSettleOp op, TimestampTz when,
				uint64 *qpos, int32 *delivery_count, TimestampTz *expires_at)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_EXCLUSIVE);
	MqTracked  *t = mqq_tracked_find(qs, msg_id);
	TimestampTz now = GetCurrentTimestamp();
	MqSettleResult result = MQ_SETTLE_RESULT_OK;

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
		return MQ_SETTLE_RESULT_NOT_FOUND;
	}
	if (t->owner != MyProc->pgprocno)
	{
		LWLockRelease(&qs->lock);
		return MQ_SETTLE_RESULT_NOT_OWNER;
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
			mqq_local_add(MQ_L_ACK, qs, msg_id, true);
			break;
		case MQ_SETTLE_OP_REQUEUE:
		case MQ_SETTLE_OP_REQUEUE_FREE:
			if (op == MQ_SETTLE_OP_REQUEUE_FREE)
				t->free_returns++;
			if (mqq_over_delivery_limit(q->delivery_limit, t))
			{
				/* dead-lettered at the return, as RabbitMQ does */
				t->state = MQ_T_ACKING;
				mqq_local_add(MQ_L_ACK, qs, msg_id, true);
				result = MQ_SETTLE_RESULT_OVER_LIMIT;
				break;
			}
			t->state = MQ_T_READY;
			t->owner = -1;
			t->prev_owner = -1;
			t->until = when > now ? when : 0;
			t->redelivered = true;
			qs->unacked--;
			mqq_tracked_returned(qs, t);
			ConditionVariableBroadcast(&qs->cv);
			break;
		case MQ_SETTLE_OP_EXTEND:
			t->until = when;
			break;
	}
	LWLockRelease(&qs->lock);

	/*
	 * A nack's return is remembered, frozen like a delivery record (the
	 * message is ready again whatever becomes of this transaction), so that
	 * it still does not count after a restart.
	 */
	if (op == MQ_SETTLE_OP_REQUEUE_FREE && result == MQ_SETTLE_RESULT_OK &&
		mqq_counts_deliveries(q))
	{
		MqSettleBatch b;

		mq_settle_batch_init(&b, q);
		b.frozen = true;
		mq_settle_batch_add(&b, MQ_SETTLE_RETURNED, *qpos);
		mq_settle_batch_flush(&b);
	}
	return result;
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
