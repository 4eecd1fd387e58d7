/*-------------------------------------------------------------------------
 *
 * channel.c
 *	  A channel's two lists: its operations, queued in order (made and
 *	  freed, with the publishes in them and the publisher's pending bytes),
 *	  and its unacked deliveries (looked up and taken by a settle, put back
 *	  by a rollback, freed when settled for good).
 *
 * It owns the lists, not their meaning: it sends nothing to the client
 * and runs no SQL.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdlib.h>
#include <time.h>

/*
 * A publisher faster than PostgreSQL: reading from its socket stops while
 * more than pending_high bytes of its publishes wait, and goes on below a
 * quarter of that (TCP then holds the publisher back).
 */
static void
pub_uncount(PubMsg *m)
{
	Conn	   *c = m->owner;

	if (c == NULL)
		return;
	m->owner = NULL;
	c->pending -= m->body.len;
	if (c->paused && c->pending < cfg.pending_high / 4 && !c->dead && c->bev)
	{
		c->paused = false;
		c->last_recv = time(NULL);
		if (!c->finishing)
		{
			bufferevent_enable(c->bev, EV_READ);
			/* what was read already */
			bufferevent_trigger(c->bev, EV_READ,
								BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
		}
	}
}

/*
 * Free an operation and what it holds: its arguments, prebuilt reply,
 * the publishes of a batch (whose bytes leave the publisher's pending
 * count) and the unacked entries a settle took.
 */
void
op_free(Op *op)
{
	PubMsg	   *m,
			   *mn;

	if (op->args)
		json_object_put(op->args);
	for (m = op->msgs; m; m = mn)
	{
		mn = m->next;
		pub_uncount(m);
		buf_free(&m->body);
		buf_free(&m->props);
		free(m->headers_json);
		free(m->content_type);
		free(m->correlation_id);
		free(m->reply_to);
		free(m);
	}
	while (op->entries)
	{
		Unacked    *e = op->entries;

		op->entries = e->next;
		free(e->queue);
		free(e->receipt);
		free(e);
	}
	buf_free(&op->reply);
	free(op);
}

/* Free one publish (PubMsg) and its content. */
void
pub_free(PubMsg *m)
{
	pub_uncount(m);
	buf_free(&m->body);
	buf_free(&m->props);
	free(m->headers_json);
	free(m->content_type);
	free(m->correlation_id);
	free(m->reply_to);
	free(m);
}

/*
 * Make an operation of the method cls.meth and append it to the channel's
 * queue; it runs in its turn (chan_pump).
 */
Op *
op_new(Chan *ch, enum OpKind kind, uint16_t cls, uint16_t meth)
{
	Op		   *op = calloc(1, sizeof(Op));

	op->kind = kind;
	op->cls = cls;
	op->meth = meth;
	if (ch->ops_tail)
		ch->ops_tail->next = op;
	else
		ch->ops = op;
	ch->ops_tail = op;
	return op;
}

/* put settled entries back, in tag order (a rolled-back transaction) */
void
unacked_restore(Chan *ch, Unacked *list)
{
	while (list)
	{
		Unacked    *e = list,
				  **pp;

		list = e->next;
		for (pp = &ch->unacked; *pp && (*pp)->tag < e->tag; pp = &(*pp)->next)
			;
		e->next = *pp;
		*pp = e;
		ch->n_unacked++;
		if (e->cons)
			e->cons->unacked++;
	}
	ch->unacked_tail = NULL;
	for (list = ch->unacked; list; list = list->next)
		ch->unacked_tail = list;
}

/* settled for good: credit back to their consumers */
void
settle_done_entries(Chan *ch, Unacked *e)
{
	while (e)
	{
		Unacked    *next = e->next;

		free(e->queue);
		free(e->receipt);
		free(e);
		e = next;
	}
	chan_kick(ch);
}

/*
 * Whether tag is the delivery tag of a delivery still unacked on the
 * channel.
 */
bool
ack_tag_known(Chan *ch, uint64_t tag)
{
	Unacked    *e;

	for (e = ch->unacked; e; e = e->next)
		if (e->tag == tag)
			return true;
	return false;
}

/* take the entries a basic.ack/nack/reject settles out of the unacked list */
Unacked *
take_entries(Chan *ch, uint64_t tag, bool multiple)
{
	Unacked    *taken = NULL,
			  **tail = &taken,
			  **pp = &ch->unacked;

	while (*pp)
	{
		Unacked    *e = *pp;

		if ((multiple && (tag == 0 || e->tag <= tag)) || (!multiple && e->tag == tag))
		{
			*pp = e->next;
			e->next = NULL;
			*tail = e;
			tail = &e->next;
			ch->n_unacked--;
		}
		else
			pp = &e->next;
	}
	ch->unacked_tail = NULL;
	for (pp = &ch->unacked; *pp; pp = &(*pp)->next)
		ch->unacked_tail = *pp;
	return taken;
}
