/*-------------------------------------------------------------------------
 *
 * channel_open.c
 *	  A channel's sessions opened: its PostgreSQL session connected and set
 *	  up (its functions in pg_temp), and the session of a tx-mode channel's
 *	  basic.get.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdlib.h>
#include <string.h>

static void chan_setup(Chan *ch);
static void getpg_setup(Chan *ch);

static void
chan_connected(void *arg, bool ok, const char *error)
{
	Chan	   *ch = arg;

	if (!ok)
	{
		char		text[256];

		reply_text(text, sizeof(text), AMQP_CONNECTION_FORCED, error);
		conn_error(ch->conn, AMQP_CONNECTION_FORCED, text, AMQP_CHANNEL, 10);
		return;
	}
	chan_setup(ch);
}

void
chan_lost(void *arg)
{
	Chan	   *ch = arg;

	conn_error(ch->conn, AMQP_CONNECTION_FORCED,
			   "CONNECTION_FORCED - PostgreSQL session lost", 0, 0);
}

static void
getpg_setup_done(void *arg, PGresult *res)
{
	Chan	   *ch = arg;

	if (!res_ok(res))
	{
		chan_sql_error(ch, res, NULL);
		return;
	}
	ch->getpg_ready = true;
	/* the get waiting for it */
	if (ch->op_running && ch->ops && ch->ops->kind == OP_GET)
		run_op(ch, ch->ops);
}

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

Chan *
chan_open(Conn *c, uint16_t id)
{
	Chan	   *ch = calloc(1, sizeof(Chan));

	ch->conn = c;
	ch->id = id;
	ch->flow = true;
	ch->state = CH_OPEN;
	ch->pg = pg_connect(c->pguser, c->password, c->db[0] ? c->db : NULL, false,
						chan_connected, ch);
	ch->pg->on_lost = chan_lost;
	c->chans[id] = ch;
	return ch;
}

/*
 * A queue's row of mq.queues.  The view computes every queue's state, and
 * raises 42704 when a queue goes away meanwhile (another connection's
 * exclusive queue, say): tried again then.
 */
static const char queue_fn[] =
"CREATE FUNCTION pg_temp.amqp_queue(q text) RETURNS TABLE (queue text, type text, ready bigint) "
"LANGUAGE plpgsql AS $f$ "
"BEGIN "
"  FOR i IN 1 .. 20 LOOP "
"    BEGIN "
"      RETURN QUERY SELECT s.queue, s.type, s.ready::bigint FROM mq.queues s WHERE s.queue = q; "
"      RETURN; "
"    EXCEPTION WHEN undefined_object THEN "
"      PERFORM pg_sleep(0.005); "
"    END; "
"  END LOOP; "
"  RETURN QUERY SELECT s.queue, s.type, s.ready::bigint FROM mq.queues s WHERE s.queue = q; "
"END $f$";

static void
chan_setup_done(void *arg, PGresult *res)
{
	Chan	   *ch = arg;

	if (!res_ok(res))
	{
		chan_sql_error(ch, res, NULL);
		return;
	}
	ch->pg_ready = true;
	chan_pump(ch);
}

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
	buf_bytes(&sql, queue_fn, sizeof(queue_fn));
	pg_send(ch->pg, (const char *) sql.data, 0, NULL, NULL, NULL, NULL, 0, chan_setup_done, ch);
	buf_free(&sql);
}
