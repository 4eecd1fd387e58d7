/*
 * mq_amqp.c: mq-amqp, an AMQP 0-9-1 gateway in front of queue_ext
 *
 * Clients speak AMQP 0-9-1; the gateway speaks queue_ext's SQL API to
 * PostgreSQL.  docs/amqp.md describes the mapping:
 *
 *  - PLAIN (or AMQPLAIN) login: the gateway connects as that role with that
 *    password; the virtual host names the database ("/": --dbname's).
 *  - each channel has its own PostgreSQL session, which runs the channel's
 *    operations (declares, binds, publishes, gets, acks, tx) in order, one
 *    statement at a time;
 *  - each basic.consume has its own session too, long-polling mq.consume
 *    (wait => ...), so that a waiting consumer never holds up anything else.
 *    Its deliveries belong to that session (queue_ext: a delivery belongs to
 *    the session that consumed it); the channel settles them by receipt
 *    (mq.ack/nack/reject with receipts =>).  Closing a channel closes its
 *    sessions, and queue_ext returns their unacked deliveries at once.
 */
#include "gateway.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/listener.h>

struct event_base *gw_base;
PQconninfoOption *gw_conninfo;

static Chan *
chan_get(Conn *c, uint16_t id)
{
	if (id == 0 || id > c->channel_max || c->chans == NULL)
		return NULL;
	return c->chans[id];
}

