/*-------------------------------------------------------------------------
 *
 * consume.h
 *	  What the SQL entry points that hand out messages share: the delivery
 *	  row of mq.consume, mq.browse and mq.read, and the refusal of the
 *	  verbs of consumer state on streams.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_CONSUME_H
#define MQ_CONSUME_H

#include "postgres.h"

#include "funcapi.h"

#include "catalog.h"
#include "msglog.h"

/* Upper bound of max_messages in one call */
#define MQ_MAX_BATCH 10000

/*
 * Emit one delivery row (see mq.consume in the install script); partition
 * and offset are NULL when partition < 0
 */
extern void mq_put_delivery_row(ReturnSetInfo *rsinfo, const char *queue, MqMessage *m,
								bool redelivered, int32 delivery_count,
								int partition, int64 offset);

/*
 * Raise 0A000 for fn on stream q: its consumer groups are not implemented
 * yet, and it has no consumer state of its own (mq.read reads it)
 */
extern void mq_stream_refuse(MqQueue *q, const char *fn) pg_attribute_noreturn();

/*
 * Check the group_name argument of a consume or settle call on the queue
 * named by argument 0: on a stream nothing works yet (groups are a later
 * step), elsewhere a group is an error.
 */
extern void mq_check_group_name(FunctionCallInfo fcinfo, int group_arg, const char *fn);

#endif							/* MQ_CONSUME_H */
