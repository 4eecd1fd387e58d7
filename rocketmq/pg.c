/*-------------------------------------------------------------------------
 *
 * pg.c
 *	  Asynchronous libpq sessions of mq-rocketmq, pooled per (database,
 *	  role).
 *
 * RocketMQ's RPCs carry no session: each one runs one statement (in its own
 * transaction) on whichever idle session of its database and role there
 * is, or on a new one.  queue_ext's receipts are session-independent, so
 * that a message received on one session is acked on another.  Connecting
 * and queries never block the event loop (PQconnectStartParams /
 * PQconnectPoll, PQsendQueryParams / PQconsumeInput); a long poll
 * (mq.consume with wait) holds its session until it returns.
 *
 * The sessions log in with --dbname's parameters and, when the request's
 * role is another one, SET ROLE to it first: the login role must be a
 * member of every role the credentials map to (docs/rocketmq.md).
 *
 * A session prepares each statement text the first time it runs it (up to
 * PG_STMTS texts, the gateway's fixed statements; any further one runs
 * unnamed) and runs it prepared from then on: parse and plan once a
 * session, not once a request (a send's statement costs the backend about
 * as much to parse and plan as to run; bench/README.md, RocketMQ).
 * Results come as text, or binary when the statement asks (pg_run's
 * result_format: the statements returning message bodies, which then come
 * as their bytes, not as bytea's hex text twice their size).
 *
 *-------------------------------------------------------------------------
 */
#include "rmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PG_STMTS 32

typedef enum
{
	S_CONNECTING,
	S_SETROLE,
	S_PREPARE,
	S_IDLE,
	S_BUSY
} SessState;

typedef struct PgSess
{
	PGconn	   *pg;
	char		db[128];
	char		role[128];
	SessState	state;
	struct event *rev;
	struct event *wev;
	struct event *tev;			/* connect timeout */
	/* the statement to run and whom to tell */
	const char *sql;
	int			nparams;
	const char *const *values;
	const int  *lengths;
	const int  *formats;
	int			result_format;	/* 0 text, 1 binary (pg_run) */
	pg_result_cb cb;
	void	   *arg;
	PGresult   *last;
	/* the statement texts prepared in this session, as "rmq<index>" */
	char	   *stmts[PG_STMTS];
	int			n_stmts;
	struct PgSess *next;		/* in the idle list */
} PgSess;

static PgSess *idle_list;
static int	n_sessions;
static int	n_idle;

static void pg_event(evutil_socket_t fd, short what, void *arg);

const char *
res_state(const PGresult *res)
{
	const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return st ? st : "";
}

const char *
res_message(const PGresult *res)
{
	const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	return m ? m : "connection to the server lost";
}

/* server notices: only with --verbose */
static void
pg_notice(void *arg, const PGresult *res)
{
	if (rmq_verbose)
		fprintf(stderr, "mq-rocketmq: server notice: %s", PQresultErrorMessage(res));
}

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
		s->rev = event_new(rmq_base, fd, EV_READ | EV_PERSIST, pg_event, s);
		s->wev = event_new(rmq_base, fd, EV_WRITE, pg_event, s);
		event_add(s->rev, NULL);
	}
	if (want_write)
		event_add(s->wev, NULL);
	else
		event_del(s->wev);
}

static void
pg_free(PgSess *s)
{
	if (s->tev)
		event_free(s->tev);
	if (s->rev)
		event_free(s->rev);
	if (s->wev)
		event_free(s->wev);
	if (s->last)
		PQclear(s->last);
	if (s->pg)
		PQfinish(s->pg);
	for (int i = 0; i < s->n_stmts; i++)
		free(s->stmts[i]);
	n_sessions--;
	free(s);
}

/* The session failed: its caller gets NULL, the session is gone. */
static void
pg_lost(PgSess *s)
{
	pg_result_cb cb = s->cb;
	void	   *arg = s->arg;

	if (rmq_verbose && s->pg)
		logmsg("session to database \"%s\" lost: %s", s->db, PQerrorMessage(s->pg));
	s->cb = NULL;
	pg_free(s);
	if (cb)
		cb(arg, NULL);
}

/* the name of prepared statement i (< PG_STMTS): "rmq<i>" */
static void
pg_stmt_name(char *name, int i)
{
	memcpy(name, "rmq", 3);
	if (i >= 10)
	{
		name[3] = '0' + i / 10;
		name[4] = '0' + i % 10;
		name[5] = '\0';
	}
	else
	{
		name[3] = '0' + i;
		name[4] = '\0';
	}
}

