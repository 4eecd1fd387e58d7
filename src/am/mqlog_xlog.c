/*-------------------------------------------------------------------------
 *
 * mqlog_xlog.c
 *	  WAL for the mqlog access method: a custom resource manager.
 *
 * All WAL the access method writes is emitted here.  Records are modelled
 * on heap's: a single-row insert logs only the tuple's data and the header
 * bits that cannot be derived (xmin is the record's xid, cmin is
 * FirstCommandId at redo, t_ctid is the row's own TID); a multi-row insert
 * logs one record per page with a 5-byte header per row.  The first record
 * touching a fresh page carries XLMQ_INIT_PAGE so replay never depends on
 * what the block held before.
 *
 * Callers modify the page inside a critical section, mark the buffer
 * dirty and then call the mqlog_log_* function, which inserts the record
 * and sets the page LSN -- only when RelationNeedsWAL(rel).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/bufmask.h"
#include "access/transam.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "access/xlogutils.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/standby.h"

#include "am/mqlog.h"

static void mqlog_redo(XLogReaderState *record);
static void mqlog_desc(StringInfo buf, XLogReaderState *record);
static const char *mqlog_identify(uint8 info);
static void mqlog_mask(char *pagedata, BlockNumber blkno);

static RmgrData mqlog_rmgr = {
	.rm_name = MQLOG_RMGR_NAME,
	.rm_redo = mqlog_redo,
	.rm_desc = mqlog_desc,
	.rm_identify = mqlog_identify,
	.rm_startup = NULL,
	.rm_cleanup = NULL,
	.rm_mask = mqlog_mask,
	.rm_decode = NULL
};

/*
 * Register the resource manager; only possible while preloading.
 */
void
mqlog_xlog_register(void)
{
	if (process_shared_preload_libraries_in_progress)
		RegisterCustomRmgr(MQLOG_RMGR_ID, &mqlog_rmgr);
}

/* ----------------------------------------------------------------
 * Record construction
 * ----------------------------------------------------------------
 */

/* t_hoff of a row, derived from natts and HEAP_HASNULL */
static inline uint8
mqlog_compute_hoff(uint16 infomask2, uint16 infomask)
{
	Size		len = SizeofHeapTupleHeader;

	if (infomask & HEAP_HASNULL)
		len += BITMAPLEN(infomask2 & HEAP_NATTS_MASK);
	return (uint8) MAXALIGN(len);
}

/*
 * Where the logged bytes of a row start: after the fixed header when the
 * row has a null bitmap (which must be logged), else at t_hoff (the
 * alignment padding before it is zeros, rebuilt at redo).
 */
static inline Size
mqlog_logged_start(uint16 infomask2, uint16 infomask)
{
	return (infomask & HEAP_HASNULL) ? SizeofHeapTupleHeader :
		mqlog_compute_hoff(infomask2, infomask);
}

/*
 * Append the bits of a row needed to rebuild its header at redo.  The low
 * byte of t_infomask holds all non-visibility flags (HASNULL, HASVARWIDTH,
 * HASEXTERNAL); the visibility bits are always "xmax invalid".
 */
static void
mqlog_append_row_header(StringInfo buf, HeapTuple tup, bool with_len)
{
	HeapTupleHeader htup = tup->t_data;
	uint16		infomask2 = htup->t_infomask2;
	uint8		infomask_lo = (uint8) (htup->t_infomask & 0xFF);

	Assert(htup->t_hoff == mqlog_compute_hoff(infomask2, htup->t_infomask));
	if (with_len)
	{
		uint16		datalen = tup->t_len - mqlog_logged_start(infomask2, htup->t_infomask);

		appendBinaryStringInfo(buf, (char *) &datalen, sizeof(uint16));
	}
	appendBinaryStringInfo(buf, (char *) &infomask2, sizeof(uint16));
	appendBinaryStringInfo(buf, (char *) &infomask_lo, sizeof(uint8));
}

void
mqlog_log_insert(Relation rel, Buffer buf, HeapTuple tup, bool init)
{
	xl_mqlog_insert xlrec;
	StringInfoData hdr;
	XLogRecPtr	recptr;

	if (!RelationNeedsWAL(rel))
		return;

	xlrec.offnum = ItemPointerGetOffsetNumber(&tup->t_self);
	xlrec.flags = init ? XLMQ_INIT_PAGE : 0;

	initStringInfo(&hdr);
	mqlog_append_row_header(&hdr, tup, false);

	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfMqlogInsert);
	XLogRegisterBuffer(0, buf, REGBUF_STANDARD | (init ? REGBUF_WILL_INIT : 0));
	XLogRegisterBufData(0, hdr.data, hdr.len);
	{
		Size		start = mqlog_logged_start(tup->t_data->t_infomask2,
											   tup->t_data->t_infomask);

		XLogRegisterBufData(0, (char *) tup->t_data + start, tup->t_len - start);
	}
	recptr = XLogInsert(MQLOG_RMGR_ID, XLOG_MQLOG_INSERT);
	PageSetLSN(BufferGetPage(buf), recptr);
}

