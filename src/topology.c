/*-------------------------------------------------------------------------
 *
 * topology.c
 *	  SQL entry points that change the topology: declare and delete
 *	  exchanges and queues, bind and unbind, grant and revoke.
 *
 * Each checks the caller's privileges in C, then runs the matching
 * mq._*_impl PL/pgSQL function through SPI as the extension owner (the
 * internal tables are not accessible to ordinary roles).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "queue_ext.h"
#include "catalog.h"
#include "queue/queue.h"
#include "timers.h"

PG_FUNCTION_INFO_V1(mq_exchange_declare);
PG_FUNCTION_INFO_V1(mq_exchange_delete);
PG_FUNCTION_INFO_V1(mq_queue_declare);
PG_FUNCTION_INFO_V1(mq_queue_delete);
PG_FUNCTION_INFO_V1(mq_queue_purge);
PG_FUNCTION_INFO_V1(mq_consumer_declare);
PG_FUNCTION_INFO_V1(mq_consumer_delete);
PG_FUNCTION_INFO_V1(mq_bind);
PG_FUNCTION_INFO_V1(mq_unbind);
PG_FUNCTION_INFO_V1(mq_grant);
PG_FUNCTION_INFO_V1(mq_revoke);

static char *
text_arg(FunctionCallInfo fcinfo, int n, const char *what)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
	return text_to_cstring(PG_GETARG_TEXT_PP(n));
}

static void
check_name(const char *name, const char *kind)
{
	if (strlen(name) > 255)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("%s name \"%.32s...\" is too long", kind, name),
				 errdetail("Names are limited to 255 bytes.")));
}

/*
 * mq.exchange_declare(exchange, type, durable, alternate_exchange, arguments)
 */
Datum
mq_exchange_declare(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "exchange");
	MqExchange *ex;
	Oid			types[6] = {TEXTOID, TEXTOID, BOOLOID, TEXTOID, JSONBOID, OIDOID};
	Datum		values[6];
	char		nulls[6] = "      ";

	check_name(name, "exchange");
	(void) text_arg(fcinfo, 1, "type");
	mq_catalog_refresh();
	ex = mq_exchange_lookup(name, true);
	if (ex)
		mq_check_exchange_privilege(ex, MQ_PRIV_CONFIGURE);
	else
		mq_check_create_privilege("exchange", name);

	for (int i = 0; i < 5; i++)
	{
		values[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
		if (PG_ARGISNULL(i))
			nulls[i] = 'n';
	}
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("durable must not be null")));
	values[5] = ObjectIdGetDatum(GetUserId());
	mq_run_internal("_exchange_declare_impl", 6, types, values, nulls);
	PG_RETURN_VOID();
}

/* mq.exchange_delete(exchange, if_unused) */
Datum
mq_exchange_delete(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "exchange");
	bool		if_unused = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);
	MqExchange *ex;
	Oid			types[2] = {TEXTOID, BOOLOID};
	Datum		values[2];

	mq_catalog_refresh();
	ex = mq_exchange_lookup(name, false);
	mq_check_exchange_privilege(ex, MQ_PRIV_CONFIGURE);
	values[0] = CStringGetTextDatum(name);
	values[1] = BoolGetDatum(if_unused);
	mq_run_internal("_exchange_delete_impl", 2, types, values, NULL);
	PG_RETURN_VOID();
}

/*
 * mq.queue_declare(queue, type, durable, arguments) returns the queue name
 * (an empty name asks for a server-named queue "amq.gen-...").
 */
Datum
mq_queue_declare(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "queue");
	char	   *type = text_arg(fcinfo, 1, "type");
	MqQueue    *q;
	Oid			types[5] = {TEXTOID, TEXTOID, BOOLOID, JSONBOID, OIDOID};
	Datum		values[5];
	char		nulls[5] = "     ";
	char	   *res;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("durable must not be null")));
	if (name[0] == '\0')
		name = psprintf("amq.gen-%016llx", (unsigned long long) pg_prng_uint64(&pg_global_prng_state));
	check_name(name, "queue");
	mq_catalog_refresh();
	q = mq_queue_lookup(name, true);
	if (q)
		mq_check_queue_privilege(q, MQ_PRIV_CONFIGURE);
	else
		mq_check_create_privilege("queue", name);

	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(type);
	values[2] = PG_GETARG_DATUM(2);
	if (PG_ARGISNULL(3))
		nulls[3] = 'n';
	else
		values[3] = PG_GETARG_DATUM(3);
	values[4] = ObjectIdGetDatum(GetUserId());
	res = mq_run_internal("_queue_declare_impl", 5, types, values, nulls);
	PG_RETURN_TEXT_P(cstring_to_text(res));
}

/*
 * mq.queue_delete(queue, if_unused, if_empty) returns the number of
 * messages the queue held.
 */
Datum
mq_queue_delete(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "queue");
	bool		if_unused = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);
	bool		if_empty = PG_ARGISNULL(2) ? false : PG_GETARG_BOOL(2);
	MqQueue    *q;
	MqQueueCounts counts;
	Oid			types[5] = {TEXTOID, BOOLOID, BOOLOID, INT8OID, INT4OID};
	Datum		values[5];

	mq_catalog_refresh();
	q = mq_queue_lookup(name, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONFIGURE);
	mq_queue_counts(q, &counts);
	counts.ready += mq_timers_count(q->id);

	values[0] = CStringGetTextDatum(name);
	values[1] = BoolGetDatum(if_unused);
	values[2] = BoolGetDatum(if_empty);
	values[3] = Int64GetDatum(counts.ready + counts.unacked);
	values[4] = Int32GetDatum(counts.consumers);
	mq_run_internal("_queue_delete_impl", 5, types, values, NULL);
	mq_queue_state_drop(q);
	PG_RETURN_INT64(counts.ready + counts.unacked);
}

