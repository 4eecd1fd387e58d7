/*-------------------------------------------------------------------------
 *
 * half.c
 *	  Transactional (half) messages, RocketMQ style: a producer whose local
 *	  transaction is outside this database publishes a half message
 *	  (durable, invisible), runs its transaction, then commits or rolls the
 *	  half message back; when it never says, the maintenance worker asks
 *	  the producer group's check function.
 *
 * The body is stored in the message log at publish_half; committing routes
 * it (to the queues bound at that moment) and appends the queue entries,
 * so nothing is copied.  Decisions live in the small table mq.half.
 *
 * A half message is never lost silently: publish_half refuses one that
 * routes nowhere at that time, a producer's commit of one that routes
 * nowhere by then fails (and changes nothing), and a commit by the check
 * function or by on_exhausted records it as "unroutable".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timeout.h"

#include "mqutils.h"
#include "durability.h"
#include "acl.h"
#include "annotations.h"
#include "args.h"
#include "owner.h"
#include "half.h"
#include "msglog.h"
#include "publish.h"
#include "route.h"

PG_FUNCTION_INFO_V1(mq_publish_half);
PG_FUNCTION_INFO_V1(mq_end_half);
PG_FUNCTION_INFO_V1(mq_producer_group_declare);

int			mq_check_timeout = 10000;	/* mq.check_timeout, ms */

/* Longest check error kept in mq.half.last_error, in bytes */
#define MQ_HALF_ERROR_MAX 1000


/* Settings of transactional messages (from _PG_init) */
void
mq_half_init(void)
{
	DefineCustomIntVariable("mq.check_timeout",
							"Longest a half-message check function may run; longer counts as unknown.",
							NULL,
							&mq_check_timeout, 10000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
}

/*
 * A half message that routes nowhere, refused as mq.send refuses a queue
 * that does not exist (42704) and a mandatory publish an unroutable
 * message (P0002).  half_id is 0 at publish_half; exchange_gone when the
 * exchange was deleted before the commit.
 */
static void
half_unroutable_error(const char *exname, const char *rk, int64 half_id,
					  bool exchange_gone)
{
	const char *hint = half_id == 0 ?
		"Declare the destination before publishing the half message." :
		"Nothing was changed: declare the destination and commit again, or roll the half message back.";

	if (exchange_gone)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("exchange \"%s\" of half message " INT64_FORMAT " does not exist",
						exname, half_id),
				 errdetail("A commit would lose the message."),
				 errhint("%s", hint)));
	if (exname[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("queue \"%s\" does not exist", rk),
				 errdetail("A half message to the default exchange goes to the queue its routing key names."),
				 errhint("%s", hint)));
	ereport(ERROR,
			(errcode(ERRCODE_NO_DATA_FOUND),
			 errmsg("half message to exchange \"%s\" with routing key \"%s\" is unroutable",
					exname, rk),
			 errdetail("No queue is bound that matches: a commit would lose the message."),
			 errhint("%s", half_id == 0 ?
					 "Bind a queue before publishing the half message." :
					 "Nothing was changed: bind a queue and commit again, or roll the half message back.")));
}

/* mq.producer_group_declare(...) */
Datum
mq_producer_group_declare(PG_FUNCTION_ARGS)
{
	Oid			types[7] = {TEXTOID, REGPROCEDUREOID, INTERVALOID, INTERVALOID, INT4OID, TEXTOID, OIDOID};
	Datum		values[7];
	TimestampTz now = GetCurrentTimestamp();

	MQ_CHECK_ARGS(fcinfo, "producer_group", "check_function", "check_after",
				  "check_interval", "max_checks", "on_exhausted");

	/*
	 * The worker adds these to the times of half messages (in SQL, by the
	 * calendar): make sure such a time exists.  Months counted as 30 days
	 * make the check a little stricter than the calendar.
	 */
	(void) mq_time_add(now, mq_interval_us(PG_GETARG_INTERVAL_P(2), "check_after", 0),
					   "check_after");
	(void) mq_time_add(now, mq_interval_us(PG_GETARG_INTERVAL_P(3), "check_interval", 1),
					   "check_interval");
	mq_check_create_privilege("producer group", text_to_cstring(PG_GETARG_TEXT_PP(0)));
	for (int i = 0; i < 6; i++)
		values[i] = PG_GETARG_DATUM(i);
	values[6] = ObjectIdGetDatum(GetUserId());
	mq_run_internal("_producer_group_declare_impl", 7, types, values, NULL);
	PG_RETURN_VOID();
}

