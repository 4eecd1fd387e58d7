/*-------------------------------------------------------------------------
 *
 * msglog.c
 *	  The message log: append, fetch and look up messages.  It knows
 *	  messages only; how a message belongs to a queue (entries, settlement
 *	  records) is src/queue/'s.
 *
 * Messages live in segments, mqlog tables mq_storage.log_<segno>, durable
 * or unlogged (for messages that only reach non-durable queues; the
 * durable flag of mq.cat_segment).  A backend appends to the newest segment of the chain it needs;
 * when that reaches mq.segment_size a new segment is created.  Whole
 * segments are retired (dropped) once no queue entry refers to them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/indexing.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "mqutils.h"
#include "owner.h"
#include "am/mqlog.h"
#include "msglog.h"
#include "queue/queue.h"


/* Messages read by mq_log_fetch in this backend (mq._session_counters) */
int64		mq_log_fetches = 0;

/* GUC: segment size in blocks (mq.segment_size) */
int			mq_segment_size = 32768; /* mq.segment_size, in blocks */


/* Settings of the message log (from _PG_init) */
void
mq_msglog_init(void)
{
	DefineCustomIntVariable("mq.segment_size",
							"Size at which the message log starts a new segment.",
							"Whole segments are retired once every queue entry in them is settled.",
							&mq_segment_size, 32768, 16, (1 << 17) / 2,
							PGC_SUSET, GUC_UNIT_BLOCKS, NULL, NULL, NULL);
}

/* Newest segment per chain as seen by this backend (0: unknown) */
static int64 current_segno[2] = {0, 0};
static Oid	current_db = InvalidOid;

/*
 * What this backend knows of its current segment of each chain, so that a
 * publish neither looks the segment up by name nor asks for its size (an
 * lseek) every time:
 *	current_relid	its relid, as last looked up (checked against the name
 *					of the relation it opens: an OID can be reused once the
 *					segment is retired)
 *	current_block	the block our last append to it went to; while that is
 *					below the last block of a full segment, the segment is
 *					not full from our appends, and we skip the size check.
 *					Others may fill it meanwhile: our next append goes to
 *					our own target page, or finds the relation's size while
 *					choosing a page, and then the check runs again, so a
 *					segment grows past mq.segment_size by at most a page
 *					per backend (as it could already through concurrent
 *					appends).  A batch (mq_log_append of several messages)
 *					always checks.
 */
static Oid	current_relid[2] = {InvalidOid, InvalidOid};
static char current_relname[2][NAMEDATALEN];
static Oid	current_nsp[2] = {InvalidOid, InvalidOid};
static BlockNumber current_block[2] = {InvalidBlockNumber, InvalidBlockNumber};

/* Make segno (0: unknown) the current segment of a chain */
static void
set_current(int chain, int64 segno)
{
	current_segno[chain] = segno;
	current_relid[chain] = InvalidOid;
	current_block[chain] = InvalidBlockNumber;
}

/* After an append to segment segno, at block blkno */
static void
note_append(int64 segno, BlockNumber blkno)
{
	for (int chain = 0; chain < 2; chain++)
		if (current_segno[chain] == segno && OidIsValid(current_relid[chain]))
			current_block[chain] = blkno;
}

char *
mq_segment_relname(int64 segno)
{
	return psprintf("log_%lld", (long long) segno);
}

/*
 * The relids of inline segments (stream entry logs, msglog.h), by segment
 * number, kept per backend until any relcache invalidation: a dropped
 * generation's relid may come back as another table's.
 */
typedef struct InlineRelidEntry
{
	int64		segno;
	Oid			relid;
} InlineRelidEntry;

static HTAB *inline_relids = NULL;
static uint64 inline_relids_invals = 0;

static void
inline_relids_inval(Datum arg, Oid relid)
{
	inline_relids_invals++;
	if (inline_relids != NULL)
	{
		hash_destroy(inline_relids);
		inline_relids = NULL;
	}
}

