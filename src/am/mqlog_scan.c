/*-------------------------------------------------------------------------
 *
 * mqlog_scan.c
 *	  Reading mqlog tables: sequential and parallel scans, fetch by TID
 *	  (index scans, TID scans, triggers), ANALYZE sampling, and the cursor
 *	  reads used by the message log (mqlog_read_next, mqlog_fetch_row_cached).
 *
 * Scans work a page at a time like heap's page mode: share-lock the page,
 * collect the offsets of the rows visible to the snapshot, unlock, then
 * return copies of the rows (mqlog_row_store) with only a pin held.  Rows
 * never move or change, so a pinned row stays valid.  Overflow pages and
 * new (all-zero) pages hold no rows and are skipped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/relscan.h"
#include "access/subtrans.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/snapmgr.h"

#include "am/mqlog.h"

typedef struct MqlogScanDescData
{
	TableScanDescData rs_base;	/* must be first */

	BlockNumber rs_nblocks;		/* relation size at scan start */
	BlockNumber rs_startblock;	/* scan limits (index_build_range_scan) */
	BlockNumber rs_numblocks;
	BufferAccessStrategy rs_strategy;

	bool		rs_inited;		/* false: next fetch starts a new pass */
	BlockNumber rs_cblock;		/* current block */
	Buffer		rs_cbuf;		/* its buffer, pinned */
	int			rs_ntuples;		/* visible rows on it */
	int			rs_cindex;		/* index in rs_vistuples last returned */
	OffsetNumber rs_vistuples[MQLOG_MAX_ROWS_PER_PAGE];

	/* parallel scans */
	ParallelBlockTableScanWorkerData *rs_parallelworkerdata;

	/* ANALYZE */
	OffsetNumber rs_aoffset;
}			MqlogScanDescData;

typedef MqlogScanDescData *MqlogScanDesc;

typedef struct MqlogIndexFetchData
{
	IndexFetchTableData xs_base;	/* must be first */
	Buffer		xs_cbuf;
} MqlogIndexFetchData;

/*
 * Is this a page with rows?  Errors out on pages that are neither new nor
 * ours: better than returning garbage.
 */
static bool
mqlog_is_data_page(Relation rel, Page page, BlockNumber blkno)
{
	if (PageIsNew(page))
		return false;
	if (!mqlog_page_is_valid(page))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid page in block %u of mqlog table \"%s\"",
						blkno, RelationGetRelationName(rel))));
	return !MqlogPageIsOverflow(page);
}

/* The row at item off of a page (caller checked ItemIdIsNormal) */
static inline const char *
mqlog_page_row(Page page, OffsetNumber off)
{
	return (const char *) PageGetItem(page, PageGetItemId(page, off));
}

/* ----------------------------------------------------------------
 * Sequential and parallel scans
 * ----------------------------------------------------------------
 */

static void
mqlog_scan_init(MqlogScanDesc scan, bool keep_startblock)
{
	ParallelBlockTableScanDesc pbscan =
	(ParallelBlockTableScanDesc) scan->rs_base.rs_parallel;
	Relation	rel = scan->rs_base.rs_rd;

	if (pbscan != NULL)
		scan->rs_nblocks = pbscan->phs_nblocks;
	else
		scan->rs_nblocks = RelationGetNumberOfBlocks(rel);

	if (!keep_startblock)
	{
		scan->rs_startblock = 0;
		scan->rs_numblocks = InvalidBlockNumber;
	}

	if ((scan->rs_base.rs_flags & SO_ALLOW_STRAT) &&
		scan->rs_nblocks > (BlockNumber) (NBuffers / 4))
	{
		if (scan->rs_strategy == NULL)
			scan->rs_strategy = GetAccessStrategy(BAS_BULKREAD);
	}
	else if (scan->rs_strategy != NULL)
	{
		FreeAccessStrategy(scan->rs_strategy);
		scan->rs_strategy = NULL;
	}

	scan->rs_inited = false;
	scan->rs_cblock = InvalidBlockNumber;
	if (BufferIsValid(scan->rs_cbuf))
		ReleaseBuffer(scan->rs_cbuf);
	scan->rs_cbuf = InvalidBuffer;
	scan->rs_ntuples = 0;
	scan->rs_cindex = -1;

	if (scan->rs_base.rs_flags & SO_TYPE_SEQSCAN)
		pgstat_count_heap_scan(rel);
}

