/*-------------------------------------------------------------------------
 *
 * mqlog_verify.c
 *	  mq.mqlog_verify(regclass): structural check of an mqlog table, in the
 *	  spirit of amcheck's verify_heapam.
 *
 * Returns one row (blkno, offnum, msg) per problem found; an empty result
 * means the table looks sound.  Checked:
 *	- the block can be read (checksum, page header), header bounds,
 *	  special area size, magic, format version and flags;
 *	- line pointers: only LP_NORMAL, or LP_DEAD on frozen pages; item
 *	  bounds inside [pd_upper, pd_special);
 *	- row headers: flags, natts; the attributes (by their lengths and
 *	  alignment) end exactly at the end of the row;
 *	- xmin: FrozenTransactionId (rows written frozen), or normal, before the next xid, not older than relfrozenxid on
 *	  unfrozen pages, inside the page's [min_xmin, max_xmin] (which must
 *	  be exact), and committed for every row of a frozen page whose xid is
 *	  still resolvable;
 *	- overflow pages: one chunk item, consistent value/chunk numbers; every
 *	  out-of-line pointer of a row leads to a complete run of chunks.
 * Each block is read in a subtransaction so an unreadable block is reported
 * rather than aborting the check.  Orphaned overflow pages (rows of aborted
 * transactions) are not reported.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "am/mqlog.h"

PG_FUNCTION_INFO_V1(mqlog_verify);

typedef struct VerifyState
{
	Relation	rel;
	ReturnSetInfo *rsinfo;
	BlockNumber nblocks;
	TransactionId relfrozenxid;
	TransactionId nextxid;
	List	   *toast_refs;		/* VerifyToastRef * */
	Bitmapset  *unreadable;		/* blocks that could not be read */
} VerifyState;

typedef struct VerifyToastRef
{
	BlockNumber blkno;			/* row holding the pointer */
	OffsetNumber offnum;
	BlockNumber first;
	int32		extsize;
} VerifyToastRef;

static void
report(VerifyState *vs, BlockNumber blkno, OffsetNumber offnum,
	   const char *fmt,...) pg_attribute_printf(4, 5);

static void
report(VerifyState *vs, BlockNumber blkno, OffsetNumber offnum,
	   const char *fmt,...)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	StringInfoData msg;
	va_list		args;

	initStringInfo(&msg);
	for (;;)
	{
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&msg, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&msg, needed);
	}

	values[0] = Int64GetDatum((int64) blkno);
	if (offnum == InvalidOffsetNumber)
		nulls[1] = true;
	else
		values[1] = Int32GetDatum((int32) offnum);
	values[2] = CStringGetTextDatum(msg.data);
	tuplestore_putvalues(vs->rsinfo->setResult, vs->rsinfo->setDesc,
						 values, nulls);
}

/*
 * Do the attributes of tup, walked by their lengths and alignment, end
 * exactly where its data ends?  Returns NULL or what is wrong.
 */
static char *
verify_row_data(HeapTuple tup, TupleDesc desc)
{
	HeapTupleHeader htup = tup->t_data;
	char	   *tp = (char *) htup + htup->t_hoff;
	Size		datalen = tup->t_len - htup->t_hoff;
	Size		off = 0;
	int			natts = HeapTupleHeaderGetNatts(htup);

	for (int i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Size		len;

		if (HeapTupleHasNulls(tup) && att_isnull(i, htup->t_bits))
			continue;
		if (off >= datalen)
			return psprintf("attribute %d starts at data offset %zu, past the row's %zu data bytes",
							i + 1, off, datalen);
		off = att_align_pointer(off, att->attalign, att->attlen, tp + off);
		if (att->attlen > 0)
			len = att->attlen;
		else if (att->attlen == -1)
		{
			char	   *v = tp + off;

			if (off >= datalen ||
				(!VARATT_IS_1B(v) && !VARATT_IS_1B_E(v) && datalen - off < VARHDRSZ) ||
				(VARATT_IS_1B_E(v) && datalen - off < VARHDRSZ_EXTERNAL))
				return psprintf("attribute %d: varlena header at data offset %zu is truncated",
								i + 1, off);
			len = VARSIZE_ANY(v);
		}
		else
			len = strnlen(tp + off, datalen - off) + 1;
		if (off + len > datalen)
			return psprintf("attribute %d (%zu bytes at data offset %zu) ends past the row's %zu data bytes",
							i + 1, len, off, datalen);
		off += len;
	}
	if (off != datalen)
		return psprintf("row has %zu data bytes but its attributes end at %zu",
						datalen, off);
	return NULL;
}

