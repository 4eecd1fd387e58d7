/*-------------------------------------------------------------------------
 *
 * queue_int.h
 *	  Private structs and prototypes shared by the files of src/queue/.
 *
 * Nothing outside src/queue/ includes this header: the rest of queue_ext
 * uses queue/queue.h.
 *
 * Invariants, per queue and priority lane:
 *	- every entry before the lane's floor is settled (acked, dead-lettered,
 *	  or written by an aborted transaction);
 *	- every entry between the floor and scan_pos that is not settled is on
 *	  the queue's tracked list (LEASED, READY for redelivery, ACKING by an
 *	  open transaction, or PENDING: its publisher had not finished when we
 *	  scanned it);
 *	- entries at or after scan_pos have not been looked at, but for a few
 *	  tracked ahead of the scan (nahead of them): entries settled before a
 *	  restart (the replay), and entries taken by id before the scan reached
 *	  them (mq_queue_lease_ids, pgmq's delete or set_vt of a message deep
 *	  in a backlog).  The scan passes over each as it is when it gets
 *	  there, and nothing takes a ready one before that: it keeps its place.
 * Publishers commit out of order, so an entry is never skipped because a
 * later one is already visible: it stays PENDING until its transaction
 * ends, and the floor cannot pass it.  Aborted entries are simply dropped.
 *
 * The tracked list is bounded by what is in flight, not by the backlog or
 * the history.  Settlements go to the settlement log in the settling
 * transaction; every MQ_FLOOR_INTERVAL settlements a FLOOR record per lane
 * is added so that a restart replays only what lies above the floors.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_QUEUE_INT_H
#define MQ_QUEUE_INT_H

#include "postgres.h"

#include "access/xlogdefs.h"
#include "executor/tuptable.h"
#include "lib/ilist.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "am/mqlog.h"
#include "queue/queue.h"

#define MQ_MAX_LANES 256		/* 1 + the highest x-max-priority */

/*
 * Locks of queue state, in the order they are taken: while one is held,
 * only locks further down the list may be requested.
 *
 *	0. the queue's object lock (heavyweight: a relation lock on its anchor
 *	   mq_storage.a<id>, or the object lock classid mq.cat_queue, objid the queue
 *	   id, of a queue declared before anchors: mq_queue_lock_tag; a
 *	   consumer group's is its stream's; mq.queue_delete takes the object
 *	   lock and then the anchor's): AccessShareLock
 *	   to the end of the transaction by every use of the queue's state
 *	   (mqq_queue_lock; the inspection views only try it, and let it go
 *	   once they have read the queue: mq_queue_inspect_begin),
 *	   AccessExclusiveLock by mq.queue_delete before it
 *	   touches anything of the queue, ExclusiveLock by publishers to a
 *	   limited queue (publish.c).  Taken before any LWLock below and before
 *	   any lane table's relation lock, so a delete never holds some of a
 *	   queue's tables while it waits for another.  The maintenance worker
 *	   only tries it (mq_lock_nowait): it never waits for a user's lock.
 *
 *	1. the queue hash lock (MqSharedState.lock): looking a queue up in the
 *	   hash (shared), adding or removing its entry (exclusive);
 *	2. a queue's gen_lock: held shared by every append while it reads the
 *	   lane's write generation and writes its rows, exclusive only to switch
 *	   a lane to its next generation, so that no append is in flight then;
 *	3. a queue's lock, "the queue lock": everything else in MqQueueShared,
 *	   the queue's tracked list and the entries on it;
 *	4. the tracked pool's spinlock (MqSharedState.pool_lock): the free list
 *	   of tracked entries.  Nothing else is taken while it is held.
 *	5. the summary lock (MqSharedState.summary_lock): the hash of stream
 *	   generation summaries (mqq_gen_progress_get and friends).  Taken
 *	   alone: nothing else is held when it is requested, nothing requested
 *	   while it is held.
 *	6. the known-empty lock (MqSharedState.empty_lock): the record of queues
 *	   found unused (mqq_known_empty and friends, queue_shmem.c).  Taken
 *	   alone, like 5.
 *
 * Streams add one lock between 2 and 3:
 *
 *	2b. a partition's offset lock (mqq_offset_lock: one of a fixed set of
 *	   MQ_OFFSET_LOCKS, chosen by a hash of database, queue and lane):
 *	   held by an append to a stream partition from taking its offsets to
 *	   writing its rows, so that offsets grow in the physical order of the
 *	   entry log; it guards MqLaneState.next_offset and offsets_known.
 *	   Taken under gen_lock (shared by appends, exclusive by a rotation
 *	   that writes the new generation's base offset); one at a time; the
 *	   queue lock is never requested while it is held, but the entry log's
 *	   pages (and in a linked publish the message log's) are locked under
 *	   it.  Two partitions may share a lock: that only serialises them.
 *
 * Where they nest: dropping a queue's state takes 1, 3, 4
 * (mq_queue_state_drop); switching a generation takes 2, then 3
 * (mq_queue_rotate); whoever holds 3 takes 4 to allocate or free a tracked
 * entry.  Looking a queue up releases 1 before it takes 3 (mqq_queue_lock),
 * an append releases 3 before it takes 2 (queue_append_begin), and 1 and 2
 * are never held together.
 *
 * Beyond these: the queue lock is held while the lanes are read, so
 * relation locks and buffer content locks of the lane tables are taken
 * under it (a backend holding a lane table in AccessExclusiveLock must
 * therefore never wait for the queue lock, an offset lock or gen_lock: see
 * mq_queue_state_drop, and gen_drop in queue_stream.c, which only tries
 * the queue lock after it has dropped a generation);
 * gen_lock is held while the entry row is written; in a linked publish
 * the message log page then the entry log page are locked under it, and
 * the message log segment is opened, possibly created by DDL, before
 * gen_lock is taken (publish_linked in publish.c, the one place that
 * takes them together).
 * Consumer groups of a stream: each has a queue lock of its own (3); a
 * group's state is locked only after its stream's own state has been
 * looked up, locked and released again (mqq_queue_lock), so two queue
 * locks are never held together; a group reads its stream's
 * lanes[].write_gen without the stream's lock.
 * Condition variables may be broadcast with the queue lock held.  The
 * worker registry (worker_shmem.c) has a spinlock of its own that never
 * nests with these.
 */