void
mqlog_log_multi_insert(Relation rel, Buffer buf, HeapTuple *tuples,
					   int ntuples, bool init)
{
	xl_mqlog_multi_insert xlrec;
	StringInfoData data;
	XLogRecPtr	recptr;
	int			i;

	if (!RelationNeedsWAL(rel))
		return;

	xlrec.flags = init ? XLMQ_INIT_PAGE : 0;
	xlrec.firstoff = ItemPointerGetOffsetNumber(&tuples[0]->t_self);
	xlrec.ntuples = ntuples;

	initStringInfo(&data);
	for (i = 0; i < ntuples; i++)
	{
		HeapTuple	tup = tuples[i];

		Assert(ItemPointerGetOffsetNumber(&tup->t_self) == xlrec.firstoff + i);
		mqlog_append_row_header(&data, tup, true);
		{
			Size		start = mqlog_logged_start(tup->t_data->t_infomask2,
												   tup->t_data->t_infomask);

			appendBinaryStringInfo(&data, (char *) tup->t_data + start, tup->t_len - start);
		}
	}

	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfMqlogMultiInsert);
	XLogRegisterBuffer(0, buf, REGBUF_STANDARD | (init ? REGBUF_WILL_INIT : 0));
	XLogRegisterBufData(0, data.data, data.len);
	recptr = XLogInsert(MQLOG_RMGR_ID, XLOG_MQLOG_MULTI_INSERT);
	PageSetLSN(BufferGetPage(buf), recptr);
}

void
mqlog_log_overflow(Relation rel, Buffer buf, BlockNumber first,
				   uint32 chunkno, const char *chunk, int len)
{
	xl_mqlog_overflow xlrec;
	XLogRecPtr	recptr;

	if (!RelationNeedsWAL(rel))
		return;

	xlrec.first = first;
	xlrec.chunkno = chunkno;

	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfMqlogOverflow);
	XLogRegisterBuffer(0, buf, REGBUF_STANDARD | REGBUF_WILL_INIT);
	XLogRegisterBufData(0, (char *) chunk, len);
	recptr = XLogInsert(MQLOG_RMGR_ID, XLOG_MQLOG_OVERFLOW);
	PageSetLSN(BufferGetPage(buf), recptr);
}

void
mqlog_log_freeze(Relation rel, Buffer buf, TransactionId conflict_xid,
				 OffsetNumber *dead, int ndead)
{
	xl_mqlog_freeze xlrec;
	XLogRecPtr	recptr;

	if (!RelationNeedsWAL(rel))
		return;

	xlrec.conflict_xid = conflict_xid;
	xlrec.ndead = ndead;

	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfMqlogFreeze);
	XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
	if (ndead > 0)
		XLogRegisterBufData(0, (char *) dead, ndead * sizeof(OffsetNumber));
	recptr = XLogInsert(MQLOG_RMGR_ID, XLOG_MQLOG_FREEZE);
	PageSetLSN(BufferGetPage(buf), recptr);
}

/* ----------------------------------------------------------------
 * Redo
 * ----------------------------------------------------------------
 */

/*
 * Rebuild one row from its logged header bits and data and append it at
 * offnum.  Returns the position after the consumed bytes.
 */
static char *
mqlog_redo_add_row(Page page, BlockNumber blkno, OffsetNumber offnum,
				   TransactionId xid, char *ptr, Size datalen,
				   HeapTupleHeader scratch)
{
	uint16		infomask2;
	uint8		infomask_lo;
	uint8		hoff;
	Size		start;
	Size		len;

	memcpy(&infomask2, ptr, sizeof(uint16));
	ptr += sizeof(uint16);
	infomask_lo = *(uint8 *) ptr;
	ptr += sizeof(uint8);

	hoff = mqlog_compute_hoff(infomask2, infomask_lo);
	start = mqlog_logged_start(infomask2, infomask_lo);
	len = start + datalen;
	if (len > MaxHeapTupleSize)
		elog(PANIC, "mqlog_redo: invalid row length %zu", len);

	MemSet(scratch, 0, hoff);
	scratch->t_infomask2 = infomask2;
	scratch->t_infomask = infomask_lo | HEAP_XMAX_INVALID;
	scratch->t_hoff = hoff;
	HeapTupleHeaderSetXmin(scratch, xid);
	HeapTupleHeaderSetCmin(scratch, FirstCommandId);
	HeapTupleHeaderSetXmax(scratch, InvalidTransactionId);
	ItemPointerSet(&scratch->t_ctid, blkno, offnum);
	/* the null bitmap, if any, is part of the logged bytes */
	memcpy((char *) scratch + start, ptr, datalen);

	if (PageGetMaxOffsetNumber(page) + 1 != offnum)
		elog(PANIC, "mqlog_redo: row at offset %u does not append to block %u",
			 offnum, blkno);
	if (PageAddItem(page, (Item) scratch, len, offnum, false, true) == InvalidOffsetNumber)
		elog(PANIC, "mqlog_redo: failed to add row");
	mqlog_page_note_xmin(page, xid);

	return ptr + datalen;
}

