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

#include "access/htup_details.h"
#include "access/tableam.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "storage/bufpage.h"
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

/* SQL functions of the AM: NULL for argument argno is 22004 */
static inline void
mqlog_arg_not_null(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
}

/* ----------------------------------------------------------------
 * Page format
 *
 * Standard PostgreSQL pages (PageInit, line pointers, special space) so
 * checksums, hole-free full-page images and pageinspect's get_raw_page
 * work.  Rows use the compact row format below, not heap's tuple header.
 * Rows are only ever appended: line pointers are never reused and rows
 * never move, so TIDs are stable and a pinned row stays valid.
 *
 * Two kinds of pages, told apart by the special area's flags:
 *	- data pages hold rows;
 *	- overflow pages hold one chunk of an out-of-line attribute value
 *	  (self-TOAST, see mqlog_toast.c) as a single raw item.
 * ----------------------------------------------------------------
 */
#define MQLOG_PAGE_MAGIC		0x4D51	/* "MQ" */
#define MQLOG_PAGE_VERSION		2

/* mq_flags bits */
#define MQLOG_PAGE_FROZEN		0x01	/* all normal items visible to all */
#define MQLOG_PAGE_OVERFLOW		0x02	/* chunk of an out-of-line value */
#define MQLOG_PAGE_TAIL			0x04	/* last page of an ordered relation */

typedef struct MqlogPageOpaqueData
{
	uint16		mq_magic;		/* MQLOG_PAGE_MAGIC */
	uint8		mq_version;		/* MQLOG_PAGE_VERSION */
	uint8		mq_flags;		/* MQLOG_PAGE_* bits */
	/* data page: xmin range of its rows; overflow page: value and chunk */
	uint32		mq_aux1;		/* min_xmin | first block of the value */
	uint32		mq_aux2;		/* max_xmin | chunk number in the value */
	uint32		mq_reserved;	/* zero */
} MqlogPageOpaqueData;

typedef MqlogPageOpaqueData *MqlogPageOpaque;

#define MqlogPageGetOpaque(page) \
	((MqlogPageOpaque) PageGetSpecialPointer(page))
#define MqlogPageIsOverflow(page) \
	((MqlogPageGetOpaque(page)->mq_flags & MQLOG_PAGE_OVERFLOW) != 0)
#define MqlogPageIsFrozen(page) \
	((MqlogPageGetOpaque(page)->mq_flags & MQLOG_PAGE_FROZEN) != 0)
#define MqlogPageIsTail(page) \
	((MqlogPageGetOpaque(page)->mq_flags & MQLOG_PAGE_TAIL) != 0)

#define MQLOG_SPECIAL_SIZE	MAXALIGN(sizeof(MqlogPageOpaqueData))

/*
 * Rows on a data page (page version 2).  An append-only row needs no xmax,
 * no update chain and no alignment padding, so it is stored at any byte
 * offset with a 6-byte header instead of heap's 24 bytes:
 *
 *	uint32	xmin	the inserting (sub)transaction
 *	uint16	info	natts (low 11 bits) | MQLOG_ROW_* flags
 *	uint32	cmin	only with MQLOG_ROW_HAS_CID (cmin != FirstCommandId)
 *	bits8	nulls[]	BITMAPLEN(natts) bytes, only with MQLOG_ROW_HASNULL
 *	data			the attributes, byte for byte as after t_hoff in a heap
 *					tuple (their alignment is relative to the data's start)
 *
 * Readers copy a row into a heap tuple (mqlog_row_to_tuple): the data lands
 * at a MAXALIGNed t_hoff, so its alignment is restored and heap's deforming
 * code reads it.  All fields are read and written with memcpy.
 */
#define MQLOG_ROW_NATTS_MASK	0x07FF
#define MQLOG_ROW_HASNULL		0x0800	/* null bitmap present */
#define MQLOG_ROW_HASEXTERNAL	0x1000	/* holds out-of-line values */
#define MQLOG_ROW_HAS_CID		0x2000	/* cmin stored */
#define MQLOG_ROW_LOG_INIT		0x4000	/* WAL only: initialize the page first */
#define MQLOG_ROW_FLAGS			(MQLOG_ROW_HASNULL | MQLOG_ROW_HASEXTERNAL | \
								 MQLOG_ROW_HAS_CID)

