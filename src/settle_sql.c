/*-------------------------------------------------------------------------
 *
 * settle_sql.c
 *	  SQL entry points that settle deliveries: mq.ack, mq.nack, mq.reject
 *	  and mq.extend_lease; and mq.ack_keys, the delete by business key of
 *	  visibility-timeout clients (queue_ext_pgmq).
 *
 * Settling is transactional: an ack is a settlement record appended in the
 * caller's transaction, so consume + work + ack in one transaction is
 * exactly-once for that work; if the transaction rolls back, the message
 * is leased again (or ready again, if it was also consumed in it).
 *
 * A call names its messages by id (delivered to this session) or by
 * receipt (receipt.h: delivered to any session, within the lease), the
 * way through a connection pooler, where the next transaction of a client
 * may run on another server session.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/qunique.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "acl.h"
#include "args.h"
#include "publish.h"
#include "queue/queue.h"
#include "settle.h"
#include "receipt.h"
#include "msglog.h"
#include "consume_sql.h"

PG_FUNCTION_INFO_V1(mq_ack);
PG_FUNCTION_INFO_V1(mq_nack);
PG_FUNCTION_INFO_V1(mq_reject);
PG_FUNCTION_INFO_V1(mq_extend_lease);
PG_FUNCTION_INFO_V1(mq_ack_keys);

/*
 * The queue of a settle call (its arguments already checked not NULL);
 * *any: a broadcast group settled without a consumer name
 */
static MqQueue *
settle_queue(FunctionCallInfo fcinfo, int group_arg, int consumer_arg,
			 const char *fn, MqGroup **any)
{
	MqQueue    *q = mq_consume_target(fcinfo, group_arg, consumer_arg, fn, any);

	PreventCommandIfReadOnly(fn);
	return q;
}

/* The messages a settle call names */
typedef struct SettleTargets
{
	int			n;
	int64	   *ids;
	uint64	   *nonces;			/* by receipt, else NULL */
	int32	   *queue_ids;		/* by receipt: what each names */
	int32	   *state_ids;
	char	  **texts;
} SettleTargets;

/*
 * The messages of a settle call, by id (argument 1, delivered to this
 * session) or by receipt (argument receipts_arg), exactly one of them;
 * single: they are one bigint and one text (mq.reject), not arrays.
 */
