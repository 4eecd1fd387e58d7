/*-------------------------------------------------------------------------
 *
 * pgsess.c
 *	  Asynchronous libpq sessions on libevent for mq-amqp.
 *
 * Connecting (PQconnectStartParams / PQconnectPoll) and queries
 * (PQsendQueryParams / PQflush / PQconsumeInput / PQgetResult) never block:
 * the session's socket is watched by the gateway's event base.  One
 * statement at a time per session; its callback gets the statement's result
 * (NULL when the session was lost) and must not keep it.
 *
 * Sessions that are done with can be given back to a pool of idle ones
 * (pg_pool_put), under a key of the caller's, and taken again
 * (pg_pool_take) instead of connecting anew.
 *
 * It knows libpq and libevent only, nothing of AMQP: callers give SQL
 * and get results.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void pg_event(evutil_socket_t fd, short what, void *arg);
static void pg_drain(PgSess *s, short what);

/* the sessions not freed yet: open, or closed and ending (pg_close) */
static int	n_sessions = 0;
static void pool_unlink(PgSess *s);

/*
 * The pool of idle sessions: at most POOL_IDLE_MAX per key (a role, its
 * password and a database: the caller's), each closed after POOL_IDLE_SECS
 * unused, so that a gateway without clients holds no session for long.
 */
#define POOL_IDLE_MAX	32
#define POOL_IDLE_SECS	10

static PgSess *pool_head;

/*
 * A notice of the server: WARNINGs are logged, with their hint (AMQP has no
 * way to show them to the client: a quorum queue declared where every
 * publish will fail, for one), the rest with --verbose
 */
static void
pg_notice(void *arg, const PGresult *res)
{
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *message = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);

	if (severity && strcmp(severity, "WARNING") == 0)
		logmsg("server warning: %s%s%s", message ? message : "",
			   hint ? " HINT: " : "", hint ? hint : "");
	else
		logdebug("server notice: %s%s%s", message ? message : "",
				 hint ? " HINT: " : "", hint ? hint : "");
}

/*
 * Watch the session's socket for reading, and for writing if want_write
 * (the socket may change while connecting).
 */
static void
pg_watch(PgSess *s, bool want_write)
{
	int			fd = PQsocket(s->pg);

	if (s->rev == NULL || event_get_fd(s->rev) != fd)
	{
		if (s->rev)
			event_free(s->rev);
		if (s->wev)
			event_free(s->wev);
		s->rev = event_new(gw_base, fd, EV_READ | EV_PERSIST, pg_event, s);
		s->wev = event_new(gw_base, fd, EV_WRITE, pg_event, s);
		event_add(s->rev, NULL);
	}
	if (want_write)
		event_add(s->wev, NULL);
	else
		event_del(s->wev);
}

/* Free the session: its events, pending result and connection. */
static void
pg_free(PgSess *s)
{
	pool_unlink(s);
	if (s->pool_ev)
		event_free(s->pool_ev);
	if (s->tev)
		event_free(s->tev);
	if (s->rev)
		event_free(s->rev);
	if (s->wev)
		event_free(s->wev);
	if (s->dev)
		event_free(s->dev);
	n_sessions--;
	if (s->res)
		PQclear(s->res);
	if (s->pg)
		PQfinish(s->pg);
	free(s);
}

/*
 * Report a connection that failed at once, from the loop (the caller of
 * pg_connect must not be called back before it returns).
 */
static void
pg_connect_failed_cb(evutil_socket_t fd, short what, void *arg)
{
	PgSess	   *s = arg;

	s->in_cb = true;
	s->on_connect(s->arg, false, s->pg ? PQerrorMessage(s->pg) : "out of memory");
	s->in_cb = false;
	if (s->closed && !s->draining)
		pg_free(s);
}