/*
 * mq.publish_half(exchange, routing_key, body, producer_group, headers,
 *				   key, tag, message_group) returns the half id
 */
Datum
mq_publish_half(PG_FUNCTION_ARGS)
{
	Oid			body_type = get_fn_expr_argtype(fcinfo->flinfo, 2);
	MqExchange *ex;
	MqMessage	m;
	MqMessage  *mp = &m;
	char	   *group;
	MqOwnerScope owner;
	char	  **keys;
	int			nkeys;

	MQ_CHECK_ARGS(fcinfo, "exchange", "routing_key", "body", "producer_group");
	mq_catalog_refresh();
	ex = mq_exchange_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	mq_check_exchange_privilege(ex, MQ_PRIV_PUBLISH);
	group = text_to_cstring(PG_GETARG_TEXT_PP(3));

	memset(&m, 0, sizeof(m));
	m.published_at = GetCurrentTimestamp();
	m.exchange = ex->name;
	m.routing_key = text_to_cstring(PG_GETARG_TEXT_PP(1));
	mq_routing_key_check(m.routing_key, "routing key");
	m.body = mq_body_bytes(PG_GETARG_DATUM(2), body_type);
	m.headers = PG_ARGISNULL(4) ? NULL : mq_headers_check(PG_GETARG_JSONB_P(4));
	/* CC and BCC are read now (BCC is not stored), routed at the decision */
	nkeys = mq_sender_keys(m.routing_key, &m.headers, &keys, &m.properties);
	m.key = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	m.tag = PG_ARGISNULL(6) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(6));
	m.message_group = PG_ARGISNULL(7) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(7));

	mq_owner_enter(&owner);
	{
		Oid			types[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(group)};

		mq_owner_exec("SELECT 1 FROM mq.cat_producer_group WHERE name OPERATOR(pg_catalog.=) $1",
					  1, types, values, NULL, true, SPI_OK_SELECT, "look up a producer group");
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("producer group \"%s\" does not exist", group),
					 errhint("Declare it with mq.producer_group_declare().")));
	}
	/* routed at the decision, but refused now if that would lose it */
	if (!mq_route_reaches_queue(ex, keys, nkeys, m.headers))
		half_unroutable_error(ex->name, m.routing_key, 0, false);
	mq_log_append(&mp, 1, true);
	{
		Oid			types[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
		Datum		values[4] = {Int64GetDatum(m.msg_id), CStringGetTextDatum(group),
		CStringGetTextDatum(ex->name), CStringGetTextDatum(m.routing_key)};

		mq_owner_exec("INSERT INTO mq.half (half_id, producer_group, exchange, routing_key) "
					  "VALUES ($1, $2, $3, $4)", 4, types, values, NULL, false, SPI_OK_INSERT,
					  "record a half message");
	}
	mq_owner_leave(&owner);
	mq_require_durability(MQ_DURABILITY_LOCAL);
	PG_RETURN_INT64(m.msg_id);
}

/*
 * Decide a half message.  Returns the message id when it is (or already
 * was) committed, 0 when rolled back.  Deciding again the same way is a
 * no-op; the other way is an error.  A commit that routes nowhere is an
 * error for the producer (check_privileges: nothing is changed) and is
 * recorded as state "unroutable" for the worker (returning 0).
 */
