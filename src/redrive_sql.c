/*-------------------------------------------------------------------------
 *
 * redrive_sql.c
 *	  mq.redrive: move dead letters back, like SQS's redrive.
 *
 * mq.redrive(source_queue, target_queue, max_messages) takes the ready
 * messages of a dead-letter queue (any classic or quorum queue), oldest
 * first, and publishes each straight to its target queue (no exchange
 * routing: as the default exchange does, routing key = the target's name),
 * then acks it in the source, all in the caller's transaction: a rollback,
 * or an error of any message, leaves every message where it was.
 *
 * The target is target_queue when given, else the queue the message came
 * from:
 *	- a consumer group's dead letter (x-dlq-origin-queue): back to its
 *	  stream, in the partition it was in (x-dlq-origin-partition) while the
 *	  stream still has it; without the x-dlq-* headers and
 *	  x-reconsume-times (RocketMQ resends with the original properties; the
 *	  retry count starts again).  It is a new message of the stream, at a
 *	  new offset: every group of the stream receives it.
 *	- a RabbitMQ dead letter (x-death, set by the broker: the death mark in
 *	  its annotations): the queue it died in last (x-last-death-queue),
 *	  headers and death history kept, as a shovel moves them.
 * A message with neither, and no target_queue, is an error (22023 naming
 * it).  key, tag, message_group and the other properties travel along.
 * Privileges: consume on the source, publish on every target (42501).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "durability.h"
#include "acl.h"
#include "annotations.h"
#include "args.h"
#include "catalog.h"
#include "msglog.h"
#include "publish.h"
#include "queue/queue.h"
#include "settle.h"

PG_FUNCTION_INFO_V1(mq_redrive);

/* Messages taken (and moved) per round */
#define REDRIVE_BATCH 1000

/* Headers a consumer group's dead letter gets (group_dead_letter) */
static bool
dlq_header(const char *key, int len)
{
	return (len >= 6 && strncmp(key, "x-dlq-", 6) == 0) ||
		(len == 17 && strncmp(key, "x-reconsume-times", 17) == 0);
}

/* headers without the x-dlq-* ones and x-reconsume-times (NULL: none left) */
static Jsonb *
headers_without_dlq(Jsonb *headers)
{
	JsonbParseState *st = NULL;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbValue *res = NULL;
	JsonbIteratorToken tok;
	bool		skip = false;
	int			n = 0;

	if (headers == NULL || !JB_ROOT_IS_OBJECT(headers))
		return headers;
	it = JsonbIteratorInit(&headers->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			skip = dlq_header(v.val.string.val, v.val.string.len);
			if (skip)
				continue;
			n++;
		}
		else if (tok == WJB_VALUE && skip)
			continue;
		res = pushJsonbValue(&st, tok, tok < WJB_BEGIN_ARRAY ? &v : NULL);
	}
	return n == 0 ? NULL : JsonbValueToJsonb(res);
}

/* Where one message goes */
typedef struct RedriveTarget
{
	MqQueue    *q;
	int			partition;		/* streams: the origin partition, -1: chosen */
	bool		strip_dlq;		/* a group's dead letter: drop x-dlq-* */
} RedriveTarget;

/* The target of message m taken from src (explicit: target_queue, or NULL) */
static void
redrive_target(MqQueue *src, MqQueue *explicit, MqMessage *m, RedriveTarget *t)
{
	char	   *origin = mq_jsonb_get_text(m->headers, "x-dlq-origin-queue");
	char	   *part;

	t->partition = -1;
	t->strip_dlq = origin != NULL;
	if (origin == NULL && mq_properties_dead_lettered(m->properties))
		origin = mq_jsonb_get_text(m->headers, "x-last-death-queue");
	if (explicit != NULL)
		t->q = explicit;
	else if (origin == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("message " INT64_FORMAT " of queue \"%s\" has no origin to redrive it to",
						m->msg_id, src->name),
				 errdetail("It has neither an x-dlq-origin-queue header (a consumer group's dead letter) nor the death history of a dead-lettered message."),
				 errhint("Pass target_queue => the queue to move it to.")));
	else
	{
		t->q = mq_queue_lookup(origin, false);
		if (t->q->id == src->id)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("message " INT64_FORMAT " of queue \"%s\" came from that queue itself",
							m->msg_id, src->name),
					 errhint("Pass target_queue => another queue.")));
		mq_check_queue_privilege(t->q, MQ_PRIV_PUBLISH);
	}
	/* back to the partition it was in, while the stream has it */
	part = t->strip_dlq && t->q->type == MQ_QUEUE_STREAM &&
		strcmp(origin, t->q->name) == 0 ?
		mq_jsonb_get_text(m->headers, "x-dlq-origin-partition") : NULL;
	if (part != NULL)
	{
		long		p = strtol(part, NULL, 10);

		if (p >= 0 && p < t->q->nlanes)
			t->partition = (int) p;
	}
}

