/*-------------------------------------------------------------------------
 *
 * mqlog.h
 *	  The mqlog table access method: an append-only, WAL-logged log.
 *
 * On-disk structs, WAL record formats and the prototypes shared between
 * the files of src/am/.  The rest of queue_ext uses only the "interface
 * for the message log" section at the bottom.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQLOG_H
#define MQLOG_H

#include "access/tableam.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

/* Name of the access method as created by the install script */
#define MQLOG_AM_NAME "mqlog"

/* Custom WAL resource manager id (RM_EXPERIMENTAL_ID while in development) */
#define MQLOG_RMGR_ID 128
#define MQLOG_RMGR_NAME "mqlog"

/* GUC: largest row accepted, in bytes (mq.max_message_size) */
extern int	mqlog_max_row_size;

/* Called from _PG_init(): registers the rmgr (when preloading) and GUCs */
extern void mqlog_init(void);

/* ----------------------------------------------------------------
 * Interface for the message log (src/msglog.c and later the broker)
 * ----------------------------------------------------------------
 */

/* Is this relation an mqlog table? */
extern bool mqlog_is_mqlog_relation(Relation rel);

/*
 * Ordered append: rows are added only to the relation's last page, and a
 * page is never written again once a later page exists, so physical order
 * (block, offset) is the order in which rows were written.  Used for the
 * per-queue entry logs and the settlement logs, which readers follow with a
 * cursor.  tids[] receives the new rows' TIDs.  Takes the same slots as
 * table_multi_insert (any slot type).
 */
extern void mqlog_insert_ordered(Relation rel, TupleTableSlot **slots,
								 int nslots, CommandId cid, ItemPointer tids);

/* How a reader should treat one row of an mqlog table */
typedef enum MqlogRowState
{
	MQLOG_ROW_COMMITTED,		/* inserted by a committed transaction */
	MQLOG_ROW_OWN,				/* inserted by the current transaction */
	MQLOG_ROW_IN_PROGRESS,		/* inserter still running: look again later */
	MQLOG_ROW_ABORTED			/* inserter aborted (or crashed): never valid */
} MqlogRowState;

/* Result of mqlog_read_next() */
typedef enum MqlogReadResult
{
	MQLOG_READ_ROW,				/* *pos holds a row; *state classifies it */
	MQLOG_READ_END				/* nothing at or after *pos yet */
} MqlogReadResult;

/*
 * Cursor read of an ordered mqlog relation.  Starting at *pos (which may
 * point past the last item of a page, or to InvalidOffsetNumber meaning "the
 * start of that block"), finds the first row at or after *pos, sets *pos to
 * it, classifies its inserting transaction in *state and, when slot is not
 * NULL and the state is COMMITTED or OWN, stores a copy of the row in slot
 * (a heap-tuple slot; no buffer pin is kept).  Moves past a page only when a
 * later page exists, so with ordered appends no row is ever missed.
 */
extern MqlogReadResult mqlog_read_next(Relation rel, ItemPointer pos,
									   MqlogRowState *state,
									   TupleTableSlot *slot);

/*
 * Fetch one row by TID regardless of snapshot, classifying its inserter.
 * Returns false if there is no row at tid (never written, LP_DEAD, overflow
 * page, beyond the end).  slot as for mqlog_read_next.
 */
extern bool mqlog_fetch_row(Relation rel, ItemPointer tid,
							MqlogRowState *state, TupleTableSlot *slot);

#endif							/* MQLOG_H */
