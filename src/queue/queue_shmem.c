/*-------------------------------------------------------------------------
 *
 * queue_shmem.c
 *	  Queue state in shared memory: the shared struct, the hash of queues,
 *	  the pool of tracked entries, and locking a queue's state.
 *
 * One fixed-size struct holds the pool of tracked entries (mq.max_in_flight
 * of them, shared by all queues) and the lock of a hash table of queues
 * (mq.max_queues entries), both set up when the server starts.  A queue's
 * entry is found or made on first use and loaded from its logs by
 * mqq_queue_lock; it stays until the queue is deleted.  Hash entries are
 * reused without being cleared, and a backend may still wait on the lock
 * of a removed entry, so whoever gets a queue's lock checks that the entry
 * still belongs to that queue.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xlog.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/hsearch.h"

#include "mqutils.h"
#include "queue/queue_int.h"

/* Settings (see mq_queue_init) */
int			mq_max_queues = 4096;
int			mq_max_in_flight = 65536;
int			mq_lane_segment_size = 8192;

#define MQ_SLOT_MAGIC 0x6d715131

MqSharedState *mqq_shared = NULL;
static HTAB *mq_queue_htab = NULL;
static MqLaneState *mqq_lane_pool = NULL;	/* lane blocks (MqQueueShared.lanes) */

/*
 * Wakes of a waiting mq.consume (mq._consume_wake), one slot per PGPROC:
 * the pid of the backend asked to return, 0 none (queue_xact.c)
 */
pg_atomic_uint32 *mqq_wakes = NULL;

/* one slot per PGPROC (ProcGlobal->allProcCount) */
static Size
wakes_size(void)
{
	return mul_size(sizeof(pg_atomic_uint32),
					add_size(add_size(MaxBackends, NUM_AUXILIARY_PROCS), max_prepared_xacts));
}

/*
 * Stream generation summaries (lock 5): by database and entry log, so that
 * a session's first look at a stream (mq.queues) reads only what was
 * appended since any backend last summed it -- the worker does at each log
 * retirement -- not every generation of every partition.  Twice as many
 * as queues may have states, at least 1024.
 */
typedef struct GenProgressKey
{
	Oid			dbid;
	Oid			relid;
} GenProgressKey;

typedef struct GenProgressShared
{
	GenProgressKey key;			/* hash key */
	MqGenProgress p;
} GenProgressShared;

static HTAB *gen_progress_htab = NULL;

#define GEN_PROGRESS_MAX	Max(1024, 2 * mq_max_queues)

/*
 * Queues found unused (lock 6, MqSharedState.empty_lock).
 *
 * A classic or quorum queue nobody used since the server started has no
 * state in shared memory (loading one would count towards mq.max_queues),
 * and mq_queue_unused tells that it is empty from its tables: a scan of
 * pg_class for its generations, each lane's entry log opened for its size.
 * At a thousand such queues that is most of what mq.queues costs, on every
 * call.  This is a record of the queues found so, by database and queue
 * id, with the queue's anchor and first entry log: a queue deleted and
 * declared again (or restored) under the same id has other relations, so
 * its record does not match and its tables are looked at.
 *
 * Why a recorded queue is empty (the argument; tests: sql/known_empty.sql,
 * test/isolation/specs/known_empty_publish.spec):
 *
 *  - Every append to a queue's entry logs first makes the queue's state:
 *    queue_append_begin (queue_append.c) calls mqq_queue_lock, which makes
 *    it (mqq_queue_shared(key, true)) before any row is written; the
 *    writers of entry logs (publish and publish_batch, routing through
 *    exchanges, dead-lettering, delayed and retry timers, half messages,
 *    imports, pgmq's send through mq.send) all append through it, and the
 *    worker's generation switch (mq_queue_rotate) takes the state too.
 *    WAL replay on a standby appends without states: there the record is
 *    neither read nor set (mq_queue_unused), and it is empty after a
 *    promotion, never having been set.
 *  - Making a state bumps states_made and removes the queue's record,
 *    together, holding empty_lock (known_empty_forget, after the hash
 *    entry exists); so does dropping one (mq.queue_delete).  States are
 *    never unloaded otherwise: a state, once made, stays until the queue
 *    is deleted.
 *  - A reader reads states_made (the stamp) before it looks for the
 *    queue's state, finds none, finds every lane one generation of zero
 *    blocks (an append in progress or aborted has extended the file, so
 *    any append begun before the look is seen), and then records the queue
 *    holding empty_lock only if states_made still equals its stamp.
 *    A state made before the stamp was read is found by the look for one
 *    (the look takes the hash lock: a barrier after the stamp's read); one
 *    made between the stamp and the record changed states_made, and no
 *    record is set; one made after the record was set removes it.  Since
 *    the first append follows the making of the state, a record exists
 *    only while no append has begun since the tables were found empty:
 *    with a record the queue is empty, without one its tables are looked
 *    at.  (That the queue still has no state when the record is set needs
 *    no second look: the stamp has not moved.)
 *  - A recorded queue was not deleted either: a delete drops the queue's
 *    state, and so its record, at its commit before it lets go of the
 *    queue's object lock (mq_queue_state_drop, queue_xact.c), and a queue
 *    whose tables are gone is never recorded (its lanes are not found).
 *    So mq_queue_inspect_begin, holding the object lock, takes a record
 *    for "not deleted" without scanning pg_class.
 *  - It is consulted only after the queue was found without a state;
 *    nothing depends on its being there: full, a queue is just not
 *    recorded, and looked at each time, as before.  Shared memory, it is
 *    empty after a restart.  The bump counts every state made (a
 *    consumer group's too): a queue looked at while others are loaded is
 *    recorded at its next look.
 */