/* Check one row of a data page; returns its xmin if usable, else Invalid */
static TransactionId
verify_row(VerifyState *vs, Page page, BlockNumber blkno, OffsetNumber off,
		   bool frozen)
{
	ItemId		iid = PageGetItemId(page, off);
	const char *row;
	HeapTuple	tup;
	TupleDesc	tupdesc = RelationGetDescr(vs->rel);
	unsigned	lp_off = ItemIdGetOffset(iid);
	unsigned	lp_len = ItemIdGetLength(iid);
	PageHeader	ph = (PageHeader) page;
	TransactionId xmin;
	const char *problem;
	char	   *dataproblem;

	if (lp_off < ph->pd_upper || lp_off + lp_len > ph->pd_special)
	{
		report(vs, blkno, off, "line pointer (offset %u, length %u) outside the row area [%u, %u)",
			   lp_off, lp_len, ph->pd_upper, ph->pd_special);
		return InvalidTransactionId;
	}
	row = (const char *) PageGetItem(page, iid);
	problem = mqlog_row_check(row, lp_len, tupdesc->natts);
	if (problem != NULL)
	{
		report(vs, blkno, off, "%s", problem);
		return InvalidTransactionId;
	}
	xmin = mqlog_row_xmin(row);
	if (xmin == FrozenTransactionId)
	{
		/* written frozen (TABLE_INSERT_FROZEN): visible to everyone */
	}
	else if (!TransactionIdIsNormal(xmin))
	{
		report(vs, blkno, off, "xmin %u is not a normal transaction id", xmin);
		return InvalidTransactionId;
	}
	else if (!TransactionIdPrecedes(xmin, vs->nextxid))
	{
		report(vs, blkno, off, "xmin %u equals or exceeds next transaction id %u",
			   xmin, vs->nextxid);
		return InvalidTransactionId;
	}
	else if (TransactionIdPrecedes(xmin, vs->relfrozenxid))
	{
		if (!frozen)
		{
			report(vs, blkno, off, "xmin %u precedes relfrozenxid %u on an unfrozen page",
				   xmin, vs->relfrozenxid);
			return InvalidTransactionId;
		}
	}
	else if (frozen && !TransactionIdDidCommit(xmin))
		report(vs, blkno, off, "frozen page holds a row of uncommitted transaction %u", xmin);

	tup = mqlog_row_to_tuple(row, lp_len, CurrentMemoryContext);
	ItemPointerSet(&tup->t_self, blkno, off);
	tup->t_tableOid = RelationGetRelid(vs->rel);
	dataproblem = verify_row_data(tup, tupdesc);
	if (dataproblem != NULL)
	{
		report(vs, blkno, off, "%s", dataproblem);
		heap_freetuple(tup);
		return InvalidTransactionId;
	}

	/* out-of-line values stored in this table */
	if (HeapTupleHasExternal(tup))
	{
		Datum	   *values = palloc(tupdesc->natts * sizeof(Datum));
		bool	   *isnull = palloc(tupdesc->natts * sizeof(bool));
		int			i;

		heap_deform_tuple(tup, tupdesc, values, isnull);
		for (i = 0; i < HeapTupleHeaderGetNatts(tup->t_data); i++)
		{
			struct varlena *v;
			struct varatt_external ptr;
			VerifyToastRef *ref;

			if (isnull[i] || TupleDescAttr(tupdesc, i)->attlen != -1)
				continue;
			v = (struct varlena *) DatumGetPointer(values[i]);
			if (!VARATT_IS_EXTERNAL(v))
				continue;
			if (!VARATT_IS_EXTERNAL_ONDISK(v))
			{
				report(vs, blkno, off, "attribute %d is an in-memory external datum", i + 1);
				continue;
			}
			VARATT_EXTERNAL_GET_POINTER(ptr, v);
			if (ptr.va_toastrelid != RelationGetRelid(vs->rel))
			{
				report(vs, blkno, off, "attribute %d points to toast relation %u",
					   i + 1, ptr.va_toastrelid);
				continue;
			}
			ref = palloc(sizeof(VerifyToastRef));
			ref->blkno = blkno;
			ref->offnum = off;
			ref->first = ptr.va_valueid;
			ref->extsize = VARATT_EXTERNAL_GET_EXTSIZE(ptr);
			vs->toast_refs = lappend(vs->toast_refs, ref);
		}
		pfree(values);
		pfree(isnull);
	}
	heap_freetuple(tup);

	return xmin;
}

