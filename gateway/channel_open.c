/*-------------------------------------------------------------------------
 *
 * channel_open.c
 *	  A channel's sessions opened: its PostgreSQL session, taken from the
 *	  pool of idle sessions or connected and set up (its functions in
 *	  pg_temp) when an operation needs it, and given back to the pool when
 *	  the channel holds nothing in it and at its close; and the session of
 *	  a tx-mode channel's basic.get.
 *
 * It opens and sets up sessions; it runs no operation (operations.c)
 * and decodes no frame.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdlib.h>
#include <string.h>

static void chan_setup(Chan *ch);
static void getpg_setup(Chan *ch);
static void connect_done(Chan *ch);

/*
 * Channel sessions a connection connects at once.  A channel that needs a
 * session when that many are connecting waits (in waiters, first come
 * first served) for one given back to the pool by any channel of the same
 * role and database, or for a connect to end.  So 256 channels that
 * publish at once share a few sessions rather than connect 256.
 */
#define SESS_CONNECTS	4

static Chan *waiters,
		   *waiters_tail;

/* the operations engine's handlers of what happens to the sessions */
static const ChanSessionEvents *events;

void
chan_session_events(const ChanSessionEvents *e)
{
	events = e;
}

/*
 * The channel's session connected, or not: a session that cannot be had
 * (the server refuses it, too many clients, no answer within 10 s) fails
 * the channel, not the connection: channel.close 541 INTERNAL_ERROR with
 * the server's error, for the operation that needed it (the operations
 * engine's connect_failed closes it).  Otherwise its functions are set up
 * before any operation runs.
 */
static void
chan_connected(void *arg, bool ok, const char *error)
{
	Chan	   *ch = arg;

	connect_done(ch);
	if (!ok)
	{
		char		text[256];
		char		why[200];
		size_t		n;

		/* libpq's message: its first line, without the newline */
		snprintf(why, sizeof(why), "%s", error ? error : "");
		n = strcspn(why, "\n");
		why[n] = '\0';
		snprintf(text, sizeof(text), "INTERNAL_ERROR - no PostgreSQL session: %s", why);
		logmsg("%s: channel %d: %s", ch->conn->peer, ch->id, text);
		events->connect_failed(ch, text);
		return;
	}
	chan_setup(ch);
}

/*
 * The basic.get session of a tx-mode channel is set up; a get waiting
 * for it runs now.
 */
static void
getpg_setup_done(void *arg, PGresult *res)
{
	Chan	   *ch = arg;

	if (!res_ok(res))
	{
		events->setup_failed(ch, res);
		return;
	}
	ch->getpg_ready = true;
	events->get_ready(ch);
}

/* The basic.get session connected: set it up as the channel's own. */
void
getpg_connected(void *arg, bool ok, const char *error)
{
	Chan	   *ch = arg;

	if (!ok)
	{
		chan_connected(arg, ok, error);
		return;
	}
	getpg_setup(ch);
}

/*
 * Open channel id of c: its state only.  It has no PostgreSQL session
 * until an operation needs one (chan_session): open-ok goes at once, and
 * a channel that is closed before doing anything costs no session.
 */
Chan *
chan_open(Conn *c, uint16_t id)
{
	Chan	   *ch = calloc(1, sizeof(Chan));

	ch->conn = c;
	ch->id = id;
	ch->flow = true;
	ch->state = CH_OPEN;
	c->chans[id] = ch;
	return ch;
}

/*
 * The key of the pool of the sessions of c's channels: its role, database
 * and password, so that a session only ever serves the role (and the
 * login) that it was opened for, in its database.  The password comes last:
 * a long one is cut, never the role or the database (every connection's
 * password was checked by its login).
 */
static void
pool_key(Conn *c, char *key, size_t len)
{
	snprintf(key, len, "chan\n%s\n%s\n%c%s", c->pguser, c->db, c->password ? 'p' : '-',
			 c->password ? c->password : "");
}

/* take ch off the list of channels waiting for a session */
static void
wait_remove(Chan *ch)
{
	Chan	  **pp,
			   *prev = NULL;

	if (!ch->pg_waiting)
		return;
	for (pp = &waiters; *pp; pp = &(*pp)->wait_next)
	{
		if (*pp == ch)
		{
			*pp = ch->wait_next;
			if (waiters_tail == ch)
				waiters_tail = prev;
			break;
		}
		prev = *pp;
	}
	ch->wait_next = NULL;
	ch->pg_waiting = false;
}

/*
 * Channel w waited for a session and may have one now: from the pool, or
 * connecting; its operations run once it is there.
 */
static void
wait_wake(Chan *w)
{
	wait_remove(w);
	if (w->state == CH_OPEN && !w->conn->dead && chan_session(w))
		events->ready(w);
}

/*
 * Ch's session connect ended, or was given up: a connect slot of its
 * connection is free for the first channel of it that waits.
 */
