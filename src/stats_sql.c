/*-------------------------------------------------------------------------
 *
 * stats_sql.c
 *	  Monitoring: the rows of the mq.queues and mq.metrics views.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "acl.h"
#include "msglog.h"
#include "queue/queue.h"
#include "timers.h"

PG_FUNCTION_INFO_V1(mq_queue_stats);
PG_FUNCTION_INFO_V1(mq_session_counters);
PG_FUNCTION_INFO_V1(mq_metrics);
PG_FUNCTION_INFO_V1(mq_queue_visible_sql);
PG_FUNCTION_INFO_V1(mq_queue_has_state_sql);
PG_FUNCTION_INFO_V1(mq_queue_known_empty_sql);

/* An interval of us microseconds, as a Datum */
static Datum
interval_us(int64 us)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = Max(us, 0);
	return IntervalPGetDatum(iv);
}

/*
 * A stream's first and last retained offsets, one per partition, from its
 * partitions' summaries (last: NULL where the partition retains nothing)
 */
static void
stream_offsets(MqQueue *q, const MqStreamPartition *parts, Datum *first_offsets,
			   Datum *last_offsets)
{
	Datum	   *first = palloc(sizeof(Datum) * q->nlanes);
	Datum	   *last = palloc(sizeof(Datum) * q->nlanes);
	bool	   *last_null = palloc(sizeof(bool) * q->nlanes);
	int			dims[1] = {q->nlanes};
	int			lbs[1] = {1};

	for (int p = 0; p < q->nlanes; p++)
	{
		first[p] = Int64GetDatum(parts[p].first_offset);
		last[p] = Int64GetDatum(parts[p].end_offset - 1);
		last_null[p] = parts[p].end_offset <= parts[p].first_offset;
	}
	*first_offsets = PointerGetDatum(construct_array(first, q->nlanes, INT8OID, 8,
													 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	*last_offsets = PointerGetDatum(construct_md_array(last, last_null, 1, dims, lbs,
													   INT8OID, 8, FLOAT8PASSBYVAL,
													   TYPALIGN_DOUBLE));
}

/*
 * The queues a view function reads (call it after mq_catalog_refresh):
 * every queue of this database, or only the one its optional first
 * argument names (NULL: every queue), none when no queue has that name.
 * The armed timers of those queues, counted in one statement either way
 * (one scan of mq.timer for all, not one statement per queue), go to
 * *timer_queues and *timer_counts (mq_timers_count_find); a queue made
 * after they were counted has none.
 */
static List *
queues_to_read(FunctionCallInfo fcinfo, int32 **timer_queues, int64 **timer_counts,
			   int *ntimers)
{
	MqQueue    *q;

	if (PG_NARGS() == 0 || PG_ARGISNULL(0))
	{
		*ntimers = mq_timers_count_all(timer_queues, timer_counts);
		return mq_queue_list();
	}
	q = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), true);
	*ntimers = 0;
	*timer_queues = palloc(sizeof(int32));
	*timer_counts = palloc(sizeof(int64));
	if (q == NULL)
		return NIL;
	(*timer_queues)[0] = q->id;
	(*timer_counts)[0] = mq_timers_count(q->id);
	*ntimers = 1;
	return list_make1(q);
}

/*
 * mq._queue_stats(queue_name text DEFAULT NULL): one row per queue of this
 * database, or the row of queue_name alone
 */