/* The connection took longer than connect_timeout: it failed. */
static void
pg_connect_timeout(evutil_socket_t fd, short what, void *arg)
{
	PgSess	   *s = arg;

	if (!s->connecting || s->closed)
		return;
	s->connecting = false;
	event_del(s->rev);
	event_del(s->wev);
	s->in_cb = true;
	s->on_connect(s->arg, false, "timeout expired connecting to the PostgreSQL server");
	s->in_cb = false;
	if (s->closed && !s->draining)
		pg_free(s);
}

/*
 * The connection parameters of a session: --dbname's, but for user,
 * password, application_name and (when given) dbname; keys and vals hold 64,
 * options 1024 bytes.  A NULL password is none.
 */
static void
session_params(const char **keys, const char **vals, char *options, const char *user,
			   const char *password, const char *dbname, bool check_client)
{
	int			n = 0;
	PQconninfoOption *o;
	const char *base_options = NULL;

	for (o = gw_conninfo; o && o->keyword; o++)
	{
		if (o->val == NULL || n >= 56)
			continue;
		if (strcmp(o->keyword, "user") == 0 || strcmp(o->keyword, "password") == 0 ||
			strcmp(o->keyword, "application_name") == 0 ||
			(dbname && strcmp(o->keyword, "dbname") == 0))
			continue;
		if (strcmp(o->keyword, "options") == 0)
		{
			base_options = o->val;
			continue;
		}
		keys[n] = o->keyword;
		vals[n++] = o->val;
	}
	keys[n] = "user";
	vals[n++] = user;
	if (password)
	{
		keys[n] = "password";
		vals[n++] = password;
	}
	if (dbname)
	{
		keys[n] = "dbname";
		vals[n++] = dbname;
	}
	keys[n] = "application_name";
	vals[n++] = "mq-amqp";
	snprintf(options, 1024, "%s%s", base_options ? base_options : "",
			 check_client ? " -c client_connection_check_interval=100" : "");
	if (options[0])
	{
		keys[n] = "options";
		vals[n++] = options;
	}
	keys[n] = NULL;
	vals[n] = NULL;
}

/*
 * A connection made at once, blocking (start-up checks only, before the
 * event loop runs): the caller looks at PQstatus and calls PQfinish.
 */
PGconn *
pg_connect_blocking(const char *user, const char *password)
{
	const char *keys[64];
	const char *vals[64];
	char		options[1024];
	PQconninfoOption *o;
	int			n;

	session_params(keys, vals, options, user, password, NULL, false);
	/* a server that does not answer: an error after 10 s, not a hang */
	for (o = gw_conninfo; o && o->keyword; o++)
		if (strcmp(o->keyword, "connect_timeout") == 0 && o->val)
			break;
	if (o == NULL || o->keyword == NULL)
	{
		for (n = 0; keys[n]; n++)
			;
		keys[n] = "connect_timeout";
		vals[n++] = "10";
		keys[n] = NULL;
		vals[n] = NULL;
	}
	return PQconnectdbParams(keys, vals, 0);
}

/*
 * Start a connection to the server of --dbname as user/password, to dbname
 * (NULL: --dbname's).  check_client: a session that long-polls, so that
 * the server notices at once when the gateway closes it
 * (client_connection_check_interval) and ends the session, returning its
 * deliveries.
 */
PgSess *
pg_connect(const char *user, const char *password, const char *dbname,
		   bool check_client, pg_connect_cb cb, void *arg)
{
	PgSess	   *s = calloc(1, sizeof(PgSess));
	const char *keys[64];
	const char *vals[64];
	char		options[1024];

	n_sessions++;
	s->on_connect = cb;
	s->arg = arg;
	session_params(keys, vals, options, user, password, dbname, check_client);

	s->pg = PQconnectStartParams(keys, vals, 0);
	s->connecting = true;
	if (s->pg == NULL || PQstatus(s->pg) == CONNECTION_BAD || PQsocket(s->pg) < 0)
	{
		struct timeval zero = {0, 0};

		/* report from the event loop, not from inside the caller */
		event_base_once(gw_base, -1, EV_TIMEOUT, pg_connect_failed_cb, s, &zero);
		return s;
	}
	PQsetNoticeReceiver(s->pg, pg_notice, NULL);
	pg_watch(s, true);
	{
		/*
		 * libpq's connect_timeout is not applied to PQconnectPoll: a server
		 * that does not answer is an error after 10 s, not a hang
		 */
		struct timeval tv = {10, 0};

		s->tev = evtimer_new(gw_base, pg_connect_timeout, s);
		evtimer_add(s->tev, &tv);
	}
	return s;
}

