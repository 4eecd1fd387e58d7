/*-------------------------------------------------------------------------
 *
 * publish_entry.h
 *	  The options of a publish, and what a publish writes from them: the
 *	  message to store, its properties, and each destination's entry and
 *	  lane (publish_entry.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_PUBLISH_ENTRY_H
#define MQ_PUBLISH_ENTRY_H

#include "postgres.h"

#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "durability.h"
#include "msglog.h"
#include "queue/queue.h"

typedef struct MqPublishOpts
{
	bool		mandatory;
	bool		to_queue;		/* mq.send: the routing key names a queue that
								 * must exist (42704 if it went meanwhile) */
	bool		check_privileges;	/* false for internal republishing */
	TimestampTz deliver_at;		/* 0: now */
	int			priority;		/* -1: none */
	int64		expiration_ms;	/* -1: none */
	char	   *key;
	char	  **keys;			/* per message (n), instead of key; NULL: key */
	char	   *tag;
	char	  **tags;			/* per message (n), instead of tag; NULL: tag */
	char	   *message_group;
	char	   *dedup_id;
	char	   *content_type;
	char	   *correlation_id;
	char	   *reply_to;
	MqDurability durability;
	int			partition;		/* streams: the partition asked for; -1: none */
	const int64 *existing_ids;	/* route messages already in the log */
	Jsonb	   *properties;		/* stored as is instead of the fields above */

	/*
	 * The routing keys of a single message (n = 1), given instead of
	 * reading its CC and BCC headers: the first is its routing key.  Used
	 * to republish a stored message (dead letters, half messages), whose
	 * keys are in its annotations.
	 */
	char	  **route_keys;
	int			nroute_keys;
	/* queues not to deliver to (a dead-letter cycle would close) */
	char	  **skip_queues;
	int			nskip_queues;
} MqPublishOpts;

extern void mq_publish_opts_init(MqPublishOpts *o);

/* The properties jsonb of a publish (NULL when there are none) */
extern Jsonb *mq_publish_properties(const MqPublishOpts *o);

/* The lane of a message with this priority (-1: none) in q */
extern int	mq_priority_lane(MqQueue *q, int priority);

/* The partition of a message with business key key published to stream q */
extern int	mq_publish_partition(MqQueue *q, const MqPublishOpts *o, const char *key);

/* Body bytes of a message, what x-max-length-bytes counts */
static inline int32
mq_body_size(bytea *body)
{
	return body ? (int32) VARSIZE_ANY_EXHDR(body) : 0;
}

/* The entry of a new message of q */
extern void mq_publish_entry_init(MqEntry *e, MqQueue *q, int64 msg_id,
								  TimestampTz visible_at, TimestampTz expires_at,
								  bytea *body, const MqPublishOpts *o,
								  const char *tag);

/* Does any message of a batch of n have a business key of its own? */
extern bool mq_publish_any_key(const MqPublishOpts *o, int n);

/* The business key of message i of a publish */
static inline char *
mq_publish_msg_key(const MqPublishOpts *o, int i)
{
	return o->keys ? o->keys[i] : o->key;
}

/* The tag of message i of a publish */
static inline char *
mq_publish_msg_tag(const MqPublishOpts *o, int i)
{
	return o->tags ? o->tags[i] : o->tag;
}

/* The message to store for one publish */
extern MqMessage *mq_publish_message(MqExchange *ex, char *routing_key,
									 Jsonb *headers, bytea *body,
									 const MqPublishOpts *o, char *key,
									 char *tag, Jsonb *props, TimestampTz now);

#endif							/* MQ_PUBLISH_ENTRY_H */
