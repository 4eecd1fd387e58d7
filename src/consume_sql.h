/*-------------------------------------------------------------------------
 *
 * consume_sql.h
 *	  What the SQL entry points that hand out messages share: the delivery
 *	  row of mq.consume, mq.browse and mq.read, and the refusal of the
 *	  verbs of consumer state on streams.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_CONSUME_SQL_H
#define MQ_CONSUME_SQL_H

#include "postgres.h"

#include "funcapi.h"

#include "catalog.h"
#include "msglog.h"

/* Upper bound of max_messages in one call */
#define MQ_MAX_BATCH 10000

/*
 * Emit one delivery row (see mq.consume in the install script); partition
 * and offset are NULL when partition < 0, reconsume_times (the last column
 * of mq.consume's rows only) when it is < 0
 */
extern void mq_put_delivery_row(ReturnSetInfo *rsinfo, const char *queue, MqMessage *m,
								bool redelivered, int32 delivery_count,
								int partition, int64 offset, int32 reconsume_times,
								const char *receipt);

/*
 * Raise 0A000 for fn on stream q: it has no consumer state of its own
 * (a consumer group has, and mq.read reads it by offset)
 */
extern void mq_stream_refuse(MqQueue *q, const char *fn) pg_attribute_noreturn();

/*
 * The queue state a consume or settle call works on, for the queue named
 * by argument 0 (consume privilege checked) and the group named by
 * argument group_arg (-1: the function has none): on a stream the
 * group's view (the group must be declared: 42704; without one 0A000),
 * elsewhere the queue itself (a group there: 42809).
 *
 * A broadcast group: the view of the consumer named by argument
 * consumer_arg.  For a consume (any NULL) the name is required (22023) and
 * the consumer is made at its first consume, starting where the group
 * starts.  For a settle call (any not NULL): without a name *any is set
 * to the group (the caller settles in whichever of its consumer states
 * this session holds each message; the group's view is returned); a
 * consumer not made yet gives the group's view (which delivers nothing).
 * On other queues and groups the consumer name changes nothing here.
 */
extern MqQueue *mq_consume_target(FunctionCallInfo fcinfo, int group_arg,
								  int consumer_arg, const char *fn,
								  MqGroup **any);

#endif							/* MQ_CONSUME_SQL_H */