static void
settle_targets(FunctionCallInfo fcinfo, int receipts_arg, bool single,
			   SettleTargets *st)
{
	bool		by_id = !PG_ARGISNULL(1);
	bool		by_receipt = !PG_ARGISNULL(receipts_arg);
	Datum		one;
	Datum	   *elems;

	memset(st, 0, sizeof(SettleTargets));
	if (by_id == by_receipt)
		ereport(ERROR,
				(errcode(by_id ? ERRCODE_INVALID_PARAMETER_VALUE : ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg(single ? "give either msg_id or receipt" : "give either msg_ids or receipts"),
				 errdetail(by_id ? "Both were given." : "Neither was given.")));
	if (by_id)
	{
		if (single)
		{
			st->n = 1;
			one = PG_GETARG_DATUM(1);
			elems = &one;
		}
		else
			elems = mq_array_arg(fcinfo, 1, INT8OID, "msg_ids", &st->n);
		st->ids = palloc(sizeof(int64) * Max(st->n, 1));
		for (int i = 0; i < st->n; i++)
			st->ids[i] = DatumGetInt64(elems[i]);
		return;
	}
	if (single)
	{
		st->n = 1;
		one = PG_GETARG_DATUM(receipts_arg);
		elems = &one;
	}
	else
		elems = mq_array_arg(fcinfo, receipts_arg, TEXTOID, "receipts", &st->n);
	st->ids = palloc(sizeof(int64) * Max(st->n, 1));
	st->nonces = palloc(sizeof(uint64) * Max(st->n, 1));
	st->queue_ids = palloc(sizeof(int32) * Max(st->n, 1));
	st->state_ids = palloc(sizeof(int32) * Max(st->n, 1));
	st->texts = palloc(sizeof(char *) * Max(st->n, 1));
	for (int i = 0; i < st->n; i++)
	{
		MqReceipt	r;

		st->texts[i] = TextDatumGetCString(elems[i]);
		mq_receipt_parse(st->texts[i], &r);
		st->ids[i] = r.msg_id;
		st->nonces[i] = r.nonce;
		st->queue_ids[i] = r.queue_id;
		st->state_ids[i] = r.state_id;
	}
}

/*
 * mq_settle (settle.h) on broadcast group g without a consumer name: each id in every
 * consumer state of g where it is delivered to this session (the states
 * this session took leases from); an id delivered here in none is settled
 * in the first of them (or the group's view), which raises as
 * mq_settle does for a clustering group.
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
		mq_settle(c->view, sub, NULL, k, op, when, dead_reason);
	}
	k = 0;
	for (int i = 0; i < n; i++)
		if (!done[i])
			sub[k++] = ids[i];
	if (k > 0)
		mq_settle(first ? first : gview, sub, NULL, k, op, when, dead_reason);
	pfree(done);
	pfree(here);
	pfree(sub);
	return n;
}

/*
 * The consumer state of q that a receipt names: q's own (state 0), a
 * consumer group's or a broadcast consumer's; 55000 when it is gone (the
 * group was deleted), 22023 when it is not the group_name (or consumer)
 * the call names
 */
static MqQueue *
receipt_state(MqQueue *q, int32 state_id, const char *gname, const char *cname,
			  const char *text)
{
	ListCell   *lc;

	if (state_id == 0 && q->type != MQ_QUEUE_STREAM)
		return q;
	foreach(lc, q->groups)
	{
		MqGroup    *g = lfirst(lc);
		MqQueue    *view = NULL;
		const char *consumer = NULL;
		ListCell   *lc2;

		if (g->id == state_id && !g->broadcast)
			view = g->view;
		foreach(lc2, g->consumers)
		{
			MqGroupConsumer *c = lfirst(lc2);

			if (c->id == state_id)
			{
				view = c->view;
				consumer = c->name;
			}
		}
		if (view == NULL)
			continue;
		if ((gname != NULL && strcmp(gname, g->name) != 0) ||
			(cname != NULL && (consumer == NULL || strcmp(cname, consumer) != 0)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("receipt \"%s\" is not of consumer group \"%s\"%s%s%s",
							text, gname ? gname : g->name,
							cname ? " consumer \"" : "", cname ? cname : "",
							cname ? "\"" : ""),
					 errdetail("It is a receipt of group \"%s\"%s%s%s of queue \"%s\".",
							   g->name, consumer ? ", consumer \"" : "",
							   consumer ? consumer : "", consumer ? "\"" : "",
							   q->name)));
		return view;
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("receipt \"%s\" of queue \"%s\" is no longer valid", text, q->name),
			 errdetail("The consumer group it was delivered in no longer exists.")));
	return NULL;				/* keep compiler quiet */
}

/*
 * Settle what st names in queue argument 0 with op.  By id: in the
 * consumer state of group_arg and consumer_arg (settle_ids_any for a
 * broadcast group without a consumer name).  By receipt: in the states
 * the receipts name, one run of consecutive receipts of one state at a
 * time (group_arg and consumer_arg, when given, must be theirs).  A
 * group's dead-letter queue is made at its first dead letter (publish.c).
 */