TableScanDesc
mqlog_scan_begin(Relation rel, Snapshot snapshot, int nkeys,
				 struct ScanKeyData *key, ParallelTableScanDesc pscan,
				 uint32 flags)
{
	MqlogScanDesc scan;

	if (nkeys > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("scan keys are not supported by mqlog tables")));

	RelationIncrementReferenceCount(rel);

	scan = (MqlogScanDesc) palloc0(sizeof(MqlogScanDescData));
	scan->rs_base.rs_rd = rel;
	scan->rs_base.rs_snapshot = snapshot;
	scan->rs_base.rs_nkeys = 0;
	scan->rs_base.rs_key = NULL;
	scan->rs_base.rs_flags = flags;
	scan->rs_base.rs_parallel = pscan;
	scan->rs_cbuf = InvalidBuffer;
	scan->rs_strategy = NULL;

	if (pscan != NULL)
		scan->rs_parallelworkerdata = palloc(sizeof(ParallelBlockTableScanWorkerData));

	if (snapshot && (flags & (SO_TYPE_SEQSCAN | SO_TYPE_SAMPLESCAN)))
		PredicateLockRelation(rel, snapshot);

	mqlog_scan_init(scan, false);
	return (TableScanDesc) scan;
}

void
mqlog_scan_end(TableScanDesc sscan)
{
	MqlogScanDesc scan = (MqlogScanDesc) sscan;

	if (BufferIsValid(scan->rs_cbuf))
		ReleaseBuffer(scan->rs_cbuf);
	RelationDecrementReferenceCount(sscan->rs_rd);
	if (scan->rs_strategy)
		FreeAccessStrategy(scan->rs_strategy);
	if (scan->rs_parallelworkerdata)
		pfree(scan->rs_parallelworkerdata);
	if (sscan->rs_flags & SO_TEMP_SNAPSHOT)
		UnregisterSnapshot(sscan->rs_snapshot);
	pfree(scan);
}

void
mqlog_scan_rescan(TableScanDesc sscan, struct ScanKeyData *key,
				  bool set_params, bool allow_strat, bool allow_sync,
				  bool allow_pagemode)
{
	MqlogScanDesc scan = (MqlogScanDesc) sscan;

	if (set_params)
	{
		if (allow_strat)
			sscan->rs_flags |= SO_ALLOW_STRAT;
		else
			sscan->rs_flags &= ~SO_ALLOW_STRAT;
		if (allow_sync)
			sscan->rs_flags |= SO_ALLOW_SYNC;
		else
			sscan->rs_flags &= ~SO_ALLOW_SYNC;
		if (allow_pagemode)
			sscan->rs_flags |= SO_ALLOW_PAGEMODE;
		else
			sscan->rs_flags &= ~SO_ALLOW_PAGEMODE;
	}
	mqlog_scan_init(scan, true);
}

/* Restrict the scan to blocks [startblk, startblk + numblks) */
void
mqlog_scan_set_limits(TableScanDesc sscan, BlockNumber startblk,
					  BlockNumber numblks)
{
	MqlogScanDesc scan = (MqlogScanDesc) sscan;

	Assert(!scan->rs_inited);
	scan->rs_startblock = startblk;
	scan->rs_numblocks = numblks;
}

/*
 * The next block to read in the given direction, or InvalidBlockNumber
 * at the end.  Starts a new pass when !rs_inited.
 */
static BlockNumber
mqlog_scan_advance(MqlogScanDesc scan, ScanDirection dir)
{
	Relation	rel = scan->rs_base.rs_rd;
	BlockNumber endblock;

	endblock = scan->rs_nblocks;
	if (scan->rs_numblocks != InvalidBlockNumber)
		endblock = Min(endblock, scan->rs_startblock + scan->rs_numblocks);

	if (scan->rs_base.rs_parallel != NULL)
	{
		ParallelBlockTableScanDesc pbscan =
		(ParallelBlockTableScanDesc) scan->rs_base.rs_parallel;
		BlockNumber blk;

		Assert(ScanDirectionIsForward(dir));
		if (!scan->rs_inited)
			table_block_parallelscan_startblock_init(rel,
													 scan->rs_parallelworkerdata,
													 pbscan);
		blk = table_block_parallelscan_nextpage(rel, scan->rs_parallelworkerdata,
												pbscan);
		return blk;
	}

	if (ScanDirectionIsBackward(dir))
	{
		if (!scan->rs_inited)
			return endblock > scan->rs_startblock ? endblock - 1 : InvalidBlockNumber;
		if (scan->rs_cblock == InvalidBlockNumber ||
			scan->rs_cblock <= scan->rs_startblock)
			return InvalidBlockNumber;
		return scan->rs_cblock - 1;
	}

	if (!scan->rs_inited)
		return scan->rs_startblock < endblock ? scan->rs_startblock : InvalidBlockNumber;
	if (scan->rs_cblock + 1 >= endblock)
		return InvalidBlockNumber;
	return scan->rs_cblock + 1;
}