/* Check a share-locked page */
static void
verify_page(VerifyState *vs, Page page, BlockNumber blkno)
{
	PageHeader	ph = (PageHeader) page;
	MqlogPageOpaque opaque;
	OffsetNumber off,
				maxoff;
	bool		frozen;
	TransactionId minx = InvalidTransactionId,
				maxx = InvalidTransactionId;

	if (PageIsNew(page))
		return;					/* left by a crash or bulk extension */

	if (ph->pd_lower < SizeOfPageHeaderData || ph->pd_lower > ph->pd_upper ||
		ph->pd_upper > ph->pd_special || ph->pd_special > BLCKSZ)
	{
		report(vs, blkno, InvalidOffsetNumber, "invalid page header: pd_lower %u, pd_upper %u, pd_special %u",
			   ph->pd_lower, ph->pd_upper, ph->pd_special);
		return;
	}
	if (PageGetSpecialSize(page) != MQLOG_SPECIAL_SIZE)
	{
		report(vs, blkno, InvalidOffsetNumber, "special area size %u, expected %zu",
			   (unsigned) PageGetSpecialSize(page), (Size) MQLOG_SPECIAL_SIZE);
		return;
	}
	opaque = MqlogPageGetOpaque(page);
	if (opaque->mq_magic != MQLOG_PAGE_MAGIC)
	{
		report(vs, blkno, InvalidOffsetNumber, "bad magic 0x%04X", opaque->mq_magic);
		return;
	}
	if (opaque->mq_version != MQLOG_PAGE_VERSION)
	{
		report(vs, blkno, InvalidOffsetNumber, "unsupported page format version %u",
			   opaque->mq_version);
		return;
	}
	if ((opaque->mq_flags & ~(MQLOG_PAGE_FROZEN | MQLOG_PAGE_OVERFLOW | MQLOG_PAGE_TAIL)) != 0 ||
		(opaque->mq_flags & MQLOG_PAGE_OVERFLOW &&
		 opaque->mq_flags & (MQLOG_PAGE_FROZEN | MQLOG_PAGE_TAIL)))
	{
		report(vs, blkno, InvalidOffsetNumber, "invalid page flags 0x%02X", opaque->mq_flags);
		return;
	}

	maxoff = PageGetMaxOffsetNumber(page);
	if (maxoff > MQLOG_MAX_ROWS_PER_PAGE)
	{
		report(vs, blkno, InvalidOffsetNumber, "%u line pointers exceed the maximum of %u",
			   maxoff, (unsigned) MQLOG_MAX_ROWS_PER_PAGE);
		return;
	}

	if (MqlogPageIsOverflow(page))
	{
		ItemId		iid;

		if (maxoff != FirstOffsetNumber)
			report(vs, blkno, InvalidOffsetNumber, "overflow page has %u items", maxoff);
		else if (opaque->mq_aux1 > blkno ||
				 blkno - opaque->mq_aux1 != opaque->mq_aux2)
			report(vs, blkno, InvalidOffsetNumber, "overflow page claims chunk %u of the value at block %u",
				   opaque->mq_aux2, opaque->mq_aux1);
		else
		{
			iid = PageGetItemId(page, FirstOffsetNumber);
			if (!ItemIdIsNormal(iid) ||
				ItemIdGetOffset(iid) < ph->pd_upper ||
				ItemIdGetOffset(iid) + ItemIdGetLength(iid) > ph->pd_special)
				report(vs, blkno, FirstOffsetNumber, "invalid overflow chunk item");
		}
		return;
	}

	frozen = MqlogPageIsFrozen(page);
	for (off = FirstOffsetNumber; off <= maxoff; off++)
	{
		ItemId		iid = PageGetItemId(page, off);
		TransactionId xmin;

		if (ItemIdIsDead(iid))
		{
			if (!frozen)
				report(vs, blkno, off, "LP_DEAD item on an unfrozen page");
			continue;
		}
		if (!ItemIdIsNormal(iid))
		{
			report(vs, blkno, off, "unexpected line pointer state %u", iid->lp_flags);
			continue;
		}
		xmin = verify_row(vs, page, blkno, off, frozen);
		if (TransactionIdIsNormal(xmin))
		{
			if (!TransactionIdIsValid(minx) || TransactionIdPrecedes(xmin, minx))
				minx = xmin;
			if (!TransactionIdIsValid(maxx) || TransactionIdFollows(xmin, maxx))
				maxx = xmin;
		}
	}

	if (!frozen && TransactionIdIsValid(minx) &&
		(opaque->mq_aux1 != minx || opaque->mq_aux2 != maxx))
		report(vs, blkno, InvalidOffsetNumber, "page xmin range [%u, %u] does not match its rows [%u, %u]",
			   opaque->mq_aux1, opaque->mq_aux2, minx, maxx);
}

