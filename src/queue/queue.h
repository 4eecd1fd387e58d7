/*-------------------------------------------------------------------------
 *
 * queue.h
 *	  Consumer state of classic and quorum queues, in shared memory: the
 *	  interface of src/queue/ for the rest of queue_ext.
 *
 * The entry logs and the message log are append-only; everything that
 * changes as messages are delivered and settled lives here instead:
 * per queue, a scan position in each priority lane, and a bounded list of
 * "tracked" entries between the lane's floor (everything before it is
 * settled) and its scan position: leased, waiting for redelivery, waiting
 * for their publisher to commit, or settled but not yet below the floor.
 * Settlements are made durable by appending to the settlement log in the
 * settling transaction, and this state is rebuilt from it after a restart.
 *
 * Only this header is included outside src/queue/; the files of the
 * folder share queue/queue_int.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_QUEUE_H
#define MQ_QUEUE_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/timestamp.h"

#include "am/mqlog.h"
#include "msgid.h"
#include "catalog.h"

/* ---------- entries, positions, settlement records (queue_lane.c) ---------- */

/*
 * Queue position: where an entry sits in a queue's entry logs.  Each
 * priority lane is a chain of generations (tables q<queue>_<lane>_<gen>,
 * see src/queue/), so a position is
 *		lane (8 bits) | generation (16) | block (24) | line pointer (16)
 * and positions of one lane grow in the order entries were written.
 */
#define MQ_QPOS_LANE_SHIFT	56
#define MQ_QPOS_GEN_SHIFT	40
#define MQ_QPOS_MAX_GEN		0xFFFF
#define MQ_LANE_MAX_BLOCKS	((BlockNumber) 1 << 24)

static inline uint64
mq_qpos_make(int lane, int gen, ItemPointer tid)
{
	return ((uint64) lane << MQ_QPOS_LANE_SHIFT) |
		((uint64) gen << MQ_QPOS_GEN_SHIFT) |
		((uint64) ItemPointerGetBlockNumber(tid) << 16) |
		ItemPointerGetOffsetNumber(tid);
}

/* Position of the first entry of a generation */
static inline uint64
mq_qpos_gen_start(int lane, int gen)
{
	return ((uint64) lane << MQ_QPOS_LANE_SHIFT) |
		((uint64) gen << MQ_QPOS_GEN_SHIFT) | 1;
}

static inline int
mq_qpos_lane(uint64 qpos)
{
	return (int) (qpos >> MQ_QPOS_LANE_SHIFT);
}

static inline int
mq_qpos_gen(uint64 qpos)
{
	return (int) ((qpos >> MQ_QPOS_GEN_SHIFT) & MQ_QPOS_MAX_GEN);
}

static inline void
mq_qpos_tid(uint64 qpos, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) ((qpos >> 16) & (MQ_LANE_MAX_BLOCKS - 1)),
				   (OffsetNumber) (qpos & 0xFFFF));
}

/*
 * A queue entry: how a message belongs to a queue, the row of an entry
 * log (see queue_int.h for its columns).
 */
typedef struct MqEntry
{
	int64		msg_id;
	TimestampTz visible_at;		/* not deliverable before */
	TimestampTz expires_at;		/* DT_NOEND: never */
	int32		delivery_count; /* deliveries before (a nack with delay); 0: none */
	int32		body_size;		/* body bytes, for x-max-length-bytes; -1: not
								 * recorded (queues without that limit) */
	uint32		group_hash;		/* ordered queues and streams: mq_group_hash
								 * of its message_group; 0: none */
	uint32		tag_hash;		/* streams: mq_tag_hash of its tag;
								 * MQ_TAG_HASH_NONE (0): none */
	int64		offset;			/* streams: offset in the partition, set by
								 * the append; -1: none (other queues) */
} MqEntry;

/*
 * A stream's entry rows may carry their message ("inline"): a stream's
 * entry logs have the message log's MQ_ENTRY_PAYLOAD_NATTS columns
 * (msglog.h) after the entry's, NULL in the rows of messages kept in the
 * log.  Each such entry log has a segment number of its own (msgid.h's
 * MQ_INLINE_SEGNO_MIN and up, mq.cat_inline), and the id of a message kept
 * inline is its own row's address there: from MQ_INLINE_MSGID_MIN up, it
 * refers to no message log segment and goes when retention drops its
 * generation.
 */