static int
settle_call(FunctionCallInfo fcinfo, const char *fn, int group_arg, int consumer_arg,
			SettleTargets *st, MqSettleOp op, TimestampTz when,
			const char *dead_reason)
{
	char	   *gname;
	char	   *cname;
	MqQueue    *q;
	MqGroup    *any;

	if (st->nonces == NULL)
	{
		q = settle_queue(fcinfo, group_arg, consumer_arg, fn, &any);
		if (any != NULL)
			return settle_ids_any(any, q, st->ids, st->n, op, when, dead_reason);
		mq_settle(q, st->ids, NULL, st->n, op, when, dead_reason);
		return st->n;
	}

	gname = group_arg >= 0 && !PG_ARGISNULL(group_arg) ?
		text_to_cstring(PG_GETARG_TEXT_PP(group_arg)) : NULL;
	cname = consumer_arg >= 0 && !PG_ARGISNULL(consumer_arg) ?
		text_to_cstring(PG_GETARG_TEXT_PP(consumer_arg)) : NULL;
	mq_catalog_refresh();
	q = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	mq_check_queue_privilege(q, MQ_PRIV_CONSUME);
	PreventCommandIfReadOnly(fn);
	if (gname != NULL && q->type != MQ_QUEUE_STREAM)
		mq_groups_need_stream(q);
	if (group_arg < 0 && q->type == MQ_QUEUE_STREAM)
		mq_stream_refuse(q, fn);	/* mq.reject, as by id */
	for (int i = 0; i < st->n; i++)
		if (st->queue_ids[i] != q->id)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("receipt \"%s\" is not of queue \"%s\"", st->texts[i], q->name)));

	for (int i = 0; i < st->n;)
	{
		int			j = i + 1;

		while (j < st->n && st->state_ids[j] == st->state_ids[i])
			j++;
		mq_settle(receipt_state(q, st->state_ids[i], gname, cname, st->texts[i]),
				  st->ids + i, st->nonces + i, j - i, op, when, dead_reason);
		i = j;
	}
	return st->n;
}

/*
 * mq.ack(queue, msg_ids, group_name, consumer, receipts) returns the
 * number acked
 */
Datum
mq_ack(PG_FUNCTION_ARGS)
{
	SettleTargets st;

	MQ_CHECK_ARGS(fcinfo, "queue");
	settle_targets(fcinfo, 4, false, &st);
	PG_RETURN_INT32(settle_call(fcinfo, "mq.ack", 2, 3, &st,
								MQ_SETTLE_OP_ACK, 0, NULL));
}

/*
 * nack and reject differ in one thing when they requeue: as in RabbitMQ 4,
 * a reject counts toward x-delivery-limit and a nack does not.
 */
static int
nack_common(FunctionCallInfo fcinfo, const char *fn, int group_arg,
			int consumer_arg, SettleTargets *st, bool requeue, Interval *delay,
			MqSettleOp requeue_op)
{
	TimestampTz when = 0;

	if (delay)
		when = mq_time_add(GetCurrentTimestamp(), mq_interval_us(delay, "delay", 0), "delay");
	return settle_call(fcinfo, fn, group_arg, consumer_arg, st,
					   requeue ? requeue_op : MQ_SETTLE_OP_DEAD, when, "rejected");
}

/* mq.nack(queue, msg_ids, requeue, delay, group_name, consumer, receipts) */
Datum
mq_nack(PG_FUNCTION_ARGS)
{
	SettleTargets st;

	MQ_CHECK_ARGS(fcinfo, "queue", NULL, "requeue");
	settle_targets(fcinfo, 6, false, &st);
	PG_RETURN_INT32(nack_common(fcinfo, "mq.nack", 4, 5, &st, PG_GETARG_BOOL(2),
								PG_ARGISNULL(3) ? NULL : PG_GETARG_INTERVAL_P(3),
								MQ_SETTLE_OP_REQUEUE_FREE));
}

/* mq.reject(queue, msg_id, requeue, receipt) */
Datum
mq_reject(PG_FUNCTION_ARGS)
{
	SettleTargets st;

	MQ_CHECK_ARGS(fcinfo, "queue", NULL, "requeue");
	settle_targets(fcinfo, 3, true, &st);
	PG_RETURN_INT32(nack_common(fcinfo, "mq.reject", -1, -1, &st, PG_GETARG_BOOL(2),
								NULL, MQ_SETTLE_OP_REQUEUE));
}

