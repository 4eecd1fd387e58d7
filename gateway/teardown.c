/*-------------------------------------------------------------------------
 *
 * teardown.c
 *	  How things end: a channel exception and a connection exception (their
 *	  close frames), a statement's failure or a lost session turned into
 *	  one of them, a channel's sessions and consumers released and the channel freed, a
 *	  client's connection.close finished, a connection destroyed.
 *
 * It ends channels and connections; it decides no error of its own:
 * its callers choose the code and text.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>

/*
 * A statement of the channel failed: a channel exception with the
 * SQLSTATE's reply code, or a connection exception when the session itself
 * is gone (the server restarting: 320 CONNECTION_FORCED).
 */
void
chan_sql_error(Chan *ch, PGresult *res, Op *op)
{
	char		text[256];
	int			code;

	if (res == NULL)
	{
		conn_error(ch->conn, AMQP_CONNECTION_FORCED,
				   "CONNECTION_FORCED - PostgreSQL session lost", op ? op->cls : 0, op ? op->meth : 0);
		return;
	}
	code = sqlstate_code(res_state(res));
	reply_text_hint(text, sizeof(text), code, res_message(res), res_hint(res));
	if (code == AMQP_INTERNAL_ERROR)
		conn_error(ch->conn, code, text, op ? op->cls : 0, op ? op->meth : 0);
	else
		chan_error(ch, code, text, op ? op->cls : 0, op ? op->meth : 0);
}

/*
 * The channel's session was lost: the connection cannot go on without it.
 */
void
chan_lost(void *arg)
{
	Chan	   *ch = arg;

	conn_error(ch->conn, AMQP_CONNECTION_FORCED,
			   "CONNECTION_FORCED - PostgreSQL session lost", 0, 0);
}

/* give back everything of the channel: its sessions end (queue_ext returns
 * their unacked deliveries at once), its consumers go */
void
chan_release(Chan *ch)
{
	Unacked    *e;

	/* consumers first: their removal looks at the channel's lists */
	while (ch->consumers)
		cons_remove(ch->consumers, false, true);
	/* closing the sessions returns their unacked deliveries (queue_ext) */
	chan_session_drop(ch);
	pg_close(ch->getpg);
	ch->getpg = NULL;
	ch->getpg_ready = false;
	while (ch->ops)
	{
		Op		   *op = ch->ops;

		ch->ops = op->next;
		op_free(op);
	}
	ch->ops_tail = NULL;
	ch->op_running = false;
	while ((e = ch->unacked))
	{
		ch->unacked = e->next;
		free(e->queue);
		free(e->receipt);
		free(e);
	}
	ch->unacked_tail = NULL;
	/* settles of an open transaction die with its session */
	while ((e = ch->tx_settled))
	{
		ch->tx_settled = e->next;
		free(e->queue);
		free(e->receipt);
		free(e);
	}
	if (ch->pub)
	{
		pub_free(ch->pub);
		ch->pub = NULL;
	}
	ch->content = 0;
}

/* chan_free's deferred half, run from the loop. */
static void
chan_free_cb(evutil_socket_t fd, short what, void *arg)
{
	free(arg);
}

/* the struct goes from the event loop: callers up the stack may look at it */
void
chan_free(Chan *ch)
{
	struct timeval zero = {0, 0};

	chan_release(ch);
	ch->conn->chans[ch->id] = NULL;
	ch->state = CH_CLOSING;
	event_base_once(gw_base, -1, EV_TIMEOUT, chan_free_cb, ch, &zero);
}

/*
 * A channel exception: channel.close with code and text, and the channel
 * waits for close-ok with its sessions released.  When the client's own
 * close is queued, that close is answered instead.
 */
void
chan_error(Chan *ch, int code, const char *text, int cls, int meth)
{
	if (ch->state != CH_OPEN)
		return;
	logdebug("%s: channel %d: %s", ch->conn->peer, ch->id, text);
	if (ch->client_closing)
	{
		/* the client closes it anyway: its close-ok */
		Conn	   *c = ch->conn;

		if (!c->client_closing)
			send_simple(c, ch->id, AMQP_CHANNEL, 41);
		chan_free(ch);
		if (c->client_closing)
			conn_close_finish(c);
		return;
	}
	method_begin(ch->id, AMQP_CHANNEL, 40);
	buf_u16(&out, code);
	buf_shortstr(&out, text);
	buf_u16(&out, cls);
	buf_u16(&out, meth);
	frame_send(ch->conn);
	ch->state = CH_CLOSING;
	chan_release(ch);
}

