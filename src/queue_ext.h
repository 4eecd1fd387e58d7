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

/* Schema that holds the public API and the extension's private tables */
#define MQ_SCHEMA "mq"

/* true when the library was loaded via shared_preload_libraries */
extern bool mq_preloaded;

/* Error out (with a hint) when a feature needs shared_preload_libraries */
extern void mq_require_preload(const char *feature);

/* Settings defined in _PG_init (see docs/operations.md) */
extern int	mq_segment_blocks;
extern int	mq_dedup_window_ms;
extern bool mq_quorum_requires_standby;
extern int	mq_maintenance_naptime_ms;
extern int	mq_launcher_naptime_ms;
extern int	mq_retire_interval_ms;
extern int	mq_check_timeout_ms;

/* Background workers (worker.c): registers the launcher */
extern void mq_workers_register(void);

#endif							/* QUEUE_EXT_H */
