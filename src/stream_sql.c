/*-------------------------------------------------------------------------
 *
 * stream_sql.c
 *	  SQL entry points of stream queues: mq.read, the stateless read of a
 *	  partition by offset or time, and the rows of mq.stream_partitions.
 *
 * mq.read keeps nothing: the client holds its offsets.  It writes no
 * shared state and no table, so it works in read-only transactions and
 * on hot standbys.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "acl.h"
#include "args.h"
#include "catalog.h"
#include "consume_sql.h"
#include "msglog.h"
#include "queue/queue.h"

PG_FUNCTION_INFO_V1(mq_read);
PG_FUNCTION_INFO_V1(mq_stream_partitions);

/*
 * mq.read(queue, partition, from_offset, max_messages, from_time): up to
 * max_messages committed messages of the partition in offset order, from
 * from_offset, else from the first at or after from_time, else from the
 * first retained one
 */
Datum
mq_read(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MqQueue    *q;
	int			partition;
	int64		from_offset = -1;
	int			max_messages;
	TimestampTz from_time = MQ_NO_TIME;
	MqStreamEntry *entries;
	int64	   *ids;
	MqMessage  *msgs;
	bool	   *found;
	int			got;

	MQ_CHECK_ARGS(fcinfo, "queue", "partition", NULL, "max_messages");
	partition = PG_GETARG_INT32(1);
	max_messages = mq_count_arg(fcinfo, 3, "max_messages", MQ_MAX_BATCH);
	if (!PG_ARGISNULL(2))
	{
		from_offset = PG_GETARG_INT64(2);
		if (from_offset < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("from_offset must not be negative")));
	}
	if (!PG_ARGISNULL(4))
	{
		from_time = PG_GETARG_TIMESTAMPTZ(4);
		mq_time_finite(from_time, "from_time");
		if (from_offset >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("only one of from_offset and from_time may be given")));
	}

	mq_catalog_refresh();
	q = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	mq_check_queue_privilege(q, MQ_PRIV_CONSUME);
	if (q->type != MQ_QUEUE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("queue \"%s\" is not a stream", q->name),
				 errhint("mq.read reads stream queues; use mq.consume or mq.browse on classic and quorum queues.")));
	if (partition < 0 || partition >= q->nlanes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition %d is out of range for stream \"%s\"", partition, q->name),
				 errdetail_plural("The stream has %d partition, numbered from 0.",
									   "The stream has %d partitions, numbered from 0.",
									   q->nlanes, q->nlanes)));

	InitMaterializedSRF(fcinfo, 0);
	entries = palloc(sizeof(MqStreamEntry) * max_messages);
	got = mq_stream_read(q, partition, from_offset, from_time, max_messages, entries);
	ids = palloc(sizeof(int64) * Max(got, 1));
	msgs = palloc(sizeof(MqMessage) * Max(got, 1));
	found = palloc(sizeof(bool) * Max(got, 1));
	for (int i = 0; i < got; i++)
		ids[i] = entries[i].msg_id;
	mq_log_fetch_many(ids, got, msgs, found);
	for (int i = 0; i < got; i++)
	{
		MqMessage	m = msgs[i];

		if (!found[i])
		{
			if (mq_stream_offset_dropped(q, partition, entries[i].offset))
				continue;
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("message " INT64_FORMAT " of stream \"%s\" is missing from the message log",
							entries[i].msg_id, q->name)));
			continue;
		}
		mq_put_delivery_row(rsinfo, q->name, &m, false, 0, partition, entries[i].offset, -1,
							NULL);
	}
	pfree(ids);
	pfree(msgs);
	pfree(found);
	pfree(entries);
	return (Datum) 0;
}

/*
 * Rows of mq.stream_partitions: one per partition of each stream, what it
 * retains (read from the partition's logs, as mq.read does, so it works on
 * a hot standby)
 */
Datum
mq_stream_partitions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	mq_catalog_refresh();
	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, mq_queue_list())
	{
		MqQueue    *q = lfirst(lc);
		bool		held;

		/*
		 * a stream being deleted is left out (queue.h), and one the user
		 * may not see (mq_queue_visible)
		 */
		if (q->type != MQ_QUEUE_STREAM || !mq_queue_visible(q) ||
			!mq_queue_inspect_begin(q, &held))
			continue;
		for (int p = 0; p < q->nlanes; p++)
		{
			MqStreamPartition sp;
			Datum		v[7];
			bool		n[7] = {false};

			mq_stream_partition(q, p, &sp);
			v[0] = CStringGetTextDatum(q->name);
			v[1] = Int32GetDatum(p);
			v[2] = Int64GetDatum(sp.first_offset);
			v[3] = Int64GetDatum(sp.end_offset);
			v[4] = Int64GetDatum(sp.bytes);
			v[5] = TimestampTzGetDatum(sp.first_time);
			n[5] = sp.first_time == 0;
			v[6] = TimestampTzGetDatum(sp.last_time);
			n[6] = sp.last_time == 0;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
		}
		mq_queue_inspect_end(q, held);
	}
	return (Datum) 0;
}
