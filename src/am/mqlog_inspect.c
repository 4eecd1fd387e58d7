/*-------------------------------------------------------------------------
 *
 * mqlog_inspect.c
 *	  mq.mqlog_page_items(regclass, blkno): the rows of one page of an
 *	  mqlog table, decoded, in the spirit of pageinspect's heap_page_items
 *	  (which cannot read mqlog's row format).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "am/mqlog.h"

PG_FUNCTION_INFO_V1(mqlog_page_items);

#define PAGE_ITEMS_COLS 8

/* One result row for item off of a share-locked data page */
static void
page_item(ReturnSetInfo *rsinfo, Page page, OffsetNumber off, int relnatts)
{
	ItemId		iid = PageGetItemId(page, off);
	Datum		values[PAGE_ITEMS_COLS];
	bool		nulls[PAGE_ITEMS_COLS];
	PageHeader	ph = (PageHeader) page;

	memset(nulls, true, sizeof(nulls));
	values[0] = Int32GetDatum(off);
	values[1] = Int32GetDatum(ItemIdGetOffset(iid));
	values[2] = Int32GetDatum(ItemIdGetLength(iid));
	nulls[0] = nulls[1] = nulls[2] = false;

	if (ItemIdIsNormal(iid) &&
		ItemIdGetOffset(iid) >= ph->pd_upper &&
		ItemIdGetOffset(iid) + ItemIdGetLength(iid) <= ph->pd_special)
	{
		const char *row = (const char *) PageGetItem(page, iid);
		Size		len = ItemIdGetLength(iid);

		if (mqlog_row_check(row, len, relnatts) == NULL)
		{
			uint16		info = mqlog_row_info(row);
			int			natts = info & MQLOG_ROW_NATTS_MASK;

			values[3] = TransactionIdGetDatum(mqlog_row_xmin(row));
			values[4] = Int64GetDatum((int64) mqlog_row_cmin(row));
			values[5] = Int32GetDatum(natts);
			nulls[3] = nulls[4] = nulls[5] = false;
			if (info & MQLOG_ROW_HASNULL)
			{
				const bits8 *bits = (const bits8 *) row + mqlog_row_bitmap_offset(info);
				StringInfoData s;

				initStringInfo(&s);
				for (int i = 0; i < natts; i++)
					appendStringInfoChar(&s, att_isnull(i, bits) ? '0' : '1');
				values[6] = CStringGetTextDatum(s.data);
				nulls[6] = false;
			}
			values[7] = Int32GetDatum((int32) (len - mqlog_row_data_offset(info)));
			nulls[7] = false;
		}
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * Open relid (a user-given OID) with AccessShareLock for mq.mqlog_verify and
 * mq.mqlog_page_items: an OID of no relation is 42P01, a relation of another
 * kind or access method 42809.
 */
Relation
mqlog_open_for_inspection(Oid relid)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (!mqlog_is_mqlog_relation(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an mqlog table", RelationGetRelationName(rel)),
				 errdetail("Only tables created USING mqlog can be inspected.")));
	/* a standby has only the init fork of an unlogged relation */
	if (RecoveryInProgress() &&
		rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot verify unlogged relation \"%s\" during recovery",
						RelationGetRelationName(rel)),
				 errdetail("Unlogged relations are not replicated; a standby holds only their initialization fork.")));
	return rel;
}

Datum
mqlog_page_items(PG_FUNCTION_ARGS)
{
	Oid			relid;
	int64		blkno;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	Buffer		buf;
	Page		page;

	mqlog_arg_not_null(fcinfo, 0, "rel");
	mqlog_arg_not_null(fcinfo, 1, "blkno");
	relid = PG_GETARG_OID(0);
	blkno = PG_GETARG_INT64(1);
	InitMaterializedSRF(fcinfo, 0);

	rel = mqlog_open_for_inspection(relid);
	if (blkno < 0 || blkno >= RelationGetNumberOfBlocks(rel))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("block number " INT64_FORMAT " is out of range for relation \"%s\"",
						blkno, RelationGetRelationName(rel))));

	buf = ReadBuffer(rel, (BlockNumber) blkno);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (!PageIsNew(page) && mqlog_page_is_valid(page) && !MqlogPageIsOverflow(page))
	{
		OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
			page_item(rsinfo, page, off, RelationGetDescr(rel)->natts);
	}
	UnlockReleaseBuffer(buf);
	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}