/* relid of inline segment segno (mq.cat_inline), or InvalidOid */
static Oid
inline_segment_relid(int64 segno)
{
	static bool registered = false;
	InlineRelidEntry *e;
	uint64		invals = inline_relids_invals;
	Datum		d;
	Oid			relid = InvalidOid;

	if (inline_relids != NULL &&
		(e = hash_search(inline_relids, &segno, HASH_FIND, NULL)) != NULL)
		return e->relid;
	if (!registered)
	{
		CacheRegisterRelcacheCallback(inline_relids_inval, (Datum) 0);
		registered = true;
	}
	/* fresh, as a message we fetch may be in a generation just created */
	if (mq_lookup_unique("cat_inline", "cat_inline_pkey", 1, F_INT8EQ, Int64GetDatum(segno),
						 2, &d))
		relid = DatumGetObjectId(d);
	if (OidIsValid(relid) && invals == inline_relids_invals)
	{
		if (inline_relids == NULL)
		{
			HASHCTL		ctl;

			ctl.keysize = sizeof(int64);
			ctl.entrysize = sizeof(InlineRelidEntry);
			ctl.hcxt = CacheMemoryContext;
			inline_relids = hash_create("queue_ext inline segments", 64, &ctl,
										HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		}
		if (hash_get_num_entries(inline_relids) < 4096)
		{
			e = hash_search(inline_relids, &segno, HASH_ENTER, NULL);
			e->relid = relid;
		}
	}
	return relid;
}

/*
 * relid of a segment, or InvalidOid: fresh, as a message we fetch may be
 * in a segment its publisher created (mq_relid_fresh)
 */
static Oid
segment_relid(int64 segno)
{
	if (segno >= MQ_INLINE_SEGNO_MIN)
		return inline_segment_relid(segno);
	return mq_relid_fresh(MQ_STORAGE_SCHEMA, mq_segment_relname(segno));
}

/*
 * Create segment segno (as the extension owner) unless it exists.
 * Serialised by an advisory transaction lock so that two backends rolling
 * over at once create it once.
 */
static void
segment_create(int64 segno, bool durable)
{
	MqOwnerScope owner;
	Oid			types[2] = {INT8OID, BOOLOID};
	Datum		values[2] = {Int64GetDatum(segno), BoolGetDatum(durable)};

	if (segno >= MQ_INLINE_SEGNO_MIN)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the message log has used all its %lld segment numbers",
						(long long) MQ_INLINE_SEGNO_MIN - 1),
				 errhint("Dump and restore the database: a restore numbers segments from 1 again.")));

	/*
	 * The worker only tries the roll-over lock (pg_advisory_xact_lock(7170001,
	 * 0) in mq._segment_create): a publisher holds it to the end of its
	 * transaction, and may wait for a queue the worker holds.
	 */
	if (mq_lock_nowait)
	{
		LOCKTAG		tag;

		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 7170001, 0, 2);
		if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("message log segment %lld is being created by another transaction",
							(long long) segno)));
	}
	mq_owner_enter(&owner);
	mq_owner_exec("SELECT mq._segment_create($1, $2)", 2, types, values, NULL, false,
				  SPI_OK_SELECT, "create a message log segment");
	mq_owner_leave(&owner);
}

/* A log segment: its number and its relation */
typedef struct MqSegmentRef
{
	int64		segno;
	Oid			relid;
} MqSegmentRef;

