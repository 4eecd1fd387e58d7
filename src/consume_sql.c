/*-------------------------------------------------------------------------
 *
 * consume_sql.c
 *	  SQL entry points that read messages: mq.consume (with long polling),
 *	  mq.browse, and lookups by id and by business key; and, for
 *	  visibility-timeout clients (pgmq), mq.lease_ids (lease or release
 *	  messages by id whoever holds them) and mq.in_flight.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "access/htup_details.h"
#include "tcop/utility.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "durability.h"
#include "acl.h"
#include "annotations.h"
#include "filter.h"
#include "args.h"
#include "owner.h"
#include "msglog.h"
#include "publish.h"
#include "queue/queue.h"
#include "quorum.h"
#include "receipt.h"
#include "settle.h"
#include "consume_sql.h"

PG_FUNCTION_INFO_V1(mq_consume);
PG_FUNCTION_INFO_V1(mq_consume_wake);
PG_FUNCTION_INFO_V1(mq_browse);
PG_FUNCTION_INFO_V1(mq_browse_all);
PG_FUNCTION_INFO_V1(mq_message);
PG_FUNCTION_INFO_V1(mq_message_position);
PG_FUNCTION_INFO_V1(mq_message_offset);
PG_FUNCTION_INFO_V1(mq_messages_by_key);
PG_FUNCTION_INFO_V1(mq_log_find_keys);
PG_FUNCTION_INFO_V1(mq_trace);
PG_FUNCTION_INFO_V1(mq_lease_ids);
PG_FUNCTION_INFO_V1(mq_in_flight);

/*
 * Columns of a delivery row (see mq.consume in the install script): 16,
 * and mq.consume's (and mq.read's) reconsume_times and receipt after them
 */
#define MQ_DELIVERY_NATTS 18

/* The values of a delivery row into values[], nulls[] (MQ_DELIVERY_NATTS) */
static void
delivery_values(Datum *values, bool *nulls, const char *queue, MqMessage *m,
				bool redelivered, int32 delivery_count, int partition,
				int64 offset, int32 reconsume_times, const char *receipt)
{
	char	   *prio;
	Jsonb	   *props;

	memset(nulls, 0, sizeof(bool) * MQ_DELIVERY_NATTS);
	values[0] = Int64GetDatum(m->msg_id);
	values[1] = CStringGetTextDatum(queue);
	values[2] = CStringGetTextDatum(m->exchange ? m->exchange : "");
	values[3] = CStringGetTextDatum(m->routing_key ? m->routing_key : "");
	values[4] = PointerGetDatum(m->body);
	nulls[4] = m->body == NULL;
	values[5] = m->headers ? JsonbPGetDatum(m->headers) : (Datum) 0;
	nulls[5] = m->headers == NULL;
	values[6] = TimestampTzGetDatum(m->published_at);
	values[7] = BoolGetDatum(redelivered);
	values[8] = Int32GetDatum(delivery_count);
	/* partition, offset: streams only */
	values[9] = Int32GetDatum(partition);
	values[10] = Int64GetDatum(offset);
	nulls[9] = nulls[10] = partition < 0;
#define TEXTVAL(i, s) do { if (s) values[i] = CStringGetTextDatum(s); else nulls[i] = true; } while (0)
	TEXTVAL(11, m->key);
	TEXTVAL(12, m->tag);
	TEXTVAL(13, m->message_group);
	prio = mq_jsonb_get_text(m->properties, "priority");
	if (prio)
		values[14] = Int32GetDatum(atoi(prio));
	else
		nulls[14] = true;
	/* the broker's annotations (BCC keys, death history) are its own */
	props = mq_properties_public(m->properties);
	values[15] = props ? JsonbPGetDatum(props) : (Datum) 0;
	nulls[15] = props == NULL;
	values[16] = Int32GetDatum(reconsume_times);
	nulls[16] = reconsume_times < 0;
	TEXTVAL(17, receipt);
#undef TEXTVAL
}