/* ---------- entry logs and settlement logs (queue_lane.c) ---------- */

/*
 * Columns of an entry row: the entry stored as (visible_at,
 * msg_id, expires_at, delivery_count, body_size) with expires_at NULL for
 * "never", delivery_count NULL for a fresh message and body_size NULL on
 * queues without x-max-length-bytes, which mqlog does not store at all
 * (trailing NULLs); visible_at first, because for a message published for
 * now it equals the message's published_at, and a linked insert logs
 * leading bytes shared with the message row only once.  body_size is in
 * the entry so that the ready bytes of a queue are known when an entry is
 * taken or settled, and rebuilt after a restart, without reading the
 * message log.
 */
#define MQ_ENTRY_ATT_VISIBLE_AT	1
#define MQ_ENTRY_ATT_MSG_ID		2
#define MQ_ENTRY_ATT_EXPIRES_AT	3
#define MQ_ENTRY_ATT_DELIVERY_COUNT 4
#define MQ_ENTRY_ATT_BODY_SIZE	5
/*
 * Streams only: the entry's offset in its partition (NULL elsewhere, and
 * so not stored: classic and quorum entry rows are unchanged).  Entry logs
 * created before it have five columns.
 */
#define MQ_ENTRY_ATT_OFFSET		6
#define MQ_ENTRY_ATT_GROUP_HASH	7	/* ordered queues, streams */
/*
 * Streams: mq_tag_hash of the message's tag, NULL for a message without
 * one (so an untagged entry row is unchanged).  A consumer group with a tag
 * filter skips an entry whose hash no tag of the filter has without
 * reading its message.  Entry logs created before it have seven columns:
 * their entries' tags are unknown (the message is fetched), which is why
 * NULL means "no tag" only in a log that has the column.
 */
#define MQ_ENTRY_ATT_TAG_HASH	8
#define MQ_ENTRY_NATTS			MQ_ENTRY_ATT_TAG_HASH	/* the most an entry log has */

/* Is a settlement-log record kind a settlement of its entry? */
static inline bool
mq_settle_kind_settles(int16 kind)
{
	return kind == MQ_SETTLE_ACK || kind == MQ_SETTLE_DEAD ||
		kind == MQ_SETTLE_DROPPED || kind == MQ_SETTLE_RETRY;
}

/*
 * A settlement record is one int8: the kind in the top 8 bits (where a
 * position has its lane, which the settlement log's name gives) and the
 * rest of the entry's position.
 */
#define MQ_SETTLE_KIND_SHIFT	MQ_QPOS_LANE_SHIFT
#define MQ_SETTLE_POS_MASK		((UINT64CONST(1) << MQ_SETTLE_KIND_SHIFT) - 1)

static inline int64
mq_settle_encode(int16 kind, uint64 qpos)
{
	return (int64) (((uint64) kind << MQ_SETTLE_KIND_SHIFT) | (qpos & MQ_SETTLE_POS_MASK));
}

static inline int16
mq_settle_kind(int64 rec)
{
	return (int16) ((uint64) rec >> MQ_SETTLE_KIND_SHIFT);
}

static inline uint64
mq_settle_qpos(int64 rec, int lane)
{
	return ((uint64) lane << MQ_QPOS_LANE_SHIFT) | ((uint64) rec & MQ_SETTLE_POS_MASK);
}

/* Append a settlement record for the entry at qpos of queue q */
extern void mqq_settle_append(MqQueue *q, int16 kind, uint64 qpos);

/*
 * Relation of a lane generation's entry log (settle = false) or
 * settlement log (settle = true); InvalidOid if it does not exist.
 */
