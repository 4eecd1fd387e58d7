/*-------------------------------------------------------------------------
 *
 * msglog.h
 *	  The message log: segments of mqlog tables holding every message
 *	  once.  How messages belong to queues (entry logs, settlement logs)
 *	  is src/queue/'s; this file knows messages only.
 *
 * A message id is the message's position in the log, like RocketMQ's
 * physical offset (msgid.h), so finding a message by id needs no index.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_MSGLOG_H
#define MQ_MSGLOG_H

#include "postgres.h"

#include "storage/itemptr.h"
#include "utils/jsonb.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "am/mqlog.h"
#include "msgid.h"

/* GUC mq.segment_size: size at which the log starts a new segment, blocks */
extern int	mq_segment_size;

/* Define the settings of the message log (from _PG_init) */
extern void mq_msglog_init(void);

/* One message as stored in the log */
typedef struct MqMessage
{
	int64		msg_id;
	TimestampTz published_at;
	char	   *exchange;
	char	   *routing_key;
	Jsonb	   *headers;		/* may be NULL */
	bytea	   *body;
	char	   *key;			/* business key, may be NULL */
	char	   *tag;
	char	   *message_group;
	char	   *dedup_id;
	Jsonb	   *properties;		/* content_type, correlation_id, ... */
	/* set by mq_log_fetch: a message kept inline (queue.h) in a stream */
	int32		stream_queue_id;	/* its stream; 0: not an inline message */
	int32		stream_partition;
	int64		stream_offset;
} MqMessage;

/*
 * Columns of a log segment: published_at, exchange, routing_key, body,
 * headers, properties, key, tag, message_group, dedup_id -- the optional
 * ones last, so that a message without them stores no null bitmap (mqlog
 * does not store trailing NULLs).
 */
#define MQ_LOG_NATTS 10
#define MQ_LOG_ATT_PUBLISHED_AT 1
#define MQ_LOG_ATT_EXCHANGE 2
#define MQ_LOG_ATT_ROUTING_KEY 3
#define MQ_LOG_ATT_KEY 7
#define MQ_LOG_ATT_DEDUP_ID 10

/* Append messages to the log (durable or unlogged chain); sets msg_id */
extern void mq_log_append(MqMessage **msgs, int n, bool durable);

/*
 * Open the segment to append to (creating the next one when the newest is
 * full); close with table_close(rel, NoLock).
 */
extern Relation mq_log_open_append(bool durable, int64 *segno);

/*
 * The message's half of a linked insert: publish.c writes a message and
 * its queue entry as one WAL record.  mq_log_link_reserve builds the row
 * and locks the log page it goes to, setting msg->msg_id;
 * mqlog_linked_write writes it; mq_log_link_done indexes it.
 */
/* The log columns' values of a message (MQ_LOG_NATTS of each) */
extern void mq_log_row_values(MqMessage *m, Datum *values, bool *isnull);

extern void mq_log_link_reserve(Relation seg, int64 segno, MqMessage *msg,
								MqlogLinkedRow *row);
extern void mq_log_link_done(Relation seg, MqMessage *msg, MqlogLinkedRow *row);

/*
 * Read a message by id (mq_log_fetch_many of one); false if there is no
 * committed (or own) message
 */
extern bool mq_log_fetch(int64 msg_id, MqMessage *out);

/*
 * Read messages ids[0..n-1] (any order, repeats allowed) in one pass over
 * the log: out[i] and found[i] as mq_log_fetch(ids[i], &out[i]) would set
 * them.  Returns how many were found.
 */
extern int	mq_log_fetch_many(const int64 *ids, int n, MqMessage *out, bool *found);

/* Messages read by mq_log_fetch and mq_log_fetch_many (a test counter) */
extern int64 mq_log_fetches;

/* Find the newest message published with this business key */
extern List *mq_log_lookup_key(const char *key, int limit);

/*
 * The newest message of each key keys[i] (text datums, 0 for none) sent
 * to queue rkey through the default exchange: ids[i], 0 if none.  Returns
 * how many were found.
 */
extern int	mq_log_lookup_keys(const char *rkey, const Datum *keys, int n, int64 *ids);

/* Find a message published with dedup_id since 'since'; 0 if none */
extern int64 mq_log_find_dedup(const char *dedup_id, TimestampTz since);

/* Create the next segments ahead of need (maintenance worker) */
extern void mq_segments_prepare(void);

/* Names of log segment relations */
extern char *mq_segment_relname(int64 segno);

#endif							/* MQ_MSGLOG_H */
