/*-------------------------------------------------------------------------
 *
 * logins.c
 *	  The bounds on logins in progress: at most cfg.max_logins handshakes
 *	  between connection.start-ok and connection.open-ok at once, at most
 *	  cfg.max_logins_per_addr of them from one client address; a login over
 *	  a bound waits for a slot, in arrival order.
 *
 *	  Owns the two lists of connections (logging in, waiting) and the count.
 *	  It starts nothing itself: a waiting login is started through the
 *	  callback its connection gave login_begin (connection.c's), so that this
 *	  file, which teardown.c also calls, depends on no file above it.  It
 *	  must not touch a connection's socket or sessions.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <string.h>

/*
 * The connections whose login is in progress (in_login), and those waiting
 * for a slot, in arrival order: two lists through login_next/login_pprev
 * (a connection is on one at most), so that leaving one costs nothing
 * however long the queue of a flood, and counting an address's logins in
 * progress costs at most max_logins steps.
 */
static int	logins_in_progress = 0;
static Conn *logging_in = NULL;
static Conn *login_queue = NULL;
static Conn **login_queue_tailp = &login_queue;

/* Take c out of the list of logins in progress or waiting. */
static void
login_unlink(Conn *c)
{
	if (c->login_pprev == NULL)
		return;
	*c->login_pprev = c->login_next;
	if (c->login_next)
		c->login_next->login_pprev = c->login_pprev;
	else if (login_queue_tailp == &c->login_next)
		login_queue_tailp = c->login_pprev;
	c->login_next = NULL;
	c->login_pprev = NULL;
}

/* why c's login may not start now (into why), or NULL: it may */
static const char *
login_bound(Conn *c, char *why, size_t len)
{
	int			from_addr = 0;
	Conn	   *o;

	if (logins_in_progress >= cfg.max_logins)
	{
		snprintf(why, len, "%d logins in progress (max_logins)", logins_in_progress);
		return why;
	}
	for (o = logging_in; o; o = o->login_next)
		if (strcmp(o->addr, c->addr) == 0)
			from_addr++;
	if (from_addr >= cfg.max_logins_per_addr)
	{
		snprintf(why, len, "%d logins in progress from %s (max_logins_per_address)",
				 from_addr, c->addr);
		return why;
	}
	return NULL;
}

/* Count c as logging in and start its login through its callback. */
static void
login_start(Conn *c)
{
	c->in_login = true;
	logins_in_progress++;
	c->login_next = logging_in;
	if (logging_in)
		logging_in->login_pprev = &c->login_next;
	c->login_pprev = &logging_in;
	logging_in = c;
	c->login_start(c);
}

/*
 * The login of c starts (start(c)) if under the bounds, else it waits for a
 * slot (its handshake time limit still runs: a client left waiting is
 * closed then) and start(c) is called when one is free.
 */
void
login_begin(Conn *c, void (*start) (Conn *c))
{
	char		why[200];

	c->login_start = start;
	if (login_bound(c, why, sizeof(why)) == NULL)
	{
		login_start(c);
		return;
	}
	logmsg("%s: login of \"%s\" waits: %s", c->peer, c->user, why);
	c->state = C_LOGIN_WAIT;
	c->login_next = NULL;
	c->login_pprev = login_queue_tailp;
	*login_queue_tailp = c;
	login_queue_tailp = &c->login_next;
}

/*
 * c's login is over (open, refused, failed) or the connection is gone: the
 * waiting logins that are under the bounds now start.
 */
void
login_done(Conn *c)
{
	Conn	   *w,
			   *next;
	char		why[200];

	login_unlink(c);
	if (!c->in_login)
		return;
	c->in_login = false;
	logins_in_progress--;
	for (w = login_queue; w && logins_in_progress < cfg.max_logins; w = next)
	{
		next = w->login_next;
		if (w->dead || w->state != C_LOGIN_WAIT || login_bound(w, why, sizeof(why)) != NULL)
			continue;
		login_unlink(w);
		login_start(w);
	}
}
