/*-------------------------------------------------------------------------
 *
 * maintenance.c
 *	  Queue maintenance shared by the background worker and SQL: expiry
 *	  of leases and of messages at the head of queues, delayed-message
 *	  wakeups, cancelling delayed messages, retiring log segments.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "mqutils.h"
#include "args.h"
#include "owner.h"
#include "maintenance.h"
#include "msglog.h"
#include "publish.h"
#include "queue/queue.h"

PG_FUNCTION_INFO_V1(mq_log_retire);

/*
 * The worker made a message of q ready (a delayed one fell due, a lease ran
 * out): q's channel (mq.queue_notify) is notified, without a payload, when
 * the worker's transaction commits.  PostgreSQL sends one notification per
 * channel per transaction, however often this is called in it; one made in
 * a subtransaction that fails is not sent.  A standby's worker changes no
 * queue and sends nothing.
 */
void
mq_notify_ready(MqQueue *q)
{
	if (q->notify_channel != NULL && !RecoveryInProgress())
		Async_Notify(q->notify_channel, NULL);
}

/*
 * One queue's share of a maintenance pass: expired leases back to ready,
 * expired messages at the head and messages returned over their
 * x-delivery-limit (by a session end or an abort, which cannot publish)
 * dead-lettered, a drop-head queue that returns took over its limit
 * trimmed, lane generations rotated.
 * Returns when the worker should look again: the queue's next delayed
 * redelivery, or with a notification channel its next lease end (0: none).
 */
TimestampTz
mq_maintain_queue(MqQueue *q)
{
	MqDelivery	dl[64];
	int			got;
	TimestampTz due;

	/*
	 * A group without a state holds no lease, and a queue with neither a
	 * state nor anything stored nothing to expire: none is loaded for them
	 */
	if (q->group != NULL)
		return mq_queue_has_state(q) ? mq_maintain_group(q) : 0;
	if (mq_queue_unused(q))
		return 0;
	/* a stream has no consumer state: only retention */
	if (q->type == MQ_QUEUE_STREAM)
	{
		mq_stream_retain(q);
		return 0;
	}
	/* all taken dead (expired) */
	got = mq_queue_take(q, lengthof(dl), 0, MQ_TAKE_EXPIRE, NULL, 0, dl);
	due = mq_queue_next_due();
	if (mq_queue_leases_ran_out())
		mq_notify_ready(q);

	/*
	 * A queue with a notification channel has the worker back when its next
	 * lease ends (else a lease is found ended at the next pass, up to
	 * mq.maintenance_naptime later), but not sooner than 100 ms from now: a
	 * busy queue, whose leases end all the time, costs at most ten passes a
	 * second.
	 */
	if (q->notify_channel != NULL && mq_queue_next_lease_end() != 0)
	{
		TimestampTz lease_end = Max(mq_queue_next_lease_end(),
									GetCurrentTimestamp() + 100 * 1000);

		if (due == 0 || lease_end < due)
			due = lease_end;
	}
	(void) mq_settle_deliveries(q, dl, got, 0, 0);
	(void) mq_overflow_drop_head(q, MQ_TRIM_WORKER);
	mq_queue_rotate(q);
	return due;
}

/*
 * A consumer group's share of a maintenance pass (gview: its view):
 * leases that ran out count as failed deliveries (RocketMQ) and wait for
 * their retry after the group's backoff, which they get from the take;
 * those over max_retries, and those returned over it by a session end or
 * an abort, go to the group's dead-letter queue (the caller made sure it
 * exists).  Nothing of the stream's lanes is the group's to rotate, and
 * its tracked list is compacted as it settles.  Returns the earliest lease
 * end still to come (0: none), when the worker should look again.
 */
