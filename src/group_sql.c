/*-------------------------------------------------------------------------
 *
 * group_sql.c
 *	  SQL entry points of consumer groups on streams: mq.group_declare,
 *	  mq.group_delete, mq.seek and the rows of the
 *	  mq.consumer_groups view.
 *
 * Consuming and settling with a group go through mq.consume, mq.ack and
 * mq.nack (consume_sql.c, settle_sql.c) on the group's view of its stream.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "acl.h"
#include "args.h"
#include "catalog.h"
#include "filter.h"
#include "queue/queue.h"
#include "timers.h"

PG_FUNCTION_INFO_V1(mq_group_declare);
PG_FUNCTION_INFO_V1(mq_group_delete);
PG_FUNCTION_INFO_V1(mq_seek);
PG_FUNCTION_INFO_V1(mq_consumer_groups);

#define text_arg(n) text_to_cstring(PG_GETARG_TEXT_PP(n))

/* The stream named by argument 0, with privilege priv (42809: not a stream) */
static MqQueue *
stream_arg(FunctionCallInfo fcinfo, int priv)
{
	MqQueue    *q;

	mq_catalog_refresh();
	q = mq_queue_lookup(text_arg(0), false);
	mq_check_queue_privilege(q, priv);
	mq_groups_need_stream(q);
	return q;
}

/*
 * mq.group_declare(queue, group_name, mode, start, filter, filter_type,
 *					ordered, max_retries, retry_delays)
 */
Datum
mq_group_declare(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	char	   *name;
	char	   *mode;
	char	   *start;
	char	   *filter_type;
	bool		earliest = false;
	TimestampTz from_time = MQ_NO_TIME;
	int32		max_retries;
	Oid			types[10] = {INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	BOOLOID, INT4OID, INTERVALARRAYOID, OIDOID};
	Datum		values[10];
	char		nulls[11] = "          ";
	char	   *res;
	int32		gid;

	MQ_CHECK_ARGS(fcinfo, "queue", "group_name", "mode", "start", NULL, "filter_type",
				  "ordered", "max_retries", NULL);
	name = text_arg(1);
	mode = text_arg(2);
	start = text_arg(3);
	max_retries = PG_GETARG_INT32(7);
	filter_type = text_arg(5);
	q = stream_arg(fcinfo, MQ_PRIV_CONFIGURE);

	if (name[0] == '\0' || strlen(name) > 200)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid consumer group name \"%s\"", name),
				 errdetail("A group name is 1 to 200 bytes.")));
	if (strcmp(mode, "clustering") != 0 && strcmp(mode, "broadcast") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid consumer group mode \"%s\"", mode),
				 errhint("Modes are clustering and broadcast.")));
	/* a bad filter: 42601 with the position, an unknown type 22023 */
	mq_filter_free(mq_filter_compile(filter_type,
									 PG_ARGISNULL(4) ? NULL : text_arg(4),
									 CurrentMemoryContext));
	if (max_retries < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_retries must not be negative")));
	if (!PG_ARGISNULL(8))
	{
		int			n;
		Datum	   *d = mq_array_arg(fcinfo, 8, INTERVALOID, "retry_delays", &n);

		if (n == 0 || n > MQ_MAX_RETRY_DELAYS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("retry_delays must have 1 to %d elements", MQ_MAX_RETRY_DELAYS)));
		for (int i = 0; i < n; i++)
			(void) mq_interval_us(DatumGetIntervalP(d[i]), "retry_delays", 1);
	}
	if (strcmp(start, "earliest") == 0)
		earliest = true;
	else if (strcmp(start, "latest") != 0)
	{
		from_time = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
															CStringGetDatum(start),
															ObjectIdGetDatum(InvalidOid),
															Int32GetDatum(-1)));
		/* 'earliest' and 'latest' say what -infinity and infinity would */
		mq_time_finite(from_time, "start");
	}

	values[0] = Int32GetDatum(q->id);
	values[1] = CStringGetTextDatum(name);
	values[2] = CStringGetTextDatum(mode);
	values[3] = CStringGetTextDatum(start);
	values[4] = PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4);
	if (PG_ARGISNULL(4))
		nulls[4] = 'n';
	values[5] = PG_GETARG_DATUM(5);
	values[6] = PG_GETARG_DATUM(6);
	values[7] = Int32GetDatum(max_retries);
	values[8] = PG_ARGISNULL(8) ? (Datum) 0 : PG_GETARG_DATUM(8);
	if (PG_ARGISNULL(8))
		nulls[8] = 'n';
	values[9] = ObjectIdGetDatum(GetUserId());
	res = mq_run_internal("_group_declare_impl", 10, types, values, nulls);
	gid = res ? atoi(res) : 0;

	/*
	 * A new group: where it starts in each partition (a broadcast group's
	 * consumers copy it when they first consume)
	 */
	if (gid > 0)
		mq_group_start(q, gid, earliest, from_time);
	PG_RETURN_VOID();
}