/* qsort order of segments, newest first */
static int
segno_desc_cmp(const void *a, const void *b)
{
	int64		x = ((const MqSegmentRef *) a)->segno;
	int64		y = ((const MqSegmentRef *) b)->segno;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Does pg_class have relid, as snapshot sees it? */
static bool
pg_class_has(Oid relid, Snapshot snapshot)
{
	Relation	rel = table_open(RelationRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	ScanKeyInit(&key, Anum_pg_class_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, ClassOidIndexId, true, snapshot, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

static int	list_segments(Snapshot snapshot, const bool *chain, MqSegmentRef **segs_out);

/*
 * The newest segment of a chain whose relation exists (0: none), with the
 * statement's snapshot: what mq._segment_newest(durable) returns, read
 * directly (a handful of rows; SPI's parse and plan of that call were a
 * tenth of a fresh session's first publish).
 */
static int64
segment_newest(bool durable)
{
	Snapshot	snapshot = GetActiveSnapshot();
	MqSegmentRef *segs;
	int			n = list_segments(snapshot, &durable, &segs);
	int64		segno = 0;

	for (int i = 0; i < n; i++)
		if (pg_class_has(segs[i].relid, snapshot))
		{
			segno = segs[i].segno;
			break;
		}
	pfree(segs);
	return segno;
}

/*
 * Open the segment to append to, rolling over to a new one when the
 * current one is full.
 */
Relation
mq_log_open_append(bool durable, int64 *segno_out)
{
	int			chain = durable ? 0 : 1;

	if (current_db != MyDatabaseId)
	{
		set_current(0, 0);
		set_current(1, 0);
		current_db = MyDatabaseId;
	}

	for (;;)
	{
		int64		segno = current_segno[chain];
		Oid			relid;
		Relation	rel;

		if (segno == 0)
		{
			segno = segment_newest(durable);
			if (segno == 0)
			{
				/* first segment of the chain: segment numbers are shared */
				segno = segment_newest(!durable);
				segno = Max(segno, 0) + 1;
				segment_create(segno, durable);
			}
			set_current(chain, segno);
		}

		/*
		 * The segment may be retired between the lookup and the lock: a
		 * segment this backend still takes for its current one can have
		 * been filled by others and emptied since.  try_table_open says
		 * so once the retiring transaction has committed.  A relid kept
		 * from an earlier call is only trusted if the relation it opens
		 * has the segment's name.
		 */
		relid = current_relid[chain];
		if (OidIsValid(relid))
		{
			rel = try_table_open(relid, RowExclusiveLock);
			if (rel != NULL &&
				(strcmp(RelationGetRelationName(rel), current_relname[chain]) != 0 ||
				 RelationGetNamespace(rel) != current_nsp[chain]))
			{
				/* the segment is gone and its OID reused: look again */
				table_close(rel, RowExclusiveLock);
				rel = NULL;
			}
		}
		else
		{
			char	   *name = mq_segment_relname(segno);
			Oid			nsp = get_namespace_oid(MQ_STORAGE_SCHEMA, false);

			relid = get_relname_relid(name, nsp);
			rel = OidIsValid(relid) ? try_table_open(relid, RowExclusiveLock) : NULL;
			if (rel != NULL)
			{
				current_relid[chain] = relid;
				strlcpy(current_relname[chain], name, NAMEDATALEN);
				current_nsp[chain] = nsp;
			}
			pfree(name);
		}
		if (rel == NULL)
		{
			/* retired or rolled back: look again */
			set_current(chain, 0);
			continue;
		}
		if ((current_block[chain] != InvalidBlockNumber &&
			 current_block[chain] + 1 < (BlockNumber) mq_segment_size) ||
			RelationGetNumberOfBlocks(rel) < (BlockNumber) mq_segment_size)
		{
			/* rows are formed from MQ_LOG_NATTS values (mq_log_row_values) */
			if (RelationGetDescr(rel)->natts != MQ_LOG_NATTS)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("message log segment \"%s\" has %d columns, not %d",
								RelationGetRelationName(rel),
								RelationGetDescr(rel)->natts, MQ_LOG_NATTS),
						 errhint("Segments are created by queue_ext; one altered by hand cannot be written to.")));
			*segno_out = segno;
			return rel;
		}
		table_close(rel, RowExclusiveLock);
		current_block[chain] = InvalidBlockNumber;

		/*
		 * full: move to the newest segment, creating one if needed.
		 * segment_newest reads the catalog with the statement's snapshot,
		 * which misses a segment this statement created: one statement
		 * filling two segments would create the full one again and again.
		 */
		{
			int64		durable_newest = segment_newest(true);
			int64		unlogged_newest = segment_newest(false);
			int64		newest = Max(Max(durable_newest, unlogged_newest), segno);

			if (newest > segno && OidIsValid(segment_relid(newest)) &&
				segment_newest(durable) == newest)
				set_current(chain, newest);
			else
			{
				segment_create(newest + 1, durable);
				set_current(chain, newest + 1);
			}
		}
	}
}

void
mq_log_row_values(MqMessage *m, Datum *values, bool *isnull)
{
	memset(isnull, 0, sizeof(bool) * MQ_LOG_NATTS);
	values[0] = TimestampTzGetDatum(m->published_at);
#define TEXTCOL(i, s) \
	do { if ((s) != NULL) values[i] = CStringGetTextDatum(s); else isnull[i] = true; } while (0)
#define JSONBCOL(i, j) \
	do { if ((j) != NULL) values[i] = JsonbPGetDatum(j); else isnull[i] = true; } while (0)
	TEXTCOL(1, m->exchange);
	TEXTCOL(2, m->routing_key);
	values[3] = PointerGetDatum(m->body);
	JSONBCOL(4, m->headers);
	JSONBCOL(5, m->properties);
	TEXTCOL(6, m->key);
	TEXTCOL(7, m->tag);
	TEXTCOL(8, m->message_group);
	TEXTCOL(9, m->dedup_id);
#undef TEXTCOL
#undef JSONBCOL
}

/*
 * Insert the index entries of msgs[0..n-1] (at tids) for the partial
 * indexes on key and dedup_id.  Each index is opened, and its IndexInfo
 * built, once for the whole batch rather than once per message: a batch of
 * keyed messages (queue_ext_pgmq's send_batch) spent a sixth of its time
 * here, a good part of it in that set-up.
 */
static void
insert_index_entries(Relation rel, MqMessage **msgs, int n, ItemPointer tids)
{
	List	   *indexes;
	ListCell   *lc;
	bool		any = false;

	for (int i = 0; i < n && !any; i++)
		any = msgs[i]->key != NULL || msgs[i]->dedup_id != NULL;
	if (!any)
		return;
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), RowExclusiveLock);
		int			attno = idx->rd_index->indkey.values[0];
		IndexInfo  *ii = NULL;

		for (int i = 0; i < n; i++)
		{
			char	   *val = attno == MQ_LOG_ATT_KEY ? msgs[i]->key :
			attno == MQ_LOG_ATT_DEDUP_ID ? msgs[i]->dedup_id : NULL;
			Datum		d;
			bool		isnull = false;

			if (val == NULL)
				continue;
			if (ii == NULL)
				ii = BuildIndexInfo(idx);
			d = CStringGetTextDatum(val);
			index_insert(idx, &d, &isnull, &tids[i], rel, UNIQUE_CHECK_NO, false, ii);
			pfree(DatumGetPointer(d));
		}
		index_close(idx, RowExclusiveLock);
	}
	list_free(indexes);
}

