/*-------------------------------------------------------------------------
 *
 * mqlog_insert.c
 *	  Appending rows to an mqlog table: single-row and multi-row inserts,
 *	  ordered appends, choosing target pages and extending the relation.
 *
 * Rows are only ever appended to a page (never in the middle), so TIDs are
 * stable.  Unordered inserts go to the backend's target page
 * (RelationGetTargetBlock), else the relation's last page, else a page left
 * in the free space map by bulk extension, else a new page: N concurrent
 * writers mostly touch N different pages.  Ordered inserts
 * (mqlog_insert_ordered) only ever write the last page; see there, and
 * mqlog_tail.c for how they find it.
 *
 * A page that is new (all zeros) when we hold its exclusive lock is free for
 * the taking: whoever extends a page keeps it locked until it is
 * initialized, so a zero page under our lock was left by a crash or by bulk
 * extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/hio.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/freespace.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"

#include "am/mqlog.h"

/* Free space of an empty data page, as recorded in the FSM */
#define MQLOG_EMPTY_PAGE_FREE \
	(BLCKSZ - SizeOfPageHeaderData - MQLOG_SPECIAL_SIZE - sizeof(ItemIdData))

/*
 * Trailing NULL columns are not stored: a row with fewer attributes than
 * its relation reads the missing ones as NULL (as heap reads rows written
 * before an ADD COLUMN), so rows whose optional last columns are empty
 * need no null bitmap.
 * Columns with a "missing" value (ADD COLUMN ... DEFAULT) are kept: their
 * NULL would read as the default.  Works in place on a tuple we own.
 */
static bool
mqlog_trailing_nulls(HeapTuple tup, TupleDesc desc, int *keep)
{
	HeapTupleHeader htup = tup->t_data;
	int			natts = HeapTupleHeaderGetNatts(htup);

	*keep = natts;
	if (!HeapTupleHasNulls(tup))
		return false;
	while (*keep > 0 && att_isnull(*keep - 1, htup->t_bits) &&
		   !TupleDescAttr(desc, *keep - 1)->atthasmissing)
		(*keep)--;
	return *keep < natts;
}

static void
mqlog_trim_row(HeapTuple tup, int keep)
{
	HeapTupleHeader htup = tup->t_data;
	bool		hasnull = false;
	Size		bitmaplen;
	uint8		newhoff;

	for (int i = 0; i < keep && !hasnull; i++)
		hasnull = att_isnull(i, htup->t_bits);
	bitmaplen = hasnull ? BITMAPLEN(keep) : 0;
	newhoff = MAXALIGN(SizeofHeapTupleHeader + bitmaplen);
	Assert(newhoff <= htup->t_hoff);

	/* data starts MAXALIGNed either way, so its alignment is unchanged */
	memmove((char *) htup + newhoff, (char *) htup + htup->t_hoff,
			tup->t_len - htup->t_hoff);
	tup->t_len -= htup->t_hoff - newhoff;
	/* the bits of the dropped (NULL) columns were zeros already */
	memset((char *) htup + SizeofHeapTupleHeader + bitmaplen, 0,
		   newhoff - SizeofHeapTupleHeader - bitmaplen);
	HeapTupleHeaderSetNatts(htup, keep);
	if (!hasnull)
		htup->t_infomask &= ~HEAP_HASNULL;
	htup->t_hoff = newhoff;
}

/*
 * Turn a tuple into the one to store: detoast/compress/move out of line
 * (mqlog_toast.c), drop trailing NULL columns and stamp the visibility
 * header.  *shouldFree says whether tup is ours to scribble on and free;
 * it is set to whether the result is.
 */
