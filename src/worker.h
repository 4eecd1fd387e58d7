/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  Background workers: a launcher, and one worker per database that
 *	  runs maintenance, delayed-message wakeups and half-message
 *	  check-back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_WORKER_H
#define MQ_WORKER_H

#include "postgres.h"

/* Settings, in milliseconds */
extern int	mq_maintenance_naptime;	/* mq.maintenance_naptime */
extern int	mq_launcher_naptime; /* mq.launcher_naptime */
extern int	mq_retire_interval;	/* mq.retire_interval */

/*
 * From _PG_init: defines the workers' settings and, when preloading,
 * requests the worker registry's shared memory (worker_shmem.c), registers
 * the launcher, and installs the ProcessUtility hook that stops a
 * database's worker before DROP DATABASE or ALTER DATABASE.
 */
extern void mq_worker_init(void);

#endif							/* MQ_WORKER_H */
