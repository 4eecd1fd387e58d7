/*-------------------------------------------------------------------------
 *
 * queue_inspect.c
 *	  Looking at a queue's state without changing it: counts, browsing,
 *	  the delivery state of one message, and the lowest message log
 *	  segment a queue still refers to.
 *
 * These read what is tracked and, where the answer depends on entries not
 * scanned yet, the lanes from their scan positions on.  They hold the
 * queue lock in shared mode (mqq_queue_lock takes it exclusively only to
 * load a queue's state first).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xlog.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "queue/queue_int.h"

bool
mq_queue_has_state(MqQueue *q)
{
	return mqq_queue_shared(mqq_key(q), false) != NULL;
}

/*
 * Is q, a classic or quorum queue, unused: no state in shared memory (no
 * session used it since the server started) and nothing stored (each lane
 * one generation, empty)?  Then the views show zeros and the worker has
 * nothing to do there, without loading a state for it, which would stay
 * until the queue is deleted and count towards mq.max_queues (a consumer
 * group's dead-letter queue nobody reads, a queue declared ahead of use).
 * A queue that holds something is loaded: what it holds must be counted,
 * and may expire.  A queue found unused is recorded so (mqq_known_empty):
 * the next look, in any session, spares the tables until a state is made
 * for it, which any append does first.
 */
bool
mq_queue_unused(MqQueue *q)
{
	uint64		stamp;
	bool		standby;

	if (q->group != NULL || q->type == MQ_QUEUE_STREAM)
		return false;
	/* read before the look for a state (see KnownEmpty, queue_shmem.c) */
	stamp = mqq_known_empty_stamp();
	if (mq_queue_has_state(q))
		return false;

	/*
	 * Found so before, and no state made since: it is still empty.  Not on
	 * a standby, whose replay appends without states.
	 */
	standby = RecoveryInProgress();
	if (!standby && mqq_known_empty(q))
		return true;
	for (int lane = 0; lane < q->nlanes; lane++)
	{
		int			low,
					high;
		Oid			relid;
		Relation	rel;
		BlockNumber nblocks;

		if (!mqq_lane_gens(q->id, lane, &low, &high) || low != high)
			return false;
		relid = mqq_lane_relid(q->id, lane, low, false);
		if (!OidIsValid(relid) || (rel = try_relation_open(relid, AccessShareLock)) == NULL)
			return false;
		nblocks = RelationGetNumberOfBlocks(rel);
		relation_close(rel, AccessShareLock);
		if (nblocks > 0)
			return false;
	}
	if (!standby)
		mqq_known_empty_set(q, stamp);
	return true;
}

bool
mq_queue_known_empty(MqQueue *q)
{
	if (q->group != NULL || q->type == MQ_QUEUE_STREAM || RecoveryInProgress())
		return false;
	if (mqq_shared == NULL)
		mq_require_preload("inspecting queues");
	return mqq_known_empty(q);
}

/*
 * The earliest visible_at of the first committed entry of each lane of q
 * at or after the lane's scan position that is not tracked ahead of the
 * scan (those are on the tracked list, which the caller looked at); 0 if
 * there is none.  From MqQueueShared.oldest_known when a call before us
 * recorded it, else read from the entry logs and recorded when no entry
 * in front of one found was still in progress.  The caller holds the
 * queue lock, shared or exclusive.
 */
