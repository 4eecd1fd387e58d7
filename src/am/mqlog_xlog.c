/*-------------------------------------------------------------------------
 *
 * mqlog_xlog.c
 *	  WAL for the mqlog access method: a custom resource manager.
 *
 * All WAL the access method writes is emitted here.  Records are modelled
 * on heap's: a single-row insert logs the row without what redo can derive
 * (xmin is the record's xid, cmin is FirstCommandId at redo, the offset is
 * the page's next one); a multi-row insert logs one record per page with a
 * 2-byte length per row.  The first record
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

/*
 * Rows written outside any transaction's fate (TABLE_INSERT_FROZEN, e.g.
 * delivery records) carry FrozenTransactionId; their records say so,
 * because redo otherwise takes xmin from the record's xid.
 */
static inline uint8
mqlog_frozen_flag(HeapTuple tup)
{
	return HeapTupleHeaderGetRawXmin(tup->t_data) == FrozenTransactionId ?
		XLOG_MQLOG_FROZEN : 0;
}

static inline TransactionId
mqlog_redo_xid(XLogReaderState *record)
{
	return (XLogRecGetInfo(record) & XLOG_MQLOG_FROZEN) ?
		FrozenTransactionId : XLogRecGetXid(record);
}

/* RegisterCustomRmgr succeeded: writers can log what they do */
static bool mqlog_rmgr_registered = false;

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
	{
		RegisterCustomRmgr(MQLOG_RMGR_ID, &mqlog_rmgr);
		mqlog_rmgr_registered = true;
	}
}

/*
 * Writers need the resource manager, which only shared_preload_libraries
 * can register: without it their WAL could not be replayed.
 */
void
mqlog_require_rmgr(void)
{
	if (!mqlog_rmgr_registered)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("writing to an mqlog table requires queue_ext to be loaded via shared_preload_libraries"),
				 errhint("Add queue_ext to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* ----------------------------------------------------------------
 * Record construction
 * ----------------------------------------------------------------
 */

/* Header bits of a row as logged (see mqlog_register_row) */
typedef struct MqlogRowHeader
{
	uint16		info;			/* the row's info, maybe | MQLOG_ROW_LOG_INIT */
	uint8		shared;			/* linked rows: data shared with block 0's */
} MqlogRowHeader;

static void
mqlog_row_header(HeapTuple tup, bool init, MqlogRowHeader *hdr)
{
	hdr->info = mqlog_row_info_of(tup);
	if (init)
		hdr->info |= MQLOG_ROW_LOG_INIT;
}

/*
 * A row's image as logged (see mqlog.h): info, null bitmap, data, written
 * to out (room for a page); returns its length.
 */
static Size
mqlog_tuple_image(HeapTuple tup, uint16 info, char *out)
{
	HeapTupleHeader htup = tup->t_data;
	Size		bitmaplen = mqlog_row_bitmap_len(info);
	Size		datalen = tup->t_len - htup->t_hoff;

	memcpy(out, &info, sizeof(uint16));
	memcpy(out + sizeof(uint16), htup->t_bits, bitmaplen);
	memcpy(out + sizeof(uint16) + bitmaplen, (char *) htup + htup->t_hoff, datalen);
	return sizeof(uint16) + bitmaplen + datalen;
}

/*
 * The image as logged of the row at off on a page (info, null bitmap,
 * data: the row without xmin and cmin), written to out; -1 if there is no
 * row there.  Redo sees the page as it was when a row after it was logged,
 * so it builds the same image.
 */
static int
mqlog_page_row_image(Page page, OffsetNumber off, char *out)
{
	ItemId		iid;
	const char *row;
	uint16		info;
	Size		len;
	Size		bitmapoff;

	if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page))
		return -1;
	iid = PageGetItemId(page, off);
	if (!ItemIdIsNormal(iid))
		return -1;
	row = (const char *) PageGetItem(page, iid);
	len = ItemIdGetLength(iid);
	info = mqlog_row_info(row);
	bitmapoff = mqlog_row_bitmap_offset(info);
	if (len < mqlog_row_data_offset(info))
		elog(PANIC, "mqlog: malformed row at offset %u", off);
	memcpy(out, &info, sizeof(uint16));
	memcpy(out + sizeof(uint16), row + bitmapoff, len - bitmapoff);
	return (int) (sizeof(uint16) + len - bitmapoff);
}

