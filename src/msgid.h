/*-------------------------------------------------------------------------
 *
 * msgid.h
 *	  A message id: the message's address, (segment number, block, line
 *	  pointer) packed in 63 bits, so that finding a message by id needs no
 *	  index.  Segments are the message log's (msglog.h) and, from
 *	  MQ_INLINE_SEGNO_MIN up, streams' entry logs whose rows carry their
 *	  message (src/queue/queue.h, "inline").  Shared by both; depends on
 *	  nothing of either.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_MSGID_H
#define MQ_MSGID_H

#include "postgres.h"

#include "storage/itemptr.h"

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

/*
 * Segment numbers from MQ_INLINE_SEGNO_MIN up are no log segments: they
 * name the entry logs of streams, whose rows can carry their message
 * (queue.h, "inline"; mq.cat_inline).  Such a message is read by its id as
 * any other; its id is at least MQ_INLINE_MSGID_MIN (2^52), below 2^53 (a
 * JSON number's exact integers), and refers to no log segment.
 */
#define MQ_INLINE_SEGNO_MIN ((int64) 1 << 26)
#define MQ_INLINE_MSGID_MIN (MQ_INLINE_SEGNO_MIN << (MQ_MSGID_OFF_BITS + MQ_MSGID_BLK_BITS))

/* The highest message id segment segno can hold */
static inline int64
mq_msgid_segno_last(int64 segno)
{
	return ((segno + 1) << (MQ_MSGID_OFF_BITS + MQ_MSGID_BLK_BITS)) - 1;
}

static inline void
mq_msgid_tid(int64 msg_id, ItemPointer tid)
{
	ItemPointerSet(tid,
				   (BlockNumber) ((msg_id >> MQ_MSGID_OFF_BITS) & (MQ_SEGMENT_MAX_BLOCKS - 1)),
				   (OffsetNumber) (msg_id & ((1 << MQ_MSGID_OFF_BITS) - 1)));
}

#endif							/* MQ_MSGID_H */
