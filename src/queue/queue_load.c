/*-------------------------------------------------------------------------
 *
 * queue_load.c
 *	  Reading a queue's lanes across their generations, and rebuilding the
 *	  queue's state from its logs after a restart.
 *
 * A lane is read with a cursor over its entry logs: the generations are
 * separate tables, and a reader moves on to the next one only once the
 * lane writes there (see MqLaneState), so no entry is ever passed over.
 *
 * Shared memory does not survive a restart; the logs do.  Loading a
 * queue replays its settlement logs: the highest FLOOR per lane, then the
 * settlements above it, which are tracked as SETTLED (by position: the
 * records do not name the message) so that the scan passes over them;
 * then the delivery records (DELIVERED, MARK), so that what may have been
 * delivered before comes back redelivered, with its delivery count, and
 * in a consumer group not before its retry is due (RETRY_AT).  The
 * cost follows the live backlog, not the history: only what lies above
 * the floors of the live generations is read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "mqutils.h"
#include "queue/queue_int.h"

/* ---------- reading lanes across generations ---------- */

/* Start an operation's set of open lane relations */
void
mqq_lane_rels_init(LaneRels *lr)
{
	lr->n = 0;
}

/* Entry log of (lane, gen) with a slot, or NULL rel if it is gone */
Relation
mqq_lane_rel(LaneRels *lr, MqQueue *q, int lane, int gen, TupleTableSlot **slot)
{
	Oid			relid;
	Relation	rel;

	for (int i = 0; i < lr->n; i++)
		if (lr->e[i].lane == lane && lr->e[i].gen == gen)
		{
			*slot = lr->e[i].slot;
			return lr->e[i].rel;
		}
	relid = mqq_lane_relid(q->id, lane, gen, false);
	rel = OidIsValid(relid) ? try_table_open(relid, AccessShareLock) : NULL;
	if (rel == NULL)
	{
		*slot = NULL;
		return NULL;
	}
	if (lr->n == lengthof(lr->e))
	{
		/* evict the oldest */
		mqlog_read_cache_release(&lr->e[0].cache);
		ExecDropSingleTupleTableSlot(lr->e[0].slot);
		table_close(lr->e[0].rel, AccessShareLock);
		memmove(&lr->e[0], &lr->e[1], sizeof(lr->e[0]) * (lr->n - 1));
		lr->n--;
	}
	lr->e[lr->n].lane = lane;
	lr->e[lr->n].gen = gen;
	lr->e[lr->n].rel = rel;
	lr->e[lr->n].slot = table_slot_create(rel, NULL);
	mqlog_read_cache_init(&lr->e[lr->n].cache);
	*slot = lr->e[lr->n].slot;
	lr->n++;
	return rel;
}

/* Drop the slots and close the relations of lr */
void
mqq_lane_rels_close(LaneRels *lr)
{
	for (int i = 0; i < lr->n; i++)
	{
		mqlog_read_cache_release(&lr->e[i].cache);
		ExecDropSingleTupleTableSlot(lr->e[i].slot);
		table_close(lr->e[i].rel, AccessShareLock);
	}
	lr->n = 0;
}

/* The read cache of rel, a relation open in lr */
MqlogReadCache *
mqq_lane_rel_cache(LaneRels *lr, Relation rel)
{
	for (int i = 0; i < lr->n; i++)
		if (lr->e[i].rel == rel)
			return &lr->e[i].cache;
	elog(ERROR, "relation \"%s\" is not open in this lane set", RelationGetRelationName(rel));
	return NULL;				/* keep compiler quiet */
}

/*
 * The entry at or after *qpos in its lane, following generations up to
 * write_gen: MQLOG_READ_ROW with *qpos set, *state classified and (for
 * committed or own rows) *slot holding the row; or MQLOG_READ_END with
 * *qpos at the next position to try.  A generation is left only once the
 * lane writes to a later one, so nothing is ever skipped.
 */