/*
 * Public wrapper used by index builds, which read whole pages themselves:
 * returns the next block (forward) or InvalidBlockNumber.
 */
BlockNumber
mqlog_scan_next_block(TableScanDesc sscan)
{
	MqlogScanDesc scan = (MqlogScanDesc) sscan;
	BlockNumber blk = mqlog_scan_advance(scan, ForwardScanDirection);

	scan->rs_inited = (blk != InvalidBlockNumber);
	scan->rs_cblock = blk;
	return blk;
}

/* Read block blkno and collect its rows visible to the scan's snapshot */
static void
mqlog_scan_load_page(MqlogScanDesc scan, BlockNumber blkno)
{
	Relation	rel = scan->rs_base.rs_rd;
	Snapshot	snapshot = scan->rs_base.rs_snapshot;
	Page		page;
	int			n = 0;

	CHECK_FOR_INTERRUPTS();

	if (BufferIsValid(scan->rs_cbuf))
		ReleaseBuffer(scan->rs_cbuf);
	scan->rs_cbuf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL,
									   scan->rs_strategy);
	scan->rs_cblock = blkno;

	LockBuffer(scan->rs_cbuf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(scan->rs_cbuf);
	if (mqlog_is_data_page(rel, page, blkno))
	{
		bool		frozen = MqlogPageIsFrozen(page);
		OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
		OffsetNumber off;

		for (off = FirstOffsetNumber; off <= maxoff; off++)
		{
			if (!ItemIdIsNormal(PageGetItemId(page, off)))
				continue;
			if (mqlog_row_visible(rel, mqlog_page_row(page, off), frozen, snapshot))
				scan->rs_vistuples[n++] = off;
		}
	}
	LockBuffer(scan->rs_cbuf, BUFFER_LOCK_UNLOCK);
	scan->rs_ntuples = n;
}

bool
mqlog_scan_getnextslot(TableScanDesc sscan, ScanDirection direction,
					   TupleTableSlot *slot)
{
	MqlogScanDesc scan = (MqlogScanDesc) sscan;
	bool		backward = ScanDirectionIsBackward(direction);

	for (;;)
	{
		if (scan->rs_inited)
		{
			int			next = scan->rs_cindex + (backward ? -1 : 1);

			if (next >= 0 && next < scan->rs_ntuples)
			{
				scan->rs_cindex = next;
				mqlog_row_store(slot, sscan->rs_rd, BufferGetPage(scan->rs_cbuf),
								scan->rs_cblock, scan->rs_vistuples[next]);
				pgstat_count_heap_getnext(sscan->rs_rd);
				return true;
			}
		}

		{
			BlockNumber blk = mqlog_scan_advance(scan, direction);

			if (blk == InvalidBlockNumber)
			{
				if (BufferIsValid(scan->rs_cbuf))
					ReleaseBuffer(scan->rs_cbuf);
				scan->rs_cbuf = InvalidBuffer;
				scan->rs_cblock = InvalidBlockNumber;
				scan->rs_inited = false;
				ExecClearTuple(slot);
				return false;
			}
			mqlog_scan_load_page(scan, blk);
			scan->rs_inited = true;
			scan->rs_cindex = backward ? scan->rs_ntuples : -1;
		}
	}
}

/* ----------------------------------------------------------------
 * Fetch by TID
 * ----------------------------------------------------------------
 */

/*
 * Look up tid on the share-locked page in buf.  Returns the row, or NULL
 * if there is no row there; *dead is set for LP_DEAD items.
 */