#define MQLOG_ROW_HEADER_SIZE	(sizeof(TransactionId) + sizeof(uint16))

/* Most bytes a row of natts attributes needs besides its data */
#define MQLOG_ROW_MAX_OVERHEAD(natts) \
	(MQLOG_ROW_HEADER_SIZE + sizeof(CommandId) + BITMAPLEN(natts))

static inline TransactionId
mqlog_row_xmin(const char *row)
{
	TransactionId xmin;

	memcpy(&xmin, row, sizeof(TransactionId));
	return xmin;
}

static inline uint16
mqlog_row_info(const char *row)
{
	uint16		info;

	memcpy(&info, row + sizeof(TransactionId), sizeof(uint16));
	return info;
}

static inline CommandId
mqlog_row_cmin(const char *row)
{
	CommandId	cid = FirstCommandId;

	if (mqlog_row_info(row) & MQLOG_ROW_HAS_CID)
		memcpy(&cid, row + MQLOG_ROW_HEADER_SIZE, sizeof(CommandId));
	return cid;
}

/* Bytes of a row's null bitmap (0 without one) */
static inline Size
mqlog_row_bitmap_len(uint16 info)
{
	return (info & MQLOG_ROW_HASNULL) ?
		BITMAPLEN(info & MQLOG_ROW_NATTS_MASK) : 0;
}

/* Bytes from the start of a row to its null bitmap */
static inline Size
mqlog_row_bitmap_offset(uint16 info)
{
	return MQLOG_ROW_HEADER_SIZE +
		((info & MQLOG_ROW_HAS_CID) ? sizeof(CommandId) : 0);
}

/* Bytes from the start of a row to its data */
static inline Size
mqlog_row_data_offset(uint16 info)
{
	return mqlog_row_bitmap_offset(info) + mqlog_row_bitmap_len(info);
}

/* Largest row (on-page bytes) stored inline on a data page */
#define MQLOG_MAX_INLINE_ROW \
	(BLCKSZ - SizeOfPageHeaderData - sizeof(ItemIdData) - MQLOG_SPECIAL_SIZE)

/* Bytes of an out-of-line value stored per overflow page */
#define MQLOG_OVERFLOW_CHUNK	MAXALIGN_DOWN(MQLOG_MAX_INLINE_ROW)

/*
 * Line pointers per page are capped at heap's maximum, which core code
 * sizing per-page arrays (TID bitmaps) assumes for any table.
 */
#define MQLOG_MAX_ROWS_PER_PAGE	MaxHeapTuplesPerPage

/*
 * Rows longer than this get their largest compressible attributes
 * compressed first, as heap does (TOAST_TUPLE_THRESHOLD); only rows still
 * longer than MQLOG_MAX_INLINE_ROW move attributes to overflow pages.
 */
#define MQLOG_COMPRESS_THRESHOLD	2032

/* ----------------------------------------------------------------
 * WAL records (custom resource manager, mqlog_xlog.c)
 * ----------------------------------------------------------------
 */
#define XLOG_MQLOG_INSERT		0x00
#define XLOG_MQLOG_MULTI_INSERT 0x10
#define XLOG_MQLOG_OVERFLOW		0x20
#define XLOG_MQLOG_FREEZE		0x30
#define XLOG_MQLOG_OPMASK		0x30
/* INSERT or MULTI_INSERT of frozen rows: xmin is FrozenTransactionId */
#define XLOG_MQLOG_FROZEN		0x40
/* INSERT whose rows are all logged as deltas (see below) */
#define XLOG_MQLOG_DELTA		0x80

/* flag bits in xl_mqlog_multi_insert */
#define XLMQ_INIT_PAGE			0x01	/* (re)initialize the page first */