typedef struct KnownEmptyKey
{
	Oid			dbid;
	int32		queue_id;
} KnownEmptyKey;

typedef struct KnownEmpty
{
	KnownEmptyKey key;			/* hash key */
	Oid			anchor;			/* MqQueue.anchor (InvalidOid: none) */
	Oid			lane0;			/* MqQueue.lanes[0], its first entry log */
} KnownEmpty;

static HTAB *known_empty_htab = NULL;

#define KNOWN_EMPTY_MAX	Max(8192, 2 * mq_max_queues)
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Size of the shared struct, with its pool of mq.max_in_flight entries */
static Size
shared_size(void)
{
	return add_size(offsetof(MqSharedState, pool),
					mul_size(sizeof(MqTracked), mq_max_in_flight));
}

/* Size of the lane blocks, one per slot of the queue hash (MqQueueShared.lanes) */
static Size
lane_pool_size(void)
{
	return mul_size(mul_size(mq_max_queues, MQ_MAX_LANES), sizeof(MqLaneState));
}

/* shmem_request_hook: room for the shared struct and the queue hash */
static void
mq_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(add_size(shared_size(),
											 hash_estimate_size(mq_max_queues,
																sizeof(MqQueueShared))),
									hash_estimate_size(GEN_PROGRESS_MAX,
													   sizeof(GenProgressShared))));
	RequestAddinShmemSpace(hash_estimate_size(KNOWN_EMPTY_MAX, sizeof(KnownEmpty)));
	RequestAddinShmemSpace(lane_pool_size());
	RequestAddinShmemSpace(wakes_size());
}