/* Publish m to t, straight to the queue */
static void
redrive_publish(MqMessage *m, RedriveTarget *t)
{
	MqExchange *ex = mq_exchange_lookup("", false);
	MqPublishOpts o;
	Jsonb	   *headers = t->strip_dlq ? headers_without_dlq(m->headers) : m->headers;
	char	   *rk = t->q->name;
	char	   *prio;
	int64		id;

	mq_publish_opts_init(&o);
	o.check_privileges = false; /* checked: consume on the source, publish here */
	o.mandatory = true;
	o.properties = m->properties;
	o.key = m->key;
	o.tag = m->tag;
	o.message_group = m->message_group;
	o.partition = t->partition;
	o.route_keys = &rk;
	o.nroute_keys = 1;
	prio = mq_jsonb_get_text(m->properties, "priority");
	if (prio)
		o.priority = atoi(prio);
	mq_publish(ex, 1, &rk, &m->body, &headers, &o, &id);
}

/* mq.redrive(source_queue, target_queue, max_messages) returns how many moved */
/*
 * Is name the dead-letter queue %DLQ%<group> of a consumer group that has
 * dead-lettered nothing yet (its DLQ is made at its first dead letter), on
 * a stream the caller may consume from?  Then there is nothing to move.
 */
static bool
group_dlq_not_made(const char *name)
{
	size_t		plen = strlen(MQ_GROUP_DLQ_PREFIX);
	ListCell   *lc;

	if (strncmp(name, MQ_GROUP_DLQ_PREFIX, plen) != 0)
		return false;
	foreach(lc, mq_queue_list())
	{
		MqQueue    *q = lfirst(lc);

		if (q->type == MQ_QUEUE_STREAM &&
			mq_group_lookup(q, name + plen, true) != NULL &&
			mq_acl_allows(&q->acl, MQ_PRIV_CONSUME))
			return true;
	}
	return false;
}

Datum
mq_redrive(PG_FUNCTION_ARGS)
{
	MqQueue    *src;
	MqQueue    *explicit = NULL;
	int64		max_messages = -1;
	int64		moved = 0;
	MqDelivery *dl;
	int64	   *ids;

	MQ_CHECK_ARGS(fcinfo, "source_queue");
	if (!PG_ARGISNULL(2))
	{
		max_messages = PG_GETARG_INT32(2);
		if (max_messages < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_messages must not be negative")));
	}
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot redrive messages on a standby")));
	PreventCommandIfReadOnly("mq.redrive");

	mq_catalog_refresh();
	src = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), true);
	if (src == NULL && group_dlq_not_made(text_to_cstring(PG_GETARG_TEXT_PP(0))))
		PG_RETURN_INT64(0);
	src = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	mq_check_queue_privilege(src, MQ_PRIV_CONSUME);
	if (src->type == MQ_QUEUE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("queue \"%s\" is a stream: mq.redrive moves the messages of a dead-letter queue",
						src->name),
				 errhint("A consumer group's dead letters are in the classic queue %%DLQ%%<group_name>.")));
	if (!PG_ARGISNULL(1))
	{
		explicit = mq_queue_lookup(text_to_cstring(PG_GETARG_TEXT_PP(1)), false);
		if (explicit->id == src->id)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("target_queue is the source queue \"%s\"", src->name)));
		mq_check_queue_privilege(explicit, MQ_PRIV_PUBLISH);
	}

	dl = palloc(sizeof(MqDelivery) * REDRIVE_BATCH);
	ids = palloc(sizeof(int64) * REDRIVE_BATCH);
	while (max_messages < 0 || moved < max_messages)
	{
		int			want = (int) Min(REDRIVE_BATCH, max_messages < 0 ?
									 REDRIVE_BATCH : max_messages - moved);
		TimestampTz lease_until = mq_time_add(GetCurrentTimestamp(),
											  USECS_PER_HOUR, "lease");
		int			got = mq_queue_take(src, want, lease_until, MQ_TAKE_LEASE,
										NULL, 0, dl);
		int			n = 0;
		int			settled;

		if (got == 0)
			break;
		/* expired or over its delivery limit in the source: its own DLX */
		(void) mq_settle_take(src, dl, got, false);
		for (int i = 0; i < got; i++)
		{
			MqMessage	m;
			RedriveTarget t;

			if (dl[i].dead)
				continue;
			if (!mq_log_fetch(dl[i].msg_id, &m))
			{
				/* left leased, as mq.consume leaves it */
				ereport(WARNING,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("message " INT64_FORMAT " of queue \"%s\" is missing from the message log",
								dl[i].msg_id, src->name)));
				continue;
			}
			ids[n++] = dl[i].msg_id;
			redrive_target(src, explicit, &m, &t);
			redrive_publish(&m, &t);
			CHECK_FOR_INTERRUPTS();
		}
		if (n == 0)
			continue;			/* all dead: take again */

		/* ack them in the source, in this transaction */
		settled = mq_settle_taken(src, ids, n);
		if (settled > 0 && src->type == MQ_QUEUE_QUORUM)
			mq_require_durability(MQ_DURABILITY_QUORUM);
		moved += settled;
		if (got < want)
			break;
	}
	pfree(dl);
	pfree(ids);
	PG_RETURN_INT64(moved);
}
