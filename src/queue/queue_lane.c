/*-------------------------------------------------------------------------
 *
 * queue_lane.c
 *	  The tables of a queue: per priority lane and generation, an entry
 *	  log (q<queue>_<lane>_<gen>) and a settlement log
 *	  (s<queue>_<lane>_<gen>).  Creating and dropping them, appending
 *	  entries, appending settlement records.
 *
 * Both are mqlog tables read in the order they were written: a position
 * in an entry log is the qpos of queue.h, and a settlement record names
 * the qpos it settles.  The records of a generation go to its own
 * settlement log, so the two are dropped together once the lane's floor
 * has passed them (queue_append.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "mqutils.h"
#include "owner.h"
#include "queue/queue_int.h"

/*
 * A backend-local cache of the relids of lane tables, so that a publish or
 * a consume does not print a table name and look it up in two syscaches
 * for each table it opens.  Only found relids are kept.  Any relcache
 * invalidation empties it: a lane table that is dropped or renamed sends
 * one for its relid, which is processed at the same points as the
 * syscache invalidation that would make the name lookup see the change
 * (and an invalidation that arrives while we look a name up keeps that
 * answer out of the cache).  Invalidations of other relations are rare
 * next to lookups, and the cache is cheap to refill.
 */
typedef struct LaneRelKey
{
	int32		queue_id;
	int32		lane;
	int32		gen;
	int32		settle;
} LaneRelKey;

typedef struct LaneRelEntry
{
	LaneRelKey	key;
	Oid			relid;
} LaneRelEntry;

#define LANE_RELID_CACHE_MAX 4096

static HTAB *lane_relids = NULL;
static bool lane_relids_reset = false;
static uint64 lane_relids_invals = 0;

static void
lane_relid_inval(Datum arg, Oid relid)
{
	lane_relids_reset = true;
	lane_relids_invals++;
}

/* Count relcache invalidations in lane_relids_invals from now on */
static void
lane_relid_inval_register(void)
{
	static bool registered = false;

	if (!registered)
	{
		CacheRegisterRelcacheCallback(lane_relid_inval, (Datum) 0);
		registered = true;
	}
}

/* The name of a lane generation's entry log (or settlement log) */
static void
lane_relname(char *name, int32 queue_id, int lane, int gen, bool settle)
{
	snprintf(name, NAMEDATALEN, "%c%d_%d_%d", settle ? 's' : 'q', queue_id, lane, gen);
}