static bool
valid_expiration(const char *s)
{
	if (!*s || strlen(s) > 18)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/*
 * The content header: the properties queue_ext has columns for go to
 * mq.publish's arguments, the others into the headers under
 * AMQP_PROPS_KEY (docs/amqp.md).
 */
static bool
parse_content_header(Chan *ch, PubMsg *m, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	Rd			r;
	uint16_t	flags;
	char		s[256];
	json_object *headers = NULL;
	json_object *extra = json_object_new_object();
	bool		ok = true;

	rd_init(&r, p, len);
	rd_u16(&r);					/* class, checked by the caller */
	rd_u16(&r);					/* weight */
	m->body_size = rd_u64(&r);
	flags = rd_u16(&r);
	if (!r.err)
		buf_bytes(&m->props, p + 12, len - 12);
	if (flags & 1)
	{
		snprintf(err, errlen, "property flags continuation is not supported");
		json_object_put(extra);
		return false;
	}
#define GET_SHORT() (rd_shortstr(&r, s), s)
	if (flags & (1 << 15))
		m->content_type = strdup(GET_SHORT());
	if (flags & (1 << 14))
		json_object_object_add(extra, "content_encoding", json_object_new_string(GET_SHORT()));
	if (flags & (1 << 13))
		headers = rd_table(&r);
	if (flags & (1 << 12))
		json_object_object_add(extra, "delivery_mode", json_object_new_int(rd_u8(&r)));
	m->priority = (flags & (1 << 11)) ? rd_u8(&r) : -1;
	if (flags & (1 << 10))
		m->correlation_id = strdup(GET_SHORT());
	if (flags & (1 << 9))
		m->reply_to = strdup(GET_SHORT());
	if (flags & (1 << 8))
	{
		GET_SHORT();
		if (!r.err && !valid_expiration(s))
		{
			snprintf(err, errlen, "PRECONDITION_FAILED - invalid expiration '%s'", s);
			ok = false;
		}
		snprintf(m->expiration, sizeof(m->expiration), "%s", s);
		json_object_object_add(extra, "expiration", json_object_new_string(s));
	}
	if (flags & (1 << 7))
		json_object_object_add(extra, "message_id", json_object_new_string(GET_SHORT()));
	if (flags & (1 << 6))
	{
		char		txt[32];

		snprintf(txt, sizeof(txt), "%llu", (unsigned long long) rd_u64(&r));
		json_object_object_add(extra, "timestamp", json_object_new_string(txt));
	}
	if (flags & (1 << 5))
		json_object_object_add(extra, "type", json_object_new_string(GET_SHORT()));
	if (flags & (1 << 4))
	{
		GET_SHORT();
		if (!r.err && strcmp(s, ch->conn->user) != 0 && ok)
		{
			snprintf(err, errlen,
					 "PRECONDITION_FAILED - user_id property set to '%s' but authenticated user was '%s'",
					 s, ch->conn->user);
			ok = false;
		}
		json_object_object_add(extra, "user_id", json_object_new_string(s));
	}
	if (flags & (1 << 3))
		json_object_object_add(extra, "app_id", json_object_new_string(GET_SHORT()));
	if (flags & (1 << 2))
		json_object_object_add(extra, "cluster_id", json_object_new_string(GET_SHORT()));
#undef GET_SHORT
	if (r.err)
	{
		snprintf(err, errlen, "FRAME_ERROR - cannot decode the content header");
		ok = false;
	}
	if (ok && headers)
	{
		json_object *d = json_get(headers, "x-delay");

		if (d && json_object_is_type(d, json_type_int) && json_object_get_int64(d) > 0)
			snprintf(m->delay, sizeof(m->delay), "%lld", (long long) json_object_get_int64(d));
	}
	if (ok && (headers || json_object_object_length(extra) > 0))
	{
		if (json_object_object_length(extra) > 0)
		{
			if (!headers)
			{
				headers = json_object_new_object();
				json_object_object_add(extra, "no-headers", json_object_new_boolean(1));
			}
			json_object_object_add(headers, AMQP_PROPS_KEY, extra);
			extra = NULL;
		}
		m->headers_json = strdup(json_object_to_json_string_ext(headers, JSON_C_TO_STRING_PLAIN));
	}
	if (headers)
		json_object_put(headers);
	if (extra)
		json_object_put(extra);
	return ok;
}

/* a channel exception in its turn, after the operations before it; what
 * arrives meanwhile is dropped */
static void
chan_error_queued(Chan *ch, int code, const char *text, int cls, int meth)
{
	Op		   *op = op_new(ch, OP_ERROR, cls, meth);

	op->code = code;
	snprintf(op->s2, sizeof(op->s2), "%s", text);
	if (ch->pub)
	{
		pub_free(ch->pub);
		ch->pub = NULL;
	}
	ch->content = 0;
	ch->discarding = true;		/* drop the rest until the close */
	chan_pump(ch);
}

static void
publish_complete(Chan *ch)
{
	PubMsg	   *m = ch->pub;
	Op		   *op;

	ch->pub = NULL;
	ch->content = 0;
	op = op_new(ch, OP_PUBLISH, AMQP_BASIC, 40);
	op->msgs = m;
	m->owner = ch->conn;
	ch->conn->pending += m->body.len;
	if (ch->conn->pending > cfg.pending_high && !ch->conn->paused)
	{
		ch->conn->paused = true;
		bufferevent_disable(ch->conn->bev, EV_READ);
	}
	chan_pump(ch);
}

static void
chan_method(Conn *c, Chan *ch, uint16_t cls, uint16_t meth, Rd *r)
{
	char		s1[256],
				text[600];
	Op		   *op = NULL;

	if (cls == AMQP_CHANNEL && meth == 40)
	{
		/* channel.close from the client */
		if (ch->state == CH_CLOSING)
		{
			/* crossed ours */
			send_simple(c, ch->id, AMQP_CHANNEL, 41);
			chan_free(ch);
			return;
		}
		/* what came before it is done first (publishes, acks) */
		if (ch->pub)
		{
			pub_free(ch->pub);
			ch->pub = NULL;
		}
		ch->content = 0;
		ch->client_closing = true;
		op_new(ch, OP_CLOSE, cls, meth);
		chan_pump(ch);
		return;
	}
	if (ch->client_closing || ch->discarding)
		return;
	if (ch->state == CH_CLOSING)
	{
		if (cls == AMQP_CHANNEL && meth == 41)
			chan_free(ch);
		return;					/* everything else is dropped until close-ok */
	}
	if (ch->content)
	{
		conn_error(c, AMQP_UNEXPECTED_FRAME,
				   "UNEXPECTED_FRAME - expected content header or body, got a method", cls, meth);
		return;
	}

#define QUEUE_ERROR(code_, text_) \
	do { if (op == NULL) op = op_new(ch, OP_ERROR, cls, meth); \
		 op->kind = OP_ERROR; op->code = (code_); \
		 snprintf(op->s2, sizeof(op->s2), "%s", (text_)); chan_pump(ch); return; } while (0)
#define ARGS_OK() \
	do { if (r->err) { conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - cannot decode the method's arguments", cls, meth); return; } } while (0)

	switch (cls * 1000 + meth)
	{
		case AMQP_CHANNEL * 1000 + 10:	/* channel.open on an open channel */
			conn_error(c, AMQP_CHANNEL_ERROR, "CHANNEL_ERROR - second 'channel.open' seen", cls, meth);
			return;
		case AMQP_CHANNEL * 1000 + 20:	/* flow */
			ch->flow = rd_bit(r);
			ARGS_OK();
			method_begin(ch->id, AMQP_CHANNEL, 21);
			buf_u8(&out, ch->flow ? 1 : 0);
			frame_send(c);
			if (ch->flow)
				chan_kick(ch);
			return;
		case AMQP_CHANNEL * 1000 + 21:	/* flow-ok: we never send flow */
			return;
		case AMQP_EXCHANGE * 1000 + 10:	/* declare */
			op = op_new(ch, OP_EXCHANGE_DECLARE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			rd_shortstr(r, op->s2);
			op->passive = rd_bit(r);
			op->durable = rd_bit(r);
			op->auto_delete = rd_bit(r);
			{
				bool		internal = rd_bit(r);

				op->nowait = rd_bit(r);
				op->args = rd_table(r);
				ARGS_OK();
				amqp_args_plain(op->args, false);
				if (internal && !op->passive)
				{
					QUEUE_ERROR(AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - internal exchanges are not supported by mq-amqp");
				}
			}
			break;
		case AMQP_EXCHANGE * 1000 + 20:	/* delete */
			op = op_new(ch, OP_EXCHANGE_DELETE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->if_unused = rd_bit(r);
			op->nowait = rd_bit(r);
			ARGS_OK();
			break;
		case AMQP_EXCHANGE * 1000 + 30:	/* bind */
		case AMQP_EXCHANGE * 1000 + 40:	/* unbind */
			QUEUE_ERROR(AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - exchange-to-exchange bindings are not supported by queue_ext");
		case AMQP_QUEUE * 1000 + 10:	/* declare */
			op = op_new(ch, OP_QUEUE_DECLARE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->passive = rd_bit(r);
			op->durable = rd_bit(r);
			op->exclusive = rd_bit(r);
			op->auto_delete = rd_bit(r);
			op->nowait = rd_bit(r);
			op->args = rd_table(r);
			ARGS_OK();
			amqp_args_plain(op->args, false);
			if (op->passive && op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			break;
		case AMQP_QUEUE * 1000 + 20:	/* bind */
		case AMQP_QUEUE * 1000 + 50:	/* unbind */
			op = op_new(ch, meth == 20 ? OP_QUEUE_BIND : OP_QUEUE_UNBIND, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			rd_shortstr(r, op->s2);
			rd_shortstr(r, op->s3);
			if (meth == 20)
				op->nowait = rd_bit(r);
			op->args = rd_table(r);
			ARGS_OK();
			amqp_args_plain(op->args, true);
			if (op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			break;
		case AMQP_QUEUE * 1000 + 30:	/* purge */
			op = op_new(ch, OP_QUEUE_PURGE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->nowait = rd_bit(r);
			ARGS_OK();
			if (op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			break;
		case AMQP_QUEUE * 1000 + 40:	/* delete */
			op = op_new(ch, OP_QUEUE_DELETE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->if_unused = rd_bit(r);
			op->if_empty = rd_bit(r);
			op->nowait = rd_bit(r);
			ARGS_OK();
			if (op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			break;
		case AMQP_BASIC * 1000 + 10:	/* qos */
			{
				uint32_t	size = rd_u32(r);
				uint16_t	count = rd_u16(r);
				bool		global = rd_bit(r);

				ARGS_OK();
				if (size != 0)
				{
					/* a connection exception, as RabbitMQ's */
					snprintf(text, sizeof(text), "NOT_IMPLEMENTED - prefetch_size!=0 (%u)", size);
					conn_error(c, AMQP_NOT_IMPLEMENTED, text, cls, meth);
					return;
				}
				if (global)
					ch->prefetch_global = count;
				else
					ch->prefetch_consumer = count;
				op = op_new(ch, OP_REPLY, cls, meth);
				frame_begin(AMQP_FRAME_METHOD, ch->id);
				buf_u16(&out, AMQP_BASIC);
				buf_u16(&out, 11);
				buf_set_u32(&out, 3, out.len - 7);
				buf_u8(&out, AMQP_FRAME_END);
				buf_bytes(&op->reply, out.data, out.len);
				chan_kick(ch);
				break;
			}
		case AMQP_BASIC * 1000 + 20:	/* consume */
			{
				Consumer   *x;

				op = op_new(ch, OP_CONSUME, cls, meth);
				rd_u16(r);
				rd_shortstr(r, op->s1);
				rd_shortstr(r, op->s3);
				rd_bit(r);		/* no-local: nothing to do, as RabbitMQ */
				op->no_ack = rd_bit(r);
				op->exclusive = rd_bit(r);
				op->nowait = rd_bit(r);
				op->args = rd_table(r);
				ARGS_OK();
				amqp_args_plain(op->args, false);
				if (op->s1[0] == '\0')
					snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
				if (op->s3[0] == '\0')
				{
					static uint64_t ctag = 0;

					snprintf(op->s3, sizeof(op->s3), "amq.ctag-%08lx%08lx-%llu",
							 (unsigned long) random(), (unsigned long) random(),
							 (unsigned long long) ++ctag);
				}
				for (x = ch->consumers; x; x = x->next)
					if (!x->cancelled && strcmp(x->tag, op->s3) == 0)
					{
						snprintf(text, sizeof(text),
								 "NOT_ALLOWED - attempt to reuse consumer tag '%s'", op->s3);
						conn_error(c, AMQP_NOT_ALLOWED, text, cls, meth);
						return;
					}
				break;
			}
		case AMQP_BASIC * 1000 + 30:	/* cancel */
			{
				Consumer   *x;
				bool		nowait;

				rd_shortstr(r, s1);
				nowait = rd_bit(r);
				ARGS_OK();
				for (x = ch->consumers; x; x = x->next)
					if (!x->cancelled && !x->cancelling && strcmp(x->tag, s1) == 0)
						break;
				if (x == NULL)
				{
					/* unknown tag: ok, as RabbitMQ */
					if (!nowait)
					{
						method_begin(ch->id, AMQP_BASIC, 31);
						buf_shortstr(&out, s1);
						frame_send(c);
					}
					return;
				}
				x->cancel_nowait = nowait;
				if (x->polling)
				{
					/* stop the long poll; its rows (if any) still go out */
					x->cancelling = true;
					pg_cancel(x->pg);
				}
				else if (!x->ready)
					x->cancelling = true;
				else
					cons_send_cancel_ok(x);
				return;
			}
		case AMQP_BASIC * 1000 + 40:	/* publish */
			{
				PubMsg	   *m = calloc(1, sizeof(PubMsg));
				bool		immediate;

				rd_u16(r);
				rd_shortstr(r, m->exchange);
				rd_shortstr(r, m->rk);
				m->mandatory = rd_bit(r);
				immediate = rd_bit(r);
				if (r->err)
				{
					pub_free(m);
					ARGS_OK();
				}
				if (immediate)
				{
					pub_free(m);
					conn_error(c, AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - immediate=true", cls, meth);
					return;
				}
				if (ch->confirm)
					m->seq = ++ch->pub_seq;
				ch->pub = m;
				ch->content = 1;
				return;
			}
		case AMQP_BASIC * 1000 + 70:	/* get */
			op = op_new(ch, OP_GET, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->no_ack = rd_bit(r);
			ARGS_OK();
			if (op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			break;
		case AMQP_BASIC * 1000 + 80:	/* ack */
		case AMQP_BASIC * 1000 + 90:	/* reject */
		case AMQP_BASIC * 1000 + 120:	/* nack */
			{
				uint64_t	tag = rd_u64(r);
				bool		multiple = false,
							requeue = true;

				if (meth == 80)
					multiple = rd_bit(r);
				else if (meth == 90)
					requeue = rd_bit(r);
				else
				{
					multiple = rd_bit(r);
					requeue = rd_bit(r);
				}
				ARGS_OK();
				/* the tag is checked in the operation's turn: after the
				 * publishes and deliveries before it */
				op = op_new(ch, OP_SETTLE, cls, meth);
				if (!ch->tx)
				{
					/*
					 * The consumer's prefetch credit comes back when the
					 * settle arrives, as RabbitMQ's, not when its statement
					 * is done: the consumers of a queue get their turns in
					 * the order their acks came.  (In tx mode: at commit.)
					 */
					Unacked    *e;
					bool		any = false;

					for (e = ch->unacked; e; e = e->next)
					{
						if (tag != 0 && e->tag > tag)
							break;
						if ((multiple || e->tag == tag) && e->cons && !e->early)
						{
							e->early = true;
							e->cons->credited++;
							any = true;
						}
					}
					if (any)
						chan_kick(ch);
				}
				op->settle = meth == 80 ? SETTLE_ACK : meth == 90 ? SETTLE_REJECT : SETTLE_NACK;
				op->requeue = requeue;
				op->tag = tag;
				op->multiple = multiple;
				break;
			}
		case AMQP_BASIC * 1000 + 100:	/* recover-async */
		case AMQP_BASIC * 1000 + 110:	/* recover */
			{
				bool		requeue = rd_bit(r);

				ARGS_OK();
				if (!requeue)
				{
					QUEUE_ERROR(AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - requeue=false");
				}
				op = op_new(ch, meth == 110 ? OP_RECOVER : OP_SETTLE, cls, meth);
				op->settle = SETTLE_NACK;
				op->requeue = true;
				op->tag = 0;
				op->multiple = true;
				break;
			}
		case AMQP_CONFIRM * 1000 + 10:	/* select */
			{
				bool		nowait = rd_bit(r);

				ARGS_OK();
				if (ch->tx)
				{
					QUEUE_ERROR(AMQP_PRECONDITION_FAILED, "PRECONDITION_FAILED - cannot switch from tx to confirm mode");
				}
				ch->confirm = true;
				if (!nowait)
					send_simple(c, ch->id, AMQP_CONFIRM, 11);
				return;
			}
		case AMQP_TX * 1000 + 10:	/* select */
			if (ch->confirm)
			{
				QUEUE_ERROR(AMQP_PRECONDITION_FAILED, "PRECONDITION_FAILED - cannot switch from confirm to tx mode");
			}
			if (ch->tx)
			{
				send_simple(c, ch->id, AMQP_TX, 11);
				return;
			}
			op = op_new(ch, OP_TX_SELECT, cls, meth);
			break;
		case AMQP_TX * 1000 + 20:	/* commit */
		case AMQP_TX * 1000 + 30:	/* rollback */
			if (!ch->tx)
			{
				QUEUE_ERROR(AMQP_PRECONDITION_FAILED, "PRECONDITION_FAILED - channel is not transactional");
			}
			op = op_new(ch, meth == 20 ? OP_TX_COMMIT : OP_TX_ROLLBACK, cls, meth);
			break;
		default:
			snprintf(text, sizeof(text), "NOT_IMPLEMENTED - method %d.%d is not supported", cls, meth);
			if (cls == AMQP_BASIC || cls == AMQP_QUEUE || cls == AMQP_EXCHANGE ||
				cls == AMQP_TX || cls == AMQP_CONFIRM || cls == AMQP_CHANNEL)
				QUEUE_ERROR(AMQP_NOT_IMPLEMENTED, text);
			else
				conn_error(c, AMQP_NOT_IMPLEMENTED, text, cls, meth);
			return;
	}
#undef ARGS_OK
#undef QUEUE_ERROR
	chan_pump(ch);
}

static void
send_start(Conn *c)
{
	json_object *props = json_object_new_object();
	json_object *caps = json_object_new_object();
	char		err[64];

	json_object_object_add(caps, "publisher_confirms", json_object_new_boolean(1));
	json_object_object_add(caps, "basic.nack", json_object_new_boolean(1));
	json_object_object_add(caps, "consumer_cancel_notify", json_object_new_boolean(1));
	json_object_object_add(caps, "exchange_exchange_bindings", json_object_new_boolean(0));
	json_object_object_add(caps, "per_consumer_qos", json_object_new_boolean(1));
	json_object_object_add(caps, "authentication_failure_close", json_object_new_boolean(1));
	json_object_object_add(caps, "connection.blocked", json_object_new_boolean(0));
	json_object_object_add(props, "capabilities", caps);
	json_object_object_add(props, "product", json_object_new_string("mq-amqp (queue_ext)"));
	json_object_object_add(props, "version", json_object_new_string(GW_VERSION));
	json_object_object_add(props, "platform", json_object_new_string("PostgreSQL"));
	json_object_object_add(props, "information", json_object_new_string("AMQP 0-9-1 gateway for queue_ext"));
	method_begin(0, AMQP_CONNECTION, 10);
	buf_u8(&out, 0);
	buf_u8(&out, 9);
	buf_table_json(&out, props, err, sizeof(err));
	buf_longstr(&out, "PLAIN AMQPLAIN", 14);
	buf_longstr(&out, "en_US", 5);
	frame_send(c);
	json_object_put(props);
	c->state = C_START_SENT;
}

static void
heartbeat_tick(evutil_socket_t fd, short what, void *arg)
{
	Conn	   *c = arg;

	if (c->dead)
		return;
	if (!c->paused && time(NULL) - c->last_recv > 2 * (time_t) c->heartbeat)
	{
		logmsg("%s: missed heartbeats from client, timeout: %ds", c->peer, c->heartbeat);
		conn_destroy(c);
		return;
	}
	frame_begin(AMQP_FRAME_HEARTBEAT, 0);
	frame_send(c);
}

static void
vhost_connected(Conn *c, bool ok, const char *error)
{
	if (!ok)
	{
		char		text[600];

		if (strstr(error, "does not exist") || strstr(error, "permission denied for database") ||
			strstr(error, "not currently accepting"))
		{
			snprintf(text, sizeof(text), "NOT_ALLOWED - access to vhost '%s' refused for user '%s'",
					 c->vhost, c->user);
			conn_error(c, AMQP_NOT_ALLOWED, text, AMQP_CONNECTION, 40);
		}
		else
		{
			reply_text(text, sizeof(text), AMQP_CONNECTION_FORCED, error);
			conn_error(c, AMQP_CONNECTION_FORCED, text, AMQP_CONNECTION, 40);
		}
		return;
	}
	c->state = C_OPEN;
	method_begin(0, AMQP_CONNECTION, 41);
	buf_shortstr(&out, "");
	frame_send(c);
	/* an idle connection holds no session: cleanups open one when needed */
	ctl_orphan(c->ctl);
	c->ctl = NULL;
}

static void
auth_connected(Conn *c, bool ok, const char *error)
{
	if (!ok)
	{
		char		text[600];

		if (strstr(error, "authentication failed") || strstr(error, "no password") ||
			strstr(error, "role") || strstr(error, "not permitted to log in") ||
			strstr(error, "no pg_hba.conf entry"))
		{
			snprintf(text, sizeof(text),
					 "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
					 "For details see the broker logfile.");
			logmsg("%s: login of \"%s\" refused: %s", c->peer, c->user, error);
			conn_error(c, AMQP_ACCESS_REFUSED, text, AMQP_CONNECTION, 11);
		}
		else
		{
			reply_text(text, sizeof(text), AMQP_CONNECTION_FORCED, error);
			conn_error(c, AMQP_CONNECTION_FORCED, text, AMQP_CONNECTION, 11);
		}
		return;
	}
	/* logged in: tune */
	method_begin(0, AMQP_CONNECTION, 30);
	buf_u16(&out, cfg.channel_max);
	buf_u32(&out, cfg.frame_max);
	buf_u16(&out, cfg.heartbeat);
	frame_send(c);
	c->state = C_TUNE_SENT;
}

static void
conn_method(Conn *c, uint16_t cls, uint16_t meth, Rd *r)
{
	char		s[256],
				text[600];

	if (cls != AMQP_CONNECTION)
	{
		conn_error(c, AMQP_COMMAND_INVALID, "COMMAND_INVALID - not a connection method on channel 0",
				   cls, meth);
		return;
	}
	if (c->state == C_CLOSING)
	{
		if (c->client_closing)
			return;
		if (meth == 51 || meth == 50)
		{
			if (meth == 50)
				send_simple(c, 0, AMQP_CONNECTION, 51);
			bufferevent_flush(c->bev, EV_WRITE, BEV_FLUSH);
			conn_destroy(c);
		}
		return;
	}
	switch (meth)
	{
		case 11:				/* start-ok */
			{
				json_object *client;
				uint32_t	len;
				const uint8_t *resp;
				char		mech[256];
				json_object *caps;

				if (c->state != C_START_SENT)
					break;
				client = rd_table(r);
				rd_shortstr(r, mech);
				resp = rd_longstr(r, &len);
				rd_shortstr(r, s);
				caps = json_get(client, "capabilities");
				c->cancel_notify = json_get(caps, "consumer_cancel_notify") &&
					json_object_get_boolean(json_get(caps, "consumer_cancel_notify"));
				if (client)
					json_object_put(client);
				if (r->err || resp == NULL)
				{
					conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - cannot decode connection.start-ok", cls, meth);
					return;
				}
				if (strcmp(mech, "PLAIN") == 0)
				{
					/* authzid NUL authcid NUL password */
					const uint8_t *p1 = memchr(resp, 0, len);
					const uint8_t *p2 = p1 ? memchr(p1 + 1, 0, len - (p1 + 1 - resp)) : NULL;

					if (!p2 || p2 - p1 - 1 > 255)
					{
						conn_error(c, AMQP_ACCESS_REFUSED, "ACCESS_REFUSED - malformed PLAIN response", cls, meth);
						return;
					}
					memcpy(c->user, p1 + 1, p2 - p1 - 1);
					c->user[p2 - p1 - 1] = '\0';
					c->password = strndup((const char *) p2 + 1, len - (p2 + 1 - resp));
				}
				else if (strcmp(mech, "AMQPLAIN") == 0)
				{
					/* a table without its length prefix */
					Buf			t = {0};
					Rd			tr;
					json_object *o;

					buf_u32(&t, len);
					buf_bytes(&t, resp, len);
					rd_init(&tr, t.data, t.len);
					o = rd_table(&tr);
					snprintf(c->user, sizeof(c->user), "%s", json_str(o, "LOGIN") ? json_str(o, "LOGIN") : "");
					c->password = strdup(json_str(o, "PASSWORD") ? json_str(o, "PASSWORD") : "");
					json_object_put(o);
					buf_free(&t);
				}
				else
				{
					snprintf(text, sizeof(text),
							 "ACCESS_REFUSED - unsupported authentication mechanism '%s'", mech);
					conn_error(c, AMQP_ACCESS_REFUSED, text, cls, meth);
					return;
				}
				c->state = C_AUTHING;
				c->ctl = ctl_new(c, NULL, auth_connected);
				return;
			}
		case 31:				/* tune-ok */
			{
				uint16_t	channel_max = rd_u16(r);
				uint32_t	frame_max = rd_u32(r);
				uint16_t	heartbeat = rd_u16(r);

				if (c->state != C_TUNE_SENT)
					break;
				if (r->err)
				{
					conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - cannot decode connection.tune-ok", cls, meth);
					return;
				}
				if (frame_max != 0 && frame_max < 4096)
				{
					conn_error(c, AMQP_NOT_ALLOWED, "NOT_ALLOWED - frame_max below 4096", cls, meth);
					return;
				}
				c->channel_max = channel_max == 0 || channel_max > cfg.channel_max ?
					cfg.channel_max : channel_max;
				c->frame_max = frame_max == 0 || frame_max > cfg.frame_max ? cfg.frame_max : frame_max;
				c->heartbeat = heartbeat;
				c->chans = calloc(c->channel_max + 1, sizeof(Chan *));
				if (heartbeat > 0)
				{
					struct timeval tv = {heartbeat / 2 > 0 ? heartbeat / 2 : 1, 0};

					c->hb = event_new(gw_base, -1, EV_PERSIST, heartbeat_tick, c);
					evtimer_add(c->hb, &tv);
				}
				c->state = C_TUNED;
				return;
			}
		case 40:				/* open */
			if (c->state != C_TUNED)
				break;
			rd_shortstr(r, c->vhost);
			if (r->err)
			{
				conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - cannot decode connection.open", cls, meth);
				return;
			}
			c->state = C_OPENING;
			if (c->vhost[0] == '\0' || strcmp(c->vhost, "/") == 0)
			{
				c->db[0] = '\0';
				vhost_connected(c, true, NULL);
			}
			else
			{
				/* the vhost is a database: the control session moves there */
				snprintf(c->db, sizeof(c->db), "%s", c->vhost);
				ctl_orphan(c->ctl);
				c->ctl = ctl_new(c, c->db, vhost_connected);
			}
			return;
		case 50:				/* close */
			{
				int			i;
				struct timeval tv = {30, 0};

				/* the channels finish what they were sent first */
				c->client_closing = true;
				c->state = C_CLOSING;
				if (c->chans)
					for (i = 1; i <= c->channel_max; i++)
					{
						Chan	   *ch = c->chans[i];

						if (ch == NULL)
							continue;
						if (ch->state != CH_OPEN)
							chan_free(ch);
						else if (!ch->client_closing)
						{
							ch->client_closing = true;
							op_new(ch, OP_CLOSE, AMQP_CHANNEL, 40);
						}
					}
				c->close_timer = evtimer_new(gw_base, close_timeout, c);
				evtimer_add(c->close_timer, &tv);
				if (c->chans)
					for (i = 1; i <= c->channel_max && !c->dead; i++)
						if (c->chans[i])
							chan_pump(c->chans[i]);
				conn_close_finish(c);
				return;
			}
		case 51:				/* close-ok without a close */
			conn_destroy(c);
			return;
		case 60:				/* blocked / unblocked from a client: ignore */
		case 61:
			return;
		default:
			snprintf(text, sizeof(text), "NOT_IMPLEMENTED - method connection.%d", meth);
			conn_error(c, AMQP_NOT_IMPLEMENTED, text, cls, meth);
			return;
	}
	conn_error(c, AMQP_COMMAND_INVALID, "COMMAND_INVALID - connection method out of order", cls, meth);
}

/* one frame; false when the connection is done with */
static void
handle_frame(Conn *c, uint8_t type, uint16_t chid, const uint8_t *p, uint32_t len)
{
	Rd			r;
	Chan	   *ch;

	if (type == AMQP_FRAME_HEARTBEAT)
	{
		if (chid != 0)
			conn_error(c, AMQP_COMMAND_INVALID, "COMMAND_INVALID - heartbeat on a channel", 0, 0);
		return;
	}
	if (type != AMQP_FRAME_METHOD && type != AMQP_FRAME_HEADER && type != AMQP_FRAME_BODY)
	{
		conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - unknown frame type", 0, 0);
		return;
	}
	if (chid == 0)
	{
		uint16_t	cls,
					meth;

		if (type != AMQP_FRAME_METHOD)
		{
			conn_error(c, AMQP_COMMAND_INVALID, "COMMAND_INVALID - content on channel 0", 0, 0);
			return;
		}
		rd_init(&r, p, len);
		cls = rd_u16(&r);
		meth = rd_u16(&r);
		if (r.err)
		{
			conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - short method frame", 0, 0);
			return;
		}
		conn_method(c, cls, meth, &r);
		return;
	}
	if (c->state == C_CLOSING)
		return;
	if (c->state != C_OPEN)
	{
		conn_error(c, AMQP_COMMAND_INVALID, "COMMAND_INVALID - channel frame before connection.open-ok",
				   0, 0);
		return;
	}
	if (chid > c->channel_max)
	{
		char		text[128];

		snprintf(text, sizeof(text),
				 "NOT_ALLOWED - number of channels opened (%u) has reached the negotiated channel_max (%u)",
				 chid, c->channel_max);
		conn_error(c, AMQP_NOT_ALLOWED, text, AMQP_CHANNEL, 10);
		return;
	}
	ch = chan_get(c, chid);
	if (type == AMQP_FRAME_METHOD)
	{
		uint16_t	cls,
					meth;

		rd_init(&r, p, len);
		cls = rd_u16(&r);
		meth = rd_u16(&r);
		if (r.err)
		{
			conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - short method frame", 0, 0);
			return;
		}
		if (ch == NULL)
		{
			if (cls == AMQP_CHANNEL && meth == 10)
			{
				chan_open(c, chid);
				method_begin(chid, AMQP_CHANNEL, 11);
				buf_longstr(&out, "", 0);
				frame_send(c);
			}
			else if (cls == AMQP_CHANNEL && meth == 41)
				;				/* close-ok of a channel already gone */
			else
				conn_error(c, AMQP_CHANNEL_ERROR, "CHANNEL_ERROR - expected 'channel.open'", cls, meth);
			return;
		}
		chan_method(c, ch, cls, meth, &r);
		return;
	}
	if (ch == NULL)
	{
		conn_error(c, AMQP_CHANNEL_ERROR, "CHANNEL_ERROR - content on a closed channel", 0, 0);
		return;
	}
	if (ch->state == CH_CLOSING)
		return;
	if (type == AMQP_FRAME_HEADER)
	{
		char		err[300];

		if (ch->content != 1 || len < 14 || be16(p) != AMQP_BASIC)
		{
			conn_error(c, AMQP_UNEXPECTED_FRAME, "UNEXPECTED_FRAME - unexpected content header", 0, 0);
			return;
		}
		if (!parse_content_header(ch, ch->pub, p, len, err, sizeof(err)))
		{
			if (strncmp(err, "FRAME_ERROR", 11) == 0)
				conn_error(c, AMQP_FRAME_ERROR, err, AMQP_BASIC, 40);
			else
				chan_error_queued(ch, AMQP_PRECONDITION_FAILED, err, AMQP_BASIC, 40);
			return;
		}
		if (ch->pub->body_size > cfg.max_message)
		{
			snprintf(err, sizeof(err), "PRECONDITION_FAILED - message size %llu is larger than configured max size %zu",
					 (unsigned long long) ch->pub->body_size, cfg.max_message);
			chan_error_queued(ch, AMQP_PRECONDITION_FAILED, err, AMQP_BASIC, 40);
			return;
		}
		if (ch->pub->body_size == 0)
			publish_complete(ch);
		else
			ch->content = 2;
		return;
	}
	/* body */
	if (ch->content != 2)
	{
		conn_error(c, AMQP_UNEXPECTED_FRAME, "UNEXPECTED_FRAME - unexpected content body", 0, 0);
		return;
	}
	if (ch->pub->body.len + len > ch->pub->body_size)
	{
		conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - content body larger than its header said", 0, 0);
		return;
	}
	buf_bytes(&ch->pub->body, p, len);
	if (ch->pub->body.len == ch->pub->body_size)
		publish_complete(ch);
}

static void
conn_read(struct bufferevent *bev, void *arg)
{
	Conn	   *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	c->last_recv = time(NULL);
	while (!c->dead)
	{
		size_t		avail = evbuffer_get_length(in);
		uint8_t    *p;
		uint32_t	size;
		uint32_t	limit;

		if (c->state == C_HEADER)
		{
			if (avail < 8)
				return;
			p = evbuffer_pullup(in, 8);
			if (memcmp(p, "AMQP\0\0\x09\x01", 8) != 0)
			{
				/* the protocol we speak, then close (AMQP 0-9-1 section 4.2.2) */
				bufferevent_write(bev, "AMQP\0\0\x09\x01", 8);
				bufferevent_flush(bev, EV_WRITE, BEV_FLUSH);
				c->state = C_CLOSING;
				c->finishing = true;
				bufferevent_disable(bev, EV_READ);
				evbuffer_drain(in, avail);
				return;
			}
			evbuffer_drain(in, 8);
			send_start(c);
			continue;
		}
		if (avail < 7)
			return;
		p = evbuffer_pullup(in, 7);
		size = be32(p + 3);
		limit = c->frame_max ? c->frame_max : cfg.frame_max;
		if ((uint64_t) size + 8 > limit)
		{
			char		text[200];

			snprintf(text, sizeof(text), "FRAME_ERROR - frame size %u larger than frame_max %u",
					 size + 8, limit);
			evbuffer_drain(in, avail);
			conn_error(c, AMQP_FRAME_ERROR, text, 0, 0);
			c->finishing = true;
			bufferevent_disable(bev, EV_READ);
			return;
		}
		if (avail < (size_t) size + 8)
			return;
		p = evbuffer_pullup(in, size + 8);
		if (p[size + 7] != AMQP_FRAME_END)
		{
			evbuffer_drain(in, avail);
			conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - bad frame end octet", 0, 0);
			c->finishing = true;
			bufferevent_disable(bev, EV_READ);
			return;
		}
		handle_frame(c, p[0], be16(p + 1), p + 7, size);
		if (c->dead)
			return;
		evbuffer_drain(in, size + 8);
	}
}

/* output drained below the low mark: consumers go on; a closing
 * connection goes once its close is written */
static void
conn_written(struct bufferevent *bev, void *arg)
{
	Conn	   *c = arg;

	if (c->dead)
		return;
	if (c->finishing &&
		evbuffer_get_length(bufferevent_get_output(bev)) == 0)
	{
		conn_destroy(c);
		return;
	}
	if (c->state == C_OPEN)
		conn_kick(c);
}

static void
conn_event(struct bufferevent *bev, short what, void *arg)
{
	Conn	   *c = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		conn_destroy(c);
}

static const struct timeval handshake_tv = {10, 0};

static void
handshake_timeout(evutil_socket_t fd, short what, void *arg)
{
	Conn	   *c = arg;

	if (c->state == C_OPEN || c->state == C_CLOSING || c->dead)
		return;
	if (c->state == C_AUTHING || c->state == C_OPENING)
	{
		/* waiting for PostgreSQL (which has its own timeout), not the client */
		evtimer_add(c->handshake_timer, &handshake_tv);
		return;
	}
	logmsg("%s: handshake not done within %d s: closed", c->peer, (int) handshake_tv.tv_sec);
	conn_destroy(c);
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
	Conn	   *c = calloc(1, sizeof(Conn));
	int			one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (sa->sa_family == AF_INET)
	{
		struct sockaddr_in *in = (struct sockaddr_in *) sa;
		char		a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(c->peer, sizeof(c->peer), "%s:%d", a, ntohs(in->sin_port));
	}
	else if (sa->sa_family == AF_INET6)
	{
		struct sockaddr_in6 *in = (struct sockaddr_in6 *) sa;
		char		a[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, &in->sin6_addr, a, sizeof(a));
		snprintf(c->peer, sizeof(c->peer), "[%s]:%d", a, ntohs(in->sin6_port));
	}
	c->bev = bufferevent_socket_new(gw_base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->state = C_HEADER;
	c->last_recv = time(NULL);
	c->frame_max = 0;
	bufferevent_setcb(c->bev, conn_read, conn_written, conn_event, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, cfg.out_high / 4, 0);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->handshake_timer = evtimer_new(gw_base, handshake_timeout, c);
	evtimer_add(c->handshake_timer, &handshake_tv);
	c->next = conns;
	conns = c;
	if (gw_verbose)
		logmsg("%s: connection accepted", c->peer);
}

/* out of file descriptors (or another accept error): pause a second
 * rather than spin on the readable listening socket */
static struct event *accept_resume;

static void
on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	evconnlistener_enable(arg);
}

static void
on_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval tv = {1, 0};
	int			err = EVUTIL_SOCKET_ERROR();

	logmsg("accept failed: %s; not accepting for a second", evutil_socket_error_to_string(err));
	evconnlistener_disable(l);
	if (accept_resume == NULL)
		accept_resume = evtimer_new(gw_base, on_accept_resume, l);
	evtimer_add(accept_resume, &tv);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	logmsg("received signal %d, shutting down", (int) sig);
	event_base_loopexit(gw_base, NULL);
}

int
main(int argc, char **argv)
{
	static struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"dbname", required_argument, NULL, 'd'},
		{"config", required_argument, NULL, 'c'},
		{"heartbeat", required_argument, NULL, 'H'},
		{"frame-max", required_argument, NULL, 'F'},
		{"channel-max", required_argument, NULL, 'C'},
		{"lease", required_argument, NULL, 'L'},
		{"poll-wait", required_argument, NULL, 'W'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	int			o,
				i;
	char	   *host,
			   *colon;
	int			port;
	struct evutil_addrinfo hints,
			   *ai = NULL;
	struct evconnlistener *listener;
	char		portstr[16];
	char	   *err = NULL;
	struct event *sigint,
			   *sigterm;

	/* the config file first, so that flags override it */
	for (i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			read_config(argv[i + 1]);
		else if (strncmp(argv[i], "--config=", 9) == 0)
			read_config(argv[i] + 9);
	}
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1)
	{
		switch (o)
		{
			case 'l':
				set_option("listen", optarg);
				break;
			case 'd':
				set_option("dbname", optarg);
				break;
			case 'c':
				break;
			case 'H':
				set_option("heartbeat", optarg);
				break;
			case 'F':
				set_option("frame_max", optarg);
				break;
			case 'C':
				set_option("channel_max", optarg);
				break;
			case 'L':
				set_option("lease", optarg);
				break;
			case 'W':
				set_option("poll_wait", optarg);
				break;
			case 'v':
				gw_verbose = true;
				break;
			case 'h':
				usage(stdout);
				return 0;
			case 'V':
				printf("mq-amqp (queue_ext) %s\n", GW_VERSION);
				return 0;
			default:
				usage(stderr);
				return 2;
		}
	}
	if (optind < argc)
	{
		fprintf(stderr, "mq-amqp: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	gw_conninfo = PQconninfoParse(cfg.dbname ? cfg.dbname : "", &err);
	if (gw_conninfo == NULL)
	{
		fprintf(stderr, "mq-amqp: invalid --dbname: %s", err ? err : "out of memory\n");
		return 2;
	}

	host = strdup(cfg.listen);
	colon = strrchr(host, ':');
	if (colon == NULL || (port = atoi(colon + 1)) <= 0 || port > 65535)
	{
		fprintf(stderr, "mq-amqp: --listen must be HOST:PORT, not \"%s\"\n", cfg.listen);
		return 2;
	}
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']')
	{
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	signal(SIGPIPE, SIG_IGN);
	{
		/* a socket per client: as many descriptors as allowed */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
		{
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	srandom((unsigned) time(NULL) ^ (unsigned) getpid());

	gw_base = event_base_new();
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE;
	snprintf(portstr, sizeof(portstr), "%d", port);
	if (evutil_getaddrinfo(host[0] ? host : NULL, portstr, &hints, &ai) != 0 || ai == NULL)
	{
		fprintf(stderr, "mq-amqp: could not resolve listen address \"%s\"\n", cfg.listen);
		return 1;
	}
	listener = evconnlistener_new_bind(gw_base, on_accept, NULL,
									   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
									   ai->ai_addr, ai->ai_addrlen);
	evutil_freeaddrinfo(ai);
	if (listener == NULL)
	{
		fprintf(stderr, "mq-amqp: could not listen on %s: %s\n", cfg.listen, strerror(errno));
		return 1;
	}
	evconnlistener_set_error_cb(listener, on_accept_error);
	sigint = evsignal_new(gw_base, SIGINT, on_signal, NULL);
	sigterm = evsignal_new(gw_base, SIGTERM, on_signal, NULL);
	event_add(sigint, NULL);
	event_add(sigterm, NULL);
	logmsg("listening on %s", cfg.listen);
	event_base_dispatch(gw_base);

	while (conns)
		conn_destroy(conns);
	evconnlistener_free(listener);
	if (accept_resume)
		event_free(accept_resume);
	event_free(sigint);
	event_free(sigterm);
	event_base_free(gw_base);
	PQconninfoFree(gw_conninfo);
	free(host);
	buf_free(&out);
	return 0;
}
