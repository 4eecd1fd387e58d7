/*-------------------------------------------------------------------------
 *
 * queue_group.c
 *	  Consumer groups of stream queues: where a new group starts, and its
 *	  progress per partition.
 *
 * A group in clustering mode is a queue state of its own, keyed by
 * (database, stream, group), over the stream's lanes: the same scan
 * positions, tracked list and leases as a classic queue, served by
 * queue_take.c and queue_settle.c and rebuilt by queue_load.c from the
 * group's settlement logs g<queue>_<group>_<lane>_<gen>.  What is left
 * here: the FLOOR records that place a new group (and a sought one), and what
 * mq.consumer_groups shows of one, computed from that bounded state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "queue/queue_int.h"

void
mq_group_start(MqQueue *q, int32 group_id, bool earliest, TimestampTz from_time)
{
	MqQueue		view = *q;
	MqSettleBatch b;

	/* earliest: no floor, the load starts at the first retained entry */
	if (earliest)
		return;
	view.group_id = group_id;
	mq_settle_batch_init(&b, &view);
	for (int lane = 0; lane < q->nlanes; lane++)
		mq_settle_batch_add(&b, MQ_SETTLE_FLOOR,
							mqq_stream_start_pos(q, lane, from_time));
	mq_settle_batch_flush(&b);
}

void
mq_group_seek(MqQueue *q, int32 group_id, int partition, int64 to_offset,
			  TimestampTz to_time)
{
	MqQueue		view = *q;
	MqSettleBatch b;

	view.group_id = group_id;
	mq_settle_batch_init(&b, &view);
	for (int lane = 0; lane < q->nlanes; lane++)
		if (partition < 0 || lane == partition)
			mq_settle_batch_add(&b, MQ_SETTLE_FLOOR,
								mqq_stream_seek_pos(q, lane, to_offset, to_time));
	mq_settle_batch_flush(&b);
}

void
mq_group_settle_offsets(MqQueue *gview, int partition, const int64 *offsets, int n)
{
	MqSettleBatch b;

	mq_settle_batch_init(&b, gview);
	for (int i = 0; i < n; i++)
	{
		uint64		pos = mqq_stream_seek_pos(gview, partition, offsets[i], MQ_NO_TIME);
		uint64		next = mqq_stream_seek_pos(gview, partition, offsets[i] + 1, MQ_NO_TIME);

		/* the entry at offsets[i] is the one between the two positions */
		if (pos != next)
			mq_settle_batch_add(&b, MQ_SETTLE_ACK, pos);
	}
	mq_settle_batch_flush(&b);
}

void
mq_group_consumer_start(MqQueue *gview, MqQueue *cview)
{
	MqQueueShared *qs;
	uint64	   *pos = palloc(sizeof(uint64) * gview->nlanes);
	int			nlanes;
	MqSettleBatch b;

	/*
	 * The caller's statement may have begun before the consumer's catalog
	 * row and logs were made: read with a snapshot that sees this
	 * transaction's work so far, and later its FLOORs, so that the
	 * consumer's state, loaded here, starts at them (loaded without them it
	 * would start at the first retained entry).
	 */
	CommandCounterIncrement();
	PushCopiedSnapshot(GetActiveSnapshot());
	UpdateActiveSnapshotCommandId();

	qs = mqq_queue_lock(gview, LW_SHARED);
	nlanes = Min(qs->nlanes, gview->nlanes);
	for (int lane = 0; lane < nlanes; lane++)
		pos[lane] = qs->lanes[lane].scan_pos;
	LWLockRelease(&qs->lock);

	mq_settle_batch_init(&b, cview);
	for (int lane = 0; lane < nlanes; lane++)
		mq_settle_batch_add(&b, MQ_SETTLE_FLOOR, pos[lane]);
	mq_settle_batch_flush(&b);
	pfree(pos);

	CommandCounterIncrement();
	UpdateActiveSnapshotCommandId();
	qs = mqq_queue_lock(cview, LW_SHARED);
	LWLockRelease(&qs->lock);
	PopActiveSnapshot();
}

/* qsort order of positions */
static int
qpos_cmp(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return (x > y) - (x < y);
}

/* Most rows the view reads past the floor (settled, aborted) per partition */
#define MQ_PROGRESS_WALK_MAX 10000

/*
 * Offset of the first entry at or after floor in its lane that is not
 * settled (settled[]: sorted positions of settled entries the tracked list
 * still has) nor aborted, or the partition's end offset; *gone when the
 * floor's generation no longer exists (retention dropped it).
 */
static int64
floor_offset(MqQueue *q, uint64 floor, int write_gen, uint64 *settled, int nsettled,
			 int64 end_offset, bool *gone)
{
	int			lane = mq_qpos_lane(floor);
	int			k = 0;
	int			walked = 0;

	*gone = !OidIsValid(mqq_lane_relid(q->id, lane, mq_qpos_gen(floor), false));
	for (int gen = mq_qpos_gen(floor); gen <= write_gen; gen++)
	{
		Oid			relid = mqq_lane_relid(q->id, lane, gen, false);
		Relation	rel;
		TupleTableSlot *slot;
		ItemPointerData pos;
		MqlogRowState st;
		MqlogReadCache cache;
		int64		off = -1;

		if (!OidIsValid(relid) || (rel = try_table_open(relid, AccessShareLock)) == NULL)
			continue;
		slot = table_slot_create(rel, NULL);
		mqlog_read_cache_init(&cache);
		if (gen == mq_qpos_gen(floor))
			mq_qpos_tid(floor, &pos);
		else
			ItemPointerSet(&pos, 0, FirstOffsetNumber);
		while (mqlog_peek_row_cached(rel, &pos, &st, slot, &cache))
		{
			uint64		qpos = mq_qpos_make(lane, gen, &pos);
			bool		isnull;

			while (k < nsettled && settled[k] < qpos)
				k++;
			if (st != MQLOG_ROW_ABORTED && !(k < nsettled && settled[k] == qpos) &&
				slot->tts_tupleDescriptor->natts >= MQ_ENTRY_ATT_OFFSET)
			{
				Datum		d = slot_getattr(slot, MQ_ENTRY_ATT_OFFSET, &isnull);

				if (!isnull)
				{
					off = DatumGetInt64(d);
					break;
				}
			}
			if (++walked >= MQ_PROGRESS_WALK_MAX)
			{
				/* XXX a long run of aborted publishes: good enough */
				off = DatumGetInt64(slot_getattr(slot, MQ_ENTRY_ATT_OFFSET, &isnull));
				break;
			}
			ItemPointerSetOffsetNumber(&pos, ItemPointerGetOffsetNumber(&pos) + 1);
		}
		mqlog_read_cache_release(&cache);
		ExecDropSingleTupleTableSlot(slot);
		table_close(rel, AccessShareLock);
		if (off >= 0)
			return off;
	}
	return end_offset;
}

