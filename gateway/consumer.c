/*-------------------------------------------------------------------------
 *
 * consumer.c
 *	  A channel's consumers: their credit (prefetch), the turns consumers of
 *	  one queue take to poll, the long poll started, its consume-ok, and a
 *	  consumer cancelled, removed or resumed.
 *
 * It decides when a consumer polls; the poll's session and its rows are
 * consumer_session.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

/*
 * How many deliveries cons may take now: its prefetch and the channel's
 * global prefetch, less what is unacked (credited settles count back).
 */
static int
cons_credit(Consumer *cons)
{
	Chan	   *ch = cons->ch;
	int			n = 100;

	if (cons->prefetch > 0 && cons->prefetch - (cons->unacked - cons->credited) < n)
		n = cons->prefetch - (cons->unacked - cons->credited);
	if (ch->prefetch_global > 0 && ch->prefetch_global - ch->n_unacked - ch->n_asked < n)
		n = ch->prefetch_global - ch->n_unacked - ch->n_asked;
	return n;
}

/*
 * Round-robin between consumers of one queue: every poll of a queue wakes
 * at the same commit, and the first to take would get a whole batch (or,
 * with prefetch 1, whoever's round trip is shortest).  So when several
 * consumers of a queue are here, one poll of it runs at a time and the
 * others wait in line: the next in line polls as soon as the running one
 * returns, the one that returned polls again behind them.  A turn takes
 * one message, more while the queue has a backlog (a turn that got all it
 * asked doubles the next, up to the credit), so a trickle is shared
 * message by message, as RabbitMQ does, and a backlog in batches.
 */
void
turn_pass(Qreg *q)
{
	while (q->poller == NULL && q->turn_head)
	{
		Consumer   *next = q->turn_head;

		q->turn_head = next->turn_next;
		if (q->turn_head == NULL)
			q->turn_tail = NULL;
		next->in_turn = false;
		next->turn_next = NULL;
		cons_poll(next);		/* takes the turn, or cannot poll now */
	}
}

/*
 * A second consumer of the queue came: a poll that started while there was
 * one runs outside the turns, with its whole credit, and would take a
 * whole batch; it is woken (it returns what it took, mostly nothing) and
 * polls again in turn.
 */
void
turn_start(Consumer *newcons)
{
	Conn	   *c;
	int			i;
	Qreg	   *q = qreg_find(conn_db(newcons->ch->conn), newcons->queue, false);

	if (q == NULL || newcons->stream)
		return;
	for (c = conns; c; c = c->next)
	{
		if (c->dead || c->chans == NULL || strcmp(c->db, newcons->ch->conn->db) != 0)
			continue;
		for (i = 1; i <= c->channel_max; i++)
		{
			Chan	   *ch = c->chans[i];
			Consumer   *cons;

			if (!ch || ch->state != CH_OPEN)
				continue;
			for (cons = ch->consumers; cons; cons = cons->next)
				if (cons != newcons && cons != q->poller && cons->polling && !cons->cancelling &&
					!cons->cancelled && !cons->stream && cons->asked > 1 &&
					strcmp(cons->queue, newcons->queue) == 0)
					cons_wake(cons);
		}
	}
}

/* the consumer goes: out of the line, and its turn passes */
static void
turn_leave(Consumer *cons)
{
	Qreg	   *q = qreg_find(conn_db(cons->ch->conn), cons->queue, false);
	Consumer  **pp;

	if (q == NULL)
	{
		cons->in_turn = false;
		return;
	}
	if (cons->in_turn)
	{
		q->turn_tail = NULL;
		for (pp = &q->turn_head; *pp;)
		{
			if (*pp == cons)
				*pp = cons->turn_next;
			else
			{
				q->turn_tail = *pp;
				pp = &(*pp)->turn_next;
			}
		}
		cons->in_turn = false;
		cons->turn_next = NULL;
	}
	if (q->poller == cons)
	{
		q->poller = NULL;
		turn_pass(q);
	}
}

/* Deliver the rows of a poll's result to cons's client, each tracked for its ack. */
void
cons_deliver_rows(Consumer *cons, PGresult *res)
{
	Chan	   *ch = cons->ch;
	int			i;

	for (i = 0; i < PQntuples(res); i++)
	{
		uint64_t	tag = track_delivery(ch, res, i, cons, cons->no_ack);

		method_begin(ch->id, AMQP_BASIC, 60);
		buf_shortstr(&out, cons->tag);
		buf_u64(&out, tag);
		buf_u8(&out, *PQgetvalue(res, i, COL_REDELIVERED) ? 1 : 0);
		buf_shortstr(&out, PQgetvalue(res, i, COL_EXCHANGE));
		buf_shortstr(&out, PQgetvalue(res, i, COL_RK));
		frame_send(ch->conn);
		send_row_content(ch, res, i);
	}
}

/*
 * The channel's flow is on again: the rows a poll brought while it was off
 * go out now (before cons polls again).
 */