static HeapTuple
mqlog_prepare_tuple_insert(Relation rel, HeapTuple tup, TransactionId xid,
						   CommandId cid, bool *shouldFree)
{
	HeapTuple	heaptup;
	int			keep;

	tup->t_tableOid = RelationGetRelid(rel);
	heaptup = mqlog_prepare_tuple(rel, tup);
	if (heaptup != tup)
	{
		if (*shouldFree)
			heap_freetuple(tup);
		*shouldFree = true;
	}
	if (mqlog_trailing_nulls(heaptup, RelationGetDescr(rel), &keep))
	{
		/* the slot's own tuple may be referenced by its deformed values */
		if (!*shouldFree)
		{
			heaptup = heap_copytuple(heaptup);
			*shouldFree = true;
		}
		mqlog_trim_row(heaptup, keep);
	}

	heaptup->t_data->t_infomask &= ~HEAP_XACT_MASK;
	heaptup->t_data->t_infomask2 &= ~HEAP2_XACT_MASK;
	heaptup->t_data->t_infomask |= HEAP_XMAX_INVALID;
	HeapTupleHeaderSetXmin(heaptup->t_data, xid);
	HeapTupleHeaderSetCmin(heaptup->t_data, cid);
	HeapTupleHeaderSetXmax(heaptup->t_data, InvalidTransactionId);
	heaptup->t_tableOid = RelationGetRelid(rel);

	return heaptup;
}

/* The same for the contents of a slot */
static HeapTuple
mqlog_prepare_insert(Relation rel, TupleTableSlot *slot, TransactionId xid,
					 CommandId cid, bool *shouldFree)
{
	HeapTuple	tup = ExecFetchSlotHeapTuple(slot, true, shouldFree);

	return mqlog_prepare_tuple_insert(rel, tup, xid, cid, shouldFree);
}

/*
 * Can a row of "need" bytes (on-page size) go on this exclusively locked
 * page?  Sets *isnew for a zero page the caller must initialize.
 */
static bool
mqlog_page_accepts(Page page, Size need, bool *isnew)
{
	*isnew = false;
	if (PageIsNew(page))
	{
		*isnew = true;
		return true;
	}
	if (!mqlog_page_is_valid(page) || MqlogPageIsOverflow(page) ||
		MqlogPageIsFrozen(page))
		return false;
	return mqlog_page_free_space(page) >= need;
}

/*
 * Extend the relation by one page, returned exclusively locked and zeroed.
 * When other backends are queued on the extension lock, also add extra
 * pages (like heap's RelationAddExtraBlocks) and publish them in the free
 * space map, so that bursts of writers do not serialize on extension.
 */
static Buffer
mqlog_extend(Relation rel, BufferAccessStrategy strategy)
{
	Buffer		buf;
	bool		local = RELATION_IS_LOCAL(rel);

	if (!local && !ConditionalLockRelationForExtension(rel, ExclusiveLock))
	{
		int			extra;
		BlockNumber firstextra = InvalidBlockNumber;
		BlockNumber lastextra = InvalidBlockNumber;

		LockRelationForExtension(rel, ExclusiveLock);
		extra = RelationExtensionLockWaiterCount(rel) * 20;
		extra = Min(extra, 512);
		while (extra-- > 0)
		{
			Buffer		xbuf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW,
												  RBM_ZERO_AND_LOCK, strategy);

			lastextra = BufferGetBlockNumber(xbuf);
			if (firstextra == InvalidBlockNumber)
				firstextra = lastextra;
			UnlockReleaseBuffer(xbuf);
			RecordPageWithFreeSpace(rel, lastextra, MQLOG_EMPTY_PAGE_FREE);
		}
		if (firstextra != InvalidBlockNumber)
			FreeSpaceMapVacuumRange(rel, firstextra, lastextra + 1);
	}

	buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_ZERO_AND_LOCK, strategy);

	if (!local)
		UnlockRelationForExtension(rel, ExclusiveLock);
	return buf;
}

/* Try block blkno as target; returns it exclusively locked or InvalidBuffer */
static Buffer
mqlog_try_block(Relation rel, BlockNumber blkno, Size need,
				BufferAccessStrategy strategy, bool *isnew)
{
	Buffer		buf;

	buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, strategy);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (mqlog_page_accepts(BufferGetPage(buf), need, isnew))
		return buf;
	UnlockReleaseBuffer(buf);
	return InvalidBuffer;
}

/* COPY and friends keep the page they insert into pinned */
static Buffer
mqlog_keep_bulk_buffer(BulkInsertState bistate, Buffer buf)
{
	if (bistate)
	{
		bistate->current_buf = buf;
		IncrBufferRefCount(buf);
	}
	return buf;
}

