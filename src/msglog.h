/*-------------------------------------------------------------------------
 *
 * msglog.h
 *	  The message log: segments of mqlog tables holding every message
 *	  once, per-queue entry logs, and the settlement log.
 *
 * A message id is the message's position in the log, like RocketMQ's
 * physical offset: (segment number, block, line pointer) packed in 63 bits,
 * so finding a message by id needs no index.
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

#include "catalog.h"

/* msg_id = segno << 26 | block << 9 | offset */
#define MQ_MSGID_OFF_BITS	9
#define MQ_MSGID_BLK_BITS	17
#define MQ_SEGMENT_MAX_BLOCKS	((BlockNumber) 1 << MQ_MSGID_BLK_BITS)

static inline int64
mq_msgid_make(int64 segno, ItemPointer tid)
{
	return (segno << (MQ_MSGID_OFF_BITS + MQ_MSGID_BLK_BITS)) |
		((int64) ItemPointerGetBlockNumber(tid) << MQ_MSGID_OFF_BITS) |
		ItemPointerGetOffsetNumber(tid);
}

static inline int64
mq_msgid_segno(int64 msg_id)
{
	return msg_id >> (MQ_MSGID_OFF_BITS + MQ_MSGID_BLK_BITS);
}

static inline void
mq_msgid_tid(int64 msg_id, ItemPointer tid)
{
	ItemPointerSet(tid,
				   (BlockNumber) ((msg_id >> MQ_MSGID_OFF_BITS) & (MQ_SEGMENT_MAX_BLOCKS - 1)),
				   (OffsetNumber) (msg_id & ((1 << MQ_MSGID_OFF_BITS) - 1)));
}

/*
 * Queue position: where an entry sits in a queue's entry logs.  Each
 * priority lane is a chain of generations (tables q<queue>_<lane>_<gen>,
 * see src/queue/), so a position is
 *		lane (8 bits) | generation (16) | block (24) | line pointer (16)
 * and positions of one lane grow in the order entries were written.
 */
#define MQ_QPOS_LANE_SHIFT	56
#define MQ_QPOS_GEN_SHIFT	40
#define MQ_QPOS_MAX_GEN		0xFFFF
#define MQ_LANE_MAX_BLOCKS	((BlockNumber) 1 << 24)

static inline uint64
mq_qpos_make(int lane, int gen, ItemPointer tid)
{
	return ((uint64) lane << MQ_QPOS_LANE_SHIFT) |
		((uint64) gen << MQ_QPOS_GEN_SHIFT) |
		((uint64) ItemPointerGetBlockNumber(tid) << 16) |
		ItemPointerGetOffsetNumber(tid);
}

/* Position of the first entry of a generation */
static inline uint64
mq_qpos_gen_start(int lane, int gen)
{
	return ((uint64) lane << MQ_QPOS_LANE_SHIFT) |
		((uint64) gen << MQ_QPOS_GEN_SHIFT) | 1;
}

static inline int
mq_qpos_lane(uint64 qpos)
{
	return (int) (qpos >> MQ_QPOS_LANE_SHIFT);
}

static inline int
mq_qpos_gen(uint64 qpos)
{
	return (int) ((qpos >> MQ_QPOS_GEN_SHIFT) & MQ_QPOS_MAX_GEN);
}

static inline void
mq_qpos_tid(uint64 qpos, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) ((qpos >> 16) & (MQ_LANE_MAX_BLOCKS - 1)),
				   (OffsetNumber) (qpos & 0xFFFF));
}

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
} MqMessage;

/*
 * A queue entry: how a message belongs to a queue.  Stored as (visible_at,
 * msg_id, expires_at) with expires_at NULL for "never", which mqlog does
 * not store at all (trailing NULL); visible_at first, because for a
 * message published for now it equals the message's published_at, and a
 * linked insert logs leading bytes shared with the message row only once.
 */
#define MQ_ENTRY_ATT_VISIBLE_AT	1
#define MQ_ENTRY_ATT_MSG_ID		2
#define MQ_ENTRY_ATT_EXPIRES_AT	3
#define MQ_ENTRY_ATT_DELIVERY_COUNT 4

typedef struct MqEntry
{
	int64		msg_id;
	TimestampTz visible_at;		/* not deliverable before */
	TimestampTz expires_at;		/* DT_NOEND: never */
	int32		delivery_count; /* deliveries before (a nack with delay); 0: none */
} MqEntry;

/*
 * Columns of a log segment: published_at, exchange, routing_key, body,
 * headers, properties, key, tag, message_group, dedup_id -- the optional
 * ones last, so that a message without them stores no null bitmap (mqlog
 * does not store trailing NULLs).
 */
