/*-------------------------------------------------------------------------
 *
 * mqlog_handler.c
 *	  The mqlog table access method: handler, DDL callbacks and the
 *	  append-only guard.
 *
 * The callbacks are listed in TableAmRoutine order at the bottom of this
 * file; most are thin wrappers over the files of src/am/.  Operations that
 * would modify or lock existing rows are refused with
 * "mqlog tables are append-only", up front by an ExecutorStart hook where
 * the plan shows them (so nothing has run yet), and again in the callbacks
 * as a backstop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/multixact.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/storage.h"
#include "catalog/storage_xlog.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "am/mqlog.h"

PG_FUNCTION_INFO_V1(mqlog_handler);

int			mqlog_max_row_size = 16 * 1024 * 1024;

static ExecutorStart_hook_type prev_ExecutorStart = NULL;

static void mqlog_ExecutorStart(QueryDesc *queryDesc, int eflags);

/*
 * Module initialization, called from _PG_init.
 */
void
mqlog_init(void)
{
	DefineCustomIntVariable("mq.max_message_size",
							"Largest row accepted by an mqlog table.",
							"Rows are stored inline or, above one page, in overflow "
							"pages of the same table; larger rows are refused.",
							&mqlog_max_row_size,
							16 * 1024 * 1024,
							1024,
							MaxAllocSize / 2,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	mqlog_xlog_register();

	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = mqlog_ExecutorStart;
}

/* The error every modifying operation gets */
static void
mqlog_append_only_error(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("mqlog tables are append-only"),
			 errdetail("%s is not supported on mqlog tables.", what)));
}

/* ----------------------------------------------------------------
 * Append-only guard (ExecutorStart hook)
 * ----------------------------------------------------------------
 */

/* Is relid an mqlog table?  mqlog_amoid is looked up on first use. */
static bool
mqlog_relid_is_mqlog(Oid relid, Oid *mqlog_amoid)
{
	HeapTuple	tp;
	bool		result = false;

	if (!OidIsValid(*mqlog_amoid))
	{
		*mqlog_amoid = get_am_oid(MQLOG_AM_NAME, true);
		if (!OidIsValid(*mqlog_amoid))
			return false;
	}
	tp = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (HeapTupleIsValid(tp))
	{
		result = ((Form_pg_class) GETSTRUCT(tp))->relam == *mqlog_amoid;
		ReleaseSysCache(tp);
	}
	return result;
}

static void
mqlog_check_modify_table(PlannedStmt *stmt, Plan *plan, Oid *amoid)
{
	ModifyTable *mt;
	ListCell   *lc;

	if (plan == NULL || !IsA(plan, ModifyTable))
		return;
	mt = (ModifyTable *) plan;

	foreach(lc, mt->resultRelations)
	{
		RangeTblEntry *rte = rt_fetch(lfirst_int(lc), stmt->rtable);

		if (rte->rtekind != RTE_RELATION ||
			!mqlog_relid_is_mqlog(rte->relid, amoid))
			continue;
		switch (mt->operation)
		{
			case CMD_INSERT:
				if (mt->onConflictAction != ONCONFLICT_NONE)
					mqlog_append_only_error("INSERT ... ON CONFLICT");
				break;
			case CMD_UPDATE:
				mqlog_append_only_error("UPDATE");
				break;
			case CMD_DELETE:
				mqlog_append_only_error("DELETE");
				break;
			case CMD_MERGE:
				mqlog_append_only_error("MERGE");
				break;
			default:
				break;
		}
	}
}

static void
mqlog_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && stmt != NULL)
	{
		Oid			amoid = InvalidOid;
		ListCell   *lc;

		mqlog_check_modify_table(stmt, stmt->planTree, &amoid);
		foreach(lc, stmt->subplans)
			mqlog_check_modify_table(stmt, (Plan *) lfirst(lc), &amoid);

		foreach(lc, stmt->rowMarks)
		{
			PlanRowMark *rc = (PlanRowMark *) lfirst(lc);
			RangeTblEntry *rte = rt_fetch(rc->rti, stmt->rtable);

			if (RowMarkRequiresRowShareLock(rc->markType) &&
				rte->rtekind == RTE_RELATION &&
				mqlog_relid_is_mqlog(rte->relid, &amoid))
				mqlog_append_only_error("SELECT FOR UPDATE/SHARE");
		}

		foreach(lc, stmt->rtable)
		{
			RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);

			if (rte->rtekind == RTE_RELATION && rte->tablesample != NULL &&
				mqlog_relid_is_mqlog(rte->relid, &amoid))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("TABLESAMPLE is not supported on mqlog tables")));
		}
	}

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/* ----------------------------------------------------------------
 * Slot, modification and DDL callbacks
 * ----------------------------------------------------------------
 */

