/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  What the gateway keeps track of across connections: its connections,
 *	  and the queues it holds state of (an exclusive queue's owner,
 *	  auto-delete, consumers and their turns, the x-expires timer).
 *
 * It keeps the gateway-side state of queues (exclusive owner,
 * auto-delete, expiry, turns); the queues themselves live in queue_ext.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the connections, newest first */
Conn	   *conns;

/* the queues the gateway keeps state of */
Qreg	   *qregs;

/* The database of c's vhost. */
const char *
conn_db(Conn *c)
{
	return c->db;
}

/*
 * The gateway's state of queue name in db; made if create, else NULL if
 * there is none.
 */
Qreg *
qreg_find(const char *db, const char *name, bool create)
{
	Qreg	   *q;

	for (q = qregs; q; q = q->next)
		if (strcmp(q->db, db) == 0 && strcmp(q->name, name) == 0)
			return q;
	if (!create)
		return NULL;
	q = calloc(1, sizeof(Qreg));
	snprintf(q->db, sizeof(q->db), "%s", db);
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->next = qregs;
	qregs = q;
	return q;
}

/* Forget a queue's state. */
static void
qreg_drop(Qreg *q)
{
	Qreg	  **pp;

	for (pp = &qregs; *pp; pp = &(*pp)->next)
		if (*pp == q)
		{
			Consumer   *t;

			*pp = q->next;
			for (t = q->turn_head; t; t = t->turn_next)
				t->in_turn = false;
			if (q->ignored_args)
				json_object_put(q->ignored_args);
			if (q->expire_ev)
				event_free(q->expire_ev);
			free(q->expire_password);
			free(q);
			return;
		}
}

/*
 * Forget a queue's state when nothing keeps it (owner, consumers,
 * auto-delete, expiry).
 */
void
qreg_maybe_drop(Qreg *q)
{
	if (q->owner == NULL && !q->auto_delete && q->consumers == 0 && q->expires == 0 && !q->known)
		qreg_drop(q);
}

/* the queue's x-expires is forgotten (it was deleted) */
void
qreg_expires_off(Qreg *q)
{
	q->expires = 0;
	if (q->expire_ev)
		event_free(q->expire_ev);
	q->expire_ev = NULL;
	free(q->expire_password);
	q->expire_password = NULL;
}

/*
 * The queue was used (declared, read by basic.get, its last consumer
 * went): its x-expires starts again; with consumers it does not run.
 */
void
qreg_touch(Qreg *q)
{
	struct timeval tv;

	if (q == NULL || q->expires <= 0 || q->expire_ev == NULL)
		return;
	if (q->consumers > 0)
	{
		evtimer_del(q->expire_ev);
		return;
	}
	tv.tv_sec = q->expires / 1000;
	tv.tv_usec = (q->expires % 1000) * 1000;
	evtimer_add(q->expire_ev, &tv);
}

/* the queue is locked for c: exclusive to another connection */
bool
qreg_locked(Conn *c, const char *name)
{
	Qreg	   *q = qreg_find(conn_db(c), name, false);

	return q && q->owner && q->owner != c;
}

/*
 * x-expires: the queue went unused for that long (no consumer here, no
 * basic.get, no declare): delete it, as RabbitMQ does, in a session of
 * the declarer's own that ends when done (the declaring connection may be
 * gone).  Only this gateway's use counts: the expiry is its own timer,
 * gone if the gateway restarts.
 */
void
qreg_expired(evutil_socket_t fd, short what, void *arg)
{
	Qreg	   *q = arg;

	(void) fd;
	(void) what;
	if (q->consumers > 0)
		return;					/* re-armed when the last one goes */
	ctl_oneshot(q->expire_user, q->expire_password, q->db[0] ? q->db : NULL,
				"SELECT mq.queue_delete($1)", q->name);
	lognote("queue \"%s\" unused for its x-expires (%lld ms): deleted", q->name,
		   (long long) q->expires);
	qreg_expires_off(q);
	q->known = false;
	qreg_maybe_drop(q);
}