/*
 * A row as logged, its "image": the row without its xmin (the record's
 * xid) and without its cmin (the flag MQLOG_ROW_HAS_CID stays; redo stores
 * FirstCommandId, masked for consistency checking): uint16 info, null
 * bitmap, data.  In an INSERT record the logged info carries
 * MQLOG_ROW_LOG_INIT when the page is to be initialized first.  An image may
 * instead be logged as a delta against the image of the row before it on
 * its page (mqlog_delta.c): every row of an INSERT record with
 * XLOG_MQLOG_DELTA, a MULTI_INSERT row with XLMQ_ROW_DELTA in its length.
 */
#define SizeOfMqlogRowHeader	sizeof(uint16)

/*
 * INSERT: one row on each registered block (up to MQLOG_MAX_LINKED blocks,
 * of the same or different relations), block data = the row as logged.
 * No main data: a row always goes to its page's next line pointer, which is
 * where it went when it was written (rows are only ever appended).  Several
 * blocks make one record of a message and its queue entry
 * (mqlog_insert_linked).
 */
#define MQLOG_MAX_LINKED		4

/*
 * Bytes a MULTI_INSERT record's block data needs at most for the rows that
 * fit on one page: each logged row with its 2-byte length is no longer than
 * the row plus its line pointer (a delta is only used when shorter than the
 * data), so a page's worth.
 */
#define MQLOG_MULTI_INSERT_WAL_SPACE	BLCKSZ

/*
 * MULTI_INSERT: ntuples rows appended to one page at consecutive offsets
 * starting at firstoff; block data = for each row a uint16 length, then
 * its image (or with XLMQ_ROW_DELTA in the length, its delta).
 */
#define XLMQ_ROW_DELTA			0x8000
typedef struct xl_mqlog_multi_insert
{
	uint8		flags;
	OffsetNumber firstoff;
	uint16		ntuples;
} xl_mqlog_multi_insert;

#define SizeOfMqlogMultiInsert	(offsetof(xl_mqlog_multi_insert, ntuples) + sizeof(uint16))

/* OVERFLOW: block 0 is a fresh overflow page; block data = the chunk */
typedef struct xl_mqlog_overflow
{
	BlockNumber first;			/* first block of the value */
	uint32		chunkno;		/* this page's chunk number */
} xl_mqlog_overflow;

#define SizeOfMqlogOverflow	(offsetof(xl_mqlog_overflow, chunkno) + sizeof(uint32))

/*
 * FREEZE: set MQLOG_PAGE_FROZEN on block 0 and mark the listed items
 * (aborted rows; block data = OffsetNumber array) LP_DEAD.  Hot standby
 * queries whose xmin <= conflict_xid are cancelled: they could consider the
 * page's newest inserter still running.
 */
typedef struct xl_mqlog_freeze
{
	TransactionId conflict_xid;
	uint16		ndead;
} xl_mqlog_freeze;

#define SizeOfMqlogFreeze	(offsetof(xl_mqlog_freeze, ndead) + sizeof(uint16))

/* ----------------------------------------------------------------
 * Internal prototypes
 * ----------------------------------------------------------------
 */

/* mqlog_handler.c */
extern const TableAmRoutine mqlog_methods;

/* mqlog_page.c */
extern void mqlog_page_init(Page page, uint8 flags);
extern bool mqlog_page_is_valid(Page page);
extern void mqlog_page_note_xmin(Page page, TransactionId xid);
extern Size mqlog_page_free_space(Page page);
extern char *mqlog_page_add_item(Page page, Size len, OffsetNumber *off);

/* mqlog_tail.c: the last page of an ordered relation */
extern Buffer mqlog_lock_last_page(Relation rel, bool *isnew);
extern void mqlog_tail_passed(Buffer buf);
extern Buffer mqlog_hold_last_page(Relation rel);
extern void mqlog_release_last_page(Relation rel, Buffer buf);

/* mqlog_delta.c */
extern int	mqlog_delta_encode(const char *data, Size len, const char *base,
							   Size baselen, char *out);
extern int	mqlog_delta_decoded_len(const char *enc, Size enclen, Size baselen);
extern void mqlog_delta_decode(const char *enc, Size enclen, const char *base,
							   char *out);