Oid
mqq_lane_relid(int32 queue_id, int lane, int gen, bool settle)
{
	char		name[NAMEDATALEN];
	LaneRelKey	key;
	LaneRelEntry *e;
	uint64		invals;
	Oid			relid;

	if (lane_relids == NULL || lane_relids_reset)
	{
		HASHCTL		ctl;

		lane_relid_inval_register();
		if (lane_relids != NULL)
			hash_destroy(lane_relids);
		ctl.keysize = sizeof(LaneRelKey);
		ctl.entrysize = sizeof(LaneRelEntry);
		ctl.hcxt = CacheMemoryContext;
		lane_relids = hash_create("queue_ext lane relids", 256, &ctl,
								  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		lane_relids_reset = false;
	}
	key.queue_id = queue_id;
	key.lane = lane;
	key.gen = gen;
	key.settle = settle ? 1 : 0;
	e = hash_search(lane_relids, &key, HASH_FIND, NULL);
	if (e != NULL)
		return e->relid;

	invals = lane_relids_invals;
	lane_relname(name, queue_id, lane, gen, settle);
	relid = get_relname_relid(name, get_namespace_oid(MQ_STORAGE_SCHEMA, false));
	if (OidIsValid(relid) && invals == lane_relids_invals && !lane_relids_reset &&
		hash_get_num_entries(lane_relids) < LANE_RELID_CACHE_MAX)
	{
		e = hash_search(lane_relids, &key, HASH_ENTER, NULL);
		e->relid = relid;
	}
	return relid;
}

Oid
mqq_lane_relid_fresh(int32 queue_id, int lane, int gen)
{
	Oid			relid = mqq_lane_relid(queue_id, lane, gen, false);
	char		name[NAMEDATALEN];

	if (OidIsValid(relid))
		return relid;
	lane_relname(name, queue_id, lane, gen, false);
	return mq_relid_fresh(MQ_STORAGE_SCHEMA, name);
}

/*
 * The segment number of an entry log whose rows can carry messages (a
 * stream's, queue.h), from mq.cat_inline; 0 for any other entry log.  Kept
 * per backend, by relid, until a relcache invalidation (as lane relids: a
 * dropped table's relid may come back as another's).
 */
typedef struct InlineSegnoEntry
{
	Oid			relid;
	int64		segno;
	uint64		invals;			/* lane_relids_invals when looked up */
} InlineSegnoEntry;

static HTAB *inline_segnos = NULL;

int64
mqq_entry_log_inline_segno(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	InlineSegnoEntry *e;
	bool		found;
	uint64		invals;
	Datum		d;
	int64		segno = 0;

	if (RelationGetDescr(rel)->natts != MQ_ENTRY_NATTS + MQ_ENTRY_PAYLOAD_NATTS)
		return 0;
	if (inline_segnos == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(InlineSegnoEntry);
		ctl.hcxt = CacheMemoryContext;
		inline_segnos = hash_create("queue_ext inline segnos", 64, &ctl,
									HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		lane_relid_inval_register();
	}
	e = hash_search(inline_segnos, &relid, HASH_FIND, NULL);
	if (e != NULL && e->invals == lane_relids_invals)
		return e->segno;

	invals = lane_relids_invals;
	if (mq_lookup_unique("cat_inline", "cat_inline_relid_key", 2, F_OIDEQ,
						 ObjectIdGetDatum(relid), 1, &d))
		segno = DatumGetInt64(d);
	if (segno == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("entry log \"%s\" has no segment number",
						RelationGetRelationName(rel)),
				 errdetail("It has the columns of a stream's entry log, and no row in mq.cat_inline."),
				 errhint("Delete and declare the stream again.")));
	if (invals == lane_relids_invals && hash_get_num_entries(inline_segnos) < LANE_RELID_CACHE_MAX)
	{
		e = hash_search(inline_segnos, &relid, HASH_ENTER, &found);
		e->segno = segno;
		e->invals = invals;
	}
	return segno;
}

Oid
mqq_settle_relid(MqQueue *q, int lane, int gen)
{
	char		name[NAMEDATALEN];

	if (q->group_id == 0)
		return mqq_lane_relid(q->id, lane, gen, true);
	snprintf(name, sizeof(name), "g%d_%d_%d_%d", q->id, q->group_id, lane, gen);
	return get_relname_relid(name, get_namespace_oid(MQ_STORAGE_SCHEMA, false));
}

/*
 * The generations of a lane's entry log that exist, lowest and highest
 * (false: none).  One index scan of pg_class over the names
 * q<queue>_<lane>_*, rather than a name lookup per generation number: a
 * lane whose tables are gone (a queue deleted while this backend still
 * had it in its catalog cache) would otherwise cost one syscache lookup,
 * and one negative cache entry, for each of the 65,536 possible
 * generations.  Takes no lock but the catalog's own, so it may run under
 * the queue lock.
 */
bool
mqq_lane_gens(int32 queue_id, int lane, int *low, int *high)
{
	char		prefix[NAMEDATALEN];
	MqStorageScan s;
	Form_pg_class c;
	const char *rest;
	bool		found = false;

	snprintf(prefix, sizeof(prefix), "q%d_%d_", queue_id, lane);
	mq_storage_scan_begin(&s, prefix, false);
	while ((c = mq_storage_scan_next(&s, &rest)) != NULL)
	{
		char	   *end;
		long		gen;

		gen = strtol(rest, &end, 10);
		if (end == rest || *end != '\0' || gen < 0 || gen > MQ_QPOS_MAX_GEN)
			continue;
		if (!found || gen < *low)
			*low = (int) gen;
		if (!found || gen > *high)
			*high = (int) gen;
		found = true;
	}
	mq_storage_scan_end(&s);
	return found;
}

/*
 * Lock, without waiting, in AccessExclusiveLock every consumer group log of
 * a lane generation (g<queue>_<group>_<lane>_<gen>; one index scan of
 * pg_class over the names g<queue>_*), before _lane_drop drops them with
 * the generation: its DROP TABLE would wait for a consumer that wrote to
 * one, while the entry log it has locked already holds up readers.  false:
 * one is busy (the locks taken are let go again).
 */
bool
mqq_group_logs_trylock(int32 queue_id, int lane, int gen)
{
	char		prefix[NAMEDATALEN];
	MqStorageScan s;
	Form_pg_class c;
	const char *rest;
	List	   *locked = NIL;
	bool		ok = true;
	ListCell   *lc;

	snprintf(prefix, sizeof(prefix), "g%d_", queue_id);
	mq_storage_scan_begin(&s, prefix, false);
	while (ok && (c = mq_storage_scan_next(&s, &rest)) != NULL)
	{
		int			group_id,
					l,
					g;
		char		tail;

		if (sscanf(rest, "%d_%d_%d%c", &group_id, &l, &g, &tail) != 3 ||
			l != lane || g != gen)
			continue;
		if (ConditionalLockRelationOid(c->oid, AccessExclusiveLock))
			locked = lappend_oid(locked, c->oid);
		else
			ok = false;
	}
	mq_storage_scan_end(&s);
	if (!ok)
		foreach(lc, locked)
			UnlockRelationOid(lfirst_oid(lc), AccessExclusiveLock);
	list_free(locked);
	return ok;
}

/* Run SELECT mq.<fn>(queue, lane, gen) as the extension owner */
static void
lane_ddl(const char *fn, int32 queue_id, int lane, int gen)
{
	MqOwnerScope owner;
	Oid			types[3] = {INT4OID, INT4OID, INT4OID};
	Datum		values[3] = {Int32GetDatum(queue_id), Int32GetDatum(lane), Int32GetDatum(gen)};
	char		sql[64];

	snprintf(sql, sizeof(sql), "SELECT mq.%s($1, $2, $3)", fn);
	mq_owner_enter(&owner);
	mq_owner_exec(sql, 3, types, values, NULL, false, SPI_OK_SELECT,
				  "create or drop a queue's log");
	mq_owner_leave(&owner);
}

/* Create a consumer group's settlement log of a lane generation */
static void
group_log_create(MqQueue *q, int lane, int gen)
{
	MqOwnerScope owner;
	Oid			types[4] = {INT4OID, INT4OID, INT4OID, INT4OID};
	Datum		values[4] = {Int32GetDatum(q->id), Int32GetDatum(q->group_id),
	Int32GetDatum(lane), Int32GetDatum(gen)};

	mq_owner_enter(&owner);
	mq_owner_exec("SELECT mq._group_log_create($1, $2, $3, $4)", 4, types, values, NULL,
				  false, SPI_OK_SELECT, "create a consumer group's log");
	mq_owner_leave(&owner);
}

void
mqq_lane_create(MqQueue *q, int lane, int gen)
{
	lane_ddl("_lane_create", q->id, lane, gen);
}

void
mqq_lane_drop(int32 queue_id, int lane, int gen)
{
	lane_ddl("_lane_drop", queue_id, lane, gen);
}

/* An entry position must fit its bits of a queue position */
void
mqq_check_lane_block(Relation rel, ItemPointer tid)
{
	if (ItemPointerGetBlockNumber(tid) >= MQ_LANE_MAX_BLOCKS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("entry log \"%s\" is full", RelationGetRelationName(rel)),
				 errhint("The maintenance worker starts a new generation long before this; check that it runs.")));
}

