/*-------------------------------------------------------------------------
 *
 * mqlog_page.c
 *	  Page initialization and special-area helpers of the mqlog access
 *	  method.
 *
 * See mqlog.h for the page layout.  Nothing here writes WAL: callers make
 * these changes inside their own critical sections and log them through
 * mqlog_xlog.c, whose redo routines call the same helpers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"

#include "am/mqlog.h"

/*
 * Initialize a page as an mqlog data page (flags = 0) or overflow page.
 */
void
mqlog_page_init(Page page, uint8 flags)
{
	MqlogPageOpaque opaque;

	PageInit(page, BLCKSZ, MQLOG_SPECIAL_SIZE);
	opaque = MqlogPageGetOpaque(page);
	opaque->mq_magic = MQLOG_PAGE_MAGIC;
	opaque->mq_version = MQLOG_PAGE_VERSION;
	opaque->mq_flags = flags;
	opaque->mq_aux1 = InvalidTransactionId;
	opaque->mq_aux2 = InvalidTransactionId;
	opaque->mq_reserved = 0;
}

/*
 * Does this initialized page look like one of ours?  Used on every read
 * path before trusting the special area; callers handle PageIsNew first.
 */
bool
mqlog_page_is_valid(Page page)
{
	MqlogPageOpaque opaque;

	if (PageGetSpecialSize(page) != MQLOG_SPECIAL_SIZE)
		return false;
	opaque = MqlogPageGetOpaque(page);
	/* readers size per-page arrays by MQLOG_MAX_ROWS_PER_PAGE */
	return opaque->mq_magic == MQLOG_PAGE_MAGIC &&
		opaque->mq_version == MQLOG_PAGE_VERSION &&
		PageGetMaxOffsetNumber(page) <= MQLOG_MAX_ROWS_PER_PAGE;
}

/*
 * Widen a data page's [min_xmin, max_xmin] range to include xid.  VACUUM
 * uses the range to decide whether the page can be frozen and to compute
 * relfrozenxid without looking at every row.
 */
void
mqlog_page_note_xmin(Page page, TransactionId xid)
{
	MqlogPageOpaque opaque = MqlogPageGetOpaque(page);

	/* frozen rows need no freezing: they do not widen the page's range */
	if (!TransactionIdIsNormal(xid))
		return;
	if (!TransactionIdIsNormal(opaque->mq_aux1) ||
		TransactionIdPrecedes(xid, opaque->mq_aux1))
		opaque->mq_aux1 = xid;
	if (!TransactionIdIsNormal(opaque->mq_aux2) ||
		TransactionIdFollows(xid, opaque->mq_aux2))
		opaque->mq_aux2 = xid;
}

/*
 * Space available for one more row (its on-page bytes), counting its line
 * pointer.  Zero once MQLOG_MAX_ROWS_PER_PAGE items exist.
 */
Size
mqlog_page_free_space(Page page)
{
	if (PageGetMaxOffsetNumber(page) >= MQLOG_MAX_ROWS_PER_PAGE)
		return 0;
	return PageGetFreeSpace(page);
}

/*
 * Append an item of len bytes at the page's next line pointer and return
 * where to write it (*off receives its offset number), or NULL when it does
 * not fit.  Unlike PageAddItem the item is not MAXALIGNed: rows are read
 * with memcpy (see mqlog.h), so padding would only waste space.
 */
char *
mqlog_page_add_item(Page page, Size len, OffsetNumber *off)
{
	PageHeader	ph = (PageHeader) page;

	if (mqlog_page_free_space(page) < len || len == 0)
		return NULL;
	*off = OffsetNumberNext(PageGetMaxOffsetNumber(page));
	ph->pd_upper -= len;
	ph->pd_lower += sizeof(ItemIdData);
	ItemIdSetNormal(PageGetItemId(page, *off), ph->pd_upper, len);
	return (char *) page + ph->pd_upper;
}