/* mqlog_row.c */
extern uint16 mqlog_row_info_of(HeapTuple tup);
extern Size mqlog_row_size(HeapTuple tup);
extern void mqlog_row_write(char *dst, HeapTuple tup);
extern HeapTuple mqlog_row_to_tuple(const char *row, Size len,
									MemoryContext mcxt);
extern void mqlog_row_store(TupleTableSlot *slot, Relation rel, Page page,
							BlockNumber blkno, OffsetNumber off);
extern const char *mqlog_row_check(const char *row, Size len, int relnatts);

/* mqlog_visibility.c */
typedef enum MqlogXminStatus
{
	MQLOG_XMIN_COMMITTED,		/* committed or page frozen */
	MQLOG_XMIN_CURRENT,			/* inserted by the current transaction */
	MQLOG_XMIN_IN_PROGRESS,		/* inserter still running */
	MQLOG_XMIN_ABORTED			/* aborted or crashed */
} MqlogXminStatus;

extern MqlogXminStatus mqlog_xmin_status(TransactionId xmin, bool frozen);
extern bool mqlog_row_visible(Relation rel, const char *row, bool frozen,
							  Snapshot snapshot);

/* mqlog_insert.c */
extern void mqlog_tuple_insert(Relation rel, TupleTableSlot *slot,
							   CommandId cid, int options,
							   struct BulkInsertStateData *bistate);
extern void mqlog_multi_insert(Relation rel, TupleTableSlot **slots,
							   int nslots, CommandId cid, int options,
							   struct BulkInsertStateData *bistate);

/* mqlog_scan.c */
extern TableScanDesc mqlog_scan_begin(Relation rel, Snapshot snapshot,
									  int nkeys, struct ScanKeyData *key,
									  ParallelTableScanDesc pscan,
									  uint32 flags);
extern void mqlog_scan_end(TableScanDesc scan);
extern void mqlog_scan_rescan(TableScanDesc scan, struct ScanKeyData *key,
							  bool set_params, bool allow_strat,
							  bool allow_sync, bool allow_pagemode);
extern bool mqlog_scan_getnextslot(TableScanDesc scan,
								   ScanDirection direction,
								   TupleTableSlot *slot);
extern void mqlog_scan_set_limits(TableScanDesc scan, BlockNumber startblk,
								  BlockNumber numblks);
extern BlockNumber mqlog_scan_next_block(TableScanDesc scan);
extern struct IndexFetchTableData *mqlog_index_fetch_begin(Relation rel);
extern void mqlog_index_fetch_reset(struct IndexFetchTableData *data);
extern void mqlog_index_fetch_end(struct IndexFetchTableData *data);
extern bool mqlog_index_fetch_tuple(struct IndexFetchTableData *scan,
									ItemPointer tid, Snapshot snapshot,
									TupleTableSlot *slot,
									bool *call_again, bool *all_dead);
extern bool mqlog_fetch_row_version(Relation rel, ItemPointer tid,
									Snapshot snapshot, TupleTableSlot *slot);
extern bool mqlog_tuple_tid_valid(TableScanDesc scan, ItemPointer tid);
extern bool mqlog_tuple_satisfies_snapshot(Relation rel, TupleTableSlot *slot,
										   Snapshot snapshot);
extern TransactionId mqlog_index_delete_tuples(Relation rel,
											   TM_IndexDeleteOp *delstate);
extern bool mqlog_scan_analyze_next_block(TableScanDesc scan,
										  BlockNumber blockno,
										  BufferAccessStrategy bstrategy);
extern bool mqlog_scan_analyze_next_tuple(TableScanDesc scan,
										  TransactionId OldestXmin,
										  double *liverows, double *deadrows,
										  TupleTableSlot *slot);

/* mqlog_vacuum.c */
extern void mqlog_relation_vacuum(Relation rel, struct VacuumParams *params,
								  BufferAccessStrategy bstrategy);