/* The segment for n messages: a batch may take many pages, so it always checks the size */
static Relation
open_for_append(bool durable, int n, int64 *segno)
{
	if (n > 1)
		current_block[durable ? 0 : 1] = InvalidBlockNumber;
	return mq_log_open_append(durable, segno);
}

void
mq_log_append(MqMessage **msgs, int n, bool durable)
{
	int64		segno;
	Relation	rel = open_for_append(durable, n, &segno);
	Datum	   *values = palloc(sizeof(Datum) * MQ_LOG_NATTS * n);
	bool	   *isnull = palloc(sizeof(bool) * MQ_LOG_NATTS * n);
	ItemPointerData *tids = palloc(sizeof(ItemPointerData) * n);

	for (int i = 0; i < n; i++)
		mq_log_row_values(msgs[i], values + i * MQ_LOG_NATTS, isnull + i * MQ_LOG_NATTS);
	mqlog_insert_values(rel, values, isnull, n, GetCurrentCommandId(true), tids);

	note_append(segno, ItemPointerGetBlockNumber(&tids[n - 1]));
	for (int i = 0; i < n; i++)
		msgs[i]->msg_id = mq_msgid_make(segno, &tids[i]);
	insert_index_entries(rel, msgs, n, tids);
	pfree(values);
	pfree(isnull);
	pfree(tids);
	table_close(rel, NoLock);
}