#define MQ_ENTRY_PAYLOAD_NATTS	10
/* the offset column of a stream's entry log (its rows' attribute number) */
#define MQ_ENTRY_STREAM_ATT_OFFSET	6

/*
 * The hash an ordered queue keeps of a message_group (never 0, which is
 * "no group"); a collision can only make two groups wait for each other,
 * never reorder one.
 */
extern uint32 mq_group_hash(const char *message_group);


/* Settlement record kinds */
#define MQ_SETTLE_ACK		1	/* acked (or auto-acked) */
#define MQ_SETTLE_DEAD		2	/* dead-lettered: a copy went to the DLX */
#define MQ_SETTLE_FLOOR		3	/* every entry of the lane below qpos settled */
#define MQ_SETTLE_DROPPED	4	/* expired/rejected/purged without a DLX copy */
#define MQ_SETTLE_RETRY		5	/* nacked with a delay: a timer appends it again */

/*
 * Delivery records: not settlements, but what a restart must know of
 * deliveries.  They are written frozen (visible whatever becomes of the
 * consuming transaction: a delivery happened even if it rolls back) and
 * without an xid, so they cost one unflushed WAL record per consume call.
 */
#define MQ_SETTLE_DELIVERED	6	/* the entry at qpos was delivered once more
								 * (queues that count deliveries) */
#define MQ_SETTLE_MARK		7	/* entries below qpos may have been delivered */
#define MQ_SETTLE_RETURNED	8	/* the entry at qpos was nacked with requeue:
								 * that return does not count toward
								 * x-delivery-limit (queues that count
								 * deliveries) */

/*
 * Streams: the first offset of a generation, written (frozen) into its
 * settlement log when a partition moves on to it, so that the next offset
 * is known after a restart even once every entry before it is retired.
 * The record holds the offset where others hold a position.
 */
#define MQ_SETTLE_BASE		9

/*
 * Consumer groups: the entry at qpos, whose delivery failed (a nack, a
 * lease that ran out), is not to be delivered again before the time in the
 * record's second column (its argument), so that a restart does not bring
 * a retrying message back early.  Written frozen, like a delivery record
 * (the return happened whatever becomes of the transaction), and flushed
 * at once, since no commit flushes a frozen record.  Not a settlement.  A settlement log without the column (none: group logs have
 * had it since the record exists) drops the record.
 */
#define MQ_SETTLE_RETRY_AT	10

/*
 * Consumer groups: runs.  One record standing for the records of kind
 * DELIVERED (DELIVERED_RUN) or ACK (ACK_RUN) of n >= 2 entries at the
 * consecutive positions qpos, qpos + 1, ..., qpos + n - 1 of one block of
 * one generation's entry log, n in the record's second column (its
 * argument).  Replay treats it exactly as those n single records.  Written
 * by mq_settle_batch_flush for the records of one batch (a consume call's
 * deliveries, an ack call's settlements) into a group's log, which has the
 * argument column; the batch's other records stay single.
 */
#define MQ_SETTLE_DELIVERED_RUN	11
#define MQ_SETTLE_ACK_RUN	12

/* Settlement records collected and written together (one per page) */
typedef struct MqSettleBatch
{
	MqQueue    *q;
	bool		frozen;			/* delivery records: outside the transaction */
	int			n;
	int			cap;
	int16	   *kinds;
	uint64	   *qpos;
	int64	   *args;			/* second column, 0: NULL (RETRY_AT) */
} MqSettleBatch;

extern void mq_settle_batch_init(MqSettleBatch *b, MqQueue *q);
extern void mq_settle_batch_add(MqSettleBatch *b, int16 kind, uint64 qpos);
extern void mq_settle_batch_add_arg(MqSettleBatch *b, int16 kind, uint64 qpos,
									int64 arg);
extern void mq_settle_batch_flush(MqSettleBatch *b);

/*
 * Entries reach a queue's entry logs, and settlement records its
 * settlement logs, only through the functions of this header: the message
 * log (msglog.h) knows nothing of queues.
 */

/* ---------- setting up, forgetting (queue_shmem.c) ---------- */

/*
 * From _PG_init: defines the settings of queue state (mq.max_queues,
 * mq.max_in_flight, mq.lane_segment_size) and, when preloading, requests
 * its shared memory.
 */
extern void mq_queue_init(void);

/*
 * Forget the shared state of a deleted queue.  Takes the queue's lock:
 * call it holding no lock on the queue's relations (a consumer may hold
 * the queue's lock while it waits for one of them); topology_sql.c calls it
 * once the deleting transaction has committed and released its locks.
 */