void
cons_deliver_held(Consumer *cons)
{
	PGresult   *held = cons->held;

	if (held == NULL || !cons->ch->flow)
		return;
	cons->held = NULL;
	cons_deliver_rows(cons, held);
	PQclear(held);
}

/*
 * Start cons's long poll if it may: ready, credit, the channel flowing,
 * the client keeping up, and its turn among the queue's consumers.  A
 * stream consumer does not take turns.
 */
void
cons_poll(Consumer *cons)
{
	Chan	   *ch = cons->ch;
	Conn	   *c = ch->conn;
	char		nbuf[16],
				wbuf[32];
	const char *vals[6];
	int			n;

	if (!cons->ready || cons->polling || cons->cancelled || cons->cancelling)
		return;
	if (ch->state != CH_OPEN || !ch->flow || c->state != C_OPEN)
		return;
	cons_deliver_held(cons);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) > cfg.out_high)
		return;					/* a slow client: resumed by conn_written */
	n = cons_credit(cons);
	if (n <= 0)
		return;
	/*
	 * Several consumers of one queue take turns to poll it (why: above
	 * turn_pass); a stream consumer reads at its own offset and takes none.
	 */
	if (!cons->stream)
	{
		Qreg	   *q = qreg_find(conn_db(c), cons->queue, false);

		if (q && (q->consumers > 1 || (q->poller && q->poller != cons)))
		{
			if (q->poller && q->poller != cons)
			{
				/* in line for its turn */
				if (!cons->in_turn)
				{
					cons->in_turn = true;
					cons->turn_next = NULL;
					if (q->turn_tail)
						q->turn_tail->turn_next = cons;
					else
						q->turn_head = cons;
					q->turn_tail = cons;
				}
				return;
			}
			q->poller = cons;
			if (q->batch < 1)
				q->batch = 1;
			if (n > q->batch)
				n = q->batch;
		}
	}
	snprintf(nbuf, sizeof(nbuf), "%d", n);
	snprintf(wbuf, sizeof(wbuf), "%d seconds", cons->first_poll ? 0 : cfg.poll_wait);
	vals[0] = cons->queue;
	vals[1] = nbuf;
	vals[2] = wbuf;
	vals[3] = cfg.lease;
	vals[4] = cons->no_ack ? "true" : "false";
	vals[5] = cons->stream ? cons->group : NULL;
	cons->polling = true;
	cons->woken = false;
	cons->asked = n;
	ch->n_asked += n;
	pg_send(cons->pg,
			"SELECT " DELIVERY_COLUMNS " FROM mq.consume($1, $2::int, wait => $3::interval, "
			"lease => $4::interval, auto_ack => $5::boolean, group_name => $6)",
			6, NULL, vals, NULL, NULL, 1, cons->on_polled, cons);
}

/*
 * End cons's running long poll now, without an error: the connection's
 * control session runs mq._consume_wake on the poll's backend, as the
 * same role, and the poll returns what it has to its on_polled handler
 * (consumer_session.c's cons_polled, which delivers it, or drops it when
 * the session was closed meanwhile: its end returns those rows).
 * Cancelling the statement instead would log
 * "ERROR: canceling statement due to user request" in the server's log,
 * and closing its session "FATAL: connection to client lost".  A poll
 * the wake does not reach ends within --poll-wait anyway.
 */
void
cons_wake(Consumer *cons)
{
	char		pid[16];

	if (!cons->polling || cons->woken || cons->pg == NULL || cons->pg->pg == NULL ||
		PQbackendPID(cons->pg->pg) <= 0)
		return;
	cons->woken = true;
	snprintf(pid, sizeof(pid), "%d", PQbackendPID(cons->pg->pg));
	ctl_job(cons->ch->conn, "SELECT mq._consume_wake($1::int)", pid, NULL);
}

/*
 * Free a removed consumer: its session (once its poll is over: woken
 * first), its place in the queue's turns, its unacked deliveries no longer
 * counted against it.
 */
static void
cons_free(Consumer *cons)
{
	Chan	   *ch = cons->ch;
	Consumer  **pp;

	for (pp = &ch->consumers; *pp; pp = &(*pp)->next)
		if (*pp == cons)
		{
			*pp = cons->next;
			break;
		}
	if (cons->polling)
		ch->n_asked -= cons->asked;
	turn_leave(cons);
	/* settles in flight or in the open transaction no longer credit it */
	{
		Op		   *op;
		Unacked    *e;

		for (op = ch->ops; op; op = op->next)
			for (e = op->entries; e; e = e->next)
				if (e->cons == cons)
					e->cons = NULL;
		for (e = ch->tx_settled; e; e = e->next)
			if (e->cons == cons)
				e->cons = NULL;
	}
	if (cons->held)
		PQclear(cons->held);	/* back to the queue with the session */
	cons_wake(cons);
	pg_close(cons->pg);			/* ends when the poll returns */
	if (cons->stream)
		ctl_job(ch->conn, "SELECT mq.group_delete($1, $2, drop_dead_letters => true)",
				cons->queue, cons->group);
	if (cons->offset_spec)
		json_object_put(cons->offset_spec);
	free(cons);
}

