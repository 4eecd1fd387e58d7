/*-------------------------------------------------------------------------
 *
 * settle.c
 *	  SQL entry points that settle deliveries: mq.ack, mq.nack, mq.reject
 *	  and mq.extend_lease.
 *
 * Settling is transactional: an ack is a settlement record appended in the
 * caller's transaction, so consume + work + ack in one transaction is
 * exactly-once for that work; if the transaction rolls back, the message
 * is leased again (or ready again, if it was also consumed in it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "args.h"
#include "publish.h"
#include "queue/queue.h"
#include "consume.h"

PG_FUNCTION_INFO_V1(mq_ack);
PG_FUNCTION_INFO_V1(mq_nack);
PG_FUNCTION_INFO_V1(mq_reject);
PG_FUNCTION_INFO_V1(mq_extend_lease);

/*
 * The queue of a settle call (its arguments already checked not NULL);
 * *any: a broadcast group settled without a consumer name
 */
static MqQueue *
settle_queue(FunctionCallInfo fcinfo, int group_arg, int consumer_arg,
			 const char *fn, bool dlq, MqGroup **any)
{
	MqQueue    *q = mq_consume_target(fcinfo, group_arg, consumer_arg, fn, dlq, any);

	PreventCommandIfReadOnly(fn);
	return q;
}

/* The msg_ids argument (argument 1) */
static int64 *
id_array(FunctionCallInfo fcinfo, int *n)
{
	Datum	   *elems = mq_array_arg(fcinfo, 1, INT8OID, "msg_ids", n);
	int64	   *ids = palloc(sizeof(int64) * Max(*n, 1));

	for (int i = 0; i < *n; i++)
		ids[i] = DatumGetInt64(elems[i]);
	return ids;
}

/*
 * Settle each id with op; raises if one of them is not currently
 * delivered to this session (everything done by the call is then rolled
 * back with the transaction).
 */
static int
settle_ids(MqQueue *q, int64 *ids, int n, MqSettleOp op, TimestampTz when,
		   const char *dead_reason)
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

	got = mq_queue_settle(q, ids, n, op, when, out);
	for (int i = 0; i < got; i++)
	{
		MqSettleResult r = out[i].result;
		MqDelivery *d = &dl[k];

		if (r == MQ_SETTLE_RESULT_NOT_OWNER)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("message " INT64_FORMAT " of queue \"%s\" is leased by another consumer",
							ids[i], q->name),
					 errdetail("Only the session a message is delivered to can settle it; its lease may have expired and the message been redelivered.")));
		if (r == MQ_SETTLE_RESULT_NOT_FOUND)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("message " INT64_FORMAT " is not delivered to this session on queue \"%s\"",
							ids[i], q->name),
					 errdetail("It is unknown, not yet delivered, or already settled.")));
		/* a requeue or a lease extension writes no settlement record */
		if (op == MQ_SETTLE_OP_ACK || op == MQ_SETTLE_OP_DEAD ||
			op == MQ_SETTLE_OP_RETRY || r == MQ_SETTLE_RESULT_OVER_LIMIT)
		{
			d->msg_id = ids[i];
			d->qpos = out[i].qpos;
			d->delivery_count = out[i].delivery_count;
			d->expires_at = out[i].expires_at;
			d->offset = out[i].offset;
			d->redelivered = false;
			d->dead = (op == MQ_SETTLE_OP_DEAD || r == MQ_SETTLE_RESULT_OVER_LIMIT);
			d->dead_reason = r == MQ_SETTLE_RESULT_OVER_LIMIT ? "delivery_limit" : dead_reason;
			k++;
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
	return n;
}

/*
 * settle_ids on broadcast group g without a consumer name: each id in every
 * consumer state of g where it is delivered to this session (the states
 * this session took leases from); an id delivered here in none is settled
 * in the first of them (or the group's view), which raises as
 * settle_ids does for a clustering group.
 */
