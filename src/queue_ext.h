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

#include "datatype/timestamp.h"
#include "utils/jsonb.h"

/* Schema that holds the public API and the extension's private tables */
#define MQ_SCHEMA "mq"

/* true when the library was loaded via shared_preload_libraries */
extern bool mq_preloaded;

/* Error out (with a hint) when a feature needs shared_preload_libraries */
extern void mq_require_preload(const char *feature);

/* An interval as microseconds (months count as 30 days) */
static inline int64
mq_interval_us(const Interval *iv)
{
	return iv->time +
		((int64) iv->day + (int64) iv->month * DAYS_PER_MONTH) * USECS_PER_DAY;
}

/*
 * The value of key in a jsonb object, as text (strings and numbers), or
 * NULL when absent or of another type.
 */
extern char *mq_jsonb_get_text(Jsonb *obj, const char *key);

/* Settings defined in _PG_init (see docs/operations.md) */
extern int	mq_segment_blocks;
extern int	mq_dedup_window_ms;
extern bool mq_quorum_requires_standby;
extern int	mq_check_timeout_ms;

/* Run fn(arg) in a subtransaction; swallow its error (false), logging it
 * or handing its message back in *error */
extern bool mq_run_guarded(const char *what, void (*fn) (void *arg), void *arg,
						   char **error);

#endif							/* QUEUE_EXT_H */