extern void mq_queue_state_drop(int32 queue_id);	/* and its groups' */

/*
 * The queue's object lock (queue_load.c): every use of a queue's state takes
 * it first, in AccessShareLock to the end of the transaction; queue_delete
 * in AccessExclusiveLock.  mq_lock_nowait (mqutils.h, the maintenance
 * worker) makes the worker's attempts conditional (55P03 when busy).
 */

/*
 * A view's inspection of queue q (queue_load.c): its object lock tried,
 * never waited for, and released at the end (unless held before, *held).
 * False: q is being deleted, or was since the catalog was read; leave it
 * out.  Then read q's state as usual, and call mq_queue_inspect_end.
 */
extern bool mq_queue_inspect_begin(MqQueue *q, bool *held);
extern void mq_queue_inspect_end(MqQueue *q, bool held);

/*
 * q's lock, the first of its lock order: a relation lock on its anchor
 * mq_storage.a<id> (the fast path, for the weak modes), or the object lock
 * (mq.cat_queue, id) of a queue declared before anchors.  Every user of q
 * holds it in AccessShareLock (taken by the first call that reads q's
 * state); publishers to a queue with a length limit take turns on it in
 * ExclusiveLock (mq_queue_turn_lock: wait, or only try; false when
 * taken); mq.queue_delete takes q's object lock and then, by
 * mq_queue_delete_lock, this one in AccessExclusiveLock.
 */
extern bool mq_queue_turn_lock(MqQueue *q, bool wait);
extern void mq_queue_turn_unlock(MqQueue *q);
extern void mq_queue_delete_lock(MqQueue *q);

/* q was deleted by a transaction committed since our catalog was read */
extern bool mq_queue_deleted(MqQueue *q);

/* Forget the shared state of a deleted consumer group (the same rule) */
extern void mq_group_state_drop(int32 queue_id, int32 group_id);

/*
 * Drop the shared state of queue queue_id (group_id 0: with its groups'),
 * or of its consumer group or broadcast consumer group_id, once this
 * transaction has ended and released its locks: if it commits (deleted,
 * sought) and/or if it rolls back (made by it).  A subtransaction that
 * rolls back voids its drops at commit (the delete is undone) and makes
 * its drops at abort happen whatever the transaction does (queue_xact.c).
 */
extern void mq_queue_state_drop_at_end(int32 queue_id, int32 group_id,
									   bool at_commit, bool at_abort);

/* ---------- publishing (queue_append.c) ---------- */

/*
 * Publishing: append entries to a lane's current generation; they count in
 * the backlog (and wake waiting consumers) when the transaction commits.
 */
extern void mq_queue_append(MqQueue *q, int lane, MqEntry *entries, int n);

/*
 * The entry's half of a linked insert (publish.c writes a message and its
 * entry as one WAL record, in this order):
 *	mq_queue_link_begin		gen_lock of q shared: the write generation
 *							cannot change until mq_queue_link_end;
 *	mq_log_link_reserve		the log page locked, msg_id known (msglog.h);
 *	mq_queue_link_reserve	the entry page locked;
 *	mqlog_linked_write		both rows, one WAL record, pages released;
 *	mq_queue_link_end		gen_lock released; the entry counts at commit.
 * The message log segment must be opened (perhaps created) before
 * mq_queue_link_begin: DDL never runs under gen_lock.
 */
typedef struct MqQueueLink
{
	MqQueue    *q;
	int			lane;
	int			gen;
	Relation	rel;			/* the lane's write generation */
	void	   *shared;			/* queue state, private to src/queue/ */
	int32		body_size;		/* of the entry written (x-max-length-bytes) */
	int64		offset;			/* streams: the entry's offset (its offset
								 * lock is held until the end); else -1 */
	int64		inline_segno;	/* the generation's segment number, if its
								 * rows can carry messages; else 0 */
} MqQueueLink;

extern void mq_queue_link_begin(MqQueue *q, int lane, MqQueueLink *link);
extern void mq_queue_link_reserve(MqQueueLink *link, MqEntry *entry,
								  MqlogLinkedRow *row);
extern void mq_queue_link_end(MqQueueLink *link, MqlogLinkedRow *row);

