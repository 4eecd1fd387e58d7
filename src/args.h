/*-------------------------------------------------------------------------
 *
 * args.h
 *	  Checks of the arguments of the SQL entry points, shared by all of
 *	  them so that each rule (see docs/api.md) lives in one place:
 *	  - a user interval converted to microseconds, and a time computed
 *		from one, stay in range (22008).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_ARGS_H
#define MQ_ARGS_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"

/*
 * A user interval as microseconds (months count as 30 days): 22008 when it
 * does not fit, 22023 when below min_us (0: must not be negative, 1: must
 * be positive).
 */
extern int64 mq_interval_us(const Interval *iv, const char *name, int64 min_us);

/*
 * t + us as a valid, finite timestamp, else 22008 naming the argument the
 * time came from.  With us = 0, checks a user timestamp such as deliver_at
 * (infinity is refused).
 */
extern TimestampTz mq_time_add(TimestampTz t, int64 us, const char *name);

#endif							/* MQ_ARGS_H */
