/*-------------------------------------------------------------------------
 *
 * queue_stream.c
 *	  Stream queues: offsets of partitions, reading a partition by offset
 *	  or time, retention.
 *
 * A stream's partition is a lane, and the partition's entries are the
 * lane's entry log: a chain of generations, each written in order (ordered
 * append).  Each entry row carries its offset (a trailing column only
 * streams fill).  An append takes consecutive offsets and writes its rows
 * under the partition's offset lock, so offsets grow in the physical order
 * of the log: a reader finds an offset, or a time, by binary search over a
 * generation's blocks, with no index.  The next offset lives in shared
 * memory and is read back from the end of the log after a restart (from
 * the last row, whatever became of its transaction, or from the base
 * offset a generation records when the partition moves on to it).
 *
 * Readers keep no state here: mq.read passes its offsets in, so a read
 * touches only the logs and works on a hot standby.  The rule of classic
 * queues holds: entries are returned in offset order, aborted ones are
 * gaps, and a read stops at the first entry whose publisher is still in
 * progress, so a message that commits late is never skipped.
 *
 * Retention drops whole generations: once the newest entry of one is
 * older than the retention, or the partition holds more than max_bytes of
 * bodies (oldest generations first), whatever readers do.  The write
 * generation is never dropped; it is rotated when large or old enough.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "queue/queue_int.h"

/* Open a generation's entry log (or settlement log); NULL if gone or busy */
static Relation
gen_open(MqQueue *q, int lane, int gen, bool settle, bool conditional)
{
	Oid			relid = mqq_lane_relid(q->id, lane, gen, settle);

	if (!OidIsValid(relid))
		return NULL;
	if (conditional)
	{
		/* retention may hold it exclusively while it drops it */
		if (!ConditionalLockRelationOid(relid, AccessShareLock))
			return NULL;
		return try_relation_open(relid, NoLock);
	}
	return try_table_open(relid, AccessShareLock);
}

static void
gen_close(Relation rel)
{
	table_close(rel, AccessShareLock);
}

static int64
slot_int8(TupleTableSlot *slot, int att)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, att, &isnull);

	return isnull ? -1 : DatumGetInt64(d);
}

static TimestampTz
slot_visible_at(TupleTableSlot *slot)
{
	bool		isnull;

	return DatumGetTimestampTz(slot_getattr(slot, MQ_ENTRY_ATT_VISIBLE_AT, &isnull));
}

/* Read a generation's first entry (any state) into slot; false: it has none */
static bool
gen_first_row(Relation rel, TupleTableSlot *slot)
{
	ItemPointerData pos;
	MqlogRowState st;

	ItemPointerSet(&pos, 0, FirstOffsetNumber);
	return mqlog_peek_row(rel, &pos, &st, slot);
}

/* The base offset a generation recorded when the partition moved on to it */
static bool
gen_base(MqQueue *q, int lane, int gen, bool conditional, int64 *base)
{
	Relation	rel = gen_open(q, lane, gen, true, conditional);
	TupleTableSlot *slot;
	ItemPointerData pos;
	MqlogRowState st;
	bool		found = false;
	MqlogReadCache cache;

	if (rel == NULL)
		return false;
	slot = table_slot_create(rel, NULL);
	mqlog_read_cache_init(&cache);
	ItemPointerSet(&pos, 0, FirstOffsetNumber);
	while (mqlog_peek_row_cached(rel, &pos, &st, slot, &cache))
	{
		int64		rec = slot_int8(slot, 1);

		if (mq_settle_kind(rec) == MQ_SETTLE_BASE)
		{
			*base = (int64) ((uint64) rec & MQ_SETTLE_POS_MASK);
			found = true;
			break;
		}
		ItemPointerSetOffsetNumber(&pos, ItemPointerGetOffsetNumber(&pos) + 1);
	}
	mqlog_read_cache_release(&cache);
	ExecDropSingleTupleTableSlot(slot);
	gen_close(rel);
	return found;
}

/*
 * The next offset of a partition whose newest generation is gen: one past
 * the last row of the newest generation that has one (whatever became of
 * its transaction: an aborted row's offset is not used again, so offsets
 * grow along the log), or that generation's base offset.  Older
 * generations are only looked at when a newer one tells nothing (a crash
 * before its base record reached disk), and skipped if retention is
 * dropping them.
 */