/*
 * A stream message kept in its entry row (inline, above), in one row and
 * one WAL record:
 *	mq_queue_inline_begin	as mq_queue_link_begin, when the lane's write
 *							generation can carry messages; false (holding
 *							nothing) when it cannot, and the message goes
 *							to the log as above;
 *	mq_queue_inline_reserve the row formed from the entry and the message's
 *							log columns (payload), its page locked; returns
 *							its msg_id, the row's own address;
 *	mqlog_linked_write, mq_queue_link_end as above.
 */
extern bool mq_queue_inline_begin(MqQueue *q, int lane, MqQueueLink *link);
extern int64 mq_queue_inline_reserve(MqQueueLink *link, MqEntry *entry,
									 const Datum *payload, const bool *payload_null,
									 MqlogLinkedRow *row);

/*
 * mq_queue_append of stream messages kept in their entry rows: payload is
 * MQ_ENTRY_PAYLOAD_NATTS log column values per entry, and each entry's
 * msg_id is set to its row's address.  False, having written nothing, when
 * the lane's write generation cannot carry messages.
 */
extern bool mq_queue_append_inline(MqQueue *q, int lane, MqEntry *entries, int n,
								   const Datum *payload, const bool *payload_null);

/*
 * Where an append put a stream message: partition and offset in stream
 * queue_id.  mq_stream_noted finds, newest first (at most max), those this
 * transaction's appends gave msg_id (a message routed to several streams
 * has one each; the first 4096 appends of a transaction are noted); a
 * message kept inline also has them in its own row (msglog.h's MqMessage).
 */
typedef struct MqStreamPos
{
	int32		queue_id;
	int32		partition;
	int64		offset;
} MqStreamPos;

extern int	mq_stream_noted(int64 msg_id, MqStreamPos *out, int max);

/* Maintenance: start new lane generations, drop settled ones */
extern void mq_queue_rotate(MqQueue *q);

/*
 * Ready messages of q as they will be once this transaction commits, what
 * x-max-length is checked against
 */
extern int64 mq_queue_ready_for_publish(MqQueue *q);

/*
 * The same, and *bytes their body bytes, what x-max-length-bytes is
 * checked against (body sizes are recorded only on queues with that limit)
 */
extern int64 mq_queue_ready_bytes_for_publish(MqQueue *q, int64 *bytes);

/*
 * Body bytes of the live entry of msg_id in q (-1: not recorded), for a
 * message settled here and appended again later (a nack with delay)
 */
extern int32 mq_queue_body_size(MqQueue *q, int64 msg_id);

/* ---------- consuming (queue_take.c) ---------- */

/* What consume hands back for one delivery */
typedef struct MqDelivery
{
	int64		msg_id;
	uint64		qpos;
	bool		redelivered;
	int32		delivery_count;
	bool		dead;			/* dead-letter instead of deliver */
	const char *dead_reason;
	TimestampTz expires_at;		/* of the entry (DT_NOEND: never) */
	int64		offset;			/* streams: offset in its partition, else -1 */
	uint64		receipt;		/* leased: the nonce of its receipt (never
								 * 0), else 0 */
} MqDelivery;

typedef enum MqTakeMode
{
	MQ_TAKE_LEASE,				/* normal consume */
	MQ_TAKE_LEASE_DETACHED,		/* a lease the session's end does not return
								 * (mq.consume(session_bound => false)) */
	MQ_TAKE_AUTO_ACK,			/* consume and settle at once */
	MQ_TAKE_DROP_HEAD,			/* overflow: dead-letter the oldest ready */
	MQ_TAKE_EXPIRE				/* maintenance: dead-letter expired ones at the head */
} MqTakeMode;

/*
 * Take up to n ready messages from q (highest priority lane first).
 * Expired and over-delivered messages come back with dead = true; the
 * caller dead-letters them (and they count against n).
 */
extern int	mq_queue_take(MqQueue *q, int n, TimestampTz lease_until,
						  MqTakeMode mode, const char *consumer, int prefetch,
						  MqDelivery *out);

/*
 * The same, for a consumer group with a filter: a tag filter (filter_type
 * 'tag', not '*') settles for the group, without delivering them and
 * without reading their messages, the entries whose tag hash no tag of
 * the filter has (ACK records, frozen: see queue_take.c); *skipped (if not
 * NULL) says how many.  A take returning 0 with *skipped > 0 may find more
 * at once.  The hash only rules out: a message it lets through is checked
 * by the caller against the real filter.
 */