/*
 * Columns of an entry row.  An entry log created before entries had a
 * body_size column (queue_ext 0.1 before x-max-length-bytes) has four;
 * its queue cannot have that limit, so the size is simply not written.
 * One created before the offset column has five, and is not a stream's.
 */
void
mqq_entry_values(MqEntry *e, TupleDesc desc, const Datum *payload,
				 const bool *payload_null, Datum *values, bool *isnull)
{
	/*
	 * callers size values and isnull for the relation's columns: at most
	 * MQ_ENTRY_NATTS, or those and a message's (a stream's, queue.h)
	 */
	if (desc->natts > MQ_ENTRY_NATTS && desc->natts != MQ_ENTRY_NATTS + MQ_ENTRY_PAYLOAD_NATTS)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("entry log has %d columns, not at most %d or %d as queue_ext writes",
						desc->natts, MQ_ENTRY_NATTS, MQ_ENTRY_NATTS + MQ_ENTRY_PAYLOAD_NATTS),
				 errhint("Entry logs are created by queue_ext; one altered by hand cannot be written to.")));
	/* the message's columns: payload, else none (NULL, not stored) */
	if (payload != NULL)
	{
		Assert(desc->natts == MQ_ENTRY_NATTS + MQ_ENTRY_PAYLOAD_NATTS);
		memcpy(values + MQ_ENTRY_NATTS, payload, sizeof(Datum) * MQ_ENTRY_PAYLOAD_NATTS);
		memcpy(isnull + MQ_ENTRY_NATTS, payload_null, sizeof(bool) * MQ_ENTRY_PAYLOAD_NATTS);
	}
	else
		for (int i = MQ_ENTRY_NATTS; i < desc->natts; i++)
		{
			values[i] = (Datum) 0;
			isnull[i] = true;
		}
	values[MQ_ENTRY_ATT_VISIBLE_AT - 1] = TimestampTzGetDatum(e->visible_at);
	values[MQ_ENTRY_ATT_MSG_ID - 1] = Int64GetDatum(e->msg_id);
	values[MQ_ENTRY_ATT_EXPIRES_AT - 1] = TimestampTzGetDatum(e->expires_at);
	values[MQ_ENTRY_ATT_DELIVERY_COUNT - 1] = Int32GetDatum(e->delivery_count);
	isnull[MQ_ENTRY_ATT_VISIBLE_AT - 1] = isnull[MQ_ENTRY_ATT_MSG_ID - 1] = false;
	isnull[MQ_ENTRY_ATT_EXPIRES_AT - 1] = (e->expires_at == DT_NOEND);
	isnull[MQ_ENTRY_ATT_DELIVERY_COUNT - 1] = (e->delivery_count == 0);
	if (desc->natts >= MQ_ENTRY_ATT_BODY_SIZE)
	{
		values[MQ_ENTRY_ATT_BODY_SIZE - 1] = Int32GetDatum(e->body_size);
		isnull[MQ_ENTRY_ATT_BODY_SIZE - 1] = (e->body_size < 0);
	}
	/* streams are newer than the offset column: their logs all have it */
	if (desc->natts >= MQ_ENTRY_ATT_OFFSET)
	{
		values[MQ_ENTRY_ATT_OFFSET - 1] = Int64GetDatum(e->offset);
		isnull[MQ_ENTRY_ATT_OFFSET - 1] = (e->offset < 0);
	}
	else if (e->offset >= 0)
		elog(ERROR, "entry log of a stream has no offset column");
	if (desc->natts >= MQ_ENTRY_ATT_GROUP_HASH)
	{
		values[MQ_ENTRY_ATT_GROUP_HASH - 1] = Int32GetDatum((int32) e->group_hash);
		isnull[MQ_ENTRY_ATT_GROUP_HASH - 1] = (e->group_hash == 0);
	}
	/* (an ordered queue is always newer than its entry logs' last column) */
	if (desc->natts >= MQ_ENTRY_ATT_TAG_HASH)
	{
		values[MQ_ENTRY_ATT_TAG_HASH - 1] = Int32GetDatum((int32) e->tag_hash);
		isnull[MQ_ENTRY_ATT_TAG_HASH - 1] = (e->tag_hash == 0);
	}
}