/* shmem_startup_hook: the shared struct, its free list and the queue hash */
static void
mq_shmem_startup(void)
{
	bool		found;
	HASHCTL		ctl;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	mqq_shared = ShmemInitStruct("queue_ext state", shared_size(), &found);
	if (!found)
	{
		mqq_shared->tranche_id = LWLockNewTrancheId();
		LWLockInitialize(&mqq_shared->lock, mqq_shared->tranche_id);
		LWLockInitialize(&mqq_shared->summary_lock, mqq_shared->tranche_id);
		LWLockInitialize(&mqq_shared->empty_lock, mqq_shared->tranche_id);
		pg_atomic_init_u64(&mqq_shared->states_made, 0);
		for (int i = 0; i < MQ_OFFSET_LOCKS; i++)
			LWLockInitialize(&mqq_shared->offset_locks[i], mqq_shared->tranche_id);
		SpinLockInit(&mqq_shared->pool_lock);
		dlist_init(&mqq_shared->free_tracked);
		for (int i = 0; i < mq_max_in_flight; i++)
			dlist_push_tail(&mqq_shared->free_tracked, &mqq_shared->pool[i].node);
		mqq_shared->nfree = mq_max_in_flight;
		mqq_shared->lane_blocks_used = 0;
	}
	mqq_lane_pool = ShmemInitStruct("queue_ext lane states", lane_pool_size(), &found);
	mqq_wakes = ShmemInitStruct("queue_ext consume wakes", wakes_size(), &found);
	if (!found)
	{
		Size		n = wakes_size() / sizeof(pg_atomic_uint32);

		for (Size i = 0; i < n; i++)
			pg_atomic_init_u32(&mqq_wakes[i], 0);
	}
	ctl.keysize = sizeof(MqQueueKey);
	ctl.entrysize = sizeof(MqQueueShared);
	mq_queue_htab = ShmemInitHash("queue_ext queues", mq_max_queues, mq_max_queues,
								  &ctl, HASH_ELEM | HASH_BLOBS);
	ctl.keysize = sizeof(GenProgressKey);
	ctl.entrysize = sizeof(GenProgressShared);
	gen_progress_htab = ShmemInitHash("queue_ext stream generations",
									  GEN_PROGRESS_MAX, GEN_PROGRESS_MAX,
									  &ctl, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	ctl.keysize = sizeof(KnownEmptyKey);
	ctl.entrysize = sizeof(KnownEmpty);
	known_empty_htab = ShmemInitHash("queue_ext queues found unused",
									 KNOWN_EMPTY_MAX, KNOWN_EMPTY_MAX,
									 &ctl, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	LWLockRelease(AddinShmemInitLock);
	LWLockRegisterTranche(mqq_shared->tranche_id, "queue_ext");
}

/*
 * Define queue state's settings and, when preloading, install the hooks
 * that request and set up its shared memory; from _PG_init.
 */
void
mq_queue_init(void)
{
	DefineCustomIntVariable("mq.max_queues",
							"Most queues (in all databases) with consumer state in shared memory.",
							NULL,
							&mq_max_queues, 4096, 16, 1 << 20,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.max_in_flight",
							"Most messages tracked at once in shared memory (leased, awaiting redelivery or settlement).",
							NULL,
							&mq_max_in_flight, 65536, 1024, 1 << 26,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mq.lane_segment_size",
							"Size at which a queue's entry log starts a new generation.",
							"Generations whose entries are all settled are dropped whole.",
							&mq_lane_segment_size, 8192, 2, MQ_LANE_MAX_BLOCKS / 2,
							PGC_SIGHUP, GUC_UNIT_BLOCKS, NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = mq_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = mq_shmem_startup;
}

/* A tracked entry from the pool; NULL when all of them are in use */
static MqTracked *
tracked_alloc(void)
{
	MqTracked  *t = NULL;

	SpinLockAcquire(&mqq_shared->pool_lock);
	if (!dlist_is_empty(&mqq_shared->free_tracked))
	{
		t = dlist_container(MqTracked, node, dlist_pop_head_node(&mqq_shared->free_tracked));
		mqq_shared->nfree--;
	}
	SpinLockRelease(&mqq_shared->pool_lock);
	return t;
}

/* Take t off its queue's list and give it back to the pool (queue lock held) */
void
mqq_tracked_free(MqQueueShared *qs, MqTracked *t)
{
	dlist_delete(&t->node);
	qs->ntracked--;
	SpinLockAcquire(&mqq_shared->pool_lock);
	dlist_push_head(&mqq_shared->free_tracked, &t->node);
	mqq_shared->nfree++;
	SpinLockRelease(&mqq_shared->pool_lock);
}

/*
 * The live (not yet settled) tracked entry of msg_id.  A message can be in
 * a queue twice over time -- nacked with a delay, it is settled and
 * appended again -- while its settled entry waits for compaction.
 *
 * XXX A linear walk over what the queue tracks: each settlement costs time
 * proportional to what is in flight on the queue.
 */
MqTracked *
mqq_tracked_find(MqQueueShared *qs, int64 msg_id)
{
	dlist_iter	it;

	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->msg_id == msg_id && t->state != MQ_T_SETTLED)
			return t;
	}
	return NULL;
}

/*
 * Find msg_id on qs's tracked list, starting after *cursor (NULL: at the
 * head) and wrapping around; *cursor is left at the entry found.  The ids
 * of one settle call mostly come in the order they were delivered, which
 * is the list's order, so a batch costs about one walk of the list, not
 * one walk per id.
 */
MqTracked *
mqq_tracked_find_from(MqQueueShared *qs, int64 msg_id, dlist_node **cursor)
{
	dlist_node *start = *cursor ? *cursor : &qs->tracked.head;
	dlist_node *node = start;

	if (dlist_is_empty(&qs->tracked))
		return NULL;
	do
	{
		MqTracked  *t;

		node = node->next;
		if (node == &qs->tracked.head)
			continue;
		t = dlist_container(MqTracked, node, node);
		if (t->msg_id == msg_id && t->state != MQ_T_SETTLED)
		{
			*cursor = node;
			return t;
		}
	} while (node != start);
	return NULL;
}

/*
 * A new tracked entry for the entry at qpos, at the end of the queue's
 * list, with nothing known of it yet; NULL when no slot is free.
 */
MqTracked *
mqq_track_new(MqQueueShared *qs, uint64 qpos)
{
	MqTracked  *t = tracked_alloc();

	if (t == NULL)
		return NULL;
	memset(t, 0, sizeof(MqTracked));
	t->qpos = qpos;
	t->owner = -1;
	t->prev_owner = -1;
	t->expires_at = DT_NOEND;
	t->offset = -1;
	dlist_push_tail(&qs->tracked, &t->node);
	qs->ntracked++;
	return t;
}

/* No slot for another queue: let go of the hash lock and say so */
static void too_many_queues(void) pg_attribute_noreturn();

static void
too_many_queues(void)
{
	LWLockRelease(&mqq_shared->lock);
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("too many active queues"),
			 errhint("Increase mq.max_queues (currently %d) and restart the server.",
					 mq_max_queues)));
}

