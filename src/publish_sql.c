/*-------------------------------------------------------------------------
 *
 * publish_sql.c
 *	  SQL entry points of the publish path: mq.publish, mq.send,
 *	  mq.publish_batch and mq.send_batch, for bytea, text and jsonb bodies.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "args.h"
#include "publish.h"

PG_FUNCTION_INFO_V1(mq_publish_sql);
PG_FUNCTION_INFO_V1(mq_send);
PG_FUNCTION_INFO_V1(mq_publish_batch);
PG_FUNCTION_INFO_V1(mq_send_batch);

/* RocketMQ's delay levels 1..18, in seconds */
static const int delay_levels[] = {1, 5, 10, 30, 60, 120, 180, 240, 300, 360,
420, 480, 540, 600, 1200, 1800, 3600, 7200};

/* Positions of the optional properties among a function's arguments */
typedef struct PropArgs
{
	int			headers,
				mandatory,
				delay,
				deliver_at,
				key,
				tag,
				message_group,
				priority,
				expiration,
				dedup_id,
				content_type,
				correlation_id,
				reply_to,
				durability,
				delay_level,
				partition;
} PropArgs;

/* mq.publish(exchange, routing_key, body, headers, mandatory, delay, ...) */
static const PropArgs publish_args = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};

/* mq.send(queue, body, headers, delay, ...): always mandatory */
static const PropArgs send_args = {2, -1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static bool
has_arg(FunctionCallInfo fcinfo, int i)
{
	return i >= 0 && i < PG_NARGS() && !PG_ARGISNULL(i);
}

static char *
opt_text(FunctionCallInfo fcinfo, int i)
{
	return has_arg(fcinfo, i) ? text_to_cstring(PG_GETARG_TEXT_PP(i)) : NULL;
}

static MqDurability
parse_durability(const char *s)
{
	if (s == NULL)
		return MQ_DURABILITY_DEFAULT;
	if (strcmp(s, "async") == 0)
		return MQ_DURABILITY_ASYNC;
	if (strcmp(s, "local") == 0)
		return MQ_DURABILITY_LOCAL;
	if (strcmp(s, "quorum") == 0)
		return MQ_DURABILITY_QUORUM;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid durability \"%s\"", s),
			 errhint("Valid values are async, local and quorum.")));
	return MQ_DURABILITY_DEFAULT;
}

/* Read the optional publish properties of a call */
static void
parse_props(FunctionCallInfo fcinfo, const PropArgs *a, MqPublishOpts *o)
{
	TimestampTz now = GetCurrentTimestamp();
	int			ntimes = 0;

	mq_publish_opts_init(o);
	/* mandatory was checked not to be NULL (MQ_CHECK_ARGS) */
	o->mandatory = a->mandatory < 0 ? true : PG_GETARG_BOOL(a->mandatory);
	/* mq.send and mq.send_batch (always mandatory) name their queue */
	o->to_queue = a->mandatory < 0;
	if (has_arg(fcinfo, a->delay))
	{
		int64		us = mq_interval_us(PG_GETARG_INTERVAL_P(a->delay), "delay", 0);

		o->deliver_at = mq_time_add(now, us, "delay");
		ntimes++;
	}
	if (has_arg(fcinfo, a->deliver_at))
	{
		o->deliver_at = mq_time_add(PG_GETARG_TIMESTAMPTZ(a->deliver_at), 0, "deliver_at");
		ntimes++;
	}
	if (has_arg(fcinfo, a->delay_level))
	{
		int			level = PG_GETARG_INT32(a->delay_level);

		if (level < 1 || level > (int) lengthof(delay_levels))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("delay_level %d is out of range", level),
					 errdetail("RocketMQ delay levels are 1 to 18 (1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h).")));
		o->deliver_at = mq_time_add(now, (int64) delay_levels[level - 1] * USECS_PER_SEC,
									"delay_level");
		ntimes++;
	}
	if (ntimes > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("only one of delay, deliver_at and delay_level may be given")));
	o->key = opt_text(fcinfo, a->key);
	o->tag = opt_text(fcinfo, a->tag);
	o->message_group = opt_text(fcinfo, a->message_group);
	if (has_arg(fcinfo, a->priority))
	{
		o->priority = PG_GETARG_INT32(a->priority);
		if (o->priority < 0 || o->priority > 255)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("priority %d is out of range", o->priority),
					 errdetail("Priorities are 0 to 255.")));
	}
	if (has_arg(fcinfo, a->expiration))
	{
		int64		us = mq_interval_us(PG_GETARG_INTERVAL_P(a->expiration), "expiration", 0);

		/* the message expires at (when it is deliverable) + expiration */
		(void) mq_time_add(Max(o->deliver_at, now), us, "expiration");
		o->expiration_ms = us / 1000;
	}
	o->dedup_id = opt_text(fcinfo, a->dedup_id);
	o->content_type = opt_text(fcinfo, a->content_type);
	o->correlation_id = opt_text(fcinfo, a->correlation_id);
	o->reply_to = opt_text(fcinfo, a->reply_to);
	o->durability = parse_durability(opt_text(fcinfo, a->durability));
	/* streams' partition (other queues have none: ignored there) */
	if (has_arg(fcinfo, a->partition))
	{
		o->partition = PG_GETARG_INT32(a->partition);
		if (o->partition < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition %d is out of range", o->partition),
					 errdetail("Partitions are numbered from 0.")));
	}
}