extern Oid	mqq_lane_relid(int32 queue_id, int lane, int gen, bool settle);

/*
 * The entry log of a generation that shared state says exists (a lane's
 * write generation): on a miss, looked for again past our catalog
 * snapshot and syscache (mq_relid_fresh)
 */
extern Oid	mqq_lane_relid_fresh(int32 queue_id, int lane, int gen);

/*
 * Settlement log of a lane generation of q: its s<queue>_<lane>_<gen>, or
 * for a consumer group's view the group's g<queue>_<group>_<lane>_<gen>
 */
extern Oid	mqq_settle_relid(MqQueue *q, int lane, int gen);

/* Create both tables of a lane generation (as the extension owner) */
extern void mqq_lane_create(MqQueue *q, int lane, int gen);

/* Drop both tables of a lane generation (as the extension owner) */
extern void mqq_lane_drop(int32 queue_id, int lane, int gen);
extern bool mqq_group_logs_trylock(int32 queue_id, int lane, int gen);

/*
 * Append entries to an entry log relation (opened by the caller, who chose
 * the generation), in order; qpos[] gets their positions.  With payload
 * (n rows of MQ_ENTRY_PAYLOAD_NATTS values, a stream's log with segment
 * number inline_segno) the rows carry their messages, and each entry's
 * msg_id is set to its row's address (queue.h, "inline").
 */
extern void mqq_entry_append(Relation rel, int lane, int gen, MqEntry *entries, int n,
							 const Datum *payload, const bool *payload_null,
							 int64 inline_segno, uint64 *qpos);

/* Set the msg_id column of a formed entry row (in a critical section too) */
extern void mqq_entry_set_msg_id(HeapTuple tup, int64 msg_id);

/* Lowest and highest existing generation of a lane (false: none) */
extern bool mqq_lane_gens(int32 queue_id, int lane, int *low, int *high);

/*
 * The columns of an entry row, and in a stream's entry log the message's
 * (payload: MQ_ENTRY_PAYLOAD_NATTS log columns; NULL: none, as NULLs)
 */
extern void mqq_entry_values(MqEntry *e, TupleDesc desc, const Datum *payload,
							 const bool *payload_null, Datum *values, bool *isnull);

/* An entry's position must fit its bits of a queue position */
extern void mqq_check_lane_block(Relation rel, ItemPointer tid);
extern int64 mqq_entry_log_inline_segno(Relation rel);

typedef enum MqTrackedState
{
	MQ_T_PENDING,				/* publisher still in progress */
	MQ_T_READY,					/* deliverable (from lease_until on) */
	MQ_T_LEASED,				/* delivered, waiting for settlement */
	MQ_T_ACKING,				/* settled by an open transaction */
	MQ_T_SETTLED				/* settled; dropped once below the floor */
} MqTrackedState;

/*
 * A tracked entry, from the pool in MqSharedState.  On a queue's tracked
 * list it is protected by that queue's lock; on the free list, by the
 * pool's spinlock.
 */
typedef struct MqTracked
{
	dlist_node	node;			/* in queue's tracked list, or free list */
	int64		msg_id;
	uint64		qpos;
	uint8		state;			/* MqTrackedState */
	bool		own;			/* our own transaction's entry, taken by an
								 * overflow (drop-head) before it commits */
	bool		redelivered;
	uint8		last_return;	/* MqReturnReason: why it last went back to
								 * ready, for settle's error messages */
	int32		delivery_count;
	int32		free_returns;	/* returns that do not count toward
								 * x-delivery-limit (nack with requeue) */
	int32		body_size;		/* body bytes (x-max-length-bytes), else 0 */
	uint32		group_hash;		/* ordered queues: its message group, 0: none */
	uint32		tag_hash;		/* streams: mq_tag_hash of its tag */
	bool		tag_known;		/* tag_hash read from the entry (its log has
								 * the column) */
	int			owner;			/* pgprocno of the holder, -1: none */
	int			prev_owner;		/* holder whose lease ran out, until retaken */
	uint32		consumer_hash;	/* consumer name of the holder */
	uint32		returned;		/* returns-first queues: order of delivery
								 * (LEASED, ACKING) or of return (READY),
								 * 0: neither (see mqq_tracked_returned) */
	TimestampTz until;			/* LEASED: lease end; READY: not before */
	TimestampTz visible_at;
	TimestampTz expires_at;
	int64		offset;			/* streams: offset in its partition, else -1 */
	uint64		receipt;		/* LEASED: the nonce of this delivery's
								 * receipt (consume_sql.c), 0: none */
	bool		detached;		/* LEASED: not bound to the holder's session
								 * (mq.consume(session_bound => false)): its
								 * end does not return it, the lease does */
	int			lease_pid;		/* detached LEASED: the process and local */
	LocalTransactionId lease_lxid;	/* transaction that took the lease: it
									 * does not run out before that
									 * transaction ends (pgmq's read holds
									 * its row lock until then) */
} MqTracked;