struct MqFilter;
extern int	mq_queue_take_filtered(MqQueue *q, int n, TimestampTz lease_until,
								   MqTakeMode mode, const char *consumer,
								   int prefetch, const struct MqFilter *tag_filter,
								   int *skipped, MqDelivery *out);

/* Entries this backend settled by their tag hash (mq._session_counters) */
extern int64 mq_stat_tag_skipped;

/* Earliest due time of a delayed message seen by the last take (0: none) */
extern TimestampTz mq_queue_next_due(void);

/* Did leases run out since the queue's previous expiry take (the last take)? */
extern bool mq_queue_leases_ran_out(void);

/* The first lease end still to come seen by the last take (0: none) */
extern TimestampTz mq_queue_next_lease_end(void);

/* Sleep until something is published to q or the timeout (ms) passes */
extern void mq_queue_prepare_wait(MqQueue *q);
extern bool mq_queue_wait(MqQueue *q, long timeout_ms);
extern void mq_queue_cancel_wait(void);

/* Wake a backend's mq.consume: it returns with what it has (mq._consume_wake) */
struct PGPROC;
extern void mq_queue_wake(struct PGPROC *proc, int pid);
extern bool mq_queue_woken(void);

/*
 * Lease messages of q by id, whatever state they are in and whoever holds
 * them (pgmq's visibility timeout, which belongs to nobody): a ready
 * message (tracked, or anywhere ahead of the scan position: it is then
 * tracked where it is, and the scan passes over it when it gets there), a
 * leased one (any session's; the holder loses it) or one whose lease ran
 * out.  Each is then leased to this session until lease_until,
 * detached (its session's end does not return it), or with lease_until 0
 * made ready at once.  deliver: only ready messages are taken, as a
 * delivery (the delivery count grows), for a consumer that chose them by
 * id.  A message that is being settled, settled, not yet committed or
 * delayed in a timer is not found.  out[] gets one entry per message
 * found; returns how many.  The messages not tracked yet are found by one
 * read of the backlog ahead of the scan positions (as deep as they are),
 * before anything changes; 53400 if mq.max_in_flight cannot track them.
 */

typedef struct MqLeased
{
	int64		msg_id;
	int32		delivery_count; /* after this call */
	bool		was_leased;		/* leased (to anyone) before the call */
	TimestampTz was_until;		/* its lease end before, or the time it
								 * was ready from (0: always) */
} MqLeased;

extern int	mq_queue_lease_ids(MqQueue *q, const int64 *msg_ids, int n,
							   TimestampTz lease_until, bool deliver,
							   MqLeased *out);

/* ---------- settling (queue_settle.c) ---------- */

/* What to do with a message leased by this session */
typedef enum MqSettleOp
{
	MQ_SETTLE_OP_ACK,
	MQ_SETTLE_OP_DEAD,
	MQ_SETTLE_OP_REQUEUE,		/* a return that counts toward
								 * x-delivery-limit (reject) */
	MQ_SETTLE_OP_REQUEUE_FREE,	/* a return that does not (nack) */
	MQ_SETTLE_OP_RETRY,			/* settled here, appended again by a timer */
	MQ_SETTLE_OP_EXTEND
} MqSettleOp;

typedef enum MqSettleResult
{
	MQ_SETTLE_RESULT_OK,
	MQ_SETTLE_RESULT_NOT_FOUND,	/* not delivered (unknown, settled or ready) */
	MQ_SETTLE_RESULT_NOT_OWNER,	/* leased by another session */
	MQ_SETTLE_RESULT_STALE,		/* by receipt: not the current delivery (its
								 * lease ran out, it is settled or being
								 * settled, or it was delivered again) */
	MQ_SETTLE_RESULT_OVER_LIMIT /* a requeue that took the message over
								 * x-delivery-limit: settling it instead, the
								 * caller dead-letters it */
} MqSettleResult;

/* Why a message last went back to ready (MqTracked.last_return) */
typedef enum MqReturnReason
{
	MQ_RETURN_NONE,				/* never delivered, or not known (restart) */
	MQ_RETURN_SESSION_END,		/* its (session-bound) holder's session ended */
	MQ_RETURN_ROLLBACK,			/* the transaction that took it rolled back */
	MQ_RETURN_LEASE,			/* its lease ran out */
	MQ_RETURN_NACK				/* nack, reject or a zero lease_ids */
} MqReturnReason;