static const TupleTableSlotOps *
mqlog_slot_callbacks(Relation rel)
{
	return &TTSOpsHeapTuple;
}

static void
mqlog_tuple_get_latest_tid(TableScanDesc scan, ItemPointer tid)
{
	/* rows are never updated: every TID is the latest version */
}

static void
mqlog_tuple_insert_speculative(Relation rel, TupleTableSlot *slot,
							   CommandId cid, int options,
							   BulkInsertState bistate, uint32 specToken)
{
	mqlog_append_only_error("INSERT ... ON CONFLICT");
}

static void
mqlog_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
								 uint32 specToken, bool succeeded)
{
	mqlog_append_only_error("INSERT ... ON CONFLICT");
}

static TM_Result
mqlog_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
				   Snapshot snapshot, Snapshot crosscheck, bool wait,
				   TM_FailureData *tmfd, bool changingPart)
{
	mqlog_append_only_error("DELETE");
	return TM_Ok;				/* keep compiler quiet */
}

static TM_Result
mqlog_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
				   CommandId cid, Snapshot snapshot, Snapshot crosscheck,
				   bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
				   bool *update_indexes)
{
	mqlog_append_only_error("UPDATE");
	return TM_Ok;
}

static TM_Result
mqlog_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
				 TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
				 LockWaitPolicy wait_policy, uint8 flags,
				 TM_FailureData *tmfd)
{
	mqlog_append_only_error("SELECT FOR UPDATE/SHARE");
	return TM_Ok;
}

/*
 * New storage for CREATE TABLE, TRUNCATE and rewrites.  As heap: an
 * unlogged table also gets an empty init fork, so crash recovery resets it
 * to empty.
 */
static void
mqlog_relation_set_new_filenode(Relation rel, const RelFileNode *newrnode,
								char persistence, TransactionId *freezeXid,
								MultiXactId *minmulti)
{
	SMgrRelation srel;

	*freezeXid = RecentXmin;
	*minmulti = GetOldestMultiXactId();

	srel = RelationCreateStorage(*newrnode, persistence, true);
	if (persistence == RELPERSISTENCE_UNLOGGED)
	{
		smgrcreate(srel, INIT_FORKNUM, false);
		log_smgrcreate(newrnode, INIT_FORKNUM);
		smgrimmedsync(srel, INIT_FORKNUM);
	}
	smgrclose(srel);
}

static void
mqlog_relation_nontransactional_truncate(Relation rel)
{
	RelationTruncate(rel, 0);
}

/* ALTER TABLE SET TABLESPACE: copy every fork, as heap does */
static void
mqlog_relation_copy_data(Relation rel, const RelFileNode *newrnode)
{
	SMgrRelation dstrel;
	ForkNumber	forkNum;

	dstrel = smgropen(*newrnode, rel->rd_backend);
	FlushRelationBuffers(rel);
	RelationCreateStorage(*newrnode, rel->rd_rel->relpersistence, true);
	RelationCopyStorage(RelationGetSmgr(rel), dstrel, MAIN_FORKNUM,
						rel->rd_rel->relpersistence);
	for (forkNum = MAIN_FORKNUM + 1; forkNum <= MAX_FORKNUM; forkNum++)
	{
		if (smgrexists(RelationGetSmgr(rel), forkNum))
		{
			smgrcreate(dstrel, forkNum, false);
			if (RelationIsPermanent(rel) ||
				(rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED &&
				 forkNum == INIT_FORKNUM))
				log_smgrcreate(newrnode, forkNum);
			RelationCopyStorage(RelationGetSmgr(rel), dstrel, forkNum,
								rel->rd_rel->relpersistence);
		}
	}
	RelationDropStorage(rel);
	smgrclose(dstrel);
}

static void
mqlog_relation_copy_for_cluster(Relation OldTable, Relation NewTable,
								Relation OldIndex, bool use_sort,
								TransactionId OldestXmin,
								TransactionId *xid_cutoff,
								MultiXactId *multi_cutoff,
								double *num_tuples, double *tups_vacuumed,
								double *tups_recently_dead)
{
	mqlog_append_only_error("CLUSTER or VACUUM FULL");
}

