/*-------------------------------------------------------------------------
 *
 * queue.h
 *	  Consumer state of classic and quorum queues, in shared memory: the
 *	  interface of src/queue/ for the rest of queue_ext.
 *
 * The entry logs and the message log are append-only; everything that
 * changes as messages are delivered and settled lives here instead:
 * per queue, a scan position in each priority lane, and a bounded list of
 * "tracked" entries between the lane's floor (everything before it is
 * settled) and its scan position: leased, waiting for redelivery, waiting
 * for their publisher to commit, or settled but not yet below the floor.
 * Settlements are made durable by appending to the settlement log in the
 * settling transaction, and this state is rebuilt from it after a restart.
 *
 * Only this header is included outside src/queue/; the files of the
 * folder share queue/queue_int.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_QUEUE_H
#define MQ_QUEUE_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "msglog.h"

/* ---------- setting up, forgetting (queue_shmem.c) ---------- */

/*
 * From _PG_init: defines the settings of queue state (mq.max_queues,
 * mq.max_in_flight, mq.lane_segment_size) and, when preloading, requests
 * its shared memory.
 */
extern void mq_queue_init(void);

/*
 * Forget the shared state of a deleted queue.  Takes the queue's lock:
 * call it holding no lock on the queue's relations (a consumer may hold
 * the queue's lock while it waits for one of them); topology.c calls it
 * once the deleting transaction has committed and released its locks.
 */
extern void mq_queue_state_drop(int32 queue_id);

/* ---------- publishing (queue_append.c) ---------- */

/*
 * Publishing: append entries to a lane's current generation; they count in
 * the backlog (and wake waiting consumers) when the transaction commits.
 */
extern void mq_queue_append(MqQueue *q, int lane, MqEntry *entries, int n);

/*
 * Publish one message to one lane of q: the message and its entry are
 * written as one WAL record (mq_log_append_linked); sets msg->msg_id.
 */
extern void mq_queue_publish_one(MqQueue *q, int lane, MqMessage *msg,
								 MqEntry *entry, bool durable);

/* Maintenance: start new lane generations, drop settled ones */
extern void mq_queue_rotate(MqQueue *q);

/*
 * Ready messages of q as they will be once this transaction commits, what
 * x-max-length is checked against
 */
extern int64 mq_queue_ready_for_publish(MqQueue *q);

/* ---------- consuming (queue_take.c) ---------- */

/* What consume hands back for one delivery */
typedef struct MqDelivery
{
	int64		msg_id;
	uint64		qpos;
	bool		redelivered;
	int32		delivery_count;
	bool		dead;			/* dead-letter instead of deliver */
	const char *dead_reason;
} MqDelivery;

typedef enum MqTakeMode
{
	MQ_TAKE_LEASE,				/* normal consume */
	MQ_TAKE_AUTO_ACK,			/* consume and settle at once */
	MQ_TAKE_DROP_HEAD,			/* overflow: dead-letter the oldest ready */
	MQ_TAKE_EXPIRE				/* maintenance: dead-letter expired ones at the head */
} MqTakeMode;

/*
 * Take up to n ready messages from q (highest priority lane first).
 * Expired and over-delivered messages come back with dead = true; the
 * caller dead-letters them (and they count against n).
 */
extern int	mq_queue_take(MqQueue *q, int n, TimestampTz lease_until,
						  MqTakeMode mode, const char *consumer, int prefetch,
						  MqDelivery *out);

/* Earliest due time of a delayed message seen by the last take (0: none) */
extern TimestampTz mq_queue_next_due(void);

/* Sleep until something is published to q or the timeout (ms) passes */
extern void mq_queue_prepare_wait(MqQueue *q);
extern bool mq_queue_wait(MqQueue *q, long timeout_ms);
extern void mq_queue_cancel_wait(void);

/* ---------- settling (queue_settle.c) ---------- */

/* What to do with a message leased by this session */
typedef enum MqSettleOp
{
	MQ_SETTLE_OP_ACK,
	MQ_SETTLE_OP_DEAD,
	MQ_SETTLE_OP_REQUEUE,
	MQ_SETTLE_OP_RETRY,			/* settled here, appended again by a timer */
	MQ_SETTLE_OP_EXTEND
} MqSettleOp;

typedef enum MqSettleResult
{
	MQ_SETTLE_RESULT_OK,
	MQ_SETTLE_RESULT_NOT_FOUND,	/* not delivered (unknown, settled or ready) */
	MQ_SETTLE_RESULT_NOT_OWNER	/* leased by another session */
} MqSettleResult;

/*
 * Settle msg_id of q; on success *qpos, *delivery_count and *expires_at
 * (if not NULL) describe its entry, for the settlement record the caller
 * appends in the same transaction.
 */
extern MqSettleResult mq_queue_settle(MqQueue *q, int64 msg_id, MqSettleOp op,
									  TimestampTz when, uint64 *qpos,
									  int32 *delivery_count,
									  TimestampTz *expires_at);

/* Record lane floors every so many settlements (call after settling) */
extern void mq_queue_write_floors(MqQueue *q);

/* Settle every ready message of q without dead-lettering; returns how many */
extern int64 mq_queue_purge_ready(MqQueue *q);

/* ---------- inspection (queue_inspect.c) ---------- */

typedef struct MqQueueCounts
{
	int64		ready;
	int64		unacked;
	int64		delayed;
	int64		total;
	int32		consumers;
	TimestampTz oldest_ready;	/* 0: none */
	TimestampTz last_delivery;	/* 0: never */
} MqQueueCounts;

extern void mq_queue_counts(MqQueue *q, MqQueueCounts *counts);

/*
 * Delivery state of an unsettled message of q that was delivered at least
 * once (false if it never was, or is settled, or is not in q).
 */
typedef struct MqDeliveryState
{
	int32		delivery_count;
	bool		leased;			/* else ready again (redelivery pending) */
	TimestampTz until;			/* lease end, or ready-not-before */
} MqDeliveryState;

extern bool mq_queue_delivery_state(MqQueue *q, int64 msg_id, MqDeliveryState *st);

/* Browse ready messages without taking them */
extern int	mq_queue_peek(MqQueue *q, int n, int64 *msg_ids, int32 *delivery_counts);

/* Lowest log segment an unsettled entry of q refers to (INT64_MAX: none) */
extern int64 mq_queue_min_segno(MqQueue *q);

#endif							/* MQ_QUEUE_H */