static int64
half_decide(int64 half_id, bool commit, const char *by, bool check_privileges)
{
	const char *decided;
	MqOwnerScope owner;
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		values[3];
	MemoryContext callercxt = CurrentMemoryContext;
	char	   *exname;
	char	   *rk;
	char	   *state;
	MqExchange *ex = NULL;
	int64		result = 0;

	mq_owner_enter(&owner);
	values[0] = Int64GetDatum(half_id);
	mq_owner_exec("SELECT exchange, routing_key, state FROM mq.half "
				  "WHERE half_id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
				  1, types, values, NULL, false, SPI_OK_SELECT, "lock a half message");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("half message " INT64_FORMAT " does not exist", half_id)));
	/* the row stays locked; its values must outlive SPI_finish */
	exname = MemoryContextStrdup(callercxt, SPI_getvalue(SPI_tuptable->vals[0],
														 SPI_tuptable->tupdesc, 1));
	rk = MemoryContextStrdup(callercxt, SPI_getvalue(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc, 2));
	state = MemoryContextStrdup(callercxt, SPI_getvalue(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 3));
	mq_owner_leave(&owner);

	if (strcmp(state, "pending") != 0)
	{
		/* committed, or committed when it routed nowhere */
		bool		was_commit = strcmp(state, "rolled_back") != 0;
		bool		lost = strcmp(state, "unroutable") == 0;

		if (was_commit != commit)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("half message " INT64_FORMAT " was already %s", half_id,
							!was_commit ? "rolled back" :
							lost ? "committed (unroutable)" : "committed")));
		if (lost)
			ereport(ERROR,
					(errcode(ERRCODE_NO_DATA_FOUND),
					 errmsg("half message " INT64_FORMAT " was committed when it routed nowhere",
							half_id),
					 errdetail("It is not delivered; mq.half_messages shows it as unroutable.")));
		return commit ? half_id : 0;
	}

	/* privileges and the publish itself are the caller's own */
	if (commit || check_privileges)
	{
		mq_catalog_refresh();
		ex = mq_exchange_lookup(exname, true);
		if (ex && check_privileges)
			mq_check_exchange_privilege(ex, MQ_PRIV_PUBLISH);
	}
	decided = commit ? "committed" : "rolled_back";
	if (commit)
	{
		MqMessage	m;
		int64		id = 0;

		if (ex != NULL && !mq_log_fetch(half_id, &m))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("half message " INT64_FORMAT " is missing from the message log", half_id)));
		if (ex != NULL)
		{
			MqPublishOpts o;

			mq_publish_opts_init(&o);
			o.check_privileges = false;
			o.existing_ids = &half_id;
			o.nroute_keys = mq_message_keys(rk, m.properties, &o.route_keys);
			/* an id of 0: routed nowhere, and nothing was written */
			mq_publish(ex, 1, &rk, &m.body, &m.headers, &o, &id);
		}
		if (id != 0)
			result = half_id;
		else if (check_privileges)
			half_unroutable_error(exname, rk, half_id, ex == NULL);
		else
		{
			ereport(WARNING,
					(errmsg("half message " INT64_FORMAT " committed by %s routes nowhere; it is recorded as unroutable",
							half_id, by),
					 errdetail(ex == NULL ? "Its exchange \"%s\" no longer exists." :
							   "No queue is bound to exchange \"%s\" that matches its routing key.",
							   exname)));
			decided = "unroutable";
		}
	}

	mq_owner_enter(&owner);
	values[1] = CStringGetTextDatum(decided);
	values[2] = CStringGetTextDatum(by);
	mq_owner_exec("UPDATE mq.half SET state = $2, decided_at = pg_catalog.now(), decided_by = $3 "
				  "WHERE half_id OPERATOR(pg_catalog.=) $1",
				  3, types, values, NULL, false, SPI_OK_UPDATE, "decide a half message");
	mq_owner_leave(&owner);
	mq_require_durability(MQ_DURABILITY_LOCAL);
	return result;
}

/* mq.end_half(half_id, action) */
Datum
mq_end_half(PG_FUNCTION_ARGS)
{
	char	   *action;
	int64		id;

	MQ_CHECK_ARGS(fcinfo, "half_id", "action");
	action = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (strcmp(action, "commit") != 0 && strcmp(action, "rollback") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid action \"%s\"", action),
				 errhint("Use commit or rollback.")));
	mq_catalog_refresh();
	id = half_decide(PG_GETARG_INT64(0), action[0] == 'c', "producer", true);
	if (id == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(id);
}

