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

/*
 * One maintenance pass over every queue of the current database; returns
 * when the next delayed message is due (0: none known).  Must run inside a
 * transaction.
 */
extern TimestampTz mq_maintain_queues(void);

/* Drop message log segments no queue entry refers to; returns how many */
extern int	mq_retire_segments(int max_segments);

#endif							/* MQ_MAINTENANCE_H */
