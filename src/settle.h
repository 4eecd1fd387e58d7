/*-------------------------------------------------------------------------
 *
 * settle.h
 *	  The settle verb: settle deliveries in queue state and run the
 *	  settling sequence, in one call from an SQL entry point.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_SETTLE_H
#define MQ_SETTLE_H

#include "postgres.h"

#include "utils/timestamp.h"

#include "catalog.h"
#include "queue/queue.h"

/*
 * Settle ids[0..n-1] of q with op (by receipt when receipts is not NULL):
 * mark them in queue state, dead-letter those that died (op DEAD, or over
 * x-delivery-limit, with dead_reason or "delivery_limit"), record the
 * settlements, and trim a drop-head queue a requeue took over its limits.
 * Raises 55000 for an id not delivered to this session (or a receipt no
 * longer valid).  A quorum queue's commit waits for its standbys.
 */
extern void mq_settle(MqQueue *q, const int64 *ids, const uint64 *receipts,
					  int n, MqSettleOp op, TimestampTz when,
					  const char *dead_reason);

/*
 * Settle what a take of q returned (dl[0..n-1]): dead-letter the dead
 * ones (expired, over x-delivery-limit), and with auto_ack ack the others.
 * Returns how many were settled; the commit's durability is the caller's
 * to ask for.
 */
extern int	mq_settle_take(MqQueue *q, MqDelivery *dl, int n, bool auto_ack);

/*
 * Ack ids[0..n-1] of q, which this call has just taken: one that is not
 * delivered here any more is passed over.  Returns how many were settled;
 * the commit's durability is the caller's to ask for.
 */
extern int	mq_settle_taken(MqQueue *q, const int64 *ids, int n);

/*
 * mq_settle_taken for the messages a consumer group's filter rejected once
 * fetched: counted as filtered (mq.metrics), not as acked
 */
extern int	mq_settle_filtered(MqQueue *q, const int64 *ids, int n);

#endif							/* MQ_SETTLE_H */