/* mqlog_index.c */
extern double mqlog_index_build_range_scan(Relation table_rel,
										   Relation index_rel,
										   struct IndexInfo *index_info,
										   bool allow_sync, bool anyvisible,
										   bool progress,
										   BlockNumber start_blockno,
										   BlockNumber numblocks,
										   IndexBuildCallback callback,
										   void *callback_state,
										   TableScanDesc scan);
extern void mqlog_index_validate_scan(Relation table_rel, Relation index_rel,
									  struct IndexInfo *index_info,
									  Snapshot snapshot,
									  struct ValidateIndexState *state);

/* mqlog_toast.c */
extern HeapTuple mqlog_prepare_tuple(Relation rel, HeapTuple tup);
extern void mqlog_fetch_toast_slice(Relation toastrel, Oid valueid,
									int32 attrsize, int32 sliceoffset,
									int32 slicelength, struct varlena *result);

/* mqlog_xlog.c */
extern void mqlog_xlog_register(void);
/* Error out unless the resource manager is registered (writers call it) */
extern void mqlog_require_rmgr(void);
extern void mqlog_log_insert(Relation rel, Buffer buf, HeapTuple tup,
							 bool init);
extern void mqlog_log_rows(Relation *rels, Buffer *bufs, HeapTuple *tups,
						   bool *inits, int n);
extern void mqlog_log_multi_insert(Relation rel, Buffer buf,
								   HeapTuple *tuples, int ntuples,
								   bool init, StringInfo scratch);
extern void mqlog_log_overflow(Relation rel, Buffer buf, BlockNumber first,
							   uint32 chunkno, const char *data, int len);
extern void mqlog_log_freeze(Relation rel, Buffer buf,
							 TransactionId conflict_xid,
							 OffsetNumber *dead, int ndead);

/* mqlog_verify.c: SQL function mq.mqlog_verify(regclass) */

/* ----------------------------------------------------------------
 * Interface for the message log (src/msglog.c and later the broker)
 * ----------------------------------------------------------------
 */

/* Is this relation an mqlog table? */
extern bool mqlog_is_mqlog_relation(Relation rel);

/* ... or raise 42809 (WRONG_OBJECT_TYPE) */
extern void mqlog_require_relation(Relation rel);

/* Open relid to inspect it (mqlog_inspect.c): 42P01 if none, 42809 if not mqlog */
extern Relation mqlog_open_for_inspection(Oid relid);

/*
 * Ordered append: rows are added only to the relation's last page, and a
 * page is never written again once a later page exists, so physical order
 * (block, offset) is the order in which rows were written.  Used for the
 * per-queue entry logs and the settlement logs, which readers follow with a
 * cursor.  Rows are given as for mqlog_insert_values; tids[] receives the
 * new rows' TIDs.
 *
 * A relation that takes ordered appends takes no other inserts: its last
 * page carries MQLOG_PAGE_TAIL, which lets an append find it without asking
 * for the relation's size (see mqlog_lock_last_page), and only ordered
 * appends and out-of-line values keep that mark true when they add pages.
 */
/*
 * Called for each row of an ordered append once its place is known
 * (tup->t_self), before it is copied to its page: it may change the row's
 * data in place (a row that holds its own address), and nothing else -- it
 * runs in a critical section.
 */
typedef void (*MqlogPlacedFn) (HeapTuple tup, void *arg);

extern void mqlog_insert_ordered(Relation rel, Datum *values, bool *isnull,
								 int n, CommandId cid, ItemPointer tids,
								 MqlogPlacedFn placed, void *placed_arg);

/*
 * Insert n rows given as values and nulls (row i's at i * natts of the
 * relation) where tuple_insert would put them, returning their TIDs in
 * tids: a multi_insert that forms its tuples from the values at once.
 */
extern void mqlog_insert_values(Relation rel, Datum *values, bool *isnull,
								int n, CommandId cid, ItemPointer tids);