uint32
mq_group_hash(const char *message_group)
{
	uint32		h = hash_bytes((const unsigned char *) message_group, strlen(message_group));

	return h == 0 ? 1 : h;
}

/*
 * Set the msg_id of a formed entry row: the column follows visible_at, both
 * NOT NULL and 8 bytes, so it is at data offset 8 whatever else the row
 * holds.  Allocates nothing (it may run in a critical section).
 */
void
mqq_entry_set_msg_id(HeapTuple tup, int64 msg_id)
{
	HeapTupleHeader td = tup->t_data;

	StaticAssertStmt(MQ_ENTRY_ATT_VISIBLE_AT == 1 && MQ_ENTRY_ATT_MSG_ID == 2,
					 "msg_id is an entry row's second column, after an 8-byte one");
	memcpy((char *) td + td->t_hoff + sizeof(TimestampTz), &msg_id, sizeof(int64));
}

/* mqlog's placed callback of an inline append: the row's id is its address */
static void
inline_row_placed(HeapTuple tup, void *arg)
{
	mqq_entry_set_msg_id(tup, mq_msgid_make(*(int64 *) arg, &tup->t_self));
}

void
mqq_entry_append(Relation rel, int lane, int gen, MqEntry *entries, int n,
				 const Datum *payload, const bool *payload_null, int64 inline_segno,
				 uint64 *qpos)
{
	int			natts = RelationGetDescr(rel)->natts;
	Datum	   *values = palloc(sizeof(Datum) * natts * n);
	bool	   *isnull = palloc(sizeof(bool) * natts * n);
	ItemPointerData *tids = palloc(sizeof(ItemPointerData) * n);

	Assert(payload == NULL ||
		   (inline_segno != 0 && natts == MQ_ENTRY_NATTS + MQ_ENTRY_PAYLOAD_NATTS));
	for (int i = 0; i < n; i++)
		mqq_entry_values(&entries[i], RelationGetDescr(rel),
						 payload ? payload + i * MQ_ENTRY_PAYLOAD_NATTS : NULL,
						 payload ? payload_null + i * MQ_ENTRY_PAYLOAD_NATTS : NULL,
						 values + i * natts, isnull + i * natts);
	mqlog_insert_ordered(rel, values, isnull, n, GetCurrentCommandId(true), tids,
						 payload ? inline_row_placed : NULL, &inline_segno);
	for (int i = 0; i < n; i++)
	{
		mqq_check_lane_block(rel, &tids[i]);
		qpos[i] = mq_qpos_make(lane, gen, &tids[i]);
		if (payload != NULL)
			entries[i].msg_id = mq_msgid_make(inline_segno, &tids[i]);
	}
	pfree(values);
	pfree(isnull);
	pfree(tids);
}