/* The index of statement text sql among those s prepared, or -1 */
static int
pg_stmt_find(PgSess *s, const char *sql)
{
	for (int i = 0; i < s->n_stmts; i++)
		if (strcmp(s->stmts[i], sql) == 0)
			return i;
	return -1;
}

/*
 * Send s->sql (or SET ROLE first, or prepare it first): the results come
 * to pg_event.
 */
static void
pg_send(PgSess *s)
{
	int			ok;
	int			stmt = -1;
	char		name[16];

	if (s->state == S_SETROLE)
	{
		char	   *ident = PQescapeIdentifier(s->pg, s->role, strlen(s->role));
		char		sql[400];

		if (ident == NULL)
		{
			pg_lost(s);
			return;
		}
		snprintf(sql, sizeof(sql), "SET ROLE %s", ident);
		PQfreemem(ident);
		ok = PQsendQuery(s->pg, sql);
	}
	else if ((stmt = pg_stmt_find(s, s->sql)) >= 0)
	{
		pg_stmt_name(name, stmt);
		ok = PQsendQueryPrepared(s->pg, name, s->nparams, s->values,
								 s->lengths, s->formats, s->result_format);
	}
	else if (s->n_stmts < PG_STMTS)
	{
		/* its first run in this session: prepare, then pg_done runs it */
		pg_stmt_name(name, s->n_stmts);
		s->state = S_PREPARE;
		ok = PQsendPrepare(s->pg, name, s->sql, s->nparams, NULL);
	}
	else
		ok = PQsendQueryParams(s->pg, s->sql, s->nparams, NULL, s->values,
							   s->lengths, s->formats, s->result_format);
	if (!ok)
	{
		pg_lost(s);
		return;
	}
	pg_watch(s, PQflush(s->pg) == 1);
}

/* A statement's results are all in: tell the caller, keep the session. */
static void
pg_done(PgSess *s)
{
	pg_result_cb cb = s->cb;
	void	   *arg = s->arg;
	PGresult   *res = s->last;

	s->last = NULL;
	if (s->state == S_SETROLE)
	{
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			/* the login role may not act as this role: the caller sees why */
			s->cb = NULL;
			cb(arg, res);
			PQclear(res);
			pg_free(s);
			return;
		}
		PQclear(res);
		s->state = S_BUSY;
		pg_send(s);
		return;
	}
	if (s->state == S_PREPARE)
	{
		s->state = S_BUSY;
		if (PQresultStatus(res) == PGRES_COMMAND_OK)
		{
			PQclear(res);
			/* out of memory: its name could not be told from the next's */
			if ((s->stmts[s->n_stmts] = strdup(s->sql)) == NULL)
			{
				pg_lost(s);
				return;
			}
			s->n_stmts++;
			pg_send(s);
			return;
		}
		/* it does not parse (here): the caller sees why, as from a run */
	}
	s->cb = NULL;
	s->state = S_IDLE;
	if (cb)
		cb(arg, res);
	if (res)
		PQclear(res);
	/*
	 * Idle sessions are kept up to --max-sessions (pg_run closes one of
	 * another kind when it needs the room): a bound below the busy sessions
	 * of a burst, such as 64 sends in flight, closed and reconnected a
	 * session for nearly every statement of it (bench/README.md, RocketMQ)
	 */
	if (PQstatus(s->pg) != CONNECTION_OK || PQtransactionStatus(s->pg) != PQTRANS_IDLE ||
		n_idle >= rmq_max_sessions)
	{
		pg_free(s);
		return;
	}
	s->next = idle_list;
	idle_list = s;
	n_idle++;
}

static void
pg_connected(PgSess *s)
{
	if (s->tev)
	{
		event_free(s->tev);
		s->tev = NULL;
	}
	PQsetNoticeReceiver(s->pg, pg_notice, NULL);
	s->state = strcmp(PQuser(s->pg), s->role) == 0 ? S_BUSY : S_SETROLE;
	pg_send(s);
}

static void
pg_event(evutil_socket_t fd, short what, void *arg)
{
	PgSess	   *s = arg;

	if (s->state == S_CONNECTING)
	{
		PostgresPollingStatusType st = PQconnectPoll(s->pg);

		if (st == PGRES_POLLING_READING)
			pg_watch(s, false);
		else if (st == PGRES_POLLING_WRITING)
			pg_watch(s, true);
		else if (st == PGRES_POLLING_OK)
			pg_connected(s);
		else
		{
			logmsg("cannot connect to database \"%s\": %s", s->db, PQerrorMessage(s->pg));
			pg_lost(s);
		}
		return;
	}
	if (what & EV_WRITE)
	{
		int			r = PQflush(s->pg);

		if (r < 0)
		{
			pg_lost(s);
			return;
		}
		pg_watch(s, r == 1);
	}
	if (!(what & EV_READ))
		return;
	if (!PQconsumeInput(s->pg))
	{
		if (s->state == S_IDLE)
		{
			/* an idle session the server closed */
			PgSess	  **p;

			for (p = &idle_list; *p; p = &(*p)->next)
				if (*p == s)
				{
					*p = s->next;
					n_idle--;
					break;
				}
		}
		pg_lost(s);
		return;
	}
	if (s->state == S_IDLE)
		return;
	while (!PQisBusy(s->pg))
	{
		PGresult   *r = PQgetResult(s->pg);

		if (r == NULL)
		{
			pg_done(s);
			return;
		}
		if (s->last)
			PQclear(s->last);
		s->last = r;
	}
}