static int64
partition_next_offset(MqQueue *q, int lane, int gen)
{
	for (int g = gen; g >= 0; g--)
	{
		Relation	rel = gen_open(q, lane, g, false, g != gen);
		int64		base;

		if (rel != NULL)
		{
			TupleTableSlot *slot = table_slot_create(rel, NULL);
			ItemPointerData pos;
			MqlogRowState st;
			int64		next = -1;

			if (mqlog_last_row(rel, &pos, &st, slot))
				next = slot_int8(slot, MQ_ENTRY_ATT_OFFSET) + 1;
			ExecDropSingleTupleTableSlot(slot);
			gen_close(rel);
			if (next > 0)
				return next;
		}
		if (gen_base(q, lane, g, g != gen, &base))
			return base;
		if (rel == NULL && !OidIsValid(mqq_lane_relid(q->id, lane, g, false)))
			break;				/* below the oldest generation */
	}
	return 0;
}

int64
mqq_stream_offsets_begin(MqQueue *q, MqQueueShared *qs, int lane, int gen, int n)
{
	MqLaneState *ls = &qs->lanes[lane];
	int64		first;

	LWLockAcquire(mqq_offset_lock(qs, lane), LW_EXCLUSIVE);
	if (!ls->offsets_known || ls->offsets_for != q->lanes[0])
	{
		ls->next_offset = partition_next_offset(q, lane, gen);
		ls->offsets_known = true;
		ls->offsets_for = q->lanes[0];
	}
	first = ls->next_offset;
	ls->next_offset += n;
	return first;
}

void
mqq_stream_offsets_end(MqQueueShared *qs, int lane)
{
	LWLockRelease(mqq_offset_lock(qs, lane));
}

/*
 * Record the base offset of generation gen of a partition, about to become
 * its write generation: called holding gen_lock exclusively, so no append
 * is in flight and the next offset is final.  The record is frozen: it
 * holds whatever becomes of the rotating transaction.
 */
void
mqq_stream_write_base(MqQueue *q, MqQueueShared *qs, int lane, int gen)
{
	int64		base = mqq_stream_offsets_begin(q, qs, lane, gen - 1, 0);
	Oid			relid = mqq_lane_relid(q->id, lane, gen, true);
	Relation	rel;
	TupleTableSlot *slot;

	mqq_stream_offsets_end(qs, lane);
	if (!OidIsValid(relid))
		return;
	rel = table_open(relid, RowExclusiveLock);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
	ExecClearTuple(slot);
	slot->tts_values[0] = Int64GetDatum(mq_settle_encode(MQ_SETTLE_BASE, (uint64) base));
	slot->tts_isnull[0] = false;
	ExecStoreVirtualTuple(slot);
	table_tuple_insert(rel, slot, FirstCommandId, TABLE_INSERT_FROZEN, NULL);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
}

/* ---------- reading a partition ---------- */

/* What a read looks for: an offset, or the first entry at or after a time */
typedef struct ReadTarget
{
	int64		offset;			/* -1: none */
	TimestampTz time;			/* MQ_NO_TIME: none */
} ReadTarget;

/* Is the row in slot before the target (so that reading starts after it)? */
static bool
row_before(TupleTableSlot *slot, const ReadTarget *t)
{
	if (t->offset >= 0)
		return slot_int8(slot, MQ_ENTRY_ATT_OFFSET) < t->offset;
	return slot_visible_at(slot) < t->time;
}

/*
 * Where reading for target starts in rel: the first row of the last block
 * whose first row is before the target (binary search over the blocks;
 * offsets, and publish times nearly, grow along the log)
 */
static void
gen_search(Relation rel, TupleTableSlot *slot, MqlogReadCache *cache,
		   const ReadTarget *t, ItemPointer start)
{
	BlockNumber lo = 0;
	BlockNumber hi = RelationGetNumberOfBlocks(rel);
	MqlogRowState st;

	if (hi == 0)
	{
		ItemPointerSet(start, 0, FirstOffsetNumber);
		return;
	}
	hi--;
	while (lo < hi)
	{
		BlockNumber mid = lo + (hi - lo + 1) / 2;
		ItemPointerData pos;

		ItemPointerSet(&pos, mid, FirstOffsetNumber);
		if (mqlog_peek_row_cached(rel, &pos, &st, slot, cache) && row_before(slot, t))
			lo = mid;
		else
			hi = mid - 1;
	}
	ItemPointerSet(start, lo, FirstOffsetNumber);
}