static void
connect_done(Chan *ch)
{
	Conn	   *c = ch->conn;
	Chan	   *w;

	if (!ch->pg_counted)
		return;
	ch->pg_counted = false;
	c->sess_connecting--;
	for (w = waiters; w; w = w->wait_next)
		if (w->conn == c)
			break;
	if (w)
		wait_wake(w);
}

/*
 * Whether the channel's session is there and set up; if not, it is taken
 * from the pool (then it is), or starts connecting (once it is set up,
 * chan_setup_done tells the operations engine, which runs the channel's
 * operations), or, when SESS_CONNECTS of its connection are connecting
 * already, the channel waits for a session (chan_session_pool,
 * connect_done).
 */
bool
chan_session(Chan *ch)
{
	Conn	   *c = ch->conn;
	char		key[800];

	if (ch->pg_ready)
		return true;
	if (ch->pg || ch->pg_waiting)
		return false;			/* connecting, being set up, or waiting */
	pool_key(c, key, sizeof(key));
	ch->pg = pg_pool_take(key, ch);
	if (ch->pg)
	{
		ch->pg->arg = ch;
		ch->pg->on_lost = events->lost;
		ch->pg_ready = true;
		return true;
	}
	if (c->sess_connecting >= SESS_CONNECTS)
	{
		ch->pg_waiting = true;
		ch->wait_next = NULL;
		if (waiters_tail)
			waiters_tail->wait_next = ch;
		else
			waiters = ch;
		waiters_tail = ch;
		return false;
	}
	c->sess_connecting++;
	ch->pg_counted = true;
	ch->pg = pg_connect(c->pguser, c->password, c->db[0] ? c->db : NULL, false,
						chan_connected, ch);
	ch->pg->on_lost = events->lost;
	return false;
}

/*
 * The channel is done with its session, which is clean (no transaction,
 * nothing of the channel's held): it goes back to the pool, and the first
 * channel waiting for a session of the same role and database takes it.
 * One still connecting or being set up is closed.
 */
void
chan_session_pool(Chan *ch)
{
	char		key[800],
				wkey[800];
	PgSess	   *s = ch->pg;
	Chan	   *w;

	if (s == NULL)
		return;
	ch->pg = NULL;
	if (!ch->pg_ready)
	{
		pg_close(s);
		connect_done(ch);
		return;
	}
	ch->pg_ready = false;
	pool_key(ch->conn, key, sizeof(key));
	s->last_user = ch;
	pg_pool_put(s, key);
	for (w = waiters; w; w = w->wait_next)
	{
		if (w->conn != ch->conn)
		{
			pool_key(w->conn, wkey, sizeof(wkey));
			if (strcmp(wkey, key) != 0)
				continue;
		}
		wait_wake(w);
		break;
	}
}

/*
 * The channel's operations are all done: a channel that holds nothing in
 * its session -- not in tx mode, no consumer, no unacked delivery (a
 * basic.get's belongs to the session that took it), no get session --
 * gives it back to the pool until its next statement, so that publishing
 * channels share sessions (docs/amqp.md, "Channels and sessions").
 */
void
chan_session_idle(Chan *ch)
{
	if (!ch->pg_ready || ch->state != CH_OPEN || ch->op_running || ch->ops ||
		ch->tx || ch->consumers || ch->unacked || ch->tx_settled || ch->getpg)
		return;
	chan_session_pool(ch);
}

/*
 * The channel goes (teardown.c): its session is closed, not pooled (its
 * end returns what it held), and it waits no more.
 */
void
chan_session_drop(Chan *ch)
{
	PgSess	   *s = ch->pg;

	wait_remove(ch);
	ch->pg = NULL;
	ch->pg_ready = false;
	pg_close(s);
	connect_done(ch);
}

/*
 * A queue's row of mq.queues, read with mq._queue_stats(q): that queue's
 * state alone, where the view computes every queue's (at 1,000 queues the
 * view took 44 ms a call on the loaded machine, this 0.3 ms;
 * docs/management.md, "Answer times").  The row is the
 * view's but for quorum_met, not used here; the WHERE keeps a NULL q
 * matching nothing, as on the view.  Reading may raise 42704 when a queue
 * goes away meanwhile (another connection's exclusive queue, say): tried
 * again then.  Like the view, _queue_stats shows a role only the
 * queues it holds a privilege on: a queue that exists but is not shown
 * gives a row with NULL type and count (mq.in_flight says which: 42501
 * when it exists, 42704 when it does not), so that the caller answers 403
 * as RabbitMQ does, not 404.
 */