TimestampTz
mq_maintain_group(MqQueue *gview)
{
	MqDelivery	dl[64];
	int			got;
	TimestampTz next = 0;

	do
	{
		got = mq_queue_take(gview, lengthof(dl), 0, MQ_TAKE_EXPIRE, NULL, 0, dl);
		(void) mq_settle_deliveries(gview, dl, got, 0, 0);
		CHECK_FOR_INTERRUPTS();
	} while (got == lengthof(dl));
	(void) mq_group_maintenance_due(gview->id, gview->group_id,
									GetCurrentTimestamp(), &next);
	return next;
}

/*
 * The oldest segment q's unsettled entries refer to.  The queue's object
 * lock is only tried, and let go at once: a retirement never waits for a
 * transaction that is deleting a queue (which may itself wait for us), nor
 * holds the lock to the end of the pass, which would make a queue_delete
 * of any queue wait for the whole scan of all of them.  A queue that is
 * being deleted (or was deleted since our catalog was read) counts as
 * referring to every segment: that delete may still roll back, so nothing
 * is retired on this pass, and the next pass sees the outcome.
 */
static int64
queue_min_segno(MqQueue *q, int64 floor_segno)
{
	bool		held;
	int64		segno;

	if (!mq_queue_inspect_begin(q, &held))
		return 0;
	segno = mq_msgid_segno(mq_queue_min_msg_id(q, mq_msgid_segno_last(floor_segno)));
	mq_queue_inspect_end(q, held);
	return segno;
}

/*
 * The oldest segment any queue's unsettled entries refer to (PG_INT64_MAX:
 * none).  Each queue is looked at once: its answer may change from one
 * look to the next (0 while it is busy or being deleted), and taking the
 * minimum of one look and returning another (as Min(m, queue_min_segno(q))
 * does, evaluating its argument twice) once let a busy queue's 0 be
 * compared and a later, higher answer be kept, past another queue's
 * oldest segment: that segment was retired under its messages.  So: never
 * pass this, or queue_min_segno, to Min.
 *
 * floor_segno is the oldest segment the caller could retire: once a queue
 * refers to it (or to one older), nothing can be retired, and the answer
 * (some segment <= floor_segno) is returned without reading further
 * backlogs or queues.  A queue stops its own look there too
 * (mq_queue_min_msg_id), so a classic queue whose backlog starts in the
 * oldest segment costs one row per pass, not its whole backlog.
 */
static int64
queues_min_segno(int64 floor_segno)
{
	int64		min = PG_INT64_MAX;
	ListCell   *lc;

	foreach(lc, mq_queue_list())
	{
		int64		segno = queue_min_segno(lfirst(lc), floor_segno);

		if (segno < min)
			min = segno;
		if (min <= floor_segno)
			break;
	}
	return min;
}

/*
 * The segment of the oldest message that an undecided half message or a
 * timer still refers to (PG_INT64_MAX: none)
 */
static int64
timers_min_segno(void)
{
	MqOwnerScope owner;
	int64		segno = PG_INT64_MAX;

	mq_owner_enter(&owner);
	mq_owner_exec("SELECT least((SELECT pg_catalog.min(half_id) FROM mq.half "
				  "WHERE state OPERATOR(pg_catalog.=) 'pending'), "
				  "(SELECT pg_catalog.min(msg_id) FROM mq.timer))",
				  0, NULL, NULL, NULL, true, SPI_OK_SELECT,
				  "find the oldest message still referenced");
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			segno = mq_msgid_segno(DatumGetInt64(d));
	}
	mq_owner_leave(&owner);
	return segno;
}

/*
 * Retire segments: every segment older than the newest of its chain that
 * no unsettled queue entry and no undecided half message refers to.  The
 * segment is locked exclusively first (skipped if busy), so no publisher
 * is still writing entries that refer to it.
 */
