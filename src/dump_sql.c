/*-------------------------------------------------------------------------
 *
 * dump_sql.c
 *	  The two steps of mq.import() (queue_ext--0.2.sql) that SQL cannot
 *	  take through the public functions: put one exported message back
 *	  into one lane of one queue as it was (exchange, routing key,
 *	  properties, publish time, due time), and put a consumer group or a
 *	  broadcast consumer back at its committed offset, with the offsets it
 *	  acked above it.  Both are internal: revoked from PUBLIC, like
 *	  mq.import() itself, so only superusers and the extension owner call
 *	  them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "args.h"
#include "catalog.h"
#include "consume_sql.h"
#include "filter.h"
#include "msglog.h"
#include "publish.h"
#include "queue/queue.h"
#include "timers.h"

PG_FUNCTION_INFO_V1(mq_import_message);
PG_FUNCTION_INFO_V1(mq_import_position);

static char *
text_or_null(FunctionCallInfo fcinfo, int arg)
{
	return PG_ARGISNULL(arg) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(arg));
}

/*
 * mq._import_message(queue, lane, visible_at, expires_at, exchange,
 *		routing_key, body, headers, properties, key, tag, message_group,
 *		published_at) RETURNS bigint: store the message once and give it
 * one entry in lane (a priority lane, a stream's partition) of queue; a
 * visible_at in the future arms a timer instead (a delayed message stays
 * delayed to the same time).  Returns the new message id.
 */
Datum
mq_import_message(PG_FUNCTION_ARGS)
{
	MqQueue    *q;
	int			lane;
	MqMessage	msg;
	MqMessage  *msgs[1] = {&msg};
	MqEntry		e;
	bool		delayed;

	MQ_CHECK_ARGS(fcinfo, "queue", "lane", "visible_at", NULL, "exchange", "routing_key",
				  "body", NULL, NULL, NULL, NULL, NULL, "published_at");

	mq_catalog_refresh();
	q = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	lane = PG_GETARG_INT32(1);
	if (lane < 0 || lane >= q->nlanes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lane %d is out of range for queue \"%s\"", lane, q->name),
				 errdetail("The queue has %d lanes, numbered from 0.", q->nlanes)));

	memset(&msg, 0, sizeof(msg));
	msg.published_at = PG_GETARG_TIMESTAMPTZ(12);
	msg.exchange = text_to_cstring(PG_GETARG_TEXT_PP(4));
	msg.routing_key = text_to_cstring(PG_GETARG_TEXT_PP(5));
	msg.body = PG_GETARG_BYTEA_P_COPY(6);
	msg.headers = PG_ARGISNULL(7) ? NULL : PG_GETARG_JSONB_P_COPY(7);
	msg.properties = PG_ARGISNULL(8) ? NULL : PG_GETARG_JSONB_P_COPY(8);
	msg.key = text_or_null(fcinfo, 9);
	msg.tag = text_or_null(fcinfo, 10);
	msg.message_group = text_or_null(fcinfo, 11);

	e.msg_id = 0;
	e.visible_at = PG_GETARG_TIMESTAMPTZ(2);
	e.expires_at = PG_ARGISNULL(3) ? DT_NOEND : PG_GETARG_TIMESTAMPTZ(3);
	e.delivery_count = 0;
	e.body_size = q->max_length_bytes >= 0 || q->type == MQ_QUEUE_STREAM ?
		(int32) VARSIZE_ANY_EXHDR(msg.body) : -1;
	e.group_hash = (q->ordered || q->type == MQ_QUEUE_STREAM) &&
		msg.message_group != NULL && msg.message_group[0] != '\0' ?
		mq_group_hash(msg.message_group) : 0;
	e.tag_hash = q->type == MQ_QUEUE_STREAM && msg.tag != NULL ?
		mq_tag_hash(msg.tag, strlen(msg.tag)) : MQ_TAG_HASH_NONE;
	e.offset = -1;

	/* a stream's messages are appended at once: an offset has no due time */
	delayed = q->type != MQ_QUEUE_STREAM && e.visible_at > GetCurrentTimestamp();

	/* delayed messages wait in durable timers: their body must too */
	mq_log_append(msgs, 1, q->durable || delayed);
	e.msg_id = msg.msg_id;
	if (delayed)
		mq_timers_add(q, lane, &e, 1);
	else
		mq_queue_append(q, lane, &e, 1);
	if (q->durable)
		mq_require_durability(MQ_DURABILITY_LOCAL);
	PG_RETURN_INT64(msg.msg_id);
}

/*
 * mq._import_position(queue, group_name, consumer, partition, to_offset,
 * settled): a consumer group (consumer NULL) or a broadcast consumer (made
 * if new, starting where its group starts) does not consume below
 * to_offset in partition: a FLOOR there, which wins over a lower one it
 * started with (mq.seek would move every consumer of a broadcast group);
 * and the entries at the offsets of settled (above to_offset) count as
 * acked.
 */
Datum
mq_import_position(PG_FUNCTION_ARGS)
{
	MqQueue    *view;
	int			partition;
	int64	   *offsets = NULL;
	int			n = 0;

	MQ_CHECK_ARGS(fcinfo, "queue", "group_name", NULL, "partition", "to_offset");
	view = mq_consume_target(fcinfo, 1, 2, "mq._import_position", NULL);
	partition = PG_GETARG_INT32(3);
	if (partition < 0 || partition >= view->nlanes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition %d is out of range for stream \"%s\"",
						partition, view->name)));
	if (!PG_ARGISNULL(5))
	{
		Datum	   *d = mq_array_arg(fcinfo, 5, INT8OID, "settled", &n);

		offsets = palloc(sizeof(int64) * Max(n, 1));
		for (int i = 0; i < n; i++)
			offsets[i] = DatumGetInt64(d[i]);
	}
	mq_group_seek(view, view->group_id, partition, Max(PG_GETARG_INT64(4), 0),
				  MQ_NO_TIME);
	if (n > 0)
		mq_group_settle_offsets(view, partition, offsets, n);
	/* loaded again from its logs at its next use */
	mq_queue_state_drop_at_end(view->id, view->group_id, true, false);
	PG_RETURN_VOID();
}