static char *
slot_text(TupleTableSlot *slot, int attno)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, attno, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

static Jsonb *
slot_jsonb(TupleTableSlot *slot, int attno)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, attno, &isnull);

	return isnull ? NULL : DatumGetJsonbPCopy(d);
}

/*
 * Open segment segno to read (AccessShareLock), or NULL: tried, as it may
 * have been retired since the catalog was read.  An inline segment's relid
 * comes from a cache: if invalidations arrived while we locked it, the
 * relation we locked may have been dropped and its relid reused, so it is
 * looked up afresh.
 */
static Relation
segment_open(int64 segno)
{
	for (;;)
	{
		uint64		invals = inline_relids_invals;
		Oid			relid = segment_relid(segno);
		Relation	rel;

		if (!OidIsValid(relid))
			return NULL;
		rel = try_table_open(relid, AccessShareLock);
		if (segno < MQ_INLINE_SEGNO_MIN || invals == inline_relids_invals)
			return rel;
		if (rel != NULL)
			table_close(rel, AccessShareLock);
	}
}

/*
 * Deform a log row into *out (copies everything into CurrentMemoryContext).
 * The log's columns are a segment's, or the last ones of a stream's entry
 * log (inline, msglog.h), where a row without published_at carries no
 * message: false.
 */
static bool
message_from_slot(Relation rel, TupleTableSlot *slot, MqMessage *out)
{
	int			b = slot->tts_tupleDescriptor->natts - MQ_LOG_NATTS;
	bool		isnull;
	Datum		d;

	d = slot_getattr(slot, b + MQ_LOG_ATT_PUBLISHED_AT, &isnull);
	if (isnull)
		return false;
	/* an inline message: its stream, partition and offset are its row's */
	out->stream_queue_id = 0;
	out->stream_partition = -1;
	out->stream_offset = -1;
	if (b >= MQ_ENTRY_STREAM_ATT_OFFSET)
	{
		int32		queue_id;
		int32		lane;
		Datum		offset;

		offset = slot_getattr(slot, MQ_ENTRY_STREAM_ATT_OFFSET, &isnull);
		/* an entry log is named q<queue id>_<lane>_<generation> */
		if (!isnull &&
			sscanf(RelationGetRelationName(rel), "q%d_%d_", &queue_id, &lane) == 2)
		{
			out->stream_queue_id = queue_id;
			out->stream_partition = lane;
			out->stream_offset = DatumGetInt64(offset);
		}
	}
	out->published_at = DatumGetTimestampTz(d);
	out->exchange = slot_text(slot, b + MQ_LOG_ATT_EXCHANGE);
	out->routing_key = slot_text(slot, b + MQ_LOG_ATT_ROUTING_KEY);
	d = slot_getattr(slot, b + 4, &isnull);
	out->body = isnull ? NULL : DatumGetByteaPCopy(d);
	out->headers = slot_jsonb(slot, b + 5);
	out->properties = slot_jsonb(slot, b + 6);
	out->key = slot_text(slot, b + MQ_LOG_ATT_KEY);
	out->tag = slot_text(slot, b + 8);
	out->message_group = slot_text(slot, b + 9);
	out->dedup_id = slot_text(slot, b + MQ_LOG_ATT_DEDUP_ID);
	return true;
}