static TimestampTz
lanes_oldest_ready(MqQueue *q, MqQueueShared *qs)
{
	TimestampTz oldest = 0;
	bool		settled = true;
	LaneRels	lr;

	if (qs->oldest_known)
	{
		pg_read_barrier();
		return (TimestampTz) pg_atomic_read_u64(&qs->oldest_at);
	}
	mqq_lane_rels_init(&lr);
	for (int lane = 0; lane < qs->nlanes; lane++)
	{
		uint64		qpos = qs->lanes[lane].scan_pos;
		MqlogRowState st;
		TupleTableSlot *slot;
		MqAheadCursor ahead;

		mqq_ahead_cursor_init(&ahead, qs, lane);
		while (mqq_lane_read_next(&lr, q, qs, &qpos, &st, &slot) == MQLOG_READ_ROW)
		{
			if (st == MQLOG_ROW_COMMITTED && mqq_ahead_at(&ahead, qpos) == NULL)
			{
				bool		isnull;
				TimestampTz v = DatumGetTimestampTz(slot_getattr(slot, MQ_ENTRY_ATT_VISIBLE_AT, &isnull));

				if (oldest == 0 || v < oldest)
					oldest = v;
				break;
			}
			/* it may commit later, in front of what we find */
			if (st == MQLOG_ROW_IN_PROGRESS || st == MQLOG_ROW_OWN)
				settled = false;
			qpos = mqq_qpos_next(qpos);
		}
		mqq_ahead_cursor_end(&ahead);
	}
	mqq_lane_rels_close(&lr);

	/*
	 * Only set here, holding the lock shared (MqQueueShared.oldest_known);
	 * cleared by those holding it exclusively
	 */
	if (settled && !qs->oldest_known)
	{
		pg_atomic_write_u64(&qs->oldest_at, (uint64) oldest);
		pg_write_barrier();
		qs->oldest_known = true;
	}
	return oldest;
}

/*
 * What mq.queues shows of q: ready (and their body bytes), unacked, delayed
 * and total messages, consumers (sessions holding a lease, and waiting ones), the oldest ready
 * message and the last delivery.
 */
void
mq_queue_counts(MqQueue *q, MqQueueCounts *c, MqStreamPartition *parts)
{
	MqQueueShared *qs;
	TimestampTz now = GetCurrentTimestamp();
	dlist_iter	it;
	int			owners[64];
	int			nowners = 0;
	int64		not_ready_bytes = 0;

	memset(c, 0, sizeof(*c));
	if (parts != NULL && q->type == MQ_QUEUE_STREAM)
		memset(parts, 0, sizeof(MqStreamPartition) * q->nlanes);
	/* a standby has none of a non-durable queue's messages (see mqq_queue_lock) */
	if (!q->durable && RecoveryInProgress())
		return;
	/*
	 * A stream's messages are the offsets it retains, gaps included, their
	 * bytes and the oldest one's age
	 */
	if (q->type == MQ_QUEUE_STREAM)
	{
		for (int lane = 0; lane < q->nlanes; lane++)
		{
			MqStreamPartition p;

			mq_stream_partition(q, lane, &p);
			if (parts != NULL)
				parts[lane] = p;
			c->ready += Max(p.end_offset - p.first_offset, 0);
			c->ready_bytes += p.bytes;
			if (p.first_time != 0 &&
				(c->oldest_ready == 0 || p.first_time < c->oldest_ready))
				c->oldest_ready = p.first_time;
		}
		c->total = c->ready;
		return;
	}
	/* nothing to count: no state is loaded for it (mq_queue_unused) */
	if (mq_queue_unused(q))
		return;
	qs = mqq_queue_lock(q, LW_SHARED);
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_READY && (t->visible_at > now || t->until > now))
		{
			c->delayed++;
			not_ready_bytes += t->body_size;
		}
		else if (t->state == MQ_T_READY &&
				 (c->oldest_ready == 0 || t->visible_at < c->oldest_ready))
			c->oldest_ready = t->visible_at;
		if (t->state == MQ_T_LEASED || t->state == MQ_T_ACKING)
			not_ready_bytes += t->body_size;
		if (t->state == MQ_T_LEASED && t->owner >= 0)
		{
			bool		seen = false;

			for (int i = 0; i < nowners; i++)
				seen |= owners[i] == t->owner;
			if (!seen && nowners < lengthof(owners))
				owners[nowners++] = t->owner;
		}
	}
	c->total = Max(qs->backlog, 0);
	c->unacked = qs->unacked;
	c->ready = Max(qs->backlog - qs->unacked - c->delayed, 0);
	c->ready_bytes = Max(qs->backlog_bytes - not_ready_bytes, 0);
	c->consumers = nowners + qs->nwaiting;
	c->last_delivery = qs->last_delivery;

	/* oldest ready not yet scanned: the first committed entry of a lane */
	if (c->ready > 0)
	{
		TimestampTz v = lanes_oldest_ready(q, qs);

		if (v != 0 && (c->oldest_ready == 0 || v < c->oldest_ready))
			c->oldest_ready = v;
	}
	LWLockRelease(&qs->lock);
}