/*
 * Encode the image of the row at off (img, imglen) as a delta against the
 * image of the row before it on the page, into out (room for imglen).
 * Returns the encoded length, or -1 to log the image plainly.
 */
static int
mqlog_encode_image(Page page, OffsetNumber off, const char *img, Size imglen,
				   char *out)
{
	PGAlignedBlock base;
	int			baselen = mqlog_page_row_image(page, off - 1, base.data);

	if (baselen < 0)
		return -1;
	return mqlog_delta_encode(img, imglen, base.data, baselen, out);
}

/*
 * A row as logged in a (possibly linked) INSERT record: its info, then the
 * null bitmap if any, then the data.  With a base row (the row of block 0
 * of a linked insert), a byte saying how many leading data bytes equal the
 * base row's comes before the data, which then starts after them (a queue
 * entry's visible_at is its message's published_at).  Registered as
 * pieces pointing into the tuple, so nothing is allocated in the caller's
 * critical section.
 */
static void
mqlog_register_row(uint8 block_id, HeapTuple tup, MqlogRowHeader *hdr,
				   HeapTuple base)
{
	HeapTupleHeader htup = tup->t_data;
	Size		bitmaplen = mqlog_row_bitmap_len(hdr->info);
	char	   *data = (char *) htup + htup->t_hoff;
	Size		datalen = tup->t_len - htup->t_hoff;

	XLogRegisterBufData(block_id, (char *) &hdr->info, SizeOfMqlogRowHeader);
	if (bitmaplen > 0)
		XLogRegisterBufData(block_id, (char *) htup->t_bits, bitmaplen);
	if (base != NULL)
	{
		char	   *basedata = (char *) base->t_data + base->t_data->t_hoff;
		Size		max = Min(Min(datalen, base->t_len - base->t_data->t_hoff), PG_UINT8_MAX);

		hdr->shared = 0;
		while (hdr->shared < max && data[hdr->shared] == basedata[hdr->shared])
			hdr->shared++;
		XLogRegisterBufData(block_id, (char *) &hdr->shared, 1);
		data += hdr->shared;
		datalen -= hdr->shared;
	}
	if (datalen > 0)
		XLogRegisterBufData(block_id, data, datalen);
}

/*
 * Log the rows of an INSERT record each as a delta against the row before
 * it on its page (XLOG_MQLOG_DELTA), if every one of them has such a row
 * and encodes shorter.  Returns false, having registered nothing, when the
 * record is to be logged plainly instead.  Called after XLogBeginInsert.
 */
static bool
mqlog_log_rows_delta(Relation *rels, Buffer *bufs, HeapTuple *tups,
					 bool *inits, int n)
{
	PGAlignedBlock encs[MQLOG_MAX_LINKED];
	int			enclens[MQLOG_MAX_LINKED];
	PGAlignedBlock img;
	uint8		id = 0;
	XLogRecPtr	recptr;

	for (int i = 0; i < n; i++)
	{
		Size		imglen;

		if (!RelationNeedsWAL(rels[i]))
			continue;
		if (inits[i])
			return false;
		imglen = mqlog_tuple_image(tups[i], mqlog_row_info_of(tups[i]), img.data);
		enclens[i] = mqlog_encode_image(BufferGetPage(bufs[i]),
										ItemPointerGetOffsetNumber(&tups[i]->t_self),
										img.data, imglen, encs[i].data);
		if (enclens[i] < 0)
			return false;
	}

	for (int i = 0; i < n; i++)
	{
		if (!RelationNeedsWAL(rels[i]))
			continue;
		XLogRegisterBuffer(id, bufs[i], REGBUF_STANDARD);
		XLogRegisterBufData(id, encs[i].data, enclens[i]);
		id++;
	}
	recptr = XLogInsert(MQLOG_RMGR_ID,
						XLOG_MQLOG_INSERT | XLOG_MQLOG_DELTA | mqlog_frozen_flag(tups[0]));
	for (int i = 0; i < n; i++)
		if (RelationNeedsWAL(rels[i]))
			PageSetLSN(BufferGetPage(bufs[i]), recptr);
	return true;
}