/* On NOT_FOUND: what the message is instead of delivered to this session */
typedef enum MqNotFoundState
{
	MQ_NOT_FOUND_UNTRACKED,		/* not held in the queue's shared state:
								 * settled, not loaded, delayed, elsewhere or
								 * unknown */
	MQ_NOT_FOUND_PENDING,		/* its publishing transaction is open */
	MQ_NOT_FOUND_READY,			/* ready, never delivered */
	MQ_NOT_FOUND_RETURNED,		/* delivered, then back to ready (why:
								 * MqSettled.returned) */
	MQ_NOT_FOUND_SETTLING,		/* settled by a transaction still open */
	MQ_NOT_FOUND_SETTLED,		/* settled */
	MQ_NOT_FOUND_ORPHANED		/* leased (session_bound => false) by a
								 * session that has ended: its lease or a
								 * receipt settles it */
} MqNotFoundState;

/* What became of one message of a settle call */
typedef struct MqSettled
{
	MqSettleResult result;
	/* on OK and OVER_LIMIT: its entry, for the settlement record */
	uint64		qpos;
	int32		delivery_count;
	TimestampTz expires_at;
	int64		offset;			/* streams: in its partition */
	/* on NOT_FOUND: what it is instead, and why it last went back */
	MqNotFoundState not_found;
	MqReturnReason returned;
} MqSettled;

/*
 * Settle msg_ids[0..n-1] of q with op, under one hold of the queue lock;
 * out[i] says what became of each.  Stops after the first that is not
 * delivered to this session (NOT_FOUND, NOT_OWNER); returns how many out[]
 * entries it filled.  The caller appends the settlement records in the
 * same transaction.
 */
extern int	mq_queue_settle(MqQueue *q, const int64 *msg_ids, int n,
							MqSettleOp op, TimestampTz when, MqSettled *out);

/*
 * The same by receipt: msg_ids[i] with the nonce receipts[i] of its
 * delivery, leased to any session, within its lease (else STALE, and it
 * stops there).  A settlement (ack, dead-letter, retry) passes the
 * delivery to this session first, so that this transaction's end decides
 * it; an extension and a requeue leave its holder as it is.
 */
extern int	mq_queue_settle_receipts(MqQueue *q, const int64 *msg_ids,
									 const uint64 *receipts, int n,
									 MqSettleOp op, TimestampTz when,
									 MqSettled *out);

/*
 * Which of msg_ids[0..n-1] are delivered to this session in q (leased, or
 * their lease ran out and nobody took them since): here[i]; returns how
 * many.  Changes nothing (a broadcast group's ack without a consumer name
 * finds with it the consumer states that hold each id).
 */
extern int	mq_queue_leased_here(MqQueue *q, const int64 *msg_ids, int n, bool *here);

/* Has this session taken leases on q's state (since it started)? */
extern bool mq_queue_session_leased(MqQueue *q);

/* Record lane floors every so many settlements (call after settling) */
extern void mq_queue_write_floors(MqQueue *q);

/* ---------- event counters (queue_xact.c, queue_inspect.c) ---------- */

/*
 * What happened to a queue state (a queue's, a consumer group's or a
 * broadcast consumer's), counted where it happens, from when the state's
 * hash entry was made (its first use since the server started; a group's
 * again after mq.seek): for mq.metrics.  Monotonic in between.
 */
typedef enum MqCounter
{
	MQ_C_PUBLISHED,				/* entries committed (not re-appended retries) */
	MQ_C_DELIVERED,				/* messages handed to a consumer by a take */
	MQ_C_REDELIVERED,			/* of those, with the redelivered flag */
	MQ_C_ACKED,					/* acks and auto-acks committed */
	MQ_C_NACKED,				/* nacks and rejects (a requeue at once, the
								 * others at commit) */
	MQ_C_DEAD_LETTERED,			/* copies to a dead-letter exchange or DLQ */
	MQ_C_EXPIRED,				/* taken dead because they expired */
	MQ_C_FILTERED,				/* a consumer group's, settled undelivered:
								 * its filter rejects them (neither delivered
								 * nor acked) */
	MQ_NCOUNTERS
} MqCounter;

typedef struct MqQueueCounters
{
	int64		n[MQ_NCOUNTERS];
} MqQueueCounters;

/* Add n to counter c of q once this transaction commits */
extern void mq_queue_count_at_commit(MqQueue *q, MqCounter c, int64 n);

/*
 * n messages this call took from q (nredelivered of them redelivered) were
 * not delivered after all: its group's filter rejected them once fetched
 */
