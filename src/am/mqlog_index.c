/*-------------------------------------------------------------------------
 *
 * mqlog_index.c
 *	  Building and validating indexes on mqlog tables.
 *
 * Without HOT every row has exactly one TID, so index builds are the simple
 * part of heap's: visit every row, decide whether to index it, evaluate the
 * partial-index predicate, form the index datums and call back.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/backend_progress.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"

#include "am/mqlog.h"

/*
 * index_build_range_scan callback.  With SnapshotAny (plain CREATE INDEX,
 * REINDEX) we index every row except those of aborted inserters; rows of
 * running inserters can only be our own (the builder holds a lock that
 * conflicts with inserts) or, with anyvisible, are wanted anyway.  With an
 * MVCC snapshot (CREATE INDEX CONCURRENTLY, parallel builds) we index what
 * the snapshot sees.
 */
double
mqlog_index_build_range_scan(Relation table_rel, Relation index_rel,
							 IndexInfo *index_info, bool allow_sync,
							 bool anyvisible, bool progress,
							 BlockNumber start_blockno, BlockNumber numblocks,
							 IndexBuildCallback callback,
							 void *callback_state, TableScanDesc scan)
{
	Snapshot	snapshot;
	bool		need_unregister_snapshot = false;
	EState	   *estate;
	ExprContext *econtext;
	ExprState  *predicate;
	TupleTableSlot *slot;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	double		reltuples = 0;
	BlockNumber blkno;
	BlockNumber done = 0;

	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	slot = table_slot_create(table_rel, NULL);
	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(index_info->ii_Predicate, estate);

	if (scan == NULL)
	{
		if (index_info->ii_Concurrent)
		{
			snapshot = RegisterSnapshot(GetTransactionSnapshot());
			need_unregister_snapshot = true;
		}
		else
			snapshot = SnapshotAny;
		scan = table_beginscan_strat(table_rel, snapshot, 0, NULL, true, false);
	}
	else
		snapshot = scan->rs_snapshot;

	if (scan->rs_parallel == NULL)
	{
		/* range for BRIN summarization; InvalidBlockNumber = all */
		mqlog_scan_set_limits(scan, start_blockno, numblocks);
	}

	if (progress)
		pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_TOTAL,
									 RelationGetNumberOfBlocks(table_rel));

	while ((blkno = mqlog_scan_next_block(scan)) != InvalidBlockNumber)
	{
		Buffer		buf;
		Page		page;
		bool		frozen;
		OffsetNumber off,
					maxoff;
		OffsetNumber tolist[MQLOG_MAX_ROWS_PER_PAGE];
		int			n = 0,
					i;

		CHECK_FOR_INTERRUPTS();

		buf = ReadBufferExtended(table_rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!PageIsNew(page) && mqlog_page_is_valid(page) &&
			!MqlogPageIsOverflow(page))
		{
			frozen = MqlogPageIsFrozen(page);
			maxoff = PageGetMaxOffsetNumber(page);
			for (off = FirstOffsetNumber; off <= maxoff; off++)
			{
				ItemId		iid = PageGetItemId(page, off);
				const char *row;
				bool		indexit;

				if (!ItemIdIsNormal(iid))
					continue;
				row = (const char *) PageGetItem(page, iid);
				if (snapshot == SnapshotAny)
					indexit = mqlog_xmin_status(mqlog_row_xmin(row), frozen) != MQLOG_XMIN_ABORTED;
				else
					indexit = mqlog_row_visible(table_rel, row, frozen, snapshot);
				if (indexit)
					tolist[n++] = off;
			}
		}
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);

		/* rows never change: form index entries with only the pin held */
		for (i = 0; i < n; i++)
		{
			MemoryContextReset(econtext->ecxt_per_tuple_memory);
			mqlog_row_store(slot, table_rel, page, blkno, tolist[i]);
			reltuples += 1;

			if (predicate != NULL && !ExecQual(predicate, econtext))
				continue;

			FormIndexDatum(index_info, slot, estate, values, isnull);
			callback(index_rel, &slot->tts_tid, values, isnull, true,
					 callback_state);
		}
		ExecClearTuple(slot);
		ReleaseBuffer(buf);

		if (progress)
			pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_DONE, ++done);
	}

	table_endscan(scan);
	if (need_unregister_snapshot)
		UnregisterSnapshot(snapshot);

	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);

	/* these may have been pointing to the now-gone estate */
	index_info->ii_ExpressionsState = NIL;
	index_info->ii_PredicateState = NULL;

	return reltuples;
}

/*
 * index_validate_scan callback (third phase of CREATE INDEX CONCURRENTLY):
 * insert every row visible to the snapshot whose TID is not yet in the
 * index.  state->tuplesort returns the index's TIDs in order; our scan
 * returns rows in TID order too, so one merge pass suffices.
 */
void
mqlog_index_validate_scan(Relation table_rel, Relation index_rel,
						  IndexInfo *index_info, Snapshot snapshot,
						  ValidateIndexState *state)
{
	TableScanDesc scan;
	TupleTableSlot *slot;
	EState	   *estate;
	ExprContext *econtext;
	ExprState  *predicate;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	ItemPointerData indexcursor;
	bool		tuplesort_empty = false;

	ItemPointerSetInvalid(&indexcursor);

	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	slot = table_slot_create(table_rel, NULL);
	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(index_info->ii_Predicate, estate);

	scan = table_beginscan_strat(table_rel, snapshot, 0, NULL, true, false);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		ItemPointer tid = &slot->tts_tid;
		bool		in_index = false;

		CHECK_FOR_INTERRUPTS();
		state->htups += 1;

		/* advance the index cursor to >= tid */
		while (!tuplesort_empty &&
			   (!ItemPointerIsValid(&indexcursor) ||
				ItemPointerCompare(&indexcursor, tid) < 0))
		{
			Datum		ts_val;
			bool		ts_isnull;

			tuplesort_empty = !tuplesort_getdatum(state->tuplesort, true,
												  &ts_val, &ts_isnull, NULL);
			Assert(tuplesort_empty || !ts_isnull);
			if (!tuplesort_empty)
			{
				itemptr_decode(&indexcursor, DatumGetInt64(ts_val));
#ifndef USE_FLOAT8_BYVAL
				pfree(DatumGetPointer(ts_val));
#endif
			}
		}
		if (!tuplesort_empty && ItemPointerEquals(&indexcursor, tid))
			in_index = true;
		if (in_index)
			continue;

		MemoryContextReset(econtext->ecxt_per_tuple_memory);
		if (predicate != NULL && !ExecQual(predicate, econtext))
			continue;

		FormIndexDatum(index_info, slot, estate, values, isnull);
		index_insert(index_rel, values, isnull, tid, table_rel,
					 index_info->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
					 false, index_info);
		state->tups_inserted += 1;
	}

	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);

	index_info->ii_ExpressionsState = NIL;
	index_info->ii_PredicateState = NULL;
}