bool
mq_log_fetch(int64 msg_id, MqMessage *out)
{
	bool		found;

	(void) mq_log_fetch_many(&msg_id, 1, out, &found);
	return found;
}

/* qsort_arg order of positions into an array of msg_ids (arg) by msg_id */
static int
fetch_order_cmp(const void *a, const void *b, void *arg)
{
	const int64 *ids = arg;
	int64		x = ids[*(const int *) a];
	int64		y = ids[*(const int *) b];

	if (x != y)
		return x < y ? -1 : 1;
	return *(const int *) a - *(const int *) b;
}

/*
 * Read the messages in log order, each segment opened once and each block
 * looked up once for all its rows; a consume call's messages are mostly
 * consecutive rows of one segment.
 */
int
mq_log_fetch_many(const int64 *ids, int n, MqMessage *out, bool *found)
{
	int		   *order;
	int			nfound = 0;
	int64		cur_segno = -1;
	Relation	rel = NULL;
	TupleTableSlot *slot = NULL;
	MqlogReadCache cache;

	if (n <= 0)
		return 0;
	mq_log_fetches += n;
	order = palloc(sizeof(int) * n);
	for (int i = 0; i < n; i++)
		order[i] = i;
	qsort_arg(order, n, sizeof(int), fetch_order_cmp, (void *) ids);
	mqlog_read_cache_init(&cache);

	for (int k = 0; k < n; k++)
	{
		int			i = order[k];
		int64		msg_id = ids[i];
		ItemPointerData tid;
		MqlogRowState state;

		found[i] = false;
		if (msg_id <= 0)
			continue;
		if (mq_msgid_segno(msg_id) != cur_segno)
		{
			if (rel != NULL)
			{
				mqlog_read_cache_release(&cache);
				ExecDropSingleTupleTableSlot(slot);
				table_close(rel, AccessShareLock);
				rel = NULL;
			}
			cur_segno = mq_msgid_segno(msg_id);
			rel = segment_open(cur_segno);
			if (rel != NULL)
				slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
		}
		if (rel == NULL)
			continue;			/* segment gone */
		mq_msgid_tid(msg_id, &tid);
		if (mqlog_fetch_row_cached(rel, &tid, &state, slot, &cache) &&
			(state == MQLOG_ROW_COMMITTED || state == MQLOG_ROW_OWN) &&
			message_from_slot(rel, slot, &out[i]))
		{
			out[i].msg_id = msg_id;
			found[i] = true;
			nfound++;
		}
	}
	if (rel != NULL)
	{
		mqlog_read_cache_release(&cache);
		ExecDropSingleTupleTableSlot(slot);
		table_close(rel, AccessShareLock);
	}
	pfree(order);
	return nfound;
}

/*
 * Look up messages by an indexed column (key or dedup_id) through SPI:
 * returns msg_ids, newest first.
 */
static List *
lookup_indexed(const char *fn, const char *value, Datum extra, Oid extratype, int limit)
{
	MqOwnerScope owner;
	Oid			types[3] = {TEXTOID, extratype, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(value), extra, Int32GetDatum(limit)};
	char		sql[128];
	List	   *res = NIL;

	snprintf(sql, sizeof(sql), "SELECT * FROM mq.%s($1, $2, $3)", fn);
	mq_owner_enter(&owner);
	mq_owner_exec(sql, 3, types, values, NULL, true, SPI_OK_SELECT, "look messages up");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		int64	   *id;

		if (isnull)
			continue;
		id = MemoryContextAlloc(TopTransactionContext, sizeof(int64));
		*id = DatumGetInt64(d);
		res = lappend(res, id);
	}
	mq_owner_leave(&owner);
	return res;
}

List *
mq_log_lookup_key(const char *key, int limit)
{
	return lookup_indexed("_log_find_key", key, Int32GetDatum(0), INT4OID, limit);
}