/* ---------- queues found unused (see KnownEmpty) ---------- */

static KnownEmptyKey
known_empty_key(Oid dbid, int32 queue_id)
{
	KnownEmptyKey key;

	memset(&key, 0, sizeof(key));
	key.dbid = dbid;
	key.queue_id = queue_id;
	return key;
}

/*
 * A state of queue queue_id of database dbid was made (or dropped): its
 * record goes, and no reader that began before records it
 */
static void
known_empty_forget(Oid dbid, int32 queue_id)
{
	KnownEmptyKey key = known_empty_key(dbid, queue_id);

	if (known_empty_htab == NULL)
		return;
	LWLockAcquire(&mqq_shared->empty_lock, LW_EXCLUSIVE);
	pg_atomic_fetch_add_u64(&mqq_shared->states_made, 1);
	(void) hash_search(known_empty_htab, &key, HASH_REMOVE, NULL);
	LWLockRelease(&mqq_shared->empty_lock);
}

uint64
mqq_known_empty_stamp(void)
{
	/* (not preloaded: the look for the state that follows says so) */
	if (mqq_shared == NULL)
		return 0;
	return pg_atomic_read_u64(&mqq_shared->states_made);
}

bool
mqq_known_empty(MqQueue *q)
{
	KnownEmptyKey key = known_empty_key(MyDatabaseId, q->id);
	KnownEmpty *e;
	bool		known;

	if (known_empty_htab == NULL)
		return false;
	LWLockAcquire(&mqq_shared->empty_lock, LW_SHARED);
	e = hash_search(known_empty_htab, &key, HASH_FIND, NULL);
	known = e != NULL && e->anchor == q->anchor && e->lane0 == q->lanes[0];
	LWLockRelease(&mqq_shared->empty_lock);
	return known;
}

void
mqq_known_empty_set(MqQueue *q, uint64 stamp)
{
	KnownEmptyKey key = known_empty_key(MyDatabaseId, q->id);
	KnownEmpty *e;

	if (known_empty_htab == NULL || q->nlanes < 1 || !OidIsValid(q->lanes[0]))
		return;
	LWLockAcquire(&mqq_shared->empty_lock, LW_EXCLUSIVE);
	if (pg_atomic_read_u64(&mqq_shared->states_made) == stamp)
	{
		/* full: not recorded (it is looked at next time) */
		e = hash_search(known_empty_htab, &key, HASH_ENTER_NULL, NULL);
		if (e != NULL)
		{
			e->anchor = q->anchor;
			e->lane0 = q->lanes[0];
		}
	}
	LWLockRelease(&mqq_shared->empty_lock);
}