int
mq_retire_segments(int max_segments)
{
	MqOwnerScope owner;
	int			n;
	int64	   *segnos;
	Oid		   *relids;
	int64		newest[2] = {0, 0};
	int64		min_ref = PG_INT64_MAX;
	int			retired = 0;
	MemoryContext callercxt = CurrentMemoryContext;

	mq_catalog_refresh();
	mq_owner_enter(&owner);
	mq_owner_exec("SELECT segno, relid, durable FROM mq.cat_segment ORDER BY segno",
				  0, NULL, NULL, NULL, true, SPI_OK_SELECT, "list message log segments");
	n = (int) SPI_processed;
	/* the results must outlive SPI_finish */
	segnos = MemoryContextAlloc(callercxt, sizeof(int64) * Max(n, 1));
	relids = MemoryContextAlloc(callercxt, sizeof(Oid) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool		isnull;
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		durable;

		segnos[i] = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		relids[i] = DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
		durable = DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull));
		newest[durable ? 0 : 1] = Max(newest[durable ? 0 : 1], segnos[i]);
	}
	mq_owner_leave(&owner);
	min_ref = timers_min_segno();

	/*
	 * Candidates: not the newest of either chain, lockable right now.  Lock
	 * them all first: once locked, nobody writes entries pointing into
	 * them, so what the queues refer to can be computed once.
	 *
	 * A segment an entry refers to already is no candidate: a first look
	 * at the queues, without the locks, skips it.  It is only a filter (a
	 * segment it lets through is checked again under the lock), but it
	 * keeps the exclusive lock off the segments that retained messages
	 * live in: consumers reading them would wait for it while the queues
	 * are scanned, seconds with a large backlog (bench/groups.py: four
	 * group consumers waited for it in 14 of 25 samples).
	 */
	{
		bool	   *locked = palloc0(sizeof(bool) * Max(n, 1));
		int			nlocked = 0;
		int64		referenced = min_ref;
		int64		oldest = -1;	/* the oldest candidate */
		int64		oldest_locked = -1;

		for (int i = 0; i < n && oldest < 0; i++)
			if (segnos[i] != newest[0] && segnos[i] != newest[1] && segnos[i] < min_ref)
				oldest = segnos[i];
		if (oldest >= 0)
		{
			/* once: see there */
			int64		queues = queues_min_segno(oldest);

			referenced = Min(referenced, queues);
		}

		for (int i = 0; i < n && nlocked < max_segments; i++)
		{
			if (segnos[i] == newest[0] || segnos[i] == newest[1] || segnos[i] >= referenced)
				continue;
			if (ConditionalLockRelationOid(relids[i], AccessExclusiveLock))
			{
				locked[i] = true;
				if (nlocked++ == 0)
					oldest_locked = segnos[i];
			}
		}
		/*
		 * Under the locks, look again, with a fresh catalog and snapshot:
		 * a queue declared, or a delayed or half message published, since
		 * the first look may refer to a locked segment, written and
		 * committed before we got its lock.
		 */
		if (nlocked > 0)
		{
			int64		timers;
			int64		queues;

			PushActiveSnapshot(GetLatestSnapshot());
			mq_catalog_refresh();
			timers = timers_min_segno();
			queues = queues_min_segno(oldest_locked);
			min_ref = Min(min_ref, Min(timers, queues));
			PopActiveSnapshot();
		}

		for (int i = 0; i < n; i++)
		{
			Oid			types[1] = {INT8OID};
			Datum		values[1];

			if (!locked[i] || segnos[i] >= min_ref)
				continue;
			values[0] = Int64GetDatum(segnos[i]);
			mq_owner_enter(&owner);
			mq_owner_exec("SELECT mq._segment_drop($1)", 1, types, values, NULL, false,
						  SPI_OK_SELECT, "drop a message log segment");
			mq_owner_leave(&owner);
			retired++;
		}
	}
	return retired;
}

/* mq.log_retire(max_segments): retire what can be retired now */
Datum
mq_log_retire(PG_FUNCTION_ARGS)
{
	int			max_segments = mq_count_arg(fcinfo, 0, "max_segments", PG_INT32_MAX);

	if (!superuser() && !has_privs_of_role(GetUserId(), mq_extension_owner()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be the owner of extension queue_ext to retire message log segments")));
	PG_RETURN_INT32(mq_retire_segments(max_segments));
}