MqlogReadResult
mqq_lane_read_next(LaneRels *lr, MqQueue *q, MqQueueShared *qs, uint64 *qpos,
				   MqlogRowState *state, TupleTableSlot **slot)
{
	int			lane = mq_qpos_lane(*qpos);

	for (;;)
	{
		int			gen = mq_qpos_gen(*qpos);
		Relation	rel = mqq_lane_rel(lr, q, lane, gen, slot);
		ItemPointerData pos;

		if (rel != NULL)
		{
			mq_qpos_tid(*qpos, &pos);
			if (mqlog_read_next_cached(rel, &pos, state, *slot,
									   mqq_lane_rel_cache(lr, rel)) == MQLOG_READ_ROW)
			{
				*qpos = mq_qpos_make(lane, gen, &pos);
				return MQLOG_READ_ROW;
			}
			*qpos = mq_qpos_make(lane, gen, &pos);
		}
		/* a consumer group follows its stream's write generation */
		if (gen >= (qs->stream ? qs->stream->lanes[lane].write_gen :
					qs->lanes[lane].write_gen))
			return MQLOG_READ_END;
		/* this generation is closed (or gone): on to the next */
		*qpos = mq_qpos_gen_start(lane, gen + 1);
	}
}

/* ---------- replay after a restart ---------- */

/*
 * The entry tracked ahead of the scan at qpos, a position at or after its
 * lane's scan position (queue_int.h), else NULL: one settled before a
 * restart (SETTLED, msg_id 0: settlement records do not name the message)
 * or one taken by id (mqq_track_ahead).
 */
MqTracked *
mqq_tracked_ahead(MqQueueShared *qs, uint64 qpos)
{
	dlist_iter	it;

	if (qs->nahead == 0 || qpos < qs->lanes[mq_qpos_lane(qpos)].ahead_low)
		return NULL;
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->qpos == qpos)
			return t;
	}
	return NULL;
}

/* Is the entry at qpos (at or after the scan position) settled already? */
bool
mqq_settled_ahead(MqQueueShared *qs, uint64 qpos)
{
	MqTracked  *t = mqq_tracked_ahead(qs, qpos);

	return t != NULL && t->state == MQ_T_SETTLED;
}

/*
 * t, just tracked at a position the scan has not reached, is ahead of it
 * (a load tracks what was settled before the lane's scan position is
 * known: it is then at the floor, below every such entry)
 */
void
mqq_track_ahead(MqQueueShared *qs, MqTracked *t)
{
	MqLaneState *ls = &qs->lanes[mq_qpos_lane(t->qpos)];

	qs->nahead++;
	ls->ahead_low = Min(ls->ahead_low, t->qpos);
	/* it may be an entry that mq.queues took for its lane's first ready */
	qs->oldest_known = false;
}

/*
 * The scan of lane has just passed an entry tracked ahead of it (nahead
 * already counts it out): find where the next one is
 */
void
mqq_passed_ahead(MqQueueShared *qs, int lane)
{
	MqLaneState *ls = &qs->lanes[lane];
	dlist_iter	it;

	ls->ahead_low = PG_UINT64_MAX;
	if (qs->nahead == 0)
	{
		/* none left in any lane: no lane need look for one */
		for (int l = 0; l < qs->nlanes; l++)
			qs->lanes[l].ahead_low = PG_UINT64_MAX;
		return;
	}
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (mq_qpos_lane(t->qpos) == lane && t->qpos >= ls->scan_pos)
			ls->ahead_low = Min(ls->ahead_low, t->qpos);
	}
}

static int
tracked_qpos_cmp(const void *a, const void *b)
{
	uint64		pa = (*(MqTracked *const *) a)->qpos;
	uint64		pb = (*(MqTracked *const *) b)->qpos;

	return (pa > pb) - (pa < pb);
}

void
mqq_ahead_cursor_init(MqAheadCursor *c, MqQueueShared *qs, int lane)
{
	dlist_iter	it;

	c->ts = NULL;
	c->n = c->i = 0;
	if (qs->nahead == 0 || qs->lanes[lane].ahead_low == PG_UINT64_MAX)
		return;
	c->ts = palloc(sizeof(MqTracked *) * qs->ntracked);
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (mq_qpos_lane(t->qpos) == lane && mqq_is_ahead(qs, t))
			c->ts[c->n++] = t;
	}
	if (c->n > 1)
		qsort(c->ts, c->n, sizeof(MqTracked *), tracked_qpos_cmp);
}

MqTracked *
mqq_ahead_at(MqAheadCursor *c, uint64 qpos)
{
	while (c->i < c->n && c->ts[c->i]->qpos < qpos)
		c->i++;
	return c->i < c->n && c->ts[c->i]->qpos == qpos ? c->ts[c->i] : NULL;
}