/* Find (optionally create) the shared entry of a queue */
MqQueueShared *
mqq_queue_shared(MqQueueKey key, bool create)
{
	MqQueueShared *qs;
	bool		found;

	if (mqq_shared == NULL)
		mq_require_preload("consuming and publishing");

	LWLockAcquire(&mqq_shared->lock, LW_SHARED);
	qs = hash_search(mq_queue_htab, &key, HASH_FIND, NULL);
	LWLockRelease(&mqq_shared->lock);
	if (qs || !create)
		return qs;

	LWLockAcquire(&mqq_shared->lock, LW_EXCLUSIVE);
	qs = hash_search(mq_queue_htab, &key, HASH_ENTER_NULL, &found);
	if (qs == NULL)
		too_many_queues();
	if (!found)
	{
		/*
		 * dynahash reuses removed entries without clearing them; a backend
		 * may still wait on the lock of a removed queue's slot, so a lock is
		 * initialised only once per slot (it rechecks the key, see
		 * mqq_queue_lock).
		 */
		if (qs->magic != MQ_SLOT_MAGIC)
		{
			/*
			 * its lanes, for good; dynahash may make more slots than
			 * mq.max_queues when shared memory is left over, but there are
			 * no more lane blocks than that
			 */
			if (mqq_shared->lane_blocks_used >= mq_max_queues)
			{
				hash_search(mq_queue_htab, &key, HASH_REMOVE, NULL);
				too_many_queues();
			}
			qs->lanes = mqq_lane_pool +
				(Size) mqq_shared->lane_blocks_used++ * MQ_MAX_LANES;
			LWLockInitialize(&qs->lock, mqq_shared->tranche_id);
			LWLockInitialize(&qs->gen_lock, mqq_shared->tranche_id);
			ConditionVariableInit(&qs->cv);
			pg_atomic_init_u64(&qs->oldest_at, 0);
			qs->magic = MQ_SLOT_MAGIC;
		}
		qs->dropped = false;
		qs->loaded = false;
		dlist_init(&qs->tracked);
		qs->ntracked = 0;
		qs->nwaiting = 0;
		qs->leases_ran_out = false;
		qs->oldest_known = false;
		qs->stream = NULL;
		qs->nretry_delays = 0;
		memset(&qs->counters, 0, sizeof(qs->counters));
		/* a stream's next offsets are read from its logs at the first append */
		for (int lane = 0; lane < MQ_MAX_LANES; lane++)
			qs->lanes[lane].offsets_known = false;
	}
	LWLockRelease(&mqq_shared->lock);
	/* before anything is appended: see KnownEmpty */
	if (!found)
		known_empty_forget(key.dbid, key.queue_id);
	return qs;
}

/*
 * The offset lock of a stream partition (lock 2b of queue_int.h): one of a
 * fixed set, by a hash of the queue's key and the lane
 */
LWLock *
mqq_offset_lock(MqQueueShared *qs, int lane)
{
	uint32		h = hash_bytes_uint32((uint32) qs->key.queue_id) ^
		hash_bytes_uint32((uint32) qs->key.dbid * 257 + (uint32) lane);

	return &mqq_shared->offset_locks[h % MQ_OFFSET_LOCKS];
}

/*
 * Lock the shared state of a queue known by key, if it still exists;
 * NULL when it does not (deleted, or never loaded since a restart).  hint,
 * if not NULL, is where the state was found before (in this transaction):
 * checked first, under its lock, it spares the lookup in the queue hash
 * under the hash's one lock.  (A removed slot stays a slot: its lock may
 * be taken to check it; see mqq_queue_shared.)
 */
