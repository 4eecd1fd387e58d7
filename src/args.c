/*-------------------------------------------------------------------------
 *
 * args.c
 *	  Checks of the arguments of the SQL entry points (see args.h and the
 *	  rules in docs/api.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"

#include "args.h"

int64
mq_interval_us(const Interval *iv, const char *name, int64 min_us)
{
	/* cannot overflow: both fields are int32 */
	int64		days = (int64) iv->day + (int64) iv->month * DAYS_PER_MONTH;
	int64		us;

	if (pg_mul_s64_overflow(days, USECS_PER_DAY, &us) ||
		pg_add_s64_overflow(us, iv->time, &us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s is out of range", name)));
	if (us < min_us)
	{
		if (min_us <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must not be negative", name)));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be positive", name)));
	}
	return us;
}

TimestampTz
mq_time_add(TimestampTz t, int64 us, const char *name)
{
	TimestampTz result;

	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s must be finite", name)));
	if (pg_add_s64_overflow(t, us, &result) || !IS_VALID_TIMESTAMP(result))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s is out of range", name),
				 errdetail("Times must lie between 4714 BC and 294276 AD.")));
	return result;
}