static const char *
mqlog_lookup_tid(Relation rel, Buffer buf, ItemPointer tid, bool *frozen,
				 bool *dead)
{
	Page		page = BufferGetPage(buf);
	OffsetNumber off = ItemPointerGetOffsetNumber(tid);
	ItemId		iid;

	*dead = false;
	if (!mqlog_is_data_page(rel, page, BufferGetBlockNumber(buf)))
		return NULL;
	if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page))
		return NULL;
	iid = PageGetItemId(page, off);
	if (ItemIdIsDead(iid))
		*dead = true;
	if (!ItemIdIsNormal(iid))
		return NULL;
	*frozen = MqlogPageIsFrozen(page);
	return (const char *) PageGetItem(page, iid);
}

/* Store a copy of the row at tid (on the page in buf) into slot */
static void
mqlog_store_tid(TupleTableSlot *slot, Relation rel, Buffer buf, ItemPointer tid)
{
	mqlog_row_store(slot, rel, BufferGetPage(buf), BufferGetBlockNumber(buf),
					ItemPointerGetOffsetNumber(tid));
}

struct IndexFetchTableData *
mqlog_index_fetch_begin(Relation rel)
{
	MqlogIndexFetchData *fetch = palloc0(sizeof(MqlogIndexFetchData));

	fetch->xs_base.rel = rel;
	fetch->xs_cbuf = InvalidBuffer;
	return &fetch->xs_base;
}

void
mqlog_index_fetch_reset(struct IndexFetchTableData *data)
{
	MqlogIndexFetchData *fetch = (MqlogIndexFetchData *) data;

	if (BufferIsValid(fetch->xs_cbuf))
	{
		ReleaseBuffer(fetch->xs_cbuf);
		fetch->xs_cbuf = InvalidBuffer;
	}
}

void
mqlog_index_fetch_end(struct IndexFetchTableData *data)
{
	mqlog_index_fetch_reset(data);
	pfree(data);
}

/*
 * index_fetch_tuple callback.  No HOT chains: one row per TID, so
 * *call_again is always false.  *all_dead is set only for rows whose
 * inserter aborted, which no snapshot can ever see.
 */
bool
mqlog_index_fetch_tuple(struct IndexFetchTableData *data, ItemPointer tid,
						Snapshot snapshot, TupleTableSlot *slot,
						bool *call_again, bool *all_dead)
{
	MqlogIndexFetchData *fetch = (MqlogIndexFetchData *) data;
	Relation	rel = fetch->xs_base.rel;
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	const char *row;
	bool		frozen,
				dead,
				visible = false;

	*call_again = false;
	if (all_dead)
		*all_dead = false;

	if (!BufferIsValid(fetch->xs_cbuf) ||
		BufferGetBlockNumber(fetch->xs_cbuf) != blkno)
		fetch->xs_cbuf = ReleaseAndReadBuffer(fetch->xs_cbuf, rel, blkno);

	LockBuffer(fetch->xs_cbuf, BUFFER_LOCK_SHARE);
	row = mqlog_lookup_tid(rel, fetch->xs_cbuf, tid, &frozen, &dead);
	if (row != NULL)
	{
		visible = mqlog_row_visible(rel, row, frozen, snapshot);
		if (visible)
			PredicateLockTID(rel, tid, snapshot, mqlog_row_xmin(row));
		else if (all_dead &&
				 mqlog_xmin_status(mqlog_row_xmin(row), frozen) == MQLOG_XMIN_ABORTED)
			*all_dead = true;
	}
	else if (dead && all_dead)
		*all_dead = true;
	LockBuffer(fetch->xs_cbuf, BUFFER_LOCK_UNLOCK);

	if (visible)
	{
		mqlog_store_tid(slot, rel, fetch->xs_cbuf, tid);
		pgstat_count_heap_fetch(rel);
	}
	return visible;
}

/*
 * tuple_fetch_row_version callback (TID scans, triggers, EvalPlanQual).
 */
bool
mqlog_fetch_row_version(Relation rel, ItemPointer tid, Snapshot snapshot,
						TupleTableSlot *slot)
{
	Buffer		buf;
	const char *row;
	bool		frozen,
				dead,
				visible = false;

	if (!ItemPointerIsValid(tid) ||
		ItemPointerGetBlockNumber(tid) >= RelationGetNumberOfBlocks(rel))
		return false;

	buf = ReadBuffer(rel, ItemPointerGetBlockNumber(tid));
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	row = mqlog_lookup_tid(rel, buf, tid, &frozen, &dead);
	if (row != NULL)
		visible = mqlog_row_visible(rel, row, frozen, snapshot);
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);

	if (visible)
		mqlog_store_tid(slot, rel, buf, tid);
	ReleaseBuffer(buf);
	return visible;
}