MqQueueShared *
mqq_queue_lock_key(MqQueueKey key, MqQueueShared *hint)
{
	MqQueueShared *qs = hint;

	for (;;)
	{
		if (qs == NULL)
			qs = mqq_queue_shared(key, false);
		if (qs == NULL)
			return NULL;
		LWLockAcquire(&qs->lock, LW_EXCLUSIVE);
		/* (a key has one live slot: the hint, if it still is key's) */
		if (mqq_slot_is(qs, key))
		{
			if (qs->loaded)
				return qs;
			LWLockRelease(&qs->lock);
			return NULL;
		}
		/* removed or reused since: look it up */
		LWLockRelease(&qs->lock);
		qs = NULL;
	}
}

/*
 * Forget a deleted queue's state.  mq.queue_delete calls this only once its
 * transaction has committed (topology_sql.c, queue_xact.c), still holding the
 * queue's object lock but no longer waiting for anything: called before
 * the commit it would wait for the queue lock of a backend that waits to
 * open a lane table under it (a take, the worker's maintenance, a load),
 * a deadlock the deadlock detector cannot see.  (With the object lock
 * first in the lock order no such backend exists; the commit is needed
 * anyway, since a rollback keeps the queue.)
 */
static void
state_drop(MqQueueShared *qs)
{
	LWLockAcquire(&qs->lock, LW_EXCLUSIVE);
	while (!dlist_is_empty(&qs->tracked))
		mqq_tracked_free(qs, dlist_container(MqTracked, node, dlist_head_node(&qs->tracked)));
	qs->loaded = false;
	qs->dropped = true;
	hash_search(mq_queue_htab, &qs->key, HASH_REMOVE, NULL);
	LWLockRelease(&qs->lock);
	ConditionVariableBroadcast(&qs->cv);
}

void
mq_queue_state_drop(int32 queue_id)
{
	HASH_SEQ_STATUS st;
	MqQueueShared *qs;

	if (!mq_preloaded)
		return;
	known_empty_forget(MyDatabaseId, queue_id);

	/*
	 * The queue's own state and those of its consumer groups: a walk of the
	 * hash (bounded by mq.max_queues), only when a queue is deleted.
	 * dynahash allows removing the entry just returned during a walk.
	 */
	LWLockAcquire(&mqq_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&st, mq_queue_htab);
	while ((qs = hash_seq_search(&st)) != NULL)
		if (qs->key.dbid == MyDatabaseId && qs->key.queue_id == queue_id)
			state_drop(qs);
	LWLockRelease(&mqq_shared->lock);
	mqq_gen_progress_forget_queue(queue_id);
}

/* ---------- stream generation summaries (queue_int.h) ---------- */

static GenProgressKey
gen_progress_key(Oid relid)
{
	GenProgressKey key;

	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.relid = relid;
	return key;
}

/*
 * Remove the entries of queue queue_id of this database, or every entry
 * (queue_id 0): a walk of the hash, summary_lock held exclusively
 */
static void
gen_progress_remove(int32 queue_id)
{
	HASH_SEQ_STATUS st;
	GenProgressShared *e;

	hash_seq_init(&st, gen_progress_htab);
	while ((e = hash_seq_search(&st)) != NULL)
		if (queue_id == 0 ||
			(e->key.dbid == MyDatabaseId && e->p.queue_id == queue_id))
			(void) hash_search(gen_progress_htab, &e->key, HASH_REMOVE, NULL);
}

bool
mqq_gen_progress_get(Oid relid, MqGenProgress *out)
{
	GenProgressKey key = gen_progress_key(relid);
	GenProgressShared *e;

	if (gen_progress_htab == NULL)
		return false;
	LWLockAcquire(&mqq_shared->summary_lock, LW_SHARED);
	e = hash_search(gen_progress_htab, &key, HASH_FIND, NULL);
	if (e != NULL)
		*out = e->p;
	LWLockRelease(&mqq_shared->summary_lock);
	return e != NULL;
}

void
mqq_gen_progress_put(MqGenProgress *p)
{
	GenProgressKey key = gen_progress_key(p->relid);
	GenProgressShared *e;
	bool		found;

	if (gen_progress_htab == NULL)
		return;
	LWLockAcquire(&mqq_shared->summary_lock, LW_EXCLUSIVE);
	e = hash_search(gen_progress_htab, &key, HASH_ENTER_NULL, &found);
	if (e == NULL)
	{
		/*
		 * Full: of generations of dropped databases or extensions, which
		 * nothing removes, or simply many streams.  It is only a cache (each
		 * backend keeps its own progress), so start it over.
		 */
		gen_progress_remove(0);
		e = hash_search(gen_progress_htab, &key, HASH_ENTER_NULL, &found);
	}
	if (e != NULL &&
		(!found || !mqq_gen_progress_same(p, &e->p) || mqq_gen_progress_ahead(p, &e->p)))
		e->p = *p;
	LWLockRelease(&mqq_shared->summary_lock);
}