/*
 * Key of the queue hash: a queue's own state has group_id 0; each consumer
 * group of a stream has a state of its own over the stream's lanes.
 */
typedef struct MqQueueKey
{
	Oid			dbid;
	int32		queue_id;
	int32		group_id;
} MqQueueKey;

static inline bool
mqq_key_equal(MqQueueKey a, MqQueueKey b)
{
	return a.dbid == b.dbid && a.queue_id == b.queue_id && a.group_id == b.group_id;
}

/*
 * A priority lane is a chain of generations, each an entry log
 * q<queue>_<lane>_<gen> and a settlement log s<queue>_<lane>_<gen>.
 * Publishers append to write_gen; once the worker switches to the next
 * generation (holding gen_lock exclusively, so no append is in flight), the
 * old one never grows again and a reader that reaches its end moves on.
 * Generations below the floor are dropped whole: disk use follows the live
 * backlog, not the history.
 *
 * Protected by the queue lock, except as noted.
 */
typedef struct MqLaneState
{
	uint64		scan_pos;		/* next entry to examine */
	uint64		ahead_low;		/* at or below the position of every entry
								 * tracked ahead of the scan in this lane
								 * (PG_UINT64_MAX: none), so that the scan
								 * looks for one only where there is one */
	uint64		mark;			/* MARK record written: entries below it may
								 * have been delivered (see MQ_MARK_AHEAD) */
	int			low_gen;		/* oldest generation still present */

	/*
	 * Generation publishers append to.  Rotation switches it holding
	 * gen_lock and the queue lock, both exclusively, and a load sets it
	 * under the queue lock: appenders read it under gen_lock, readers of
	 * the lane under the queue lock, and rotation, which alone switches it,
	 * with neither.
	 */
	int			write_gen;

	/*
	 * Last FLOOR record written.  No lock: it only spares writing the same
	 * FLOOR twice, and is read and written by mq_queue_write_floors after
	 * it has released the queue lock (the append must not run under it).
	 * A stale value costs a redundant FLOOR record, or one written later
	 * than it could have been (for instance when the transaction that
	 * wrote a FLOOR rolls back); a restart then replays a little more.
	 * Replay takes the highest committed FLOOR of each lane, and every
	 * settlement above it is still in the logs, so neither is an error.
	 */
	uint64		floor_written;

	/*
	 * Streams: the partition's next offset, known once an append has read
	 * it from the end of the entry log (after a restart, or when the hash
	 * entry was made).  Protected by the partition's offset lock (2b).
	 */
	bool		offsets_known;
	Oid			offsets_for;	/* the queue's first lane when they were read:
								 * a stream re-created with the same id (DROP
								 * and CREATE EXTENSION) reads them again */
	int64		next_offset;

	/*
	 * Consumer groups: offset of the entry at scan_pos (one past the last
	 * scanned), -1 until a scan or the load knew it; under the queue lock.
	 */
	int64		scan_offset;
	int64		dead_lettered;	/* groups: DLQ copies (DEAD records replayed,
								 * and since the load) */
} MqLaneState;

/*
 * A queue's state: an entry of the queue hash.
 */