/*
 * Linked insert: one row in each of up to MQLOG_MAX_LINKED mqlog relations,
 * written in one critical section and logged as one WAL record, so a
 * message and its queue entry cost one record header and one commit.
 * mqlog_linked_reserve() prepares a row and exclusively locks the page it
 * will go to (ordered: the last page, as mqlog_insert_ordered; else the
 * page tuple_insert would choose) and sets row->tid, so the next row can
 * refer to it; mqlog_linked_write() writes all reserved rows and releases
 * their pages.  A row is given as values and nulls of the relation's
 * columns, formed into a tuple at once (no slot).  The relations must be
 * distinct (a page is locked once).  Callers reserve in a fixed order of
 * relations (page locks are held across reservations) and do nothing
 * between the two phases that could wait for another backend.
 */
typedef struct MqlogLinkedRow
{
	Relation	rel;
	bool		ordered;
	TransactionId xid;
	HeapTuple	tup;
	bool		shouldFree;
	Buffer		buf;
	bool		isnew;
	ItemPointerData tid;		/* where the row goes */
} MqlogLinkedRow;

extern void mqlog_linked_reserve(MqlogLinkedRow *row, Relation rel,
								 Datum *values, bool *isnull, CommandId cid,
								 bool ordered);
extern void mqlog_linked_write(MqlogLinkedRow *rows, int n);

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
 * What a run of reads of one relation learnt about it, for the cached
 * reads (mqlog_read_next_cached, mqlog_fetch_row_cached, mqlog_peek_row):
 * the relation's size, a lower bound as long as the caller holds its lock
 * throughout the run (an mqlog relation only shrinks under
 * AccessExclusiveLock: truncation), so that a read within it costs no
 * lseek; and the last block read, kept pinned, so that reads of one page
 * do not look it up again.  The caller ends the run with
 * mqlog_read_cache_release, under the same resource owner, before
 * releasing its lock.
 */
typedef struct MqlogReadCache
{
	BlockNumber nblocks;		/* blocks known to exist (0: unknown) */
	Buffer		buf;			/* pinned block of the relation, or invalid */
} MqlogReadCache;

extern void mqlog_read_cache_init(MqlogReadCache *cache);
extern void mqlog_read_cache_release(MqlogReadCache *cache);
extern MqlogReadResult mqlog_read_next_cached(Relation rel, ItemPointer pos,
											  MqlogRowState *state,
											  TupleTableSlot *slot,
											  MqlogReadCache *cache);

/*
 * Fetch one row by TID regardless of snapshot, classifying its inserter.
 * Returns false if there is no row at tid (never written, LP_DEAD, overflow
 * page, beyond the end).  slot as for mqlog_read_next.
 */
extern bool mqlog_fetch_row_cached(Relation rel, ItemPointer tid,
								   MqlogRowState *state, TupleTableSlot *slot,
								   MqlogReadCache *cache);

/*
 * The first row at or after *pos as the relation is now (false: none),
 * or its last row (mqlog_last_row), whatever its inserter's state: unlike
 * mqlog_read_next, the row is stored in slot even when its inserter is in
 * progress or aborted, for readers that order rows by their contents (a
 * stream's offsets) and decide themselves what to do with each state.
 * Frozen aborted rows (LP_DEAD) are passed over.  A walk of many rows
 * passes one MqlogReadCache to the _cached variant, as for mqlog_read_next.
 */
extern bool mqlog_peek_row(Relation rel, ItemPointer pos, MqlogRowState *state,
						   TupleTableSlot *slot);
extern bool mqlog_peek_row_cached(Relation rel, ItemPointer pos,
								  MqlogRowState *state, TupleTableSlot *slot,
								  MqlogReadCache *cache);
extern bool mqlog_last_row(Relation rel, ItemPointer pos, MqlogRowState *state,
						   TupleTableSlot *slot);

/*
 * A transaction's rows stop being in progress at one moment, but a cursor
 * read classifies them one after another: a read racing the commit can
 * find an earlier row of the transaction in progress and a later one
 * committed.  Between mqlog_hold_begin and mqlog_hold_end (one take of a
 * queue, which must deliver a transaction's messages in their order), a
 * row whose topmost transaction an earlier row of the read showed in
 * progress is classified in progress too.  Not nested.
 */
extern void mqlog_hold_begin(void);
extern void mqlog_hold_end(void);

#endif							/* MQLOG_H */
