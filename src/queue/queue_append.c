/*-------------------------------------------------------------------------
 *
 * queue_append.c
 *	  Publishing to a queue: appending entries to a lane's write
 *	  generation, rotating generations, and the ready count and bytes
 *	  that x-max-length and x-max-length-bytes are checked against.
 *
 * Entries are appended by the publishing transaction and count in the
 * queue's backlog once it commits (queue_xact.c).  A lane's entry log is
 * a chain of generations so that disk use follows the live backlog: the
 * maintenance worker starts a new generation once the current one reaches
 * mq.lane_segment_size, switches appends over to it under gen_lock, and
 * drops old generations once the lane's floor has passed them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "queue/queue_int.h"

/*
 * Appending entries to a lane.  The generation is read and the rows are
 * written under gen_lock in shared mode, so the worker's switch to a new
 * generation (exclusive) never overlaps an append: once a reader sees the
 * switch, the old generation is complete.
 *
 * queue_append_begin returns the entry log of the lane's write generation,
 * holding gen_lock in shared mode until queue_append_end().
 */
static Oid
queue_append_begin(MqQueue *q, int lane, int *gen, MqQueueShared **qsp)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_SHARED);
	Oid			relid;

	LWLockRelease(&qs->lock);
	LWLockAcquire(&qs->gen_lock, LW_SHARED);
	*gen = qs->lanes[lane].write_gen;
	/* (it may have been created since our catalog snapshot was taken) */
	relid = mqq_lane_relid_fresh(q->id, lane, *gen);
	if (!OidIsValid(relid))
	{
		LWLockRelease(&qs->gen_lock);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("entry log of queue \"%s\" lane %d is missing", q->name, lane),
				 errdetail("Generation %d of the lane has no entry log.", *gen),
				 errhint("Delete and declare the queue again.")));
	}
	*qsp = qs;
	return relid;
}

/*
 * End an append of n entries of bytes body bytes: they count in the
 * backlog when we commit, and the fresh ones among them (not a retry that
 * a nack's timer appends again) as published
 */
static void
queue_append_end(MqQueueShared *qs, int n, int64 bytes, int fresh)
{
	LWLockRelease(&qs->gen_lock);
	mqq_local_add_publish(qs, n, bytes);
	mqq_local_count(qs, MQ_C_PUBLISHED, fresh);
}

/*
 * The body size an entry of q records: only queues with x-max-length-bytes
 * keep one (elsewhere the column stays NULL, not stored, and the entry
 * logs of other queues are what they always were)
 */
static inline int32
entry_body_size(MqQueue *q, MqEntry *e)
{
	if ((q->max_length_bytes < 0 && q->type != MQ_QUEUE_STREAM) || e->body_size < 0)
		return -1;
	return e->body_size;
}

/* Body bytes an append adds to q's ready bytes (streams have none) */
static inline int64
entry_ready_bytes(MqQueue *q, MqEntry *e)
{
	return q->type == MQ_QUEUE_STREAM ? 0 : Max(e->body_size, 0);
}

/*
 * The stream positions this transaction's appends gave messages, for
 * mq.message_position and mq.message (without reading the row back; an
 * inline message's row holds its own, for later transactions): at most
 * MQ_STREAM_NOTES, the newest searched first.  They live in
 * TopTransactionContext, tagged with the local transaction id, so a new
 * transaction finds none.
 */
#define MQ_STREAM_NOTES 4096

typedef struct StreamNote
{
	int64		msg_id;
	SubTransactionId subid;		/* the appending subtransaction */
	MqStreamPos pos;
} StreamNote;

StaticAssertDecl(MQ_ENTRY_STREAM_ATT_OFFSET == MQ_ENTRY_ATT_OFFSET,
				 "msglog.c reads an inline message's offset by this number");

static StreamNote *stream_notes = NULL;
static int	stream_nnotes = 0;
static int	stream_notes_size = 0;
static LocalTransactionId stream_notes_lxid = InvalidLocalTransactionId;
static bool stream_notes_cb = false;

/*
 * A subtransaction that rolls back takes its appends' notes along: those
 * made since it began are the last ones, of its id or its children's
 * (higher) ids
 */
static void
stream_notes_subxact(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (event != SUBXACT_EVENT_ABORT_SUB || stream_notes == NULL ||
		stream_notes_lxid != MyProc->lxid)
		return;
	while (stream_nnotes > 0 && stream_notes[stream_nnotes - 1].subid >= mySubid)
		stream_nnotes--;
}