/* The delivery state of msg_id in q (see queue.h) */
bool
mq_queue_delivery_state(MqQueue *q, int64 msg_id, MqDeliveryState *st)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_SHARED);
	MqTracked  *t = mqq_tracked_find(qs, msg_id);
	bool		found = false;

	if (t != NULL && t->delivery_count > 0 &&
		(t->state == MQ_T_LEASED || t->state == MQ_T_READY))
	{
		st->delivery_count = t->delivery_count;
		st->leased = (t->state == MQ_T_LEASED);
		st->until = t->until;
		found = true;
	}
	LWLockRelease(&qs->lock);
	return found;
}

/*
 * Would the next take deliver tracked entry t (browse)?  Ready and due, or
 * leased with its lease run out (the take returns it first); not what the
 * take would dead-letter instead (expired, over x-delivery-limit).
 */
static bool
peek_ready(MqQueue *q, MqTracked *t, TimestampTz now)
{
	if (t->state == MQ_T_LEASED)
		return t->until <= now && !mqq_entry_dead(q, t, now);
	return t->state == MQ_T_READY && t->visible_at <= now && t->until <= now &&
		!mqq_entry_dead(q, t, now);
}

/* qsort order of returns: see mqq_tracked_returned */
static int
peek_return_cmp(const void *a, const void *b)
{
	return mqq_return_cmp((*(MqTracked *const *) a)->returned,
						  (*(MqTracked *const *) b)->returned);
}

/*
 * Browse: ids of up to n messages a consumer would be given now, in the
 * order it would get them (mq_queue_take's): on a quorum queue the
 * returns first, in the order they came back, then those whose lease ran
 * out, in the order they were delivered; then lane by lane, highest first,
 * the tracked entries and the entries not scanned yet.  Nothing is
 * changed: the lock is shared.
 */