/*
 * Advance the connection (PQconnectPoll); once it has succeeded or
 * failed, on_connect is told.
 */
static void
pg_finish_connect(PgSess *s)
{
	PostgresPollingStatusType st = PQconnectPoll(s->pg);

	if (st == PGRES_POLLING_READING)
		pg_watch(s, false);
	else if (st == PGRES_POLLING_WRITING)
		pg_watch(s, true);
	else
	{
		bool		ok = (st == PGRES_POLLING_OK);

		s->connecting = false;
		if (s->tev)
			event_del(s->tev);
		if (ok)
		{
			PQsetnonblocking(s->pg, 1);
			pg_watch(s, false);
		}
		else
		{
			event_del(s->rev);
			event_del(s->wev);
		}
		s->in_cb = true;
		s->on_connect(s->arg, ok, ok ? NULL : PQerrorMessage(s->pg));
		s->in_cb = false;
		if (s->closed && !s->draining)
			pg_free(s);
	}
}

/*
 * The session was lost: the statement's callback gets NULL, or on_lost
 * is called when it was idle.
 */
static void
pg_lost(PgSess *s)
{
	event_del(s->rev);
	event_del(s->wev);
	s->in_cb = true;
	if (s->busy)
	{
		s->busy = false;
		if (s->res)
		{
			PQclear(s->res);
			s->res = NULL;
		}
		s->cb(s->cbarg, NULL);
	}
	else if (s->on_lost)
		s->on_lost(s->arg);
	s->in_cb = false;
	if (s->closed && !s->draining)
		pg_free(s);
}

/*
 * The socket of a connected session is ready (what: the events): on
 * EV_WRITE send more of what is queued, on EV_READ take in what came.
 * False when the connection failed at either.
 */
static bool
pg_io(PgSess *s, short what)
{
	if (what & EV_WRITE)
	{
		int			r = PQflush(s->pg);

		if (r < 0)
			return false;
		pg_watch(s, r == 1);
	}
	if ((what & EV_READ) && !PQconsumeInput(s->pg))
		return false;
	return true;
}

/*
 * The socket is ready: advance the connection, or send and read the
 * statement's results; the last result goes to the callback.
 */
static void
pg_event(evutil_socket_t fd, short what, void *arg)
{
	PgSess	   *s = arg;

	if (s->closed)
	{
		if (s->draining)
			pg_drain(s, what);
		return;
	}
	if (s->connecting)
	{
		pg_finish_connect(s);
		return;
	}
	if (s->send_failed || PQstatus(s->pg) == CONNECTION_BAD)
	{
		pg_lost(s);
		return;
	}
	if (!pg_io(s, what))
	{
		pg_lost(s);
		return;
	}
	if (!(what & EV_READ))
		return;
	if (!s->busy)
	{
		/* nothing asked: a notice, or the server closing the session */
		PGresult   *r;

		if (PQstatus(s->pg) == CONNECTION_BAD)
		{
			pg_lost(s);
			return;
		}
		while (!PQisBusy(s->pg) && (r = PQgetResult(s->pg)) != NULL)
			PQclear(r);
		if (PQstatus(s->pg) == CONNECTION_BAD)
			pg_lost(s);
		return;
	}
	while (!PQisBusy(s->pg))
	{
		PGresult   *r = PQgetResult(s->pg);

		if (r == NULL)
		{
			PGresult   *res = s->res;

			s->res = NULL;
			s->busy = false;
			s->in_cb = true;
			s->cb(s->cbarg, res);
			s->in_cb = false;
			if (res)
				PQclear(res);
			if (s->closed && !s->draining)
				pg_free(s);
			return;
		}
		/* one statement: keep its result, or the first error */
		if (s->res == NULL)
			s->res = r;
		else if (PQresultStatus(s->res) != PGRES_FATAL_ERROR)
		{
			PQclear(s->res);
			s->res = r;
		}
		else
			PQclear(r);
	}
	if (PQstatus(s->pg) == CONNECTION_BAD)
		pg_lost(s);
}

