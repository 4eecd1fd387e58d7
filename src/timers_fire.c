/*-------------------------------------------------------------------------
 *
 * timers_fire.c
 *	  Firing delayed messages: the worker appends the entries of those that
 *	  fell due, as their publish would have, length limits included.
 *
 * The timers themselves (arming, taking the due ones) are timers.c's; the
 * publish path arms them.  This file sits above the publish path: it asks
 * it whether an entry fits its queue's limits and to dead-letter one that
 * does not (publish.h), and appends the others to queue state.  Nothing
 * below calls it; the worker (worker.c) does, once per pass.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mqutils.h"
#include "filter.h"
#include "maintenance.h"
#include "msglog.h"
#include "publish.h"
#include "queue/queue.h"
#include "timers.h"
#include "timers_fire.h"

/* One queue's and lane's due entries, fired in a subtransaction */
typedef struct FireGroup
{
	MqQueue    *q;
	int			lane;
	MqEntry    *entries;
	int			n;
} FireGroup;

/*
 * reject-publish(-dlx) when delayed messages fall due: those that would
 * take q over a limit are not appended (RabbitMQ's delayed-message
 * exchange publishes them when due, and the full queue refuses them, with
 * nobody left to nack), but dead-lettered (reason maxlen) on
 * reject-publish-dlx, dropped on reject-publish; but a message nacked
 * with a delay, which comes back as a return does.  Checked under the
 * queue's turn, which the worker only takes if it is free: else the
 * entries wait a second more (their timers armed again).  Returns how
 * many of fg's entries, moved to its front, are to be appended.
 */
static int
admit_due(FireGroup *fg)
{
	MqQueue    *q = fg->q;
	int64		ready_bytes;
	int64		ready;
	int			k = 0;

	if (!mq_queue_turn_lock(q, false))
	{
		TimestampTz later = GetCurrentTimestamp() + USECS_PER_SEC;

		for (int i = 0; i < fg->n; i++)
			fg->entries[i].visible_at = Max(fg->entries[i].visible_at, later);
		mq_timers_add(q, fg->lane, fg->entries, fg->n);
		return 0;
	}
	ready = mq_queue_ready_bytes_for_publish(q, &ready_bytes);
	for (int i = 0; i < fg->n; i++)
	{
		int32		size = Max(fg->entries[i].body_size, 0);

		/* a message nacked with a delay comes back: a return is never refused */
		if (fg->entries[i].delivery_count > 0)
		{
			ready++;
			ready_bytes += size;
		}
		else if (!mq_limits_admit_one(q, &ready, &ready_bytes, size))
		{
			if (q->overflow_dlx &&
				mq_dead_letter(q, fg->entries[i].msg_id, "maxlen") == MQ_SETTLE_DEAD)
				mq_queue_count_at_commit(q, MQ_C_DEAD_LETTERED, 1);
			continue;
		}
		fg->entries[k++] = fg->entries[i];
	}
	/* held to the commit, as a publisher holds it */
	return k;
}

static void
fire_group(void *arg)
{
	FireGroup  *fg = arg;
	int			n = fg->n;

	/* a stream's entry carries its message's tag hash (groups' filters) */
	for (int i = 0; i < fg->n; i++)
	{
		MqMessage	m;

		fg->entries[i].tag_hash = MQ_TAG_HASH_NONE;
		if (fg->q->type == MQ_QUEUE_STREAM && mq_log_fetch(fg->entries[i].msg_id, &m) &&
			m.tag != NULL)
			fg->entries[i].tag_hash = mq_tag_hash(m.tag, strlen(m.tag));
	}
	if (mq_queue_limited(fg->q) && fg->q->overflow_reject)
		n = admit_due(fg);
	if (n > 0)
	{
		mq_queue_append(fg->q, fg->lane, fg->entries, n);
		mq_notify_ready(fg->q);
	}
}

/*
 * The worker: append the entries of delayed messages that fell due (see
 * timers_fire.h)
 */
TimestampTz
mq_fire_due_timers(int *fired)
{
	MqDueGroup *groups;
	int			ngroups;
	TimestampTz next = mq_timers_take_due(&groups, &ngroups, fired);

	/*
	 * Each group in a subtransaction, so that a broken queue loses its own
	 * due messages (logged) without holding back everybody else's.
	 */
	for (int i = 0; i < ngroups; i++)
	{
		MqQueue    *q = mq_queue_by_id(groups[i].queue_id);
		FireGroup	fg;
		char	   *what;

		if (q == NULL || groups[i].lane >= q->nlanes)
			continue;
		what = psprintf("firing %d delayed messages for queue \"%s\"", groups[i].n, q->name);
		fg.q = q;
		fg.lane = groups[i].lane;
		fg.entries = groups[i].entries;
		fg.n = groups[i].n;
		(void) mq_run_guarded(what, fire_group, &fg, NULL);
		pfree(what);
		pfree(groups[i].entries);
	}
	pfree(groups);
	return next;
}
