/*-------------------------------------------------------------------------
 *
 * mqlog_toast.c
 *	  Large rows without a TOAST relation ("self-TOAST").
 *
 * mqlog tables have no TOAST table.  Before a row is stored:
 *	1. every external datum is fetched (it may point into another table's
 *	   TOAST relation, or into an old copy of this one);
 *	2. the row is checked against mq.max_message_size;
 *	3. rows longer than MQLOG_COMPRESS_THRESHOLD get their largest
 *	   compressible attributes compressed, like heap's toaster does;
 *	4. if the row still does not fit on a page, its largest attributes are
 *	   written to OVERFLOW pages of the same relation -- a contiguous run of
 *	   blocks, one chunk per page -- and the row keeps a standard on-disk
 *	   TOAST pointer whose va_toastrelid is the table itself and whose
 *	   va_valueid is the first overflow block.
 *
 * Core detoasting (detoast.c) opens va_toastrelid and calls the table AM's
 * relation_fetch_toast_slice, i.e. mqlog_fetch_toast_slice below, so
 * readers fetch overflow pages lazily and slices work.
 *
 * Overflow pages are written (and WAL-logged) before the row that points
 * to them, so a row never references incomplete data.  They carry no xmin:
 * the pages of a row whose transaction aborts are simply never referenced
 * (leaked until the relation is truncated or dropped).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heaptoast.h"
#include "access/toast_compression.h"
#include "access/toast_internals.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "am/mqlog.h"

/*
 * Write one value's bytes to a fresh run of overflow pages; return the
 * first block.  The relation extension lock is held throughout so that the
 * run is contiguous, and so is the page that was last before it, so that
 * no ordered append goes on there meanwhile (mqlog_hold_last_page).
 */
static BlockNumber
mqlog_store_value(Relation rel, const char *data, Size len)
{
	BlockNumber first = InvalidBlockNumber;
	uint32		chunkno = 0;
	Size		done = 0;
	Buffer		last = mqlog_hold_last_page(rel);

	while (done < len)
	{
		Size		chunklen = Min(len - done, MQLOG_OVERFLOW_CHUNK);
		Buffer		buf;
		Page		page;
		MqlogPageOpaque opaque;
		BlockNumber blkno;

		buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_ZERO_AND_LOCK, NULL);
		blkno = BufferGetBlockNumber(buf);
		if (chunkno == 0)
			first = blkno;
		else if (blkno != first + chunkno)
			elog(ERROR, "overflow run of \"%s\" is not contiguous (block %u after %u)",
				 RelationGetRelationName(rel), blkno, first + chunkno - 1);

		page = BufferGetPage(buf);

		START_CRIT_SECTION();
		mqlog_page_init(page, MQLOG_PAGE_OVERFLOW);
		opaque = MqlogPageGetOpaque(page);
		opaque->mq_aux1 = first;
		opaque->mq_aux2 = chunkno;
		if (PageAddItem(page, (Item) (data + done), chunklen, FirstOffsetNumber,
						false, false) == InvalidOffsetNumber)
			elog(PANIC, "failed to add overflow chunk");
		MarkBufferDirty(buf);
		mqlog_log_overflow(rel, buf, first, chunkno, data + done, chunklen);
		END_CRIT_SECTION();

		UnlockReleaseBuffer(buf);
		done += chunklen;
		chunkno++;
		CHECK_FOR_INTERRUPTS();
	}

	mqlog_release_last_page(rel, last);

	return first;
}

/*
 * Move a varlena datum out of line; returns the 18-byte TOAST pointer.
 * Compressed datums stay compressed (as toast_save_datum does).
 */
static Datum
mqlog_externalize(Relation rel, Datum value)
{
	struct varlena *dval = (struct varlena *) DatumGetPointer(value);
	struct varatt_external toast_pointer;
	struct varlena *result;
	char	   *data_p;
	int32		data_todo;

	if (VARATT_IS_SHORT(dval))
	{
		data_p = VARDATA_SHORT(dval);
		data_todo = VARSIZE_SHORT(dval) - VARHDRSZ_SHORT;
		toast_pointer.va_rawsize = data_todo + VARHDRSZ;
		toast_pointer.va_extinfo = data_todo;
	}
	else if (VARATT_IS_COMPRESSED(dval))
	{
		data_p = VARDATA(dval);
		data_todo = VARSIZE(dval) - VARHDRSZ;
		toast_pointer.va_rawsize = VARDATA_COMPRESSED_GET_EXTSIZE(dval) + VARHDRSZ;
		VARATT_EXTERNAL_SET_SIZE_AND_COMPRESS_METHOD(toast_pointer, data_todo,
													 VARDATA_COMPRESSED_GET_COMPRESS_METHOD(dval));
	}
	else
	{
		data_p = VARDATA(dval);
		data_todo = VARSIZE(dval) - VARHDRSZ;
		toast_pointer.va_rawsize = VARSIZE(dval);
		toast_pointer.va_extinfo = data_todo;
	}

	toast_pointer.va_valueid = mqlog_store_value(rel, data_p, data_todo);
	toast_pointer.va_toastrelid = RelationGetRelid(rel);

	result = (struct varlena *) palloc(TOAST_POINTER_SIZE);
	SET_VARTAG_EXTERNAL(result, VARTAG_ONDISK);
	memcpy(VARDATA_EXTERNAL(result), &toast_pointer, sizeof(toast_pointer));
	return PointerGetDatum(result);
}