/*
 * Send one statement (PQsendQueryParams's arguments) on s; cb gets its
 * result.  One statement at a time per session.
 */
void
pg_send(PgSess *s, const char *sql, int n, const Oid *types,
		const char *const *vals, const int *lens, const int *fmts,
		int result_format, pg_result_cb cb, void *arg)
{
	int			r;

	s->cb = cb;
	s->cbarg = arg;
	s->busy = true;
	if (n == 0 ? !PQsendQuery(s->pg, sql) :
		!PQsendQueryParams(s->pg, sql, n, types, vals, lens, fmts, result_format))
	{
		/* the session is gone: report it from the loop */
		s->send_failed = true;
		event_active(s->rev, EV_READ, 0);
		return;
	}
	r = PQflush(s->pg);
	pg_watch(s, r == 1);
}

/*
 * A session closed while busy: its statement's results are read and
 * dropped (or its connection is completed), and once it is idle (or the
 * server went away) the session ends.
 */
static void
pg_drain(PgSess *s, short what)
{
	if (s->connecting)
	{
		PostgresPollingStatusType st = PQconnectPoll(s->pg);

		if (st == PGRES_POLLING_READING)
			pg_watch(s, false);
		else if (st == PGRES_POLLING_WRITING)
			pg_watch(s, true);
		else
			pg_free(s);			/* connected, idle: PQfinish is clean */
		return;
	}
	if (!pg_io(s, what))
	{
		pg_free(s);
		return;
	}
	if (!(what & EV_READ))
		return;
	while (!PQisBusy(s->pg))
	{
		PGresult   *r = PQgetResult(s->pg);

		if (r == NULL)
		{
			/* idle now: PQfinish ends the session cleanly */
			pg_free(s);
			return;
		}
		PQclear(r);
	}
	if (PQstatus(s->pg) == CONNECTION_BAD)
		pg_free(s);
}

/* A closed session's statement took too long: it ends anyway. */
static void
pg_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
	pg_free(arg);
}

/* how many sessions are open, or closed and still ending */
int
pg_sessions(void)
{
	return n_sessions;
}

/*
 * Close: no callback of the session's is called any more; the struct goes
 * after any callback running.  An idle session ends now.  One busy with a
 * statement (a consumer's long poll, which its caller has woken) ends once
 * the statement is done, one still connecting once it is connected, within
 * --poll-wait and a few seconds: ending it now would end the server's
 * session in the middle of a statement or of its start-up, which
 * PostgreSQL logs as "FATAL: connection to client lost".
 */
void
pg_close(PgSess *s)
{
	if (s == NULL || s->closed)
		return;
	s->closed = true;
	pool_unlink(s);
	if ((s->busy || s->connecting) && !s->send_failed && s->pg &&
		PQstatus(s->pg) != CONNECTION_BAD && s->rev)
	{
		struct timeval tv = {cfg.poll_wait + 5, 0};

		s->draining = true;
		s->busy = false;
		s->dev = evtimer_new(gw_base, pg_drain_timeout, s);
		evtimer_add(s->dev, &tv);
		return;
	}
	if (s->rev)
		event_del(s->rev);
	if (s->wev)
		event_del(s->wev);
	if (s->pg)
	{
		PQfinish(s->pg);
		s->pg = NULL;
	}
	if (!s->in_cb)
		pg_free(s);
}

/* ask the server to cancel the running statement (a long poll) */
void
pg_cancel(PgSess *s)
{
	PGcancel   *c;
	char		err[256];

	if (s == NULL || s->closed || !s->busy || s->pg == NULL)
		return;
	c = PQgetCancel(s->pg);
	if (c)
	{
		PQcancel(c, err, sizeof(err));
		PQfreeCancel(c);
	}
}