void
mqq_ahead_cursor_end(MqAheadCursor *c)
{
	if (c->ts != NULL)
		pfree(c->ts);
	c->ts = NULL;
}

/*
 * Track the entry at qpos as settled before the restart; false if it
 * already was.
 */
static bool
track_settled(MqQueueShared *qs, uint64 qpos)
{
	MqTracked  *t;

	if (mqq_tracked_ahead(qs, qpos) != NULL)
		return false;
	t = mqq_track_new(qs, qpos);
	if (t == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("out of tracked message slots while loading queue state"),
				 errhint("Increase mq.max_in_flight and restart the server.")));
	t->state = MQ_T_SETTLED;
	mqq_track_ahead(qs, t);
	return true;
}

/* Deliveries recorded before a restart, per entry position */
typedef struct ReplayedDelivery
{
	uint64		qpos;
	int32		count;			/* DELIVERED records */
	int32		free_returns;	/* RETURNED records */
	TimestampTz retry_at;		/* latest RETRY_AT record's due time, 0: none */
} ReplayedDelivery;

/*
 * Track the entry at qpos (the lane's scan position) again as it stood
 * before the restart: delivered count times (at least once: below a MARK),
 * so it comes back redelivered with its delivery count.  Settled and
 * aborted entries are passed over.  False when no tracking slot is free:
 * the rest is then scanned as new.
 */
static bool
replay_delivered(MqQueueShared *qs, MqLaneState *ls, uint64 qpos,
				 MqlogRowState st, TupleTableSlot *slot, int32 count,
				 int32 free_returns, TimestampTz retry_at)
{
	MqTracked  *t;

	if (mqq_settled_ahead(qs, qpos))
	{
		qs->nahead--;
		ls->scan_pos = mqq_qpos_next(qpos);
		mqq_passed_ahead(qs, mq_qpos_lane(qpos));
		return true;
	}
	else if (st != MQLOG_ROW_ABORTED)
	{
		t = mqq_track_new(qs, qpos);
		if (t == NULL)
			return false;
		mqq_track_examined(t, st, slot);
		if (t->state == MQ_T_READY && count > 0)
		{
			t->delivery_count += count;
			t->free_returns = Min(free_returns, count);
			t->redelivered = true;
			/* a consumer group's retry is not due before its time */
			t->until = retry_at;
		}
	}
	ls->scan_pos = mqq_qpos_next(qpos);
	return true;
}

/* qsort order of replayed deliveries: highest lane first, then position */
static int
replayed_order_cmp(const void *a, const void *b)
{
	uint64		pa = (*(MqTracked *const *) a)->qpos;
	uint64		pb = (*(MqTracked *const *) b)->qpos;
	int			la = mq_qpos_lane(pa);
	int			lb = mq_qpos_lane(pb);

	if (la != lb)
		return la > lb ? -1 : 1;
	return (pa > pb) - (pa < pb);
}

/*
 * On a quorum queue, what was delivered before the restart comes back as
 * returns (its consumers are gone, as rabbit_fifo returns the messages of
 * a consumer that is down).  The order of those deliveries across lanes is
 * not recorded: they return in the order they would have been delivered,
 * highest priority first, publish order within a lane.
 */
static void
replay_returns(MqQueueShared *qs)
{
	MqTracked **ts;
	int			n = 0;
	dlist_iter	it;

	if (qs->ntracked == 0)
		return;
	ts = palloc(sizeof(MqTracked *) * qs->ntracked);
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_READY && t->redelivered)
			ts[n++] = t;
	}
	if (n > 1)
		qsort(ts, n, sizeof(MqTracked *), replayed_order_cmp);
	for (int i = 0; i < n; i++)
		mqq_tracked_returned(qs, ts[i]);
	pfree(ts);
}

/* The replay's entry for qpos in delivered, made if new */
static ReplayedDelivery *
replayed_entry(HTAB *delivered, uint64 qpos)
{
	bool		found;
	ReplayedDelivery *d = hash_search(delivered, &qpos, HASH_ENTER, &found);

	if (!found)
	{
		d->count = d->free_returns = 0;
		d->retry_at = 0;
	}
	return d;
}

/*
 * Replay one record above the floors (the second pass of mqq_queue_load):
 * kind at pos, read from the settlement log's slot s (for its argument).
 * A run's records come here one by one.
 */