/* the consume-ok cons waits for, if it does: sent (true) */
bool
cons_consume_ok(Consumer *cons)
{
	Chan	   *ch = cons->ch;

	if (!cons->ok_pending)
		return false;
	cons->ok_pending = false;
	if (!cons->ok_nowait)
	{
		method_begin(ch->id, AMQP_BASIC, 21);
		buf_shortstr(&out, cons->tag);
		frame_send(ch->conn);
	}
	return true;
}

/*
 * A consumer stops: out of the registry (an auto-delete queue goes with its
 * last consumer), the broker's basic.cancel if notify (its queue was
 * deleted).  Unless force (the channel goes) or notify, its session stays
 * while it holds unacked deliveries: they are the channel's until acked.
 */
void
cons_remove(Consumer *cons, bool notify, bool force)
{
	Chan	   *ch = cons->ch;
	Conn	   *c = ch->conn;
	void		(*done) (Chan *ch) = cons->on_consume_done;
	bool		finish_consume = false;

	/*
	 * gone before its session was ready (its queue deleted meanwhile):
	 * consume-ok first, and the channel's basic.consume is done
	 */
	if (cons->ok_pending)
	{
		if (!force && ch->state == CH_OPEN)
			finish_consume = cons_consume_ok(cons);
		cons->ok_pending = false;
	}
	if (!cons->cancelled)
	{
		Qreg	   *q = qreg_find(conn_db(c), cons->queue, false);

		cons->cancelled = true;
		if (q)
		{
			if (q->consumers > 0)
				q->consumers--;
			if (q->exclusive_consumer == cons)
				q->exclusive_consumer = NULL;
			qreg_touch(q);		/* its x-expires starts with the last one gone */
			if (q->auto_delete && q->consumers == 0 && q->had_consumer && !notify)
			{
				ctl_job(c, "SELECT mq.queue_delete($1)", q->name, NULL);
				q->auto_delete = false;
				q->known = false;
			}
			qreg_maybe_drop(q);
		}
		if (notify && c->cancel_notify && ch->state == CH_OPEN)
		{
			method_begin(ch->id, AMQP_BASIC, 30);
			buf_shortstr(&out, cons->tag);
			buf_u8(&out, 1);	/* nowait */
			frame_send(c);
		}
	}
	if (!force && !notify && cons->unacked > 0 && ch->state == CH_OPEN)
	{
		if (cons->polling)
			cons_wake(cons);
		return;
	}
	/* its deliveries are gone with its session: forget their tags */
	{
		Unacked   **pp = &ch->unacked;

		ch->unacked_tail = NULL;
		while (*pp)
		{
			Unacked    *e = *pp;

			if (e->cons == cons)
			{
				*pp = e->next;
				ch->n_unacked--;
				free(e->queue);
				free(e->receipt);
				free(e);
			}
			else
			{
				ch->unacked_tail = e;
				pp = &e->next;
			}
		}
	}
	cons_free(cons);
	if (finish_consume)
		done(ch);
}

/* cancel the consumers of a queue being deleted, everywhere */
void
cancel_queue_consumers(const char *db, const char *queue)
{
	Conn	   *c;
	int			i;

	for (c = conns; c; c = c->next)
	{
		if (c->dead || c->chans == NULL || strcmp(c->db, db) != 0)
			continue;
		for (i = 1; i <= c->channel_max; i++)
		{
			Chan	   *ch = c->chans[i];
			Consumer   *cons,
					   *next;

			if (!ch || ch->state != CH_OPEN)
				continue;
			for (cons = ch->consumers; cons; cons = next)
			{
				next = cons->next;
				if (!cons->cancelled && strcmp(cons->queue, queue) == 0)
				{
					/* stop its poll first: queue_delete waits for it */
					if (cons->polling)
						cons_wake(cons);
					cons_remove(cons, true, false);
				}
			}
		}
	}
}

/* resume the consumers of a connection (flow, credit, output drained) */
void
conn_kick(Conn *c)
{
	int			i;

	if (c->chans == NULL)
		return;
	for (i = 1; i <= c->channel_max; i++)
	{
		Chan	   *ch = c->chans[i];
		Consumer   *cons;

		if (!ch || ch->state != CH_OPEN)
			continue;
		for (cons = ch->consumers; cons; cons = cons->next)
			cons_poll(cons);
	}
}

/*
 * Something changed for the channel's consumers (credit back, flow on):
 * each polls if it now may.
 */
void
chan_kick(Chan *ch)
{
	Consumer   *cons,
			   *next;

	for (cons = ch->consumers; cons; cons = next)
	{
		next = cons->next;
		if (cons->cancelled && cons->unacked == 0)
			cons_free(cons);
		else
			cons_poll(cons);
	}
}
