/*-------------------------------------------------------------------------
 *
 * args.h
 *	  Checks of the arguments of the SQL entry points, shared by all of
 *	  them so that each rule (see docs/api.md) lives in one place:
 *	  - NULL for an argument without a NULL default is 22004;
 *	  - arrays are one-dimensional and hold no NULLs (22004);
 *	  - a user interval converted to microseconds, and a time computed
 *		from one, stay in range (22008);
 *	  - counts are at least 1 (22023);
 *	  - consumer names are not empty (22023);
 *	  - message headers are a JSON object (22023).
 *	  And the conversion of a message body given as bytea, text or jsonb.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_ARGS_H
#define MQ_ARGS_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/jsonb.h"

/*
 * Raise 22004 for the first argument i (0-based, below n) that is NULL
 * although names[i] is not NULL; names[i] is the argument's SQL name, or
 * NULL for an argument whose DEFAULT is NULL (NULL meaning "not given").
 */
extern void mq_check_args(FunctionCallInfo fcinfo, const char *const *names, int n);

/*
 * MQ_CHECK_ARGS(fcinfo, "queue", "msg_ids", NULL, ...): the names of the
 * function's arguments in order, NULL for those that may be NULL; later
 * arguments not listed may be NULL too.
 */
#define MQ_CHECK_ARGS(fcinfo, ...) \
	do { \
		static const char *const mq_arg_names_[] = {__VA_ARGS__}; \
		mq_check_args((fcinfo), mq_arg_names_, lengthof(mq_arg_names_)); \
	} while (0)

/* The 22004 error for argument name (when the check is not positional) */
extern void mq_null_arg_error(const char *name) pg_attribute_noreturn();

/*
 * The elements of a one-dimensional array argument of element type
 * elemtype (NULL elements: 22004).  *n receives the count.
 */
extern Datum *mq_array_arg(FunctionCallInfo fcinfo, int argno, Oid elemtype,
						   const char *name, int *n);

/* The same, NULL elements allowed: (*nulls)[i] tells which */
extern Datum *mq_array_arg_nulls(FunctionCallInfo fcinfo, int argno, Oid elemtype,
								 const char *name, int *n, bool **nulls);

/* A count argument (max_messages, max_segments): 1 .. max, else 22023 */
extern int32 mq_count_arg(FunctionCallInfo fcinfo, int argno, const char *name,
						  int32 max);

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

/*
 * The one rule for a user's timestamp (deliver_at, from_time, to_time, a
 * group's start): +-infinity is refused with 22008 naming the argument.
 */
extern void mq_time_finite(TimestampTz t, const char *name);

/* A consumer name must not be empty (22023) */
extern void mq_consumer_name_check(const char *consumer);

/* A body given as bytea, text or jsonb, as bytea; headers checked (22023) */
extern bytea *mq_body_bytes(Datum d, Oid type);
extern Jsonb *mq_headers_check(Jsonb *h);

#endif							/* MQ_ARGS_H */