void
mqlog_log_rows(Relation *rels, Buffer *bufs, HeapTuple *tups, bool *inits,
			   int n)
{
	MqlogRowHeader hdrs[MQLOG_MAX_LINKED];
	uint8		id = 0;
	int			nlogged = 0;
	HeapTuple	base = NULL;
	XLogRecPtr	recptr;

	Assert(n <= MQLOG_MAX_LINKED);
	for (int i = 0; i < n; i++)
		nlogged += RelationNeedsWAL(rels[i]) ? 1 : 0;
	if (nlogged == 0)
		return;

	XLogBeginInsert();
	if (mqlog_log_rows_delta(rels, bufs, tups, inits, n))
		return;

	for (int i = 0; i < n; i++)
	{
		uint8		flags = REGBUF_STANDARD;

		if (!RelationNeedsWAL(rels[i]))
			continue;
		if (inits[i])
			flags |= REGBUF_WILL_INIT;
		/* later rows refer to block 0's data: keep it even with an FPI */
		if (id == 0 && nlogged > 1)
			flags |= REGBUF_KEEP_DATA;
		mqlog_row_header(tups[i], inits[i], &hdrs[i]);
		XLogRegisterBuffer(id, bufs[i], flags);
		mqlog_register_row(id, tups[i], &hdrs[i], base);
		if (id == 0)
			base = tups[i];
		id++;
	}
	recptr = XLogInsert(MQLOG_RMGR_ID, XLOG_MQLOG_INSERT | mqlog_frozen_flag(tups[0]));
	for (int i = 0; i < n; i++)
		if (RelationNeedsWAL(rels[i]))
			PageSetLSN(BufferGetPage(bufs[i]), recptr);
}

void
mqlog_log_insert(Relation rel, Buffer buf, HeapTuple tup, bool init)
{
	mqlog_log_rows(&rel, &buf, &tup, &init, 1);
}

void
mqlog_log_multi_insert(Relation rel, Buffer buf, HeapTuple *tuples,
					   int ntuples, bool init, StringInfo scratch)
{
	xl_mqlog_multi_insert xlrec;
	XLogRecPtr	recptr;
	int			i;

	if (!RelationNeedsWAL(rel))
		return;

	xlrec.flags = init ? XLMQ_INIT_PAGE : 0;
	xlrec.firstoff = ItemPointerGetOffsetNumber(&tuples[0]->t_self);
	xlrec.ntuples = ntuples;

	/*
	 * The caller sized scratch before its critical section: no palloc here.
	 * Each row: uint16 length (| XLMQ_ROW_DELTA) and its image, or its
	 * image's delta against the row before it on the page.
	 */
	resetStringInfo(scratch);
	for (i = 0; i < ntuples; i++)
	{
		HeapTuple	tup = tuples[i];
		MqlogRowHeader hdr;
		PGAlignedBlock enc;
		char	   *img;
		uint16		len;
		int			enclen;

		Assert(ItemPointerGetOffsetNumber(&tup->t_self) == xlrec.firstoff + i);
		mqlog_row_header(tup, false, &hdr);
		img = scratch->data + scratch->len + sizeof(uint16);
		len = mqlog_tuple_image(tup, hdr.info, img);
		Assert(scratch->len + sizeof(uint16) + len < scratch->maxlen);
		enclen = mqlog_encode_image(BufferGetPage(buf),
									ItemPointerGetOffsetNumber(&tup->t_self),
									img, len, enc.data);
		if (enclen >= 0)
		{
			memcpy(img, enc.data, enclen);
			len = enclen | XLMQ_ROW_DELTA;
		}
		memcpy(scratch->data + scratch->len, &len, sizeof(uint16));
		scratch->len += sizeof(uint16) + (len & ~XLMQ_ROW_DELTA);
		scratch->data[scratch->len] = '\0';
	}

	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfMqlogMultiInsert);
	XLogRegisterBuffer(0, buf, REGBUF_STANDARD | (init ? REGBUF_WILL_INIT : 0));
	XLogRegisterBufData(0, scratch->data, scratch->len);
	recptr = XLogInsert(MQLOG_RMGR_ID,
						XLOG_MQLOG_MULTI_INSERT | mqlog_frozen_flag(tuples[0]));
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
 * Rebuild one row from its logged info, null bitmap and data (loglen bytes
 * in all) and append it to the page: rows are only ever appended, so it
 * goes to the next line pointer, as it did when it was written.  Returns
 * the position after the consumed bytes.
 */
