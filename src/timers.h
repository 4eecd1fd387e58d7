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

/*
 * Fire due timers (appending their queue entries) in the current
 * transaction; returns the next due time (0: none).
 */
extern TimestampTz mq_timers_fire(int *fired);

/* Number of armed timers of a queue */
extern int64 mq_timers_count(int32 queue_id);

#endif							/* MQ_TIMERS_H */
