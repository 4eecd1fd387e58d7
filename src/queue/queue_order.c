/*-------------------------------------------------------------------------
 *
 * queue_order.c
 *	  Ordered queues (argument "ordered": true): the messages of one
 *	  message group are delivered in publish order, one at a time.
 *
 * On an ordered queue a message of a message group may be delivered only
 * when no earlier message of its group is unsettled and none of its group
 * is in flight (leased, or being settled by an open transaction); a take
 * hands out at most one message per group.  The gate is built from the
 * tracked list at the start of a take: every message delivered or ready
 * again is tracked, and what lies beyond the scan position is later than
 * all of it.  A message whose publisher has not finished yet (PENDING) has
 * no known group and holds nothing back: publish order is the order in
 * which one publisher's messages were written, and messages of one group
 * published concurrently by several transactions have none between them.
 * Messages without a group are not held back.
 *
 * A message delivered before and not settled (nacked, its lease expired,
 * returned by a rollback or a session end, or tracked again after a
 * restart) stays its group's head: while it waits for its retry the whole
 * group is busy, and once due it goes before any other message of its
 * group, whatever their positions.  Within one lane (a classic queue, a
 * stream partition) it is the lowest unsettled position anyway; across
 * lanes (a stream whose publishers chose partitions for one message group
 * themselves, priorities) positions do not say publish order, and the rule
 * keeps the group to one unsettled delivery at a time: RocketMQ's ordered
 * consumer retries in place (suspends) rather than moving on.
 *
 * The gate costs a walk of
 * the tracked list per take, on ordered queues only; a message held back
 * stays tracked (it counts against mq.max_in_flight).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"

#include "queue/queue_int.h"

typedef struct OrderGroup
{
	uint32		group_hash;		/* hash key */
	bool		busy;			/* one is in flight, or taken by this take */
	uint64		first_ready;	/* lowest position of a ready one, 0: none */
	uint64		head;			/* lowest position of one delivered before and
								 * ready again, 0: none */
} OrderGroup;

static OrderGroup *
gate_group(MqOrderGate *gate, uint32 g)
{
	bool		found;
	OrderGroup *og = hash_search(gate->groups, &g, HASH_ENTER, &found);

	if (!found)
	{
		og->busy = false;
		og->first_ready = 0;
		og->head = 0;
	}
	return og;
}

void
mqq_gate_init(MqOrderGate *gate, MqQueue *q, MqQueueShared *qs, bool active,
			  TimestampTz now)
{
	HASHCTL		ctl;
	dlist_iter	it;

	gate->groups = NULL;
	if (!q->ordered || !active)
		return;
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(OrderGroup);
	ctl.hcxt = CurrentMemoryContext;
	gate->groups = hash_create("queue_ext order gate", 64, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	dlist_foreach(it, &qs->tracked)
	{
		MqTracked  *t = dlist_container(MqTracked, node, it.cur);

		if (t->group_hash == 0)
			continue;
		/* (a lease run out is ready again: browse sees it before a take) */
		if ((t->state == MQ_T_LEASED && t->until > now) || t->state == MQ_T_ACKING)
			gate_group(gate, t->group_hash)->busy = true;
		else if (t->state == MQ_T_READY && t->delivery_count > 0)
		{
			/* delivered before: waiting for its retry, or the head */
			OrderGroup *og = gate_group(gate, t->group_hash);

			if (t->until > now || t->visible_at > now)
				og->busy = true;
			else if (og->head == 0 || t->qpos < og->head)
				og->head = t->qpos;
		}
		else if (t->state == MQ_T_READY || t->state == MQ_T_LEASED)
		{
			OrderGroup *og = gate_group(gate, t->group_hash);

			if (og->first_ready == 0 || t->qpos < og->first_ready)
				og->first_ready = t->qpos;
		}
	}
}

/*
 * May t, ready, be delivered as far as its group goes?  If so (and the
 * caller takes it), its group is busy for the rest of this take.
 */
bool
mqq_gate_pass(MqOrderGate *gate, MqTracked *t)
{
	OrderGroup *og;

	if (gate->groups == NULL || t->group_hash == 0)
		return true;
	og = gate_group(gate, t->group_hash);
	if (og->busy)
		return false;
	if (og->head != 0 ? og->head != t->qpos :
		(og->first_ready != 0 && og->first_ready < t->qpos))
		return false;
	og->busy = true;
	return true;
}

/* t, newly scanned, stays ready (delayed or held back): later ones wait */
void
mqq_gate_note_ready(MqOrderGate *gate, MqTracked *t)
{
	OrderGroup *og;

	if (gate->groups == NULL || t->group_hash == 0)
		return;
	og = gate_group(gate, t->group_hash);
	if (og->first_ready == 0 || t->qpos < og->first_ready)
		og->first_ready = t->qpos;
}

void
mqq_gate_end(MqOrderGate *gate)
{
	if (gate->groups)
		hash_destroy(gate->groups);
}