/*
 * Find an exclusively locked page with room for "need" bytes (see the file
 * header for the order in which pages are tried).
 */
static Buffer
mqlog_get_target_buffer(Relation rel, Size need, BulkInsertState bistate,
						bool *isnew)
{
	BufferAccessStrategy strategy = bistate ? bistate->strategy : NULL;
	BlockNumber target;
	BlockNumber nblocks;
	Buffer		buf = InvalidBuffer;

	/* COPY and friends keep their current page pinned */
	if (bistate && BufferIsValid(bistate->current_buf))
	{
		buf = bistate->current_buf;
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		if (mqlog_page_accepts(BufferGetPage(buf), need, isnew))
		{
			IncrBufferRefCount(buf);
			return buf;
		}
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		ReleaseBuffer(buf);
		bistate->current_buf = InvalidBuffer;
		buf = InvalidBuffer;
	}

	/*
	 * The target block, if any, exists: it is forgotten when the relation
	 * is truncated (smgr invalidation), and relations only grow otherwise.
	 * So, like heap, ask for the relation's size (an lseek) only when the
	 * target page is full.
	 */
	target = RelationGetTargetBlock(rel);
	if (target != InvalidBlockNumber)
		buf = mqlog_try_block(rel, target, need, strategy, isnew);
	if (BufferIsValid(buf))
		return mqlog_keep_bulk_buffer(bistate, buf);

	/* last-page fallback: short-lived sessions share the tail page */
	nblocks = RelationGetNumberOfBlocks(rel);
	if (nblocks > 0 && nblocks - 1 != target)
		buf = mqlog_try_block(rel, nblocks - 1, need, strategy, isnew);

	/* pages left by bulk extension */
	while (!BufferIsValid(buf))
	{
		BlockNumber fsmblk = GetPageWithFreeSpace(rel, need);

		if (fsmblk == InvalidBlockNumber || fsmblk >= nblocks)
			break;
		buf = mqlog_try_block(rel, fsmblk, need, strategy, isnew);
		if (!BufferIsValid(buf))
			RecordPageWithFreeSpace(rel, fsmblk, 0);
	}

	if (!BufferIsValid(buf))
	{
		buf = mqlog_extend(rel, strategy);
		*isnew = true;
	}

	return mqlog_keep_bulk_buffer(bistate, buf);
}

/*
 * Append tup as a row to the exclusively locked page (inside the caller's
 * critical section) at its next line pointer, and set tup->t_self.
 */
static void
mqlog_page_add_row(Page page, BlockNumber blkno, HeapTuple tup,
				   MqlogPlacedFn placed, void *placed_arg)
{
	OffsetNumber off;
	char	   *dst = mqlog_page_add_item(page, mqlog_row_size(tup), &off);

	if (dst == NULL)
		elog(PANIC, "failed to add row to mqlog page %u", blkno);
	ItemPointerSet(&tup->t_self, blkno, off);
	tup->t_data->t_ctid = tup->t_self;
	if (placed)
		placed(tup, placed_arg);
	mqlog_row_write(dst, tup);
}

/*
 * Put tuples[first..] on the exclusively locked page as long as they fit,
 * WAL-log the lot and return how many went on the page (at least one: the
 * caller made sure the first one fits).
 */