static void
replay_record(MqQueueShared *qs, HTAB *delivered, TupleTableSlot *s,
			  int16 kind, uint64 pos, uint64 floor, uint64 *mark)
{
	if (pos < floor)
		return;
	if (kind == MQ_SETTLE_DELIVERED)
	{
		replayed_entry(delivered, pos)->count++;
		*mark = Max(*mark, pos + 1);
	}
	else if (kind == MQ_SETTLE_RETURNED)
		replayed_entry(delivered, pos)->free_returns++;
	else if (kind == MQ_SETTLE_RETRY_AT && s->tts_tupleDescriptor->natts >= 2)
	{
		ReplayedDelivery *d = replayed_entry(delivered, pos);
		bool		isnull;
		Datum		at = slot_getattr(s, 2, &isnull);

		/* each retry is due after the one before it */
		if (!isnull)
			d->retry_at = Max(d->retry_at, DatumGetTimestampTz(at));
	}
	else if (mq_settle_kind_settles(kind))
		track_settled(qs, pos);
}

/*
 * Rebuild a queue's state after a restart (or its first use): find each
 * lane's generations, replay their settlement logs (the highest FLOOR,
 * then the settlements above it), take up again what may have been
 * delivered (DELIVERED and MARK records) and count the backlog above the
 * floor.  Called with qs->lock held exclusively.
 */
