/*-------------------------------------------------------------------------
 *
 * operations.c
 *	  The queued operations engine: a channel runs its operations (declares,
 *	  binds, purges, deletes, consumes, gets, settles, publishes, tx, close)
 *	  in order, one statement at a time on its session, consecutive
 *	  publishes and settles as one; each operation's result becomes its
 *	  reply, and the next one runs.
 *
 * It owns the SQL the channels run and the replies built from its
 * results; it decodes no frames (methods.c, content.c).
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run_queue_declare(Chan *ch, Op *op);
static void delete_checked(void *arg, PGresult *res);

/*
 * A statement of an autocommit channel that PostgreSQL chose as a deadlock
 * victim (or a serialization failure) changed nothing: run it again, as
 * RabbitMQ would not have failed it.  Not in tx mode: the transaction is
 * gone with it.
 */
static bool
op_retry(Chan *ch, PGresult *res, Op *op)
{
	const char *st = res_state(res);

	if (res == NULL || op == NULL || ch->tx || op->retries >= 10 || st == NULL ||
		(strcmp(st, "40P01") != 0 && strcmp(st, "40001") != 0))
		return false;
	op->retries++;
	run_op(ch, op);
	return true;
}

/*
 * A statement's result, when it is an error: the statement runs again
 * (op_retry) or the channel is closed with the error.  True when res was an
 * error: the result's callback has nothing more to do.
 */
static bool
op_failed(Chan *ch, PGresult *res, Op *op)
{
	if (res_ok(res))
		return false;
	if (!op_retry(ch, res, op))
		chan_sql_error(ch, res, op);
	return true;
}

/* the head operation is done: next one */
static void
op_finish(Chan *ch)
{
	Op		   *op = ch->ops;

	ch->op_running = false;
	if (op == NULL)
		return;
	ch->ops = op->next;
	if (ch->ops == NULL)
		ch->ops_tail = NULL;
	op_free(op);
	chan_pump(ch);
}

/*
 * A basic.consume is done (its consume-ok sent: the consumer's
 * on_consume_done, from consumer_session.c or consumer.c): the channel's
 * next method runs, unless the channel went meanwhile.
 */
void
consume_done(Chan *ch)
{
	if (ch->state == CH_OPEN && ch->op_running && ch->ops && ch->ops->kind == OP_CONSUME)
		op_finish(ch);
}

/* Send queue.<meth> with a message count (purge-ok, delete-ok). */
static void
reply_queue_ok(Chan *ch, uint16_t meth, int64_t count)
{
	method_begin(ch->id, AMQP_QUEUE, meth);
	buf_u32(&out, (uint32_t) (count < 0 ? 0 : count));
	frame_send(ch->conn);
}

/*
 * Exchanges declared through this gateway since it started, with their
 * auto_delete (which queue_ext has not: accepted and kept here only so
 * that a redeclare with another is refused, as RabbitMQ does).
 */
typedef struct Xreg
{
	char		db[256];
	char		name[256];
	bool		auto_delete;
	struct Xreg *next;
} Xreg;

static Xreg *xregs;

static Xreg **
xreg_find(const char *db, const char *name)
{
	Xreg	  **pp;

	for (pp = &xregs; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->db, db) == 0 && strcmp((*pp)->name, name) == 0)
			return pp;
	return pp;
}

/*
 * exchange.declare's result: an exchange that was there, declared here
 * before with another auto_delete, is 406 as with RabbitMQ (type, durable
 * and alternate-exchange: mq.exchange_declare compares them); declare-ok.
 */
static void
exchange_declared(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;
	Conn	   *c = ch->conn;
	Xreg	  **pp;

	if (op_failed(ch, res, op))
		return;
	pp = xreg_find(conn_db(c), op->s1);
	if (*pp && strcmp(PQgetvalue(res, 0, 0), "t") == 0 && (*pp)->auto_delete != op->auto_delete)
	{
		char		text[700];

		snprintf(text, sizeof(text),
				 "PRECONDITION_FAILED - inequivalent arg 'auto_delete' for exchange '%s' in vhost '%s': "
				 "received '%s' but current is '%s'", op->s1, c->vhost,
				 op->auto_delete ? "true" : "false", (*pp)->auto_delete ? "true" : "false");
		chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
		return;
	}
	if (*pp == NULL && (*pp = calloc(1, sizeof(Xreg))) != NULL)
	{
		snprintf((*pp)->db, sizeof((*pp)->db), "%s", conn_db(c));
		snprintf((*pp)->name, sizeof((*pp)->name), "%s", op->s1);
	}
	if (*pp)
		(*pp)->auto_delete = op->auto_delete;
	if (!op->nowait)
		send_simple(c, ch->id, AMQP_EXCHANGE, 11);
	op_finish(ch);
}

/*
 * The result of a one-statement operation (exchange declare and delete,
 * bind, unbind, purge, queue delete, tx.select): its reply, or its error;
 * then the next operation.
 */
static void
op_simple_done(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;
	const char *st = res_state(res);

	/* deleting a missing queue is fine (RabbitMQ) */
	if (op->kind == OP_QUEUE_DELETE && st && strcmp(st, "42704") == 0 && !ch->tx)
	{
		if (!op->nowait)
			reply_queue_ok(ch, 41, 0);
		op_finish(ch);
		return;
	}
	if (op_failed(ch, res, op))
		return;
	switch (op->kind)
	{
		case OP_EXCHANGE_DECLARE:
			if (op->passive && PQntuples(res) == 0)
			{
				char		text[300];

				snprintf(text, sizeof(text), "NOT_FOUND - no exchange '%s' in vhost '%s'",
						 op->s1, ch->conn->vhost);
				chan_error(ch, AMQP_NOT_FOUND, text, op->cls, op->meth);
				return;
			}
			if (!op->nowait)
				send_simple(ch->conn, ch->id, AMQP_EXCHANGE, 11);
			break;
		case OP_EXCHANGE_DELETE:
			{
				Xreg	  **pp = xreg_find(conn_db(ch->conn), op->s1);

				if (*pp)
				{
					Xreg	   *x = *pp;

					*pp = x->next;
					free(x);
				}
			}
			if (!op->nowait)
				send_simple(ch->conn, ch->id, AMQP_EXCHANGE, 21);
			break;
		case OP_QUEUE_BIND:
			if (!op->nowait)
				send_simple(ch->conn, ch->id, AMQP_QUEUE, 21);
			break;
		case OP_QUEUE_UNBIND:
			send_simple(ch->conn, ch->id, AMQP_QUEUE, 51);
			break;
		case OP_QUEUE_PURGE:
			if (!op->nowait)
				reply_queue_ok(ch, 31, strtoll(PQgetvalue(res, 0, 0), NULL, 10));
			break;
		case OP_QUEUE_DELETE:
			{
				Qreg	   *q = qreg_find(conn_db(ch->conn), op->s1, false);

				if (q)
				{
					q->owner = NULL;
					q->auto_delete = false;
					q->known = false;
					qreg_expires_off(q);
					qreg_maybe_drop(q);
				}
				if (!op->nowait)
					reply_queue_ok(ch, 41, PQntuples(res) ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0);
				break;
			}
		case OP_TX_SELECT:
			ch->tx = true;
			send_simple(ch->conn, ch->id, AMQP_TX, 11);
			break;
		default:
			break;
	}
	op_finish(ch);
}

