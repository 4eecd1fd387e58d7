/*-------------------------------------------------------------------------
 *
 * timers.h
 *	  Delayed messages: a durable timer table fired by the worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_TIMERS_H
#define MQ_TIMERS_H

#include "postgres.h"

#include "utils/timestamp.h"

#include "catalog.h"
#include "queue/queue.h"

/* Arm timers: entries for q's lane appear when due */
extern void mq_timers_add(MqQueue *q, int lane, MqEntry *entries, int n);

/* Due timers of one queue and lane, in due order */
typedef struct MqDueGroup
{
	int32		queue_id;
	int			lane;
	MqEntry    *entries;
	int			n;
} MqDueGroup;

/*
 * Take due timers (deleting them in the current transaction): *fired of
 * them, in *ngroups groups, for their entries to be appended
 * (mq_fire_due_timers, timers_fire.c); returns the next due time (0: none).
 */
extern TimestampTz mq_timers_take_due(MqDueGroup **groups, int *ngroups, int *fired);

/* Number of armed timers of a queue */
extern int64 mq_timers_count(int32 queue_id);

/*
 * Armed timers of every queue that has any, in one scan (mq.queues,
 * mq.metrics), in ascending queue id; and a queue's among them
 */
extern int	mq_timers_count_all(int32 **queue_ids, int64 **counts);
extern int64 mq_timers_count_find(int32 queue_id, const int32 *queue_ids,
								  const int64 *counts, int n);

#endif							/* MQ_TIMERS_H */