void
mq_put_delivery_row(ReturnSetInfo *rsinfo, const char *queue, MqMessage *m,
					bool redelivered, int32 delivery_count, int partition,
					int64 offset, int32 reconsume_times, const char *receipt)
{
	Datum		values[MQ_DELIVERY_NATTS];
	bool		nulls[MQ_DELIVERY_NATTS];

	delivery_values(values, nulls, queue, m, redelivered, delivery_count, partition,
					offset, reconsume_times, receipt);
	Assert(rsinfo->setDesc->natts <= MQ_DELIVERY_NATTS);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * A row of mq.browse: the first 16 columns of a delivery row, then
 * body_text, the body as text when it is valid in the database encoding
 * (else NULL).
 */
static void
put_browse_row(ReturnSetInfo *rsinfo, const char *queue, MqMessage *m,
			   int32 delivery_count)
{
	Datum		values[MQ_DELIVERY_NATTS];
	bool		nulls[MQ_DELIVERY_NATTS];

	delivery_values(values, nulls, queue, m, delivery_count > 0, delivery_count,
					-1, 0, -1, NULL);
	values[16] = (Datum) 0;
	nulls[16] = true;
	if (m->body != NULL &&
		pg_verifymbstr(VARDATA_ANY(m->body), VARSIZE_ANY_EXHDR(m->body), true))
	{
		values[16] = PointerGetDatum(cstring_to_text_with_len(VARDATA_ANY(m->body),
															  VARSIZE_ANY_EXHDR(m->body)));
		nulls[16] = false;
	}
	Assert(rsinfo->setDesc->natts == 17);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* Emit one row of a classic or quorum queue (receipt: NULL for none) */
static void
put_row(ReturnSetInfo *rsinfo, const char *queue, MqMessage *m,
		bool redelivered, int32 delivery_count, const char *receipt)
{
	mq_put_delivery_row(rsinfo, queue, m, redelivered, delivery_count, -1, 0, -1,
						receipt);
}

/* The receipt of delivery d of q (NULL: none, settled at once) */
static char *
delivery_receipt(MqQueue *q, MqDelivery *d)
{
	MqReceipt	r;

	if (d->receipt == 0)
		return NULL;
	r.queue_id = q->id;
	r.state_id = q->group_id;
	r.msg_id = d->msg_id;
	r.nonce = d->receipt;
	return mq_receipt_format(&r);
}

void
mq_stream_refuse(MqQueue *q, const char *fn)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s on stream queue \"%s\" needs a consumer group", fn, q->name),
			 errhint("Pass group_name => a group declared with mq.group_declare(), or read the stream with mq.read(queue, partition, from_offset).")));
}

/*
 * The consumer cname of broadcast group gname of stream qname, made now if
 * it is new (in this transaction, as the extension owner: concurrent first
 * consumes of one name find one row), starting where the group starts.
 * The catalog cache is reloaded then: callers' pointers into it are stale.
 */
static MqQueue *
broadcast_consumer(const char *qname, const char *gname, const char *cname)
{
	MqQueue    *q = mq_queue_lookup(qname, false);
	MqGroup    *g = mq_group_lookup(q, gname, false);
	MqGroupConsumer *c = mq_group_consumer_lookup(g, cname);
	Oid			types[3] = {INT4OID, INT4OID, TEXTOID};
	Datum		values[3];
	char	   *res;
	bool		created;

	if (c != NULL)
		return c->view;
	values[0] = Int32GetDatum(q->id);
	values[1] = Int32GetDatum(g->id);
	values[2] = CStringGetTextDatum(cname);
	res = mq_run_internal("_group_consumer_create", 3, types, values, NULL);
	created = res != NULL && strstr(res, " new") != NULL;

	/*
	 * Read the catalog again with a snapshot that sees the consumer's row
	 * (this statement's does not: the row was written after it began, or
	 * committed by another session since), so that the rest of this
	 * transaction knows the consumer
	 */
	CommandCounterIncrement();
	PushActiveSnapshot(GetLatestSnapshot());
	mq_catalog_refresh();
	PopActiveSnapshot();
	q = mq_queue_lookup(qname, false);
	g = mq_group_lookup(q, gname, false);
	c = mq_group_consumer_lookup(g, cname);
	if (c == NULL)
		elog(ERROR, "consumer \"%s\" of group \"%s\" is missing after its creation",
			 cname, gname);
	if (created)
	{
		mq_group_consumer_start(g->view, c->view);
		/* rolled back: no state may outlive the consumer's row */
		mq_queue_state_drop_at_end(q->id, c->id, false, true);
	}
	return c->view;
}

MqQueue *
mq_consume_target(FunctionCallInfo fcinfo, int group_arg, int consumer_arg,
				  const char *fn, MqGroup **any)
{
	char	   *qname = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *gname = group_arg >= 0 && !PG_ARGISNULL(group_arg) ?
		text_to_cstring(PG_GETARG_TEXT_PP(group_arg)) : NULL;
	char	   *cname = consumer_arg >= 0 && !PG_ARGISNULL(consumer_arg) ?
		text_to_cstring(PG_GETARG_TEXT_PP(consumer_arg)) : NULL;
	MqQueue    *q;
	MqGroup    *g;
	MqGroupConsumer *c;

	if (any != NULL)
		*any = NULL;

	mq_catalog_refresh();
	q = mq_queue_lookup(qname, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONSUME);
	if (q->type != MQ_QUEUE_STREAM)
	{
		if (gname != NULL)
			mq_groups_need_stream(q);
		return q;
	}
	if (gname == NULL)
		mq_stream_refuse(q, fn);
	g = mq_group_lookup(q, gname, false);
	if (!g->broadcast)
		return g->view;
	mq_consumer_name_check(cname);
	if (any == NULL)
	{
		if (cname == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s on broadcast consumer group \"%s\" needs a consumer name", fn, g->name),
					 errdetail("Each consumer of a broadcast group receives every message and keeps its own progress."),
					 errhint("Pass consumer => a name that stays the same across the consumer's restarts.")));
		return broadcast_consumer(qname, gname, cname);
	}
	if (cname == NULL)
	{
		*any = g;
		return g->view;
	}
	c = mq_group_consumer_lookup(g, cname);
	return c != NULL ? c->view : g->view;
}