void
mqq_queue_load(MqQueue *q, MqQueueShared *qs)
{
	LaneRels	lr;
	bool		counted = mqq_counts_deliveries(q);
	HTAB	   *delivered;
	HASHCTL		ctl;

	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(ReplayedDelivery);
	ctl.hcxt = CurrentMemoryContext;
	delivered = hash_create("queue_ext replayed deliveries", 64, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	qs->nlanes = q->nlanes;
	qs->lane0 = q->lanes[0];
	qs->delivery_limit = q->delivery_limit;
	qs->drop_head_limit = (q->max_length >= 0 || q->max_length_bytes >= 0) &&
		!q->overflow_reject;
	qs->backlog = 0;
	qs->backlog_bytes = 0;
	qs->unacked = 0;
	qs->settled_since_floor = 0;
	qs->nahead = 0;
	qs->last_delivery = 0;
	qs->returns_first = q->type == MQ_QUEUE_QUORUM;
	qs->nretry_delays = 0;
	if (q->group != NULL)
	{
		qs->nretry_delays = q->group->nretry_delays;
		memcpy(qs->retry_delays_us, q->group->retry_delays_us,
			   sizeof(int64) * q->group->nretry_delays);
	}
	qs->return_seq = 0;
	qs->loaded_in_recovery = RecoveryInProgress();
	/* taken first: whatever is replayed during the load triggers another */
	qs->loaded_lsn = qs->loaded_in_recovery ? GetXLogReplayRecPtr(NULL) : InvalidXLogRecPtr;
	while (!dlist_is_empty(&qs->tracked))
		mqq_tracked_free(qs, dlist_container(MqTracked, node, dlist_head_node(&qs->tracked)));
	qs->oldest_known = false;

	mqq_lane_rels_init(&lr);
	for (int lane = 0; lane < q->nlanes; lane++)
	{
		MqLaneState *ls = &qs->lanes[lane];
		uint64		floor = 0;
		uint64		mark = 0;
		bool		redeliver = true;
		bool		first = true;
		int			gen;
		uint64		qpos;
		MqlogRowState state;
		TupleTableSlot *slot;

		/* generations present: low_gen .. write_gen */
		if (!mqq_lane_gens(q->id, lane, &ls->low_gen, &ls->write_gen))
		{
			/*
			 * Someone dropped the lane's tables: treat the lane as empty, so
			 * the queue can still be inspected and deleted (publishing to it
			 * fails with a clear error).
			 */
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("entry log of queue \"%s\" lane %d is missing", q->name, lane),
					 errhint("Delete and declare the queue again.")));
			ls->low_gen = ls->write_gen = 0;
		}

		/*
		 * A stream has no consumer state: nothing to replay, no backlog to
		 * count (its readers go by offset, queue_stream.c).
		 */
		ls->scan_offset = -1;
		ls->dead_lettered = 0;
		ls->ahead_low = PG_UINT64_MAX;
		if (q->type == MQ_QUEUE_STREAM && q->group == NULL)
		{
			ls->scan_pos = mq_qpos_gen_start(lane, ls->low_gen);
			ls->floor_written = 0;
			ls->mark = 0;
			continue;
		}

		/* replay the settlement logs: floors first, then what lies above */
		for (int pass = 0; pass < 2; pass++)
		{
			for (gen = ls->low_gen; gen <= ls->write_gen; gen++)
			{
				Oid			relid = mqq_settle_relid(q, lane, gen);
				Relation	rel;
				TableScanDesc scan;
				TupleTableSlot *s;

				if (!OidIsValid(relid))
					continue;
				/* dropped by retention since it was looked up: nothing left */
				rel = try_table_open(relid, AccessShareLock);
				if (rel == NULL)
					continue;
				s = table_slot_create(rel, NULL);
				scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
				while (table_scan_getnextslot(scan, ForwardScanDirection, s))
				{
					bool		isnull;
					int64		rec = DatumGetInt64(slot_getattr(s, 1, &isnull));
					int16		kind = mq_settle_kind(rec);
					uint64		pos = mq_settle_qpos(rec, lane);
					int64		nrun = 1;

					if (pass == 0 && kind == MQ_SETTLE_FLOOR)
						floor = Max(floor, pos);
					else if (pass == 0 && kind == MQ_SETTLE_DEAD)
						ls->dead_lettered++;
					else if (pass == 0 && kind == MQ_SETTLE_MARK)
						mark = Max(mark, pos);
					if (pass == 0)
						continue;

					/* a run stands for nrun single records (queue.h) */
					if ((kind == MQ_SETTLE_DELIVERED_RUN || kind == MQ_SETTLE_ACK_RUN) &&
						s->tts_tupleDescriptor->natts >= 2)
					{
						Datum		n = slot_getattr(s, 2, &isnull);

						nrun = isnull ? 0 : DatumGetInt64(n);
						if (nrun < 1 || nrun > MQLOG_MAX_ROWS_PER_PAGE)
							ereport(ERROR,
									(errcode(ERRCODE_DATA_CORRUPTED),
									 errmsg("settlement log of queue \"%s\" lane %d holds a run of %lld entries",
											q->name, lane, (long long) nrun),
									 errhint("Delete and declare the queue again.")));
						kind = kind == MQ_SETTLE_ACK_RUN ? MQ_SETTLE_ACK : MQ_SETTLE_DELIVERED;
					}
					for (int64 r = 0; r < nrun; r++, pos++)
						replay_record(qs, delivered, s, kind, pos, floor, &mark);
				}
				table_endscan(scan);
				ExecDropSingleTupleTableSlot(s);
				table_close(rel, AccessShareLock);
			}
		}

		ls->scan_pos = Max(floor, mq_qpos_gen_start(lane, ls->low_gen));
		ls->floor_written = floor;
		ls->mark = mark;

		/*
		 * The backlog (and its body bytes, which the entries of queues with
		 * x-max-length-bytes record): committed entries above the floor not
		 * settled.  Those that may have been delivered before (below the
		 * mark) are tracked again at once, redelivered, with their delivery
		 * counts.
		 */
		qpos = ls->scan_pos;
		while (mqq_lane_read_next(&lr, q, qs, &qpos, &state, &slot) == MQLOG_READ_ROW)
		{
			/*
			 * A consumer group's progress is in offsets (its lag is the
			 * partition's end minus them), not in a backlog count: it reads
			 * only what may have been delivered before.
			 */
			if (q->group != NULL)
			{
				if (first)
					ls->scan_offset = mqq_entry_offset(slot, state);
				first = false;
				if (!redeliver || qpos >= mark)
					break;
			}
			if (state == MQLOG_ROW_COMMITTED && !mqq_settled_ahead(qs, qpos))
			{
				qs->backlog++;
				qs->backlog_bytes += mqq_entry_body_size(slot);
			}
			if (redeliver && qpos < mark)
			{
				ReplayedDelivery *d = hash_search(delivered, &qpos, HASH_FIND, NULL);
				int32		count = d ? d->count : (counted ? 0 : 1);

				redeliver = replay_delivered(qs, ls, qpos, state, slot, count,
											 d ? d->free_returns : 0,
											 d ? d->retry_at : 0);
			}
			qpos = mqq_qpos_next(qpos);
			CHECK_FOR_INTERRUPTS();
		}
	}
	mqq_lane_rels_close(&lr);
	hash_destroy(delivered);
	if (qs->returns_first)
		replay_returns(qs);
	qs->loaded = true;
}