static void
mqlog_row_too_big(Relation rel, Size size, Size limit)
{
	if (limit == MQLOG_MAX_INLINE_ROW)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("row is too big: size %zu, maximum size %zu", size, limit),
				 errdetail("Only attributes whose storage is not PLAIN can be moved out of a row of mqlog table \"%s\".",
						   RelationGetRelationName(rel))));
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("row is too big: size %zu, maximum size %zu", size, limit),
			 errdetail("Rows of mqlog table \"%s\" are limited by mq.max_message_size.",
					   RelationGetRelationName(rel))));
}

/*
 * Turn an incoming row into the form stored on disk (see the file header).
 * Returns tup itself when nothing had to change, else a palloc'd tuple.
 * Overflow pages may be written here, before the caller locks any data
 * page; the size limit is checked before that.
 */
HeapTuple
mqlog_prepare_tuple(Relation rel, HeapTuple tup)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	int			natts = tupdesc->natts;
	Datum	   *values;
	bool	   *isnull;
	bool	   *done;
	bool		changed = false;
	int			i;

	if (!HeapTupleHasExternal(tup))
	{
		if (tup->t_len > (Size) mqlog_max_row_size)
			mqlog_row_too_big(rel, tup->t_len, mqlog_max_row_size);
		if (tup->t_len <= MQLOG_COMPRESS_THRESHOLD)
			return tup;
	}

	values = palloc(natts * sizeof(Datum));
	isnull = palloc(natts * sizeof(bool));
	done = palloc0(natts * sizeof(bool));
	heap_deform_tuple(tup, tupdesc, values, isnull);

	/* 1. fetch every external value: never store foreign pointers */
	for (i = 0; i < natts; i++)
	{
		if (isnull[i] || TupleDescAttr(tupdesc, i)->attlen != -1)
			continue;
		if (VARATT_IS_EXTERNAL(DatumGetPointer(values[i])))
		{
			values[i] = PointerGetDatum(detoast_external_attr((struct varlena *)
															  DatumGetPointer(values[i])));
			changed = true;
		}
	}

	/* 2. size limit, before touching any buffer */
	{
		Size		size = heap_compute_data_size(tupdesc, values, isnull) +
		MQLOG_ROW_MAX_OVERHEAD(natts);

		if (size > (Size) mqlog_max_row_size)
			mqlog_row_too_big(rel, size, mqlog_max_row_size);
	}

	/* 3. compress the largest compressible attributes, as heap would */
	while (heap_compute_data_size(tupdesc, values, isnull) +
		   MQLOG_ROW_MAX_OVERHEAD(natts) > MQLOG_COMPRESS_THRESHOLD)
	{
		int			biggest = -1;
		Size		bigsize = 0;
		Datum		cmp;
		Form_pg_attribute att;

		for (i = 0; i < natts; i++)
		{
			struct varlena *v;

			att = TupleDescAttr(tupdesc, i);
			if (isnull[i] || done[i] || att->attlen != -1)
				continue;
			if (att->attstorage != TYPSTORAGE_EXTENDED &&
				att->attstorage != TYPSTORAGE_MAIN)
				continue;
			v = (struct varlena *) DatumGetPointer(values[i]);
			if (VARATT_IS_COMPRESSED(v) || VARATT_IS_EXTERNAL(v))
				continue;
			if (VARSIZE_ANY(v) > bigsize)
			{
				bigsize = VARSIZE_ANY(v);
				biggest = i;
			}
		}
		if (biggest < 0 || bigsize < 128)
			break;
		done[biggest] = true;
		att = TupleDescAttr(tupdesc, biggest);
		cmp = toast_compress_datum(values[biggest], att->attcompression);
		if (DatumGetPointer(cmp) != NULL)
		{
			values[biggest] = cmp;
			changed = true;
		}
	}

	/* 4. move the largest attributes out of line until the row fits */
	memset(done, 0, natts * sizeof(bool));
	while (heap_compute_data_size(tupdesc, values, isnull) +
		   MQLOG_ROW_MAX_OVERHEAD(natts) > MQLOG_MAX_INLINE_ROW)
	{
		int			biggest = -1;
		Size		bigsize = 0;

		for (i = 0; i < natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(tupdesc, i);
			struct varlena *v;

			if (isnull[i] || done[i] || att->attlen != -1)
				continue;
			if (att->attstorage == TYPSTORAGE_PLAIN)
				continue;
			v = (struct varlena *) DatumGetPointer(values[i]);
			if (VARATT_IS_EXTERNAL(v))
				continue;
			if (VARSIZE_ANY(v) > bigsize)
			{
				bigsize = VARSIZE_ANY(v);
				biggest = i;
			}
		}
		if (biggest < 0 || bigsize <= TOAST_POINTER_SIZE)
			mqlog_row_too_big(rel,
							  heap_compute_data_size(tupdesc, values, isnull) +
							  MQLOG_ROW_MAX_OVERHEAD(natts),
							  MQLOG_MAX_INLINE_ROW);
		done[biggest] = true;
		values[biggest] = mqlog_externalize(rel, values[biggest]);
		changed = true;
	}

	if (changed)
	{
		HeapTuple	result = heap_form_tuple(tupdesc, values, isnull);

		result->t_self = tup->t_self;
		result->t_tableOid = tup->t_tableOid;
		return result;
	}
	return tup;
}