static char *
mqlog_redo_add_row(Page page, BlockNumber blkno, TransactionId xid,
				   char *ptr, Size loglen, const char *base, Size baselen)
{
	uint16		info;
	Size		bitmaplen;
	Size		shared = 0;
	Size		restlen;
	Size		len;
	OffsetNumber off;
	char	   *dst;

	if (loglen < SizeOfMqlogRowHeader)
		elog(PANIC, "mqlog_redo: truncated row in block %u", blkno);
	memcpy(&info, ptr, sizeof(uint16));
	info &= ~MQLOG_ROW_LOG_INIT;
	bitmaplen = mqlog_row_bitmap_len(info);
	if (loglen < SizeOfMqlogRowHeader + bitmaplen + (base ? 1 : 0))
		elog(PANIC, "mqlog_redo: truncated row in block %u", blkno);
	if (base != NULL)
	{
		/* leading data bytes shared with block 0's row (see mqlog_register_row) */
		shared = *(uint8 *) (ptr + SizeOfMqlogRowHeader + bitmaplen);
		if (shared > baselen)
			elog(PANIC, "mqlog_redo: invalid shared prefix in block %u", blkno);
	}
	restlen = loglen - SizeOfMqlogRowHeader - bitmaplen - (base ? 1 : 0);
	len = mqlog_row_data_offset(info) + shared + restlen;

	dst = mqlog_page_add_item(page, len, &off);
	if (dst == NULL)
		elog(PANIC, "mqlog_redo: failed to add row to block %u", blkno);
	memcpy(dst, &xid, sizeof(TransactionId));
	memcpy(dst + sizeof(TransactionId), &info, sizeof(uint16));
	if (info & MQLOG_ROW_HAS_CID)
	{
		CommandId	cid = FirstCommandId;

		memcpy(dst + MQLOG_ROW_HEADER_SIZE, &cid, sizeof(CommandId));
	}
	dst += mqlog_row_bitmap_offset(info);
	memcpy(dst, ptr + SizeOfMqlogRowHeader, bitmaplen);
	dst += bitmaplen;
	if (shared > 0)
		memcpy(dst, base, shared);
	dst += shared;
	memcpy(dst, ptr + loglen - restlen, restlen);
	mqlog_page_note_xmin(page, xid);

	return ptr + loglen;
}

/*
 * Append a row whose image was logged as a delta against the image of the
 * page's last row (see mqlog_encode_image): decode, then add as any row.
 */
static void
mqlog_redo_add_delta_row(Page page, BlockNumber blkno, TransactionId xid,
						 const char *enc, Size enclen)
{
	PGAlignedBlock base;
	PGAlignedBlock img;
	int			baselen = mqlog_page_row_image(page, PageGetMaxOffsetNumber(page),
											   base.data);
	int			len;

	if (baselen < 0)
		elog(PANIC, "mqlog_redo: delta-encoded row without a base in block %u", blkno);
	len = mqlog_delta_decoded_len(enc, enclen, baselen);
	if (len < SizeOfMqlogRowHeader || len > BLCKSZ)
		elog(PANIC, "mqlog_redo: malformed delta-encoded row in block %u", blkno);
	mqlog_delta_decode(enc, enclen, base.data, img.data);
	mqlog_redo_add_row(page, blkno, xid, img.data, len, NULL, 0);
}