void
mq_settle_batch_init(MqSettleBatch *b, MqQueue *q)
{
	memset(b, 0, sizeof(*b));
	b->q = q;
}

void
mq_settle_batch_add_arg(MqSettleBatch *b, int16 kind, uint64 qpos, int64 arg)
{
	if (b->n == b->cap)
	{
		b->cap = b->cap ? b->cap * 2 : 64;
		b->kinds = b->kinds ? repalloc(b->kinds, sizeof(int16) * b->cap) : palloc(sizeof(int16) * b->cap);
		b->qpos = b->qpos ? repalloc(b->qpos, sizeof(uint64) * b->cap) : palloc(sizeof(uint64) * b->cap);
		b->args = b->args ? repalloc(b->args, sizeof(int64) * b->cap) : palloc(sizeof(int64) * b->cap);
	}
	b->kinds[b->n] = kind;
	b->qpos[b->n] = qpos;
	b->args[b->n] = arg;
	b->n++;
}

void
mq_settle_batch_add(MqSettleBatch *b, int16 kind, uint64 qpos)
{
	mq_settle_batch_add_arg(b, kind, qpos, 0);
}

/* A record of a run candidate (see mq_settle_batch_flush) */
typedef struct RunCandidate
{
	int16		kind;
	uint64		qpos;
} RunCandidate;

