/*-------------------------------------------------------------------------
 *
 * topology_sql.c
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

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "mqutils.h"
#include "purge.h"
#include "acl.h"
#include "args.h"
#include "catalog.h"
#include "queue/queue.h"
#include "quorum.h"
#include "timers.h"

PG_FUNCTION_INFO_V1(mq_exchange_declare);
PG_FUNCTION_INFO_V1(mq_exchange_delete);
PG_FUNCTION_INFO_V1(mq_queue_declare);
PG_FUNCTION_INFO_V1(mq_queue_delete);
PG_FUNCTION_INFO_V1(mq_queue_purge);
PG_FUNCTION_INFO_V1(mq_queue_notify);
PG_FUNCTION_INFO_V1(mq_queue_notify_channel);
PG_FUNCTION_INFO_V1(mq_consumer_declare);
PG_FUNCTION_INFO_V1(mq_consumer_delete);
PG_FUNCTION_INFO_V1(mq_bind);
PG_FUNCTION_INFO_V1(mq_unbind);
PG_FUNCTION_INFO_V1(mq_grant);
PG_FUNCTION_INFO_V1(mq_revoke);

/* A text argument already checked not to be NULL (MQ_CHECK_ARGS) */
#define text_arg(n) text_to_cstring(PG_GETARG_TEXT_PP(n))

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
	char	   *name;
	MqExchange *ex;
	Oid			types[6] = {TEXTOID, TEXTOID, BOOLOID, TEXTOID, JSONBOID, OIDOID};
	Datum		values[6];
	char		nulls[6] = "      ";

	MQ_CHECK_ARGS(fcinfo, "exchange", "type", "durable", NULL, "arguments");
	name = text_arg(0);
	check_name(name, "exchange");

	/*
	 * RabbitMQ refuses any declare of the default exchange (access-refused),
	 * even one that matches it: it is not an exchange one configures.
	 */
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot redeclare the default exchange"),
				 errdetail("Every queue is bound to the default exchange by its own name.")));
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
	values[5] = ObjectIdGetDatum(GetUserId());
	mq_run_internal("_exchange_declare_impl", 6, types, values, nulls);
	PG_RETURN_VOID();
}

/* mq.exchange_delete(exchange, if_unused) */
Datum
mq_exchange_delete(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		if_unused;
	MqExchange *ex;
	Oid			types[2] = {TEXTOID, BOOLOID};
	Datum		values[2];

	MQ_CHECK_ARGS(fcinfo, "exchange", "if_unused");
	name = text_arg(0);
	if_unused = PG_GETARG_BOOL(1);
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
 * (an empty name asks for a server-named queue "amq.gen-...").  A NULL
 * type (the default) is the arguments' x-queue-type, else classic.
 */
Datum
mq_queue_declare(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *type;
	MqQueue    *q;
	Oid			types[5] = {TEXTOID, TEXTOID, BOOLOID, JSONBOID, OIDOID};
	Datum		values[5];
	char	   *res;

	MQ_CHECK_ARGS(fcinfo, "queue", NULL, "durable", "arguments");
	name = text_arg(0);
	type = PG_ARGISNULL(1) ? NULL : text_arg(1);
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
	values[1] = type ? CStringGetTextDatum(type) : (Datum) 0;
	values[2] = PG_GETARG_DATUM(2);
	values[3] = PG_GETARG_DATUM(3);
	values[4] = ObjectIdGetDatum(GetUserId());
	res = mq_run_internal("_queue_declare_impl", 5, types, values, type ? NULL : " n   ");

	/* a quorum queue, or a stream with "durability": "quorum" */
	mq_catalog_refresh();
	q = mq_queue_lookup(res, true);
	if (q && (q->type == MQ_QUEUE_QUORUM || q->quorum_durable))
		mq_quorum_declare_check(res);
	PG_RETURN_TEXT_P(cstring_to_text(res));
}

/*
 * mq.queue_delete(queue, if_unused, if_empty) returns the number of
 * messages the queue held.
 */
Datum
mq_queue_delete(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		if_unused;
	bool		if_empty;
	MqQueue    *q;
	MqQueueCounts counts;
	Oid			types[5] = {TEXTOID, BOOLOID, BOOLOID, INT8OID, INT4OID};
	Datum		values[5];

	MQ_CHECK_ARGS(fcinfo, "queue", "if_unused", "if_empty");
	name = text_arg(0);
	if_unused = PG_GETARG_BOOL(1);
	if_empty = PG_GETARG_BOOL(2);
	mq_catalog_refresh();
	q = mq_queue_lookup(name, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONFIGURE);

	/*
	 * The queue's object lock first, before any of its tables (lock order:
	 * queue_int.h): we wait for every transaction that used the queue, and
	 * holding none of its lane tables while we do, we are in no cycle with
	 * one that waits for a lane table under a queue lock.  A transaction
	 * that comes later waits for us before it takes any of them.
	 *
	 * _queue_delete_impl deletes by name: if the queue we looked up was
	 * deleted and declared again while we waited, the name is another
	 * queue's now, and it is that one's lock we need.  Once we hold the lock
	 * of the queue the name has, nobody else can delete it.
	 */
	for (;;)
	{
		int32		locked = q->id;

		LockDatabaseObject(mq_internal_relid("cat_queue"), locked, 0, AccessExclusiveLock);
		mq_catalog_refresh();
		q = mq_queue_lookup(name, false);
		if (q->id == locked)
			break;
		UnlockDatabaseObject(mq_internal_relid("cat_queue"), locked, 0, AccessExclusiveLock);
		mq_check_queue_privilege(q, MQ_PRIV_CONFIGURE);
	}
	mq_queue_delete_lock(q);
	mq_queue_counts(q, &counts, NULL);
	counts.ready += mq_timers_count(q->id);

	values[0] = CStringGetTextDatum(name);
	values[1] = BoolGetDatum(if_unused);
	values[2] = BoolGetDatum(if_empty);
	values[3] = Int64GetDatum(counts.ready + counts.unacked);
	values[4] = Int32GetDatum(counts.consumers);
	mq_run_internal("_queue_delete_impl", 5, types, values, NULL);
	mq_queue_state_drop_at_end(q->id, 0, true, false);
	PG_RETURN_INT64(counts.ready + counts.unacked);
}

/* mq.queue_purge(queue) returns the number of ready messages removed */
Datum
mq_queue_purge(PG_FUNCTION_ARGS)
{
	char	   *name;
	MqQueue    *q;

	MQ_CHECK_ARGS(fcinfo, "queue");
	name = text_arg(0);
	mq_catalog_refresh();
	q = mq_queue_lookup(name, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONFIGURE);
	if (q->type == MQ_QUEUE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("stream queue \"%s\" cannot be purged", q->name),
				 errhint("A stream keeps its messages for its retention; delete and declare it again to empty it.")));
	PG_RETURN_INT64(mq_purge(q));
}

