/*-------------------------------------------------------------------------
 *
 * routing_headers.c
 *	  Headers exchange matching, as RabbitMQ's rabbit_exchange_type_headers.
 *
 * A binding's arguments are a JSON object.  "x-match" says how its other
 * entries are compared with a message's headers (also a JSON object):
 *
 *	all (default)	every entry must match
 *	any				at least one entry must match
 *	all-with-x, any-with-x
 *					the same, but entries whose key starts with "x-" take
 *					part too; plain all/any ignore them
 *
 * "x-match" itself never takes part.  An entry matches when the message has
 * a header of that name with an equal value; an entry whose value is JSON
 * null (AMQP's void) matches on the presence of the header alone, whatever
 * its value.  So "all" with no entries matches every message and "any"
 * with no entries matches none, as in RabbitMQ.
 *
 * Values are compared as jsonb values: the JSON types must agree ("1" is
 * not 1, true is not "true"), objects and arrays compare structurally, and
 * numbers compare by value, so 1 matches 1.0.  (RabbitMQ compares AMQP
 * values with =:=, under which the integer 1 and the float 1.0 differ;
 * JSON has only one number type, and telling them apart by their spelling
 * would make 1.0 and 1.00 differ too.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "args.h"
#include "routing.h"

/* The x-match modes */
typedef enum MqHeadersMode
{
	MQ_HEADERS_ALL,
	MQ_HEADERS_ANY,
	MQ_HEADERS_ALL_WITH_X,
	MQ_HEADERS_ANY_WITH_X
} MqHeadersMode;

/*
 * Look up the binding's "x-match" value.  Returns false when there is none;
 * otherwise sets *value (of any JSON type).
 */
static bool
mq_headers_get_xmatch(Jsonb *arguments, JsonbValue *value)
{
	if (arguments == NULL || !JB_ROOT_IS_OBJECT(arguments) ||
		JB_ROOT_IS_SCALAR(arguments))
		return false;
	return getKeyJsonValueFromContainer(&arguments->root, "x-match",
										strlen("x-match"), value) != NULL;
}

/*
 * Parse an x-match string value; false if it is not one of the four modes.
 */
static bool
mq_headers_parse_mode(const JsonbValue *v, MqHeadersMode *mode)
{
	const char *s = v->val.string.val;
	int			len = v->val.string.len;

#define MODE_IS(lit) (len == strlen(lit) && memcmp(s, lit, len) == 0)
	if (MODE_IS("all"))
		*mode = MQ_HEADERS_ALL;
	else if (MODE_IS("any"))
		*mode = MQ_HEADERS_ANY;
	else if (MODE_IS("all-with-x"))
		*mode = MQ_HEADERS_ALL_WITH_X;
	else if (MODE_IS("any-with-x"))
		*mode = MQ_HEADERS_ANY_WITH_X;
	else
		return false;
#undef MODE_IS
	return true;
}

/*
 * Check a headers binding's arguments before the binding is created: they
 * must be a JSON object and "x-match", when present, one of the four mode
 * strings (as RabbitMQ's validate_binding/2).  NULL is taken as '{}'.
 */
void
mq_headers_validate_binding(Jsonb *arguments)
{
	JsonbValue	v;
	MqHeadersMode mode;

	if (arguments == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(arguments) || JB_ROOT_IS_SCALAR(arguments))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("binding arguments must be a JSON object"),
				 errdetail("The arguments given are %s.",
						   JsonbToCString(NULL, &arguments->root,
										  VARSIZE(arguments)))));

	if (!mq_headers_get_xmatch(arguments, &v))
		return;

	if (v.type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid x-match field type %s", JsonbTypeName(&v)),
				 errdetail("The x-match value must be a string: \"all\", \"any\", \"all-with-x\" or \"any-with-x\".")));

	if (!mq_headers_parse_mode(&v, &mode))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid x-match field value \"%.*s\"",
						v.val.string.len, v.val.string.val),
				 errhint("Expected \"all\", \"any\", \"all-with-x\" or \"any-with-x\".")));
}

/*
 * Are two jsonb values (as returned by the iterator or a key lookup) equal?
 * Scalars must have the same JSON type; containers compare structurally.
 */