/*
 * Must q's shared state be (re)built from the logs?  Once loaded, it is
 * kept up to date by the backends that publish and settle; but on a hot
 * standby nothing is, since WAL replay knows nothing of it: state read
 * there is rebuilt whenever WAL has been replayed since it was loaded, and
 * once more after promotion, so that a promoted standby serves exactly
 * what the primary had settled.  (The lane check catches a queue id reused
 * after DROP EXTENSION.)
 */
static inline bool
queue_needs_load(MqQueue *q, MqQueueShared *qs)
{
	if (qs->loaded && qs->loaded_in_recovery &&
		(!RecoveryInProgress() || GetXLogReplayRecPtr(NULL) != qs->loaded_lsn))
		return true;
	return !qs->loaded || qs->nlanes != q->nlanes || qs->lane0 != q->lanes[0];
}

/*
 * Does mq.cat_queue have queue id's row now (the latest snapshot, not the
 * statement's)?  A queue whose lane tables are gone but whose row is there
 * was damaged by hand, not deleted: it loads with empty lanes (the WARNING
 * of mqq_queue_load), so that it can still be inspected and deleted.
 */
static bool
queue_row_exists(int32 queue_id)
{
	Relation	rel = table_open(mq_internal_relid("cat_queue"), AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(queue_id));
	scan = systable_beginscan(rel, InvalidOid, false, GetLatestSnapshot(), 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Was q, which has no shared state, deleted by a transaction committed
 * since our catalog was read?  Its lane tables and its catalog row are
 * gone (on a standby, never: recovery replays the delete).  The caller
 * holds q's lock, so no delete of it is under way.
 */
static bool
queue_rows_gone(MqQueue *q)
{
	int			low,
				high;

	return !RecoveryInProgress() &&
		!mqq_lane_gens(q->id, 0, &low, &high) &&
		!queue_row_exists(q->id);
}

/*
 * The queue's object lock (its tag: mq_queue_lock_tag below), the
 * first lock of a queue in the lock order of queue_int.h: taken in
 * AccessShareLock before anything of the queue's state or tables, held to
 * the end of the transaction; mq.queue_delete takes it in
 * AccessExclusiveLock before it touches anything of the queue, so it waits
 * for every transaction that did, holding none of the queue's lane tables
 * itself, and nobody waits for a lane table it has dropped while holding a
 * queue lock (an LWLock, invisible to the deadlock detector).  A consumer
 * group's view takes its stream's.
 *
 * With mq_lock_nowait (the maintenance worker) it is only tried: the
 * worker never waits for a user's DDL while holding locks of its own, so it
 * is in no lock cycle with one; a busy queue is skipped (55P03) and
 * maintained on the next pass.
 *
 * Returns whether the queue may have been deleted while our catalog was
 * read: we waited for the lock, or we are the worker (whose pass reads the
 * catalog long before a step).
 */
static void mq_queue_lock_tag(MqQueue *q, LOCKTAG *tag);

static bool
mqq_queue_object_lock(MqQueue *q)
{
	LOCKTAG		tag;

	mq_queue_lock_tag(q, &tag);
	if (LockAcquire(&tag, AccessShareLock, false, true) != LOCKACQUIRE_NOT_AVAIL)
	{
		AcceptInvalidationMessages();	/* for the caller's check */
		return mq_lock_nowait;
	}
	if (mq_lock_nowait)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("queue \"%s\" is locked by another transaction", q->name)));
	(void) LockAcquire(&tag, AccessShareLock, false, false);
	AcceptInvalidationMessages();
	return true;
}

/*
 * The tag of q's lock (the first of the lock order, mqq_queue_object_lock
 * above): the relation lock of its anchor mq_storage.a<id>, a storage-less
 * relation declared with the queue, so that the weak modes every consumer
 * and publisher takes go through PostgreSQL's per-backend fast path rather
 * than the shared lock table (an object lock never does; it was ~1,800
 * instructions of a publish, lock and release); the object lock (classid
 * mq.cat_queue, objid the queue id) for a queue declared before anchors.
 * mq.queue_delete takes both, the object lock first (views try that one,
 * mq_queue_inspect_begin).
 */