static void
stream_note(MqQueue *q, int lane, const MqEntry *e)
{
	if (q->type != MQ_QUEUE_STREAM || e->msg_id <= 0 || e->offset < 0)
		return;
	if (stream_notes_lxid != MyProc->lxid || stream_notes == NULL)
	{
		if (!stream_notes_cb)
		{
			RegisterSubXactCallback(stream_notes_subxact, NULL);
			stream_notes_cb = true;
		}
		stream_notes_size = 8;
		stream_notes = MemoryContextAlloc(TopTransactionContext,
										  sizeof(StreamNote) * stream_notes_size);
		stream_nnotes = 0;
		stream_notes_lxid = MyProc->lxid;
	}
	if (stream_nnotes >= MQ_STREAM_NOTES)
		return;
	if (stream_nnotes == stream_notes_size)
	{
		stream_notes_size = Min(stream_notes_size * 2, MQ_STREAM_NOTES);
		stream_notes = repalloc(stream_notes, sizeof(StreamNote) * stream_notes_size);
	}
	stream_notes[stream_nnotes].msg_id = e->msg_id;
	stream_notes[stream_nnotes].subid = GetCurrentSubTransactionId();
	stream_notes[stream_nnotes].pos.queue_id = q->id;
	stream_notes[stream_nnotes].pos.partition = lane;
	stream_notes[stream_nnotes].pos.offset = e->offset;
	stream_nnotes++;
}

int
mq_stream_noted(int64 msg_id, MqStreamPos *out, int max)
{
	int			n = 0;

	if (stream_notes == NULL || stream_notes_lxid != MyProc->lxid)
		return 0;
	for (int i = stream_nnotes - 1; i >= 0 && n < max; i--)
		if (stream_notes[i].msg_id == msg_id)
			out[n++] = stream_notes[i].pos;
	return n;
}

/*
 * Append n entries to a lane of q in this transaction (they count at
 * commit), with payload: the messages they carry (inline, queue.h), or
 * NULL.  False, having done nothing, when payload is given and the lane's
 * write generation cannot carry messages.
 */
static bool
queue_append(MqQueue *q, int lane, MqEntry *entries, int n,
			 const Datum *payload, const bool *payload_null)
{
	uint64	   *qpos;
	MqQueueShared *qs;
	int			gen;
	int64		bytes = 0;
	int			fresh = 0;
	int64		segno;
	Relation	rel;

	rel = table_open(queue_append_begin(q, lane, &gen, &qs), RowExclusiveLock);
	segno = mqq_entry_log_inline_segno(rel);
	if (payload != NULL && segno == 0)
	{
		table_close(rel, NoLock);
		LWLockRelease(&qs->gen_lock);
		return false;
	}
	qpos = palloc(sizeof(uint64) * n);
	for (int i = 0; i < n; i++)
	{
		fresh += entries[i].delivery_count == 0;
		entries[i].body_size = entry_body_size(q, &entries[i]);
		entries[i].offset = -1;
		bytes += entry_ready_bytes(q, &entries[i]);
	}
	if (q->type == MQ_QUEUE_STREAM)
	{
		/* offsets in the order the rows are written, under the offset lock */
		int64		first = mqq_stream_offsets_begin(q, qs, lane, gen, n);

		for (int i = 0; i < n; i++)
			entries[i].offset = first + i;
		mqq_entry_append(rel, lane, gen, entries, n, payload, payload_null, segno, qpos);
		mqq_stream_offsets_end(qs, lane);
		for (int i = 0; i < n; i++)
			stream_note(q, lane, &entries[i]);
	}
	else
		mqq_entry_append(rel, lane, gen, entries, n, NULL, NULL, 0, qpos);
	table_close(rel, NoLock);
	queue_append_end(qs, n, bytes, fresh);
	pfree(qpos);
	return true;
}

void
mq_queue_append(MqQueue *q, int lane, MqEntry *entries, int n)
{
	(void) queue_append(q, lane, entries, n, NULL, NULL);
}

bool
mq_queue_append_inline(MqQueue *q, int lane, MqEntry *entries, int n,
					   const Datum *payload, const bool *payload_null)
{
	Assert(q->type == MQ_QUEUE_STREAM);
	return queue_append(q, lane, entries, n, payload, payload_null);
}