bool
mqlog_tuple_tid_valid(TableScanDesc scan, ItemPointer tid)
{
	return ItemPointerIsValid(tid) &&
		ItemPointerGetBlockNumber(tid) < RelationGetNumberOfBlocks(scan->rs_rd);
}

bool
mqlog_tuple_satisfies_snapshot(Relation rel, TupleTableSlot *slot,
							   Snapshot snapshot)
{
	Buffer		buf;
	const char *row;
	bool		frozen,
				dead,
				visible = false;

	if (!ItemPointerIsValid(&slot->tts_tid) ||
		ItemPointerGetBlockNumber(&slot->tts_tid) >= RelationGetNumberOfBlocks(rel))
		return false;

	/* rows never change: check the stored version by its TID */
	buf = ReadBuffer(rel, ItemPointerGetBlockNumber(&slot->tts_tid));
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	row = mqlog_lookup_tid(rel, buf, &slot->tts_tid, &frozen, &dead);
	if (row != NULL)
		visible = mqlog_row_visible(rel, row, frozen, snapshot);
	UnlockReleaseBuffer(buf);
	return visible;
}

/*
 * index_delete_tuples callback.  Index entries may go only when their row
 * is dead to everyone: LP_DEAD items and rows of aborted inserters.  No
 * recovery conflict is needed for those, so return InvalidTransactionId.
 * Entries already known deletable (marked LP_DEAD in the index because we
 * reported all_dead) are kept as such.
 */
TransactionId
mqlog_index_delete_tuples(Relation rel, TM_IndexDeleteOp *delstate)
{
	Buffer		buf = InvalidBuffer;
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	int			i;

	for (i = 0; i < delstate->ndeltids; i++)
	{
		TM_IndexDelete *del = &delstate->deltids[i];
		TM_IndexStatus *status = &delstate->status[del->id];
		BlockNumber blkno = ItemPointerGetBlockNumber(&del->tid);
		const char *row;
		bool		frozen,
					dead;

		if (status->knowndeletable)
			continue;
		if (blkno >= nblocks)
			continue;
		if (!BufferIsValid(buf) || BufferGetBlockNumber(buf) != blkno)
			buf = ReleaseAndReadBuffer(buf, rel, blkno);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		row = mqlog_lookup_tid(rel, buf, &del->tid, &frozen, &dead);
		if (row != NULL)
			status->knowndeletable =
				(mqlog_xmin_status(mqlog_row_xmin(row), frozen) == MQLOG_XMIN_ABORTED);
		else
			status->knowndeletable = dead;
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	}
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);

	return InvalidTransactionId;
}

/* ----------------------------------------------------------------
 * ANALYZE
 * ----------------------------------------------------------------
 */

bool
mqlog_scan_analyze_next_block(TableScanDesc sscan, BlockNumber blockno,
							  BufferAccessStrategy bstrategy)
{
	MqlogScanDesc scan = (MqlogScanDesc) sscan;

	if (BufferIsValid(scan->rs_cbuf))
		ReleaseBuffer(scan->rs_cbuf);
	scan->rs_cblock = blockno;
	scan->rs_cbuf = ReadBufferExtended(sscan->rs_rd, MAIN_FORKNUM, blockno,
									   RBM_NORMAL, bstrategy);
	scan->rs_aoffset = FirstOffsetNumber;
	LockBuffer(scan->rs_cbuf, BUFFER_LOCK_SHARE);
	return true;
}