static void
mq_queue_lock_tag(MqQueue *q, LOCKTAG *tag)
{
	if (OidIsValid(q->anchor))
		SET_LOCKTAG_RELATION(*tag, MyDatabaseId, q->anchor);
	else
		SET_LOCKTAG_OBJECT(*tag, MyDatabaseId, mq_internal_relid("cat_queue"), q->id, 0);
}

/*
 * Inspection of q by a view that lists every queue (mq.queues, mq.metrics,
 * mq.consumer_groups, mq.stream_partitions): q's object lock in
 * AccessShareLock, only tried, never waited for.  False, holding nothing
 * more, when q is going away: a transaction deleting it holds its lock
 * (the view leaves q out, whether that delete commits or not), or a delete
 * committed since our catalog was read (mqq_queue_lock's check, made here
 * so that it does not fail the view).  True otherwise: q's state may be
 * read until mq_queue_inspect_end.
 *
 * A view waiting for a delete would wait for a transaction that may itself
 * wait for us, and so would a delete waiting for a view's lock held to the
 * end of the transaction (two transactions that each read mq.queues, then
 * delete a queue each, deadlocked): the lock is released by
 * mq_queue_inspect_end, unless this transaction held it before (*held).
 */
bool
mq_queue_inspect_begin(MqQueue *q, bool *held)
{
	Oid			classid = mq_internal_relid("cat_queue");
	LOCKTAG		tag;

	Assert(q->group == NULL);
	mq_queue_lock_tag(q, &tag);
	*held = LockHeldByMe(&tag, AccessShareLock);
	if (!ConditionalLockDatabaseObject(classid, q->id, 0, AccessShareLock))
		return false;
	AcceptInvalidationMessages();

	/*
	 * A queue recorded as found unused was not deleted: a delete removes the
	 * record before it lets go of the object lock we now hold (at its
	 * commit, mq_queue_state_drop), and nothing records a queue whose
	 * tables are gone (KnownEmpty, queue_shmem.c).  That spares the scan of
	 * pg_class for each never-used queue on every call.
	 */
	if (mqq_queue_shared(mqq_key(q), false) == NULL && !mqq_known_empty(q) &&
		queue_rows_gone(q))
	{
		UnlockDatabaseObject(classid, q->id, 0, AccessShareLock);
		return false;
	}
	return true;
}

/*
 * End the inspection of q begun by mq_queue_inspect_begin (which returned
 * true): every hold of q's object lock taken since is released, unless the
 * transaction held it before.  Call it holding none of q's LWLocks.
 */
void
mq_queue_inspect_end(MqQueue *q, bool held)
{
	LOCKTAG		tags[2];

	if (held)
		return;
	SET_LOCKTAG_OBJECT(tags[0], MyDatabaseId, mq_internal_relid("cat_queue"), q->id, 0);
	mq_queue_lock_tag(q, &tags[1]);
	for (int i = 0; i < (OidIsValid(q->anchor) ? 2 : 1); i++)
	{
		/* LockRelease is false (and warns) for a hold of another owner: stop */
		while (LockHeldByMe(&tags[i], AccessShareLock) &&
			   LockRelease(&tags[i], AccessShareLock, false))
			;
	}
}

/*
 * Take q's turn: its lock in ExclusiveLock, which its publishers,
 * drop-head trimming and due timers hold to their commit (publish.c), so
 * that no other publisher's count is in flight.  Waits for it, or only
 * tries (false when taken).
 */