/*
 * RabbitMQ 3.10's queue arguments (rabbit_amqqueue:declare_args) that the
 * gateway accepts and ignores: compared at a redeclare all the same
 */
static const char *const ignored_queue_args[] = {
	"x-queue-mode", "x-queue-version", "x-single-active-consumer", "x-max-in-memory-length",
	"x-max-in-memory-bytes", "x-quorum-initial-group-size", "x-initial-cluster-size",
	"x-queue-leader-locator", "x-stream-max-segment-size-bytes", NULL
};

/* an argument's value as RabbitMQ's inequivalent-arg text shows it */
static void
arg_text(char *buf, size_t len, json_object *v, bool with_type)
{
	const char *type;

	if (v == NULL)
	{
		snprintf(buf, len, "none");
		return;
	}
	switch (json_object_get_type(v))
	{
		case json_type_string:
			type = "longstr";
			break;
		case json_type_boolean:
			type = "bool";
			break;
		case json_type_int:
			type = json_object_get_int64(v) >= INT32_MIN && json_object_get_int64(v) <= INT32_MAX ?
				"signedint" : "long";
			break;
		case json_type_double:
			type = "double";
			break;
		default:
			type = "table";
			break;
	}
	if (with_type)
		snprintf(buf, len, "the value '%s' of type '%s'",
				 json_object_is_type(v, json_type_string) ? json_object_get_string(v) :
				 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), type);
	else
		snprintf(buf, len, "'%s'",
				 json_object_is_type(v, json_type_string) ? json_object_get_string(v) :
				 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

/* the ignored arguments of a declare, kept for the next (NULL: none) */
static json_object *
ignored_args_of(json_object *args)
{
	json_object *o = NULL;
	int			i;

	for (i = 0; ignored_queue_args[i]; i++)
	{
		json_object *v = json_get(args, ignored_queue_args[i]);

		if (v == NULL)
			continue;
		if (o == NULL)
			o = json_object_new_object();
		json_object_object_add(o, ignored_queue_args[i], json_object_get(v));
	}
	return o;
}

/*
 * A queue.declare of a queue that was there: what queue_ext does not hold
 * (auto-delete, exclusive, x-expires, the x-arguments it ignores: the
 * gateway's, in memory) must be as
 * declared through this gateway before, as
 * RabbitMQ's rabbit_amqqueue:assert_equivalence requires (durable and
 * queue_ext's arguments: mq.queue_declare checks them): 406, or 405 for
 * exclusive, RabbitMQ's codes and texts.  False when the channel is closed.
 */
static bool
queue_equivalent(Chan *ch, Op *op)
{
	Conn	   *c = ch->conn;
	Qreg	   *q = qreg_find(conn_db(c), op->s1, false);
	bool		auto_delete = q && q->auto_delete;
	bool		exclusive = q && q->owner == c;
	int64_t		expires = q ? q->expires : 0;
	char		text[1024];
	int			i;

	/*
	 * not declared through this gateway since it started (before a
	 * restart, or with SQL): its first declare here says what it is
	 */
	if (q == NULL || !q->known)
		return true;
	if (op->auto_delete != auto_delete)
	{
		snprintf(text, sizeof(text),
				 "PRECONDITION_FAILED - inequivalent arg 'auto_delete' for queue '%s' in vhost '%s': "
				 "received '%s' but current is '%s'", op->s1, c->vhost,
				 op->auto_delete ? "true" : "false", auto_delete ? "true" : "false");
		chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
		return false;
	}
	if (op->exclusive != exclusive)
	{
		snprintf(text, sizeof(text),
				 "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '%s' in vhost '%s'. "
				 "It could be originally declared on another connection or the exclusive property "
				 "value does not match that of the original declaration.", op->s1, c->vhost);
		chan_error(ch, AMQP_RESOURCE_LOCKED, text, op->cls, op->meth);
		return false;
	}
	if (op->expires != expires)
	{
		char		got[64],
					cur[64];

		if (op->expires)
			snprintf(got, sizeof(got), expires ? "'%lld'" : "the value '%lld' of type 'signedint'",
					 (long long) op->expires);
		else
			snprintf(got, sizeof(got), "none");
		if (expires)
			snprintf(cur, sizeof(cur), op->expires ? "'%lld'" : "the value '%lld' of type 'signedint'",
					 (long long) expires);
		else
			snprintf(cur, sizeof(cur), "none");
		snprintf(text, sizeof(text),
				 "PRECONDITION_FAILED - inequivalent arg 'x-expires' for queue '%s' in vhost '%s': "
				 "received %s but current is %s", op->s1, c->vhost, got, cur);
		chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
		return false;
	}
	for (i = 0; ignored_queue_args[i]; i++)
	{
		json_object *want = json_get(op->args, ignored_queue_args[i]);
		json_object *now = json_get(q->ignored_args, ignored_queue_args[i]);
		char		got[300],
					cur[300];

		if ((want == NULL && now == NULL) || (want && now && json_object_equal(want, now)))
			continue;
		arg_text(got, sizeof(got), want, now == NULL);
		arg_text(cur, sizeof(cur), now, want == NULL);
		snprintf(text, sizeof(text),
				 "PRECONDITION_FAILED - inequivalent arg '%s' for queue '%s' in vhost '%s': "
				 "received %s but current is %s", ignored_queue_args[i], op->s1, c->vhost, got, cur);
		chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
		return false;
	}
	return true;
}

/*
 * queue.declare's result: the gateway's state of an exclusive,
 * auto-delete or expiring queue, the channel's last queue, declare-ok.
 */
static void
queue_declared(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;
	Conn	   *c = ch->conn;
	const char *name;
	Qreg	   *q;

	if (op_failed(ch, res, op))
		return;
	if (PQntuples(res) == 0 && op->stage == 0)
	{
		char		text[600];

		snprintf(text, sizeof(text), "NOT_FOUND - no queue '%s' in vhost '%s'", op->s1, c->vhost);
		chan_error(ch, AMQP_NOT_FOUND, text, op->cls, op->meth);
		return;
	}
	if (op->stage == 0 && strcmp(PQgetvalue(res, 0, 2), "t") != 0)
	{
		char		text[800];

		/* a passive declare without any privilege on the queue (RabbitMQ's text) */
		snprintf(text, sizeof(text),
				 "ACCESS_REFUSED - configure access to queue '%s' in vhost '%s' refused for user '%s'",
				 op->s1, c->vhost, c->user);
		chan_error(ch, AMQP_ACCESS_REFUSED, text, op->cls, op->meth);
		return;
	}
	name = op->s1;
	if (!op->passive && op->existed && !queue_equivalent(ch, op))
		return;
	if (!op->passive)
	{
		q = qreg_find(conn_db(c), name, true);
		q->known = true;
		if (q->ignored_args)
			json_object_put(q->ignored_args);
		q->ignored_args = ignored_args_of(op->args);
	}
	if (!op->passive && (op->exclusive || op->auto_delete))
	{
		q = qreg_find(conn_db(c), name, true);
		if (op->exclusive)
			q->owner = c;
		if (op->auto_delete)
			q->auto_delete = true;
	}
	if (!op->passive && op->expires > 0)
	{
		q = qreg_find(conn_db(c), name, true);
		if (q->expire_ev == NULL)
			q->expire_ev = evtimer_new(gw_base, qreg_expired, q);
		q->expires = op->expires;
		snprintf(q->expire_user, sizeof(q->expire_user), "%s", c->pguser);
		free(q->expire_password);
		q->expire_password = c->password ? strdup(c->password) : NULL;
	}
	q = qreg_find(conn_db(c), name, false);
	qreg_touch(q);
	snprintf(ch->last_queue, sizeof(ch->last_queue), "%s", name);
	if (!op->nowait)
	{
		method_begin(ch->id, AMQP_QUEUE, 11);
		buf_shortstr(&out, name);
		buf_u32(&out, PQntuples(res) == 0 || PQgetisnull(res, 0, 1) ? 0 :
				(uint32_t) strtoll(PQgetvalue(res, 0, 1), NULL, 10));
		buf_u32(&out, q ? q->consumers : 0);
		frame_send(c);
	}
	op_finish(ch);
}

/*
 * mq.queue_declare refused a redeclare of an existing queue with another
 * durable or other arguments (55000): the channel is closed with
 * RabbitMQ's text, the first argument that differs named in RabbitMQ's
 * order (the error's detail has both sets).  False if it was another error.
 */
static bool
queue_inequivalent(Chan *ch, Op *op, PGresult *res)
{
	static const char *const order[] = {
		"x-message-ttl", "x-dead-letter-exchange", "x-dead-letter-routing-key", "x-max-length",
		"x-max-length-bytes", "x-max-priority", "x-overflow", "x-delivery-limit", NULL
	};
	const char *st = res_state(res);
	const char *msg = res_message(res);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	Conn	   *c = ch->conn;
	char		text[1024];

	if (st == NULL || strcmp(st, "55000") != 0 || msg == NULL)
		return false;
	if (strstr(msg, "already exists with durable = "))
	{
		bool		cur = strstr(msg, "durable = t") != NULL;

		snprintf(text, sizeof(text),
				 "PRECONDITION_FAILED - inequivalent arg 'durable' for queue '%s' in vhost '%s': "
				 "received '%s' but current is '%s'", op->s1, c->vhost,
				 cur ? "false" : "true", cur ? "true" : "false");
		chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
		return true;
	}
	if (strstr(msg, "already exists with different arguments") && detail)
	{
		const char *e = strstr(detail, "Existing arguments: ");
		const char *r = strstr(detail, "; requested: ");
		json_object *now = NULL,
				   *want = NULL;
		int			i;
		bool		done = false;

		if (e && r && r > e)
		{
			char	   *a = strndup(e + 20, r - (e + 20));
			char	   *b = strdup(r + 13);
			size_t		n = strlen(b);

			if (n > 0 && b[n - 1] == '.')
				b[n - 1] = '\0';
			now = json_tokener_parse(a);
			want = json_tokener_parse(b);
			free(a);
			free(b);
		}
		for (i = 0; order[i] && now && want && !done; i++)
		{
			json_object *w = json_get(want, order[i]);
			json_object *v = json_get(now, order[i]);
			char		got[300],
						cur[300];

			if ((w == NULL && v == NULL) || (w && v && json_object_equal(w, v)))
				continue;
			arg_text(got, sizeof(got), w, v == NULL);
			arg_text(cur, sizeof(cur), v, w == NULL);
			snprintf(text, sizeof(text),
					 "PRECONDITION_FAILED - inequivalent arg '%s' for queue '%s' in vhost '%s': "
					 "received %s but current is %s", order[i], op->s1, c->vhost, got, cur);
			done = true;
		}
		if (now)
			json_object_put(now);
		if (want)
			json_object_put(want);
		if (done)
		{
			chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
			return true;
		}
	}
	return false;
}

/*
 * First stage of a server-named queue's declare: its name is known, the
 * declare proper runs.
 */
static void
queue_declared_1(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;

	if (!res_ok(res))
	{
		if (!op_retry(ch, res, op) && !queue_inequivalent(ch, op, res))
			chan_sql_error(ch, res, op);
		return;
	}
	/* the name: a server-named queue's is made up by queue_declare */
	op->existed = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	snprintf(op->s1, sizeof(op->s1), "%s", PQgetvalue(res, 0, 1));
	op->stage = 1;
	run_queue_declare(ch, op);
}

/*
 * Run queue.declare: refused if another connection's exclusive queue;
 * its arguments in queue_ext's terms; a passive declare only looks.
 */
static void
run_queue_declare(Chan *ch, Op *op)
{
	Conn	   *c = ch->conn;
	char		err[256],
				text[300];

	if (qreg_locked(c, op->s1))
	{
		snprintf(text, sizeof(text),
				 "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '%s' in vhost '%s'",
				 op->s1, c->vhost);
		chan_error(ch, AMQP_RESOURCE_LOCKED, text, op->cls, op->meth);
		return;
	}
	if (op->passive || op->stage == 1)
	{
		const char *vals[1] = {op->s1};

		/* passive: no message count for a role with no privilege on it */
		pg_send(ch->pg, op->stage == 0 ?
				"SELECT queue, ready, pg_temp.amqp_may(queue, 'any') FROM pg_temp.amqp_queue($1)" :
				"SELECT queue, ready FROM pg_temp.amqp_queue($1)",
				1, NULL, vals, NULL, NULL, 0, queue_declared, ch);
	}
	else
	{
		const char *type;
		char	   *args = queue_arguments(op->args, &type, err, sizeof(err));
		const char *vals[4];

		if (args == NULL)
		{
			reply_text(text, sizeof(text), AMQP_PRECONDITION_FAILED, err);
			chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
			return;
		}
		if (strcmp(type, "quorum") == 0)
		{
			/*
			 * RabbitMQ 4.3's quorum-queue arguments that queue_ext's
			 * quorum queues cannot honour (strict priorities, delayed
			 * retries, consumer timeouts: docs/amqp.md) are refused as
			 * RabbitMQ refuses an argument its queue type has not
			 */
			static const char *const refused[] = {
				"x-max-priority", "x-delayed-retry-type", "x-delayed-retry-min",
				"x-delayed-retry-max", "x-consumer-timeout", NULL
			};
			int			i;

			for (i = 0; refused[i]; i++)
				if (json_get(op->args, refused[i]))
				{
					snprintf(text, sizeof(text),
							 "PRECONDITION_FAILED - invalid arg '%s' for queue '%s' in vhost '%s' "
							 "of queue type rabbit_quorum_queue", refused[i], op->s1, c->vhost);
					free(args);
					chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
					return;
				}
		}
		{
			/* x-expires: a positive integer (ms), as RabbitMQ checks it */
			json_object *xe = json_get(op->args, "x-expires");

			op->expires = 0;
			if (xe && (!json_object_is_type(xe, json_type_int) ||
					   json_object_get_int64(xe) <= 0))
			{
				snprintf(text, sizeof(text),
						 "PRECONDITION_FAILED - invalid arg 'x-expires' for queue '%s' in vhost '%s': %s",
						 op->s1, c->vhost,
						 !json_object_is_type(xe, json_type_int) ? "not an integer" :
						 json_object_get_int64(xe) == 0 ? "zero" : "negative");
				free(args);
				chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
				return;
			}
			if (xe)
				op->expires = json_object_get_int64(xe);
		}
		if (strcmp(type, "classic") != 0 &&
			(!op->durable || op->auto_delete || op->exclusive))
		{
			/* quorum queues and streams are durable and shared (RabbitMQ) */
			snprintf(text, sizeof(text),
					 "PRECONDITION_FAILED - invalid property '%s' for queue '%s' in vhost '%s'",
					 !op->durable ? "non-durable" : op->auto_delete ? "auto-delete" : "exclusive-owner",
					 op->s1, c->vhost);
			free(args);
			chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
			return;
		}
		if (strncmp(op->s1, "amq.", 4) == 0)
		{
			snprintf(text, sizeof(text),
					 "ACCESS_REFUSED - queue name '%s' contains reserved prefix 'amq.*'", op->s1);
			free(args);
			chan_error(ch, AMQP_ACCESS_REFUSED, text, op->cls, op->meth);
			return;
		}
		vals[0] = op->s1;
		vals[1] = type;
		vals[2] = (op->durable && !op->exclusive) || strcmp(type, "classic") != 0 ? "true" : "false";
		vals[3] = args;
		/*
		 * declared first, counted after: reading every queue's state in the
		 * declaring transaction would deadlock against concurrent declares
		 */
		/* whether it existed: read before the declare, in its snapshot */
		pg_send(ch->pg,
				"SELECT EXISTS (SELECT FROM mq._queue_stats($1::text) s WHERE s.queue = $1), "
				"mq.queue_declare($1, type => $2, durable => $3::boolean, "
				"arguments => $4::jsonb)",
				4, NULL, vals, NULL, NULL, 0, queue_declared_1, ch);
		free(args);
	}
}

/*
 * basic.consume's checks are done (queue found, privilege, exclusive
 * use, stream rules): the consumer is made, consume-ok sent, and its own
 * session connects.
 */
static void
consume_checked(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;
	Conn	   *c = ch->conn;
	Consumer   *cons;
	Qreg	   *q;
	char		text[600];

	if (op_failed(ch, res, op))
		return;
	if (PQntuples(res) == 0)
	{
		snprintf(text, sizeof(text), "NOT_FOUND - no queue '%s' in vhost '%s'", op->s1, c->vhost);
		chan_error(ch, AMQP_NOT_FOUND, text, op->cls, op->meth);
		return;
	}
	if (strcmp(PQgetvalue(res, 0, 1), "t") != 0)
	{
		/* refused before consume-ok, as RabbitMQ (its text) */
		snprintf(text, sizeof(text),
				 "ACCESS_REFUSED - read access to queue '%s' in vhost '%s' refused for user '%s'",
				 op->s1, c->vhost, c->user);
		chan_error(ch, AMQP_ACCESS_REFUSED, text, op->cls, op->meth);
		return;
	}
	q = qreg_find(conn_db(c), op->s1, true);
	if (q->exclusive_consumer || (op->exclusive && q->consumers > 0))
	{
		snprintf(text, sizeof(text), "ACCESS_REFUSED - queue '%s' in vhost '%s' in exclusive use",
				 op->s1, c->vhost);
		qreg_maybe_drop(q);
		chan_error(ch, AMQP_ACCESS_REFUSED, text, op->cls, op->meth);
		return;
	}
	if (strcmp(PQgetvalue(res, 0, 0), "stream") == 0)
	{
		/* RabbitMQ's restrictions on a stream's consumers, its codes */
		if (op->no_ack)
		{
			snprintf(text, sizeof(text),
					 "NOT_IMPLEMENTED - queue '%s' in vhost '%s' does not support consuming in auto-ack mode",
					 op->s1, c->vhost);
			qreg_maybe_drop(q);
			conn_error(c, AMQP_NOT_IMPLEMENTED, text, op->cls, op->meth);
			return;
		}
		if (ch->prefetch_consumer == 0 && ch->prefetch_global == 0)
		{
			snprintf(text, sizeof(text),
					 "PRECONDITION_FAILED - consumer prefetch count is not set for queue '%s' in vhost '%s'",
					 op->s1, c->vhost);
			qreg_maybe_drop(q);
			chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
			return;
		}
	}
	cons = calloc(1, sizeof(Consumer));
	cons->ch = ch;
	snprintf(cons->tag, sizeof(cons->tag), "%s", op->s3);
	snprintf(cons->queue, sizeof(cons->queue), "%s", op->s1);
	cons->no_ack = op->no_ack;
	cons->exclusive = op->exclusive;
	cons->prefetch = cons->no_ack ? 0 : ch->prefetch_consumer;
	if (strcmp(PQgetvalue(res, 0, 0), "stream") == 0)
	{
		cons->stream = true;
		snprintf(cons->group, sizeof(cons->group), "mq-amqp.%08lx%08lx",
				 (unsigned long) random(), (unsigned long) random());
		cons->offset_spec = json_get(op->args, "x-stream-offset");
		if (cons->offset_spec)
			json_object_get(cons->offset_spec);
	}
	cons->next = ch->consumers;
	ch->consumers = cons;
	q->consumers++;
	q->had_consumer = true;
	qreg_touch(q);				/* no expiry while it has consumers */
	if (q->consumers == 2)
		turn_start(cons);		/* the consumers of the queue take turns now */
	if (op->exclusive)
		q->exclusive_consumer = cons;
	/*
	 * consume-ok once its session is ready and its first poll sent
	 * (cons_session_ready): a message in the queue then goes out at once
	 * after consume-ok, and one the client publishes after consume-ok finds
	 * the poll waiting.  The channel's next methods wait until then, as they
	 * would behind RabbitMQ's consume-ok.
	 */
	cons->ok_pending = true;
	cons->ok_nowait = op->nowait;
	cons->on_polled = cons_polled;
	cons->on_consume_done = consume_done;
	cons->pg = pg_connect(c->pguser, c->password, c->db[0] ? c->db : NULL, true,
						  cons_connected, cons);
	cons->pg->on_lost = cons_lost;
}

/*
 * basic.get's result: get-empty, or get-ok with the message, tracked for
 * the ack unless no-ack.  On a stream: 540, a connection error, as
 * RabbitMQ.
 */
static void
get_done(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;

	if (!res_ok(res))
	{
		const char *st = res_state(res);

		if (st && strcmp(st, "0A000") == 0)
		{
			char		text[256];

			/* basic.get on a stream: RabbitMQ closes the connection, 540 */
			reply_text(text, sizeof(text), AMQP_NOT_IMPLEMENTED, res_message(res));
			conn_error(ch->conn, AMQP_NOT_IMPLEMENTED, text, op->cls, op->meth);
			return;
		}
		if (!op_retry(ch, res, op))
			chan_sql_error(ch, res, op);
		return;
	}
	if (PQntuples(res) == 0)
	{
		method_begin(ch->id, AMQP_BASIC, 72);
		buf_shortstr(&out, "");
		frame_send(ch->conn);
	}
	else
	{
		uint64_t	tag = track_delivery(ch, res, 0, NULL, op->no_ack);
		int64_t		ready = PQgetisnull(res, 0, COL_READY) ? 0 : col_i64(res, 0, COL_READY);

		method_begin(ch->id, AMQP_BASIC, 71);
		buf_u64(&out, tag);
		buf_u8(&out, *PQgetvalue(res, 0, COL_REDELIVERED) ? 1 : 0);
		buf_shortstr(&out, PQgetvalue(res, 0, COL_EXCHANGE));
		buf_shortstr(&out, PQgetvalue(res, 0, COL_RK));
		buf_u32(&out, ready > 0 ? (uint32_t) ready : 0);
		frame_send(ch->conn);
		send_row_content(ch, res, 0);
	}
	op_finish(ch);
}

/*
 * A settle's result: in tx mode its entries wait for commit; otherwise
 * they are done, and their consumers' counts drop.
 */
static void
settle_done(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;

	if (op_failed(ch, res, op))
		return;
	if (op->kind == OP_RECOVER)
		send_simple(ch->conn, ch->id, AMQP_BASIC, 111);
	if (ch->tx && op->kind == OP_SETTLE)
	{
		/* kept until COMMIT (credit) or ROLLBACK (unacked again) */
		Unacked    *e = op->entries;

		while (e && e->next)
			e = e->next;
		if (e)
		{
			e->next = ch->tx_settled;
			ch->tx_settled = op->entries;
			op->entries = NULL;
		}
	}
	else
	{
		Unacked    *e,
				   *list = op->entries;

		op->entries = NULL;
		for (e = list; e; e = e->next)
			if (e->cons)
			{
				e->cons->unacked--;
				if (e->early)
					e->cons->credited--;
			}
		settle_done_entries(ch, list);
	}
	if (ch->state == CH_OPEN)
		op_finish(ch);
}

/*
 * Run a settle (ack, nack, reject, recover) of the entries it took: one
 * statement over all their queues and receipts.
 */
static void
run_settle(Chan *ch, Op *op)
{
	int			n = 0,
				i;
	Unacked    *e;
	char	  **qs,
			  **rs;
	Buf			qa = {0},
				ra = {0};
	const char *vals[3];
	const char *sql;

	for (e = op->entries; e; e = e->next)
		n++;
	if (n == 0)
	{
		if (op->kind == OP_RECOVER)
			send_simple(ch->conn, ch->id, AMQP_BASIC, 111);
		op_finish(ch);
		return;
	}
	qs = calloc(n, sizeof(char *));
	rs = calloc(n, sizeof(char *));
	for (i = 0, e = op->entries; e; e = e->next, i++)
	{
		qs[i] = e->queue;
		rs[i] = e->receipt;
	}
	text_array(&qa, qs, n);
	text_array(&ra, rs, n);
	vals[0] = (const char *) qa.data;
	vals[1] = (const char *) ra.data;
	vals[2] = op->requeue ? "true" : "false";
	if (op->settle == SETTLE_ACK)
		sql = "SELECT sum(mq.ack(q, receipts => r)) FROM (SELECT q, array_agg(r) r "
			"FROM unnest($1::text[], $2::text[]) t(q, r) GROUP BY q) s";
	else if (op->settle == SETTLE_NACK)
		sql = "SELECT sum(mq.nack(q, receipts => r, requeue => $3::boolean)) FROM "
			"(SELECT q, array_agg(r) r FROM unnest($1::text[], $2::text[]) t(q, r) GROUP BY q) s";
	else
		sql = "SELECT sum(mq.reject(q, receipt => r, requeue => $3::boolean)) "
			"FROM unnest($1::text[], $2::text[]) t(q, r)";
	pg_send(ch->pg, sql, op->settle == SETTLE_ACK ? 2 : 3, NULL, vals, NULL, NULL, 0, settle_done, ch);
	free(qs);
	free(rs);
	buf_free(&qa);
	buf_free(&ra);
}

/*
 * tx.commit's or tx.rollback's result: the settles kept for the
 * transaction are done (commit) or their deliveries unacked again
 * (rollback); then commit-ok or rollback-ok.
 */
static void
tx_done(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;
	Unacked    *e;

	if (op_failed(ch, res, op))
		return;
	e = ch->tx_settled;
	ch->tx_settled = NULL;
	if (op->kind == OP_TX_COMMIT)
	{
		Unacked    *x;

		for (x = e; x; x = x->next)
			if (x->cons)
				x->cons->unacked--;
		settle_done_entries(ch, e);
		send_simple(ch->conn, ch->id, AMQP_TX, 21);
	}
	else
	{
		unacked_restore(ch, e);
		send_simple(ch->conn, ch->id, AMQP_TX, 31);
	}
	op_finish(ch);
}

/* Send a publisher confirm: basic.ack or basic.nack of tag. */
static void
send_confirm(Chan *ch, bool ack, uint64_t tag, bool multiple)
{
	method_begin(ch->id, AMQP_BASIC, ack ? 80 : 120);
	buf_u64(&out, tag);
	buf_u8(&out, multiple ? 1 : 0);	/* nack: requeue bit 0 */
	frame_send(ch->conn);
}

/*
 * A batch of publishes' result: basic.return for a mandatory one routed
 * nowhere and, in confirm mode, the confirms (one ack for a run, a nack
 * for one refused).
 */
static void
publish_done(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;
	PubMsg	   *m = op->msgs;
	uint64_t	pending = 0;
	int			i;

	if (op_failed(ch, res, op))
		return;
	for (i = 0; i < PQntuples(res) && m; i++, m = m->next)
	{
		const char *st = PQgetisnull(res, i, 2) ? NULL : PQgetvalue(res, i, 2);

		if (st == NULL)
		{
			pending = m->seq;
			continue;
		}
		if (strcmp(st, "P0002") == 0)
		{
			/* mandatory and routed nowhere: basic.return, then the ack */
			method_begin(ch->id, AMQP_BASIC, 50);
			buf_u16(&out, AMQP_NO_ROUTE);
			buf_shortstr(&out, "NO_ROUTE");
			buf_shortstr(&out, m->exchange);
			buf_shortstr(&out, m->rk);
			frame_send(ch->conn);
			send_content(ch->conn, ch->id, &m->props, m->body.data, m->body.len);
			pending = m->seq;
			continue;
		}
		if (strcmp(st, "53400") == 0)
		{
			/* refused (x-overflow reject-publish): nacked alone */
			if (ch->confirm)
			{
				if (pending)
					send_confirm(ch, true, pending, true);
				pending = 0;
				send_confirm(ch, false, m->seq, false);
			}
			continue;
		}
		{
			char		text[300];
			int			code = sqlstate_code(st);

			if (strcmp(st, "42704") == 0 && strstr(PQgetvalue(res, i, 3), "exchange"))
				snprintf(text, sizeof(text), "NOT_FOUND - no exchange '%s' in vhost '%s'",
						 m->exchange, ch->conn->vhost);
			else
				reply_text_hint(text, sizeof(text), code, PQgetvalue(res, i, 3),
								PQgetisnull(res, i, 4) ? NULL : PQgetvalue(res, i, 4));
			if (ch->confirm && pending)
				send_confirm(ch, true, pending, true);
			if (code == AMQP_INTERNAL_ERROR)
				conn_error(ch->conn, code, text, AMQP_BASIC, 40);
			else
				chan_error(ch, code, text, AMQP_BASIC, 40);
			return;
		}
	}
	if (ch->confirm && pending)
		send_confirm(ch, true, pending, true);
	op_finish(ch);
}

/*
 * Run the head operation op of ch: send its statement on the channel's
 * session, whose callback finishes it (op_finish) and runs the next.
 * Consecutive publishes and settles go as one statement.
 */
void
run_op(Chan *ch, Op *op)
{
	const char *vals[5];
	char	   *args;
	char		text[600];

	switch (op->kind)
	{
		case OP_REPLY:
			if (op->reply.len)
			{
				out.len = 0;
				buf_bytes(&out, op->reply.data, op->reply.len);
				if (!ch->conn->dead)
					bufferevent_write(ch->conn->bev, out.data, out.len);
			}
			op_finish(ch);
			return;
		case OP_EXCHANGE_DECLARE:
			vals[0] = op->s1;
			if (op->passive)
			{
				pg_send(ch->pg, "SELECT 1 FROM mq.exchanges WHERE exchange = $1", 1, NULL, vals,
						NULL, NULL, 0, op_simple_done, ch);
				return;
			}
			{
				const char *type = op->s2;
				const char *ae = json_str(op->args, "alternate-exchange");

				if (strcmp(type, "x-delayed-message") == 0)
				{
					/* delays are per publish here (x-delay): the underlying type */
					type = json_str(op->args, "x-delayed-type");
					if (!type)
					{
						chan_error(ch, AMQP_PRECONDITION_FAILED,
								   "PRECONDITION_FAILED - Invalid argument, 'x-delayed-type' must be an existing exchange type",
								   op->cls, op->meth);
						return;
					}
				}
				if (strcmp(type, "direct") != 0 && strcmp(type, "fanout") != 0 &&
					strcmp(type, "topic") != 0 && strcmp(type, "headers") != 0)
				{
					snprintf(text, sizeof(text), "COMMAND_INVALID - invalid exchange type '%s'", type);
					conn_error(ch->conn, AMQP_COMMAND_INVALID, text, op->cls, op->meth);
					return;
				}
				vals[1] = type;
				vals[2] = op->durable ? "true" : "false";
				vals[3] = ae;
				/* whether it existed: read before the declare, in its snapshot */
				pg_send(ch->pg, "SELECT EXISTS (SELECT FROM mq.exchanges x WHERE x.exchange = $1), "
						"mq.exchange_declare($1, type => $2, durable => $3::boolean, "
						"alternate_exchange => $4)", 4, NULL, vals, NULL, NULL, 0,
						exchange_declared, ch);
				return;
			}
		case OP_EXCHANGE_DELETE:
			vals[0] = op->s1;
			vals[1] = op->if_unused ? "true" : "false";
			/* a missing exchange is fine (RabbitMQ) */
			pg_send(ch->pg, "SELECT mq.exchange_delete($1, if_unused => $2::boolean) "
					"FROM mq.exchanges WHERE exchange = $1", 2, NULL, vals, NULL, NULL, 0,
					op_simple_done, ch);
			return;
		case OP_QUEUE_DECLARE:
			run_queue_declare(ch, op);
			return;
		case OP_QUEUE_BIND:
		case OP_QUEUE_UNBIND:
			if (qreg_locked(ch->conn, op->s1))
				break;
			args = strdup(op->args ? json_object_to_json_string_ext(op->args, JSON_C_TO_STRING_PLAIN) : "{}");
			vals[0] = op->s1;
			vals[1] = op->s2;
			vals[2] = op->s3;
			vals[3] = args;
			pg_send(ch->pg, op->kind == OP_QUEUE_BIND ?
					"SELECT mq.bind($1, $2, $3, $4::jsonb)" :
					"SELECT mq.unbind($1, $2, $3, $4::jsonb)",
					4, NULL, vals, NULL, NULL, 0, op_simple_done, ch);
			free(args);
			return;
		case OP_QUEUE_PURGE:
			if (qreg_locked(ch->conn, op->s1))
				break;
			vals[0] = op->s1;
			pg_send(ch->pg, "SELECT mq.queue_purge($1)", 1, NULL, vals, NULL, NULL, 0,
					op_simple_done, ch);
			return;
		case OP_QUEUE_DELETE:
			if (qreg_locked(ch->conn, op->s1))
				break;
			if (op->if_empty && op->stage == 0)
			{
				/* before its consumers are cancelled: a refused delete keeps them */
				vals[0] = op->s1;
				pg_send(ch->pg, "SELECT queue, ready FROM pg_temp.amqp_queue($1)",
						1, NULL, vals, NULL, NULL, 0, delete_checked, ch);
				return;
			}
			if (op->if_unused)
			{
				Qreg	   *q = qreg_find(conn_db(ch->conn), op->s1, false);

				if (q && q->consumers > 0)
				{
					snprintf(text, sizeof(text), "PRECONDITION_FAILED - queue '%s' in vhost '%s' in use",
							 op->s1, ch->conn->vhost);
					chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
					return;
				}
			}
			cancel_queue_consumers(conn_db(ch->conn), op->s1);
			if (ch->state != CH_OPEN)
				return;
			vals[0] = op->s1;
			vals[1] = op->if_empty ? "true" : "false";
			/* deleting a missing queue is fine (RabbitMQ) */
			/*
			 * Not joined with mq.queues: reading every queue's state in the
			 * deleting transaction deadlocks concurrent deletes
			 */
			pg_send(ch->pg, "SELECT mq.queue_delete($1, if_empty => $2::boolean)",
					2, NULL, vals, NULL, NULL, 0, op_simple_done, ch);
			return;
		case OP_CONSUME:
			if (qreg_locked(ch->conn, op->s1))
				break;
			vals[0] = op->s1;
			/* the consume privilege too: a refusal comes before consume-ok */
			pg_send(ch->pg, "SELECT type, pg_temp.amqp_may(queue, 'consume') "
					"FROM pg_temp.amqp_queue($1)", 1, NULL, vals,
					NULL, NULL, 0, consume_checked, ch);
			return;
		case OP_GET:
			if (qreg_locked(ch->conn, op->s1))
				break;
			qreg_touch(qreg_find(conn_db(ch->conn), op->s1, false));
			if (ch->tx && !ch->getpg_ready)
			{
				/*
				 * A tx-mode channel's session is in its transaction, and a
				 * delivery is not transactional in RabbitMQ: gets go through
				 * a session of their own (acks stay in the transaction).
				 */
				if (ch->getpg == NULL)
				{
					ch->getpg = pg_connect(ch->conn->pguser, ch->conn->password,
										   ch->conn->db[0] ? ch->conn->db : NULL, false,
										   getpg_connected, ch);
					ch->getpg->on_lost = chan_lost;
				}
				return;
			}
			vals[0] = op->s1;
			vals[1] = cfg.lease;
			vals[2] = op->no_ack ? "true" : "false";
			pg_send(ch->tx ? ch->getpg : ch->pg,
					"SELECT " DELIVERY_COLUMNS ", (SELECT q.ready FROM pg_temp.amqp_queue($1) q) "
					"FROM mq.consume($1, 1, lease => $2::interval, "
					"auto_ack => $3::boolean)", 3, NULL, vals, NULL, NULL, 1, get_done, ch);
			return;
		case OP_SETTLE:
		case OP_RECOVER:
			if (op->taken)
			{
				run_settle(ch, op);
				return;
			}
			if (!(op->multiple && op->tag == 0) && !ack_tag_known(ch, op->tag))
			{
				snprintf(text, sizeof(text), "PRECONDITION_FAILED - unknown delivery tag %llu",
						 (unsigned long long) op->tag);
				chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
				return;
			}
			op->entries = take_entries(ch, op->tag, op->multiple);
			op->taken = true;	/* a retry runs the same statement */
			run_settle(ch, op);
			return;
		case OP_ERROR:
			chan_error(ch, op->code, op->s2, op->cls, op->meth);
			return;
		case OP_CLOSE:
			/* chan_pump handles it */
			return;
		case OP_PUBLISH:
			publish_send(ch->pg, op->msgs, publish_done, ch);
			return;
		case OP_TX_SELECT:
			pg_send(ch->pg, "BEGIN", 0, NULL, NULL, NULL, NULL, 0, op_simple_done, ch);
			return;
		case OP_TX_COMMIT:
			pg_send(ch->pg, "COMMIT; BEGIN", 0, NULL, NULL, NULL, NULL, 0, tx_done, ch);
			return;
		case OP_TX_ROLLBACK:
			pg_send(ch->pg, "ROLLBACK; BEGIN", 0, NULL, NULL, NULL, NULL, 0, tx_done, ch);
			return;
	}
	/* an exclusive queue of another connection */
	snprintf(text, sizeof(text),
			 "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '%s' in vhost '%s'",
			 op->s1, ch->conn->vhost);
	chan_error(ch, AMQP_RESOURCE_LOCKED, text, op->cls, op->meth);
}

/*
 * The close's requeue is done: the session is clean (stage 2) and goes back
 * to the pool, or it failed (stage 3) and the session is closed, its end
 * returning what it held; the close goes on.
 */
static void
close_requeued(void *arg, PGresult *res)
{
	Chan	   *ch = arg;

	ch->ops->stage = res_ok(res) ? 2 : 3;
	ch->op_running = false;
	chan_pump(ch);
}

/*
 * Requeue the deliveries the close took (op->entries, those with a
 * receipt: not those of no-ack consumers and gets) on the channel's
 * session.  Returns false when there is none.
 */
static bool
close_send_requeue(Chan *ch, Op *op)
{
	int			n = 0,
				i;
	Unacked    *e;
	char	  **qs,
			  **rs;
	Buf			qa = {0},
				ra = {0};
	const char *vals[2];

	for (e = op->entries; e; e = e->next)
		if (e->receipt)
			n++;
	if (n == 0)
		return false;
	qs = calloc(n, sizeof(char *));
	rs = calloc(n, sizeof(char *));
	for (i = 0, e = op->entries; e; e = e->next)
		if (e->receipt)
		{
			qs[i] = e->queue;
			rs[i++] = e->receipt;
		}
	text_array(&qa, qs, n);
	text_array(&ra, rs, n);
	vals[0] = (const char *) qa.data;
	vals[1] = (const char *) ra.data;
	ch->op_running = true;
	pg_send(ch->pg, "SELECT pg_temp.amqp_requeue($1::text[], $2::text[])", 2, NULL, vals,
			NULL, NULL, 0, close_requeued, ch);
	free(qs);
	free(rs);
	buf_free(&qa);
	buf_free(&ra);
	return true;
}

/* A tx channel's transaction is rolled back: its deliveries requeued next. */
static void
close_rolled_back(void *arg, PGresult *res)
{
	Chan	   *ch = arg;

	if (!res_ok(res))
		ch->ops->stage = 3;
	else if (close_send_requeue(ch, ch->ops))
		return;
	else
		ch->ops->stage = 2;
	ch->op_running = false;
	chan_pump(ch);
}

/*
 * A channel's close, before close-ok: its deliveries go back to their
 * queues, as RabbitMQ's do, so that they are ready again when the client
 * reads close-ok.  The close takes the channel's unacked deliveries and the
 * settles of its open transaction (into op->entries); nothing more is
 * delivered (its flow is off: rows of a poll still running go back with
 * the consumer's session); a transaction is rolled back (its publishes
 * vanish, its acks are undone) and all of them are nacked with requeue by
 * their receipts (pg_temp.amqp_requeue).  Its consumers stop after that,
 * their sessions closed: their end returns anything left.  No session's end
 * is waited for.  Returns true when a statement was started (the close
 * comes back to chan_pump when it is done).
 */
static bool
close_requeue(Chan *ch, Op *op)
{
	Unacked    *e,
			  **tail = &op->entries;

	ch->flow = false;
	while (*tail)
		tail = &(*tail)->next;
	*tail = ch->unacked;
	while (*tail)
		tail = &(*tail)->next;
	*tail = ch->tx_settled;
	ch->unacked = ch->unacked_tail = NULL;
	ch->tx_settled = NULL;
	ch->n_unacked = 0;
	for (e = op->entries; e; e = e->next)
		if (e->cons)
		{
			/* no longer counted against its consumer */
			e->cons->unacked--;
		}
	if (!ch->pg_ready)
		return false;			/* no session: nothing was delivered */
	if (PQtransactionStatus(ch->pg->pg) != PQTRANS_IDLE)
	{
		ch->op_running = true;
		pg_send(ch->pg, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0, close_rolled_back, ch);
		return true;
	}
	return close_send_requeue(ch, op);
}

/* the channel's close-ok, and the connection's once it was the last */
static void
close_finish(Conn *c, int id)
{
	Chan	   *ch = c->chans ? c->chans[id] : NULL;

	if (ch)
	{
		if (!c->client_closing)
			send_simple(c, id, AMQP_CHANNEL, 41);
		chan_free(ch);
	}
	if (c->client_closing)
		conn_close_finish(c);
}

/*
 * The end of a channel's close: its consumers stop, its session goes back
 * to the pool when clean (else it is closed: its end returns what it
 * holds), the rest is released, and close-ok goes at once.
 */
static void
close_release(Chan *ch, bool clean)
{
	Conn	   *c = ch->conn;
	int			id = ch->id;

	while (ch->consumers)
		cons_remove(ch->consumers, false, true);
	if (clean)
		chan_session_pool(ch);
	chan_release(ch);
	close_finish(c, id);
}

/* queue.delete with if_empty: is it empty? */
static void
delete_checked(void *arg, PGresult *res)
{
	Chan	   *ch = arg;
	Op		   *op = ch->ops;
	char		text[600];

	if (op_failed(ch, res, op))
		return;
	if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 1) &&
		strtoll(PQgetvalue(res, 0, 1), NULL, 10) > 0)
	{
		snprintf(text, sizeof(text), "PRECONDITION_FAILED - queue '%s' in vhost '%s' not empty",
				 op->s1, ch->conn->vhost);
		chan_error(ch, AMQP_PRECONDITION_FAILED, text, op->cls, op->meth);
		return;
	}
	op->stage = 1;
	run_op(ch, op);
}

