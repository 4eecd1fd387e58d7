/*-------------------------------------------------------------------------
 *
 * settle.c
 *	  The settle verb: what mq.ack, nack, reject and extend_lease do, and
 *	  the settling of what mq.consume and mq.redrive take.
 *
 * A settle by id or receipt crosses queue state once and the settling
 * sequence once, in this order: the deliveries are marked in queue state
 * (ACKING, returned, extended: queue_settle.c), then the sequence
 * (mq_settle_deliveries, publish.h) dead-letters the dead ones and appends
 * the settlement records in the settling transaction.  The SQL entry
 * points settle only through this file, so the pairing of the two halves,
 * the mapping of a settle op to its record kind and the copy of a settled
 * entry into a delivery are written once.  It sits above publish.c, not
 * in queue/: dead-lettering publishes, and queue state calls nothing
 * above it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "durability.h"
#include "msglog.h"
#include "publish.h"
#include "settle.h"

/* The ways out when a message is not delivered to the settling session */
#define MQ_SETTLE_HINT \
	"Settle a message by id in the session that consumed it, or consume with session_bound => false and settle by receipt (the receipt column of mq.consume) from any session."

/*
 * A message settled by id that is not delivered to this session: say what
 * it is instead, as far as the queue's state tells, and the ways out.
 */
static void
not_delivered_error(MqQueue *q, int64 msg_id, const MqSettled *o)
{
	const char *detail = NULL;

	switch (o->not_found)
	{
		case MQ_NOT_FOUND_RETURNED:
			switch (o->returned)
			{
				case MQ_RETURN_SESSION_END:
					detail = "It was delivered to a session that has ended, so it went back to the queue and will be delivered again.";
					break;
				case MQ_RETURN_ROLLBACK:
					detail = "The transaction that consumed it rolled back, so it went back to the queue and will be delivered again.";
					break;
				case MQ_RETURN_LEASE:
					detail = "Its lease ran out, so it went back to the queue and will be delivered again.";
					break;
				case MQ_RETURN_NACK:
					detail = "It was returned to the queue (nack or reject with requeue) and will be delivered again.";
					break;
				case MQ_RETURN_NONE:
					detail = "It was delivered before and is back in the queue, to be delivered again.";
					break;
			}
			break;
		case MQ_NOT_FOUND_READY:
			detail = "It is in the queue and has not been delivered yet.";
			break;
		case MQ_NOT_FOUND_PENDING:
			detail = "The transaction that published it has not committed yet.";
			break;
		case MQ_NOT_FOUND_SETTLING:
			detail = "It is already settled by a transaction that has not ended yet (this one or another session's).";
			break;
		case MQ_NOT_FOUND_SETTLED:
			detail = "It is already settled.";
			break;
		case MQ_NOT_FOUND_ORPHANED:
			detail = "It was consumed with session_bound => false by a session that has ended: it stays leased until its lease runs out, and only its receipt settles it before then.";
			break;
		case MQ_NOT_FOUND_UNTRACKED:
			{
				MqMessage	m;

				if (!mq_log_fetch(msg_id, &m))
					ereport(ERROR,
							(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							 errmsg("message " INT64_FORMAT " is not delivered to this session on queue \"%s\"",
									msg_id, q->name),
							 errdetail("No message with this id exists.")));
				detail = "It is not delivered: already settled, delayed, not yet delivered, or not in this queue.";
			}
			break;
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("message " INT64_FORMAT " is not delivered to this session on queue \"%s\"",
					msg_id, q->name),
			 errdetail("%s", detail ? detail : "It is not delivered to this session."),
			 errhint(MQ_SETTLE_HINT)));
}

/* The delivery the settling sequence records for the settled entry s */
static void
delivery_of(MqDelivery *d, int64 msg_id, const MqSettled *s, bool dead,
			const char *dead_reason)
{
	d->msg_id = msg_id;
	d->qpos = s->qpos;
	d->delivery_count = s->delivery_count;
	d->expires_at = s->expires_at;
	d->offset = s->offset;
	d->redelivered = false;
	d->dead = dead;
	d->dead_reason = dead_reason;
}

/*
 * mq_settle: see settle.h.  Raises before anything is dead-lettered or
 * recorded (what queue state marked is undone with the transaction).
 */