/* qsort order of run candidates: kind, then position */
static int
run_candidate_cmp(const void *a, const void *b)
{
	const RunCandidate *x = a;
	const RunCandidate *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->qpos > y->qpos) - (x->qpos < y->qpos);
}

/* A slot holding the settlement record (kind, qpos, arg; 0: NULL) */
static TupleTableSlot *
settle_record_slot(TupleDesc desc, int16 kind, uint64 qpos, int64 arg)
{
	TupleTableSlot *s = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);

	ExecClearTuple(s);
	s->tts_values[0] = Int64GetDatum(mq_settle_encode(kind, qpos));
	s->tts_isnull[0] = false;
	for (int a = 1; a < desc->natts; a++)
	{
		s->tts_values[a] = Int64GetDatum(arg);
		s->tts_isnull[a] = (a > 1 || arg == 0);
	}
	ExecStoreVirtualTuple(s);
	return s;
}

/*
 * Write the collected settlement records.  A record goes to the settlement
 * log of the generation its entry belongs to (so it is dropped together
 * with it); the records of one generation are written with one
 * multi-insert, so acking a batch costs one WAL record per page.
 *
 * In a consumer group's log (which has the argument column), the DELIVERED
 * and the ACK records of the batch whose entries sit at consecutive
 * positions of one block are written as one DELIVERED_RUN or ACK_RUN
 * record each (queue.h): a consume call of n messages, and its ack, then
 * cost a record per entry-log page instead of one per message.  Equal
 * positions never join a run, so the replayed counts are those of single
 * records.
 */