/*
 * The first entry of partition lane of q that is not before target t (in
 * generations low .. high): its generation and position.  The generation
 * to search is the last whose first entry is before the target (the ones
 * after it start at or after it), searched by blocks (gen_search); when
 * every entry of it is before, the next generation's first entry.  Returns
 * false when there is none: every entry is before the target, or there
 * are no entries.  Every path that starts somewhere in a stream by offset
 * or by time (mq.read, a group's start, mq.seek, the gateway's
 * x-stream-offset) comes here, so they agree on where that is.
 */
static bool
stream_locate(MqQueue *q, int lane, int low, int high, const ReadTarget *t,
			  int *gen_out, ItemPointer pos_out)
{
	int			gen = low;

	for (int g = high; g > low; g--)
	{
		Relation	rel = gen_open(q, lane, g, false, false);
		bool		before = false;

		if (rel != NULL)
		{
			TupleTableSlot *slot = table_slot_create(rel, NULL);

			before = gen_first_row(rel, slot) && row_before(slot, t);
			ExecDropSingleTupleTableSlot(slot);
			gen_close(rel);
		}
		if (before)
		{
			gen = g;
			break;
		}
	}

	for (; gen <= high; gen++)
	{
		Relation	rel = gen_open(q, lane, gen, false, false);
		TupleTableSlot *slot;
		MqlogReadCache cache;
		MqlogRowState st;
		ItemPointerData pos;
		bool		found = false;

		if (rel == NULL)
			continue;			/* retired meanwhile */
		slot = table_slot_create(rel, NULL);
		mqlog_read_cache_init(&cache);
		gen_search(rel, slot, &cache, t, &pos);
		while (mqlog_peek_row_cached(rel, &pos, &st, slot, &cache))
		{
			CHECK_FOR_INTERRUPTS();
			if (!row_before(slot, t))
			{
				found = true;
				break;
			}
			ItemPointerSetOffsetNumber(&pos, ItemPointerGetOffsetNumber(&pos) + 1);
		}
		mqlog_read_cache_release(&cache);
		ExecDropSingleTupleTableSlot(slot);
		gen_close(rel);
		if (found)
		{
			*gen_out = gen;
			*pos_out = pos;
			return true;
		}
	}
	return false;
}

/* The target of from_offset (-1: none) or else from_time (MQ_NO_TIME: none) */
static bool
read_target(int64 from_offset, TimestampTz from_time, ReadTarget *t)
{
	t->offset = from_offset;
	t->time = from_offset >= 0 ? MQ_NO_TIME : from_time;
	return t->offset >= 0 || t->time != MQ_NO_TIME;
}

int
mq_stream_read(MqQueue *q, int partition, int64 from_offset,
			   TimestampTz from_time, int n, MqStreamEntry *out)
{
	int			low,
				high;
	int			gen;
	int			got = 0;
	bool		stop = false;
	bool		resume = false;
	ReadTarget	t;
	ItemPointerData pos;

	Assert(q->type == MQ_QUEUE_STREAM);
	if (partition < 0 || partition >= q->nlanes ||
		!mqq_lane_gens(q->id, partition, &low, &high))
		return 0;

	/* where to start: the located entry, else the first retained */
	gen = low;
	if (read_target(from_offset, from_time, &t))
	{
		if (!stream_locate(q, partition, low, high, &t, &gen, &pos))
			return 0;			/* all before it: the end, nothing yet */
		resume = true;
	}

	/* from there on, every entry in offset order */
	for (; gen <= high && got < n && !stop; gen++)
	{
		Relation	rel = gen_open(q, partition, gen, false, false);
		TupleTableSlot *slot;
		MqlogRowState st;
		MqlogReadCache cache;

		if (!resume)
			ItemPointerSet(&pos, 0, FirstOffsetNumber);
		resume = false;
		if (rel == NULL)
			continue;			/* retired meanwhile */
		slot = table_slot_create(rel, NULL);
		mqlog_read_cache_init(&cache);
		while (got < n && mqlog_peek_row_cached(rel, &pos, &st, slot, &cache))
		{
			CHECK_FOR_INTERRUPTS();
			if (st == MQLOG_ROW_IN_PROGRESS || st == MQLOG_ROW_OWN)
			{
				/* not committed (yet): nothing after it either */
				stop = true;
				break;
			}
			if (st == MQLOG_ROW_COMMITTED)
			{
				out[got].msg_id = slot_int8(slot, MQ_ENTRY_ATT_MSG_ID);
				out[got].offset = slot_int8(slot, MQ_ENTRY_ATT_OFFSET);
				got++;
			}
			/* aborted: a gap */
			ItemPointerSetOffsetNumber(&pos, ItemPointerGetOffsetNumber(&pos) + 1);
		}
		mqlog_read_cache_release(&cache);
		ExecDropSingleTupleTableSlot(slot);
		gen_close(rel);
	}
	return got;
}