static int
mqlog_fill_page(Relation rel, Buffer buf, bool isnew, uint8 initflags,
				HeapTuple *tuples, int first, int ntuples, TransactionId xid,
				MqlogPlacedFn placed, void *placed_arg)
{
	Page		page = BufferGetPage(buf);
	BlockNumber blkno = BufferGetBlockNumber(buf);
	int			n = 0;
	StringInfoData walbuf;

	/* room for a multi-insert record, allocated before the critical section */
	walbuf.data = NULL;
	if (ntuples - first > 1 && RelationNeedsWAL(rel))
	{
		initStringInfo(&walbuf);
		enlargeStringInfo(&walbuf, MQLOG_MULTI_INSERT_WAL_SPACE);
	}

	START_CRIT_SECTION();

	if (isnew)
		mqlog_page_init(page, initflags);

	while (first + n < ntuples)
	{
		HeapTuple	tup = tuples[first + n];

		if (n > 0 && mqlog_page_free_space(page) < mqlog_row_size(tup))
			break;
		mqlog_page_add_row(page, blkno, tup, placed, placed_arg);
		n++;
	}
	mqlog_page_note_xmin(page, xid);
	MarkBufferDirty(buf);

	if (n == 1)
		mqlog_log_insert(rel, buf, tuples[first], isnew);
	else
		mqlog_log_multi_insert(rel, buf, tuples + first, n, isnew, &walbuf);

	END_CRIT_SECTION();

	if (walbuf.data)
		pfree(walbuf.data);

	return n;
}

/*
 * Common start of every insert: the xmin of the new rows.  With
 * TABLE_INSERT_FROZEN the rows are visible to everyone whatever becomes of
 * the transaction, which need not even have an xid (queue_ext's delivery
 * records: a delivery happened even if the consumer rolls back).
 */
static TransactionId
mqlog_begin_insert(Relation rel, int options)
{
	mqlog_require_rmgr();
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	if (options & TABLE_INSERT_FROZEN)
		return FrozenTransactionId;
	return GetCurrentTransactionId();
}

/*
 * tuple_insert callback.
 */
void
mqlog_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
				   int options, BulkInsertState bistate)
{
	TransactionId xid = mqlog_begin_insert(rel, options);
	bool		shouldFree;
	HeapTuple	tup;
	Buffer		buf;
	bool		isnew;

	tup = mqlog_prepare_insert(rel, slot, xid, cid, &shouldFree);

	buf = mqlog_get_target_buffer(rel, mqlog_row_size(tup), bistate, &isnew);
	mqlog_fill_page(rel, buf, isnew, 0, &tup, 0, 1, xid, NULL, NULL);
	RelationSetTargetBlock(rel, BufferGetBlockNumber(buf));
	UnlockReleaseBuffer(buf);

	pgstat_count_heap_insert(rel, 1);

	slot->tts_tableOid = RelationGetRelid(rel);
	slot->tts_tid = tup->t_self;
	if (shouldFree)
		heap_freetuple(tup);
}

/*
 * Prepare all slots of a multi-row insert; returns the tuples.
 */
static HeapTuple *
mqlog_prepare_many(Relation rel, TupleTableSlot **slots, int nslots,
				   TransactionId xid, CommandId cid)
{
	HeapTuple  *tuples = palloc(nslots * sizeof(HeapTuple));
	int			i;

	for (i = 0; i < nslots; i++)
	{
		bool		shouldFree;

		tuples[i] = mqlog_prepare_insert(rel, slots[i], xid, cid, &shouldFree);
		/* keep our own copy: the slot's tuple may be freed or changed */
		if (!shouldFree)
			tuples[i] = heap_copytuple(tuples[i]);
	}
	return tuples;
}

/*
 * The same for n rows given as values and nulls (row i's columns at
 * i * natts of the relation), formed straight into tuples: no slot to
 * materialize first
 */
static HeapTuple *
mqlog_prepare_values(Relation rel, Datum *values, bool *isnull, int n,
					 TransactionId xid, CommandId cid)
{
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple  *tuples = palloc(n * sizeof(HeapTuple));

	for (int i = 0; i < n; i++)
	{
		bool		shouldFree = true;

		tuples[i] = mqlog_prepare_tuple_insert(rel,
											   heap_form_tuple(desc,
															   values + i * desc->natts,
															   isnull + i * desc->natts),
											   xid, cid, &shouldFree);
	}
	return tuples;
}

/* Free the tuples of a multi-row insert, returning their TIDs in tids */
static void
mqlog_finish_tuples(Relation rel, HeapTuple *tuples, int n, ItemPointer tids)
{
	for (int i = 0; i < n; i++)
	{
		if (tids)
			tids[i] = tuples[i]->t_self;
		heap_freetuple(tuples[i]);
	}
	pfree(tuples);
	pgstat_count_heap_insert(rel, n);
}