typedef struct MqQueueShared
{
	/*
	 * Set when the hash entry is made, under the hash lock exclusively
	 * (nobody can find the entry before); the locks and cv once per slot,
	 * since dynahash reuses removed entries without clearing them and a
	 * backend may still wait on a removed entry's lock.
	 */
	MqQueueKey	key;			/* hash key: must be first */
	uint32		magic;			/* lock, gen_lock and cv initialised */
	LWLock		lock;			/* the queue lock (see below) */
	LWLock		gen_lock;		/* appenders share it; switching gens takes it */
	ConditionVariable cv;		/* broadcast when something may be taken */

	/* Set holding the hash lock and the queue lock; read under the latter */
	bool		dropped;		/* removed from the hash: look again */

	/*
	 * Protected by the queue lock.  (Making the entry resets dropped,
	 * loaded, tracked, ntracked and nwaiting under the hash lock alone.)
	 */
	bool		loaded;
	bool		loaded_in_recovery; /* by a hot standby: WAL replay does not
									 * maintain it, reload once more WAL has
									 * been replayed since loaded_lsn */
	XLogRecPtr	loaded_lsn;		/* replay position when loaded in recovery */
	Oid			lane0;			/* identifies the queue across re-creations */
	int			nlanes;
	/* what a return needs of the queue's arguments, without the catalog
	 * (a session end or an abort returns messages outside any query) */
	int32		delivery_limit; /* x-delivery-limit, -1: none */
	bool		drop_head_limit;	/* x-max-length or x-max-length-bytes with
									 * x-overflow drop-head */
	int64		backlog;		/* committed, unsettled entries */
	int64		backlog_bytes;	/* their body bytes (x-max-length-bytes) */
	int64		unacked;		/* LEASED + ACKING */
	int32		ntracked;
	int32		nwaiting;
	int32		settled_since_floor;
	int32		nahead;			/* tracked entries at or after their lane's
								 * scan position (see the invariants above) */
	bool		returns_first;	/* quorum: returned messages go first */
	bool		leases_ran_out; /* a lease ran out and made its message
								 * ready since the worker's last expiry
								 * take (mq_queue_leases_ran_out) */
	uint32		return_seq;		/* last MqTracked.returned handed out */
	TimestampTz last_delivery;
	dlist_head	tracked;		/* MqTracked entries of this queue */

	/*
	 * Classic and quorum queues: the earliest visible_at of the lanes'
	 * first committed entries at or after their scan positions that are
	 * not tracked ahead (0: none), as mq.queues last read it from the entry
	 * logs (mq_queue_counts), so that the view does not open and read every
	 * queue's entry logs on every call.  Entries are appended in order and
	 * never change, so only three things change the answer, and each
	 * clears oldest_known holding the queue lock exclusively: a scan
	 * moving (scan_next), an entry tracked ahead of the scan
	 * (mqq_track_ahead), a publish committing (its commit callback, which
	 * follows the commit itself; the load clears it too).  It is recorded
	 * only when no entry in front of a found one was in progress (or the
	 * reader's own).  Readers holding the lock shared only set it:
	 * oldest_at first, then oldest_known (pg_write_barrier); two of them
	 * may record different values when a publish commits between their
	 * reads, each right at its time, until that commit's callback clears
	 * it.
	 */
	bool		oldest_known;
	pg_atomic_uint64 oldest_at;

	/*
	 * Consumer groups (key.group_id != 0): the stream's own state, whose
	 * lanes' write_gen tells the group's reads when a generation is closed
	 * (read without its lock: it only grows, and a stale value only delays
	 * moving on), and the retry delays of failed deliveries (RocketMQ's
	 * backoff; the last repeats).  Set under the queue lock.
	 */
	struct MqQueueShared *stream;
	int32		nretry_delays;	/* 0: not a group */
	int64		retry_delays_us[MQ_MAX_RETRY_DELAYS];

	/*
	 * Event counters for mq.metrics (queue.h), under the queue lock held
	 * exclusively by whoever counts; zeroed when the hash entry is made.
	 */
	MqQueueCounters counters;

	/*
	 * Protected by the queue lock, except as MqLaneState says.  MQ_MAX_LANES
	 * of them, in a block of their own that the slot keeps for good (given
	 * when the slot is first used, like its locks): in the slot they made it
	 * 19 kB, so that a listing of every queue (mq.queues) touched one page
	 * of shared memory per queue, and a new backend's first listing took a
	 * page fault for each (a quarter of that call at 1,000 queues); without
	 * them eight slots share a page.
	 */
	MqLaneState *lanes;
} MqQueueShared;

/*
 * Is the slot qs, whose lock the caller holds, still the live state of
 * key?  A slot is removed when its queue is deleted and may then be reused
 * for another queue's state (mqq_queue_shared).
 */
static inline bool
mqq_slot_is(MqQueueShared *qs, MqQueueKey key)
{
	return !qs->dropped && mqq_key_equal(qs->key, key);
}

/*
 * The one shared struct of queue state, sized by mq.max_in_flight.  The
 * queue hash itself is a separate shared hash table (mq.max_queues).
 */
typedef struct MqSharedState
{
	/* Immutable after startup */
	int			tranche_id;		/* of every LWLock of queue state */

	LWLock		lock;			/* the queue hash lock */

	/* Offset locks of stream partitions (2b), initialised at startup */
#define MQ_OFFSET_LOCKS 128
	LWLock		offset_locks[MQ_OFFSET_LOCKS];

	LWLock		summary_lock;	/* the hash of stream generation summaries (5) */

	/*
	 * The record of queues found unused (6), and the count of queue states
	 * made or dropped, bumped holding empty_lock (queue_shmem.c)
	 */
	LWLock		empty_lock;
	pg_atomic_uint64 states_made;

	/* Protected by pool_lock */
	slock_t		pool_lock;		/* the tracked pool's spinlock */
	dlist_head	free_tracked;
	int32		nfree;			/* also read without it, as a hint */

	/* Lane blocks given to slots of the queue hash, under the hash lock */
	int32		lane_blocks_used;

	MqTracked	pool[FLEXIBLE_ARRAY_MEMBER];	/* mq.max_in_flight of them */
} MqSharedState;

typedef enum MqLocalKind
{
	MQ_L_LEASE,					/* lease taken in this transaction */
	MQ_L_ACK,					/* settlement pending in this transaction */
	MQ_L_PUBLISH,				/* entries appended in this transaction */
	MQ_L_DEAD,					/* a consumer group's DLQ copy of a message
								 * of lane msg_id: counted at commit */
	MQ_L_COUNT					/* add msg_id to counter bytes at commit */
} MqLocalKind;

