/*-------------------------------------------------------------------------
 *
 * maintenance.h
 *	  Periodic work of the per-database worker: lease and TTL expiry,
 *	  delayed-message wakeups, settlement floors, segment retirement.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_MAINTENANCE_H
#define MQ_MAINTENANCE_H

#include "postgres.h"

#include "utils/timestamp.h"

#include "catalog.h"

/* The worker made a message of q ready: notify q's channel at commit */
extern void mq_notify_ready(MqQueue *q);

/*
 * One queue's share of a maintenance pass (inside a transaction); returns
 * when its next delayed redelivery is due, or for a queue with a
 * notification channel its next lease end (0: none known).
 */
extern TimestampTz mq_maintain_queue(MqQueue *q);

/* A consumer group's share (gview: the group's view; see maintenance.c) */
extern TimestampTz mq_maintain_group(MqQueue *gview);

/* Drop message log segments no queue entry refers to; returns how many */
extern int	mq_retire_segments(int max_segments);

#endif							/* MQ_MAINTENANCE_H */
