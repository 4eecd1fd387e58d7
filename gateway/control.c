/*-------------------------------------------------------------------------
 *
 * control.c
 *	  The control session of a connection: login and vhost checks at the
 *	  handshake, then cleanups (exclusive and auto-delete queues, stream
 *	  consumers' groups) run in order; it outlives the connection until its
 *	  jobs are done.  Also a session of its own for one job (x-expires).
 *
 * It runs the connection's own jobs, never a channel's operations.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdlib.h>
#include <string.h>

/* a session of a connection for cleanups (exclusive and auto-delete queues);
 * it outlives the connection until its jobs are done */
typedef struct CtlJob
{
	char	   *sql;
	char	   *param;
	char	   *param2;			/* NULL: one parameter */
	/* called once the job is done, failed or dropped, unless orphaned */
	void		(*done) (Conn *c, int chan);
	int			chan;
	struct CtlJob *next;
} CtlJob;

typedef struct Ctl
{
	PgSess	   *pg;
	Conn	   *conn;			/* NULL once orphaned */
	void		(*then) (Conn *c, bool ok, const char *error);
	bool		ready;
	bool		running;
	bool		orphan;			/* its connection is gone */
	CtlJob	   *jobs,
			   *jobs_tail;
} Ctl;

static void ctl_pump(Ctl *ctl);
static void ctl_then_jobs(Conn *c, bool ok, const char *error);

/* Free a job of the control session. */
static void
ctl_job_free(CtlJob *j)
{
	free(j->sql);
	free(j->param);
	free(j->param2);
	free(j);
}

/*
 * Free the first job.  Its done callback runs last, after the next job has
 * been started: it may end the connection and orphan (and so free) the
 * control session.
 */
static void
ctl_job_end(Ctl *ctl)
{
	CtlJob	   *j = ctl->jobs;
	Conn	   *c = ctl->conn;
	void		(*done) (Conn *c, int chan) = j->done;
	int			chan = j->chan;

	ctl->jobs = j->next;
	if (!ctl->jobs)
		ctl->jobs_tail = NULL;
	ctl_job_free(j);
	ctl_pump(ctl);
	if (done && c)
		done(c, chan);
}

/*
 * The session is gone or never came: the connection lets go of it (a later
 * job opens a new one), it goes, and its jobs are dropped, telling whoever
 * waits for one.
 */
static void
ctl_fail(Ctl *ctl)
{
	Conn	   *c = ctl->conn;
	CtlJob	   *list = ctl->jobs,
			   *j;

	ctl->jobs = ctl->jobs_tail = NULL;
	ctl->running = false;
	ctl->ready = false;
	if (c && c->ctl == ctl)
		c->ctl = NULL;
	ctl_orphan(ctl);			/* frees it */
	while ((j = list))
	{
		list = j->next;
		if (j->done && c && !c->dead)
			j->done(c, j->chan);
		ctl_job_free(j);
	}
}

/*
 * A job's result: a failure is logged (an object already gone, 42704, is
 * not); a lost session fails the jobs left, else the next job runs.
 */
static void
ctl_done(void *arg, PGresult *res)
{
	Ctl		   *ctl = arg;
	CtlJob	   *j = ctl->jobs;

	if (res && !res_ok(res) && strcmp(res_state(res) ? res_state(res) : "", "42704") != 0)
		logmsg("cleanup \"%s\" failed: %s", j->param ? j->param : j->sql, res_message(res));
	ctl->running = false;
	if (res == NULL)
		ctl_fail(ctl);
	else
		ctl_job_end(ctl);
}

/*
 * Run the next job if the session is ready and idle; an orphaned session
 * with no jobs left goes.
 */
static void
ctl_pump(Ctl *ctl)
{
	if (ctl->running)
		return;
	if (ctl->jobs && ctl->ready)
	{
		const char *vals[2] = {ctl->jobs->param, ctl->jobs->param2};

		ctl->running = true;
		pg_send(ctl->pg, ctl->jobs->sql, vals[1] ? 2 : vals[0] ? 1 : 0, NULL, vals, NULL, NULL,
				0, ctl_done, ctl);
		return;
	}
	if (!ctl->jobs && ctl->orphan)
	{
		pg_close(ctl->pg);
		free(ctl);
	}
}

/*
 * Queue a job on c's control session, opening one if there is none;
 * false if the connection is past the point where it may have one.
 */