bool
mqlog_scan_analyze_next_tuple(TableScanDesc sscan, TransactionId OldestXmin,
							  double *liverows, double *deadrows,
							  TupleTableSlot *slot)
{
	MqlogScanDesc scan = (MqlogScanDesc) sscan;
	Relation	rel = sscan->rs_rd;
	Page		page = BufferGetPage(scan->rs_cbuf);

	if (mqlog_is_data_page(rel, page, scan->rs_cblock))
	{
		bool		frozen = MqlogPageIsFrozen(page);
		OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

		for (; scan->rs_aoffset <= maxoff; scan->rs_aoffset++)
		{
			ItemId		iid = PageGetItemId(page, scan->rs_aoffset);

			if (ItemIdIsDead(iid))
			{
				*deadrows += 1;
				continue;
			}
			if (!ItemIdIsNormal(iid))
				continue;
			switch (mqlog_xmin_status(mqlog_row_xmin(mqlog_page_row(page, scan->rs_aoffset)),
									  frozen))
			{
				case MQLOG_XMIN_COMMITTED:
				case MQLOG_XMIN_CURRENT:
					*liverows += 1;
					mqlog_row_store(slot, rel, page, scan->rs_cblock, scan->rs_aoffset);
					scan->rs_aoffset++;
					return true;
				case MQLOG_XMIN_IN_PROGRESS:
					/* counted by the inserter's own stats report */
					break;
				case MQLOG_XMIN_ABORTED:
					*deadrows += 1;
					break;
			}
		}
	}

	UnlockReleaseBuffer(scan->rs_cbuf);
	scan->rs_cbuf = InvalidBuffer;
	ExecClearTuple(slot);
	return false;
}

/* ----------------------------------------------------------------
 * Cursor reads for the message log (see mqlog.h)
 * ----------------------------------------------------------------
 */

/*
 * The hold of mqlog_hold_begin (mqlog.h): the topmost transactions that a
 * row of the current read showed in progress; hold_n is -1 outside a
 * hold.  A transaction beyond the first MQLOG_HOLD_MAX is not held (its
 * rows are classified as they are, as without a hold).
 */
#define MQLOG_HOLD_MAX 16
static int	hold_n = -1;
static TransactionId hold_xids[MQLOG_HOLD_MAX];

void
mqlog_hold_begin(void)
{
	hold_n = 0;
}

void
mqlog_hold_end(void)
{
	hold_n = -1;
}

/*
 * The topmost transaction of xid, which is in progress or ended after
 * this transaction's first snapshot (pg_subtrans knows it then); an older
 * xid cannot belong to a transaction the read saw in progress: Invalid.
 */
static TransactionId
hold_topmost(TransactionId xid)
{
	if (!TransactionIdIsNormal(TransactionXmin) ||
		TransactionIdPrecedes(xid, TransactionXmin))
		return InvalidTransactionId;
	return SubTransGetTopmostTransaction(xid);
}

/* Is xid, committed, part of a transaction the read saw in progress? */
static bool
hold_has(TransactionId xid)
{
	TransactionId top;
	bool		newer = false;

	for (int i = 0; i < hold_n; i++)
	{
		if (hold_xids[i] == xid)
			return true;
		/* a subtransaction's xid follows its topmost transaction's */
		newer |= TransactionIdFollows(xid, hold_xids[i]);
	}
	if (!newer)
		return false;
	top = hold_topmost(xid);
	if (!TransactionIdIsValid(top) || top == xid)
		return false;
	for (int i = 0; i < hold_n; i++)
		if (hold_xids[i] == top)
			return true;
	return false;
}

static void
hold_add(TransactionId xid)
{
	TransactionId top = hold_topmost(xid);

	if (!TransactionIdIsValid(top))
		top = xid;
	for (int i = 0; i < hold_n; i++)
		if (hold_xids[i] == top)
			return;
	if (hold_n < MQLOG_HOLD_MAX)
		hold_xids[hold_n++] = top;
}

static MqlogRowState
mqlog_row_state(const char *row, bool frozen)
{
	TransactionId xmin = mqlog_row_xmin(row);

	switch (mqlog_xmin_status(xmin, frozen))
	{
		case MQLOG_XMIN_COMMITTED:
			if (hold_n > 0 && !frozen && TransactionIdIsNormal(xmin) && hold_has(xmin))
				return MQLOG_ROW_IN_PROGRESS;
			return MQLOG_ROW_COMMITTED;
		case MQLOG_XMIN_CURRENT:
			return MQLOG_ROW_OWN;
		case MQLOG_XMIN_IN_PROGRESS:
			if (hold_n >= 0)
				hold_add(xmin);
			return MQLOG_ROW_IN_PROGRESS;
		case MQLOG_XMIN_ABORTED:
			break;
	}
	return MQLOG_ROW_ABORTED;
}

/*
 * Classify row off of a share-locked data page and copy it out for the
 * caller (no pin kept) when it is readable.
 */