/*
 * mq.queue_notify(queue, channel): the channel the worker NOTIFYs when a
 * delayed message of the queue falls due or a lease of it runs out, once
 * it has made a message ready (mq_notify_ready); NULL: none.  Checked here
 * as NOTIFY checks a channel, so that the worker never fails on one.
 * Needs configure on the queue.  Streams have no lease to run out, and
 * their consumers read by offset: refused.
 */
Datum
mq_queue_notify(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *channel = NULL;
	MqQueue    *q;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	char		nulls[2] = "  ";

	MQ_CHECK_ARGS(fcinfo, "queue", NULL);
	name = text_arg(0);
	if (!PG_ARGISNULL(1))
	{
		channel = text_arg(1);
		if (channel[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("channel name cannot be empty"),
					 errhint("NULL turns the notification off.")));
		if (strlen(channel) >= NAMEDATALEN)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("channel name too long"),
					 errdetail("Channel names are limited to %d bytes.", NAMEDATALEN - 1)));
	}
	mq_catalog_refresh();
	q = mq_queue_lookup(name, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONFIGURE);
	if (q->type == MQ_QUEUE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("stream queue \"%s\" cannot have a notification channel", q->name),
				 errdetail("A stream's consumers read by offset; no lease of a stream runs out.")));
	values[0] = CStringGetTextDatum(q->name);
	values[1] = channel ? CStringGetTextDatum(channel) : (Datum) 0;
	if (channel == NULL)
		nulls[1] = 'n';
	mq_run_internal("_queue_notify_impl", 2, types, values, nulls);
	PG_RETURN_VOID();
}

/*
 * mq.queue_notify_channel(queue): the channel mq.queue_notify set (NULL:
 * none), to whoever sees the queue in mq.queues
 */
Datum
mq_queue_notify_channel(PG_FUNCTION_ARGS)
{
	MqQueue    *q;

	MQ_CHECK_ARGS(fcinfo, "queue");
	mq_catalog_refresh();
	q = mq_queue_lookup(text_arg(0), false);
	if (!mq_queue_visible(q))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to see queue \"%s\"", q->name),
				 errhint("Any privilege on the queue, or pg_read_all_stats, shows it.")));
	if (q->notify_channel == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(q->notify_channel));
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
	char	   *qname;
	char	   *consumer;
	int32		prefetch;
	MqQueue    *q;
	Oid			types[4] = {TEXTOID, TEXTOID, INT4OID, BOOLOID};
	Datum		values[4];

	/* consumer_declare(queue, consumer, prefetch), consumer_delete(queue, consumer) */
	MQ_CHECK_ARGS(fcinfo, "queue", "consumer");
	qname = text_arg(0);
	consumer = text_arg(1);
	prefetch = (delete || PG_ARGISNULL(2)) ? 0 : PG_GETARG_INT32(2);
	mq_consumer_name_check(consumer);
	mq_catalog_refresh();
	q = mq_queue_lookup(qname, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONSUME);
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
	char	   *qname;
	char	   *xname;
	MqQueue    *q;
	MqExchange *ex;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, JSONBOID, BOOLOID};
	Datum		values[5];

	MQ_CHECK_ARGS(fcinfo, "queue", "exchange", "binding_key", "arguments");
	qname = text_arg(0);
	xname = text_arg(1);
	mq_catalog_refresh();
	q = mq_queue_lookup(qname, false);
	ex = mq_exchange_lookup(xname, false);
	mq_check_queue_privilege(q, MQ_PRIV_CONFIGURE);
	mq_check_exchange_privilege(ex, MQ_PRIV_CONSUME);
	mq_routing_key_check(text_arg(2), "binding key");

	values[0] = CStringGetTextDatum(qname);
	values[1] = CStringGetTextDatum(xname);
	values[2] = PG_GETARG_DATUM(2);
	values[3] = PG_GETARG_DATUM(3);
	values[4] = BoolGetDatum(unbind);
	mq_run_internal("_bind_impl", 5, types, values, NULL);
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
	char	   *priv;
	char	   *kind;
	char	   *name;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, REGROLEOID, BOOLOID};
	Datum		values[5];
	char		nulls[5] = "     ";
	const MqAcl *acl = NULL;

	/* role => NULL means PUBLIC (docs/api.md) */
	MQ_CHECK_ARGS(fcinfo, "privilege", "object_type", "object_name", NULL);
	priv = text_arg(0);
	kind = text_arg(1);
	name = text_arg(2);
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