bool
mq_queue_turn_lock(MqQueue *q, bool wait)
{
	LOCKTAG		tag;

	mq_queue_lock_tag(q, &tag);
	if (LockAcquire(&tag, ExclusiveLock, false, !wait) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	AcceptInvalidationMessages();
	return true;
}

void
mq_queue_turn_unlock(MqQueue *q)
{
	LOCKTAG		tag;

	mq_queue_lock_tag(q, &tag);
	LockRelease(&tag, ExclusiveLock, false);
}

/*
 * mq.queue_delete's second lock of q, after its object lock: the anchor's,
 * in AccessExclusiveLock, so that it waits for every transaction that
 * touched q (mq_queue_lock_tag)
 */
void
mq_queue_delete_lock(MqQueue *q)
{
	if (OidIsValid(q->anchor))
		LockRelationOid(q->anchor, AccessExclusiveLock);
}

/*
 * Whether q, a classic or quorum queue or a stream found in this backend's
 * catalog, was deleted by a transaction that committed since: q's lock is
 * taken (AccessShareLock, which a publish to q takes anyway, so that no
 * delete of it can be under way once it is held) and the check is
 * mqq_queue_lock's.  A publish routes past such a queue, as RabbitMQ's
 * routing does past a queue deleted meanwhile, rather than fail on it.
 */
bool
mq_queue_deleted(MqQueue *q)
{
	if (q->group != NULL || RecoveryInProgress())
		return false;
	(void) mqq_queue_object_lock(q);
	return mqq_queue_shared(mqq_key(q), false) == NULL && queue_rows_gone(q);
}

/* Shared state of q, loaded; returns with qs->lock held in mode */
MqQueueShared *
mqq_queue_lock(MqQueue *q, LWLockMode mode)
{
	MqQueueShared *qs;
	MqQueueShared *stream = NULL;
	MqQueueKey	key = mqq_key(q);
	bool		recheck;

	/*
	 * A consumer group reads its stream's lanes: the stream's own state,
	 * loaded, says which generation the stream writes (taken first, and
	 * released: two queue locks are never held together)
	 */
	if (q->group != NULL)
	{
		stream = mqq_queue_lock(q->stream, LW_SHARED);
		LWLockRelease(&stream->lock);
		recheck = false;		/* the stream's lock is held, and checked */
	}
	else
		recheck = mqq_queue_object_lock(q);

	/*
	 * The state this backend found last time, if it is still q's: no lookup
	 * in the queue hash, under the hash's one lock.  A slot stays a slot
	 * once removed (see mqq_queue_shared), so its lock may be taken to
	 * check; one removed or reused takes the path below, with its checks.
	 */
	if (q->group == NULL && !recheck && q->state_hint != NULL)
	{
		qs = (MqQueueShared *) q->state_hint;
		LWLockAcquire(&qs->lock, mode);
		if (mqq_slot_is(qs, key) && !queue_needs_load(q, qs))
			return qs;
		LWLockRelease(&qs->lock);
		q->state_hint = NULL;
	}

	/*
	 * A queue deleted (and committed) since our catalog was read has no lane
	 * tables left: say so rather than load a state for it, which would stay
	 * in shared memory with nothing to drop it.  Once the object lock is
	 * held, no delete of it can be under way.  The catalog snapshot of this
	 * scan is new: the lock accepted the invalidations of the delete.  (The
	 * state found here, if any, is the one locked below: one lookup in the
	 * queue hash per call, not two.)
	 */
	qs = (q->group == NULL && !recheck) ? mqq_queue_shared(key, false) : NULL;
	if (q->group == NULL && qs == NULL && queue_rows_gone(q))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("queue \"%s\" does not exist", q->name),
				 errdetail("It was deleted by a concurrent transaction.")));

	/* unlogged lanes: a standby has only their initialization fork */
	if (!q->durable && RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("queue \"%s\" is not durable: its messages are not on standbys", q->name),
				 errdetail("Queues declared with durable => false use unlogged storage, which is not replicated.")));
	for (;;)
	{
		if (qs == NULL)
			qs = mqq_queue_shared(key, true);
		LWLockAcquire(&qs->lock, mode);
		if (mqq_slot_is(qs, key))
			break;
		/* the slot was removed (queue deleted) or reused meanwhile */
		LWLockRelease(&qs->lock);
		qs = NULL;
	}
	if (stream != NULL && qs->stream != stream)
	{
		if (mode != LW_EXCLUSIVE)
		{
			/* set once per load of the stream's state: rare */
			LWLockRelease(&qs->lock);
			LWLockAcquire(&qs->lock, LW_EXCLUSIVE);
		}
		qs->stream = stream;
		if (mode != LW_EXCLUSIVE)
		{
			LWLockRelease(&qs->lock);
			LWLockAcquire(&qs->lock, mode);
		}
	}
	if (queue_needs_load(q, qs))
	{
		if (mode != LW_EXCLUSIVE)
		{
			LWLockRelease(&qs->lock);
			LWLockAcquire(&qs->lock, LW_EXCLUSIVE);
		}
		if (queue_needs_load(q, qs))
			mqq_queue_load(q, qs);
	}
	if (q->group == NULL)
		q->state_hint = qs;
	return qs;
}