/* The client did not answer our connection.close in time: destroyed. */
void
close_timeout(evutil_socket_t fd, short what, void *arg)
{
	conn_destroy(arg);
}

/*
 * Why c ends, for the line conn_destroy logs: the first reason given
 * stands (a dropped socket after our connection.close is still that
 * close).  warn: a warning (logged also with --quiet), else info.
 */
void
conn_reason(Conn *c, bool warn, const char *fmt,...)
{
	va_list		ap;

	if (c->close_reason[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(c->close_reason, sizeof(c->close_reason), fmt, ap);
	va_end(ap);
	c->close_warn = warn;
}

/*
 * The line of the log that says a connection ended and why, with whom
 * (user and vhost once known): at info when the client closed it or the
 * gateway stops, else a warning.
 */
static void
conn_log_close(Conn *c)
{
	char		who[600];
	const char *why = c->close_reason[0] ? c->close_reason : "connection closed";

	if (c->opened)
		snprintf(who, sizeof(who), "vhost '%s', user '%s'", c->vhost[0] ? c->vhost : "/",
				 c->user);
	else if (c->user[0] != '\0')
		snprintf(who, sizeof(who), "user '%s', before connection.open-ok", c->user);
	else
		snprintf(who, sizeof(who), "before login");
	if (c->close_warn)
		logmsg("%s: closing AMQP connection (%s -> %s, %s): %s", c->peer, c->peer, c->local,
			   who, why);
	else
		loginfo("%s: closing AMQP connection (%s -> %s, %s): %s", c->peer, c->peer, c->local,
				who, why);
}

/* a connection exception: close frame, then the socket after close-ok */
void
conn_error(Conn *c, int code, const char *text, int cls, int meth)
{
	struct timeval tv = {3, 0};
	int			i;

	if (c->dead || c->state == C_CLOSING)
		return;
	conn_reason(c, code != AMQP_REPLY_SUCCESS, "closed by the server: %d %s", code, text);
	method_begin(0, AMQP_CONNECTION, 50);
	buf_u16(&out, code);
	buf_shortstr(&out, text);
	buf_u16(&out, cls);
	buf_u16(&out, meth);
	frame_send(c);
	c->state = C_CLOSING;
	if (c->chans)
		for (i = 1; i <= c->channel_max; i++)
			if (c->chans[i])
				chan_release(c->chans[i]);
	c->close_timer = evtimer_new(gw_base, close_timeout, c);
	evtimer_add(c->close_timer, &tv);
}

/*
 * c's exclusive queues go (their deletion queued on its control session),
 * and the consumers of them; false if it had none.
 */
static bool
conn_drop_exclusive(Conn *c)
{
	Qreg	   *q,
			   *next;
	bool		any = false;

	for (q = qregs; q; q = next)
	{
		next = q->next;
		if (q->owner == c)
		{
			ctl_job(c, "SELECT mq.queue_delete($1)", q->name, NULL);
			cancel_queue_consumers(q->db, q->name);
			q->owner = NULL;
			q->auto_delete = false;
			q->known = false;
			qreg_maybe_drop(q);
			any = true;
		}
	}
	return any;
}

/* the deletions of c's exclusive queues are over: on with the close */
static void
exclusive_dropped(Conn *c, int chan)
{
	c->exclusive_waiting = false;
	conn_close_finish(c);
}

/*
 * A client's connection.close: close-ok once its channels are done and its
 * exclusive queues deleted, so that a client that declares the queue again
 * after the close-ok (another connection) never finds it (RESOURCE_LOCKED).
 */
void
conn_close_finish(Conn *c)
{
	int			i;

	if (c->dead || c->chans == NULL)
		return;
	for (i = 1; i <= c->channel_max; i++)
		if (c->chans[i])
			return;
	if (c->finishing)
		return;					/* done already */
	/*
	 * Called again meanwhile (the last channel's end, then the close's own
	 * call): the close-ok still waits for the deletions.
	 */
	if (c->exclusive_waiting)
		return;
	if (!c->exclusive_dropped)
	{
		c->exclusive_dropped = true;
		/*
		 * The barrier's done runs whatever the deletions' results (set
		 * first: a session that fails at once runs it before we return).
		 */
		c->exclusive_waiting = true;
		if (conn_drop_exclusive(c) &&
			ctl_job_then(c, "SELECT 1", exclusive_dropped, 0))
			return;
		c->exclusive_waiting = false;
		if (c->finishing)
			return;
	}
	send_simple(c, 0, AMQP_CONNECTION, 51);
	c->finishing = true;
	c->linger = true;
	/* the socket goes once the close-ok is written (conn_written) */
	bufferevent_disable(c->bev, EV_READ);
}

/*
 * A socket after the close handshake: read and dropped until the client
 * closes it, or for at most LINGER_MAX_SECS (RabbitMQ: the heartbeat
 * timeout, at most 30 s), never written to.  Closing it at once would
 * reset it under a client still sending (a publish crossing the close),
 * and the client could lose the close-ok.
 */
#define LINGER_MAX_SECS 30

typedef struct Linger
{
	evutil_socket_t fd;
	struct event *rd;
	struct event *timer;
} Linger;

static void
linger_end(Linger *l)
{
	event_free(l->rd);
	event_free(l->timer);
	evutil_closesocket(l->fd);
	free(l);
}

/* input after the close: dropped; the client's close (or an error) ends it */
static void
linger_read(evutil_socket_t fd, short what, void *arg)
{
	Linger	   *l = arg;
	char		buf[8192];

	for (;;)
	{
		ssize_t		n = recv(fd, buf, sizeof(buf), 0);

		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		linger_end(l);
		return;
	}
}

static void
linger_timeout(evutil_socket_t fd, short what, void *arg)
{
	linger_end(arg);
}

/* c's socket (a duplicate of it) lingers after c is gone */
static void
conn_linger(Conn *c)
{
	struct timeval tv = {LINGER_MAX_SECS, 0};
	evutil_socket_t fd = dup(bufferevent_getfd(c->bev));
	Linger	   *l;

	if (fd < 0)
		return;
	l = calloc(1, sizeof(Linger));
	if (l == NULL)
	{
		close(fd);
		return;
	}
	if (c->heartbeat > 0 && c->heartbeat < LINGER_MAX_SECS)
		tv.tv_sec = c->heartbeat;
	l->fd = fd;
	l->rd = event_new(gw_base, fd, EV_READ | EV_PERSIST, linger_read, l);
	l->timer = evtimer_new(gw_base, linger_timeout, l);
	event_add(l->rd, NULL);
	evtimer_add(l->timer, &tv);
}

/* conn_destroy's deferred half, run from the loop. */
static void
conn_free_cb(evutil_socket_t fd, short what, void *arg)
{
	Conn	   *c = arg;

	free(c->password);
	free(c->chans);
	free(c);
}

/* the socket is gone: end everything of the connection */
void
conn_destroy(Conn *c)
{
	struct timeval zero = {0, 0};
	Conn	  **pp;
	int			i;

	if (c->dead)
		return;
	c->dead = true;				/* nothing more is written to it */
	login_done(c);
	conn_log_close(c);
	if (c->chans)
		for (i = 1; i <= c->channel_max; i++)
			if (c->chans[i])
				chan_free(c->chans[i]);
	conn_drop_exclusive(c);
	if (c->ctl)
	{
		ctl_orphan(c->ctl);
		c->ctl = NULL;
	}
	for (pp = &conns; *pp; pp = &(*pp)->next)
		if (*pp == c)
		{
			*pp = c->next;
			break;
		}
	if (c->hb)
		event_free(c->hb);
	if (c->close_timer)
		event_free(c->close_timer);
	if (c->handshake_timer)
		event_free(c->handshake_timer);
	if (c->linger)
		conn_linger(c);
	bufferevent_free(c->bev);
	c->bev = NULL;
	event_base_once(gw_base, -1, EV_TIMEOUT, conn_free_cb, c, &zero);
}