int
mq_queue_peek(MqQueue *q, int n, int64 *msg_ids, int32 *delivery_counts)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_SHARED);
	TimestampTz now = GetCurrentTimestamp();
	int			got = 0;
	LaneRels	lr;
	MqOrderGate gate;

	/* an ordered queue: what the groups' order lets through (queue_order.c) */
	mqq_gate_init(&gate, q, qs, true, now);
	if (qs->returns_first && qs->ntracked > 0)
	{
		MqTracked **ts = palloc(sizeof(MqTracked *) * qs->ntracked);

		for (int pass = 0; pass < 2 && got < n; pass++)
		{
			int			nts = 0;
			dlist_iter	it;

			/* pass 0: returned and ready; pass 1: leases run out */
			dlist_foreach(it, &qs->tracked)
			{
				MqTracked  *t = dlist_container(MqTracked, node, it.cur);

				/* (those tracked ahead of the scan wait for it, below) */
				if ((pass == 0 ? t->state == MQ_T_READY && t->returned != 0 :
					 t->state == MQ_T_LEASED) && !mqq_is_ahead(qs, t) &&
					peek_ready(q, t, now))
					ts[nts++] = t;
			}
			if (nts > 1)
				qsort(ts, nts, sizeof(MqTracked *), peek_return_cmp);
			for (int i = 0; i < nts && got < n; i++)
			{
				if (!mqq_gate_pass(&gate, ts[i]))
					continue;
				delivery_counts[got] = ts[i]->delivery_count;
				msg_ids[got++] = ts[i]->msg_id;
			}
		}
		pfree(ts);
	}

	mqq_lane_rels_init(&lr);
	for (int lane = qs->nlanes - 1; lane >= 0 && got < n; lane--)
	{
		TupleTableSlot *slot;
		uint64		qpos;
		MqlogRowState st;
		dlist_iter	it;
		MqAheadCursor ahead;

		dlist_foreach(it, &qs->tracked)
		{
			MqTracked  *t = dlist_container(MqTracked, node, it.cur);

			if (got >= n)
				break;
			if (mq_qpos_lane(t->qpos) != lane)
				continue;
			/* taken by id ahead of the scan: in its place, below */
			if (mqq_is_ahead(qs, t))
				continue;
			if (t->state == MQ_T_PENDING)
			{
				/* its publisher may have committed since a consumer looked */
				MqTracked	probe;

				if (!mqq_tracked_row(&lr, q, t, &st, &slot) || st != MQLOG_ROW_COMMITTED)
					continue;
				memset(&probe, 0, sizeof(probe));
				mqq_tracked_fill(&probe, slot);
				probe.qpos = t->qpos;
				if (peek_ready(q, &probe, now) && mqq_gate_pass(&gate, &probe))
				{
					delivery_counts[got] = probe.delivery_count;
					msg_ids[got++] = probe.msg_id;
				}
				continue;
			}
			/* returns and run-out leases of a quorum queue came first */
			if (qs->returns_first && (t->returned != 0 || t->state == MQ_T_LEASED))
				continue;
			if (peek_ready(q, t, now) && mqq_gate_pass(&gate, t))
			{
				delivery_counts[got] = t->delivery_count;
				msg_ids[got++] = t->msg_id;
			}
		}
		qpos = qs->lanes[lane].scan_pos;
		mqq_ahead_cursor_init(&ahead, qs, lane);
		while (got < n && mqq_lane_read_next(&lr, q, qs, &qpos, &st, &slot) == MQLOG_READ_ROW)
		{
			MqTracked  *a = st == MQLOG_ROW_COMMITTED ? mqq_ahead_at(&ahead, qpos) : NULL;

			if (a != NULL)
			{
				/* tracked ahead of the scan: as it is now, in its place */
				if (peek_ready(q, a, now) && mqq_gate_pass(&gate, a))
				{
					delivery_counts[got] = a->delivery_count;
					msg_ids[got++] = a->msg_id;
				}
				else if (a->state == MQ_T_READY)
					mqq_gate_note_ready(&gate, a);
			}
			else if (st == MQLOG_ROW_COMMITTED)
			{
				MqTracked	probe;

				memset(&probe, 0, sizeof(probe));
				mqq_tracked_fill(&probe, slot);
				probe.qpos = qpos;
				if (peek_ready(q, &probe, now) && mqq_gate_pass(&gate, &probe))
				{
					delivery_counts[got] = probe.delivery_count;
					msg_ids[got++] = probe.msg_id;
				}
				else
					mqq_gate_note_ready(&gate, &probe);
			}
			qpos = mqq_qpos_next(qpos);
		}
		mqq_ahead_cursor_end(&ahead);
	}
	mqq_gate_end(&gate);
	mqq_lane_rels_close(&lr);
	LWLockRelease(&qs->lock);
	return got;
}

/*
 * Lowest message id that an unsettled entry of q refers to: the
 * tracked entries (a PENDING one by its row: its publisher may have
 * committed since the scan passed it), then every committed entry not
 * scanned yet (this reads the backlog, so it is for maintenance only).  The caller holds an
 * exclusive lock on the segments it wants to drop, so no entry referring
 * to them is still being written, and turns the id into a segment.
 *
 * It stops at the first id at or below floor (queue.h): a backlog whose
 * head refers to the oldest segment the caller could drop is not read to
 * its end on every pass of the worker.
 */