/*
 * mq.extend_lease(queue, msg_ids, lease, group_name, consumer, receipts):
 * lease runs for 'lease' from now
 */
Datum
mq_extend_lease(PG_FUNCTION_ARGS)
{
	SettleTargets st;
	TimestampTz until;

	MQ_CHECK_ARGS(fcinfo, "queue", NULL, "lease");
	settle_targets(fcinfo, 5, false, &st);
	until = mq_time_add(GetCurrentTimestamp(),
						mq_interval_us(PG_GETARG_INTERVAL_P(2), "lease", 1), "lease");
	PG_RETURN_INT32(settle_call(fcinfo, "mq.extend_lease", 3, 4, &st,
								MQ_SETTLE_OP_EXTEND, until, NULL));
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
 * mq.ack_keys(queue, keys): ack the message of each business key (the
 * newest message of that key sent to the queue), whoever holds it and
 * ready ones too, as a visibility-timeout client deletes a message by its
 * id (queue_ext_pgmq's pgmq.delete).  One row (key, msg_id) per message
 * acked, in the order of keys; a key given twice counts once.  A key
 * without a message, or whose message is delayed or settled, gives no
 * row.  A ready message is found however deep in the backlog it is (as
 * mq.lease_ids finds it).  Needs consume on the queue; not for streams.
 */
Datum
mq_ack_keys(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqQueue    *q;
	Datum	   *keys;
	int			n;
	int64	   *ids;
	int64	   *want;
	int			nwant = 0;
	MqLeased   *leased;
	int			got;
	int64	   *taken;
	bool	   *emitted;

	MQ_CHECK_ARGS(fcinfo, "queue", "keys");
	mq_catalog_refresh();
	q = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	mq_check_queue_privilege(q, MQ_PRIV_CONSUME);
	if (q->type == MQ_QUEUE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("mq.ack_keys does not apply to stream queue \"%s\"", q->name),
				 errdetail("A stream's messages are settled by its consumer groups.")));
	keys = mq_array_arg(fcinfo, 1, TEXTOID, "keys", &n);
	PreventCommandIfReadOnly("mq.ack_keys");
	InitMaterializedSRF(fcinfo, 0);
	if (n == 0)
		return (Datum) 0;

	/* the messages, each once */
	ids = palloc(sizeof(int64) * n);
	mq_log_lookup_keys(q->name, keys, n, ids);
	want = palloc(sizeof(int64) * n);
	for (int i = 0; i < n; i++)
		if (ids[i] != 0)
			want[nwant++] = ids[i];
	if (nwant == 0)
		return (Datum) 0;
	qsort(want, nwant, sizeof(int64), int64_cmp);
	nwant = qunique(want, nwant, sizeof(int64), int64_cmp);

	/* take them over for a while, then ack what was taken */
	leased = palloc(sizeof(MqLeased) * nwant);
	got = mq_queue_lease_ids(q, want, nwant,
							 mq_time_add(GetCurrentTimestamp(), 300 * USECS_PER_SEC, "lease"),
							 false, leased);
	if (got == 0)
		return (Datum) 0;
	taken = palloc(sizeof(int64) * got);
	for (int i = 0; i < got; i++)
		taken[i] = leased[i].msg_id;
	mq_settle(q, taken, NULL, got, MQ_SETTLE_OP_ACK, 0, NULL);

	/* rows in the order of keys, a message once (for its first key) */
	qsort(taken, got, sizeof(int64), int64_cmp);
	emitted = palloc0(sizeof(bool) * got);
	for (int i = 0; i < n; i++)
	{
		int64	   *hit;
		Datum		v[2];
		bool		nulls[2] = {false, false};

		if (ids[i] == 0)
			continue;
		hit = bsearch(&ids[i], taken, got, sizeof(int64), int64_cmp);
		if (hit == NULL || emitted[hit - taken])
			continue;
		emitted[hit - taken] = true;
		v[0] = keys[i];
		v[1] = Int64GetDatum(ids[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}