/* The end of partition lane of q: the position after its last entry */
static uint64
stream_end_pos(MqQueue *q, int lane, int high)
{
	Relation	rel = gen_open(q, lane, high, false, false);
	uint64		found = 0;

	if (rel != NULL)
	{
		TupleTableSlot *slot = table_slot_create(rel, NULL);
		ItemPointerData pos;
		MqlogRowState st;

		if (mqlog_last_row(rel, &pos, &st, slot))
			found = mqq_qpos_next(mq_qpos_make(lane, high, &pos));
		ExecDropSingleTupleTableSlot(slot);
		gen_close(rel);
	}
	return found != 0 ? found : mq_qpos_gen_start(lane, high);
}

/*
 * Where a consumer group starts reading partition lane of q: at the first
 * entry whose offset is at least to_offset (when it is not -1), else at
 * the first entry stored at or after to_time (when it is not MQ_NO_TIME),
 * else at the end, after the last entry whatever its state.  Found by
 * stream_locate, as mq.read finds where it starts, not by a scan of the
 * partition.  Returns that entry's position, or the end when there is
 * none (so an offset or a time before the first retained entry gives the
 * first retained entry, one past the last gives the end).
 */
uint64
mqq_stream_seek_pos(MqQueue *q, int lane, int64 to_offset, TimestampTz to_time)
{
	int			low,
				high;
	int			gen;
	ReadTarget	t;
	ItemPointerData pos;

	if (!mqq_lane_gens(q->id, lane, &low, &high))
		return mq_qpos_gen_start(lane, 0);
	if (read_target(to_offset, to_time, &t) &&
		stream_locate(q, lane, low, high, &t, &gen, &pos))
		return mq_qpos_make(lane, gen, &pos);
	/* nothing at or after it: the end, where the next entry goes */
	return stream_end_pos(q, lane, high);
}

/* Where a group created now starts: from_time, or MQ_NO_TIME for the end */
uint64
mqq_stream_start_pos(MqQueue *q, int lane, TimestampTz from_time)
{
	return mqq_stream_seek_pos(q, lane, -1, from_time);
}

void
mq_stream_bounds(MqQueue *q, int partition, int64 *first, int64 *next)
{
	int			low,
				high;

	*first = *next = 0;
	if (partition < 0 || partition >= q->nlanes ||
		!mqq_lane_gens(q->id, partition, &low, &high))
		return;
	*next = partition_next_offset(q, partition, high);
	*first = *next;
	for (int g = low; g <= high; g++)
	{
		Relation	rel = gen_open(q, partition, g, false, false);
		bool		found = false;

		if (rel != NULL)
		{
			TupleTableSlot *slot = table_slot_create(rel, NULL);

			if (gen_first_row(rel, slot))
			{
				*first = slot_int8(slot, MQ_ENTRY_ATT_OFFSET);
				found = true;
			}
			ExecDropSingleTupleTableSlot(slot);
			gen_close(rel);
		}
		if (found)
			break;
	}
}

bool
mq_stream_offset_dropped(MqQueue *q, int partition, int64 offset)
{
	int64		first,
				next;

	mq_stream_bounds(q, partition, &first, &next);
	return offset < first;
}

/* ---------- what a generation holds: bytes, oldest message, newest time ---------- */

/*
 * What retention, log retirement and mq.queues need of a generation, summed
 * over its entries.  An entry's part never changes once its inserter has
 * committed or aborted, and entries are only appended: so each backend (the
 * maintenance worker's, mostly) keeps, per generation, the sum over its
 * leading run of settled entries and where that run ends, and a later
 * summary reads on from there.  The pass of log retirement, every
 * mq.retire_interval, then reads what was published since the last one,
 * not the partition's whole write generation (it did until 2026-12-02: a
 * stream holding 1.2M entries cost the worker 9 % of a core when idle).
 * Each backend records how far it got in shared memory as well, and takes
 * over from there when another got further (gen_summary_entry): a new
 * session's first mq.queues reads what was appended since the worker's
 * last pass, not every generation of every partition (until 2026-12-03 it
 * did: 138 ms for a 1.2M-entry stream).  The structs are in queue_int.h.
 */
