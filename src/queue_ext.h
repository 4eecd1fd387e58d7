/*-------------------------------------------------------------------------
 *
 * queue_ext.h
 *	  Settings and entry points shared by every part of queue_ext.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QUEUE_EXT_H
#define QUEUE_EXT_H

#include "postgres.h"

#include "mqutils.h"

/* Settings defined in _PG_init (see docs/operations.md) */
extern int	mq_maintenance_naptime_ms;
extern int	mq_launcher_naptime_ms;
extern int	mq_retire_interval_ms;

/* Background workers (worker.c): registers the launcher */
extern void mq_workers_register(void);

#endif							/* QUEUE_EXT_H */