static void
pg_connect_timeout(evutil_socket_t fd, short what, void *arg)
{
	PgSess	   *s = arg;

	logmsg("cannot connect to database \"%s\": no answer in 10 s", s->db);
	pg_lost(s);
}

static void
pg_start_failed(evutil_socket_t fd, short what, void *arg)
{
	pg_lost(arg);
}

/* A new session of (db, role): --dbname's parameters, this database. */
static PgSess *
pg_connect(const char *db)
{
	PgSess	   *s = calloc(1, sizeof(PgSess));
	const char *keys[64];
	const char *vals[64];
	int			n = 0;
	PQconninfoOption *o;

	for (o = rmq_conninfo; o && o->keyword && n < 60; o++)
	{
		if (o->val == NULL || strcmp(o->keyword, "dbname") == 0 ||
			strcmp(o->keyword, "application_name") == 0)
			continue;
		keys[n] = o->keyword;
		vals[n++] = o->val;
	}
	if (db[0])
	{
		keys[n] = "dbname";
		vals[n++] = db;
	}
	keys[n] = "application_name";
	vals[n++] = "mq-rocketmq";
	keys[n] = NULL;
	vals[n] = NULL;
	n_sessions++;
	s->state = S_CONNECTING;
	s->pg = PQconnectStartParams(keys, vals, 0);
	if (s->pg == NULL || PQstatus(s->pg) == CONNECTION_BAD || PQsocket(s->pg) < 0)
	{
		struct timeval zero = {0, 0};

		if (s->pg)
			logmsg("cannot connect to database \"%s\": %s", db, PQerrorMessage(s->pg));
		event_base_once(rmq_base, -1, EV_TIMEOUT, pg_start_failed, s, &zero);
		return s;
	}
	pg_watch(s, true);
	{
		struct timeval tv = {10, 0};

		s->tev = evtimer_new(rmq_base, pg_connect_timeout, s);
		evtimer_add(s->tev, &tv);
	}
	return s;
}

/*
 * Run one statement as role in database db (""; --dbname's) and call cb
 * with its last result (NULL: the session was lost; cb must not keep the
 * result).  values, lengths and formats must live until cb is called.
 * result_format 1: every column of the result comes in its type's binary
 * send format (libpq's resultFormat; a bytea as its bytes, a text as its
 * bytes in the client encoding), 0: as text.  false: too many sessions
 * (--max-sessions), nothing runs.
 */
bool
pg_run(const char *db, const char *role, const char *sql, int nparams,
	   const char *const *values, const int *lengths, const int *formats,
	   int result_format, pg_result_cb cb, void *arg)
{
	PgSess	   *s = NULL;
	PgSess	  **p;

	if (db[0] == '\0' && rmq_default_db)
		db = rmq_default_db;
	for (p = &idle_list; *p; p = &(*p)->next)
		if (strcmp((*p)->db, db) == 0 && strcmp((*p)->role, role) == 0)
		{
			s = *p;
			*p = s->next;
			n_idle--;
			break;
		}
	if (s == NULL)
	{
		if (n_sessions >= rmq_max_sessions && idle_list)
		{
			/* make room: close an idle session of another kind */
			PgSess	   *victim = idle_list;

			idle_list = victim->next;
			n_idle--;
			victim->cb = NULL;
			pg_free(victim);
		}
		if (n_sessions >= rmq_max_sessions)
			return false;
		s = pg_connect(db);
		snprintf(s->db, sizeof(s->db), "%s", db);
		snprintf(s->role, sizeof(s->role), "%s", role);
	}
	s->sql = sql;
	s->nparams = nparams;
	s->values = values;
	s->lengths = lengths;
	s->formats = formats;
	s->result_format = result_format;
	s->cb = cb;
	s->arg = arg;
	if (s->state == S_IDLE)
	{
		s->state = S_BUSY;
		pg_send(s);
	}
	return true;
}