void
mq_settle(MqQueue *q, const int64 *ids, const uint64 *receipts, int n,
		  MqSettleOp op, TimestampTz when, const char *dead_reason)
{
	MqDelivery *dl = palloc(sizeof(MqDelivery) * Max(n, 1));
	MqSettled  *out = palloc(sizeof(MqSettled) * Max(n, 1));
	int			k = 0;
	int			got;
	bool		requeued = false;

	/*
	 * A requeue with a delay on a durable queue goes through a durable timer
	 * (like a delayed publish), so that it is not ready earlier after a
	 * restart: the entry is settled now and appended again when due,
	 * carrying its delivery count.  Not on an ordered queue: there the
	 * message must stay unsettled while it waits, so that it holds back the
	 * later messages of its group (its delay does not survive a restart).
	 */
	if (op == MQ_SETTLE_OP_REQUEUE_FREE && when > GetCurrentTimestamp() && q->durable &&
		!q->ordered && q->group == NULL)
		op = MQ_SETTLE_OP_RETRY;

	/*
	 * In a consumer group every failed delivery counts toward max_retries
	 * (RocketMQ's reconsume times), and the message waits in the group's
	 * state for its retry (a stream's entry cannot be appended again).
	 */
	if (op == MQ_SETTLE_OP_REQUEUE_FREE && q->group != NULL)
		op = MQ_SETTLE_OP_REQUEUE;

	if (receipts != NULL)
		got = mq_queue_settle_receipts(q, ids, receipts, n, op, when, out);
	else
		got = mq_queue_settle(q, ids, n, op, when, out);
	for (int i = 0; i < got; i++)
	{
		MqSettleResult r = out[i].result;

		if (r == MQ_SETTLE_RESULT_NOT_OWNER)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("message " INT64_FORMAT " of queue \"%s\" is leased by another consumer",
							ids[i], q->name),
					 errdetail("Only the session a message is delivered to can settle it by its id; its lease may have expired and the message been redelivered."),
					 errhint(MQ_SETTLE_HINT)));
		if (r == MQ_SETTLE_RESULT_STALE)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("receipt of message " INT64_FORMAT " of queue \"%s\" is no longer valid",
							ids[i], q->name),
					 errdetail("Its lease ran out, or the delivery was settled or is being settled; the message may have been delivered again, with another receipt.")));
		if (r == MQ_SETTLE_RESULT_NOT_FOUND)
			not_delivered_error(q, ids[i], &out[i]);
		/* a requeue or a lease extension writes no settlement record */
		if (op == MQ_SETTLE_OP_ACK || op == MQ_SETTLE_OP_DEAD ||
			op == MQ_SETTLE_OP_RETRY || r == MQ_SETTLE_RESULT_OVER_LIMIT)
		{
			bool		over = r == MQ_SETTLE_RESULT_OVER_LIMIT;

			delivery_of(&dl[k++], ids[i], &out[i], op == MQ_SETTLE_OP_DEAD || over,
						over ? "delivery_limit" : dead_reason);
		}
		else if (op == MQ_SETTLE_OP_REQUEUE || op == MQ_SETTLE_OP_REQUEUE_FREE)
			requeued = true;
	}
	if (mq_settle_deliveries(q, dl, k, op == MQ_SETTLE_OP_ACK ? MQ_SETTLE_ACK :
							 op == MQ_SETTLE_OP_RETRY ? MQ_SETTLE_RETRY : 0, when) > 0 &&
		q->type == MQ_QUEUE_QUORUM)
		mq_require_durability(MQ_DURABILITY_QUORUM);

	/* messages back to ready may take a drop-head queue over its limit */
	if (requeued)
		(void) mq_overflow_drop_head(q, MQ_TRIM_RETURN);
	pfree(dl);
	pfree(out);
}

/* mq_settle_take: see settle.h */
int
mq_settle_take(MqQueue *q, MqDelivery *dl, int n, bool auto_ack)
{
	return mq_settle_deliveries(q, dl, n, auto_ack ? MQ_SETTLE_ACK : 0, 0);
}

/* mq_settle_taken: see settle.h */
static int
settle_taken(MqQueue *q, const int64 *ids, int n, int acked_counter)
{
	MqDelivery *dl = palloc(sizeof(MqDelivery) * Max(n, 1));
	MqSettled  *out = palloc(sizeof(MqSettled) * Max(n, 1));
	int			k = 0;
	int			got = mq_queue_settle(q, ids, n, MQ_SETTLE_OP_ACK, 0, out);
	int			settled;

	for (int i = 0; i < got; i++)
		if (out[i].result == MQ_SETTLE_RESULT_OK)
			delivery_of(&dl[k++], ids[i], &out[i], false, NULL);
	settled = mq_settle_deliveries_as(q, dl, k, MQ_SETTLE_ACK, 0, acked_counter);
	pfree(dl);
	pfree(out);
	return settled;
}

int
mq_settle_taken(MqQueue *q, const int64 *ids, int n)
{
	return settle_taken(q, ids, n, MQ_C_ACKED);
}

int
mq_settle_filtered(MqQueue *q, const int64 *ids, int n)
{
	return settle_taken(q, ids, n, MQ_C_FILTERED);
}