/* One call of a check function (run by mq_run_guarded) */
typedef struct CheckCall
{
	Oid			fn;
	Oid			owner;
	int64		half_id;
	MqMessage  *m;
	MemoryContext cxt;
	char	   *outcome;
} CheckCall;

static void
check_call(void *arg)
{
	CheckCall  *cc = arg;
	Datum		r;
	LOCAL_FCINFO(fcinfo, 3);
	FmgrInfo	flinfo;
	Oid			save_userid;
	int			save_sec;

	/* as the producer group's owner (the subtransaction restores us) */
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(cc->owner, save_sec | SECURITY_LOCAL_USERID_CHANGE);
	if (mq_check_timeout > 0)
		enable_timeout_after(STATEMENT_TIMEOUT, mq_check_timeout);
	fmgr_info(cc->fn, &flinfo);
	InitFunctionCallInfoData(*fcinfo, &flinfo, 3, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = Int64GetDatum(cc->half_id);
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = cc->m->headers ? JsonbPGetDatum(cc->m->headers) : (Datum) 0;
	fcinfo->args[1].isnull = cc->m->headers == NULL;
	fcinfo->args[2].value = PointerGetDatum(cc->m->body);
	fcinfo->args[2].isnull = false;
	r = FunctionCallInvoke(fcinfo);
	if (mq_check_timeout > 0)
		disable_timeout(STATEMENT_TIMEOUT, false);
	if (!fcinfo->isnull)
		cc->outcome = MemoryContextStrdup(cc->cxt, TextDatumGetCString(r));
	SetUserIdAndSecContext(save_userid, save_sec);
}

/*
 * Call a check function in a subtransaction, as the producer group's
 * owner, with mq.check_timeout; any error or timeout means "unknown"
 * (returned as NULL with *error set).
 */
static char *
run_check(Oid fn, Oid owner, int64 half_id, MqMessage *m, char **error)
{
	CheckCall	cc = {fn, owner, half_id, m, CurrentMemoryContext, NULL};

	*error = NULL;
	if (!mq_run_guarded("check", check_call, &cc, error))
	{
		if (mq_check_timeout > 0)
			disable_timeout(STATEMENT_TIMEOUT, false);
		/* our time limit: name the setting that sets it */
		if (mq_run_guarded_sqlerrcode == ERRCODE_QUERY_CANCELED && mq_check_timeout > 0 &&
			strcmp(*error, _("canceling statement due to statement timeout")) == 0)
			*error = psprintf("the check function ran longer than mq.check_timeout (%d ms) "
							  "and was canceled", mq_check_timeout);
		return NULL;
	}
	return cc.outcome;
}

int
mq_half_check_due(void)
{
	MqOwnerScope owner;
	int			n;
	int64	   *ids;
	Oid		   *fns;
	Oid		   *owners;
	int		   *checks;
	int		   *max_checks;
	bool	   *exhaust_commit;
	MemoryContext callercxt = CurrentMemoryContext;

	mq_owner_enter(&owner);
	mq_owner_exec("SELECT h.half_id, g.check_function::pg_catalog.oid, g.owner, h.checks, "
				  "g.max_checks, g.on_exhausted OPERATOR(pg_catalog.=) 'commit' "
				  "FROM mq.half h JOIN mq.cat_producer_group g "
				  "ON g.name OPERATOR(pg_catalog.=) h.producer_group "
				  "WHERE h.state OPERATOR(pg_catalog.=) 'pending' "
				  "AND (h.created_at OPERATOR(pg_catalog.+) g.check_after) "
				  "OPERATOR(pg_catalog.<=) pg_catalog.now() "
				  "AND (h.last_check IS NULL OR (h.last_check OPERATOR(pg_catalog.+) g.check_interval) "
				  "OPERATOR(pg_catalog.<=) pg_catalog.now()) "
				  "ORDER BY h.created_at LIMIT 100", 0, NULL, NULL, NULL, true, SPI_OK_SELECT,
				  "list half messages to check");
	n = (int) SPI_processed;
	/* the results must outlive SPI_finish */
	MemoryContextSwitchTo(callercxt);
	ids = palloc(sizeof(int64) * Max(n, 1));
	fns = palloc(sizeof(Oid) * Max(n, 1));
	owners = palloc(sizeof(Oid) * Max(n, 1));
	checks = palloc(sizeof(int) * Max(n, 1));
	max_checks = palloc(sizeof(int) * Max(n, 1));
	exhaust_commit = palloc(sizeof(bool) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		fns[i] = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
		owners[i] = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		checks[i] = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		max_checks[i] = DatumGetInt32(SPI_getbinval(tup, desc, 5, &isnull));
		exhaust_commit[i] = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
	}
	mq_owner_leave(&owner);

	for (int i = 0; i < n; i++)
	{
		MqMessage	m;
		char	   *error = NULL;
		char	   *outcome;
		const char *recorded;
		char	   *last_error = NULL;

		if (!mq_log_fetch(ids[i], &m))
		{
			outcome = NULL;
			error = "message missing from the log";
		}
		else
			outcome = run_check(fns[i], owners[i], ids[i], &m, &error);
		if (outcome && (strcmp(outcome, "commit") == 0 || strcmp(outcome, "rollback") == 0))
			recorded = outcome;
		else
		{
			if (error == NULL)
				error = outcome ? psprintf("check function returned \"%s\"", outcome) :
					pstrdup("check function returned NULL");
			if (!(outcome && strcmp(outcome, "unknown") == 0))
			{
				ereport(LOG,
						(errmsg("queue_ext: check of half message " INT64_FORMAT " failed: %s",
								ids[i], error)));
				/* for mq.half_messages.last_error, bounded */
				last_error = error;
				if (strlen(last_error) > MQ_HALF_ERROR_MAX)
				{
					int			len = pg_mbcliplen(last_error, strlen(last_error),
												   MQ_HALF_ERROR_MAX - 3);

					last_error = psprintf("%.*s...", len, last_error);
				}
			}
			recorded = "unknown";
		}

		{
			Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
			Datum		values[3];

			values[0] = Int64GetDatum(ids[i]);
			values[1] = CStringGetTextDatum(recorded);
			values[2] = last_error ? CStringGetTextDatum(last_error) : (Datum) 0;

			mq_owner_enter(&owner);
			mq_owner_exec("UPDATE mq.half SET checks = checks OPERATOR(pg_catalog.+) 1, "
						  "last_check = pg_catalog.now(), last_outcome = $2, last_error = $3 "
						  "WHERE half_id OPERATOR(pg_catalog.=) $1", 3, types, values,
						  last_error ? NULL : "  n",
						  false, SPI_OK_UPDATE, "count a check of a half message");
			mq_owner_leave(&owner);
		}
		if (strcmp(recorded, "commit") == 0)
			half_decide(ids[i], true, "check", false);
		else if (strcmp(recorded, "rollback") == 0)
			half_decide(ids[i], false, "check", false);
		else if (checks[i] + 1 >= max_checks[i])
			half_decide(ids[i], exhaust_commit[i], "exhausted", false);
	}
	return n;
}

/*
 * Forget decided half messages an hour after their decision (their
 * bodies stay in the log while queues refer to them).
 */
void
mq_half_cleanup(void)
{
	MqOwnerScope owner;

	mq_owner_enter(&owner);
	mq_owner_exec("DELETE FROM mq.half WHERE state OPERATOR(pg_catalog.<>) 'pending' "
				  "AND decided_at OPERATOR(pg_catalog.<) "
				  "(pg_catalog.now() OPERATOR(pg_catalog.-) '1 hour'::pg_catalog.interval)",
				  0, NULL, NULL, NULL, false, SPI_OK_DELETE, "forget decided half messages");
	mq_owner_leave(&owner);
}