void
mq_settle_batch_flush(MqSettleBatch *b)
{
	bool	   *done = palloc0(sizeof(bool) * Max(b->n, 1));
	TupleTableSlot **slots = palloc(sizeof(TupleTableSlot *) * Max(b->n, 1));
	RunCandidate *cand = NULL;
	int			options = b->frozen ? TABLE_INSERT_FROZEN : 0;
	CommandId	cid = b->frozen ? FirstCommandId : GetCurrentCommandId(true);

	for (int i = 0; i < b->n; i++)
	{
		int			lane = mq_qpos_lane(b->qpos[i]);
		int			gen = mq_qpos_gen(b->qpos[i]);
		Oid			relid;
		Relation	rel;
		TupleDesc	desc;
		bool		runs;
		int			k = 0;
		int			ncand = 0;

		if (done[i])
			continue;
		relid = mqq_settle_relid(b->q, lane, gen);
		if (!OidIsValid(relid) && b->q->group_id != 0)
		{
			/*
			 * A consumer group's log of a generation the stream created
			 * while the group was being declared (neither saw the other's
			 * uncommitted work): create it now.  Of a generation retention
			 * has dropped: nothing to record.
			 */
			if (OidIsValid(mqq_lane_relid(b->q->id, lane, gen, false)))
			{
				group_log_create(b->q, lane, gen);
				relid = mqq_settle_relid(b->q, lane, gen);
			}
			if (!OidIsValid(relid))
			{
				for (int j = i; j < b->n; j++)
					if (mq_qpos_lane(b->qpos[j]) == lane && mq_qpos_gen(b->qpos[j]) == gen)
						done[j] = true;
				continue;
			}
		}
		if (!OidIsValid(relid))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("settlement log of queue \"%s\" lane %d is missing", b->q->name, lane),
					 errdetail("Generation %d of the lane has no settlement log.", gen),
					 errhint("Delete and declare the queue again.")));
		rel = b->q->group_id != 0 ? try_table_open(relid, RowExclusiveLock) :
			table_open(relid, RowExclusiveLock);
		if (rel == NULL)
		{
			/* a group's log that retention dropped since it was looked up */
			for (int j = i; j < b->n; j++)
				if (mq_qpos_lane(b->qpos[j]) == lane && mq_qpos_gen(b->qpos[j]) == gen)
					done[j] = true;
			continue;
		}
		/* an unpinned descriptor for the k slots: see mq_log_append */
		desc = CreateTupleDescCopy(RelationGetDescr(rel));
		runs = b->q->group_id != 0 && desc->natts >= 2;
		for (int j = i; j < b->n; j++)
		{
			if (done[j] || mq_qpos_lane(b->qpos[j]) != lane || mq_qpos_gen(b->qpos[j]) != gen)
				continue;
			done[j] = true;
			/* a log without the argument column cannot hold the record */
			if (b->args[j] != 0 && desc->natts < 2)
				continue;
			if (runs && b->args[j] == 0 &&
				(b->kinds[j] == MQ_SETTLE_DELIVERED || b->kinds[j] == MQ_SETTLE_ACK))
			{
				if (cand == NULL)
					cand = palloc(sizeof(RunCandidate) * b->n);
				cand[ncand].kind = b->kinds[j];
				cand[ncand].qpos = b->qpos[j];
				ncand++;
				continue;
			}
			slots[k++] = settle_record_slot(desc, b->kinds[j], b->qpos[j], b->args[j]);
		}
		if (ncand > 1)
			qsort(cand, ncand, sizeof(RunCandidate), run_candidate_cmp);
		for (int c = 0; c < ncand;)
		{
			int			e = c + 1;

			/* the same kind, the next position, the same block */
			while (e < ncand && cand[e].kind == cand[c].kind &&
				   cand[e].qpos == cand[e - 1].qpos + 1 &&
				   (cand[e].qpos >> 16) == (cand[c].qpos >> 16))
				e++;
			if (e - c >= 2)
				slots[k++] = settle_record_slot(desc,
												cand[c].kind == MQ_SETTLE_ACK ?
												MQ_SETTLE_ACK_RUN : MQ_SETTLE_DELIVERED_RUN,
												cand[c].qpos, e - c);
			else
				slots[k++] = settle_record_slot(desc, cand[c].kind, cand[c].qpos, 0);
			c = e;
		}
		if (k == 0)
			;
		else if (k == 1)
			table_tuple_insert(rel, slots[0], cid, options, NULL);
		else
			table_multi_insert(rel, slots, k, cid, options, NULL);
		for (int j = 0; j < k; j++)
			ExecDropSingleTupleTableSlot(slots[j]);
		FreeTupleDesc(desc);
		table_close(rel, NoLock);
	}
	pfree(done);
	pfree(slots);
	if (cand != NULL)
		pfree(cand);

	/*
	 * A frozen record has no transaction whose commit would flush it: a
	 * RETRY_AT must survive a crash (a message nacked for an hour must not
	 * come back after one), so it is flushed now, as a commit would be.
	 */
	if (b->frozen && synchronous_commit > SYNCHRONOUS_COMMIT_OFF &&
		XactLastRecEnd != InvalidXLogRecPtr)
	{
		for (int i = 0; i < b->n; i++)
			if (b->kinds[i] == MQ_SETTLE_RETRY_AT)
			{
				XLogFlush(XactLastRecEnd);
				break;
			}
	}
	b->n = 0;
}

void
mqq_settle_append(MqQueue *q, int16 kind, uint64 qpos)
{
	MqSettleBatch b;

	mq_settle_batch_init(&b, q);
	mq_settle_batch_add(&b, kind, qpos);
	mq_settle_batch_flush(&b);
}