/* The queue named by argument argno (checked not to be NULL) */
static MqQueue *
queue_arg(FunctionCallInfo fcinfo, int argno, int priv)
{
	MqQueue    *q;

	mq_catalog_refresh();
	q = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(argno)), false);
	mq_check_queue_privilege(q, priv);
	return q;
}

/*
 * Hand out what mq_queue_take returned: dead-letter the dead ones, settle
 * at once with auto_ack, emit a row for the others.  A consumer group's
 * filter is applied here: a message it rejects is settled for the group
 * (an ACK record: it counts as settled for the committed offset and for
 * replay) and not delivered, as is an entry retention dropped meanwhile.
 * Returns the number of rows emitted.
 */
static int
deliver(ReturnSetInfo *rsinfo, MqQueue *q, MqDelivery *dl, int got, bool auto_ack,
		bool *any_settled)
{
	int			live = 0;
	MqFilter   *filter = q->group != NULL ? mq_group_filter(q->group) : NULL;
	int64	   *filtered = NULL;
	int			nfiltered = 0;
	int			nrejected = 0;	/* by the filter */
	int			nrejected_redelivered = 0;
	int64	   *dropped = NULL; /* by retention */
	int			ndropped = 0;

	int64	   *ids = palloc(sizeof(int64) * Max(got, 1));
	MqMessage  *msgs = palloc(sizeof(MqMessage) * Max(got, 1));
	bool	   *found = palloc(sizeof(bool) * Max(got, 1));
	int			nids = 0;
	int			k = 0;

	if (mq_settle_take(q, dl, got, auto_ack) > 0)
		*any_settled = true;
	/* the bodies in one pass over the log, emitted in delivery order */
	for (int i = 0; i < got; i++)
		if (!dl[i].dead)
			ids[nids++] = dl[i].msg_id;
	mq_log_fetch_many(ids, nids, msgs, found);
	for (int i = 0; i < got; i++)
	{
		MqMessage	m;
		char	   *receipt;
		bool		not_delivered;

		if (dl[i].dead)
			continue;
		m = msgs[k];
		if (!found[k++])
		{
			/*
			 * A group's entry whose generation retention dropped after the
			 * take read it is gone, as retention means: settled for the
			 * group below like a filtered one (nothing is recorded once its
			 * logs are gone).  Anything else missing is damage.
			 */
			if (q->group == NULL ||
				!mq_stream_offset_dropped(q->stream, mq_qpos_lane(dl[i].qpos), dl[i].offset))
			{
				ereport(WARNING,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("message " INT64_FORMAT " of queue \"%s\" is missing from the message log",
								dl[i].msg_id, q->name)));
				continue;
			}
			/* with auto_ack it is settled already */
			if (!auto_ack)
			{
				if (dropped == NULL)
					dropped = palloc(sizeof(int64) * got);
				dropped[ndropped++] = dl[i].msg_id;
			}
			continue;
		}
		not_delivered = filter != NULL &&
			mq_filter_eval(filter, m.headers, m.tag,
						   m.tag ? strlen(m.tag) : 0) != MQ_FILTER_MATCH;
		if (not_delivered)
		{
			/* not delivered after all, and counted as filtered */
			nrejected++;
			nrejected_redelivered += dl[i].redelivered;
			/* with auto_ack it is settled (as acked) already */
			if (!auto_ack)
			{
				if (filtered == NULL)
					filtered = palloc(sizeof(int64) * got);
				filtered[nfiltered++] = dl[i].msg_id;
			}
			continue;
		}
		receipt = auto_ack ? NULL : delivery_receipt(q, &dl[i]);
		if (q->group != NULL)
			mq_put_delivery_row(rsinfo, q->name, &m, dl[i].redelivered,
								dl[i].delivery_count, mq_qpos_lane(dl[i].qpos),
								dl[i].offset, Max(dl[i].delivery_count - 1, 0),
								receipt);
		else
			put_row(rsinfo, q->name, &m, dl[i].redelivered, dl[i].delivery_count,
					receipt);
		live++;
	}
	mq_queue_uncount_delivered(q, nrejected, nrejected_redelivered);
	if (auto_ack)
	{
		mq_queue_count_at_commit(q, MQ_C_ACKED, -nrejected);
		mq_queue_count_at_commit(q, MQ_C_FILTERED, nrejected);
	}
	if (nfiltered > 0)
	{
		if (mq_settle_filtered(q, filtered, nfiltered) > 0)
			*any_settled = true;
		pfree(filtered);
	}
	if (ndropped > 0)
	{
		if (mq_settle_taken(q, dropped, ndropped) > 0)
			*any_settled = true;
		pfree(dropped);
	}
	pfree(ids);
	pfree(msgs);
	pfree(found);
	return live;
}

