/*-------------------------------------------------------------------------
 *
 * timers.c
 *	  Delayed messages.  A message published with a delay is stored once
 *	  in the message log like any other; instead of queue entries it gets
 *	  one timer row per destination queue in mq.timer (a heap table indexed
 *	  by due time).  The per-database worker fires due timers in order,
 *	  appending the queue entries, so consumers never see a message early,
 *	  a delayed message never blocks ready ones, and the cost of a firing
 *	  pass does not depend on how many timers are not yet due.  Timers are
 *	  rows of a transaction: they survive crashes and an aborted publish
 *	  leaves none.
 *
 * The worker sleeps until the next due time; a transaction that arms a
 * timer due earlier sets the worker's latch when it commits.
 *
 * Unlike the hot path this table gets updates and deletes, one per
 * delayed message; that trade is deliberate (see docs/architecture.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "mqutils.h"
#include "acl.h"
#include "args.h"
#include "owner.h"
#include "msglog.h"
#include "queue/queue.h"
#include "timers.h"
#include "worker_shmem.h"

PG_FUNCTION_INFO_V1(mq_cancel);

/* Timers fired per transaction of the worker */
#define MQ_TIMER_BATCH 1000

/* Earliest timer armed by this transaction (0: none) */
static TimestampTz timer_due = 0;
static bool xact_callback_registered = false;

/*
 * At commit, wake the database's worker if a timer armed by the
 * transaction falls due before the worker planned to wake up (the worker
 * sleeps until its next due time); at abort the timers are gone.
 */
static void
timers_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (timer_due != 0)
				mq_worker_wake(timer_due);
			timer_due = 0;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			timer_due = 0;
			break;
		default:
			break;
	}
}

/* Remember that this transaction armed a timer due then */
static void
note_timer(TimestampTz due)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(timers_xact_callback, NULL);
		xact_callback_registered = true;
	}
	if (timer_due == 0 || due < timer_due)
		timer_due = due;
}

void
mq_timers_add(MqQueue *q, int lane, MqEntry *entries, int n)
{
	MqOwnerScope owner;
	Oid			types[8] = {TIMESTAMPTZOID, INT4OID, INT2OID, INT8OID,
	TIMESTAMPTZOID, INT4OID, INT4OID, INT4OID};
	static SPIPlanPtr plan = NULL;

	mq_owner_enter(&owner);
	if (plan == NULL)
	{
		plan = SPI_prepare("INSERT INTO mq.timer (due, queue_id, lane, msg_id, expires_at, "
						   "delivery_count, body_size, group_hash) "
						   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
						   8, types);
		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare timer insert");
	}
	for (int i = 0; i < n; i++)
	{
		Datum		values[8];
		char		nulls[8] = "        ";

		values[0] = TimestampTzGetDatum(entries[i].visible_at);
		values[1] = Int32GetDatum(q->id);
		values[2] = Int16GetDatum((int16) lane);
		values[3] = Int64GetDatum(entries[i].msg_id);
		values[4] = TimestampTzGetDatum(entries[i].expires_at);
		values[5] = Int32GetDatum(entries[i].delivery_count);
		if (entries[i].delivery_count == 0)
			nulls[5] = 'n';
		/* the body size waits with it, for x-max-length-bytes queues only */
		values[6] = Int32GetDatum(entries[i].body_size);
		if (q->max_length_bytes < 0 || entries[i].body_size < 0)
			nulls[6] = 'n';
		/* and the message group's hash, for ordered queues */
		values[7] = Int32GetDatum((int32) entries[i].group_hash);
		if (entries[i].group_hash == 0)
			nulls[7] = 'n';
		if (SPI_execute_plan(plan, values, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not arm a timer");
		note_timer(entries[i].visible_at);
	}
	mq_owner_leave(&owner);
}

TimestampTz
mq_timers_take_due(MqDueGroup **groups, int *ngroups, int *fired)
{
	MqOwnerScope owner;
	MemoryContext callercxt = CurrentMemoryContext;
	int			n;
	int32	   *qids;
	int16	   *lanes;
	MqEntry    *entries;
	TimestampTz next = 0;

	mq_catalog_refresh();
	mq_owner_enter(&owner);
	{
		/*
		 * A parameter, not clock_timestamp(): a volatile bound cannot limit
		 * the index scan, and every pending timer would be read each pass.
		 */
		Oid			types[1] = {TIMESTAMPTZOID};
		Datum		values[1] = {TimestampTzGetDatum(GetCurrentTimestamp())};

		mq_owner_exec("DELETE FROM mq.timer WHERE ctid OPERATOR(pg_catalog.=) ANY "
					  "(SELECT ctid FROM mq.timer WHERE due OPERATOR(pg_catalog.<=) $1 "
					  "ORDER BY due LIMIT 1000 FOR UPDATE SKIP LOCKED) "
					  "RETURNING queue_id, lane, msg_id, due, expires_at, delivery_count, body_size, "
					  "group_hash",
					  1, types, values, NULL, false, SPI_OK_DELETE_RETURNING, "fire timers");
	}
	n = (int) SPI_processed;
	qids = MemoryContextAlloc(callercxt, sizeof(int32) * Max(n, 1));
	lanes = MemoryContextAlloc(callercxt, sizeof(int16) * Max(n, 1));
	entries = MemoryContextAlloc(callercxt, sizeof(MqEntry) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		qids[i] = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		lanes[i] = DatumGetInt16(SPI_getbinval(tup, desc, 2, &isnull));
		entries[i].msg_id = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		entries[i].visible_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull));
		entries[i].expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 5, &isnull));
		entries[i].delivery_count = DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull));
		if (isnull)
			entries[i].delivery_count = 0;
		entries[i].body_size = DatumGetInt32(SPI_getbinval(tup, desc, 7, &isnull));
		if (isnull)
			entries[i].body_size = -1;
		entries[i].group_hash = (uint32) DatumGetInt32(SPI_getbinval(tup, desc, 8, &isnull));
		if (isnull)
			entries[i].group_hash = 0;
	}
	mq_owner_exec("SELECT pg_catalog.min(due) FROM mq.timer", 0, NULL, NULL, NULL, true,
				  SPI_OK_SELECT, "find the next due timer");
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			next = DatumGetTimestampTz(d);
	}
	mq_owner_leave(&owner);

	/* grouped by queue and lane, in due order */
	*groups = MemoryContextAlloc(callercxt, sizeof(MqDueGroup) * Max(n, 1));
	*ngroups = 0;
	for (int i = 0; i < n; i++)
	{
		MqDueGroup *g;

		if (qids[i] == 0)
			continue;
		g = &(*groups)[(*ngroups)++];
		g->queue_id = qids[i];
		g->lane = lanes[i];
		g->entries = MemoryContextAlloc(callercxt, sizeof(MqEntry) * (n - i));
		g->n = 0;
		for (int j = i; j < n; j++)
		{
			if (qids[j] == g->queue_id && lanes[j] == g->lane)
			{
				g->entries[g->n++] = entries[j];
				qids[j] = 0;
			}
		}
	}
	if (n == MQ_TIMER_BATCH)
		next = GetCurrentTimestamp();	/* more are due: come back at once */
	*fired = n;
	return next;
}