static bool
ctl_add(Conn *c, const char *sql, const char *param, const char *param2,
		void (*done) (Conn *c, int chan), int chan)
{
	CtlJob	   *j;

	if (c->ctl == NULL)
	{
		if (c->state != C_OPEN && c->state != C_CLOSING)
			return false;
		c->ctl = ctl_new(c, c->db[0] ? c->db : NULL, ctl_then_jobs);
	}
	j = calloc(1, sizeof(CtlJob));
	j->sql = strdup(sql);
	j->param = param ? strdup(param) : NULL;
	j->param2 = param2 ? strdup(param2) : NULL;
	j->done = done;
	j->chan = chan;
	if (c->ctl->jobs_tail)
		c->ctl->jobs_tail->next = j;
	else
		c->ctl->jobs = j;
	c->ctl->jobs_tail = j;
	ctl_pump(c->ctl);
	return true;
}

/*
 * Queue sql with up to two text parameters as a job of c's control session.
 */
void
ctl_job(Conn *c, const char *sql, const char *param, const char *param2)
{
	(void) ctl_add(c, sql, param, param2, NULL, 0);
}

/*
 * A statement without parameters, then done(c, chan) when it is over
 * (whatever its result, also when the session fails) while the connection
 * lives.  False when the connection has no control session to run it.
 */
bool
ctl_job_then(Conn *c, const char *sql, void (*done) (Conn *c, int chan), int chan)
{
	return ctl_add(c, sql, NULL, NULL, done, chan);
}

/* The control session was lost while idle. */
static void
ctl_lost(void *arg)
{
	Ctl		   *ctl = arg;

	/* lost while idle (a lost statement comes to ctl_done) */
	ctl_fail(ctl);
}

/*
 * The control session connected (or not): its connection is told (then);
 * an orphaned one runs its jobs, or fails them.
 */
static void
ctl_connected(void *arg, bool ok, const char *error)
{
	Ctl		   *ctl = arg;

	ctl->ready = ok;
	if (ctl->orphan || ctl->conn == NULL)
	{
		if (!ok)
			ctl_fail(ctl);
		else
			ctl_pump(ctl);
		return;
	}
	ctl->then(ctl->conn, ok, error);
}

/* a cleanup session connected (or not) */
static void
ctl_then_jobs(Conn *c, bool ok, const char *error)
{
	Ctl		   *ctl = c->ctl;

	if (!ok)
	{
		logmsg("%s: cleanup session failed: %s", c->peer, error);
		ctl_fail(ctl);
		return;
	}
	ctl_pump(ctl);
}

/* A control session of c on dbname; then is called when it connects. */
Ctl *
ctl_new(Conn *c, const char *dbname, void (*then) (Conn *c, bool ok, const char *error))
{
	Ctl		   *ctl = calloc(1, sizeof(Ctl));

	ctl->conn = c;
	ctl->then = then;
	ctl->pg = pg_connect(c->pguser, c->password, dbname, false, ctl_connected, ctl);
	ctl->pg->on_lost = ctl_lost;
	return ctl;
}

/* the libpq connection of the session (NULL: none), to look at its login */
PGconn *
ctl_pgconn(Ctl *ctl)
{
	return ctl && ctl->pg ? ctl->pg->pg : NULL;
}

/*
 * The connection is done with its control session: it runs the jobs
 * queued and then goes by itself.
 */
void
ctl_orphan(Ctl *ctl)
{
	if (ctl == NULL)
		return;					/* it failed and went already */
	ctl->orphan = true;
	ctl->conn = NULL;
	ctl_pump(ctl);
}

/*
 * A session of its own for one job, as user (x-expires: the declaring
 * connection may be gone): it ends when the job is done.
 */
void
ctl_oneshot(const char *user, const char *password, const char *dbname, const char *sql,
			const char *param)
{
	Ctl		   *ctl;
	CtlJob	   *j;

	ctl = calloc(1, sizeof(Ctl));
	ctl->orphan = true;
	j = calloc(1, sizeof(CtlJob));
	j->sql = strdup(sql);
	j->param = strdup(param);
	ctl->jobs = ctl->jobs_tail = j;
	ctl->pg = pg_connect(user, password, dbname, false, ctl_connected, ctl);
	ctl->pg->on_lost = ctl_lost;
}