/*
 * The segments of one chain (*chain: durable or not) or, chain NULL, the
 * readable ones (on a standby the unlogged ones cannot be read), newest
 * first, from mq.cat_segment read directly (a handful of rows; no SPI, no
 * plan), in a palloc'd array
 */
static int
list_segments(Snapshot snapshot, const bool *chain, MqSegmentRef **segs_out)
{
	Relation	cat = table_open(get_relname_relid("cat_segment",
												   get_namespace_oid(MQ_SCHEMA, false)),
								 AccessShareLock);
	TableScanDesc scan = table_beginscan(cat, snapshot, 0, NULL);
	TupleTableSlot *slot = table_slot_create(cat, NULL);
	bool		recovery = RecoveryInProgress();
	int			cap = 8,
				n = 0;
	MqSegmentRef *segs = palloc(sizeof(MqSegmentRef) * cap);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		bool		durable;

		/* columns: segno, relid, durable */
		durable = DatumGetBool(slot_getattr(slot, 3, &isnull));
		if (chain != NULL ? durable != *chain : recovery && !durable)
			continue;
		if (n == cap)
		{
			cap *= 2;
			segs = repalloc(segs, sizeof(MqSegmentRef) * cap);
		}
		segs[n].segno = DatumGetInt64(slot_getattr(slot, 1, &isnull));
		segs[n].relid = DatumGetObjectId(slot_getattr(slot, 2, &isnull));
		n++;
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	table_close(cat, AccessShareLock);

	qsort(segs, n, sizeof(MqSegmentRef), segno_desc_cmp);
	*segs_out = segs;
	return n;
}

/*
 * The newest message of each of keys[0..n-1] published to the default
 * exchange with routing key rkey (a queue's name): ids[i], 0 when there is
 * none.  Segments are read newest first through their key index, one
 * index scan per key, and a key found in a segment is not looked for in
 * older ones; within a segment the latest published_at wins (so that a
 * key used by an earlier incarnation of a queue gives the current one).
 * Returns how many keys were found.  The caller checks who may see what.
 */
int
mq_log_lookup_keys(const char *rkey, const Datum *keys, int n, int64 *ids)
{
	MqSegmentRef *segs;
	int			nseg;
	int			left = 0;
	int			found = 0;
	int			rkey_len = strlen(rkey);
	TimestampTz *best;
	Snapshot	snapshot = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();

	for (int i = 0; i < n; i++)
	{
		ids[i] = 0;
		if (keys[i] != (Datum) 0)
			left++;
	}
	if (left == 0)
		return 0;

	nseg = list_segments(snapshot, NULL, &segs);
	best = palloc(sizeof(TimestampTz) * n);
	for (int s = 0; s < nseg && left > 0; s++)
	{
		Relation	rel = try_table_open(segs[s].relid, AccessShareLock);
		Relation	idx = NULL;
		List	   *indexes;
		ListCell   *lc;
		TupleTableSlot *slot;
		IndexScanDesc scan;
		bool	   *found_here;

		if (rel == NULL)
			continue;			/* retired meanwhile */
		indexes = RelationGetIndexList(rel);
		foreach(lc, indexes)
		{
			Relation	i = index_open(lfirst_oid(lc), AccessShareLock);

			if (i->rd_index->indkey.values[0] == MQ_LOG_ATT_KEY)
			{
				idx = i;
				break;
			}
			index_close(i, AccessShareLock);
		}
		list_free(indexes);
		if (idx == NULL)
		{
			table_close(rel, AccessShareLock);
			continue;
		}

		slot = table_slot_create(rel, NULL);
		scan = index_beginscan(rel, idx, snapshot, 1, 0);
		found_here = palloc0(sizeof(bool) * n);
		for (int i = 0; i < n; i++)
		{
			ScanKeyData sk;

			if (ids[i] != 0 || keys[i] == (Datum) 0)
				continue;
			ScanKeyEntryInitialize(&sk, 0, 1, BTEqualStrategyNumber, InvalidOid,
								   idx->rd_indcollation[0], F_TEXTEQ, keys[i]);
			index_rescan(scan, &sk, 1, NULL, 0);
			while (index_getnext_slot(scan, ForwardScanDirection, slot))
			{
				bool		isnull;
				Datum		d = slot_getattr(slot, MQ_LOG_ATT_EXCHANGE, &isnull);
				TimestampTz at;
				int64		id;
				text	   *t;

				if (isnull || VARSIZE_ANY_EXHDR(DatumGetTextPP(d)) != 0)
					continue;
				d = slot_getattr(slot, MQ_LOG_ATT_ROUTING_KEY, &isnull);
				if (isnull)
					continue;
				t = DatumGetTextPP(d);
				if (VARSIZE_ANY_EXHDR(t) != rkey_len ||
					memcmp(VARDATA_ANY(t), rkey, rkey_len) != 0)
					continue;
				at = DatumGetTimestampTz(slot_getattr(slot, MQ_LOG_ATT_PUBLISHED_AT, &isnull));
				id = mq_msgid_make(segs[s].segno, &slot->tts_tid);
				if (!found_here[i] || at > best[i] || (at == best[i] && id > ids[i]))
				{
					found_here[i] = true;
					best[i] = at;
					ids[i] = id;
				}
			}
			if (found_here[i])
			{
				left--;
				found++;
			}
		}
		index_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		index_close(idx, AccessShareLock);
		table_close(rel, AccessShareLock);
		pfree(found_here);
	}
	pfree(best);
	pfree(segs);
	return found;
}