/*
 * relation_fetch_toast_slice callback: read bytes [sliceoffset,
 * sliceoffset + slicelength) of the out-of-line value starting at block
 * valueid into VARDATA(result).
 */
void
mqlog_fetch_toast_slice(Relation toastrel, Oid valueid, int32 attrsize,
						int32 sliceoffset, int32 slicelength,
						struct varlena *result)
{
	BlockNumber first = (BlockNumber) valueid;
	int32		startchunk = sliceoffset / MQLOG_OVERFLOW_CHUNK;
	int32		endchunk = attrsize == 0 ? 0 :
	(sliceoffset + slicelength - 1) / MQLOG_OVERFLOW_CHUNK;
	int32		totalchunks = (attrsize + MQLOG_OVERFLOW_CHUNK - 1) / MQLOG_OVERFLOW_CHUNK;
	BlockNumber nblocks = RelationGetNumberOfBlocks(toastrel);
	int32		chunkno;
	char	   *dst = VARDATA(result);

	if (slicelength <= 0)
		return;

	for (chunkno = startchunk; chunkno <= endchunk; chunkno++)
	{
		BlockNumber blkno = first + chunkno;
		Buffer		buf;
		Page		page;
		MqlogPageOpaque opaque;
		ItemId		iid;
		int32		expected;
		int32		chunkstart = chunkno * MQLOG_OVERFLOW_CHUNK;
		int32		from,
					to;

		if (blkno >= nblocks)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("missing chunk number %d for toast value %u in mqlog table \"%s\"",
									 chunkno, valueid, RelationGetRelationName(toastrel))));

		buf = ReadBuffer(toastrel, blkno);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		opaque = MqlogPageGetOpaque(page);
		expected = (chunkno < totalchunks - 1) ? MQLOG_OVERFLOW_CHUNK :
			attrsize - (totalchunks - 1) * MQLOG_OVERFLOW_CHUNK;
		if (PageIsNew(page) || !mqlog_page_is_valid(page) ||
			!MqlogPageIsOverflow(page) || opaque->mq_aux1 != first ||
			opaque->mq_aux2 != (uint32) chunkno ||
			PageGetMaxOffsetNumber(page) < FirstOffsetNumber)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("unexpected chunk %d for toast value %u in mqlog table \"%s\" at block %u",
									 chunkno, valueid, RelationGetRelationName(toastrel), blkno)));
		iid = PageGetItemId(page, FirstOffsetNumber);
		if (!ItemIdIsNormal(iid) || ItemIdGetLength(iid) != expected)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("unexpected chunk size %u (expected %d) in chunk %d of toast value %u in mqlog table \"%s\"",
									 ItemIdGetLength(iid), expected, chunkno, valueid,
									 RelationGetRelationName(toastrel))));

		from = Max(sliceoffset, chunkstart);
		to = Min(sliceoffset + slicelength, chunkstart + expected);
		memcpy(dst + (from - sliceoffset),
			   (char *) PageGetItem(page, iid) + (from - chunkstart),
			   to - from);
		UnlockReleaseBuffer(buf);
	}
}