static Jsonb *
headers_arg(FunctionCallInfo fcinfo, int i)
{
	if (!has_arg(fcinfo, i))
		return NULL;
	return mq_headers_check(PG_GETARG_JSONB_P(i));
}

static void
default_content_type(MqPublishOpts *o, Oid body_type)
{
	if (o->content_type == NULL && body_type == JSONBOID)
		o->content_type = "application/json";
}

static Datum
publish_one(FunctionCallInfo fcinfo, MqExchange *ex, char *rk, int body_arg,
			const PropArgs *a)
{
	MqPublishOpts o;
	Oid			body_type = get_fn_expr_argtype(fcinfo->flinfo, body_arg);
	bytea	   *body;
	Jsonb	   *headers;
	int64		id;

	parse_props(fcinfo, a, &o);
	default_content_type(&o, body_type);
	body = mq_body_bytes(PG_GETARG_DATUM(body_arg), body_type);
	headers = headers_arg(fcinfo, a->headers);
	mq_publish(ex, 1, &rk, &body, &headers, &o, &id);
	if (id == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(id);
}

Datum
mq_publish_sql(PG_FUNCTION_ARGS)
{
	char	   *exname;
	char	   *rk;
	MqExchange *ex;

	MQ_CHECK_ARGS(fcinfo, "exchange", "routing_key", "body", NULL, "mandatory");
	exname = text_to_cstring(PG_GETARG_TEXT_PP(0));
	rk = text_to_cstring(PG_GETARG_TEXT_PP(1));
	mq_catalog_refresh();
	ex = mq_exchange_lookup(exname, false);
	return publish_one(fcinfo, ex, rk, 2, &publish_args);
}

Datum
mq_send(PG_FUNCTION_ARGS)
{
	char	   *qname;

	MQ_CHECK_ARGS(fcinfo, "queue", "body");
	qname = text_to_cstring(PG_GETARG_TEXT_PP(0));
	mq_catalog_refresh();
	(void) mq_queue_lookup(qname, false);
	return publish_one(fcinfo, mq_exchange_lookup("", false), qname, 1, &send_args);
}

/*
 * The strings of the text[] argument argno of a batch of n messages, one
 * per message (a NULL element: that message has none), or NULL when the
 * argument is NULL.  what names the argument in errors, one its single
 * form in the hint.
 */
static char **
per_message_texts(FunctionCallInfo fcinfo, int argno, int n, const char *what,
				  const char *hint)
{
	bool	   *nulls;
	int			nd;
	Datum	   *d;
	char	  **out;

	if (!has_arg(fcinfo, argno))
		return NULL;
	d = mq_array_arg_nulls(fcinfo, argno, TEXTOID, what, &nd, &nulls);
	if (nd != n)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s has %d elements but bodies has %d", what, nd, n),
				 errhint("%s", hint)));
	out = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		out[i] = nulls[i] ? NULL : TextDatumGetCString(d[i]);
	return out;
}