/* take s out of the pool, if it is there */
static void
pool_unlink(PgSess *s)
{
	PgSess	  **pp;

	if (s->pool_key == NULL)
		return;
	for (pp = &pool_head; *pp; pp = &(*pp)->pool_next)
		if (*pp == s)
		{
			*pp = s->pool_next;
			break;
		}
	s->pool_next = NULL;
	free(s->pool_key);
	s->pool_key = NULL;
	if (s->pool_ev)
		event_del(s->pool_ev);
}

/* an idle session of the pool unused for POOL_IDLE_SECS: closed */
static void
pool_expired(evutil_socket_t fd, short what, void *arg)
{
	pg_close(arg);
}

/* an idle session of the pool lost (the server restarting): closed */
static void
pool_lost(void *arg)
{
	pg_close(arg);
}

/*
 * Give an idle session back to the pool under key, for pg_pool_take.  Only
 * a clean one is kept: connected, no statement running, no transaction
 * open (the caller has settled or released whatever else it held); any
 * other, or one more than POOL_IDLE_MAX of the key, is closed.
 */
void
pg_pool_put(PgSess *s, const char *key)
{
	PgSess	   *p;
	int			n = 0;
	struct timeval tv = {POOL_IDLE_SECS, 0};

	if (s == NULL)
		return;
	if (s->closed || s->busy || s->connecting || s->send_failed || s->pg == NULL ||
		PQstatus(s->pg) != CONNECTION_OK || PQtransactionStatus(s->pg) != PQTRANS_IDLE)
	{
		pg_close(s);
		return;
	}
	for (p = pool_head; p; p = p->pool_next)
		if (strcmp(p->pool_key, key) == 0)
			n++;
	if (n >= POOL_IDLE_MAX)
	{
		pg_close(s);
		return;
	}
	s->pool_key = strdup(key);
	s->cb = NULL;
	s->cbarg = NULL;
	s->on_connect = NULL;
	s->arg = s;
	s->on_lost = pool_lost;
	s->pool_next = pool_head;
	pool_head = s;
	if (s->pool_ev == NULL)
		s->pool_ev = evtimer_new(gw_base, pool_expired, s);
	evtimer_add(s->pool_ev, &tv);
}

/*
 * Close every idle session of the pool whose key begins with prefix: the
 * sessions of a login whose password or role changed, which must not log
 * it in again.
 */
void
pg_pool_drop(const char *prefix)
{
	size_t		n = strlen(prefix);
	PgSess	   *p = pool_head,
			   *next;

	for (; p; p = next)
	{
		next = p->pool_next;
		if (strncmp(p->pool_key, prefix, n) == 0)
		{
			pool_unlink(p);
			pg_close(p);
		}
	}
}

/*
 * An idle session of the pool under key, or NULL when there is none: the
 * caller sets its arg and on_lost.  The one that hint (its caller's
 * choice: who asks) gave back last comes first, so that a user who gives
 * its session back between statements mostly gets the same one again;
 * else the last one given back (the one most likely to be warm).
 */
PgSess *
pg_pool_take(const char *key, const void *hint)
{
	PgSess	   *p;

	for (p = pool_head; p; p = p->pool_next)
		if (p->last_user == hint && hint && strcmp(p->pool_key, key) == 0)
			break;
	if (p == NULL)
		for (p = pool_head; p; p = p->pool_next)
			if (strcmp(p->pool_key, key) == 0)
				break;
	if (p)
	{
		pool_unlink(p);
		p->on_lost = NULL;
		p->arg = NULL;
		if (PQstatus(p->pg) != CONNECTION_OK ||
			PQtransactionStatus(p->pg) != PQTRANS_IDLE)
		{
			/* gone meanwhile: the next one */
			pg_close(p);
			return pg_pool_take(key, hint);
		}
	}
	return p;
}