int64
mq_timers_count(int32 queue_id)
{
	MqOwnerScope owner;
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(queue_id)};
	int64		count = 0;

	mq_owner_enter(&owner);
	mq_owner_exec("SELECT pg_catalog.count(*) FROM mq.timer WHERE queue_id OPERATOR(pg_catalog.=) $1",
				  1, types, values, NULL, true, SPI_OK_SELECT, "count delayed messages");
	if (SPI_processed == 1)
	{
		bool		isnull;

		count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	mq_owner_leave(&owner);
	return count;
}

/*
 * mq.cancel(msg_id): disarm the timers of a delayed message that is not
 * due yet.  Needs publish or consume on each queue it was headed for.
 */
Datum
mq_cancel(PG_FUNCTION_ARGS)
{
	int64		msg_id;
	MqOwnerScope owner;
	Oid			types[1] = {INT8OID};
	Datum		values[1];
	MemoryContext callercxt = CurrentMemoryContext;
	int			n;
	int32	   *qids;

	MQ_CHECK_ARGS(fcinfo, "msg_id");
	msg_id = PG_GETARG_INT64(0);
	values[0] = Int64GetDatum(msg_id);
	mq_catalog_refresh();
	mq_owner_enter(&owner);
	mq_owner_exec("DELETE FROM mq.timer WHERE msg_id OPERATOR(pg_catalog.=) $1 RETURNING queue_id",
				  1, types, values, NULL, false, SPI_OK_DELETE_RETURNING, "cancel timers");
	n = (int) SPI_processed;
	qids = MemoryContextAlloc(callercxt, sizeof(int32) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		qids[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	}
	mq_owner_leave(&owner);

	for (int i = 0; i < n; i++)
	{
		MqQueue    *q = mq_queue_by_id(qids[i]);

		if (q && !mq_acl_allows(&q->acl, MQ_PRIV_PUBLISH) &&
			!mq_acl_allows(&q->acl, MQ_PRIV_CONSUME))
			mq_check_queue_privilege(q, MQ_PRIV_PUBLISH);
	}
	if (n == 0)
	{
		MqMessage	m;

		if (mq_log_fetch(msg_id, &m))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("message " INT64_FORMAT " is not a pending delayed message", msg_id),
					 errdetail("It is already due, delivered or cancelled, or was not delayed.")));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("message " INT64_FORMAT " does not exist", msg_id)));
	}
	PG_RETURN_INT32(n);
}

/*
 * Armed timers of every queue that has any, in one scan of mq.timer (not
 * one per queue): (*queue_ids)[i] has (*counts)[i], palloc'd in the
 * caller's memory context, in ascending queue id (mq_timers_count_find);
 * returns how many queues
 */
int
mq_timers_count_all(int32 **queue_ids, int64 **counts)
{
	MqOwnerScope owner;
	MemoryContext cxt = CurrentMemoryContext;
	int			n;

	mq_owner_enter(&owner);
	mq_owner_exec("SELECT queue_id, pg_catalog.count(*) FROM mq.timer GROUP BY queue_id ORDER BY queue_id",
				  0, NULL, NULL, NULL, true, SPI_OK_SELECT, "count delayed messages");
	n = (int) SPI_processed;
	*queue_ids = MemoryContextAlloc(cxt, sizeof(int32) * Max(n, 1));
	*counts = MemoryContextAlloc(cxt, sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		(*queue_ids)[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
													  SPI_tuptable->tupdesc, 1, &isnull));
		(*counts)[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
												   SPI_tuptable->tupdesc, 2, &isnull));
	}
	mq_owner_leave(&owner);
	return n;
}

/*
 * The armed timers of queue_id among n counts of mq_timers_count_all; 0 for
 * a queue that has none, or that did not exist when they were counted
 */
int64
mq_timers_count_find(int32 queue_id, const int32 *queue_ids, const int64 *counts, int n)
{
	int			lo = 0;
	int			hi = n - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (queue_ids[mid] == queue_id)
			return counts[mid];
		if (queue_ids[mid] < queue_id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return 0;
}
