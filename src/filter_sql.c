/*-------------------------------------------------------------------------
 *
 * filter_sql.c
 *	  mq.filter_match: one message filter evaluated for one message, with no
 *	  queue, for trying a selector and for the tests.
 *
 * The compiled filter is kept in fn_extra for as long as the calling
 * expression lives, so that a query running it over many rows with the
 * same expression parses it once, as a consumer group would.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "args.h"
#include "filter.h"

/* What fn_extra holds: the last filter compiled by this call site */
typedef struct FilterMatchCache
{
	char	   *filter_type;
	char	   *expression;		/* NULL: none */
	MqFilter   *filter;
} FilterMatchCache;

static bool
same_string(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

PG_FUNCTION_INFO_V1(mq_filter_match_sql);

/*
 * mq.filter_match(filter_type text, expression text, headers jsonb,
 *				   tag text DEFAULT NULL) RETURNS boolean
 *
 * Not STRICT: a NULL expression is no filter (every message matches), NULL
 * headers are a message without headers, a NULL tag one without a tag.
 * NULL when the selector is null-valued for this message or its evaluation
 * fails (neither lets a message through); a bad expression raises 42601.
 */
Datum
mq_filter_match_sql(PG_FUNCTION_ARGS)
{
	FilterMatchCache *cache = fcinfo->flinfo->fn_extra;
	char	   *filter_type;
	char	   *expression = NULL;
	Jsonb	   *headers = NULL;
	text	   *tag = NULL;
	const char *tagp;
	int			taglen;
	MqFilterResult result;

	MQ_CHECK_ARGS(fcinfo, "filter_type", NULL, NULL, NULL);
	filter_type = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PG_ARGISNULL(1))
		expression = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (!PG_ARGISNULL(2))
	{
		headers = PG_GETARG_JSONB_P(2);
		if (!JB_ROOT_IS_OBJECT(headers) || JB_ROOT_IS_SCALAR(headers))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("headers must be a JSON object")));
	}
	if (!PG_ARGISNULL(3))
		tag = PG_GETARG_TEXT_PP(3);

	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt,
									   sizeof(FilterMatchCache));
		fcinfo->flinfo->fn_extra = cache;
	}
	if (cache->filter == NULL ||
		!same_string(cache->filter_type, filter_type) ||
		!same_string(cache->expression, expression))
	{
		/* compile first: on error the old entry stays valid */
		MqFilter   *filter = mq_filter_compile(filter_type, expression,
											   fcinfo->flinfo->fn_mcxt);

		mq_filter_free(cache->filter);
		if (cache->filter_type)
			pfree(cache->filter_type);
		if (cache->expression)
			pfree(cache->expression);
		cache->filter = filter;
		cache->filter_type = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt,
												 filter_type);
		cache->expression = expression ?
			MemoryContextStrdup(fcinfo->flinfo->fn_mcxt, expression) : NULL;
	}

	tagp = tag ? VARDATA_ANY(tag) : NULL;
	taglen = tag ? VARSIZE_ANY_EXHDR(tag) : 0;

	/*
	 * The tag hash pre-check first, as a consumer group does with the hash
	 * stored in a queue entry: so the tag tests cover it too (it must never
	 * refuse a message the full check would take).
	 */
	if (!mq_filter_tag_hash_may_match(cache->filter, mq_tag_hash(tagp, taglen)))
		PG_RETURN_BOOL(false);
	result = mq_filter_eval(cache->filter, headers, tagp, taglen);
	if (result == MQ_FILTER_MATCH)
		PG_RETURN_BOOL(true);
	if (result == MQ_FILTER_NO_MATCH)
		PG_RETURN_BOOL(false);
	PG_RETURN_NULL();
}