static bool
mqlog_relation_needs_toast_table(Relation rel)
{
	/* large values go to overflow pages of the table itself */
	return false;
}

static void
mqlog_relation_estimate_size(Relation rel, int32 *attr_widths,
							 BlockNumber *pages, double *tuples,
							 double *allvisfrac)
{
	table_block_relation_estimate_size(rel, attr_widths, pages, tuples,
									   allvisfrac,
									   MQLOG_ROW_HEADER_SIZE + sizeof(ItemIdData),
									   BLCKSZ - SizeOfPageHeaderData - MQLOG_SPECIAL_SIZE);
}

static bool
mqlog_scan_sample_next_block(TableScanDesc scan, SampleScanState *scanstate)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("TABLESAMPLE is not supported on mqlog tables")));
	return false;
}

static bool
mqlog_scan_sample_next_tuple(TableScanDesc scan, SampleScanState *scanstate,
							 TupleTableSlot *slot)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("TABLESAMPLE is not supported on mqlog tables")));
	return false;
}

/* ----------------------------------------------------------------
 * The routine, in TableAmRoutine order
 * ----------------------------------------------------------------
 */
const TableAmRoutine mqlog_methods = {
	.type = T_TableAmRoutine,

	.slot_callbacks = mqlog_slot_callbacks,

	.scan_begin = mqlog_scan_begin,
	.scan_end = mqlog_scan_end,
	.scan_rescan = mqlog_scan_rescan,
	.scan_getnextslot = mqlog_scan_getnextslot,

	/* no TID range scans */
	.scan_set_tidrange = NULL,
	.scan_getnextslot_tidrange = NULL,

	.parallelscan_estimate = table_block_parallelscan_estimate,
	.parallelscan_initialize = table_block_parallelscan_initialize,
	.parallelscan_reinitialize = table_block_parallelscan_reinitialize,

	.index_fetch_begin = mqlog_index_fetch_begin,
	.index_fetch_reset = mqlog_index_fetch_reset,
	.index_fetch_end = mqlog_index_fetch_end,
	.index_fetch_tuple = mqlog_index_fetch_tuple,

	.tuple_fetch_row_version = mqlog_fetch_row_version,
	.tuple_tid_valid = mqlog_tuple_tid_valid,
	.tuple_get_latest_tid = mqlog_tuple_get_latest_tid,
	.tuple_satisfies_snapshot = mqlog_tuple_satisfies_snapshot,
	.index_delete_tuples = mqlog_index_delete_tuples,

	.tuple_insert = mqlog_tuple_insert,
	.tuple_insert_speculative = mqlog_tuple_insert_speculative,
	.tuple_complete_speculative = mqlog_tuple_complete_speculative,
	.multi_insert = mqlog_multi_insert,
	.tuple_delete = mqlog_tuple_delete,
	.tuple_update = mqlog_tuple_update,
	.tuple_lock = mqlog_tuple_lock,
	.finish_bulk_insert = NULL,

	.relation_set_new_filenode = mqlog_relation_set_new_filenode,
	.relation_nontransactional_truncate = mqlog_relation_nontransactional_truncate,
	.relation_copy_data = mqlog_relation_copy_data,
	.relation_copy_for_cluster = mqlog_relation_copy_for_cluster,
	.relation_vacuum = mqlog_relation_vacuum,
	.scan_analyze_next_block = mqlog_scan_analyze_next_block,
	.scan_analyze_next_tuple = mqlog_scan_analyze_next_tuple,
	.index_build_range_scan = mqlog_index_build_range_scan,
	.index_validate_scan = mqlog_index_validate_scan,

	.relation_size = table_block_relation_size,
	.relation_needs_toast_table = mqlog_relation_needs_toast_table,
	.relation_toast_am = NULL,
	.relation_fetch_toast_slice = mqlog_fetch_toast_slice,

	.relation_estimate_size = mqlog_relation_estimate_size,

	/* no bitmap heap scans: the planner then never builds bitmap paths */
	.scan_bitmap_next_block = NULL,
	.scan_bitmap_next_tuple = NULL,

	.scan_sample_next_block = mqlog_scan_sample_next_block,
	.scan_sample_next_tuple = mqlog_scan_sample_next_tuple
};

Datum
mqlog_handler(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(&mqlog_methods);
}