static const char queue_fn[] =
"CREATE FUNCTION pg_temp.amqp_queue(q text) RETURNS TABLE (queue text, type text, ready bigint) "
"LANGUAGE plpgsql AS $f$ "
"BEGIN "
"  FOR i IN 1 .. 20 LOOP "
"    BEGIN "
"      RETURN QUERY SELECT s.queue, s.type, s.ready::bigint FROM mq._queue_stats(q) s WHERE s.queue = q; "
"      IF FOUND THEN RETURN; END IF; "
"      BEGIN "
"        PERFORM mq.in_flight(q, 1); "
"      EXCEPTION WHEN insufficient_privilege THEN "
"        RETURN QUERY SELECT q, NULL::text, NULL::bigint; "
"        WHEN undefined_object OR feature_not_supported THEN NULL; "
"      END; "
"      RETURN; "
"    EXCEPTION WHEN undefined_object THEN "
"      PERFORM pg_sleep(0.005); "
"    END; "
"  END LOOP; "
"  RETURN QUERY SELECT s.queue, s.type, s.ready::bigint FROM mq._queue_stats(q) s WHERE s.queue = q; "
"END $f$";

/*
 * May the session's role do WHAT to queue Q: 'consume', or 'any' of
 * consume, configure and publish (a passive queue.declare: RabbitMQ asks
 * for any permission on the queue).  queue_ext has no SQL function that
 * only tells, so each is asked of a function that checks that privilege
 * before anything else and changes nothing: mq.in_flight (consume; on a
 * stream it raises 0A000 once the privilege passed) and mq.queue_declare
 * with no type (configure; it fails either way, on the type when allowed).
 * Publish cannot be asked so: a role with only publish on the queue is
 * told no.  A missing queue raises 42704.
 */
static const char may_fn[] =
"CREATE FUNCTION pg_temp.amqp_may(q text, what text) RETURNS boolean "
"LANGUAGE plpgsql AS $f$ "
"BEGIN "
"  BEGIN "
"    PERFORM mq.in_flight(q, 1); "
"    RETURN true; "
"  EXCEPTION WHEN feature_not_supported THEN RETURN true; "
"    WHEN insufficient_privilege THEN NULL; "
"  END; "
"  IF what = 'consume' THEN RETURN false; END IF; "
"  BEGIN "
"    PERFORM mq.queue_declare(q, type => ''); "
"  EXCEPTION WHEN insufficient_privilege THEN RETURN false; "
"    WHEN invalid_parameter_value THEN RETURN true; "
"  END; "
"  RETURN true; "
"END $f$";

/*
 * Requeue the deliveries of receipts RS (of queues QS) at a channel's
 * close, as the end of their sessions would: nacked with requeue, so that
 * they are ready again when the client reads close-ok.  All at once; if
 * that fails (a receipt no longer valid: its session ended meanwhile, its
 * queue was deleted, its lease ran out), one by one, skipping those: what
 * they named is back already or gone.
 */
static const char requeue_fn[] =
"CREATE FUNCTION pg_temp.amqp_requeue(qs text[], rs text[]) RETURNS int "
"LANGUAGE plpgsql AS $f$ "
"DECLARE n int := 0; "
"BEGIN "
"  BEGIN "
"    SELECT coalesce(sum(mq.nack(q, receipts => r, requeue => true)), 0) INTO n "
"      FROM (SELECT q, array_agg(r) r FROM unnest(qs, rs) t(q, r) GROUP BY q) s; "
"    RETURN n; "
"  EXCEPTION WHEN OTHERS THEN NULL; "
"  END; "
"  n := 0; "
"  FOR i IN 1 .. coalesce(array_length(rs, 1), 0) LOOP "
"    BEGIN "
"      n := n + mq.nack(qs[i], receipts => ARRAY[rs[i]], requeue => true); "
"    EXCEPTION WHEN OTHERS THEN NULL; "
"    END; "
"  END LOOP; "
"  RETURN n; "
"END $f$";

/* The channel's session is set up: the operations queued meanwhile run. */
static void
chan_setup_done(void *arg, PGresult *res)
{
	Chan	   *ch = arg;

	if (!res_ok(res))
	{
		events->setup_failed(ch, res);
		return;
	}
	ch->pg_ready = true;
	events->ready(ch);
}

/* Set up the basic.get session with the channel's functions. */
static void
getpg_setup(Chan *ch)
{
	pg_send(ch->getpg, queue_fn, 0, NULL, NULL, NULL, NULL, 0, getpg_setup_done, ch);
}

/* the channel's session is there: its functions in pg_temp */
static void
chan_setup(Chan *ch)
{
	Buf			sql = {0};

	buf_bytes(&sql, publish_fn, strlen(publish_fn));
	buf_bytes(&sql, "; ", 2);
	buf_bytes(&sql, queue_fn, strlen(queue_fn));
	buf_bytes(&sql, "; ", 2);
	buf_bytes(&sql, requeue_fn, strlen(requeue_fn));
	buf_bytes(&sql, "; ", 2);
	buf_bytes(&sql, may_fn, sizeof(may_fn));
	pg_send(ch->pg, (const char *) sql.data, 0, NULL, NULL, NULL, NULL, 0, chan_setup_done, ch);
	buf_free(&sql);
}