/*
 * mq.consume(queue, max_messages, wait, lease, group_name, consumer,
 *			  auto_ack, prefetch, session_bound)
 */
Datum
mq_consume(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqQueue    *q;
	int			max_messages;
	int64		wait_us;
	int64		lease_us;
	char	   *consumer;
	bool		auto_ack;
	int			prefetch;
	MqTakeMode	mode;
	TimestampTz deadline;
	MqDelivery *dl;
	int			got;
	int			delivered = 0;
	bool		any_settled = false;
	MqFilter   *filter;
	int			skipped;

	MQ_CHECK_ARGS(fcinfo, "queue", "max_messages", "wait", "lease", NULL, NULL, "auto_ack",
				  NULL, "session_bound");
	max_messages = mq_count_arg(fcinfo, 1, "max_messages", MQ_MAX_BATCH);
	wait_us = mq_interval_us(PG_GETARG_INTERVAL_P(2), "wait", 0);
	lease_us = mq_interval_us(PG_GETARG_INTERVAL_P(3), "lease", 1);
	consumer = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	mq_consumer_name_check(consumer);
	auto_ack = PG_GETARG_BOOL(6);
	prefetch = PG_ARGISNULL(7) ? 0 : PG_GETARG_INT32(7);
	mode = auto_ack ? MQ_TAKE_AUTO_ACK :
		PG_GETARG_BOOL(8) ? MQ_TAKE_LEASE : MQ_TAKE_LEASE_DETACHED;
	deadline = mq_time_add(GetCurrentTimestamp(), wait_us, "wait");
	(void) mq_time_add(GetCurrentTimestamp(), lease_us, "lease");

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot consume on a standby"),
				 errhint("Consume on the primary; mq.browse works on a hot standby.")));
	q = mq_consume_target(fcinfo, 4, 5, "mq.consume", NULL);
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot consume from queue \"%s\" on a standby", q->name),
				 errhint("Consume on the primary; mq.browse works on a hot standby.")));
	/* taking a message is a change (leases, dead-lettering, auto_ack) */
	PreventCommandIfReadOnly("mq.consume");
	if (prefetch < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("prefetch must not be negative")));
	/* no prefetch given: the one declared for this consumer, if any */
	if (PG_ARGISNULL(7))
		prefetch = Max(mq_consumer_prefetch(q, consumer), 0);

	InitMaterializedSRF(fcinfo, 0);
	dl = palloc(sizeof(MqDelivery) * max_messages);
	/* a group's tag filter lets the take skip entries by their tag hash */
	filter = q->group != NULL ? mq_group_filter(q->group) : NULL;

	/*
	 * Take, deliver, and take again while dead-lettered (expired, over the
	 * delivery limit) messages used up part of the batch; long-poll only
	 * while nothing at all was delivered.
	 */
	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		TimestampTz lease_until = mq_time_add(now, lease_us, "lease");
		int			live;

		got = mq_queue_take_filtered(q, max_messages - delivered, lease_until, mode,
									 consumer, prefetch, filter, &skipped, dl);
		if (got == 0 && skipped > 0)
		{
			/* the take stopped after settling many by their tag hash */
			CHECK_FOR_INTERRUPTS();
			continue;
		}
		if (got == 0)
		{
			long		remaining = (long) ((deadline - GetCurrentTimestamp()) / 1000);

			if (delivered > 0 || remaining <= 0)
				break;
			/* woken (mq._consume_wake): return with nothing, no error */
			if (mq_queue_woken())
				break;
			/* long poll: sleep until a publish to q commits or time is up */
			mq_queue_prepare_wait(q);
			got = mq_queue_take_filtered(q, max_messages, lease_until, mode,
										 consumer, prefetch, filter, &skipped, dl);
			if (got == 0 && skipped > 0)
			{
				mq_queue_cancel_wait();
				continue;
			}
			if (got == 0)
			{
				/* wake when a delayed message is due, and at least every second */
				long		sleep_ms = Min(remaining, 1000);
				TimestampTz due = mq_queue_next_due();

				if (due != 0)
				{
					long		due_ms = (long) ((due - GetCurrentTimestamp()) / 1000) + 1;

					sleep_ms = Min(sleep_ms, Max(due_ms, 1));
				}
				mq_queue_wait(q, sleep_ms);
				mq_queue_cancel_wait();
				CHECK_FOR_INTERRUPTS();
				if (mq_queue_woken())
					break;
				continue;
			}
			mq_queue_cancel_wait();
		}
		live = deliver(rsinfo, q, dl, got, auto_ack, &any_settled);
		delivered += live;
		if (delivered >= max_messages || (live == got && delivered > 0))
			break;
	}
	if (any_settled && q->type == MQ_QUEUE_QUORUM)
		mq_require_durability(MQ_DURABILITY_QUORUM);
	/*
	 * Hand out nothing once the postmaster is gone: a kill -9 of a primary
	 * leaves its backends running a moment, and commits whose wait for the
	 * synchronous standbys ended with it are visible here though no
	 * standby may have them (a failover loses them, and their publishers
	 * publish them again).  Quorum queues also wait for the standbys to
	 * have what a cancelled or terminated wait left visible.
	 */
	if (delivered > 0 && !PostmasterIsAlive())
		ereport(FATAL,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("terminating connection due to unexpected postmaster exit")));
	if (delivered > 0 && q->type == MQ_QUEUE_QUORUM)
		mq_quorum_wait_delivered(q->name);
	return (Datum) 0;
}