void
mqq_gen_progress_forget(Oid relid)
{
	GenProgressKey key = gen_progress_key(relid);

	if (gen_progress_htab == NULL)
		return;
	LWLockAcquire(&mqq_shared->summary_lock, LW_EXCLUSIVE);
	(void) hash_search(gen_progress_htab, &key, HASH_REMOVE, NULL);
	LWLockRelease(&mqq_shared->summary_lock);
}

/* A walk of the hash: only when a queue is deleted */
void
mqq_gen_progress_forget_queue(int32 queue_id)
{
	if (gen_progress_htab == NULL)
		return;
	LWLockAcquire(&mqq_shared->summary_lock, LW_EXCLUSIVE);
	gen_progress_remove(queue_id);
	LWLockRelease(&mqq_shared->summary_lock);
}

void
mq_group_state_drop(int32 queue_id, int32 group_id)
{
	MqQueueKey	key;
	MqQueueShared *qs;

	if (!mq_preloaded)
		return;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.queue_id = queue_id;
	key.group_id = group_id;
	qs = mqq_queue_shared(key, false);
	if (qs == NULL)
		return;
	LWLockAcquire(&mqq_shared->lock, LW_EXCLUSIVE);
	if (mqq_key_equal(qs->key, key) && !qs->dropped)
		state_drop(qs);
	LWLockRelease(&mqq_shared->lock);
}

/* The hash key of q's state (a consumer group's view: the group's) */
MqQueueKey
mqq_key(MqQueue *q)
{
	MqQueueKey	key;

	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.queue_id = q->id;
	key.group_id = q->group_id;
	return key;
}

/* Copy a committed entry's columns into t, which becomes READY */
void
mqq_tracked_fill(MqTracked *t, TupleTableSlot *slot)
{
	bool		isnull;

	t->msg_id = DatumGetInt64(slot_getattr(slot, MQ_ENTRY_ATT_MSG_ID, &isnull));
	t->visible_at = DatumGetTimestampTz(slot_getattr(slot, MQ_ENTRY_ATT_VISIBLE_AT, &isnull));
	t->expires_at = DatumGetTimestampTz(slot_getattr(slot, MQ_ENTRY_ATT_EXPIRES_AT, &isnull));
	if (isnull)
		t->expires_at = DT_NOEND;
	/* appended again after a nack with delay: it was delivered before */
	t->delivery_count = DatumGetInt32(slot_getattr(slot, MQ_ENTRY_ATT_DELIVERY_COUNT, &isnull));
	if (isnull)
		t->delivery_count = 0;
	t->redelivered = t->delivery_count > 0;
	t->body_size = mqq_entry_body_size(slot);
	t->group_hash = 0;
	t->offset = -1;
	if (slot->tts_tupleDescriptor->natts >= MQ_ENTRY_ATT_OFFSET)
	{
		Datum		o = slot_getattr(slot, MQ_ENTRY_ATT_OFFSET, &isnull);

		if (!isnull)
			t->offset = DatumGetInt64(o);
	}
	if (slot->tts_tupleDescriptor->natts >= MQ_ENTRY_ATT_GROUP_HASH)
	{
		Datum		g = slot_getattr(slot, MQ_ENTRY_ATT_GROUP_HASH, &isnull);

		if (!isnull)
			t->group_hash = (uint32) DatumGetInt32(g);
	}
	t->tag_hash = 0;
	t->tag_known = slot->tts_tupleDescriptor->natts >= MQ_ENTRY_ATT_TAG_HASH;
	if (t->tag_known)
	{
		Datum		h = slot_getattr(slot, MQ_ENTRY_ATT_TAG_HASH, &isnull);

		if (!isnull)
			t->tag_hash = (uint32) DatumGetInt32(h);
	}
	t->state = MQ_T_READY;
}