#define MQ_LOG_NATTS 10
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
 * Store one message in segment seg and its entry in the entry log
 * entry_relid (lane generation gen, chosen by the caller under the
 * queue's gen_lock) as one WAL record; sets msg->msg_id, entry->msg_id and
 * *qpos.
 */
extern void mq_log_append_linked(Relation seg, int64 segno, MqMessage *msg,
								 Oid entry_relid, int lane, int gen,
								 MqEntry *entry, uint64 *qpos);

/* Read a message by id; false if there is no committed (or own) message */
extern bool mq_log_fetch(int64 msg_id, MqMessage *out);

/* Find the newest message published with this business key */
extern List *mq_log_lookup_key(const char *key, int limit);

/* Find a message published with dedup_id since 'since'; 0 if none */
extern int64 mq_log_find_dedup(const char *dedup_id, TimestampTz since);

/*
 * Relation of a lane generation's entry log (settle = false) or
 * settlement log (settle = true); InvalidOid if it does not exist.
 */
extern Oid	mq_lane_relid(int32 queue_id, int lane, int gen, bool settle);

/* Create both tables of a lane generation (as the extension owner) */
extern void mq_lane_create(MqQueue *q, int lane, int gen);

/* Drop both tables of a lane generation (as the extension owner) */
extern void mq_lane_drop(int32 queue_id, int lane, int gen);

/*
 * Append entries to an entry log relation, in order (the caller chose the
 * generation); qpos[] gets their positions.
 */
extern void mq_entry_append(Oid relid, int lane, int gen, MqEntry *entries,
							int n, uint64 *qpos);

/* Settlement record kinds */
#define MQ_SETTLE_ACK		1	/* acked (or auto-acked) */
#define MQ_SETTLE_DEAD		2	/* dead-lettered: a copy went to the DLX */
#define MQ_SETTLE_FLOOR		3	/* every entry of the lane below qpos settled */
#define MQ_SETTLE_DROPPED	4	/* expired/rejected/purged without a DLX copy */
#define MQ_SETTLE_RETRY		5	/* nacked with a delay: a timer appends it again */

/*
 * Delivery records: not settlements, but what a restart must know of
 * deliveries.  They are written frozen (visible whatever becomes of the
 * consuming transaction: a delivery happened even if it rolls back) and
 * without an xid, so they cost one unflushed WAL record per consume call.
 */
#define MQ_SETTLE_DELIVERED	6	/* the entry at qpos was delivered once more
								 * (queues that count deliveries) */
#define MQ_SETTLE_MARK		7	/* entries below qpos may have been delivered */

/* Is a settlement-log record kind a settlement of its entry? */
static inline bool
mq_settle_kind_settles(int16 kind)
{
	return kind == MQ_SETTLE_ACK || kind == MQ_SETTLE_DEAD ||
		kind == MQ_SETTLE_DROPPED || kind == MQ_SETTLE_RETRY;
}

/*
 * A settlement record is one int8: the kind in the top 8 bits (where a
 * position has its lane, which the settlement log's name gives) and the
 * rest of the entry's position.
 */
#define MQ_SETTLE_KIND_SHIFT	MQ_QPOS_LANE_SHIFT
#define MQ_SETTLE_POS_MASK		((UINT64CONST(1) << MQ_SETTLE_KIND_SHIFT) - 1)

static inline int64
mq_settle_encode(int16 kind, uint64 qpos)
{
	return (int64) (((uint64) kind << MQ_SETTLE_KIND_SHIFT) | (qpos & MQ_SETTLE_POS_MASK));
}

static inline int16
mq_settle_kind(int64 rec)
{
	return (int16) ((uint64) rec >> MQ_SETTLE_KIND_SHIFT);
}

static inline uint64
mq_settle_qpos(int64 rec, int lane)
{
	return ((uint64) lane << MQ_QPOS_LANE_SHIFT) | ((uint64) rec & MQ_SETTLE_POS_MASK);
}

/* Append a settlement record for the entry at qpos of queue q */
extern void mq_settle_append(MqQueue *q, int16 kind, uint64 qpos);

/* Settlement records collected and written together (one per page) */
typedef struct MqSettleBatch
{
	MqQueue    *q;
	bool		frozen;			/* delivery records: outside the transaction */
	int			n;
	int			cap;
	int16	   *kinds;
	uint64	   *qpos;
} MqSettleBatch;

extern void mq_settle_batch_init(MqSettleBatch *b, MqQueue *q);
extern void mq_settle_batch_add(MqSettleBatch *b, int16 kind, uint64 qpos);
extern void mq_settle_batch_flush(MqSettleBatch *b);

/* Create the next segments ahead of need (maintenance worker) */
extern void mq_segments_prepare(void);

/* Names of log segment relations */
extern char *mq_segment_relname(int64 segno);

#endif							/* MQ_MSGLOG_H */