/*
 * mq._consume_wake(pid): the mq.consume that the session of process pid
 * waits in returns now with the rows it has (none, as it waits only while
 * it has none), as if its wait had run out: no error, nothing rolled back,
 * so a client ends a long poll without "canceling statement" in the
 * server's log (mq-amqp at basic.cancel and before it closes a consumer's
 * session).  A session not in mq.consume returns from its next wait at
 * once.  Only a role with the privileges of the session's role may wake
 * it (its own role, a role it is a member of, a superuser).  False when
 * there is no such backend.
 */
Datum
mq_consume_wake(PG_FUNCTION_ARGS)
{
	int			pid = PG_GETARG_INT32(0);
	PGPROC	   *proc = BackendPidGetProc(pid);
	Oid			role;

	if (proc == NULL)
		PG_RETURN_BOOL(false);
	role = proc->roleId;
	if (!OidIsValid(role))
		PG_RETURN_BOOL(false);	/* not a client's session */
	if (!has_privs_of_role(GetUserId(), role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to wake the session of process %d", pid),
				 errdetail("Only roles with the privileges of the session's role may wake it.")));
	mq_queue_wake(proc, pid);
	PG_RETURN_BOOL(true);
}

/* Messages mq.browse reads from the log in one pass */
#define BROWSE_CHUNK 256

/* Rows of up to n ready messages of q, not taken (mq.browse's) */
static void
browse_rows(FunctionCallInfo fcinfo, MqQueue *q, int n)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64	   *ids;
	int32	   *counts;
	int			got;

	if (q->type == MQ_QUEUE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("mq.browse does not read streams: \"%s\" is a stream queue",
						q->name),
				 errhint("Read the stream with mq.read(queue, partition, from_offset); it moves no group's offset.")));
	InitMaterializedSRF(fcinfo, 0);
	ids = palloc(sizeof(int64) * n);
	counts = palloc(sizeof(int32) * n);
	got = mq_queue_peek(q, n, ids, counts);

	/*
	 * Read the messages BROWSE_CHUNK at a time, each chunk in one pass over
	 * the log (a read of each by itself costs an lseek for the segment's
	 * size: a third of a browse of 6,000), their copies freed per chunk
	 */
	if (got > 0)
	{
		MemoryContext chunkcxt = AllocSetContextCreate(CurrentMemoryContext,
													   "mq.browse chunk",
													   ALLOCSET_DEFAULT_SIZES);
		int			chunk = Min(got, BROWSE_CHUNK);
		MqMessage  *ms = palloc(sizeof(MqMessage) * chunk);
		bool	   *found = palloc(sizeof(bool) * chunk);

		for (int start = 0; start < got; start += chunk)
		{
			int			k = Min(chunk, got - start);
			MemoryContext oldcxt = MemoryContextSwitchTo(chunkcxt);

			(void) mq_log_fetch_many(ids + start, k, ms, found);
			for (int i = 0; i < k; i++)
				if (found[i])
					put_browse_row(rsinfo, q->name, &ms[i], counts[start + i]);
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(chunkcxt);
		}
		MemoryContextDelete(chunkcxt);
	}
}

/* mq.browse(queue, max_messages): ready messages, not taken */
Datum
mq_browse(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	int			n;

	MQ_CHECK_ARGS(fcinfo, "queue", "max_messages");
	n = mq_count_arg(fcinfo, 1, "max_messages", MQ_MAX_BATCH);
	q = queue_arg(fcinfo, 0, MQ_PRIV_CONSUME);
	browse_rows(fcinfo, q, n);
	return (Datum) 0;
}

/*
 * mq._browse_all(queue): mq.browse of every ready message, however many
 * (queue_ext_pgmq's view pgmq.q_<name>, which pgmq users count).  It
 * reads the whole backlog holding the queue's lock shared, which delays
 * consumers meanwhile: not for the public API, where mq.queues counts.
 */