/*
 * Shared by publish_batch and send_batch: rks has 1 or n elements;
 * headers, the business keys and the tags are NULL or have n elements (a
 * NULL key or tag: that message has none).
 */
static Datum
publish_many(FunctionCallInfo fcinfo, MqExchange *ex, char **rks, int nrks,
			 int bodies_arg, int headers_arg_no, int keys_arg_no, int tags_arg_no,
			 MqPublishOpts *o)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			arrtype = get_fn_expr_argtype(fcinfo->flinfo, bodies_arg);
	Oid			elemtype = get_element_type(arrtype);
	int			n;
	Datum	   *elems;
	bytea	  **bodies;
	Jsonb	  **headers = NULL;
	char	  **keys;
	int64	   *ids;

	elems = mq_array_arg(fcinfo, bodies_arg, elemtype, "bodies", &n);
	if (nrks != 1 && nrks != n)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("routing_keys has %d elements but bodies has %d", nrks, n),
				 errhint("Give one routing key for all, or one per body.")));
	default_content_type(o, elemtype);
	bodies = palloc(sizeof(bytea *) * Max(n, 1));
	keys = palloc(sizeof(char *) * Max(n, 1));
	ids = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bodies[i] = mq_body_bytes(elems[i], elemtype);
		keys[i] = rks[nrks == 1 ? 0 : i];
	}
	if (has_arg(fcinfo, headers_arg_no))
	{
		int			nh;
		Datum	   *h = mq_array_arg(fcinfo, headers_arg_no, JSONBOID, "headers", &nh);

		if (nh != n)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("headers has %d elements but bodies has %d", nh, n)));
		headers = palloc(sizeof(Jsonb *) * Max(n, 1));
		for (int i = 0; i < n; i++)
			headers[i] = mq_headers_check(DatumGetJsonbP(h[i]));
	}
	o->keys = per_message_texts(fcinfo, keys_arg_no, n, "keys",
								"Give one business key (or NULL) per body.");
	o->tags = per_message_texts(fcinfo, tags_arg_no, n, "tags",
								"Give one tag (or NULL) per body.");

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (n > 0)
		mq_publish(ex, n, keys, bodies, headers, o, ids);
	for (int i = 0; i < n; i++)
	{
		Datum		v = Int64GetDatum(ids[i]);
		bool		isnull = ids[i] == 0;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &v, &isnull);
	}
	return (Datum) 0;
}

/*
 * mq.publish_batch(exchange, routing_keys, bodies, headers, mandatory,
 *					durability, delay, partition, keys, tags)
 */
Datum
mq_publish_batch(PG_FUNCTION_ARGS)
{
	char	   *exname;
	MqExchange *ex;
	Datum	   *rkd;
	int			nrks;
	char	  **rks;
	MqPublishOpts o;
	static const PropArgs a = {-1, 4, 6, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 5, -1, 7};

	MQ_CHECK_ARGS(fcinfo, "exchange", "routing_keys", "bodies", NULL, "mandatory");
	exname = text_to_cstring(PG_GETARG_TEXT_PP(0));
	mq_catalog_refresh();
	ex = mq_exchange_lookup(exname, false);
	rkd = mq_array_arg(fcinfo, 1, TEXTOID, "routing_keys", &nrks);
	rks = palloc(sizeof(char *) * Max(nrks, 1));
	for (int i = 0; i < nrks; i++)
		rks[i] = TextDatumGetCString(rkd[i]);
	parse_props(fcinfo, &a, &o);
	return publish_many(fcinfo, ex, rks, nrks, 2, 3, 8, 9, &o);
}

/*
 * mq.send_batch(queue, bodies, headers, delay, durability, partition, keys,
 *				 tags)
 */
Datum
mq_send_batch(PG_FUNCTION_ARGS)
{
	char	   *qname;
	MqPublishOpts o;
	static const PropArgs a = {-1, -1, 3, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 4, -1, 5};

	MQ_CHECK_ARGS(fcinfo, "queue", "bodies");
	qname = text_to_cstring(PG_GETARG_TEXT_PP(0));
	mq_catalog_refresh();
	(void) mq_queue_lookup(qname, false);
	parse_props(fcinfo, &a, &o);
	return publish_many(fcinfo, mq_exchange_lookup("", false), &qname, 1, 1, 2, 6, 7,
						&o);
}