static void
mqlog_read_row(Relation rel, Page page, BlockNumber blkno, OffsetNumber off,
			   MqlogRowState *state, TupleTableSlot *slot)
{
	*state = mqlog_row_state(mqlog_page_row(page, off), MqlogPageIsFrozen(page));
	if (slot == NULL)
		return;
	if (*state == MQLOG_ROW_COMMITTED || *state == MQLOG_ROW_OWN)
		mqlog_row_store(slot, rel, page, blkno, off);
	else
	{
		ExecClearTuple(slot);
		slot->tts_tableOid = RelationGetRelid(rel);
	}
	ItemPointerSet(&slot->tts_tid, blkno, off);
}

bool
mqlog_is_mqlog_relation(Relation rel)
{
	return rel != NULL && rel->rd_tableam == &mqlog_methods;
}

/* Raise 42809 unless rel is an mqlog table (the broker's readers and writers) */
void
mqlog_require_relation(Relation rel)
{
	if (!mqlog_is_mqlog_relation(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an mqlog table", RelationGetRelationName(rel))));
}

/*
 * Where a cursor read of rel starts: pos, or the first row when pos is
 * invalid (rel must be an mqlog table).
 */
static void
read_start(Relation rel, ItemPointer pos, BlockNumber *blkno, OffsetNumber *off)
{
	mqlog_require_relation(rel);
	*blkno = ItemPointerGetBlockNumberNoCheck(pos);
	*off = ItemPointerGetOffsetNumberNoCheck(pos);
	if (*blkno == InvalidBlockNumber)
		*blkno = 0;
	if (*off == InvalidOffsetNumber)
		*off = FirstOffsetNumber;
}

void
mqlog_read_cache_init(MqlogReadCache *cache)
{
	cache->nblocks = 0;
	cache->buf = InvalidBuffer;
}

void
mqlog_read_cache_release(MqlogReadCache *cache)
{
	if (BufferIsValid(cache->buf))
		ReleaseBuffer(cache->buf);
	cache->buf = InvalidBuffer;
	cache->nblocks = 0;
}

/* Does block blkno of rel exist?  Asks the storage manager only when unsure */
static inline bool
cache_has_block(Relation rel, MqlogReadCache *cache, BlockNumber blkno)
{
	if (blkno < cache->nblocks)
		return true;
	cache->nblocks = RelationGetNumberOfBlocks(rel);
	return blkno < cache->nblocks;
}

/* Pin block blkno of rel (an existing one), reusing the pin of the cache */
static inline Buffer
cache_read(Relation rel, MqlogReadCache *cache, BlockNumber blkno)
{
	if (!BufferIsValid(cache->buf) || BufferGetBlockNumber(cache->buf) != blkno)
		cache->buf = ReleaseAndReadBuffer(cache->buf, rel, blkno);
	return cache->buf;
}

MqlogReadResult
mqlog_read_next(Relation rel, ItemPointer pos, MqlogRowState *state,
				TupleTableSlot *slot)
{
	MqlogReadCache cache;
	MqlogReadResult res;

	mqlog_read_cache_init(&cache);
	res = mqlog_read_next_cached(rel, pos, state, slot, &cache);
	mqlog_read_cache_release(&cache);
	return res;
}

MqlogReadResult
mqlog_read_next_cached(Relation rel, ItemPointer pos, MqlogRowState *state,
					   TupleTableSlot *slot, MqlogReadCache *cache)
{
	BlockNumber blkno;
	OffsetNumber off;

	read_start(rel, pos, &blkno, &off);

	for (;;)
	{
		Buffer		buf;
		Page		page;
		OffsetNumber maxoff = InvalidOffsetNumber;
		bool		more;

		CHECK_FOR_INTERRUPTS();

		if (!cache_has_block(rel, cache, blkno))
			break;

		buf = cache_read(rel, cache, blkno);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (mqlog_is_data_page(rel, page, blkno))
		{
			maxoff = PageGetMaxOffsetNumber(page);
			for (; off <= maxoff; off++)
			{
				if (!ItemIdIsNormal(PageGetItemId(page, off)))
					continue;	/* LP_DEAD: a frozen aborted row */
				mqlog_read_row(rel, page, blkno, off, state, slot);
				LockBuffer(buf, BUFFER_LOCK_UNLOCK);
				ItemPointerSet(pos, blkno, off);
				return MQLOG_READ_ROW;
			}
		}

		/*
		 * Nothing (more) on this page.  Leave it only if a later page
		 * exists, checked while we still hold the share lock: an ordered
		 * inserter adds to a page only while it is the last one and holds
		 * it exclusively throughout.  (A page the cache knows of existed
		 * already, so it needs no new look.)
		 */
		more = cache_has_block(rel, cache, blkno + 1);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		if (!more)
		{
			off = Max(off, (OffsetNumber) (maxoff + 1));
			break;
		}
		blkno++;
		off = FirstOffsetNumber;
	}

	ItemPointerSetBlockNumber(pos, blkno);
	ItemPointerSetOffsetNumber(pos, off);
	return MQLOG_READ_END;
}

bool
mqlog_fetch_row_cached(Relation rel, ItemPointer tid, MqlogRowState *state,
					   TupleTableSlot *slot, MqlogReadCache *cache)
{
	Buffer		buf;
	bool		frozen,
				dead,
				found;

	mqlog_require_relation(rel);

	if (!ItemPointerIsValid(tid) ||
		!cache_has_block(rel, cache, ItemPointerGetBlockNumber(tid)))
		return false;

	buf = cache_read(rel, cache, ItemPointerGetBlockNumber(tid));
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	found = mqlog_lookup_tid(rel, buf, tid, &frozen, &dead) != NULL;
	if (found)
		mqlog_read_row(rel, BufferGetPage(buf), ItemPointerGetBlockNumber(tid),
					   ItemPointerGetOffsetNumber(tid), state, slot);
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	return found;
}

/*
 * Store row off of a share-locked data page in slot whatever its
 * inserter's state, classifying it in *state (mqlog_peek_row,
 * mqlog_last_row: stream readers need the position columns of rows still
 * in progress and of aborted ones too)
 */
static void
mqlog_peek_store(Relation rel, Page page, BlockNumber blkno, OffsetNumber off,
				 MqlogRowState *state, TupleTableSlot *slot)
{
	*state = mqlog_row_state(mqlog_page_row(page, off), MqlogPageIsFrozen(page));
	mqlog_row_store(slot, rel, page, blkno, off);
	ItemPointerSet(&slot->tts_tid, blkno, off);
}

bool
mqlog_peek_row(Relation rel, ItemPointer pos, MqlogRowState *state,
			   TupleTableSlot *slot)
{
	MqlogReadCache cache;
	bool		found;

	mqlog_read_cache_init(&cache);
	found = mqlog_peek_row_cached(rel, pos, state, slot, &cache);
	mqlog_read_cache_release(&cache);
	return found;
}

bool
mqlog_peek_row_cached(Relation rel, ItemPointer pos, MqlogRowState *state,
					  TupleTableSlot *slot, MqlogReadCache *cache)
{
	BlockNumber blkno;
	OffsetNumber off;

	read_start(rel, pos, &blkno, &off);
	for (; cache_has_block(rel, cache, blkno); blkno++, off = FirstOffsetNumber)
	{
		Buffer		buf;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		buf = cache_read(rel, cache, blkno);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (mqlog_is_data_page(rel, page, blkno))
		{
			OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

			for (; off <= maxoff; off++)
			{
				if (!ItemIdIsNormal(PageGetItemId(page, off)))
					continue;
				mqlog_peek_store(rel, page, blkno, off, state, slot);
				LockBuffer(buf, BUFFER_LOCK_UNLOCK);
				ItemPointerSet(pos, blkno, off);
				return true;
			}
		}
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	}
	return false;
}

bool
mqlog_last_row(Relation rel, ItemPointer pos, MqlogRowState *state,
			   TupleTableSlot *slot)
{
	BlockNumber blkno;

	mqlog_require_relation(rel);
	blkno = RelationGetNumberOfBlocks(rel);
	while (blkno-- > 0)
	{
		Buffer		buf;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(rel, blkno);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (mqlog_is_data_page(rel, page, blkno))
		{
			for (OffsetNumber off = PageGetMaxOffsetNumber(page); off >= FirstOffsetNumber; off--)
			{
				if (!ItemIdIsNormal(PageGetItemId(page, off)))
					continue;
				mqlog_peek_store(rel, page, blkno, off, state, slot);
				UnlockReleaseBuffer(buf);
				ItemPointerSet(pos, blkno, off);
				return true;
			}
		}
		UnlockReleaseBuffer(buf);
	}
	return false;
}