/*
 * The ids of an int[] returned as text by mq_run_internal ("{1,2}"), each
 * dropped once this transaction commits; returns them
 */
static List *
drop_listed_after_commit(int32 queue_id, const char *res)
{
	List	   *ids = NIL;
	const char *p = res;

	while (p != NULL && *p != '\0')
	{
		char	   *end;
		long		id;

		if (*p < '0' || *p > '9')
		{
			p++;
			continue;
		}
		id = strtol(p, &end, 10);
		mq_queue_state_drop_at_end(queue_id, (int32) id, true, false);
		ids = lappend_int(ids, (int) id);
		p = end;
	}
	return ids;
}

/*
 * The dead-letter queue of group name, whose group was just deleted: it
 * goes too when it is empty (no message ready, unacked or delayed), or
 * whatever it holds with drop_all, and no group of that name is left on
 * another stream (they share it); one that holds messages is otherwise
 * kept, with a NOTICE saying so.  Locked as
 * mq.queue_delete locks a queue: its object lock, then its anchor's, which
 * waits for every transaction that dead-lettered to it, so that what is
 * counted is what it holds.  A group that never dead-lettered has none.
 */
static void
group_dlq_drop(const char *name, bool drop_all)
{
	char	   *dlq_name = psprintf("%s%s", MQ_GROUP_DLQ_PREFIX, name);
	MqQueue    *dlq;
	ListCell   *lc;
	MqQueueCounts counts;
	int64		held;
	Oid			types[5] = {TEXTOID, BOOLOID, BOOLOID, INT8OID, INT4OID};
	Datum		values[5];

	mq_catalog_refresh();
	dlq = mq_queue_lookup(dlq_name, true);
	if (dlq == NULL)
		return;
	foreach(lc, mq_queue_list())
	{
		MqQueue    *q = lfirst(lc);

		if (q->type == MQ_QUEUE_STREAM && mq_group_lookup(q, name, true) != NULL)
			return;
	}
	LockDatabaseObject(mq_internal_relid("cat_queue"), dlq->id, 0, AccessExclusiveLock);
	mq_catalog_refresh();
	dlq = mq_queue_lookup(dlq_name, true);
	if (dlq == NULL)
		return;
	mq_queue_delete_lock(dlq);
	mq_queue_counts(dlq, &counts, NULL);
	held = counts.ready + counts.unacked + mq_timers_count(dlq->id);
	if (held > 0 && !drop_all)
	{
		ereport(NOTICE,
				(errmsg("dead-letter queue \"%s\" of consumer group \"%s\" is kept: it holds " INT64_FORMAT " message(s)",
						dlq_name, name, held),
				 errhint("Move them back with mq.redrive('%s'), or delete the queue with mq.queue_delete.",
						 dlq_name)));
		return;
	}
	values[0] = CStringGetTextDatum(dlq_name);
	values[1] = BoolGetDatum(false);
	values[2] = BoolGetDatum(!drop_all);
	values[3] = Int64GetDatum(held);
	values[4] = Int32GetDatum(counts.consumers);
	mq_run_internal("_queue_delete_impl", 5, types, values, NULL);
	mq_queue_state_drop_at_end(dlq->id, 0, true, false);
}

/* mq.group_delete(queue, group_name, drop_dead_letters) */
Datum
mq_group_delete(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	MqGroup    *g;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		values[2];

	MQ_CHECK_ARGS(fcinfo, "queue", "group_name", "drop_dead_letters");
	q = stream_arg(fcinfo, MQ_PRIV_CONFIGURE);
	g = mq_group_lookup(q, text_arg(1), false);
	values[0] = Int32GetDatum(q->id);
	values[1] = Int32GetDatum(g->id);
	/* and its broadcast consumers' */
	(void) drop_listed_after_commit(q->id, mq_run_internal("_group_delete_impl", 2,
														   types, values, NULL));
	mq_queue_state_drop_at_end(q->id, g->id, true, false);
	group_dlq_drop(text_arg(1), PG_GETARG_BOOL(2));
	PG_RETURN_VOID();
}

/*
 * mq.seek(queue, group_name, to_offset, to_time, partition)
 *
 * Moves the group's position in one partition (or all) to an offset or to
 * the first message stored at or after a time.  The group's settlement
 * logs of those partitions are emptied (TRUNCATE, in this transaction: it
 * waits for the transactions that wrote there, consumers of the group
 * among them) and one FLOOR is written at the new position, so the replay
 * of queue_load.c, unchanged, starts there and knows of no settlement
 * before the seek.  The group's shared state is dropped once this
 * transaction commits, as for group_delete: its in-flight deliveries are
 * gone (a later ack of one is 55000) and the next consume reloads it.
 * Privilege: consume on the stream, as RocketMQ's resetOffset is a
 * consumer's operation; it changes nothing other groups see.
 */