extern void mq_queue_uncount_delivered(MqQueue *q, int n, int nredelivered);

/* The counters of q (a queue, or a group's view) */
extern void mq_queue_counters(MqQueue *q, MqQueueCounters *out);

/* Has q (a queue, a group's or a consumer's view) a state in shared memory? */
extern bool mq_queue_has_state(MqQueue *q);

/*
 * Is q, a classic or quorum queue, unused: no state, nothing stored?  The
 * views and the worker then load no state for it (queue_inspect.c).
 */
extern bool mq_queue_unused(MqQueue *q);

/* Is q recorded as found unused (for tests: mq._queue_known_empty)? */
extern bool mq_queue_known_empty(MqQueue *q);

/* ---------- inspection (queue_inspect.c) ---------- */

typedef struct MqQueueCounts
{
	int64		ready;
	int64		ready_bytes;	/* their body bytes (x-max-length-bytes only) */
	int64		unacked;
	int64		delayed;
	int64		total;
	int32		consumers;
	TimestampTz oldest_ready;	/* 0: none */
	TimestampTz last_delivery;	/* 0: never */
} MqQueueCounts;

/*
 * parts: NULL, or for a stream room for q->nlanes partition summaries
 * (mq_stream_partition), which the counts are made of: filled too
 */
struct MqStreamPartition;
extern void mq_queue_counts(MqQueue *q, MqQueueCounts *counts,
							struct MqStreamPartition *parts);

/*
 * Delivery state of an unsettled message of q that was delivered at least
 * once (false if it never was, or is settled, or is not in q).
 */
typedef struct MqDeliveryState
{
	int32		delivery_count;
	bool		leased;			/* else ready again (redelivery pending) */
	TimestampTz until;			/* lease end, or ready-not-before */
} MqDeliveryState;

extern bool mq_queue_delivery_state(MqQueue *q, int64 msg_id, MqDeliveryState *st);

/*
 * Messages of q leased now (to any session, lease not run out, or being
 * settled by an open transaction): up to max of them, with their delivery
 * counts and lease ends; returns how many.
 */
extern int	mq_queue_in_flight(MqQueue *q, int max, int64 *msg_ids,
							   int32 *delivery_counts, TimestampTz *untils);

/* Browse ready messages without taking them */
extern int	mq_queue_peek(MqQueue *q, int n, int64 *msg_ids, int32 *delivery_counts);

/*
 * Lowest message id an unsettled entry of q refers to (PG_INT64_MAX: none,
 * 0: cannot tell yet).  The look stops at the first entry at or below
 * floor: the answer is then some id <= floor, not always the lowest (a
 * caller that can do nothing below floor need not read the rest).
 */
extern int64 mq_queue_min_msg_id(MqQueue *q, int64 floor);

/* ---------- stream queues (queue_stream.c) ---------- */

/*
 * A stream is a queue whose lanes are its partitions; each entry carries
 * its offset in the partition.  Nothing of consumer state applies to it:
 * it is read by offset (mq.read), without leases or settlements, and its
 * generations are retired by retention alone.
 */

/*
 * "No time given" where a function takes an offset or a time to start a
 * stream at: -infinity, which the SQL functions never pass on (0 is a real
 * time, 2000-01-01 00:00 UTC)
 */
#define MQ_NO_TIME	DT_NOBEGIN

/* One entry of a partition read by mq_stream_read */
typedef struct MqStreamEntry
{
	int64		msg_id;
	int64		offset;
} MqStreamEntry;

/*
 * Read up to n committed entries of partition of stream q, in offset
 * order, from from_offset (-1: not given) or from the first entry visible
 * at or after from_time (MQ_NO_TIME: not given), else from the first retained
 * offset.  Stops at the first entry whose publisher is still in progress,
 * passes over aborted ones (gaps).  Reads only the logs: no shared state,
 * so it works on a hot standby.  Returns how many it put in out[].
 */
extern int	mq_stream_read(MqQueue *q, int partition, int64 from_offset,
						   TimestampTz from_time, int n, MqStreamEntry *out);

/* First retained offset and next offset of a partition (equal: empty) */
extern void mq_stream_bounds(MqQueue *q, int partition, int64 *first, int64 *next);

/*
 * Whether offset of partition of stream q is below what the stream retains
 * now: retention dropped its generation, and log retirement may have dropped
 * its message since a reader found the entry.  A reader skips such an entry
 * quietly (as a Kafka consumer never sees what retention deleted).
 */