/* Read block block_id for redo, initializing it first when asked to */
static XLogRedoAction
mqlog_redo_read_block(XLogReaderState *record, uint8 block_id, bool init,
					  Buffer *buffer)
{
	if (init)
	{
		*buffer = XLogInitBufferForRedo(record, block_id);
		mqlog_page_init(BufferGetPage(*buffer), 0);
		return BLK_NEEDS_REDO;
	}
	return XLogReadBufferForRedo(record, block_id, buffer);
}

static void
mqlog_finish_redo_block(XLogRedoAction action, Buffer buffer, XLogRecPtr lsn)
{
	if (action == BLK_NEEDS_REDO)
	{
		PageSetLSN(BufferGetPage(buffer), lsn);
		MarkBufferDirty(buffer);
	}
	if (BufferIsValid(buffer))
		UnlockReleaseBuffer(buffer);
}

/* Where block 0's row data starts in its logged bytes, and its length */
static char *
mqlog_row_data(char *ptr, Size loglen, Size *datalen)
{
	uint16		info;
	Size		skip;

	memcpy(&info, ptr, sizeof(uint16));
	skip = SizeOfMqlogRowHeader + mqlog_row_bitmap_len(info);
	if (loglen < skip)
		elog(PANIC, "mqlog_redo: truncated row");
	*datalen = loglen - skip;
	return ptr + skip;
}

/* INSERT: one row on each block of the record */
static void
mqlog_redo_insert(XLogReaderState *record)
{
	TransactionId xid = mqlog_redo_xid(record);
	bool		delta = (XLogRecGetInfo(record) & XLOG_MQLOG_DELTA) != 0;
	char	   *base = NULL;
	Size		baselen = 0;

	for (uint8 block_id = 0; block_id <= XLogRecMaxBlockId(record); block_id++)
	{
		Size		datalen;
		char	   *ptr;
		uint16		info;
		BlockNumber blkno;
		Buffer		buffer;
		XLogRedoAction action;

		if (!XLogRecHasBlockRef(record, block_id))
			continue;
		XLogRecGetBlockTag(record, block_id, NULL, NULL, &blkno);
		ptr = XLogRecGetBlockData(record, block_id, &datalen);
		info = 0;
		/* (with a full-page image the row is not in the record) */
		if (ptr != NULL && datalen >= SizeOfMqlogRowHeader && !delta)
			memcpy(&info, ptr, sizeof(uint16));
		if (block_id == 0 && XLogRecMaxBlockId(record) > 0 && !delta)
		{
			/* later blocks may share data with this row (REGBUF_KEEP_DATA) */
			if (ptr == NULL || datalen < SizeOfMqlogRowHeader)
				elog(PANIC, "mqlog_redo: linked insert without the first row");
			base = mqlog_row_data(ptr, datalen, &baselen);
		}

		action = mqlog_redo_read_block(record, block_id,
									   (info & MQLOG_ROW_LOG_INIT) != 0, &buffer);
		if (action == BLK_NEEDS_REDO && (ptr == NULL || datalen < SizeOfMqlogRowHeader))
			elog(PANIC, "mqlog_redo: insert without row data for block %u", blkno);
		if (action == BLK_NEEDS_REDO && delta)
			mqlog_redo_add_delta_row(BufferGetPage(buffer), blkno, xid, ptr, datalen);
		else if (action == BLK_NEEDS_REDO)
			mqlog_redo_add_row(BufferGetPage(buffer), blkno, xid, ptr, datalen,
							   block_id > 0 ? base : NULL, baselen);
		mqlog_finish_redo_block(action, buffer, record->EndRecPtr);
	}
}

