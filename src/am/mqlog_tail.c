/*-------------------------------------------------------------------------
 *
 * mqlog_tail.c
 *	  The last page of an ordered mqlog relation: finding and locking it,
 *	  and the TAIL mark that lets an append find it without an lseek.
 *
 * Ordered appends (mqlog_insert.c) write only the last page, and an
 * out-of-line value's overflow run (mqlog_toast.c) adds pages after it;
 * both go through here, so that the mark stays true: it is set only on a
 * page known to be the last, and cleared, under the page's exclusive lock,
 * before a page is added after it.  See docs/mqlog.md, "Finding the last
 * page without an lseek".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "am/mqlog.h"

/*
 * Set or clear the tail mark of an exclusively locked page.  The mark is a
 * hint, dirtied as hint bits are (no WAL record of its own): a crash can
 * lose a change to it, and then only the backends that relied on it are
 * gone too (the target block lives in a backend's memory).
 */
static void
mqlog_mark_tail(Buffer buf, bool tail)
{
	MqlogPageOpaque opaque = MqlogPageGetOpaque(BufferGetPage(buf));

	if (((opaque->mq_flags & MQLOG_PAGE_TAIL) != 0) == tail)
		return;
	if (tail)
		opaque->mq_flags |= MQLOG_PAGE_TAIL;
	else
		opaque->mq_flags &= ~MQLOG_PAGE_TAIL;
	MarkBufferDirtyHint(buf, true);
}

/* May an exclusively locked, verified last page carry the tail mark? */
static inline bool
mqlog_tail_candidate(Page page)
{
	return !PageIsNew(page) && mqlog_page_is_valid(page) &&
		!MqlogPageIsOverflow(page);
}

/* Does an exclusively locked page carry a tail mark we may trust? */
static inline bool
mqlog_page_marked_tail(Page page)
{
	return mqlog_tail_candidate(page) && MqlogPageIsTail(page);
}

/*
 * Exclusively lock the relation's current last page (or create the first
 * page).  Retries when the relation grew while we waited for the lock.
 *
 * The page our last ordered append went to (the relation's target block)
 * is tried first.  If it still carries MQLOG_PAGE_TAIL under our lock, it is
 * still the last page, and no lseek is needed: the mark is set only on a
 * page known to be the last (one that an ordered append added, or found
 * last by asking the relation's size), and whoever adds a page after it --
 * an ordered append (mqlog_ordered_page) or an out-of-line value
 * (mqlog_hold_last_page) -- holds it exclusively and clears the mark
 * first.  Else the relation's size (an lseek) names the last page, which
 * the mark or a second look at the size confirms under its lock.
 */
Buffer
mqlog_lock_last_page(Relation rel, bool *isnew)
{
	BlockNumber hint = RelationGetTargetBlock(rel);

	/* the target block exists: see mqlog_get_target_buffer (mqlog_insert.c) */
	if (hint != InvalidBlockNumber)
	{
		Buffer		buf = ReadBuffer(rel, hint);
		Page		page = BufferGetPage(buf);

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		if (mqlog_page_marked_tail(page))
		{
			*isnew = false;
			return buf;
		}
		UnlockReleaseBuffer(buf);
	}

	for (;;)
	{
		BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
		Buffer		buf;
		Page		page;

		*isnew = false;
		if (nblocks == 0)
		{
			bool		local = RELATION_IS_LOCAL(rel);

			if (!local)
				LockRelationForExtension(rel, ExclusiveLock);
			if (RelationGetNumberOfBlocks(rel) != 0)
			{
				if (!local)
					UnlockRelationForExtension(rel, ExclusiveLock);
				continue;
			}
			buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_ZERO_AND_LOCK, NULL);
			if (!local)
				UnlockRelationForExtension(rel, ExclusiveLock);
			*isnew = true;
			return buf;
		}

		buf = ReadBuffer(rel, nblocks - 1);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		if (mqlog_page_marked_tail(page))
			return buf;
		if (RelationGetNumberOfBlocks(rel) == nblocks)
		{
			*isnew = PageIsNew(page);
			if (mqlog_tail_candidate(page))
				mqlog_mark_tail(buf, true);
			return buf;
		}
		/* no longer the last page: never add to it again */
		UnlockReleaseBuffer(buf);
	}
}

/*
 * Before adding pages other than by an ordered append (an out-of-line
 * value's run): exclusively lock the relation's last page, if any, clear
 * its tail mark, and take the relation extension lock, in that order (the
 * order of mqlog_ordered_page, so the two never wait for each other).
 * Returns the last page or InvalidBuffer; mqlog_release_last_page undoes.
 */
Buffer
mqlog_hold_last_page(Relation rel)
{
	bool		local = RELATION_IS_LOCAL(rel);

	for (;;)
	{
		BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
		Buffer		buf = InvalidBuffer;

		if (nblocks > 0)
		{
			buf = ReadBuffer(rel, nblocks - 1);
			LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		}
		if (!local)
			LockRelationForExtension(rel, ExclusiveLock);
		if (RelationGetNumberOfBlocks(rel) == nblocks)
		{
			if (BufferIsValid(buf))
				mqlog_tail_passed(buf);
			return buf;
		}
		if (!local)
			UnlockRelationForExtension(rel, ExclusiveLock);
		if (BufferIsValid(buf))
			UnlockReleaseBuffer(buf);
	}
}

void
mqlog_release_last_page(Relation rel, Buffer buf)
{
	if (!RELATION_IS_LOCAL(rel))
		UnlockRelationForExtension(rel, ExclusiveLock);
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}

/*
 * A page is being added after buf, the relation's last page, which the
 * caller holds exclusively locked and goes on holding until the new page is
 * initialized: buf is not the tail any more.
 */
void
mqlog_tail_passed(Buffer buf)
{
	if (mqlog_tail_candidate(BufferGetPage(buf)))
		mqlog_mark_tail(buf, false);
}
