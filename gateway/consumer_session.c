/*-------------------------------------------------------------------------
 *
 * consumer_session.c
 *	  A consumer's own PostgreSQL session: connected, a stream consumer's
 *	  group set up, its polls' deliveries sent to the client, its cancel-ok,
 *	  the session lost.
 *
 * It owns a consumer's session and its results; it decides nothing of
 * turns or credit (consumer.c).
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <string.h>

/*
 * The consumer has stopped: basic.cancel-ok (unless no-wait), and it is
 * removed.
 */
void
cons_send_cancel_ok(Consumer *cons)
{
	Chan	   *ch = cons->ch;

	cons->cancelling = false;
	if (!cons->cancel_nowait)
	{
		method_begin(ch->id, AMQP_BASIC, 31);
		buf_shortstr(&out, cons->tag);
		frame_send(ch->conn);
	}
	cons_remove(cons, false, false);
}

static void cons_polled_rows(Consumer *cons, PGresult *res);

/*
 * A poll's result; a new consumer's first: its consume-ok goes out before
 * the rows, and the channel's basic.consume is done after them.
 */
void
cons_polled(void *arg, PGresult *res)
{
	Consumer   *cons = arg;
	Chan	   *ch = cons->ch;
	void		(*done) (Chan *ch) = cons->on_consume_done;
	bool		sent = res != NULL && cons_consume_ok(cons);

	cons_polled_rows(cons, res);
	if (sent)
		done(ch);
}

/*
 * A long poll's result: its rows are delivered and tracked for the ack
 * (held while the channel's flow is off), then the consumer's turn passes
 * and it polls again if it may.
 */
static void
cons_polled_rows(Consumer *cons, PGresult *res)
{
	Chan	   *ch = cons->ch;
	Qreg	   *q = qreg_find(conn_db(ch->conn), cons->queue, false);

	if (q && q->poller == cons)
	{
		/* its turn ends: the next in line polls while these go out */
		if (res_ok(res) && PQntuples(res) >= cons->asked)
			q->batch = q->batch * 2 > 100 ? 100 : q->batch * 2;
		else
			q->batch = 1;
		q->poller = NULL;
		turn_pass(q);
	}
	cons->polling = false;
	cons->woken = false;
	ch->n_asked -= cons->asked;
	cons->asked = 0;
	if (res == NULL)
	{
		conn_error(ch->conn, AMQP_CONNECTION_FORCED,
				   "CONNECTION_FORCED - PostgreSQL session lost", 0, 0);
		return;
	}
	if (!res_ok(res))
	{
		const char *st = res_state(res);

		if (cons->cancelling && st && strcmp(st, "57014") == 0)
		{
			cons_send_cancel_ok(cons);
			return;
		}
		if (st && strcmp(st, "57014") == 0 && !cons->cancelled)
		{
			/*
			 * Cancelled by turn_start (the queue's consumers take turns
			 * now): nothing was taken, poll again in its turn
			 */
			cons_poll(cons);
			return;
		}
		if (st && strcmp(st, "42704") == 0)
		{
			/* the queue was deleted: the broker's cancel notification */
			cons_remove(cons, true, false);
			return;
		}
		logmsg("%s: consumer %s on \"%s\": %s", ch->conn->peer, cons->tag, cons->queue,
			   res_message(res));
		chan_sql_error(ch, res, NULL);
		return;
	}
	if (!ch->flow && PQntuples(res) > 0)
	{
		/*
		 * The client stopped our deliveries (channel.flow) while this poll
		 * waited: its rows stay leased to the consumer's session and go out
		 * when the flow is on again (cons_deliver_held), or back to the
		 * queue with that session.
		 */
		cons->held = PQcopyResult(res, PG_COPYRES_ATTRS | PG_COPYRES_TUPLES);
		if (cons->held == NULL)
		{
			conn_error(ch->conn, AMQP_INTERNAL_ERROR, "INTERNAL_ERROR - out of memory", 0, 0);
			return;
		}
	}
	else
		cons_deliver_rows(cons, res);
	if (cons->cancelling)
	{
		cons_send_cancel_ok(cons);
		return;
	}
	cons_poll(cons);
}

/*
 * A stream consumer's group is mq-amqp.<hex>, its own, deleted with the
 * consumer (cons_free).  Its session holds an advisory lock on the name
 * (class GROUP_LOCK, hashtext of the name) from the group's declare on, so
 * that a group whose consumer's session is gone (a gateway killed, its
 * sessions ended) can be told from a live one: the next stream consumer of
 * the stream, through any gateway, deletes those whose lock it gets.
 */
#define GROUP_LOCK "1836082541"
#define GROUP_DECLARE "SELECT mq.group_declare($1, $2, start => $3), " \
	"pg_catalog.pg_advisory_lock(" GROUP_LOCK ", pg_catalog.hashtext($2))"


/*
 * cons's session is ready (connected, a stream's group set up).  Its first
 * poll does not wait: consume-ok goes out with its result (cons_polled), so
 * that what the queue holds follows consume-ok at once, and a publish after
 * consume-ok finds the next poll waiting.  The channel's basic.consume is
 * done once consume-ok is sent (on_consume_done), not before.
 */
static void
cons_session_ready(Consumer *cons)
{
	Chan	   *ch = cons->ch;
	void		(*done) (Chan *ch) = cons->on_consume_done;
	bool		sent;

	cons->ready = true;
	if (cons->ok_pending && !cons->cancelling)
	{
		cons->first_poll = true;
		cons_poll(cons);
		cons->first_poll = false;
		if (cons->polling)
			return;				/* consume-ok comes with its result */
	}
	sent = cons_consume_ok(cons);
	if (cons->cancelling)
		cons_send_cancel_ok(cons);
	else
		cons_poll(cons);
	if (sent)
		done(ch);
}

