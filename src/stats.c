/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Monitoring: the rows of the mq.queues view.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "msglog.h"
#include "queue/queue.h"
#include "timers.h"

PG_FUNCTION_INFO_V1(mq_queue_stats);
PG_FUNCTION_INFO_V1(mq_session_counters);

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

/* mq._queue_stats(): one row per queue of this database */
Datum
mq_queue_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();

	mq_catalog_refresh();
	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, mq_queue_list())
	{
		MqQueue    *q = lfirst(lc);
		MqQueueCounts c;
		MqStreamPartition *parts = NULL;
		Datum		values[16];
		bool		nulls[16];

		memset(nulls, 0, sizeof(nulls));
		if (q->type == MQ_QUEUE_STREAM)
			parts = palloc(sizeof(MqStreamPartition) * q->nlanes);
		mq_queue_counts(q, &c, parts);
		{
			int64		timers = mq_timers_count(q->id);

			/* total = ready + unacked + delayed (messages not yet due) */
			c.delayed += timers;
			c.total += timers;
		}
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