/* Relations of lane generations opened during one operation */
typedef struct LaneRels
{
	int			n;
	struct
	{
		int			lane;
		int			gen;
		Relation	rel;
		TupleTableSlot *slot;
		MqlogReadCache cache;	/* size and pinned block of rel */
	}			e[8];
} LaneRels;

/*
 * When may a group's message whose delivery failed (nack, lease expiry) be
 * delivered again: after the group's next retry delay, by its retries so
 * far; at once when it is over max_retries (it goes to the DLQ) and on
 * queues that are not groups.
 */
static inline TimestampTz
mqq_retry_until(MqQueueShared *qs, int32 delivery_count, int32 free_returns,
				TimestampTz now)
{
	int			i = Max(delivery_count - 1, 0);

	if (qs->nretry_delays == 0 ||
		(qs->delivery_limit >= 0 && delivery_count - free_returns > qs->delivery_limit))
		return 0;
	return now + qs->retry_delays_us[Min(i, qs->nretry_delays - 1)];
}

/*
 * Wake consumers of qs: a consumer group's wait on their stream's
 * condition variable (publishes broadcast there), so wake that too
 */
static inline void
mqq_wake(MqQueueShared *qs)
{
	ConditionVariableBroadcast(&qs->cv);
	if (qs->stream != NULL)
		ConditionVariableBroadcast(&qs->stream->cv);
}

/* Position just after qpos */
static inline uint64
mqq_qpos_next(uint64 qpos)
{
	return qpos + 1;
}

/* ---------- ordered queues (queue_order.c) ---------- */

/* Held-back messages a take scans past before it stops (queue_take.c) */
#define MQ_ORDER_SCAN_MAX 1024

/* Which message groups may deliver now, built per take or browse */
typedef struct MqOrderGate
{
	struct HTAB *groups;		/* NULL: not an ordered queue (or mode) */
} MqOrderGate;

/* Build the gate from q's tracked list (active false: a gate that passes all) */
extern void mqq_gate_init(MqOrderGate *gate, MqQueue *q, MqQueueShared *qs,
						  bool active, TimestampTz now);

/* May ready t be delivered now?  If so its group is busy from now on. */
extern bool mqq_gate_pass(MqOrderGate *gate, MqTracked *t);

/* t stays ready (delayed, or held back): later ones of its group wait */
extern void mqq_gate_note_ready(MqOrderGate *gate, MqTracked *t);
extern void mqq_gate_end(MqOrderGate *gate);

/*
 * Does q record every delivery (MQ_SETTLE_DELIVERED), so that delivery
 * counts survive restarts and failover?  Quorum queues do, as RabbitMQ's
 * keep the count in their replicated log, and so does every queue with an
 * x-delivery-limit, which would otherwise start counting again after each
 * crash.  Other queues only write a MARK every few blocks of entries.
 */
static inline bool
mqq_counts_deliveries(MqQueue *q)
{
	return q->type == MQ_QUEUE_QUORUM || q->delivery_limit >= 0;
}

/*
 * Is t, not leased, over its queue's x-delivery-limit?  Every delivery of
 * an unsettled message that is not leased ended in a return; those that
 * count are all but the nacks with requeue (RabbitMQ 4: a reject with
 * requeue, a lost session and an expired lease count, a nack does not).
 * A message is dead-lettered once they exceed the limit.
 */
static inline bool
mqq_over_delivery_limit(int32 delivery_limit, MqTracked *t)
{
	return delivery_limit >= 0 &&
		t->delivery_count - t->free_returns > delivery_limit;
}

/*
 * Returns first.  A quorum queue delivers returned messages (nack or
 * reject with requeue, lease expiry, rollback, session end, restart)
 * before any other, in the order they came back, whatever their priority:
 * rabbit_fifo keeps them in a queue of returns that take_next_msg empties
 * first.  Classic queues leave them in their place in the lane (publish
 * order), as RabbitMQ's classic queues do.
 *
 * MqTracked.returned orders both: while an entry is delivered it holds the
 * order of that delivery (so that messages released together, at a
 * rollback or the end of a session, return in the order they were
 * delivered, as rabbit_fifo's return_all does), once it is ready again
 * the order of its return.  One counter per queue hands out both, under
 * the queue lock; 0 is "neither" (never delivered, or not a quorum queue).
 */
static inline uint32
mqq_next_return_seq(MqQueueShared *qs)
{
	if (++qs->return_seq == 0)
		qs->return_seq = 1;		/* 0 means "neither" */
	return qs->return_seq;
}

/* t is delivered (leased, or settled by auto-ack) */
static inline void
mqq_tracked_delivered(MqQueueShared *qs, MqTracked *t)
{
	t->returned = qs->returns_first ? mqq_next_return_seq(qs) : 0;
}

/* t, delivered, is ready again: the last of the returns */
static inline void
mqq_tracked_returned(MqQueueShared *qs, MqTracked *t)
{
	if (qs->returns_first)
		t->returned = mqq_next_return_seq(qs);
}