static int
settle_ids_any(MqGroup *g, MqQueue *gview, int64 *ids, int n, MqSettleOp op,
			   TimestampTz when, const char *dead_reason)
{
	bool	   *done = palloc0(sizeof(bool) * Max(n, 1));
	bool	   *here = palloc(sizeof(bool) * Max(n, 1));
	int64	   *sub = palloc(sizeof(int64) * Max(n, 1));
	MqQueue    *first = NULL;
	ListCell   *lc;
	int			k;

	foreach(lc, g->consumers)
	{
		MqGroupConsumer *c = lfirst(lc);

		if (!mq_queue_session_leased(c->view))
			continue;
		if (first == NULL)
			first = c->view;
		if (mq_queue_leased_here(c->view, ids, n, here) == 0)
			continue;
		k = 0;
		for (int i = 0; i < n; i++)
			if (here[i])
			{
				sub[k++] = ids[i];
				done[i] = true;
			}
		(void) settle_ids(c->view, sub, k, op, when, dead_reason);
	}
	k = 0;
	for (int i = 0; i < n; i++)
		if (!done[i])
			sub[k++] = ids[i];
	if (k > 0)
		(void) settle_ids(first ? first : gview, sub, k, op, when, dead_reason);
	pfree(done);
	pfree(here);
	pfree(sub);
	return n;
}

/* settle_ids, or settle_ids_any for a broadcast group without a consumer */
static int
settle_ids_in(MqQueue *q, MqGroup *any, int64 *ids, int n, MqSettleOp op,
			  TimestampTz when, const char *dead_reason)
{
	if (any != NULL)
		return settle_ids_any(any, q, ids, n, op, when, dead_reason);
	return settle_ids(q, ids, n, op, when, dead_reason);
}

/* mq.ack(queue, msg_ids, group_name, consumer) returns the number acked */
Datum
mq_ack(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	MqGroup    *any;
	int			n;
	int64	   *ids;

	MQ_CHECK_ARGS(fcinfo, "queue", "msg_ids");
	q = settle_queue(fcinfo, 2, 3, "mq.ack", false, &any);
	ids = id_array(fcinfo, &n);
	PG_RETURN_INT32(settle_ids_in(q, any, ids, n, MQ_SETTLE_OP_ACK, 0, NULL));
}

/*
 * nack and reject differ in one thing when they requeue: as in RabbitMQ 4,
 * a reject counts toward x-delivery-limit and a nack does not.
 */
static int
nack_common(MqQueue *q, MqGroup *any, int64 *ids, int n, bool requeue,
			Interval *delay, MqSettleOp requeue_op)
{
	TimestampTz when = 0;

	if (delay)
		when = mq_time_add(GetCurrentTimestamp(), mq_interval_us(delay, "delay", 0), "delay");
	return settle_ids_in(q, any, ids, n, requeue ? requeue_op : MQ_SETTLE_OP_DEAD,
						 when, "rejected");
}

/* mq.nack(queue, msg_ids, requeue, delay, group_name, consumer) */
Datum
mq_nack(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	MqGroup    *any;
	int			n;
	int64	   *ids;

	MQ_CHECK_ARGS(fcinfo, "queue", "msg_ids", "requeue", NULL, NULL);
	q = settle_queue(fcinfo, 4, 5, "mq.nack", true, &any);
	ids = id_array(fcinfo, &n);
	PG_RETURN_INT32(nack_common(q, any, ids, n, PG_GETARG_BOOL(2),
								PG_ARGISNULL(3) ? NULL : PG_GETARG_INTERVAL_P(3),
								MQ_SETTLE_OP_REQUEUE_FREE));
}

/* mq.reject(queue, msg_id, requeue) */
Datum
mq_reject(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	int64		id;

	MQ_CHECK_ARGS(fcinfo, "queue", "msg_id", "requeue");
	q = settle_queue(fcinfo, -1, -1, "mq.reject", false, NULL);
	id = PG_GETARG_INT64(1);
	PG_RETURN_INT32(nack_common(q, NULL, &id, 1, PG_GETARG_BOOL(2), NULL,
								MQ_SETTLE_OP_REQUEUE));
}

/*
 * mq.extend_lease(queue, msg_ids, lease, group_name, consumer): lease runs
 * for 'lease' from now
 */
Datum
mq_extend_lease(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	MqGroup    *any;
	int			n;
	int64	   *ids;
	TimestampTz until;

	MQ_CHECK_ARGS(fcinfo, "queue", "msg_ids", "lease");
	q = settle_queue(fcinfo, 3, 4, "mq.extend_lease", false, &any);
	ids = id_array(fcinfo, &n);
	until = mq_time_add(GetCurrentTimestamp(),
						mq_interval_us(PG_GETARG_INTERVAL_P(2), "lease", 1), "lease");
	PG_RETURN_INT32(settle_ids_in(q, any, ids, n, MQ_SETTLE_OP_EXTEND, until, NULL));
}
