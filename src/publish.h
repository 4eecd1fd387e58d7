/*-------------------------------------------------------------------------
 *
 * publish.h
 *	  Publishing: route a message (route.h), store it once, append queue
 *	  entries; and what publishing and settling call each other for:
 *	  length limits and drop-head overflow, dead-lettering, the settling
 *	  sequence.  The options of a publish are in publish_entry.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_PUBLISH_H
#define MQ_PUBLISH_H

#include "postgres.h"

#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "publish_entry.h"
#include "queue/queue.h"

/* GUC mq.dedup_window (ms) */
extern int	mq_dedup_window;

/* Define the settings of publishing (from _PG_init) */
extern void mq_publish_init(void);

/*
 * Publish n messages to exchange ex.  ids[i] receives the message id, or 0
 * when the message was not routed anywhere (and not mandatory).
 */
extern void mq_publish(MqExchange *ex, int n, char **routing_keys,
					   bytea **bodies, Jsonb **headers,
					   const MqPublishOpts *o, int64 *ids);

/*
 * The one sequence that settles deliveries (consume, ack/nack/reject,
 * purge, drop-head, expiry): dead-letter the dead ones, give the others
 * live_kind (0: none; MQ_SETTLE_RETRY arms a timer for retry_at), record
 * it all and write the floors.  Returns how many were settled.
 */
extern int	mq_settle_deliveries(MqQueue *q, MqDelivery *dl, int n,
								 int16 live_kind, TimestampTz retry_at);
extern int	mq_settle_deliveries_as(MqQueue *q, MqDelivery *dl, int n,
									int16 live_kind, TimestampTz retry_at,
									int acked_counter);

/*
 * Dead-letter the head of a drop-head queue over its limits: after a
 * publish (the publisher holds the queue's turn to its commit), after a
 * return, or in the worker (turn taken only if free; false if it was not)
 */
typedef enum MqTrimWhen
{
	MQ_TRIM_PUBLISH,
	MQ_TRIM_RETURN,
	MQ_TRIM_WORKER
} MqTrimWhen;

extern bool mq_overflow_drop_head(MqQueue *q, MqTrimWhen when);

/* Has q a length limit (and so do its publishers take turns)? */
extern bool mq_queue_limited(MqQueue *q);

/*
 * Does one more message of size body bytes fit q's limits with *ready
 * messages of *ready_bytes body bytes ready?  If it does, it counts in them.
 */
extern bool mq_limits_admit_one(MqQueue *q, int64 *ready, int64 *ready_bytes,
								int32 size);

/* Dead-letter a message taken from q: republish it to q's DLX */
extern int16 mq_dead_letter(MqQueue *q, int64 msg_id, const char *reason);

#endif							/* MQ_PUBLISH_H */