/* Order of two returns (return_seq wraps around) */
static inline int
mqq_return_cmp(uint32 a, uint32 b)
{
	int32		d = (int32) (a - b);

	return (d > 0) - (d < 0);
}

/* Is t expired by now (its own expiration, or the queue's x-message-ttl)? */
static inline bool
mqq_entry_expired(MqQueue *q, MqTracked *t, TimestampTz now)
{
	if (t->expires_at != DT_NOEND && t->expires_at <= now)
		return true;
	/* now - ttl, not visible_at + ttl: a message due near the end of time */
	if (q->message_ttl_ms >= 0 &&
		t->visible_at <= now - q->message_ttl_ms * 1000)
		return true;
	return false;
}

/*
 * Would a take hand t back dead rather than deliver it: expired, or over
 * x-delivery-limit?  Browsing leaves out what consuming would dead-letter.
 */
static inline bool
mqq_entry_dead(MqQueue *q, MqTracked *t, TimestampTz now)
{
	return mqq_entry_expired(q, t, now) ||
		mqq_over_delivery_limit(q->delivery_limit, t);
}

/*
 * A MARK record covers this many entry positions after a delivery, and is
 * written again once deliveries come within half of that: one small
 * record per eight deliveries or more (a position's line pointer number
 * never comes near overflowing into its block number).  After a restart
 * every unsettled entry below the mark is flagged redelivered, so a few
 * that were never delivered may be too (as RabbitMQ allows: the flag means
 * "may have been delivered before").
 */
#define MQ_MARK_AHEAD 16

/*
 * The files of queue/ and what they share, from the bottom up: each calls
 * only into the ones listed before it (no circle).
 */

/* queue_shmem.c: shared memory, the queue hash, tracked entries, floors */
/*
 * Settings: mq.max_queues, mq.max_in_flight (the size of the tracked pool)
 * and mq.lane_segment_size (in blocks: the entry log size that starts a
 * new generation)
 */
extern int	mq_max_queues;
extern int	mq_max_in_flight;
extern int	mq_lane_segment_size;
extern MqSharedState *mqq_shared;
extern pg_atomic_uint32 *mqq_wakes;
extern MqQueueShared *mqq_queue_shared(MqQueueKey key, bool create);
extern MqQueueKey mqq_key(MqQueue *q);
extern MqQueueShared *mqq_queue_lock_key(MqQueueKey key, MqQueueShared *hint);
extern void mqq_tracked_free(MqQueueShared *qs, MqTracked *t);
extern MqTracked *mqq_tracked_find(MqQueueShared *qs, int64 msg_id);
extern MqTracked *mqq_tracked_find_from(MqQueueShared *qs, int64 msg_id,
										dlist_node **cursor);
extern MqTracked *mqq_track_new(MqQueueShared *qs, uint64 qpos);
extern void mqq_tracked_fill(MqTracked *t, TupleTableSlot *slot);
extern int32 mqq_entry_body_size(TupleTableSlot *slot);
extern int64 mqq_entry_offset(TupleTableSlot *slot, MqlogRowState st);
extern void mqq_tracked_set_pending(MqTracked *t);
extern void mqq_track_examined(MqTracked *t, MqlogRowState st, TupleTableSlot *slot);
extern uint64 mqq_lane_floor(MqQueueShared *qs, int lane);
extern void mqq_compact(MqQueueShared *qs, uint64 *floors);
extern void mqq_return_together(MqQueueShared *qs, MqTracked **ts, int n);

extern LWLock *mqq_offset_lock(MqQueueShared *qs, int lane);

/* queue_load.c: reading lanes, replay after a restart, the loaded state */
extern void mqq_lane_rels_init(LaneRels *lr);
extern Relation mqq_lane_rel(LaneRels *lr, MqQueue *q, int lane, int gen,
							 TupleTableSlot **slot);
extern void mqq_lane_rels_close(LaneRels *lr);
extern MqlogReadCache *mqq_lane_rel_cache(LaneRels *lr, Relation rel);
extern MqlogReadResult mqq_lane_read_next(LaneRels *lr, MqQueue *q, MqQueueShared *qs,
										  uint64 *qpos, MqlogRowState *state,
										  TupleTableSlot **slot);
extern MqTracked *mqq_tracked_ahead(MqQueueShared *qs, uint64 qpos);
extern bool mqq_settled_ahead(MqQueueShared *qs, uint64 qpos);
extern void mqq_track_ahead(MqQueueShared *qs, MqTracked *t);
extern void mqq_passed_ahead(MqQueueShared *qs, int lane);

/*
 * The entries tracked ahead of a lane's scan position, in position order,
 * for a read of the lane from there (positions asked for in ascending
 * order): mqq_ahead_at gives the one at qpos, or NULL.
 */
typedef struct MqAheadCursor
{
	MqTracked **ts;
	int			n;
	int			i;
} MqAheadCursor;