int64
mq_queue_min_msg_id(MqQueue *q, int64 floor)
{
	MqQueueShared *qs;
	int64		min = PG_INT64_MAX;
	dlist_iter	it;
	LaneRels	lr;

	if (q->type == MQ_QUEUE_STREAM)
		return mqq_stream_min_msg_id(q);
	qs = mqq_queue_lock(q, LW_SHARED);
	mqq_lane_rels_init(&lr);

	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (min <= floor)
			break;
		if (t->state == MQ_T_SETTLED)
			continue;
		if (t->state == MQ_T_PENDING)
		{
			/*
			 * Its msg_id is a placeholder until a take looks at it again,
			 * and its publisher may have committed since (and released its
			 * lock on the segment): the entry row has the real id.  The
			 * row's columns are there only once it is committed (or ours);
			 * one still in progress, or that cannot be read, keeps
			 * everything, as in the scan below.
			 */
			MqlogRowState st;
			TupleTableSlot *slot;
			bool		isnull;

			if (!mqq_tracked_row(&lr, q, t, &st, &slot))
				min = 0;
			else if (st == MQLOG_ROW_COMMITTED || st == MQLOG_ROW_OWN)
				min = Min(min, DatumGetInt64(slot_getattr(slot, MQ_ENTRY_ATT_MSG_ID,
														  &isnull)));
			else if (st != MQLOG_ROW_ABORTED)
				min = 0;
			continue;
		}
		if (t->msg_id > 0)
			min = Min(min, t->msg_id);
	}
	for (int lane = 0; lane < qs->nlanes; lane++)
	{
		uint64		qpos = qs->lanes[lane].scan_pos;
		MqlogRowState st;
		TupleTableSlot *slot;

		while (min > floor &&
			   mqq_lane_read_next(&lr, q, qs, &qpos, &st, &slot) == MQLOG_READ_ROW)
		{
			if (st == MQLOG_ROW_COMMITTED || st == MQLOG_ROW_OWN)
			{
				bool		isnull;
				int64		msg_id = DatumGetInt64(slot_getattr(slot, MQ_ENTRY_ATT_MSG_ID,
																&isnull));

				min = Min(min, msg_id);
			}
			else if (st == MQLOG_ROW_IN_PROGRESS)
				min = 0;		/* cannot tell yet: keep everything */
			qpos = mqq_qpos_next(qpos);
		}
	}
	mqq_lane_rels_close(&lr);
	LWLockRelease(&qs->lock);
	return min;
}

/* The event counters of q's state (queue.h); zeros if it has none */
void
mq_queue_counters(MqQueue *q, MqQueueCounters *out)
{
	MqQueueShared *qs;

	memset(out, 0, sizeof(*out));
	/* a standby has none of a non-durable queue's state (mq_queue_counts) */
	if (!q->durable && RecoveryInProgress())
		return;
	/* they count from the state's making: none yet, nothing counted */
	if (!mq_queue_has_state(q))
		return;
	qs = mqq_queue_lock(q, LW_SHARED);
	*out = qs->counters;
	LWLockRelease(&qs->lock);
}

/*
 * Messages of q leased now: LEASED whose lease has not run out, and ACKING
 * by another session (being settled by an open transaction, which may
 * still roll back; this session's own settlements are gone for it), in
 * the order of the tracked list (the shared lock: nothing changes).
 */
int
mq_queue_in_flight(MqQueue *q, int max, int64 *msg_ids, int32 *delivery_counts,
				   TimestampTz *untils)
{
	MqQueueShared *qs = mqq_queue_lock(q, LW_SHARED);
	TimestampTz now = GetCurrentTimestamp();
	int			got = 0;
	dlist_iter	it;

	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (got >= max)
			break;
		if (!((t->state == MQ_T_LEASED && t->until > now) ||
			  (t->state == MQ_T_ACKING && t->owner != MyProc->pgprocno)))
			continue;
		msg_ids[got] = t->msg_id;
		delivery_counts[got] = t->delivery_count;
		untils[got++] = t->until;
	}
	LWLockRelease(&qs->lock);
	return got;
}