Datum
mq_browse_all(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	MqQueueCounts c;

	MQ_CHECK_ARGS(fcinfo, "queue");
	q = queue_arg(fcinfo, 0, MQ_PRIV_CONSUME);
	if (q->type == MQ_QUEUE_STREAM)
		browse_rows(fcinfo, q, 1);	/* its error */
	mq_queue_counts(q, &c, NULL);
	/* (ready ones published since are left to the next look) */
	browse_rows(fcinfo, q,
				(int) Min(Max(c.total, 1), (int64) (MaxAllocSize / sizeof(int64))));
	return (Datum) 0;
}

/*
 * mq.lease_ids(queue, msg_ids, lease, deliver): lease messages by id,
 * whatever their state and holder (see mq_queue_lease_ids); lease '0'
 * makes them ready at once.  One row per message found.
 */
Datum
mq_lease_ids(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqQueue    *q;
	Datum	   *elems;
	int			n;
	int64	   *ids;
	int64		lease_us;
	bool		deliver;
	TimestampTz until = 0;
	MqLeased   *out;
	int			got;

	MQ_CHECK_ARGS(fcinfo, "queue", "msg_ids", "lease", "deliver");
	elems = mq_array_arg(fcinfo, 1, INT8OID, "msg_ids", &n);
	lease_us = mq_interval_us(PG_GETARG_INTERVAL_P(2), "lease", 0);
	deliver = PG_GETARG_BOOL(3);
	if (deliver && lease_us == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease must be positive when deliver is true")));
	q = queue_arg(fcinfo, 0, MQ_PRIV_CONSUME);
	if (q->type == MQ_QUEUE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("mq.lease_ids does not apply to stream queue \"%s\"", q->name),
				 errdetail("A stream's messages are leased by its consumer groups.")));
	PreventCommandIfReadOnly("mq.lease_ids");
	InitMaterializedSRF(fcinfo, 0);
	if (n == 0)
		return (Datum) 0;
	ids = palloc(sizeof(int64) * n);
	for (int i = 0; i < n; i++)
		ids[i] = DatumGetInt64(elems[i]);
	if (lease_us > 0)
		until = mq_time_add(GetCurrentTimestamp(), lease_us, "lease");
	out = palloc(sizeof(MqLeased) * n);
	got = mq_queue_lease_ids(q, ids, n, until, deliver, out);
	for (int i = 0; i < got; i++)
	{
		Datum		v[4];
		bool		nulls[4] = {false, false, false, false};

		v[0] = Int64GetDatum(out[i].msg_id);
		v[1] = Int32GetDatum(out[i].delivery_count);
		v[2] = BoolGetDatum(out[i].was_leased);
		v[3] = TimestampTzGetDatum(out[i].was_until);
		nulls[3] = out[i].was_until == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}

/* mq.in_flight(queue, max_messages): what is leased now, with lease ends */
Datum
mq_in_flight(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqQueue    *q;
	int			n;
	int64	   *ids;
	int32	   *counts;
	TimestampTz *untils;
	int			got;

	MQ_CHECK_ARGS(fcinfo, "queue", "max_messages");
	n = mq_count_arg(fcinfo, 1, "max_messages", MQ_MAX_BATCH);
	q = queue_arg(fcinfo, 0, MQ_PRIV_CONSUME);
	if (q->type == MQ_QUEUE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("mq.in_flight does not apply to stream queue \"%s\"", q->name),
				 errdetail("A stream's messages are leased by its consumer groups.")));
	InitMaterializedSRF(fcinfo, 0);
	ids = palloc(sizeof(int64) * n);
	counts = palloc(sizeof(int32) * n);
	untils = palloc(sizeof(TimestampTz) * n);
	got = mq_queue_in_flight(q, n, ids, counts, untils);
	for (int i = 0; i < got; i++)
	{
		Datum		v[3];
		bool		nulls[3] = {false, false, false};

		v[0] = Int64GetDatum(ids[i]);
		v[1] = Int32GetDatum(counts[i]);
		v[2] = TimestampTzGetDatum(untils[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}

/*
 * Reading a message outside a queue needs consume on the exchange it was
 * published to (for the default exchange: on the queue it named).
 */
static bool
may_read_message(MqMessage *m)
{
	MqExchange *ex;

	if (m->exchange && m->exchange[0] == '\0')
	{
		MqQueue    *q = mq_queue_lookup(m->routing_key, true);

		return q ? mq_acl_allows(&q->acl, MQ_PRIV_CONSUME) : superuser();
	}
	ex = mq_exchange_lookup(m->exchange, true);
	return ex ? mq_acl_allows(&ex->acl, MQ_PRIV_CONSUME) : superuser();
}

/*
 * The stream positions of message m: its own row's when it is kept inline,
 * else those this transaction's appends gave it (queue.h); n of them.
 */
static int
message_positions(MqMessage *m, MqStreamPos *pos, int max)
{
	int			n = mq_stream_noted(m->msg_id, pos, max);

	if (n > 0)
		return n;
	if (m->stream_queue_id != 0)
	{
		pos[0].queue_id = m->stream_queue_id;
		pos[0].partition = m->stream_partition;
		pos[0].offset = m->stream_offset;
		return 1;
	}
	return 0;
}

/*
 * A row of mq.message: partition and offset when the message is in one
 * stream at a known position (NULL otherwise, and for a message routed to
 * several streams: mq.message_position names each)
 */
static void
message_position_row(ReturnSetInfo *rsinfo, MqMessage *m)
{
	MqStreamPos pos[2];

	if (message_positions(m, pos, 2) == 1)
		mq_put_delivery_row(rsinfo, "", m, false, 0, pos[0].partition, pos[0].offset, -1,
							NULL);
	else
		put_row(rsinfo, "", m, false, 0, NULL);
}

static void
message_rows(FunctionCallInfo fcinfo, List *ids)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, ids)
	{
		MqMessage	m;

		if (!mq_log_fetch(*(int64 *) lfirst(lc), &m))
			continue;
		if (!may_read_message(&m))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to read message " INT64_FORMAT, m.msg_id),
					 errdetail("Reading a message needs consume on exchange \"%s\".", m.exchange)));
		message_position_row(rsinfo, &m);
	}
}