static bool
mq_headers_values_equal(JsonbValue *a, JsonbValue *b)
{
	if (a->type != b->type)
		return false;

	switch (a->type)
	{
		case jbvNull:
			return true;
		case jbvString:
			return a->val.string.len == b->val.string.len &&
				memcmp(a->val.string.val, b->val.string.val,
					   a->val.string.len) == 0;
		case jbvNumeric:
			return DatumGetBool(DirectFunctionCall2(numeric_eq,
													NumericGetDatum(a->val.numeric),
													NumericGetDatum(b->val.numeric)));
		case jbvBool:
			return a->val.boolean == b->val.boolean;
		case jbvBinary:
			{
				JsonbContainer *ca = a->val.binary.data;
				JsonbContainer *cb = b->val.binary.data;

				/* an array never equals an object */
				if (JsonContainerIsObject(ca) != JsonContainerIsObject(cb))
					return false;
				return compareJsonbContainers(ca, cb) == 0;
			}
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) a->type);
	}
	return false;				/* keep compiler quiet */
}

/*
 * Does a message with these headers (NULL = none) match a headers binding
 * with these arguments (NULL = '{}')?  An unknown x-match value, which
 * mq_headers_validate_binding() would have refused, counts as "all", as in
 * RabbitMQ.
 */
bool
mq_headers_match(Jsonb *binding_arguments, Jsonb *headers)
{
	MqHeadersMode mode = MQ_HEADERS_ALL;
	bool		any;
	bool		with_x;
	JsonbValue	v;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbContainer *hdrs = NULL;

	if (headers != NULL)
	{
		if (!JB_ROOT_IS_OBJECT(headers) || JB_ROOT_IS_SCALAR(headers))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("message headers must be a JSON object"),
					 errdetail("The headers given are %s.",
							   JsonbToCString(NULL, &headers->root,
											  VARSIZE(headers)))));
		hdrs = &headers->root;
	}

	if (binding_arguments == NULL)
		return true;			/* "all" of nothing */
	if (!JB_ROOT_IS_OBJECT(binding_arguments) ||
		JB_ROOT_IS_SCALAR(binding_arguments))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("binding arguments must be a JSON object"),
				 errdetail("The arguments given are %s.",
						   JsonbToCString(NULL, &binding_arguments->root,
										  VARSIZE(binding_arguments)))));

	if (mq_headers_get_xmatch(binding_arguments, &v) && v.type == jbvString)
		(void) mq_headers_parse_mode(&v, &mode);
	any = (mode == MQ_HEADERS_ANY || mode == MQ_HEADERS_ANY_WITH_X);
	with_x = (mode == MQ_HEADERS_ALL_WITH_X || mode == MQ_HEADERS_ANY_WITH_X);

	it = JsonbIteratorInit(&binding_arguments->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue	key;
		JsonbValue	hv;
		bool		found;
		bool		matched;

		if (tok != WJB_KEY)
			continue;
		key = v;
		tok = JsonbIteratorNext(&it, &v, true);
		Assert(tok == WJB_VALUE);

		/* x-match never takes part; other x- entries only "with-x" */
		if (key.val.string.len >= 2 &&
			memcmp(key.val.string.val, "x-", 2) == 0)
		{
			if (!with_x)
				continue;
			if (key.val.string.len == strlen("x-match") &&
				memcmp(key.val.string.val, "x-match", strlen("x-match")) == 0)
				continue;
		}

		found = hdrs != NULL &&
			getKeyJsonValueFromContainer(hdrs, key.val.string.val,
										 key.val.string.len, &hv) != NULL;
		if (v.type == jbvNull)
			matched = found;	/* void: presence is enough */
		else
			matched = found && mq_headers_values_equal(&v, &hv);

		/*
		 * Stop at the first deciding entry.  The iterator holds no resources
		 * beyond palloc'd memory, so abandoning it is fine.
		 */
		if (any && matched)
			return true;
		if (!any && !matched)
			return false;
	}

	return !any;
}

/* ----------------------------------------------------------------
 *		SQL-callable functions
 * ----------------------------------------------------------------
 */

PG_FUNCTION_INFO_V1(mq_headers_match_sql);

/*
 * mq.headers_match(binding_arguments jsonb, headers jsonb) RETURNS boolean
 *
 * NULL headers mean a message without headers (as for mq.publish); NULL
 * binding arguments are an error.  The arguments are validated as for a new
 * binding, so a bad x-match value is an error here.
 */
Datum
mq_headers_match_sql(PG_FUNCTION_ARGS)
{
	Jsonb	   *arguments;
	Jsonb	   *headers = NULL;

	MQ_CHECK_ARGS(fcinfo, "binding_arguments", NULL);
	arguments = PG_GETARG_JSONB_P(0);
	if (!PG_ARGISNULL(1))
		headers = PG_GETARG_JSONB_P(1);

	mq_headers_validate_binding(arguments);
	PG_RETURN_BOOL(mq_headers_match(arguments, headers));
}