/* run the next operations; consecutive publishes go as one batch */
void
chan_pump(Chan *ch)
{
	while (ch->state == CH_OPEN && !ch->op_running && ch->ops)
	{
		Op		   *op = ch->ops;

		/*
		 * The channel's session is had when an operation first needs one
		 * (from the pool at once, or connecting: chan_setup_done comes back
		 * here); a prepared reply, an exception and the close need none.
		 */
		if (!ch->pg_ready && op->kind != OP_REPLY && op->kind != OP_ERROR &&
			op->kind != OP_CLOSE && !chan_session(ch))
			return;

		/*
		 * The close runs in two steps: the channel's deliveries requeued
		 * (close_requeue; it comes back here when done, stage 2 when its
		 * session is clean, 3 when not), then its session given back and
		 * close-ok (close_release).
		 */
		if (op->kind == OP_CLOSE)
		{
			if (op->stage == 0)
			{
				op->stage = 1;
				if (close_requeue(ch, op))
					return;
				op->stage = 2;
			}
			close_release(ch, op->stage == 2);
			return;
		}
		/*
		 * A settle of a known tag takes its entries now, and those of the
		 * settles of the same kind queued right behind it, which are folded
		 * into it.  An unknown tag is left alone: run_op makes it the channel
		 * error in its turn.
		 */
		if (op->kind == OP_SETTLE &&
			((op->multiple && op->tag == 0) || ack_tag_known(ch, op->tag)))
		{
			/* consecutive settles of one kind: one statement */
			Unacked    *tail;
			int			n = 1;

			op->entries = take_entries(ch, op->tag, op->multiple);
			op->taken = true;
			for (tail = op->entries; tail && tail->next; tail = tail->next)
				;
			while (op->next && op->next->kind == OP_SETTLE && n < cfg.batch_max &&
				   op->next->settle == op->settle && op->next->requeue == op->requeue &&
				   ((op->next->multiple && op->next->tag == 0) ||
					ack_tag_known(ch, op->next->tag)))
			{
				Op		   *nx = op->next;
				Unacked    *more = take_entries(ch, nx->tag, nx->multiple);

				if (tail)
					tail->next = more;
				else
					op->entries = more;
				for (tail = more ? more : tail; tail && tail->next; tail = tail->next)
					;
				op->next = nx->next;
				if (ch->ops_tail == nx)
					ch->ops_tail = op;
				op_free(nx);
				n++;
			}
		}
		/* consecutive publishes, up to batch_max: one statement (publish.c) */
		if (op->kind == OP_PUBLISH)
		{
			int			n = 1;
			PubMsg	   *tail = op->msgs;

			while (op->next && op->next->kind == OP_PUBLISH && n < cfg.batch_max)
			{
				Op		   *nx = op->next;

				tail->next = nx->msgs;
				tail = nx->msgs;
				nx->msgs = NULL;
				op->next = nx->next;
				if (ch->ops_tail == nx)
					ch->ops_tail = op;
				op_free(nx);
				n++;
			}
		}
		/* one statement at a time: its callback clears op_running and comes back */
		ch->op_running = true;
		run_op(ch, op);
	}
	/* nothing more to run: a session that holds nothing is shared meanwhile */
	chan_session_idle(ch);
}

/*
 * The basic.get session of a tx-mode channel is set up: the get waiting
 * for it runs.
 */
static void
get_session_ready(Chan *ch)
{
	if (ch->op_running && ch->ops && ch->ops->kind == OP_GET)
		run_op(ch, ch->ops);
}

/*
 * The channel's session cannot be had: channel.close 541 INTERNAL_ERROR
 * (text) for the operation that needed it.
 */
static void
session_connect_failed(Chan *ch, const char *text)
{
	chan_error(ch, AMQP_INTERNAL_ERROR, text, ch->ops ? ch->ops->cls : AMQP_CHANNEL,
			   ch->ops ? ch->ops->meth : 10);
}

/* The channel's session (or its get session) could not be set up. */
static void
session_setup_failed(Chan *ch, PGresult *res)
{
	chan_sql_error(ch, res, NULL);
}

/* what channel_open.c reports of the channels' sessions */
static const ChanSessionEvents session_events = {
	.ready = chan_pump,
	.get_ready = get_session_ready,
	.connect_failed = session_connect_failed,
	.setup_failed = session_setup_failed,
	.lost = chan_lost,
};

/* The gateway starts: the engine hears of the channels' sessions. */
void
operations_start(void)
{
	chan_session_events(&session_events);
}