extern void mqq_ahead_cursor_init(MqAheadCursor *c, MqQueueShared *qs, int lane);
extern MqTracked *mqq_ahead_at(MqAheadCursor *c, uint64 qpos);
extern void mqq_ahead_cursor_end(MqAheadCursor *c);

/* Is tracked entry t ahead of its lane's scan position? */
static inline bool
mqq_is_ahead(MqQueueShared *qs, MqTracked *t)
{
	return t->qpos >= qs->lanes[mq_qpos_lane(t->qpos)].scan_pos;
}
extern void mqq_queue_load(MqQueue *q, MqQueueShared *qs);
extern MqQueueShared *mqq_queue_lock(MqQueue *q, LWLockMode mode);

/*
 * queue_xact.c: backend-local state (actions undone or completed at
 * transaction end, leased queues, the queue waited on) and the callbacks
 */
extern void mqq_register_callbacks(void);
extern void mqq_local_add(MqLocalKind kind, MqQueueShared *qs, int64 msg_id,
						  bool prev_leased);
extern void mqq_note_leased_queue(MqQueueKey key);
extern void mqq_local_add_publish(MqQueueShared *qs, int64 n, int64 bytes);
extern int64 mqq_local_published(MqQueue *q, int64 *bytes);
extern void mqq_local_count(MqQueueShared *qs, MqCounter c, int64 n);

/*
 * queue_stream.c: offsets of stream partitions.  An append takes the
 * partition's offset lock (under gen_lock) and n consecutive offsets,
 * writes its rows in that order, then releases it.
 */
extern int64 mqq_stream_offsets_begin(MqQueue *q, MqQueueShared *qs, int lane,
									  int gen, int n);
extern void mqq_stream_offsets_end(MqQueueShared *qs, int lane);
extern void mqq_stream_write_base(MqQueue *q, MqQueueShared *qs, int lane, int gen);
extern int64 mqq_stream_min_msg_id(MqQueue *q);

/*
 * What retention, log retirement and mq.queues need of a stream
 * generation's entries, summed (queue_stream.c)
 */
typedef struct MqGenSummary
{
	bool		any;			/* holds a committed or pending entry */
	int64		bytes;			/* body bytes of committed entries */
	int64		min_msg_id;		/* lowest message id of a non-aborted one */
	TimestampTz oldest;			/* earliest visible_at of a committed entry */
	TimestampTz latest;			/* and latest */
	TimestampTz newest;			/* latest visible_at of any entry */
} MqGenSummary;

/* How far a generation's entries have been summed */
typedef struct MqGenProgress
{
	Oid			relid;			/* the generation's entry log */
	int32		queue_id;		/* and whose it is: an OID may be reused */
	int			lane;
	int			gen;
	MqGenSummary settled;		/* sum over the entries before next */
	ItemPointerData next;		/* the first entry not summed: the first one
								 * in progress, or the end */
	bool		final;			/* closed, and nothing was in progress */
} MqGenProgress;

/*
 * The progress of generations of this database's streams, shared by all
 * backends (queue_shmem.c): get copies what one has recorded, put records
 * p if it is further on than what is there (or there is nothing), forget
 * removes a dropped generation's, forget_queue all of a deleted queue's.
 * A full hash is emptied and started over: each backend still keeps its
 * own, so nothing but time is lost.
 */
/* Are a and b the progress of the same generation (an OID may be reused)? */
static inline bool
mqq_gen_progress_same(const MqGenProgress *a, const MqGenProgress *b)
{
	return a->queue_id == b->queue_id && a->lane == b->lane && a->gen == b->gen;
}

/* Has a summed the generation further than b? */
static inline bool
mqq_gen_progress_ahead(MqGenProgress *a, MqGenProgress *b)
{
	return mqq_gen_progress_same(a, b) && !b->final &&
		(a->final || ItemPointerCompare(&a->next, &b->next) > 0);
}

extern bool mqq_gen_progress_get(Oid relid, MqGenProgress *out);
extern void mqq_gen_progress_put(MqGenProgress *p);
extern void mqq_gen_progress_forget(Oid relid);
extern void mqq_gen_progress_forget_queue(int32 queue_id);

/*
 * The record of queues found unused (queue_shmem.c, where the rules are):
 * stamp is read before looking for q's state, set records q if no state
 * was made or dropped since, known says whether q is recorded
 */
extern uint64 mqq_known_empty_stamp(void);
extern bool mqq_known_empty(MqQueue *q);
extern void mqq_known_empty_set(MqQueue *q, uint64 stamp);
extern uint64 mqq_stream_start_pos(MqQueue *q, int lane, TimestampTz from_time);
extern uint64 mqq_stream_seek_pos(MqQueue *q, int lane, int64 to_offset,
								  TimestampTz to_time);

/* queue_take.c */
extern bool mqq_tracked_row(LaneRels *lr, MqQueue *q, MqTracked *t, MqlogRowState *st,
							TupleTableSlot **slot);

#endif							/* MQ_QUEUE_INT_H */