/* Open the write generation of a lane for a linked insert, holding gen_lock */
static void
link_open(MqQueue *q, int lane, MqQueueLink *link)
{
	MqQueueShared *qs;
	Oid			relid = queue_append_begin(q, lane, &link->gen, &qs);

	link->q = q;
	link->lane = lane;
	link->shared = qs;
	link->body_size = 0;
	link->rel = table_open(relid, RowExclusiveLock);
	link->offset = -1;
	link->inline_segno = mqq_entry_log_inline_segno(link->rel);
}

/* a stream's offset is taken now and its row written before the lock goes */
static void
link_take_offset(MqQueueLink *link)
{
	if (link->q->type == MQ_QUEUE_STREAM)
		link->offset = mqq_stream_offsets_begin(link->q, (MqQueueShared *) link->shared,
												link->lane, link->gen, 1);
}

/*
 * The entry's half of a linked insert (the sequence is in queue.h):
 * begin takes gen_lock and opens the write generation, reserve locks the
 * entry page, end releases gen_lock once the rows are written.
 */
void
mq_queue_link_begin(MqQueue *q, int lane, MqQueueLink *link)
{
	link_open(q, lane, link);
	link_take_offset(link);
}

/* The row of an entry, and payload (NULL: none) in its trailing columns */
static void
link_reserve(MqQueueLink *link, MqEntry *entry, const Datum *payload,
			 const bool *payload_null, MqlogLinkedRow *row)
{
	Datum		values[MQ_ENTRY_NATTS + MQ_ENTRY_PAYLOAD_NATTS];
	bool		isnull[MQ_ENTRY_NATTS + MQ_ENTRY_PAYLOAD_NATTS];

	entry->body_size = entry_body_size(link->q, entry);
	entry->offset = link->offset;
	link->body_size = entry_ready_bytes(link->q, entry);
	Assert(payload == NULL || link->inline_segno != 0);
	mqq_entry_values(entry, RelationGetDescr(link->rel), payload, payload_null, values, isnull);
	mqlog_linked_reserve(row, link->rel, values, isnull, GetCurrentCommandId(true), true);
	if (payload == NULL)
		stream_note(link->q, link->lane, entry);
}

void
mq_queue_link_reserve(MqQueueLink *link, MqEntry *entry, MqlogLinkedRow *row)
{
	link_reserve(link, entry, NULL, NULL, row);
}

void
mq_queue_link_end(MqQueueLink *link, MqlogLinkedRow *row)
{
	if (link->offset >= 0)
		mqq_stream_offsets_end((MqQueueShared *) link->shared, link->lane);
	mqq_check_lane_block(link->rel, &row->tid);
	table_close(link->rel, NoLock);
	/* a linked publish is always a new message */
	queue_append_end((MqQueueShared *) link->shared, 1, link->body_size, 1);
}

bool
mq_queue_inline_begin(MqQueue *q, int lane, MqQueueLink *link)
{
	link_open(q, lane, link);
	if (link->inline_segno == 0)
	{
		/* an entry log from before inline messages (an upgrade's) */
		table_close(link->rel, NoLock);
		LWLockRelease(&((MqQueueShared *) link->shared)->gen_lock);
		return false;
	}
	link_take_offset(link);
	return true;
}

int64
mq_queue_inline_reserve(MqQueueLink *link, MqEntry *entry, const Datum *payload,
						const bool *payload_null, MqlogLinkedRow *row)
{
	entry->msg_id = 0;
	link_reserve(link, entry, payload, payload_null, row);
	entry->msg_id = mq_msgid_make(link->inline_segno, &row->tid);
	mqq_entry_set_msg_id(row->tup, entry->msg_id);
	stream_note(link->q, link->lane, entry);
	return entry->msg_id;
}

/*
 * Called by the maintenance worker for each queue, in its transaction:
 * - switch a lane to its next generation once that exists (it was created
 *   and committed in an earlier pass), so appends move on;
 * - create the next generation when the current one is large;
 * - drop old generations that are entirely below the lane's floor.
 */
