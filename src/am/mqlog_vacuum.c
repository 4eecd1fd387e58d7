/*-------------------------------------------------------------------------
 *
 * mqlog_vacuum.c
 *	  VACUUM for mqlog tables: freezing pages and advancing relfrozenxid.
 *
 * Rows are never deleted, so VACUUM has nothing to reclaim; it exists to
 * keep XID wraparound away.  Every row stores its inserter's xid, so the
 * table's relfrozenxid can only advance past xids that will never be
 * looked up again.  A data page whose newest xmin precedes OldestXmin has
 * only finished inserters: VACUUM marks the rows of aborted ones LP_DEAD
 * and sets MQLOG_PAGE_FROZEN (one WAL record, whose redo cancels standby
 * queries that could still consider the newest inserter running).  Readers
 * treat every normal item of a frozen page as visible without consulting
 * clog, and inserters never add to a frozen page.
 *
 * Pages are frozen when their max_xmin precedes FreezeLimit, or precedes
 * OldestXmin and the page is nearly full (so that partly filled pages of
 * active writers stay usable).  relfrozenxid becomes the minimum of
 * OldestXmin and min_xmin over the pages left unfrozen -- never
 * InvalidTransactionId.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/backend_progress.h"

#include "am/mqlog.h"

/* A page with less free space than this counts as full for freezing */
#define MQLOG_FREEZE_FULL_SPACE		(BLCKSZ / 8)

/*
 * Freeze one exclusively locked data page whose rows all precede
 * OldestXmin.  Returns the number of rows made LP_DEAD.
 */
static int
mqlog_freeze_page(Relation rel, Buffer buf, double *live)
{
	Page		page = BufferGetPage(buf);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	OffsetNumber dead[MQLOG_MAX_ROWS_PER_PAGE];
	int			ndead = 0;
	TransactionId conflict = InvalidTransactionId;
	OffsetNumber off;

	for (off = FirstOffsetNumber; off <= maxoff; off++)
	{
		ItemId		iid = PageGetItemId(page, off);
		TransactionId xmin;

		if (!ItemIdIsNormal(iid))
			continue;
		xmin = mqlog_row_xmin((const char *) PageGetItem(page, iid));
		switch (mqlog_xmin_status(xmin, false))
		{
			case MQLOG_XMIN_COMMITTED:
				if (TransactionIdIsNormal(xmin) &&
					(!TransactionIdIsValid(conflict) ||
					 TransactionIdFollows(xmin, conflict)))
					conflict = xmin;
				*live += 1;
				break;
			case MQLOG_XMIN_ABORTED:
				dead[ndead++] = off;
				break;
			default:
				/* cannot happen below OldestXmin; leave the page alone */
				elog(WARNING, "mqlog: row (%u,%u) of \"%s\" has a running inserter %u below the vacuum horizon",
					 BufferGetBlockNumber(buf), off, RelationGetRelationName(rel), xmin);
				return -1;
		}
	}

	START_CRIT_SECTION();
	for (off = 0; off < ndead; off++)
		ItemIdSetDead(PageGetItemId(page, dead[off]));
	MqlogPageGetOpaque(page)->mq_flags |= MQLOG_PAGE_FROZEN;
	MarkBufferDirty(buf);
	mqlog_log_freeze(rel, buf, conflict, dead, ndead);
	END_CRIT_SECTION();

	return ndead;
}

/* Number of live (LP_NORMAL) items on a page */
static int
page_live_items(Page page)
{
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	int			n = 0;

	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		if (ItemIdIsNormal(PageGetItemId(page, off)))
			n++;
	return n;
}

void
mqlog_relation_vacuum(Relation rel, VacuumParams *params,
					  BufferAccessStrategy bstrategy)
{
	TransactionId OldestXmin,
				FreezeLimit,
				newFrozenXid;
	MultiXactId OldestMxact,
				MultiXactCutoff;
	BlockNumber nblocks,
				blkno;
	double		live = 0,
				dead = 0;
	bool		frozenxid_updated,
				minmulti_updated;

	vacuum_set_xid_limits(rel, params->freeze_min_age,
						  params->freeze_table_age,
						  params->multixact_freeze_min_age,
						  params->multixact_freeze_table_age,
						  &OldestXmin, &OldestMxact,
						  &FreezeLimit, &MultiXactCutoff);

	/* inserters still running have xids >= OldestXmin */
	newFrozenXid = OldestXmin;

	nblocks = RelationGetNumberOfBlocks(rel);
	pgstat_progress_update_param(PROGRESS_VACUUM_TOTAL_HEAP_BLKS, nblocks);

	for (blkno = 0; blkno < nblocks; blkno++)
	{
		Buffer		buf;
		Page		page;
		MqlogPageOpaque opaque;
		TransactionId max_xmin,
					min_xmin;

		vacuum_delay_point();
		pgstat_progress_update_param(PROGRESS_VACUUM_HEAP_BLKS_SCANNED, blkno);

		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, bstrategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) || !mqlog_page_is_valid(page) ||
			MqlogPageIsOverflow(page))
		{
			UnlockReleaseBuffer(buf);
			continue;
		}
		opaque = MqlogPageGetOpaque(page);
		if (opaque->mq_flags & MQLOG_PAGE_FROZEN)
		{
			live += page_live_items(page);
			UnlockReleaseBuffer(buf);
			continue;
		}

		/* recheck under an exclusive lock if the page looks freezable */
		max_xmin = opaque->mq_aux2;
		if (TransactionIdIsNormal(max_xmin) &&
			TransactionIdPrecedes(max_xmin, OldestXmin) &&
			(TransactionIdPrecedes(max_xmin, FreezeLimit) ||
			 PageGetFreeSpace(page) < MQLOG_FREEZE_FULL_SPACE))
		{
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
			LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
			max_xmin = opaque->mq_aux2;
			if (!MqlogPageIsFrozen(page) &&
				TransactionIdPrecedes(max_xmin, OldestXmin))
			{
				double		plive = 0;
				int			ndead = mqlog_freeze_page(rel, buf, &plive);

				if (ndead >= 0)
				{
					live += plive;
					dead += ndead;
					UnlockReleaseBuffer(buf);
					continue;
				}
			}
		}

		/* page stays unfrozen: its oldest xmin bounds relfrozenxid */
		min_xmin = opaque->mq_aux1;
		if (TransactionIdIsNormal(min_xmin) &&
			TransactionIdPrecedes(min_xmin, newFrozenXid))
			newFrozenXid = min_xmin;
		live += page_live_items(page);
		UnlockReleaseBuffer(buf);
	}

	/* no multixacts are ever stored, so OldestMxact is safe */
	vac_update_relstats(rel, nblocks, live, 0,
						RelationGetForm(rel)->relhasindex,
						newFrozenXid, OldestMxact,
						&frozenxid_updated, &minmulti_updated, false);

	pgstat_report_vacuum(RelationGetRelid(rel), rel->rd_rel->relisshared,
						 live, dead);
}
