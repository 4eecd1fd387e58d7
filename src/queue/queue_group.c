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
 * here: the FLOOR records that place a new group, and what
 * mq.consumer_groups shows of one, computed from that bounded state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "storage/lwlock.h"
#include "utils/rel.h"

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

/*
 * Offset of the first entry at or after qpos in its lane (any state), or
 * -1 at the end
 */
static int64
offset_at(MqQueue *q, uint64 qpos, int write_gen)
{
	int			lane = mq_qpos_lane(qpos);

	for (int gen = mq_qpos_gen(qpos); gen <= write_gen; gen++)
	{
		Oid			relid = mqq_lane_relid(q->id, lane, gen, false);
		Relation	rel;
		TupleTableSlot *slot;
		ItemPointerData pos;
		MqlogRowState st;
		int64		off = -1;
		bool		isnull;

		if (!OidIsValid(relid) || (rel = try_table_open(relid, AccessShareLock)) == NULL)
			continue;
		slot = table_slot_create(rel, NULL);
		if (gen == mq_qpos_gen(qpos))
			mq_qpos_tid(qpos, &pos);
		else
			ItemPointerSet(&pos, 0, FirstOffsetNumber);
		if (mqlog_peek_row(rel, &pos, &st, slot) &&
			slot->tts_tupleDescriptor->natts >= MQ_ENTRY_ATT_OFFSET)
		{
			Datum		d = slot_getattr(slot, MQ_ENTRY_ATT_OFFSET, &isnull);

			if (!isnull)
				off = DatumGetInt64(d);
		}
		ExecDropSingleTupleTableSlot(slot);
		table_close(rel, AccessShareLock);
		if (off >= 0)
			return off;
	}
	return -1;
}

/*
 * Progress of group view gview in one partition: the committed offset is
 * the offset of the entry at the lane's floor (the lowest unsettled
 * tracked entry, else the scan position).  The tracked list is bounded by
 * what is in flight, so this costs O(in flight), whatever the backlog.
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
	uint64		pending = 0;	/* lowest entry whose offset is not known */
	uint64		scan_pos;
	int			write_gen;

	memset(p, 0, sizeof(*p));
	mq_stream_bounds(gview->stream, partition, &p->first_offset, &p->end_offset);
	qs = mqq_queue_lock(gview, LW_SHARED);
	ls = &qs->lanes[partition];
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
		if (mq_qpos_lane(t->qpos) != partition || t->state == MQ_T_SETTLED)
			continue;
		if (t->state == MQ_T_LEASED || t->state == MQ_T_ACKING)
			p->in_flight++;
		else if (t->state == MQ_T_READY && t->redelivered)
			p->retrying++;
		if (t->offset >= 0 && (lowest < 0 || t->offset < lowest))
			lowest = t->offset;
		else if (t->offset < 0 && (pending == 0 || t->qpos < pending))
			pending = t->qpos;	/* its publisher is still in progress */
	}
	p->consumers = nowners + qs->nwaiting;
	p->last_delivery = qs->last_delivery;
	p->dead_lettered = ls->dead_lettered;
	scan_pos = ls->scan_pos;
	p->committed_offset = ls->scan_offset;
	write_gen = qs->stream ? qs->stream->lanes[partition].write_gen : ls->write_gen;
	LWLockRelease(&qs->lock);

	/* the scan position's offset, when no scan has read it since the load */
	if (p->committed_offset < 0)
	{
		int64		off = offset_at(gview, scan_pos, write_gen);

		p->committed_offset = off >= 0 ? off : p->end_offset;
	}
	if (lowest >= 0 && lowest < p->committed_offset)
		p->committed_offset = lowest;
	/* a late-committing publisher's entry holds the floor back */
	if (pending != 0)
	{
		int64		off = offset_at(gview, pending, write_gen);

		if (off >= 0 && off < p->committed_offset)
			p->committed_offset = off;
	}
}

void
mq_group_note_dead(MqQueue *gview, int lane)
{
	MqQueueShared *qs = mqq_queue_lock(gview, LW_EXCLUSIVE);

	if (lane >= 0 && lane < qs->nlanes)
		qs->lanes[lane].dead_lettered++;
	LWLockRelease(&qs->lock);
}
