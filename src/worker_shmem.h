/*-------------------------------------------------------------------------
 *
 * worker_shmem.h
 *	  Registry of the background workers in shared memory: one slot per
 *	  database worker, and the launcher's process number.
 *
 * The launcher and the per-database workers (worker.c) announce themselves
 * here, so that a backend can wake its database's worker when it commits
 * a timer that falls due before the worker's next wake-up, and so that
 * DROP DATABASE can stop a worker and keep the launcher from starting
 * another for a while.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_WORKER_SHMEM_H
#define MQ_WORKER_SHMEM_H

#include "postgres.h"

#include "datatype/timestamp.h"

/* Request and set up the registry's shared memory; from _PG_init */
extern void mq_worker_shmem_init(void);

/* The worker of this database announces itself and its next wake-up */
extern void mq_worker_announce(TimestampTz next_wake);

/* The worker of this database exits */
extern void mq_worker_retire(void);

/*
 * Wake this database's worker if it would sleep past due; if there is
 * none, ask the launcher for one at once.
 */
extern void mq_worker_wake(TimestampTz due);

/*
 * Stop the worker of a database about to be dropped or renamed, and keep
 * the launcher from starting another one for pause_ms.
 */
extern void mq_worker_stop_for(Oid dbid, int pause_ms);

/* Is the launcher to stay away from this database for now? */
extern bool mq_worker_paused(Oid dbid);

/* The launcher announces itself (its procno) or leaves (-1) */
extern void mq_launcher_announce(int procno);

/* Did a backend ask for a worker in this database?  Clears the request. */
extern bool mq_worker_wanted(Oid dbid);

#endif							/* MQ_WORKER_SHMEM_H */