static void
mqlog_redo_insert(XLogReaderState *record, bool multi)
{
	XLogRecPtr	lsn = record->EndRecPtr;
	TransactionId xid = XLogRecGetXid(record);
	uint8		flags;
	OffsetNumber offnum;
	int			ntuples;
	Buffer		buffer;
	BlockNumber blkno;
	XLogRedoAction action;

	if (multi)
	{
		xl_mqlog_multi_insert *xlrec = (xl_mqlog_multi_insert *) XLogRecGetData(record);

		flags = xlrec->flags;
		offnum = xlrec->firstoff;
		ntuples = xlrec->ntuples;
	}
	else
	{
		xl_mqlog_insert *xlrec = (xl_mqlog_insert *) XLogRecGetData(record);

		flags = xlrec->flags;
		offnum = xlrec->offnum;
		ntuples = 1;
	}

	XLogRecGetBlockTag(record, 0, NULL, NULL, &blkno);
	if (flags & XLMQ_INIT_PAGE)
	{
		buffer = XLogInitBufferForRedo(record, 0);
		mqlog_page_init(BufferGetPage(buffer), 0);
		action = BLK_NEEDS_REDO;
	}
	else
		action = XLogReadBufferForRedo(record, 0, &buffer);

	if (action == BLK_NEEDS_REDO)
	{
		Page		page = BufferGetPage(buffer);
		Size		datalen;
		char	   *ptr = XLogRecGetBlockData(record, 0, &datalen);
		char	   *end = ptr + datalen;
		PGAlignedBlock scratch;
		int			i;

		for (i = 0; i < ntuples; i++)
		{
			Size		rowlen;

			if (multi)
			{
				uint16		l;

				memcpy(&l, ptr, sizeof(uint16));
				ptr += sizeof(uint16);
				rowlen = l;
			}
			else
				rowlen = datalen - SizeOfMqlogRowHeader;
			ptr = mqlog_redo_add_row(page, blkno, offnum + i, xid, ptr, rowlen,
									 (HeapTupleHeader) scratch.data);
		}
		if (ptr != end)
			elog(PANIC, "mqlog_redo: record length mismatch");

		PageSetLSN(page, lsn);
		MarkBufferDirty(buffer);
	}
	if (BufferIsValid(buffer))
		UnlockReleaseBuffer(buffer);
}

static void
mqlog_redo_overflow(XLogReaderState *record)
{
	xl_mqlog_overflow *xlrec = (xl_mqlog_overflow *) XLogRecGetData(record);
	Buffer		buffer;
	Page		page;
	Size		len;
	char	   *chunk;
	MqlogPageOpaque opaque;

	buffer = XLogInitBufferForRedo(record, 0);
	page = BufferGetPage(buffer);
	chunk = XLogRecGetBlockData(record, 0, &len);

	mqlog_page_init(page, MQLOG_PAGE_OVERFLOW);
	opaque = MqlogPageGetOpaque(page);
	opaque->mq_aux1 = xlrec->first;
	opaque->mq_aux2 = xlrec->chunkno;
	if (PageAddItem(page, (Item) chunk, len, FirstOffsetNumber, false, false) == InvalidOffsetNumber)
		elog(PANIC, "mqlog_redo: failed to add overflow chunk");

	PageSetLSN(page, record->EndRecPtr);
	MarkBufferDirty(buffer);
	UnlockReleaseBuffer(buffer);
}