/*
 * Progress of group view gview in one partition.  The committed offset is
 * the offset of the lowest entry not settled: the first one from the
 * lane's floor (its lowest unsettled tracked entry, else the scan
 * position) that is neither settled (entries settled above the floor are
 * on the tracked list until compaction, or replayed after a restart) nor
 * aborted, else the partition's end.  The tracked list is bounded by what
 * is in flight, and the rows read past the floor by it too (settled ones),
 * so this costs O(in flight) whatever the backlog.
 */
void
mq_group_progress(MqQueue *gview, int partition, MqGroupProgress *p)
{
	MqQueueShared *qs;
	MqLaneState *ls;
	dlist_iter	it;
	int			owners[64];
	int			nowners = 0;
	int64		lowest = -1;
	uint64		floor;
	uint64	   *settled;
	int			nsettled = 0;
	int64		scan_offset;
	int			write_gen;
	bool		gone;

	memset(p, 0, sizeof(*p));
	mq_stream_bounds(gview->stream, partition, &p->first_offset, &p->end_offset);
	qs = mqq_queue_lock(gview, LW_SHARED);
	ls = &qs->lanes[partition];
	floor = ls->scan_pos;
	settled = palloc(sizeof(uint64) * (qs->ntracked + 1));
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);
		bool		seen = false;

		if (t->state == MQ_T_LEASED)
		{
			for (int i = 0; i < nowners; i++)
				seen |= owners[i] == t->owner;
			if (!seen && nowners < lengthof(owners))
				owners[nowners++] = t->owner;
		}
		if (mq_qpos_lane(t->qpos) != partition)
			continue;
		if (t->state == MQ_T_SETTLED)
		{
			settled[nsettled++] = t->qpos;
			continue;
		}
		if (t->state == MQ_T_LEASED || t->state == MQ_T_ACKING)
			p->in_flight++;
		else if (t->state == MQ_T_READY && t->redelivered)
			p->retrying++;
		floor = Min(floor, t->qpos);
		if (t->offset >= 0 && (lowest < 0 || t->offset < lowest))
			lowest = t->offset;
	}
	p->consumers = nowners + qs->nwaiting;
	p->last_delivery = qs->last_delivery;
	p->dead_lettered = ls->dead_lettered;
	scan_offset = ls->scan_offset;
	write_gen = qs->stream ? qs->stream->lanes[partition].write_gen : ls->write_gen;
	LWLockRelease(&qs->lock);

	if (nsettled > 1)
		qsort(settled, nsettled, sizeof(uint64), qpos_cmp);
	p->committed_offset = floor_offset(gview, floor, write_gen, settled, nsettled,
									   p->end_offset, &gone);
	pfree(settled);

	/*
	 * Behind retention: the floor's generation is gone.  Until the group
	 * consumes again (and then resumes at the first retained offset) the
	 * offsets it last knew show how far behind it fell; after a restart
	 * the state knows only the first retained one.
	 */
	if (gone)
	{
		int64		known = lowest >= 0 ? lowest : scan_offset;

		if (known >= 0 && known < p->committed_offset)
			p->committed_offset = known;
	}
}

void
mq_group_note_dead(MqQueue *gview, int lane)
{
	MqQueueShared *qs = mqq_queue_lock(gview, LW_EXCLUSIVE);

	/* counted when the transaction commits (queue_xact.c) */
	if (lane >= 0 && lane < qs->nlanes)
		mqq_local_add(MQ_L_DEAD, qs, lane, false);
	LWLockRelease(&qs->lock);
}

bool
mq_group_maintenance_due(int32 queue_id, int32 group_id, TimestampTz now,
						 TimestampTz *next_lease)
{
	MqQueueKey	key;
	MqQueueShared *qs;
	dlist_iter	it;
	bool		due = false;

	*next_lease = 0;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.queue_id = queue_id;
	key.group_id = group_id;
	qs = mqq_queue_shared(key, false);
	if (qs == NULL)
		return false;
	LWLockAcquire(&qs->lock, LW_SHARED);
	if (qs->dropped || !mqq_key_equal(qs->key, key) || !qs->loaded ||
		qs->loaded_in_recovery)
	{
		LWLockRelease(&qs->lock);
		return false;
	}
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_LEASED)
		{
			if (t->until <= now)
				due = true;
			else if (*next_lease == 0 || t->until < *next_lease)
				*next_lease = t->until;
		}
		else if (t->state == MQ_T_READY &&
				 mqq_over_delivery_limit(qs->delivery_limit, t))
			due = true;
	}
	LWLockRelease(&qs->lock);
	return due;
}