extern bool mq_stream_offset_dropped(MqQueue *q, int partition, int64 offset);

/* What a partition of a stream retains, for mq.queues and mq.stream_partitions */
typedef struct MqStreamPartition
{
	int64		first_offset;	/* first retained offset */
	int64		end_offset;		/* next offset (equal: nothing retained) */
	int64		bytes;			/* body bytes of its committed messages */
	TimestampTz first_time;		/* publish time of its oldest message (0: none) */
	TimestampTz last_time;		/* and of its newest one */
} MqStreamPartition;

/*
 * Summary of a partition of stream q: its bounds, and bytes and times read
 * from its generations (a closed generation is read once per backend and
 * remembered; the write generation is read each time)
 */
extern void mq_stream_partition(MqQueue *q, int partition, MqStreamPartition *out);

/*
 * Retention of stream q (maintenance): start a new generation of a
 * partition when the current one is large or old, drop generations older
 * than the retention or beyond max_bytes, oldest first.
 */
extern void mq_stream_retain(MqQueue *q);

/* ---------- consumer groups of streams (queue_group.c) ---------- */

/*
 * A consumer group's queue state is that of a queue over its stream's
 * lanes, reached through the group's view (MqGroup.view): take, settle,
 * leases and replay are those of classic queues, the settlement records go
 * to the group's own logs g<queue>_<group>_<lane>_<gen>.
 */

/*
 * The worker's cheap check of a consumer group's state, in shared memory
 * only (no catalog, no relation): true when it has a lease that ran out
 * or a ready message over max_retries (returned by a session end or an
 * abort); *next_lease is the earliest lease end still to come (0: none).
 * False for a state not loaded (nothing leased since the restart).
 */
extern bool mq_group_maintenance_due(int32 queue_id, int32 group_id,
									 TimestampTz now, TimestampTz *next_lease);

/*
 * Write where a new group of stream q starts in each partition: 'latest'
 * (the end), 'earliest' (the first retained entry) or the first entry at
 * or after from_time (FLOOR records in the group's logs, in the caller's
 * transaction).  from_time MQ_NO_TIME with earliest false: the end.
 */
extern void mq_group_start(MqQueue *q, int32 group_id, bool earliest,
						   TimestampTz from_time);

/*
 * mq.seek: write a FLOOR at the new position of partition `partition` (-1:
 * every partition) of group group_id of stream q: the first entry whose
 * offset is at least to_offset (-1: by time), else the first stored at or
 * after to_time, else the end.  The caller has emptied the group's logs of
 * those partitions in its transaction (mq._group_seek_impl) and drops the
 * group's shared state once it commits.
 */
extern void mq_group_seek(MqQueue *q, int32 group_id, int partition,
						  int64 to_offset, TimestampTz to_time);

/*
 * mq.import(): the entries of partition `partition` with these offsets
 * (ascending) were settled by group view gview above its committed offset
 * (acked out of order): an ACK record for each, in the caller's
 * transaction.  An offset with no entry is skipped.
 */
extern void mq_group_settle_offsets(MqQueue *gview, int partition,
									const int64 *offsets, int n);

/*
 * A new consumer of a broadcast group (view cview) starts where its group
 * (view gview) started, or was last sought to: a FLOOR per partition in
 * the consumer's logs at the group's position (the group's own state is
 * never consumed from, so it stays at the FLOORs written by
 * mq_group_start or mq_group_seek), in the caller's transaction.
 */
extern void mq_group_consumer_start(MqQueue *gview, MqQueue *cview);

/* One partition of a group, for mq.consumer_groups (bounded state only) */
typedef struct MqGroupProgress
{
	int64		committed_offset;	/* lowest offset not settled */
	int64		first_offset;	/* first retained */
	int64		end_offset;		/* next offset of the partition */
	int32		in_flight;		/* leased or being settled */
	int32		retrying;		/* failed, waiting for their retry */
	int64		dead_lettered;
	int32		consumers;		/* sessions holding or waiting for leases */
	TimestampTz last_delivery;	/* 0: none since the state was loaded */
} MqGroupProgress;

extern void mq_group_progress(MqQueue *gview, int partition, MqGroupProgress *p);

/*
 * A dead letter of group view gview from partition lane went to its DLQ in
 * this transaction: the view counts it once the transaction commits
 */
extern void mq_group_note_dead(MqQueue *gview, int lane);

#endif							/* MQ_QUEUE_H */
