/*-------------------------------------------------------------------------
 *
 * control.c
 *	  The control session of a connection: login and vhost checks at the
 *	  handshake, then cleanups (exclusive and auto-delete queues, stream
 *	  consumers' groups) run in order; it outlives the connection until its
 *	  jobs are done.  Also a session of its own for one job (x-expires).
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

static void
ctl_done(void *arg, PGresult *res)
{
	Ctl		   *ctl = arg;
	CtlJob	   *j = ctl->jobs;

	if (res && !res_ok(res) && strcmp(res_state(res) ? res_state(res) : "", "42704") != 0)
		logmsg("cleanup \"%s\" failed: %s", j->param, res_message(res));
	ctl->jobs = j->next;
	if (!ctl->jobs)
		ctl->jobs_tail = NULL;
	free(j->sql);
	free(j->param);
	free(j->param2);
	free(j);
	ctl->running = false;
	if (res == NULL)
	{
		/* the session is gone: drop the rest */
		while (ctl->jobs)
		{
			j = ctl->jobs;
			ctl->jobs = j->next;
			free(j->sql);
			free(j->param);
			free(j->param2);
			free(j);
		}
	}
	ctl_pump(ctl);
}

static void
ctl_pump(Ctl *ctl)
{
	if (ctl->running)
		return;
	if (ctl->jobs && ctl->ready)
	{
		const char *vals[2] = {ctl->jobs->param, ctl->jobs->param2};

		ctl->running = true;
		pg_send(ctl->pg, ctl->jobs->sql, vals[1] ? 2 : 1, NULL, vals, NULL, NULL, 0, ctl_done, ctl);
		return;
	}
	if (!ctl->jobs && ctl->orphan)
	{
		pg_close(ctl->pg);
		free(ctl);
	}
}

void
ctl_job(Conn *c, const char *sql, const char *param, const char *param2)
{
	CtlJob	   *j;

	if (c->ctl == NULL)
	{
		if (c->state != C_OPEN && c->state != C_CLOSING)
			return;
		c->ctl = ctl_new(c, c->db[0] ? c->db : NULL, ctl_then_jobs);
	}
	j = calloc(1, sizeof(CtlJob));
	j->sql = strdup(sql);
	j->param = strdup(param);
	j->param2 = param2 ? strdup(param2) : NULL;
	if (c->ctl->jobs_tail)
		c->ctl->jobs_tail->next = j;
	else
		c->ctl->jobs = j;
	c->ctl->jobs_tail = j;
	ctl_pump(c->ctl);
}

static void
ctl_lost(void *arg)
{
	Ctl		   *ctl = arg;

	ctl->ready = false;
}

static void
ctl_connected(void *arg, bool ok, const char *error)
{
	Ctl		   *ctl = arg;

	ctl->ready = ok;
	if (ctl->orphan || ctl->conn == NULL)
	{
		if (!ok)
		{
			/* nobody to report to: drop the jobs */
			while (ctl->jobs)
			{
				CtlJob	   *j = ctl->jobs;

				ctl->jobs = j->next;
				free(j->sql);
				free(j->param);
				free(j->param2);
				free(j);
			}
		}
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
		while (ctl->jobs)
		{
			CtlJob	   *j = ctl->jobs;

			ctl->jobs = j->next;
			free(j->sql);
			free(j->param);
			free(j->param2);
			free(j);
		}
		ctl->jobs_tail = NULL;
		c->ctl = NULL;
		ctl_orphan(ctl);
		return;
	}
	ctl_pump(ctl);
}

Ctl *
ctl_new(Conn *c, const char *dbname, void (*then) (Conn *c, bool ok, const char *error))
{
	Ctl		   *ctl = calloc(1, sizeof(Ctl));

	ctl->conn = c;
	ctl->then = then;
	ctl->pg = pg_connect(c->user, c->password, dbname, false, ctl_connected, ctl);
	ctl->pg->on_lost = ctl_lost;
	return ctl;
}

void
ctl_orphan(Ctl *ctl)
{
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