/* Check one out-of-line value's chunk run */
static void
verify_toast_ref(VerifyState *vs, VerifyToastRef *ref)
{
	int32		nchunks = (ref->extsize + MQLOG_OVERFLOW_CHUNK - 1) / MQLOG_OVERFLOW_CHUNK;
	int32		i;

	for (i = 0; i < nchunks; i++)
	{
		BlockNumber blk = ref->first + i;
		Buffer		buf;
		Page		page;
		bool		ok;
		uint32		expected = (i < nchunks - 1) ? MQLOG_OVERFLOW_CHUNK :
		ref->extsize - (nchunks - 1) * MQLOG_OVERFLOW_CHUNK;

		if (bms_is_member((int) blk, vs->unreadable))
		{
			report(vs, ref->blkno, ref->offnum, "out-of-line value at block %u: chunk %d is on unreadable block %u",
				   ref->first, i, blk);
			return;
		}
		if (blk >= vs->nblocks)
		{
			report(vs, ref->blkno, ref->offnum, "out-of-line value at block %u: chunk %d is beyond the end of the table",
				   ref->first, i);
			return;
		}
		buf = ReadBuffer(vs->rel, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		ok = !PageIsNew(page) && mqlog_page_is_valid(page) &&
			MqlogPageIsOverflow(page) &&
			MqlogPageGetOpaque(page)->mq_aux1 == ref->first &&
			MqlogPageGetOpaque(page)->mq_aux2 == (uint32) i &&
			PageGetMaxOffsetNumber(page) == FirstOffsetNumber &&
			ItemIdGetLength(PageGetItemId(page, FirstOffsetNumber)) == expected;
		UnlockReleaseBuffer(buf);
		if (!ok)
		{
			report(vs, ref->blkno, ref->offnum, "out-of-line value at block %u: chunk %d (block %u) is missing or invalid",
				   ref->first, i, blk);
			return;
		}
	}
}

Datum
mqlog_verify(PG_FUNCTION_ARGS)
{
	Oid			relid;
	VerifyState vs;
	BlockNumber blkno;
	ListCell   *lc;
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;

	mqlog_arg_not_null(fcinfo, 0, "rel");
	relid = PG_GETARG_OID(0);
	InitMaterializedSRF(fcinfo, 0);

	memset(&vs, 0, sizeof(vs));
	vs.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	vs.rel = mqlog_open_for_inspection(relid);

	vs.nblocks = RelationGetNumberOfBlocks(vs.rel);
	vs.relfrozenxid = vs.rel->rd_rel->relfrozenxid;
	vs.nextxid = ReadNextTransactionId();

	for (blkno = 0; blkno < vs.nblocks; blkno++)
	{
		CHECK_FOR_INTERRUPTS();

		/* an unreadable block (checksum, header) is reported, not fatal */
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(oldcontext);
		PG_TRY();
		{
			Buffer		buf = ReadBuffer(vs.rel, blkno);

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			verify_page(&vs, BufferGetPage(buf), blkno);
			UnlockReleaseBuffer(buf);

			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(oldcontext);
			CurrentResourceOwner = oldowner;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(oldcontext);
			edata = CopyErrorData();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(oldcontext);
			CurrentResourceOwner = oldowner;
			report(&vs, blkno, InvalidOffsetNumber, "could not read block: %s",
				   edata->message);
			vs.unreadable = bms_add_member(vs.unreadable, (int) blkno);
			FreeErrorData(edata);
		}
		PG_END_TRY();
	}

	foreach(lc, vs.toast_refs)
		verify_toast_ref(&vs, (VerifyToastRef *) lfirst(lc));

	relation_close(vs.rel, AccessShareLock);
	return (Datum) 0;
}