static HTAB *gen_summaries = NULL;

static void
summary_init(MqGenSummary *s)
{
	s->any = false;
	s->bytes = 0;
	s->min_msg_id = PG_INT64_MAX;
	s->oldest = 0;
	s->latest = 0;
	s->newest = 0;
}

/* Add the entry in slot, in state st, to s */
static void
summary_add(MqGenSummary *s, MqlogRowState st, TupleTableSlot *slot)
{
	TimestampTz at = slot_visible_at(slot);
	int64		msg_id;

	s->newest = Max(s->newest, at);
	if (st == MQLOG_ROW_ABORTED)
		return;
	s->any = true;
	msg_id = slot_int8(slot, MQ_ENTRY_ATT_MSG_ID);
	/* a message kept in its entry row pins no log segment (queue.h) */
	if (msg_id < MQ_INLINE_MSGID_MIN)
		s->min_msg_id = Min(s->min_msg_id, msg_id);
	if (st == MQLOG_ROW_COMMITTED)
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, MQ_ENTRY_ATT_BODY_SIZE, &isnull);

		if (!isnull)
			s->bytes += DatumGetInt32(d);
		if (s->oldest == 0)
			s->oldest = at;
		s->latest = Max(s->latest, at);
	}
}

/*
 * Sum rel's entries from e->next on into *out, which starts as e->settled;
 * e->settled and e->next move on over the leading run of settled entries,
 * and e becomes final when the generation is closed and no entry was in
 * progress.  How far e got is recorded for the other backends.
 */
static void
gen_summarize(Relation rel, MqGenProgress *e, bool closed, MqGenSummary *out)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	MqlogReadCache cache;
	ItemPointerData pos = e->next;
	MqlogRowState st;
	bool		settled = true;

	*out = e->settled;
	mqlog_read_cache_init(&cache);
	while (mqlog_peek_row_cached(rel, &pos, &st, slot, &cache))
	{
		summary_add(out, st, slot);
		ItemPointerSetOffsetNumber(&pos, ItemPointerGetOffsetNumber(&pos) + 1);
		if (settled && (st == MQLOG_ROW_COMMITTED || st == MQLOG_ROW_ABORTED))
		{
			summary_add(&e->settled, st, slot);
			e->next = pos;
		}
		else
			settled = false;
	}
	mqlog_read_cache_release(&cache);
	ExecDropSingleTupleTableSlot(slot);
	e->final = settled && closed;
	mqq_gen_progress_put(e);
}

/*
 * This backend's summary entry of generation gen (entry log relid), taken
 * over from what another backend recorded when that got further (the
 * worker sums each stream at every log retirement): a new session then
 * reads only what was appended since, not the generation
 */