Datum
mq_queue_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	List	   *queues;
	int32	   *timer_queues;
	int64	   *timer_counts;
	int			ntimers;

	mq_catalog_refresh();
	InitMaterializedSRF(fcinfo, 0);
	queues = queues_to_read(fcinfo, &timer_queues, &timer_counts, &ntimers);
	foreach(lc, queues)
	{
		MqQueue    *q = lfirst(lc);
		MqQueueCounts c;
		MqStreamPartition *parts = NULL;
		MqQueueCounters ev;
		Datum		values[20];
		bool		nulls[20];
		bool		held;

		/*
		 * a queue being deleted is left out (queue.h), and one the user may
		 * not see (mq_queue_visible)
		 */
		if (!mq_queue_visible(q) || !mq_queue_inspect_begin(q, &held))
			continue;
		memset(nulls, 0, sizeof(nulls));
		if (q->type == MQ_QUEUE_STREAM)
			parts = palloc(sizeof(MqStreamPartition) * q->nlanes);
		mq_queue_counts(q, &c, parts);
		{
			int64		timers = mq_timers_count_find(q->id, timer_queues,
													  timer_counts, ntimers);

			/* total = ready + unacked + delayed (messages not yet due) */
			c.delayed += timers;
			c.total += timers;
		}
		mq_queue_counters(q, &ev);
		mq_queue_inspect_end(q, held);
		values[0] = CStringGetTextDatum(q->name);
		values[1] = CStringGetTextDatum(q->type == MQ_QUEUE_QUORUM ? "quorum" :
										q->type == MQ_QUEUE_STREAM ? "stream" : "classic");
		values[2] = BoolGetDatum(q->durable);
		values[3] = Int64GetDatum(c.ready);
		values[4] = Int64GetDatum(c.unacked);
		/* a stream delivers nothing: ready is the offsets it retains */
		nulls[4] = q->type == MQ_QUEUE_STREAM;
		values[5] = Int64GetDatum(c.delayed);
		values[6] = Int64GetDatum(c.total);
		values[7] = Int32GetDatum(c.consumers);
		if (c.oldest_ready != 0 && c.ready > 0)
			values[8] = interval_us(now - c.oldest_ready);
		else
			nulls[8] = true;
		if (c.last_delivery != 0)
			values[9] = TimestampTzGetDatum(c.last_delivery);
		else
			nulls[9] = true;
		values[10] = JsonbPGetDatum(q->arguments);
		/*
		 * body sizes are recorded only where x-max-length-bytes needs them,
		 * and in streams (their retained bytes)
		 */
		if (q->max_length_bytes >= 0 || q->type == MQ_QUEUE_STREAM)
			values[11] = Int64GetDatum(c.ready_bytes);
		else
			nulls[11] = true;
		/* streams: partitions, their offsets, retention */
		if (q->type == MQ_QUEUE_STREAM)
		{
			values[12] = Int32GetDatum(q->nlanes);
			stream_offsets(q, parts, &values[13], &values[14]);
			values[15] = interval_us(q->retention_us);
		}
		else
			nulls[12] = nulls[13] = nulls[14] = nulls[15] = true;

		/*
		 * the queue's counters (mq.metrics's queue_ext_*_total), which the
		 * view does not show: the management API's rates
		 */
		values[16] = Int64GetDatum(ev.n[MQ_C_PUBLISHED]);
		values[17] = Int64GetDatum(ev.n[MQ_C_DELIVERED]);
		values[18] = Int64GetDatum(ev.n[MQ_C_REDELIVERED]);
		values[19] = Int64GetDatum(ev.n[MQ_C_ACKED]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * mq._session_counters(): what this backend did that tests and benchmarks
 * look at: entries consumer groups settled by their tag hash without
 * reading the message, and messages read from the message log
 */
Datum
mq_session_counters(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum(mq_stat_tag_skipped);
	values[1] = Int64GetDatum(mq_log_fetches);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/* ---------- mq.metrics ---------- */

/* Series names of the counters (queue.h MqCounter), Prometheus style */
static const char *const counter_names[MQ_NCOUNTERS] = {
	[MQ_C_PUBLISHED] = "queue_ext_published_total",
	[MQ_C_DELIVERED] = "queue_ext_delivered_total",
	[MQ_C_REDELIVERED] = "queue_ext_redelivered_total",
	[MQ_C_ACKED] = "queue_ext_acked_total",
	[MQ_C_NACKED] = "queue_ext_nacked_total",
	[MQ_C_DEAD_LETTERED] = "queue_ext_dead_lettered_total",
	[MQ_C_EXPIRED] = "queue_ext_expired_total",
	[MQ_C_FILTERED] = "queue_ext_filtered_total",
};

/* One key of a labels object (Prometheus label values are strings) */
static void
label_push(JsonbParseState **st, const char *key, const char *value)
{
	JsonbValue	k;
	JsonbValue	v;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	v.type = jbvString;
	v.val.string.val = (char *) value;
	v.val.string.len = strlen(value);
	(void) pushJsonbValue(st, WJB_KEY, &k);
	(void) pushJsonbValue(st, WJB_VALUE, &v);
}

/*
 * The labels of a sample: queue, and for a consumer group's state group
 * (and consumer, a broadcast group's), partition when not negative
 */
static Datum
labels_make(const char *queue, const char *group, const char *consumer,
			int partition)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;

	(void) pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	label_push(&st, "queue", queue);
	if (group != NULL)
		label_push(&st, "group", group);
	if (consumer != NULL)
		label_push(&st, "consumer", consumer);
	if (partition >= 0)
	{
		char		buf[16];

		snprintf(buf, sizeof(buf), "%d", partition);
		label_push(&st, "partition", buf);
	}
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbPGetDatum(JsonbValueToJsonb(res));
}

static void
sample_put(ReturnSetInfo *rsinfo, const char *name, Datum labels, double value)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = CStringGetTextDatum(name);
	values[1] = labels;
	values[2] = Float8GetDatum(value);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * The counters of queue state view (a queue, a group's or a consumer's;
 * filtered is always 0 on a queue's own, as the series of a dashboard
 * that sums them want)
 */
static void
counters_put(ReturnSetInfo *rsinfo, MqQueue *view, Datum labels, bool published)
{
	MqQueueCounters ev;

	mq_queue_counters(view, &ev);
	for (int c = 0; c < MQ_NCOUNTERS; c++)
		if (c != MQ_C_PUBLISHED || published)
			sample_put(rsinfo, counter_names[c], labels, (double) ev.n[c]);
}

/*
 * The samples of a consumer group's state (view; consumer: a broadcast
 * group's consumer, else NULL): its counters, its unacked (in flight),
 * delayed (failed deliveries waiting for their retry) and consumers, and
 * per partition its lag
 */
static void
group_samples(ReturnSetInfo *rsinfo, MqQueue *q, MqGroup *g, MqQueue *view,
			  const char *consumer)
{
	Datum		labels = labels_make(q->name, g->name, consumer, -1);
	int64		in_flight = 0;
	int64		retrying = 0;
	int32		consumers = 0;

	counters_put(rsinfo, view, labels, false);
	for (int p = 0; p < q->nlanes; p++)
	{
		MqGroupProgress pr;

		mq_group_progress(view, p, &pr);
		in_flight += pr.in_flight;
		retrying += pr.retrying;
		consumers = pr.consumers;	/* of the whole state, in each */
		sample_put(rsinfo, "queue_ext_group_lag",
				   labels_make(q->name, g->name, consumer, p),
				   (double) Max(pr.end_offset - pr.committed_offset, 0));
	}
	sample_put(rsinfo, "queue_ext_unacked", labels, (double) in_flight);
	sample_put(rsinfo, "queue_ext_delayed", labels, (double) retrying);
	sample_put(rsinfo, "queue_ext_consumers", labels, (double) consumers);
}

/*
 * mq._metrics(queue_name text DEFAULT NULL): the rows of mq.metrics, one per
 * sample (name, labels, value), from bounded state only: each queue's
 * counters and counts (mq.queues'), each consumer group's counters and
 * progress (mq.consumer_groups'), and the armed timers of all queues in
 * one scan; or those of queue_name alone.
 */
Datum
mq_metrics(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz now = GetCurrentTimestamp();
	MemoryContext per_queue;
	MemoryContext old;
	int32	   *timer_queues;
	int64	   *timer_counts;
	int			ntimers;
	List	   *queues;
	ListCell   *lc;

	mq_catalog_refresh();
	InitMaterializedSRF(fcinfo, 0);
	queues = queues_to_read(fcinfo, &timer_queues, &timer_counts, &ntimers);
	per_queue = AllocSetContextCreate(CurrentMemoryContext, "mq.metrics queue",
									  ALLOCSET_DEFAULT_SIZES);
	foreach(lc, queues)
	{
		MqQueue    *q = lfirst(lc);
		MqQueueCounts c;
		Datum		labels;
		ListCell   *lg;
		bool		held;

		/*
		 * a queue being deleted is left out (queue.h), and one the user may
		 * not see (mq_queue_visible)
		 */
		if (!mq_queue_visible(q) || !mq_queue_inspect_begin(q, &held))
			continue;
		old = MemoryContextSwitchTo(per_queue);
		mq_queue_counts(q, &c, NULL);
		c.delayed += mq_timers_count_find(q->id, timer_queues, timer_counts, ntimers);
		labels = labels_make(q->name, NULL, NULL, -1);
		counters_put(rsinfo, q, labels, true);
		/* a stream: ready is the offsets it retains, as in mq.queues */
		sample_put(rsinfo, "queue_ext_ready", labels, (double) c.ready);
		sample_put(rsinfo, "queue_ext_unacked", labels,
				   q->type == MQ_QUEUE_STREAM ? 0.0 : (double) c.unacked);
		sample_put(rsinfo, "queue_ext_delayed", labels, (double) c.delayed);
		sample_put(rsinfo, "queue_ext_oldest_ready_age_seconds", labels,
				   c.oldest_ready != 0 && c.ready > 0 ?
				   Max(now - c.oldest_ready, 0) / 1000000.0 : 0.0);
		sample_put(rsinfo, "queue_ext_consumers", labels, (double) c.consumers);

		foreach(lg, q->groups)
		{
			MqGroup    *g = lfirst(lg);
			ListCell   *lcc;

			if (!g->broadcast || g->consumers == NIL)
				group_samples(rsinfo, q, g, g->view, NULL);
			else
				foreach(lcc, g->consumers)
				{
					MqGroupConsumer *gc = lfirst(lcc);

					group_samples(rsinfo, q, g, gc->view, gc->name);
				}
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(per_queue);
		mq_queue_inspect_end(q, held);
	}
	MemoryContextDelete(per_queue);
	return (Datum) 0;
}

/*
 * mq._queue_visible(queue text): whether the caller sees the queue in the
 * views (mq_queue_visible: some privilege on it, or pg_read_all_stats);
 * false for a queue that does not exist.  mq.bindings shows a binding only
 * to a role that sees its queue, so that the view names no queue the
 * others hide.
 */
Datum
mq_queue_visible_sql(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	MqQueue    *q;

	mq_catalog_refresh();
	q = mq_queue_lookup(name, true);
	PG_RETURN_BOOL(q != NULL && mq_queue_visible(q));
}

/* mq._queue_has_state(queue): has the queue a state in shared memory? */
Datum
mq_queue_has_state_sql(PG_FUNCTION_ARGS)
{
	MqQueue    *q;

	mq_catalog_refresh();
	q = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	PG_RETURN_BOOL(mq_queue_has_state(q));
}

/* mq._queue_known_empty(queue): is the queue recorded as found unused? */
Datum
mq_queue_known_empty_sql(PG_FUNCTION_ARGS)
{
	MqQueue    *q;

	mq_catalog_refresh();
	q = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	PG_RETURN_BOOL(mq_queue_known_empty(q));
}