Datum
mq_seek(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	MqGroup    *g;
	int64		to_offset = -1;
	TimestampTz to_time = MQ_NO_TIME;
	int			partition = -1;
	Oid			types[3] = {INT4OID, INT4OID, INT4OID};
	Datum		values[3];
	char		nulls[4] = "   ";
	List	   *consumers;
	ListCell   *lc;

	MQ_CHECK_ARGS(fcinfo, "queue", "group_name");
	q = stream_arg(fcinfo, MQ_PRIV_CONSUME);
	g = mq_group_lookup(q, text_arg(1), false);
	if (PG_ARGISNULL(2) == PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mq.seek needs exactly one of to_offset and to_time")));
	if (!PG_ARGISNULL(2))
		to_offset = Max(PG_GETARG_INT64(2), 0);	/* below: the first retained */
	else
	{
		to_time = PG_GETARG_TIMESTAMPTZ(3);
		mq_time_finite(to_time, "to_time");
	}
	if (!PG_ARGISNULL(4))
	{
		partition = PG_GETARG_INT32(4);
		if (partition < 0 || partition >= q->nlanes)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition %d is out of range for stream \"%s\"",
							partition, q->name),
					 errdetail_plural("The stream has %d partition, numbered from 0.",
									   "The stream has %d partitions, numbered from 0.",
									   q->nlanes, q->nlanes)));
	}

	values[0] = Int32GetDatum(q->id);
	values[1] = Int32GetDatum(g->id);
	values[2] = Int32GetDatum(partition);
	if (partition < 0)
		nulls[2] = 'n';
	/* a broadcast group: every consumer is sought as well */
	consumers = drop_listed_after_commit(q->id, mq_run_internal("_group_seek_impl", 3,
																types, values, nulls));
	mq_group_seek(q, g->id, partition, to_offset, to_time);
	foreach(lc, consumers)
		mq_group_seek(q, lfirst_int(lc), partition, to_offset, to_time);
	mq_queue_state_drop_at_end(q->id, g->id, true, false);
	PG_RETURN_VOID();
}

/* The rows of mq.consumer_groups of one queue state (a group, a consumer) */
static void
progress_rows(ReturnSetInfo *rsinfo, MqQueue *q, MqGroup *g, MqQueue *view,
			  const char *consumer, TimestampTz now)
{
	for (int p = 0; p < q->nlanes; p++)
	{
		MqGroupProgress pr;
		Datum		v[14];
		bool		n[14];

		mq_group_progress(view, p, &pr);
		memset(n, 0, sizeof(n));
		v[0] = CStringGetTextDatum(q->name);
		v[1] = CStringGetTextDatum(g->name);
		v[2] = CStringGetTextDatum(g->mode);
		v[3] = Int32GetDatum(p);
		/* consumer: broadcast groups only */
		v[4] = consumer ? CStringGetTextDatum(consumer) : (Datum) 0;
		n[4] = consumer == NULL;
		v[5] = Int64GetDatum(pr.committed_offset);
		v[6] = Int64GetDatum(pr.end_offset);
		v[7] = Int64GetDatum(Max(pr.end_offset - pr.committed_offset, 0));
		v[8] = Int32GetDatum(pr.in_flight);
		v[9] = Int32GetDatum(pr.retrying);
		v[10] = Int64GetDatum(pr.dead_lettered);
		v[11] = Int32GetDatum(pr.consumers);
		v[12] = TimestampTzGetDatum(pr.last_delivery);
		n[12] = pr.last_delivery == 0;
		v[13] = DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(now),
									TimestampTzGetDatum(pr.last_delivery));
		n[13] = pr.last_delivery == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
	}
}

/*
 * Rows of mq.consumer_groups: one per group and partition; for a broadcast
 * group one per consumer and partition (while it has no consumer, one per
 * partition with consumer NULL: where its consumers will start)
 */
Datum
mq_consumer_groups(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz now = GetCurrentTimestamp();
	ListCell   *lc;

	mq_catalog_refresh();
	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, mq_queue_list())
	{
		MqQueue    *q = lfirst(lc);
		ListCell   *lg;
		bool		held;

		/*
		 * a stream being deleted is left out (queue.h), and one the user
		 * may not see (mq_queue_visible)
		 */
		if (q->groups == NIL || !mq_queue_visible(q) ||
			!mq_queue_inspect_begin(q, &held))
			continue;
		foreach(lg, q->groups)
		{
			MqGroup    *g = lfirst(lg);
			ListCell   *lcc;

			if (!g->broadcast || g->consumers == NIL)
				progress_rows(rsinfo, q, g, g->view, NULL, now);
			else
				foreach(lcc, g->consumers)
				{
					MqGroupConsumer *c = lfirst(lcc);

					progress_rows(rsinfo, q, g, c->view, c->name, now);
				}
		}
		mq_queue_inspect_end(q, held);
	}
	return (Datum) 0;
}