static void
mqlog_finish_many(Relation rel, TupleTableSlot **slots, HeapTuple *tuples,
				  int nslots)
{
	for (int i = 0; i < nslots; i++)
	{
		slots[i]->tts_tableOid = RelationGetRelid(rel);
		slots[i]->tts_tid = tuples[i]->t_self;
	}
	mqlog_finish_tuples(rel, tuples, nslots, NULL);
}

/*
 * Write prepared tuples where tuple_insert would: as many rows per page as
 * fit, one WAL record per page
 */
static void
mqlog_insert_tuples(Relation rel, HeapTuple *tuples, int n, TransactionId xid,
					BulkInsertState bistate)
{
	int			ndone = 0;

	while (ndone < n)
	{
		bool		isnew;
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		buf = mqlog_get_target_buffer(rel, mqlog_row_size(tuples[ndone]),
									  bistate, &isnew);
		ndone += mqlog_fill_page(rel, buf, isnew, 0, tuples, ndone, n, xid,
								 NULL, NULL);
		RelationSetTargetBlock(rel, BufferGetBlockNumber(buf));
		UnlockReleaseBuffer(buf);
	}
}

/* multi_insert callback (COPY FROM, INSERT ... SELECT in batches) */
void
mqlog_multi_insert(Relation rel, TupleTableSlot **slots, int nslots,
				   CommandId cid, int options, BulkInsertState bistate)
{
	TransactionId xid = mqlog_begin_insert(rel, options);
	HeapTuple  *tuples = mqlog_prepare_many(rel, slots, nslots, xid, cid);

	mqlog_insert_tuples(rel, tuples, nslots, xid, bistate);
	mqlog_finish_many(rel, slots, tuples, nslots);
}

/* Multi-row insert of values (see mqlog.h) */
void
mqlog_insert_values(Relation rel, Datum *values, bool *isnull, int n,
					CommandId cid, ItemPointer tids)
{
	TransactionId xid;
	HeapTuple  *tuples;

	mqlog_require_relation(rel);
	if (n <= 0)
		return;
	xid = mqlog_begin_insert(rel, 0);
	tuples = mqlog_prepare_values(rel, values, isnull, n, xid, cid);
	mqlog_insert_tuples(rel, tuples, n, xid, NULL);
	mqlog_finish_tuples(rel, tuples, n, tids);
}

/*
 * The page an ordered append of a "need"-byte row goes to, exclusively
 * locked: *buf (the last page, locked) if the row fits, else a new last
 * page, added while still holding the old one (see mqlog_insert_ordered).
 */
static void
mqlog_ordered_page(Relation rel, Buffer *buf, Size need, bool *isnew)
{
	Buffer		newbuf;
	bool		local = RELATION_IS_LOCAL(rel);

	if (*isnew || mqlog_page_accepts(BufferGetPage(*buf), need, isnew))
		return;
	if (!local)
		LockRelationForExtension(rel, ExclusiveLock);
	newbuf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_ZERO_AND_LOCK, NULL);
	if (!local)
		UnlockRelationForExtension(rel, ExclusiveLock);
	/* the new page is the tail now (its mark is set as it is initialized) */
	mqlog_tail_passed(*buf);
	UnlockReleaseBuffer(*buf);
	*buf = newbuf;
	*isnew = true;
}

/*
 * Ordered append (see mqlog.h).  Rows go only to the last page, which we
 * keep exclusively locked from the moment we verified it is the last page
 * until we are done with it; when it is full we extend the relation while
 * still holding it.  Readers (mqlog_read_next) leave page N only after
 * seeing, under a share lock on N, that page N+1 exists -- and once N+1
 * exists nobody starts adding to N.  So a cursor reader never misses a row.
 */