static MqGenProgress *
gen_summary_entry(MqQueue *q, int lane, int gen, Oid relid)
{
	MqGenProgress *e;
	MqGenProgress shared;
	bool		found;

	if (gen_summaries == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(MqGenProgress);
		ctl.hcxt = TopMemoryContext;
		gen_summaries = hash_create("queue_ext stream generations", 64, &ctl,
									HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = hash_search(gen_summaries, &relid, HASH_ENTER, &found);
	if (!found || e->queue_id != q->id || e->lane != lane || e->gen != gen)
	{
		e->queue_id = q->id;
		e->lane = lane;
		e->gen = gen;
		summary_init(&e->settled);
		ItemPointerSet(&e->next, 0, FirstOffsetNumber);
		e->final = false;
	}
	if (!e->final && mqq_gen_progress_get(relid, &shared) &&
		mqq_gen_progress_ahead(&shared, e))
		*e = shared;
	return e;
}

/* Summary of generation gen of a partition (false: the table is gone) */
static bool
gen_summary(MqQueue *q, int lane, int gen, bool closed, MqGenSummary *out)
{
	Relation	rel;
	Oid			relid = mqq_lane_relid(q->id, lane, gen, false);
	MqGenProgress *e;

	if (!OidIsValid(relid))
		return false;
	e = gen_summary_entry(q, lane, gen, relid);
	if (e->final)
	{
		*out = e->settled;
		return true;
	}
	rel = gen_open(q, lane, gen, false, true);
	if (rel == NULL)
		return false;
	gen_summarize(rel, e, closed, out);
	gen_close(rel);
	return true;
}

static void
gen_forget(Oid relid)
{
	if (!OidIsValid(relid))
		return;
	if (gen_summaries != NULL)
		(void) hash_search(gen_summaries, &relid, HASH_REMOVE, NULL);
	mqq_gen_progress_forget(relid);
}

/*
 * Lowest message id a retained entry of stream q refers to: a stream's
 * entries are never settled, they are retained until retention drops
 * their generation (PG_INT64_MAX: none)
 */
int64
mqq_stream_min_msg_id(MqQueue *q)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_SHARED);
	int			write_gen[MQ_MAX_LANES];
	int64		min = PG_INT64_MAX;

	for (int lane = 0; lane < qs->nlanes && lane < q->nlanes; lane++)
		write_gen[lane] = qs->lanes[lane].write_gen;
	LWLockRelease(&qs->lock);
	for (int lane = 0; lane < q->nlanes; lane++)
	{
		int			low,
					high;

		if (!mqq_lane_gens(q->id, lane, &low, &high))
			continue;
		for (int g = low; g <= high; g++)
		{
			MqGenSummary s;

			if (!gen_summary(q, lane, g, g < write_gen[lane], &s))
			{
				/* busy: being dropped, or cannot tell, keep everything */
				if (OidIsValid(mqq_lane_relid(q->id, lane, g, false)))
					return 0;
				continue;
			}
			if (s.any)
				min = Min(min, s.min_msg_id);
		}
	}
	return min;
}

void
mq_stream_partition(MqQueue *q, int partition, MqStreamPartition *out)
{
	MqQueueShared *qs;
	int			write_gen;
	int			low,
				high;

	memset(out, 0, sizeof(*out));
	mq_stream_bounds(q, partition, &out->first_offset, &out->end_offset);
	if (partition < 0 || partition >= q->nlanes ||
		!mqq_lane_gens(q->id, partition, &low, &high))
		return;

	/*
	 * Generations below the write generation are closed.  A standby keeps
	 * no queue state: there, the newest two may both still be written (the
	 * next generation exists before appends move to it).
	 */
	if (RecoveryInProgress())
		write_gen = high - 1;
	else
	{
		qs = mqq_queue_lock(q, LW_SHARED);
		write_gen = partition < qs->nlanes ? qs->lanes[partition].write_gen : high;
		LWLockRelease(&qs->lock);
	}
	for (int g = low; g <= high; g++)
	{
		MqGenSummary s;

		if (!gen_summary(q, partition, g, g < write_gen, &s))
			continue;
		out->bytes += s.bytes;
		if (s.oldest != 0 && out->first_time == 0)
			out->first_time = s.oldest;
		out->last_time = Max(out->last_time, s.latest);
	}
}

/* ---------- retention ---------- */

/* Drop generation gen of a partition if nobody reads it now */
static bool
gen_drop(MqQueue *q, MqQueueShared *qs, int lane, int gen)
{
	Oid			qrel = mqq_lane_relid(q->id, lane, gen, false);
	Oid			srel = mqq_lane_relid(q->id, lane, gen, true);

	if (OidIsValid(qrel) && !ConditionalLockRelationOid(qrel, AccessExclusiveLock))
		return false;
	/* and the groups' logs of the generation, which _lane_drop drops too */
	if ((OidIsValid(srel) && !ConditionalLockRelationOid(srel, AccessExclusiveLock)) ||
		!mqq_group_logs_trylock(q->id, lane, gen))
	{
		/* busy: let the others go, so readers do not wait for this step */
		if (OidIsValid(srel) && CheckRelationOidLockedByMe(srel, AccessExclusiveLock, false))
			UnlockRelationOid(srel, AccessExclusiveLock);
		if (OidIsValid(qrel))
			UnlockRelationOid(qrel, AccessExclusiveLock);
		return false;
	}
	mqq_lane_drop(q->id, lane, gen);
	gen_forget(qrel);

	/*
	 * Holding the dropped tables in AccessExclusiveLock, which a reader may
	 * wait for under a queue lock or an offset lock, we wait for no LWLock:
	 * if the queue lock is busy, low_gen stays (readers find the generation
	 * gone and go on to the next; a load recomputes it).
	 */
	if (LWLockConditionalAcquire(&qs->lock, LW_EXCLUSIVE))
	{
		if (qs->lanes[lane].low_gen == gen)
			qs->lanes[lane].low_gen = gen + 1;
		LWLockRelease(&qs->lock);
	}
	return true;
}