/*
 * Offset of a stream entry row read as st (-1: not known, the row is not
 * in the slot, or no offset)
 */
int64
mqq_entry_offset(TupleTableSlot *slot, MqlogRowState st)
{
	bool		isnull;
	Datum		d;

	if ((st != MQLOG_ROW_COMMITTED && st != MQLOG_ROW_OWN) ||
		slot->tts_tupleDescriptor->natts < MQ_ENTRY_ATT_OFFSET)
		return -1;
	d = slot_getattr(slot, MQ_ENTRY_ATT_OFFSET, &isnull);
	return isnull ? -1 : DatumGetInt64(d);
}

/* Body bytes an entry row records (x-max-length-bytes), else 0 */
int32
mqq_entry_body_size(TupleTableSlot *slot)
{
	bool		isnull;
	Datum		d;

	/* an entry log from before the column (see mqq_entry_values) */
	if (slot->tts_tupleDescriptor->natts < MQ_ENTRY_ATT_BODY_SIZE)
		return 0;
	d = slot_getattr(slot, MQ_ENTRY_ATT_BODY_SIZE, &isnull);
	return isnull ? 0 : DatumGetInt32(d);
}

/* t waits for its publisher to end; a placeholder id no ack can name */
void
mqq_tracked_set_pending(MqTracked *t)
{
	t->state = MQ_T_PENDING;
	t->returned = 0;
	t->msg_id = -(int64) (t->qpos & PG_INT64_MAX) - 1;
}

/*
 * A newly tracked entry as the scan found it: READY when its publisher
 * committed, else PENDING (in progress or our own), looked at again once
 * that transaction has ended.
 */
void
mqq_track_examined(MqTracked *t, MqlogRowState st, TupleTableSlot *slot)
{
	if (st != MQLOG_ROW_COMMITTED)
	{
		mqq_tracked_set_pending(t);
		return;
	}
	mqq_tracked_fill(t, slot);
}

/*
 * A lane's floor: its lowest tracked entry that is not settled, or else its
 * scan position (queue lock held).
 */
uint64
mqq_lane_floor(MqQueueShared *qs, int lane)
{
	uint64		f = qs->lanes[lane].scan_pos;
	dlist_iter	it;

	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state != MQ_T_SETTLED && mq_qpos_lane(t->qpos) == lane && t->qpos < f)
			f = t->qpos;
	}
	return f;
}

/*
 * Drop settled entries below their lane's floor; optionally return each
 * lane's floor (queue lock held).
 */
void
mqq_compact(MqQueueShared *qs, uint64 *floors)
{
	uint64		f[MQ_MAX_LANES];
	dlist_mutable_iter it;
	dlist_iter	fit;

	/* every lane's mqq_lane_floor, in one pass over the tracked entries */
	for (int lane = 0; lane < qs->nlanes; lane++)
		f[lane] = qs->lanes[lane].scan_pos;
	dlist_foreach(fit, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, fit.cur);
		int			lane = mq_qpos_lane(t->qpos);

		if (t->state != MQ_T_SETTLED && t->qpos < f[lane])
			f[lane] = t->qpos;
	}
	dlist_foreach_modify(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->state == MQ_T_SETTLED && t->qpos < f[mq_qpos_lane(t->qpos)])
			mqq_tracked_free(qs, t);
	}
	if (floors)
		memcpy(floors, f, sizeof(uint64) * qs->nlanes);
}

/* qsort order of tracked entries by MqTracked.returned */
static int
returned_cmp(const void *a, const void *b)
{
	return mqq_return_cmp((*(MqTracked *const *) a)->returned,
						  (*(MqTracked *const *) b)->returned);
}

/*
 * ts[], ready again together (lease expiry, session end), become returns
 * in the order they were delivered (queue lock held; a no-op but on
 * queues that deliver returns first).  Sorts ts[].
 */
void
mqq_return_together(MqQueueShared *qs, MqTracked **ts, int n)
{
	if (!qs->returns_first)
		return;
	if (n > 1)
		qsort(ts, n, sizeof(MqTracked *), returned_cmp);
	for (int i = 0; i < n; i++)
		mqq_tracked_returned(qs, ts[i]);
}