void
mq_queue_rotate(MqQueue *q)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_SHARED);
	int			nlanes = qs->nlanes;

	LWLockRelease(&qs->lock);
	for (int lane = 0; lane < nlanes; lane++)
	{
		MqLaneState *ls = &qs->lanes[lane];
		int			write_gen = ls->write_gen;

		if (write_gen < MQ_QPOS_MAX_GEN &&
			OidIsValid(mqq_lane_relid(q->id, lane, write_gen + 1, false)))
		{
			LWLockAcquire(&qs->gen_lock, LW_EXCLUSIVE);
			LWLockAcquire(&qs->lock, LW_EXCLUSIVE);
			if (ls->write_gen == write_gen)
				ls->write_gen = write_gen + 1;
			LWLockRelease(&qs->lock);
			LWLockRelease(&qs->gen_lock);
		}
		else if (write_gen < MQ_QPOS_MAX_GEN)
		{
			Oid			relid = mqq_lane_relid(q->id, lane, write_gen, false);
			Relation	rel = OidIsValid(relid) ? try_table_open(relid, AccessShareLock) : NULL;

			if (rel)
			{
				BlockNumber nblocks = RelationGetNumberOfBlocks(rel);

				table_close(rel, AccessShareLock);
				if (nblocks >= (BlockNumber) mq_lane_segment_size)
					mqq_lane_create(q, lane, write_gen + 1);
			}
		}

		/* drop generations every entry of which is settled */
		for (;;)
		{
			int			low;
			uint64		floor;

			LWLockAcquire(&qs->lock, LW_SHARED);
			low = ls->low_gen;
			floor = mqq_lane_floor(qs, lane);
			LWLockRelease(&qs->lock);
			if (low >= ls->write_gen || floor < mq_qpos_gen_start(lane, low + 1))
				break;
			{
				Oid			qrel = mqq_lane_relid(q->id, lane, low, false);
				Oid			srel = mqq_lane_relid(q->id, lane, low, true);

				/* nobody may be reading them; try again later if busy */
				if ((OidIsValid(qrel) && !ConditionalLockRelationOid(qrel, AccessExclusiveLock)) ||
					(OidIsValid(srel) && !ConditionalLockRelationOid(srel, AccessExclusiveLock)))
					break;
				mqq_lane_drop(q->id, lane, low);
			}
			LWLockAcquire(&qs->lock, LW_EXCLUSIVE);
			if (ls->low_gen == low)
				ls->low_gen = low + 1;
			LWLockRelease(&qs->lock);
		}
	}
}

/*
 * Ready messages of q, and their body bytes, as they will be once this
 * transaction commits: what x-max-length and x-max-length-bytes are checked
 * against.  Delivered-unacked messages do not count (RabbitMQ).
 */
int64
mq_queue_ready_bytes_for_publish(MqQueue *q, int64 *bytes)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_SHARED);
	int64		own_dropped = 0;
	int64		own_dropped_bytes = 0;
	int64		unacked_bytes = 0;
	int64		ready;
	int64		local_bytes;
	dlist_iter	it;

	/*
	 * Our own entries dropped by overflow are in unacked (they are ACKING)
	 * but not yet in the backlog: count them apart.  The bytes of unacked
	 * entries are summed here rather than kept in a counter: the list is
	 * walked anyway, and it is bounded by what is in flight.
	 */
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_LEASED || t->state == MQ_T_ACKING)
			unacked_bytes += t->body_size;
		if (t->own && t->state == MQ_T_ACKING && t->owner == MyProc->pgprocno)
		{
			own_dropped++;
			own_dropped_bytes += t->body_size;
		}
	}
	ready = Max(qs->backlog - (qs->unacked - own_dropped), 0) - own_dropped;
	*bytes = Max(qs->backlog_bytes - (unacked_bytes - own_dropped_bytes), 0) -
		own_dropped_bytes;
	LWLockRelease(&qs->lock);
	/* plus what this transaction already published to q */
	ready += mqq_local_published(q, &local_bytes);
	*bytes += local_bytes;
	return ready;
}

/* Ready messages of q as they will be once this transaction commits (x-max-length) */
int64
mq_queue_ready_for_publish(MqQueue *q)
{
	int64		bytes;

	return mq_queue_ready_bytes_for_publish(q, &bytes);
}

/* Body bytes the live entry of msg_id in q records (-1: none) */
int32
mq_queue_body_size(MqQueue *q, int64 msg_id)
{
	MqQueueShared *qs;
	MqTracked  *t;
	int32		size = -1;

	if (q->max_length_bytes < 0)
		return -1;
	qs = mqq_queue_lock(q, LW_SHARED);
	t = mqq_tracked_find(qs, msg_id);
	if (t != NULL)
		size = t->body_size;
	LWLockRelease(&qs->lock);
	return size;
}