/* mq.queue_purge(queue) returns the number of ready messages removed */
Datum
mq_queue_purge(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "queue");
	MqQueue    *q;

	mq_catalog_refresh();
	q = mq_queue_lookup(name, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONFIGURE);
	PG_RETURN_INT64(mq_queue_purge_ready(q));
}

/*
 * mq.consumer_declare(queue, consumer, prefetch) and
 * mq.consumer_delete(queue, consumer): a named consumer's settings (like
 * RabbitMQ's basic.qos prefetch count), used by mq.consume(consumer =>
 * name) when it is given no prefetch.  Needs consume on the queue.
 */
static void
consumer_common(FunctionCallInfo fcinfo, bool delete)
{
	char	   *qname = text_arg(fcinfo, 0, "queue");
	char	   *consumer = text_arg(fcinfo, 1, "consumer");
	int32		prefetch = (delete || PG_ARGISNULL(2)) ? 0 : PG_GETARG_INT32(2);
	MqQueue    *q;
	Oid			types[4] = {TEXTOID, TEXTOID, INT4OID, BOOLOID};
	Datum		values[4];

	mq_catalog_refresh();
	q = mq_queue_lookup(qname, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONSUME);
	if (consumer[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("consumer name must not be empty")));
	if (prefetch < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("prefetch must not be negative"),
				 errdetail("0 or NULL means no limit.")));
	values[0] = CStringGetTextDatum(qname);
	values[1] = CStringGetTextDatum(consumer);
	values[2] = Int32GetDatum(prefetch);
	values[3] = BoolGetDatum(delete);
	mq_run_internal("_consumer_declare_impl", 4, types, values, NULL);
}

Datum
mq_consumer_declare(PG_FUNCTION_ARGS)
{
	consumer_common(fcinfo, false);
	PG_RETURN_VOID();
}

Datum
mq_consumer_delete(PG_FUNCTION_ARGS)
{
	consumer_common(fcinfo, true);
	PG_RETURN_VOID();
}

static void
bind_common(FunctionCallInfo fcinfo, bool unbind)
{
	char	   *qname = text_arg(fcinfo, 0, "queue");
	char	   *xname = text_arg(fcinfo, 1, "exchange");
	MqQueue    *q;
	MqExchange *ex;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, JSONBOID, BOOLOID};
	Datum		values[5];
	char		nulls[5] = "     ";

	mq_catalog_refresh();
	q = mq_queue_lookup(qname, false);
	ex = mq_exchange_lookup(xname, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONFIGURE);
	mq_check_exchange_privilege(ex, MQ_PRIV_CONSUME);
	if (!PG_ARGISNULL(2))
		mq_routing_key_check(text_to_cstring(PG_GETARG_TEXT_PP(2)), "binding key");

	values[0] = CStringGetTextDatum(qname);
	values[1] = CStringGetTextDatum(xname);
	for (int i = 2; i < 4; i++)
	{
		if (PG_ARGISNULL(i))
			nulls[i] = 'n';
		else
			values[i] = PG_GETARG_DATUM(i);
	}
	values[4] = BoolGetDatum(unbind);
	mq_run_internal("_bind_impl", 5, types, values, nulls);
}

/* mq.bind(queue, exchange, binding_key, arguments) */
Datum
mq_bind(PG_FUNCTION_ARGS)
{
	bind_common(fcinfo, false);
	PG_RETURN_VOID();
}

/* mq.unbind(queue, exchange, binding_key, arguments) */
Datum
mq_unbind(PG_FUNCTION_ARGS)
{
	bind_common(fcinfo, true);
	PG_RETURN_VOID();
}

/*
 * mq.grant / mq.revoke(privilege, object_type, object_name, role):
 * only the object's owner (or a superuser) may grant.
 */
static void
grant_common(FunctionCallInfo fcinfo, bool revoke)
{
	char	   *priv = text_arg(fcinfo, 0, "privilege");
	char	   *kind = text_arg(fcinfo, 1, "object_type");
	char	   *name = text_arg(fcinfo, 2, "object_name");
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, REGROLEOID, BOOLOID};
	Datum		values[5];
	char		nulls[5] = "     ";
	const MqAcl *acl = NULL;

	mq_catalog_refresh();
	if (strcmp(kind, "queue") == 0)
	{
		MqQueue    *q = mq_queue_lookup(name, false);

		acl = &q->acl;
	}
	else if (strcmp(kind, "exchange") == 0)
	{
		MqExchange *ex = mq_exchange_lookup(name, false);

		acl = &ex->acl;
	}
	if (acl && !superuser() && !has_privs_of_role(GetUserId(), acl->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of %s \"%s\" to grant or revoke privileges on it", kind, name)));

	values[0] = CStringGetTextDatum(priv);
	values[1] = CStringGetTextDatum(kind);
	values[2] = CStringGetTextDatum(name);
	if (PG_ARGISNULL(3))
		nulls[3] = 'n';
	else
		values[3] = PG_GETARG_DATUM(3);
	values[4] = BoolGetDatum(revoke);
	mq_run_internal("_grant_impl", 5, types, values, nulls);
}

Datum
mq_grant(PG_FUNCTION_ARGS)
{
	grant_common(fcinfo, false);
	PG_RETURN_VOID();
}

Datum
mq_revoke(PG_FUNCTION_ARGS)
{
	grant_common(fcinfo, true);
	PG_RETURN_VOID();
}
