/*-------------------------------------------------------------------------
 *
 * mqlog_visibility.c
 *	  Row visibility for the mqlog access method.
 *
 * A row carries only xmin (the inserting subtransaction's xid) and its raw
 * cmin; rows are never updated or deleted, so there is no xmax.  The checks
 * follow heapam_visibility.c for a tuple whose xmax is invalid, in heap's
 * order: current transaction, then the snapshot, then clog.  A transaction
 * that is neither running nor committed counts as aborted: a crashed
 * transaction never gets an abort record, so TransactionIdDidAbort must not
 * be used for that.  A page marked MQLOG_PAGE_FROZEN by VACUUM holds only
 * rows visible to everyone (aborted ones were made LP_DEAD) and its xmins
 * are never looked up again, so clog may be truncated below them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/subtrans.h"
#include "access/transam.h"
#include "access/xact.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"

#include "am/mqlog.h"

/*
 * Classify the inserter of a row, independent of any snapshot.
 */
MqlogXminStatus
mqlog_xmin_status(TransactionId xmin, bool frozen)
{
	if (frozen || xmin == FrozenTransactionId ||
		xmin == BootstrapTransactionId)
		return MQLOG_XMIN_COMMITTED;
	if (!TransactionIdIsNormal(xmin))
		return MQLOG_XMIN_ABORTED;
	if (TransactionIdIsCurrentTransactionId(xmin))
		return MQLOG_XMIN_CURRENT;
	if (TransactionIdIsInProgress(xmin))
		return MQLOG_XMIN_IN_PROGRESS;
	if (TransactionIdDidCommit(xmin))
		return MQLOG_XMIN_COMMITTED;
	return MQLOG_XMIN_ABORTED;
}

/*
 * MVCC snapshots (also hot standby snapshots, which XidInMVCCSnapshot
 * handles).  Also reports read-write conflicts for serializable
 * transactions when the row is invisible only because its inserter is
 * concurrent.
 */
static bool
mqlog_visible_mvcc(Relation rel, const char *row, Snapshot snapshot)
{
	TransactionId xmin = mqlog_row_xmin(row);

	if (!TransactionIdIsNormal(xmin))
		return xmin == FrozenTransactionId || xmin == BootstrapTransactionId;

	if (TransactionIdIsCurrentTransactionId(xmin))
		return mqlog_row_cmin(row) < snapshot->curcid;

	if (XidInMVCCSnapshot(xmin, snapshot))
	{
		/* invisible because concurrent: a possible rw-conflict */
		if (rel != NULL && CheckForSerializableConflictOutNeeded(rel, snapshot) &&
			!TransactionIdPrecedes(xmin, TransactionXmin))
		{
			TransactionId top = SubTransGetTopmostTransaction(xmin);

			if (!TransactionIdEquals(top, GetTopTransactionIdIfAny()))
				CheckForSerializableConflictOut(rel, top, snapshot);
		}
		return false;
	}

	return TransactionIdDidCommit(xmin);
}

/*
 * Is the row visible to the snapshot?  "frozen" is the page's FROZEN flag
 * (callers read it under the buffer lock they hold for the page).
 */
bool
mqlog_row_visible(Relation rel, const char *row, bool frozen,
				  Snapshot snapshot)
{
	TransactionId xmin = mqlog_row_xmin(row);
	MqlogXminStatus status;

	if (frozen)
		return true;

	switch (snapshot->snapshot_type)
	{
		case SNAPSHOT_MVCC:
			return mqlog_visible_mvcc(rel, row, snapshot);

		case SNAPSHOT_ANY:
		case SNAPSHOT_TOAST:
			return true;

		case SNAPSHOT_SELF:
			status = mqlog_xmin_status(xmin, false);
			return status == MQLOG_XMIN_CURRENT ||
				status == MQLOG_XMIN_COMMITTED;

		case SNAPSHOT_DIRTY:
			/* the caller's struct is uninitialized: reset what we report */
			snapshot->xmin = snapshot->xmax = InvalidTransactionId;
			snapshot->speculativeToken = 0;
			status = mqlog_xmin_status(xmin, false);
			if (status == MQLOG_XMIN_IN_PROGRESS)
			{
				/* caller waits for the inserter, then rechecks */
				snapshot->xmin = xmin;
				return true;
			}
			return status != MQLOG_XMIN_ABORTED;

		case SNAPSHOT_NON_VACUUMABLE:
			/* rows are never deleted: only aborted inserts are dead */
			return mqlog_xmin_status(xmin, false) != MQLOG_XMIN_ABORTED;

		case SNAPSHOT_HISTORIC_MVCC:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("logical decoding cannot read mqlog tables")));
	}

	elog(ERROR, "unrecognized snapshot type: %d", (int) snapshot->snapshot_type);
	return false;				/* keep compiler quiet */
}