static void
mqlog_redo_freeze(XLogReaderState *record)
{
	xl_mqlog_freeze *xlrec = (xl_mqlog_freeze *) XLogRecGetData(record);
	Buffer		buffer;

	/*
	 * Standby queries that might consider the page's newest inserter still
	 * running would now see its rows: cancel them first, as heap does for
	 * freezing.
	 */
	if (InHotStandby && TransactionIdIsValid(xlrec->conflict_xid))
	{
		RelFileNode rnode;

		XLogRecGetBlockTag(record, 0, &rnode, NULL, NULL);
		ResolveRecoveryConflictWithSnapshot(xlrec->conflict_xid, rnode);
	}

	if (XLogReadBufferForRedo(record, 0, &buffer) == BLK_NEEDS_REDO)
	{
		Page		page = BufferGetPage(buffer);
		Size		len;
		OffsetNumber *dead = (OffsetNumber *) XLogRecGetBlockData(record, 0, &len);
		int			i;

		for (i = 0; i < xlrec->ndead; i++)
			ItemIdSetDead(PageGetItemId(page, dead[i]));
		MqlogPageGetOpaque(page)->mq_flags |= MQLOG_PAGE_FROZEN;

		PageSetLSN(page, record->EndRecPtr);
		MarkBufferDirty(buffer);
	}
	if (BufferIsValid(buffer))
		UnlockReleaseBuffer(buffer);
}

static void
mqlog_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & XLOG_MQLOG_OPMASK;

	switch (info)
	{
		case XLOG_MQLOG_INSERT:
			mqlog_redo_insert(record, false);
			break;
		case XLOG_MQLOG_MULTI_INSERT:
			mqlog_redo_insert(record, true);
			break;
		case XLOG_MQLOG_OVERFLOW:
			mqlog_redo_overflow(record);
			break;
		case XLOG_MQLOG_FREEZE:
			mqlog_redo_freeze(record);
			break;
		default:
			elog(PANIC, "mqlog_redo: unknown op code %u", info);
	}
}

/* ----------------------------------------------------------------
 * Description (pg_waldump, wal_debug) and masking
 * ----------------------------------------------------------------
 */

static void
mqlog_desc(StringInfo buf, XLogReaderState *record)
{
	char	   *rec = XLogRecGetData(record);
	uint8		info = XLogRecGetInfo(record) & XLOG_MQLOG_OPMASK;

	switch (info)
	{
		case XLOG_MQLOG_INSERT:
			{
				xl_mqlog_insert *xlrec = (xl_mqlog_insert *) rec;

				appendStringInfo(buf, "off %u flags 0x%02X",
								 xlrec->offnum, xlrec->flags);
				break;
			}
		case XLOG_MQLOG_MULTI_INSERT:
			{
				xl_mqlog_multi_insert *xlrec = (xl_mqlog_multi_insert *) rec;

				appendStringInfo(buf, "firstoff %u ntuples %u flags 0x%02X",
								 xlrec->firstoff, xlrec->ntuples, xlrec->flags);
				break;
			}
		case XLOG_MQLOG_OVERFLOW:
			{
				xl_mqlog_overflow *xlrec = (xl_mqlog_overflow *) rec;

				appendStringInfo(buf, "first %u chunk %u",
								 xlrec->first, xlrec->chunkno);
				break;
			}
		case XLOG_MQLOG_FREEZE:
			{
				xl_mqlog_freeze *xlrec = (xl_mqlog_freeze *) rec;

				appendStringInfo(buf, "conflict_xid %u ndead %u",
								 xlrec->conflict_xid, xlrec->ndead);
				break;
			}
	}
}

static const char *
mqlog_identify(uint8 info)
{
	switch (info & XLOG_MQLOG_OPMASK)
	{
		case XLOG_MQLOG_INSERT:
			return "INSERT";
		case XLOG_MQLOG_MULTI_INSERT:
			return "MULTI_INSERT";
		case XLOG_MQLOG_OVERFLOW:
			return "OVERFLOW";
		case XLOG_MQLOG_FREEZE:
			return "FREEZE";
	}
	return NULL;
}

/*
 * Mask what legitimately differs between a page on the primary and after
 * replay: LSN, checksum, the unused hole and each row's cmin (redo uses
 * FirstCommandId).
 */
static void
mqlog_mask(char *pagedata, BlockNumber blkno)
{
	Page		page = (Page) pagedata;
	OffsetNumber off,
				maxoff;

	mask_page_lsn_and_checksum(page);
	mask_unused_space(page);

	if (PageIsNew(page) || !mqlog_page_is_valid(page) || MqlogPageIsOverflow(page))
		return;

	maxoff = PageGetMaxOffsetNumber(page);
	for (off = FirstOffsetNumber; off <= maxoff; off++)
	{
		ItemId		iid = PageGetItemId(page, off);

		if (ItemIdIsNormal(iid))
		{
			HeapTupleHeader htup = (HeapTupleHeader) PageGetItem(page, iid);

			htup->t_choice.t_heap.t_field3.t_cid = MASK_MARKER;
		}
	}
}