/* mq.message(msg_id): one message by id (no row if none) */
Datum
mq_message(PG_FUNCTION_ARGS)
{
	int64	   *id = palloc(sizeof(int64));

	MQ_CHECK_ARGS(fcinfo, "msg_id");
	mq_catalog_refresh();
	*id = PG_GETARG_INT64(0);
	message_rows(fcinfo, list_make1(id));
	return (Datum) 0;
}

/*
 * The stream positions known for msg_id (message_positions; a message kept
 * in the log is read only when this transaction's appends did not note it)
 */
static int
known_positions(int64 msg_id, MqStreamPos *pos, int max)
{
	MqMessage	m;
	int			n = mq_stream_noted(msg_id, pos, max);

	if (n == 0 && msg_id >= MQ_INLINE_MSGID_MIN)
	{
		if (!mq_log_fetch(msg_id, &m))
			return 0;
		n = message_positions(&m, pos, max);
	}
	return n;
}

/*
 * Where a message is in stream q is shown to roles with publish or consume
 * on q
 */
static void
check_position_acl(MqQueue *q)
{
	if (!mq_acl_allows(&q->acl, MQ_PRIV_PUBLISH) &&
		!mq_acl_allows(&q->acl, MQ_PRIV_CONSUME))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for queue \"%s\"", q->name),
				 errdetail("Where a message is in a stream is shown to roles with publish or consume on the stream.")));
}

/*
 * mq.message_position(msg_id): the stream, partition and offset of a
 * stream message, for those who may publish to or consume from that
 * stream: a message kept inline from any session, one kept in the log
 * (with a key, delayed, routed to several queues) in the transaction that
 * sent it (queue.h's MqStreamPos).  No row when none is known.
 */
