/*-------------------------------------------------------------------------
 *
 * args.c
 *	  Checks of the arguments of the SQL entry points (see args.h and the
 *	  rules in docs/api.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "args.h"

void
mq_null_arg_error(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("%s must not be null", name)));
	pg_unreachable();
}

void
mq_check_args(FunctionCallInfo fcinfo, const char *const *names, int n)
{
	for (int i = 0; i < n && i < PG_NARGS(); i++)
	{
		if (names[i] != NULL && PG_ARGISNULL(i))
			mq_null_arg_error(names[i]);
	}
}

Datum *
mq_array_arg_nulls(FunctionCallInfo fcinfo, int argno, Oid elemtype, const char *name,
				   int *n, bool **nulls)
{
	ArrayType  *arr;
	Datum	   *elems;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	if (PG_ARGISNULL(argno))
		mq_null_arg_error(name);
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", name)));
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign, &elems, nulls, n);
	return elems;
}

Datum *
mq_array_arg(FunctionCallInfo fcinfo, int argno, Oid elemtype, const char *name,
			 int *n)
{
	bool	   *nulls;
	Datum	   *elems = mq_array_arg_nulls(fcinfo, argno, elemtype, name, n, &nulls);

	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain nulls", name)));
	}
	return elems;
}

int32
mq_count_arg(FunctionCallInfo fcinfo, int argno, const char *name, int32 max)
{
	int32		count;

	if (PG_ARGISNULL(argno))
		mq_null_arg_error(name);
	count = PG_GETARG_INT32(argno);
	if (count < 1 || count > max)
	{
		if (max == PG_INT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must be at least 1", name)));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 1 and %d", name, max)));
	}
	return count;
}

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

void
mq_time_finite(TimestampTz t, const char *name)
{
	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s must be a finite timestamp", name),
				 errdetail("It is %s.", TIMESTAMP_IS_NOBEGIN(t) ? "-infinity" : "infinity"),
				 errhint("Give a time between 4714 BC and 294276 AD.")));
}

TimestampTz
mq_time_add(TimestampTz t, int64 us, const char *name)
{
	TimestampTz result;

	mq_time_finite(t, name);
	if (pg_add_s64_overflow(t, us, &result) || !IS_VALID_TIMESTAMP(result))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s is out of range", name),
				 errdetail("Times must lie between 4714 BC and 294276 AD.")));
	return result;
}

void
mq_consumer_name_check(const char *consumer)
{
	if (consumer != NULL && consumer[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("consumer name must not be empty"),
				 errhint("Give a name, or NULL for an anonymous consumer.")));
}

/* A message body given as bytea, text or jsonb, as bytea */
bytea *
mq_body_bytes(Datum d, Oid type)
{
	if (type == JSONBOID)
	{
		Jsonb	   *jb = DatumGetJsonbP(d);
		char	   *s = JsonbToCString(NULL, &jb->root, VARSIZE(jb));

		return (bytea *) cstring_to_text(s);
	}
	/* text and bytea share the varlena layout */
	return (bytea *) PG_DETOAST_DATUM(d);
}

/* Message headers must be a JSON object (22023); returns h */
Jsonb *
mq_headers_check(Jsonb *h)
{
	if (h != NULL && !JB_ROOT_IS_OBJECT(h))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("headers must be a JSON object")));
	return h;
}