void
mqlog_insert_ordered(Relation rel, Datum *values, bool *isnull, int n,
					 CommandId cid, ItemPointer tids, MqlogPlacedFn placed,
					 void *placed_arg)
{
	TransactionId xid;
	HeapTuple  *tuples;
	Buffer		buf;
	bool		isnew;
	int			ndone = 0;

	mqlog_require_relation(rel);
	if (n <= 0)
		return;

	xid = mqlog_begin_insert(rel, 0);
	/* overflow pages are written here, before we lock the last page */
	tuples = mqlog_prepare_values(rel, values, isnull, n, xid, cid);

	buf = mqlog_lock_last_page(rel, &isnew);
	while (ndone < n)
	{
		mqlog_ordered_page(rel, &buf, mqlog_row_size(tuples[ndone]), &isnew);
		ndone += mqlog_fill_page(rel, buf, isnew, MQLOG_PAGE_TAIL, tuples,
								 ndone, n, xid, placed, placed_arg);
		isnew = false;
	}
	RelationSetTargetBlock(rel, BufferGetBlockNumber(buf));
	UnlockReleaseBuffer(buf);

	mqlog_finish_tuples(rel, tuples, n, tids);
}

/*
 * Linked insert (see mqlog.h): the first phase prepares the row and locks
 * the page it will go to, so its TID is known before it is written.
 */
void
mqlog_linked_reserve(MqlogLinkedRow *row, Relation rel, Datum *values,
					 bool *isnull, CommandId cid, bool ordered)
{
	Size		need;

	mqlog_require_relation(rel);
	row->rel = rel;
	row->ordered = ordered;
	row->xid = mqlog_begin_insert(rel, 0);
	/* formed straight from the values: no slot to materialize first */
	row->shouldFree = true;
	row->tup = mqlog_prepare_tuple_insert(rel,
										  heap_form_tuple(RelationGetDescr(rel), values, isnull),
										  row->xid, cid, &row->shouldFree);
	need = mqlog_row_size(row->tup);
	if (ordered)
	{
		row->buf = mqlog_lock_last_page(rel, &row->isnew);
		mqlog_ordered_page(rel, &row->buf, need, &row->isnew);
	}
	else
		row->buf = mqlog_get_target_buffer(rel, need, NULL, &row->isnew);
	ItemPointerSet(&row->tid, BufferGetBlockNumber(row->buf),
				   row->isnew ? FirstOffsetNumber :
				   OffsetNumberNext(PageGetMaxOffsetNumber(BufferGetPage(row->buf))));
}

/*
 * Second phase: add every reserved row to its page in one critical section
 * and one WAL record, then release the pages.
 */
void
mqlog_linked_write(MqlogLinkedRow *rows, int n)
{
	Relation	rels[MQLOG_MAX_LINKED];
	Buffer		bufs[MQLOG_MAX_LINKED];
	HeapTuple	tups[MQLOG_MAX_LINKED];
	bool		inits[MQLOG_MAX_LINKED];

	Assert(n > 0 && n <= MQLOG_MAX_LINKED);

	START_CRIT_SECTION();
	for (int i = 0; i < n; i++)
	{
		MqlogLinkedRow *row = &rows[i];
		Page		page = BufferGetPage(row->buf);

		if (row->isnew)
			mqlog_page_init(page, row->ordered ? MQLOG_PAGE_TAIL : 0);
		mqlog_page_add_row(page, ItemPointerGetBlockNumber(&row->tid), row->tup, NULL, NULL);
		/* the page was locked since the TID was promised */
		if (!ItemPointerEquals(&row->tup->t_self, &row->tid))
			elog(PANIC, "mqlog row did not go where it was reserved");
		mqlog_page_note_xmin(page, row->xid);
		MarkBufferDirty(row->buf);

		rels[i] = row->rel;
		bufs[i] = row->buf;
		tups[i] = row->tup;
		inits[i] = row->isnew;
	}
	mqlog_log_rows(rels, bufs, tups, inits, n);
	END_CRIT_SECTION();

	for (int i = 0; i < n; i++)
	{
		MqlogLinkedRow *row = &rows[i];

		/* for an ordered append: the last page, tried first next time */
		RelationSetTargetBlock(row->rel, ItemPointerGetBlockNumber(&row->tid));
		UnlockReleaseBuffer(row->buf);
		pgstat_count_heap_insert(row->rel, 1);
		if (row->shouldFree)
			heap_freetuple(row->tup);
		row->tup = NULL;
	}
}