/* MULTI_INSERT: several rows on one block */
static void
mqlog_redo_multi_insert(XLogReaderState *record)
{
	xl_mqlog_multi_insert *xlrec = (xl_mqlog_multi_insert *) XLogRecGetData(record);
	TransactionId xid = mqlog_redo_xid(record);
	BlockNumber blkno;
	Buffer		buffer;
	XLogRedoAction action;

	XLogRecGetBlockTag(record, 0, NULL, NULL, &blkno);
	action = mqlog_redo_read_block(record, 0, (xlrec->flags & XLMQ_INIT_PAGE) != 0,
								   &buffer);
	if (action == BLK_NEEDS_REDO)
	{
		Page		page = BufferGetPage(buffer);
		Size		datalen;
		char	   *ptr = XLogRecGetBlockData(record, 0, &datalen);
		char	   *end = ptr + datalen;

		if (PageGetMaxOffsetNumber(page) + 1 != xlrec->firstoff)
			elog(PANIC, "mqlog_redo: rows at offset %u do not append to block %u",
				 xlrec->firstoff, blkno);
		for (int i = 0; i < xlrec->ntuples; i++)
		{
			uint16		l;

			if (end - ptr < sizeof(uint16))
				elog(PANIC, "mqlog_redo: record length mismatch");
			memcpy(&l, ptr, sizeof(uint16));
			ptr += sizeof(uint16);
			if (end - ptr < (l & ~XLMQ_ROW_DELTA))
				elog(PANIC, "mqlog_redo: record length mismatch");
			if (l & XLMQ_ROW_DELTA)
			{
				l &= ~XLMQ_ROW_DELTA;
				mqlog_redo_add_delta_row(page, blkno, xid, ptr, l);
				ptr += l;
			}
			else
				ptr = mqlog_redo_add_row(page, blkno, xid, ptr, l, NULL, 0);
		}
		if (ptr != end)
			elog(PANIC, "mqlog_redo: record length mismatch");
	}
	mqlog_finish_redo_block(action, buffer, record->EndRecPtr);
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
			mqlog_redo_insert(record);
			break;
		case XLOG_MQLOG_MULTI_INSERT:
			mqlog_redo_multi_insert(record);
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
			for (uint8 block_id = 0; block_id <= XLogRecMaxBlockId(record); block_id++)
			{
				Size		len;
				char	   *data = XLogRecGetBlockData(record, block_id, &len);
				uint16		info;

				if (XLogRecGetInfo(record) & XLOG_MQLOG_DELTA)
				{
					appendStringInfo(buf, "%sblock %u: delta of %zu bytes",
									 block_id > 0 ? "; " : "", block_id, len);
					continue;
				}
				if (data == NULL || len < sizeof(uint16))
					continue;
				memcpy(&info, data, sizeof(uint16));
				appendStringInfo(buf, "%sblock %u: natts %u%s", block_id > 0 ? "; " : "",
								 block_id, info & MQLOG_ROW_NATTS_MASK,
								 (info & MQLOG_ROW_LOG_INIT) ? " init" : "");
			}
			break;
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
			return (info & XLOG_MQLOG_DELTA) ? "INSERT+DELTA" : "INSERT";
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
 * replay: LSN, checksum, the unused hole, the tail mark (a hint, see
 * mqlog_lock_last_page) and each stored cmin (redo uses FirstCommandId).
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
	MqlogPageGetOpaque(page)->mq_flags &= ~MQLOG_PAGE_TAIL;

	maxoff = PageGetMaxOffsetNumber(page);
	for (off = FirstOffsetNumber; off <= maxoff; off++)
	{
		ItemId		iid = PageGetItemId(page, off);

		if (ItemIdIsNormal(iid) && ItemIdGetLength(iid) >= MQLOG_ROW_HEADER_SIZE)
		{
			char	   *row = (char *) PageGetItem(page, iid);

			if (mqlog_row_info(row) & MQLOG_ROW_HAS_CID)
				memset(row + MQLOG_ROW_HEADER_SIZE, MASK_MARKER, sizeof(CommandId));
		}
	}
}
