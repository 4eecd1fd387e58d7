/*-------------------------------------------------------------------------
 *
 * publish_entry.c
 *	  What a publish writes, built from its options (publish_entry.h): the
 *	  message to store, its properties jsonb, and for each destination
 *	  queue the lane or partition it goes to and its entry (size, message
 *	  group and tag hashes).
 *
 * Pure computation over the options, the message and the queue's catalog
 * entry: this file takes no lock, reads no queue state and writes
 * nothing; the publish path (publish.c) stores what it builds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "filter.h"
#include "publish_entry.h"

/* Options of a publish with nothing set */
void
mq_publish_opts_init(MqPublishOpts *o)
{
	memset(o, 0, sizeof(*o));
	o->check_privileges = true;
	o->priority = -1;
	o->expiration_ms = -1;
	o->durability = MQ_DURABILITY_DEFAULT;
	o->partition = -1;
}

/* Build the properties jsonb (NULL when there are none) */
Jsonb *
mq_publish_properties(const MqPublishOpts *o)
{
	StringInfoData buf;
	bool		any = false;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
#define PROP_STR(name, val) \
	do { if (val) { if (any) appendStringInfoString(&buf, ", "); \
		escape_json(&buf, name); appendStringInfoString(&buf, ": "); \
		escape_json(&buf, val); any = true; } } while (0)
	PROP_STR("content_type", o->content_type);
	PROP_STR("correlation_id", o->correlation_id);
	PROP_STR("reply_to", o->reply_to);
#undef PROP_STR
	if (o->priority >= 0)
	{
		appendStringInfo(&buf, "%s\"priority\": %d", any ? ", " : "", o->priority);
		any = true;
	}
	if (o->expiration_ms >= 0)
	{
		appendStringInfo(&buf, "%s\"expiration\": " INT64_FORMAT, any ? ", " : "",
						 o->expiration_ms);
		any = true;
	}
	appendStringInfoChar(&buf, '}');
	if (!any)
		return NULL;
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

/*
 * The lane of a message with this priority (-1: none) in q: a classic
 * queue has one per level of its x-max-priority (none: all in lane 0),
 * larger priorities count as the maximum; a quorum queue has 32, and a
 * message without a priority goes to lane 4 (RabbitMQ 4.3's default), so
 * that priorities 0..3 come after it.  A quorum queue declared with one
 * lane, before quorum queues had priorities, keeps FIFO order.
 */
int
mq_priority_lane(MqQueue *q, int priority)
{
	if (q->nlanes <= 1)
		return 0;
	if (priority < 0)
		return q->type == MQ_QUEUE_QUORUM ?
			Min(MQ_QUORUM_DEFAULT_PRIORITY, q->nlanes - 1) : 0;
	return Min(priority, q->nlanes - 1);
}

/*
 * The partition of a message published to stream q: the partition asked
 * for, else a hash of its message_group, else of its key (so that one
 * group's or key's messages stay in order in one partition), else the
 * next of a round robin of this session.
 */
int
mq_publish_partition(MqQueue *q, const MqPublishOpts *o, const char *key)
{
	static uint32 round_robin = 0;
	const char *by = o->message_group ? o->message_group : key;

	if (o->partition >= 0)
	{
		if (o->partition >= q->nlanes)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition %d is out of range for stream \"%s\"", o->partition, q->name),
					 errdetail_plural("The stream has %d partition, numbered from 0.",
									   "The stream has %d partitions, numbered from 0.",
									   q->nlanes, q->nlanes)));
		return o->partition;
	}
	if (q->nlanes == 1)
		return 0;
	if (by)
		return (int) (hash_bytes((const unsigned char *) by, strlen(by)) % (uint32) q->nlanes);
	if (round_robin == 0)
		round_robin = (uint32) MyProcPid;	/* sessions start apart */
	return (int) (round_robin++ % (uint32) q->nlanes);
}

/*
 * The tag hash a stream keeps in the entry, for groups' tag filters
 * (MQ_TAG_HASH_NONE: no tag, and always on other queues)
 */
static uint32
entry_tag_hash(MqQueue *q, const char *tag)
{
	if (q->type != MQ_QUEUE_STREAM || tag == NULL)
		return MQ_TAG_HASH_NONE;
	return mq_tag_hash(tag, strlen(tag));
}

/*
 * The message group an ordered queue keeps in the entry (0: none).  A
 * stream keeps it too, whenever the message has a message_group: any of
 * its consumer groups may be ordered.  A stream message without one stores
 * nothing more (a trailing NULL).
 */
static uint32
entry_group_hash(MqQueue *q, const MqPublishOpts *o)
{
	if ((!q->ordered && q->type != MQ_QUEUE_STREAM) ||
		o->message_group == NULL || o->message_group[0] == '\0')
		return 0;
	return mq_group_hash(o->message_group);
}

/* The entry of a new message of q, with this tag (NULL: none) */
void
mq_publish_entry_init(MqEntry *e, MqQueue *q, int64 msg_id, TimestampTz visible_at,
		  TimestampTz expires_at, bytea *body, const MqPublishOpts *o,
		  const char *tag)
{
	e->msg_id = msg_id;
	e->visible_at = visible_at;
	e->expires_at = expires_at;
	e->delivery_count = 0;
	e->body_size = q->max_length_bytes >= 0 || q->type == MQ_QUEUE_STREAM ?
		mq_body_size(body) : -1;
	e->group_hash = entry_group_hash(q, o);
	e->tag_hash = entry_tag_hash(q, tag);
}

/* Does any message of a batch of n have a business key of its own? */
bool
mq_publish_any_key(const MqPublishOpts *o, int n)
{
	if (o->keys != NULL)
		for (int i = 0; i < n; i++)
			if (o->keys[i] != NULL)
				return true;
	return false;
}

/* The message to store for one publish */
MqMessage *
mq_publish_message(MqExchange *ex, char *routing_key, Jsonb *headers, bytea *body,
			const MqPublishOpts *o, char *key, char *tag, Jsonb *props,
			TimestampTz now)
{
	MqMessage  *msg = palloc0(sizeof(MqMessage));

	msg->published_at = now;
	msg->exchange = ex->name;
	msg->routing_key = routing_key;
	msg->headers = headers;
	msg->body = body;
	msg->key = key;
	msg->tag = tag;
	msg->message_group = o->message_group;
	msg->dedup_id = o->dedup_id;
	msg->properties = props;
	return msg;
}