void
mq_stream_retain(MqQueue *q)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_SHARED);
	int			nlanes = Min(qs->nlanes, q->nlanes);
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz horizon = now - q->retention_us;

	int		   *write_gens = palloc(sizeof(int) * Max(nlanes, 1));

	LWLockRelease(&qs->lock);
	for (int lane = 0; lane < nlanes; lane++)
	{
		MqLaneState *ls = &qs->lanes[lane];
		int			write_gen = ls->write_gen;

		/*
		 * Move on to the next generation once it exists (made by an earlier
		 * pass), recording its base offset first: no append is in flight
		 * while gen_lock is held exclusively.
		 */
		if (write_gen < MQ_QPOS_MAX_GEN &&
			OidIsValid(mqq_lane_relid(q->id, lane, write_gen + 1, false)))
		{
			LWLockAcquire(&qs->gen_lock, LW_EXCLUSIVE);
			if (ls->write_gen == write_gen)
			{
				mqq_stream_write_base(q, qs, lane, write_gen + 1);
				LWLockAcquire(&qs->lock, LW_EXCLUSIVE);
				ls->write_gen = write_gen + 1;
				LWLockRelease(&qs->lock);
			}
			LWLockRelease(&qs->gen_lock);
			write_gen = ls->write_gen;
		}
		else if (write_gen < MQ_QPOS_MAX_GEN)
		{
			/*
			 * Start the next generation when this one is large, or holds
			 * entries older than half the retention or a quarter of
			 * max_bytes: retention drops whole generations, so these bound
			 * how much longer, or more, it keeps than asked.
			 */
			Relation	rel = gen_open(q, lane, write_gen, false, false);
			bool		rotate = false;

			if (rel != NULL)
			{
				TupleTableSlot *slot = table_slot_create(rel, NULL);

				if (gen_first_row(rel, slot))
				{
					rotate = RelationGetNumberOfBlocks(rel) >= (BlockNumber) mq_lane_segment_size ||
						slot_visible_at(slot) < now - q->retention_us / 2;
					if (!rotate && q->max_bytes > 0)
					{
						MqGenSummary cur;

						/* the write generation, read on from the last look */
						gen_summarize(rel,
									  gen_summary_entry(q, lane, write_gen,
														RelationGetRelid(rel)),
									  false, &cur);
						rotate = cur.bytes >= Max(q->max_bytes / 4, 1);
					}
				}
				ExecDropSingleTupleTableSlot(slot);
				gen_close(rel);
			}
			if (rotate)
				mqq_lane_create(q, lane, write_gen + 1);
		}

		write_gens[lane] = write_gen;
	}

	/*
	 * Then retire, lane by lane, once every LWLock of the rotations above
	 * has been let go: a dropped generation stays locked exclusively to the
	 * end of the transaction (see gen_drop).
	 */
	for (int lane = 0; lane < nlanes; lane++)
	{
		int			write_gen = write_gens[lane];
		int			low,
					high;
		int64		total = 0;

		/* retire: older than the retention, or beyond max_bytes, oldest first */
		if (!mqq_lane_gens(q->id, lane, &low, &high))
			continue;
		if (q->max_bytes > 0)
		{
			for (int g = low; g <= high; g++)
			{
				MqGenSummary s;

				if (gen_summary(q, lane, g, g < write_gen, &s))
					total += s.bytes;
			}
		}
		for (int g = low; g < write_gen; g++)
		{
			MqGenSummary s;

			if (!gen_summary(q, lane, g, true, &s))
			{
				if (OidIsValid(mqq_lane_relid(q->id, lane, g, false)))
					break;		/* busy: try again next pass */
				continue;
			}
			if (s.newest >= horizon && !(q->max_bytes > 0 && total > q->max_bytes))
				break;
			if (!gen_drop(q, qs, lane, g))
				break;
			total -= s.bytes;
		}
	}
	pfree(write_gens);
}