Datum
mq_message_position(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqStreamPos pos[64];
	int			n;

	MQ_CHECK_ARGS(fcinfo, "msg_id");
	mq_catalog_refresh();
	InitMaterializedSRF(fcinfo, 0);
	n = known_positions(PG_GETARG_INT64(0), pos, lengthof(pos));
	for (int i = n - 1; i >= 0; i--)
	{
		MqQueue    *q = mq_queue_by_id(pos[i].queue_id);
		Datum		v[3];
		bool		nulls[3] = {false, false, false};

		if (q == NULL)
			continue;			/* deleted since */
		check_position_acl(q);
		v[0] = CStringGetTextDatum(q->name);
		v[1] = Int32GetDatum(pos[i].partition);
		v[2] = Int64GetDatum(pos[i].offset);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}

/*
 * mq.message_offset(msg_id): the offset of a message that is in one stream
 * at a known position, as mq.message_position would show it; NULL when it
 * has none or several (a message routed to several streams: one each, which
 * only mq.message_position names).  A scalar, so that
 * SELECT mq.message_offset(mq.send(...)) sends and learns the offset in one
 * statement without a set-returning function's FunctionScan (mq-rocketmq's
 * SendMessage; bench/README.md, RocketMQ: about 50,000 instructions less a
 * send).  STRICT: NULL for a NULL msg_id.
 */
Datum
mq_message_offset(PG_FUNCTION_ARGS)
{
	MqStreamPos pos[2];
	MqQueue    *q;

	mq_catalog_refresh();
	if (known_positions(PG_GETARG_INT64(0), pos, lengthof(pos)) != 1)
		PG_RETURN_NULL();
	q = mq_queue_by_id(pos[0].queue_id);
	if (q == NULL)
		PG_RETURN_NULL();		/* deleted since */
	check_position_acl(q);
	PG_RETURN_INT64(pos[0].offset);
}

/* mq.messages_by_key(key, max_messages): newest first */
Datum
mq_messages_by_key(PG_FUNCTION_ARGS)
{
	char	   *key;
	int			n;

	MQ_CHECK_ARGS(fcinfo, "key", "max_messages");
	key = text_to_cstring(PG_GETARG_TEXT_PP(0));
	n = mq_count_arg(fcinfo, 1, "max_messages", MQ_MAX_BATCH);
	mq_catalog_refresh();
	message_rows(fcinfo, mq_log_lookup_key(key, n));
	return (Datum) 0;
}

/*
 * mq._log_find_keys(routing_key, keys): (key, msg_id) of the newest message
 * of each key sent through the default exchange to queue routing_key, one
 * index scan per key and log segment (queue_ext_pgmq maps its msg_ids to
 * queue_ext's with it).  Internal: not granted to PUBLIC, it returns ids
 * only; what may be done with them is checked where they are used.
 */
Datum
mq_log_find_keys(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *rkey;
	Datum	   *keys;
	bool	   *nulls;
	int			n;
	int64	   *ids;

	MQ_CHECK_ARGS(fcinfo, "routing_key", "keys");
	rkey = text_to_cstring(PG_GETARG_TEXT_PP(0));
	keys = mq_array_arg_nulls(fcinfo, 1, TEXTOID, "keys", &n, &nulls);
	for (int i = 0; i < n; i++)
		if (nulls[i])
			keys[i] = (Datum) 0;
	ids = palloc(sizeof(int64) * Max(n, 1));
	mq_catalog_refresh();
	mq_log_lookup_keys(rkey, keys, n, ids);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < n; i++)
	{
		Datum		v[2];
		bool		vn[2] = {false, false};

		if (ids[i] == 0)
			continue;
		v[0] = keys[i];
		v[1] = Int64GetDatum(ids[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, vn);
	}
	return (Datum) 0;
}

/*
 * mq.trace(msg_id): the events of a message's life, for those who may
 * read it (the work is done by mq._trace_impl as the extension owner).
 */
/*
 * Trace row for a message delivered and not yet settled in queue qname:
 * leases live in shared memory only, so this part of its life is known
 * while it lasts (an ack leaves an "acked" settlement).
 */
static void
trace_in_flight(ReturnSetInfo *rsinfo, const char *qname, int64 msg_id)
{
	MqQueue    *q = mq_queue_lookup(qname, true);
	MqDeliveryState st;
	StringInfoData detail;
	Datum		v[4];
	bool		n[4] = {false, false, true, false};

	if (q == NULL || !mq_queue_delivery_state(q, msg_id, &st))
		return;
	initStringInfo(&detail);
	if (st.leased)
		appendStringInfo(&detail, "{\"delivery_count\": %d, \"state\": \"leased\", \"lease_until\": \"%s\"}",
						 st.delivery_count, timestamptz_to_str(st.until));
	else
		appendStringInfo(&detail, "{\"delivery_count\": %d, \"state\": \"ready again\"}",
						 st.delivery_count);
	v[0] = CStringGetTextDatum("delivered");
	v[1] = CStringGetTextDatum(qname);
	v[3] = DirectFunctionCall1(jsonb_in, CStringGetDatum(detail.data));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
}

Datum
mq_trace(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		msg_id;
	MqMessage	m;
	MqOwnerScope owner;
	Oid			types[1] = {INT8OID};
	Datum		values[1];

	MQ_CHECK_ARGS(fcinfo, "msg_id");
	msg_id = PG_GETARG_INT64(0);
	values[0] = Int64GetDatum(msg_id);
	mq_catalog_refresh();
	InitMaterializedSRF(fcinfo, 0);
	/* as mq.cancel and mq.end_half of an id that is not there */
	if (!mq_log_fetch(msg_id, &m))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("message " INT64_FORMAT " does not exist", msg_id),
				 errdetail("No message with this id was published, or the log that held it has been retired.")));
	if (!may_read_message(&m))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to trace message " INT64_FORMAT, msg_id),
				 errdetail("Tracing a message needs consume on exchange \"%s\".", m.exchange)));

	mq_owner_enter(&owner);
	mq_owner_exec("SELECT * FROM mq._trace_impl($1)", 1, types, values, NULL,
				  true, SPI_OK_SELECT, "trace a message");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		v[4];
		bool		n[4];

		heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, v, n);
		/* the tuplestore copies the values before SPI_finish frees them */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
		if (!n[0] && !n[1] && strcmp(TextDatumGetCString(v[0]), "routed") == 0)
			trace_in_flight(rsinfo, TextDatumGetCString(v[1]), msg_id);
	}
	mq_owner_leave(&owner);
	return (Datum) 0;
}
