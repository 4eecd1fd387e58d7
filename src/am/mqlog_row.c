/*-------------------------------------------------------------------------
 *
 * mqlog_row.c
 *	  The mqlog row format: converting between heap tuples (what the
 *	  executor hands us and reads back) and rows as stored on a page.
 *
 * See mqlog.h for the layout.  A row keeps a heap tuple's null bitmap and
 * data bytes unchanged and replaces its 23-byte header (plus padding) by
 * xmin, natts/flags and, only when it is not FirstCommandId, cmin.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/tuptable.h"

#include "am/mqlog.h"

/*
 * The info field of the row for a prepared heap tuple (xmin and cmin
 * stamped, trailing NULL columns trimmed).
 */
uint16
mqlog_row_info_of(HeapTuple tup)
{
	HeapTupleHeader htup = tup->t_data;
	uint16		info = HeapTupleHeaderGetNatts(htup);

	Assert(info <= MQLOG_ROW_NATTS_MASK);
	if (htup->t_infomask & HEAP_HASNULL)
		info |= MQLOG_ROW_HASNULL;
	if (htup->t_infomask & HEAP_HASEXTERNAL)
		info |= MQLOG_ROW_HASEXTERNAL;
	if (HeapTupleHeaderGetRawCommandId(htup) != FirstCommandId)
		info |= MQLOG_ROW_HAS_CID;
	return info;
}

/* On-page bytes of the row for a prepared heap tuple */
Size
mqlog_row_size(HeapTuple tup)
{
	return mqlog_row_data_offset(mqlog_row_info_of(tup)) +
		tup->t_len - tup->t_data->t_hoff;
}

/*
 * Write the row for a prepared heap tuple at dst (mqlog_row_size bytes).
 * Allocates nothing: called inside critical sections.
 */
void
mqlog_row_write(char *dst, HeapTuple tup)
{
	HeapTupleHeader htup = tup->t_data;
	TransactionId xmin = HeapTupleHeaderGetRawXmin(htup);
	uint16		info = mqlog_row_info_of(tup);
	Size		bitmaplen = mqlog_row_bitmap_len(info);

	memcpy(dst, &xmin, sizeof(TransactionId));
	memcpy(dst + sizeof(TransactionId), &info, sizeof(uint16));
	dst += MQLOG_ROW_HEADER_SIZE;
	if (info & MQLOG_ROW_HAS_CID)
	{
		CommandId	cid = HeapTupleHeaderGetRawCommandId(htup);

		memcpy(dst, &cid, sizeof(CommandId));
		dst += sizeof(CommandId);
	}
	memcpy(dst, htup->t_bits, bitmaplen);
	dst += bitmaplen;
	memcpy(dst, (char *) htup + htup->t_hoff, tup->t_len - htup->t_hoff);
}

/*
 * A heap tuple with the contents of an on-page row, palloc'd in mcxt as
 * one chunk (heap_freetuple frees it).  Its header says what the row's
 * does: xmin, cmin, no xmax; HEAP_HASVARWIDTH is always set, which only
 * makes attribute access take the general path.  The caller sets t_self
 * (and t_ctid) and t_tableOid.
 */
HeapTuple
mqlog_row_to_tuple(const char *row, Size len, MemoryContext mcxt)
{
	uint16		info = mqlog_row_info(row);
	Size		bitmaplen = mqlog_row_bitmap_len(info);
	Size		dataoff = mqlog_row_data_offset(info);
	Size		datalen;
	uint8		hoff;
	HeapTuple	tup;
	HeapTupleHeader htup;

	/* a damaged header must not make us copy past the row or the copy */
	if (len < dataoff ||
		(info & MQLOG_ROW_NATTS_MASK) > MaxTupleAttributeNumber)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("corrupted row in mqlog table: %zu bytes, header 0x%04X",
						len, info),
				 errhint("mq.mqlog_verify() reports every damaged row of a table.")));
	datalen = len - dataoff;
	hoff = MAXALIGN(SizeofHeapTupleHeader + bitmaplen);
	tup = (HeapTuple) MemoryContextAlloc(mcxt, HEAPTUPLESIZE + hoff + datalen);
	htup = (HeapTupleHeader) ((char *) tup + HEAPTUPLESIZE);
	tup->t_data = htup;
	tup->t_len = hoff + datalen;
	ItemPointerSetInvalid(&tup->t_self);
	tup->t_tableOid = InvalidOid;

	memset(htup, 0, hoff);
	HeapTupleHeaderSetXmin(htup, mqlog_row_xmin(row));
	HeapTupleHeaderSetCmin(htup, mqlog_row_cmin(row));
	HeapTupleHeaderSetXmax(htup, InvalidTransactionId);
	HeapTupleHeaderSetNatts(htup, info & MQLOG_ROW_NATTS_MASK);
	htup->t_infomask = HEAP_XMAX_INVALID | HEAP_HASVARWIDTH;
	if (info & MQLOG_ROW_HASNULL)
		htup->t_infomask |= HEAP_HASNULL;
	if (info & MQLOG_ROW_HASEXTERNAL)
		htup->t_infomask |= HEAP_HASEXTERNAL;
	htup->t_hoff = hoff;
	memcpy(htup->t_bits, row + mqlog_row_bitmap_offset(info), bitmaplen);
	memcpy((char *) htup + hoff, row + dataoff, datalen);
	return tup;
}

/*
 * Store a copy of row off of a (pinned) data page into slot.  The copy is
 * allocated in the slot's memory context and owned by the slot.
 */
void
mqlog_row_store(TupleTableSlot *slot, Relation rel, Page page,
				BlockNumber blkno, OffsetNumber off)
{
	ItemId		iid = PageGetItemId(page, off);
	HeapTuple	tup;

	tup = mqlog_row_to_tuple((char *) PageGetItem(page, iid),
							 ItemIdGetLength(iid), slot->tts_mcxt);
	ItemPointerSet(&tup->t_self, blkno, off);
	tup->t_data->t_ctid = tup->t_self;
	tup->t_tableOid = RelationGetRelid(rel);
	if (TTS_IS_HEAPTUPLE(slot))
		ExecStoreHeapTuple(tup, slot, true);
	else
		ExecForceStoreHeapTuple(tup, slot, true);
	slot->tts_tableOid = tup->t_tableOid;
}

/*
 * Is this a well-formed row of a relation with relnatts attributes?
 * Returns NULL, or what is wrong (for mq.mqlog_verify).  Checks the header
 * and that the row is long enough for it and its null bitmap; the data is
 * checked by the caller.
 */
const char *
mqlog_row_check(const char *row, Size len, int relnatts)
{
	uint16		info;

	if (len < MQLOG_ROW_HEADER_SIZE)
		return "row is shorter than a row header";
	info = mqlog_row_info(row);
	if (info & ~(MQLOG_ROW_NATTS_MASK | MQLOG_ROW_FLAGS))
		return "row header has unknown flag bits";
	if ((info & MQLOG_ROW_NATTS_MASK) > relnatts)
		return "row has more attributes than its relation";
	if (mqlog_row_data_offset(info) > len)
		return "row header and null bitmap exceed the row's length";
	return NULL;
}