int64
mq_log_find_dedup(const char *dedup_id, TimestampTz since)
{
	List	   *ids = lookup_indexed("_log_find_dedup", dedup_id,
									 TimestampTzGetDatum(since), TIMESTAMPTZOID, 1);

	return ids == NIL ? 0 : *(int64 *) linitial(ids);
}

/*
 * The message's half of a linked insert (publish.c writes a message and
 * its queue entry as one WAL record): build the row and lock the log page
 * it goes to, which fixes msg->msg_id.  The segment must be the one
 * mq_log_open_append returned.
 */
void
mq_log_link_reserve(Relation seg, int64 segno, MqMessage *msg, MqlogLinkedRow *row)
{
	Datum		values[MQ_LOG_NATTS];
	bool		isnull[MQ_LOG_NATTS];

	mq_log_row_values(msg, values, isnull);
	mqlog_linked_reserve(row, seg, values, isnull, GetCurrentCommandId(true), false);
	msg->msg_id = mq_msgid_make(segno, &row->tid);
	note_append(segno, ItemPointerGetBlockNumber(&row->tid));
}

/* After mqlog_linked_write: index the message */
void
mq_log_link_done(Relation seg, MqMessage *msg, MqlogLinkedRow *row)
{
	insert_index_entries(seg, &msg, 1, &row->tid);
}

/*
 * Create the next segment of each chain ahead of time once the newest is
 * half full (called by the maintenance worker), so that publishers roll
 * over without creating a table inside their own transaction.
 */
void
mq_segments_prepare(void)
{
	for (int chain = 0; chain < 2; chain++)
	{
		bool		durable = chain == 0;
		int64		newest = segment_newest(durable);
		Oid			relid;
		BlockNumber nblocks;

		if (newest == 0)
			continue;
		relid = segment_relid(newest);
		if (!OidIsValid(relid))
			continue;
		{
			Relation	rel = table_open(relid, AccessShareLock);

			nblocks = RelationGetNumberOfBlocks(rel);
			table_close(rel, AccessShareLock);
		}
		if (nblocks >= (BlockNumber) mq_segment_size / 2)
		{
			int64		durable_newest = segment_newest(true);
			int64		unlogged_newest = segment_newest(false);

			segment_create(Max(durable_newest, unlogged_newest) + 1, durable);
		}
	}
}