/* The stream's left-over mq-amqp.* groups are swept: the consumer may poll. */
static void
stream_swept(void *arg, PGresult *res)
{
	Consumer   *cons = arg;
	Chan	   *ch = cons->ch;

	if (res == NULL)
	{
		conn_error(ch->conn, AMQP_CONNECTION_FORCED,
				   "CONNECTION_FORCED - PostgreSQL session lost", 0, 0);
		return;
	}
	/* what was not swept now is at the next consumer's setup */
	if (!res_ok(res))
		logmsg("%s: consumer %s on \"%s\": sweeping left-over groups: %s", ch->conn->peer,
			   cons->tag, cons->queue, res_message(res));
	cons_session_ready(cons);
}

/*
 * A stream consumer's group is set up at its offset: the groups other
 * gateways' consumers left on the stream (their sessions ended without
 * deleting them) go, in one statement of its session, then it may poll.
 */
static void
stream_ready(void *arg, PGresult *res)
{
	Consumer   *cons = arg;
	Chan	   *ch = cons->ch;
	const char *vals[2];

	if (!res_ok(res))
	{
		chan_sql_error(ch, res, NULL);
		return;
	}
	vals[0] = cons->queue;
	vals[1] = cons->group;
	pg_send(cons->pg,
			"SELECT pg_catalog.count(*) FROM (SELECT DISTINCT group_name FROM mq.consumer_groups "
			"WHERE queue = $1 AND group_name LIKE 'mq-amqp.%' AND group_name <> $2) o "
			"WHERE CASE WHEN pg_catalog.pg_try_advisory_xact_lock(" GROUP_LOCK
			", pg_catalog.hashtext(o.group_name)) "
			"THEN mq.group_delete($1, o.group_name, drop_dead_letters => true) IS NULL "
			"ELSE false END",
			2, NULL, vals, NULL, NULL, 0, stream_swept, cons);
}

/*
 * A stream consumer: a consumer group of its own (clustering, one member),
 * starting where x-stream-offset says: "first", "last"/"next" (the
 * default), an offset, a timestamp, or an age such as "1h" (RabbitMQ's
 * interval units Y M D h m s).  The group goes with the consumer.
 */
static void
stream_setup(Consumer *cons)
{
	json_object *o = cons->offset_spec;
	const char *start = "latest";
	char		arg[64] = "";
	const char *sql;
	const char *vals[4];
	int			n = 3;

	if (o && json_object_is_type(o, json_type_string))
	{
		const char *s = json_object_get_string(o);

		if (strcmp(s, "first") == 0)
			start = "earliest";
		else if (strcmp(s, "last") != 0 && strcmp(s, "next") != 0)
		{
			if (!rabbit_duration(s, true, arg, sizeof(arg)))
			{
				chan_error(cons->ch, AMQP_PRECONDITION_FAILED,
						   "PRECONDITION_FAILED - invalid x-stream-offset", AMQP_BASIC, 20);
				return;
			}
		}
	}
	else if (o && json_object_is_type(o, json_type_int))
		snprintf(arg, sizeof(arg), "%lld", (long long) json_object_get_int64(o));
	else if (o && json_object_is_type(o, json_type_object))
	{
		const char *t = json_str(o, AMQP_TYPE_KEY);
		json_object *v = json_get(o, "v");

		if (t && strcmp(t, "T") == 0 && v)
			snprintf(arg, sizeof(arg), "@%s", json_object_get_string(v));
		else if (t && (strchr("bBsUuilL", t[0]) != NULL) && v)
			snprintf(arg, sizeof(arg), "%s", json_object_get_string(v));
	}
	vals[0] = cons->queue;
	vals[1] = cons->group;
	vals[2] = start;
	if (arg[0] == '\0')
		sql = GROUP_DECLARE;
	else if (arg[0] == '@')
	{
		sql = GROUP_DECLARE ", "
			"mq.seek($1, $2, to_time => to_timestamp($4::bigint))";
		vals[3] = arg + 1;
		n = 4;
	}
	else if (strchr(arg, ' '))
	{
		sql = GROUP_DECLARE ", "
			"mq.seek($1, $2, to_time => now() - $4::interval)";
		vals[3] = arg;
		n = 4;
	}
	else
	{
		sql = GROUP_DECLARE ", "
			"mq.seek($1, $2, to_offset => $4::bigint)";
		vals[3] = arg;
		n = 4;
	}
	pg_send(cons->pg, sql, n, NULL, vals, NULL, NULL, 0, stream_ready, cons);
}

/*
 * The consumer's session connected: a stream consumer's group is set up
 * first, others poll at once.  If it failed, the connection is closed
 * (CONNECTION_FORCED).
 */
void
cons_connected(void *arg, bool ok, const char *error)
{
	Consumer   *cons = arg;

	if (!ok)
	{
		char		text[256];

		reply_text(text, sizeof(text), AMQP_CONNECTION_FORCED, error);
		conn_error(cons->ch->conn, AMQP_CONNECTION_FORCED, text, AMQP_BASIC, 20);
		return;
	}
	if (cons->stream)
	{
		stream_setup(cons);
		return;
	}
	cons_session_ready(cons);
}

/*
 * The consumer's session was lost, and its deliveries with it: the
 * connection is closed (CONNECTION_FORCED).
 */
void
cons_lost(void *arg)
{
	Consumer   *cons = arg;

	conn_error(cons->ch->conn, AMQP_CONNECTION_FORCED,
			   "CONNECTION_FORCED - PostgreSQL session lost", 0, 0);
}
