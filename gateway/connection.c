/*-------------------------------------------------------------------------
 *
 * connection.c
 *	  A client connection: accepted, its frames read and dispatched, the
 *	  connection class (handshake: start, login, tune, vhost; heartbeats;
 *	  close), the handshake's time limit, output drained.
 *
 * Logins (docs/amqp.md, Authentication): the server must check the
 * password (PQconnectionUsedPassword), unless --allow-passwordless-logins;
 * guest/guest from a loopback address logs in as --guest-role's role, which
 * must not be a superuser.  Handshakes past start-ok (each may hold a
 * PostgreSQL session until connection.open-ok) are bounded, per gateway and
 * per client address (logins.c): one over the bound waits for a slot,
 * within its handshake time limit.
 *
 * It owns the connection class and framing; a channel's methods go to
 * methods.c and content frames to content.c.  It runs no broker SQL: the
 * login's session is control.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/listener.h>

/* Channel id of c, or NULL if it is not open. */
static Chan *
chan_get(Conn *c, uint16_t id)
{
	if (id == 0 || id > c->channel_max || c->chans == NULL)
		return NULL;
	return c->chans[id];
}

/* Send connection.start: server properties, mechanisms and locales. */
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
	/*
	 * "RabbitMQ", as other brokers that speak its dialect say: clients (and
	 * amqp091-go's own tests) take RabbitMQ's paths only for that product;
	 * what the gateway is goes in platform and information (docs/amqp.md)
	 */
	json_object_object_add(props, "product", json_object_new_string("RabbitMQ"));
	json_object_object_add(props, "version", json_object_new_string(GW_VERSION));
	json_object_object_add(props, "platform", json_object_new_string("PostgreSQL (queue_ext mq-amqp)"));
	json_object_object_add(props, "information",
						   json_object_new_string("mq-amqp " GW_VERSION ": queue_ext's AMQP 0-9-1 gateway, "
												  "RabbitMQ 3.10's dialect"));
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

/*
 * Heartbeat timer: send one, and close the connection when the client
 * has been silent for two intervals.
 */
static void
heartbeat_tick(evutil_socket_t fd, short what, void *arg)
{
	Conn	   *c = arg;

	if (c->dead)
		return;
	if (!c->paused && time(NULL) - c->last_recv > 2 * (time_t) c->heartbeat)
	{
		conn_reason(c, true, "missed heartbeats from client, timeout: %ds", c->heartbeat);
		conn_destroy(c);
		return;
	}
	frame_begin(AMQP_FRAME_HEARTBEAT, 0);
	frame_send(c);
}

/* 127.0.0.0/8, ::1, or IPv4-mapped 127.0.0.0/8 */
static bool
sockaddr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
	{
		const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;

		if (IN6_IS_ADDR_LOOPBACK(a))
			return true;
		if (IN6_IS_ADDR_V4MAPPED(a))
			return a->s6_addr[12] == 127;
	}
	return false;
}

/* the login of c is refused (403, as for a wrong password); why goes to the log */
static void
login_refused(Conn *c, const char *why)
{
	logmsg("%s: login of \"%s\" refused: %s", c->peer, c->user, why);
	conn_error(c, AMQP_ACCESS_REFUSED,
			   "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
			   "For details see the broker logfile.", AMQP_CONNECTION, 11);
}

static void auth_connected(Conn *c, bool ok, const char *error);

/*
 * Start c's login (login_begin's callback, now or when a slot is free):
 * its control session connects as the client's role.
 */
static void
login_connect(Conn *c)
{
	c->state = C_AUTHING;
	c->ctl = ctl_new(c, NULL, auth_connected);
}

/*
 * The control session connected to the vhost's database (connection.open):
 * open-ok, or the connection is refused.
 */
static void
vhost_connected(Conn *c, bool ok, const char *error)
{
	login_done(c);
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
	c->opened = true;
	{
		PGconn	   *pg = ctl_pgconn(c->ctl);

		loginfo("%s: user '%s' authenticated and granted access to vhost '%s' "
				"(PostgreSQL role \"%s\", database \"%s\")", c->peer, c->user,
				c->vhost[0] ? c->vhost : "/", c->pguser, pg ? PQdb(pg) : "?");
	}
	method_begin(0, AMQP_CONNECTION, 41);
	buf_shortstr(&out, "");
	frame_send(c);
	/* an idle connection holds no session: cleanups open one when needed */
	ctl_orphan(c->ctl);
	c->ctl = NULL;
}

/*
 * The login's session connected (or not): the password must have been
 * checked by the server (or passwordless logins allowed); then tune.
 */
static void
auth_connected(Conn *c, bool ok, const char *error)
{
	PGconn	   *pg = ok ? ctl_pgconn(c->ctl) : NULL;
	const char *why = NULL;
	char		whybuf[600];

	if (ok && c->guest)
	{
		const char *su = pg ? PQparameterStatus(pg, "is_superuser") : NULL;

		if (su == NULL || strcmp(su, "off") != 0)
		{
			snprintf(whybuf, sizeof(whybuf),
					 "--guest-role \"%s\" is a superuser: guest is not let in as one",
					 c->pguser);
			why = whybuf;
		}
	}
	else if (ok && !cfg.allow_passwordless && !(pg && PQconnectionUsedPassword(pg)))
		why = "PostgreSQL let the role in without checking its password (trust?); "
			"--allow-passwordless-logins allows that, for development only";
	if (why)
	{
		/* the session goes at once */
		ctl_orphan(c->ctl);
		c->ctl = NULL;
		login_done(c);
		login_refused(c, why);
		return;
	}
	if (!ok)
	{
		char		text[600];

		login_done(c);
		if (strstr(error, "authentication failed") || strstr(error, "no password") ||
			strstr(error, "role") || strstr(error, "not permitted to log in") ||
			strstr(error, "no pg_hba.conf entry"))
		{
			login_refused(c, error);
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

/*
 * A method on channel 0: the connection class, in the handshake's order
 * (start-ok, tune-ok, open), then close and close-ok.  Anything else or
 * out of order is a connection error.
 */
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
	/*
	 * A close is under way.  While the client's is, nothing more counts;
	 * while ours waits, its close-ok (or a close crossing ours, answered
	 * close-ok) ends the connection, and anything else is dropped.
	 */
	if (c->state == C_CLOSING)
	{
		if (c->client_closing)
			return;
		if (meth == 51 || meth == 50)
		{
			/*
			 * the handshake is done: the socket goes once our output is
			 * written, and what the client still sends is read and dropped
			 * until it closes (conn_destroy), as RabbitMQ: a client still
			 * sending would get a reset otherwise
			 */
			if (meth == 50)
				send_simple(c, 0, AMQP_CONNECTION, 51);
			c->linger = true;
			if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
				conn_destroy(c);
			else
			{
				c->finishing = true;
				bufferevent_disable(c->bev, EV_READ);
			}
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
				/*
				 * client properties (only consumer_cancel_notify matters),
				 * mechanism, response, locale
				 */
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
				if (cfg.guest_role && strcmp(c->user, "guest") == 0)
				{
					if (!c->loopback)
					{
						logmsg("%s: login of \"guest\" refused: User can only log in via localhost",
							   c->peer);
						conn_error(c, AMQP_ACCESS_REFUSED,
								   "ACCESS_REFUSED - user 'guest' can only connect via localhost",
								   cls, meth);
						return;
					}
					if (strcmp(c->password, "guest") != 0)
					{
						login_refused(c, "wrong password for guest");
						return;
					}
					/* as the role, without a password: the server lets it in */
					c->guest = true;
					snprintf(c->pguser, sizeof(c->pguser), "%s", cfg.guest_role);
					free(c->password);
					c->password = NULL;
				}
				else
				{
					/*
					 * libpq would take an empty password as none, and look
					 * for one in the gateway's own ~/.pgpass or PGPASSWORD
					 */
					if (c->password[0] == '\0' && !cfg.allow_passwordless)
					{
						login_refused(c, "empty password");
						return;
					}
					snprintf(c->pguser, sizeof(c->pguser), "%s", c->user);
				}
				/* the server checks the password (auth_connected) */
				login_begin(c, login_connect);
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
				/* the client's limits, within ours (0: no limit of its own) */
				c->channel_max = channel_max == 0 || channel_max > cfg.channel_max ?
					cfg.channel_max : channel_max;
				c->frame_max = frame_max == 0 || frame_max > cfg.frame_max ? cfg.frame_max : frame_max;
				c->heartbeat = heartbeat;
				c->chans = calloc(c->channel_max + 1, sizeof(Chan *));
				/* sent at half the interval, also to notice a silent client */
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
			/*
			 * "/" is the gateway's own database (its settings); any other
			 * vhost names a database, which the login must be able to
			 * connect to
			 */
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
				uint16_t	code = rd_u16(r);

				rd_shortstr(r, s);
				conn_reason(c, false, "client closed the connection (connection.close %u%s%s)",
							code, r->err ? "" : " ", r->err ? "" : s);
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
				/*
				 * close-ok once the channels are done (conn_close_finish),
				 * or after 30 s whatever they hold (close_timeout)
				 */
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
			conn_reason(c, false, "client closed the connection (connection.close-ok)");
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
	/* a handshake method out of its turn (a break above) */
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
	/* channel 0: the connection class only, no content */
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
	/*
	 * a channel frame: a method (methods.c), or a content header or body of
	 * the basic.publish the channel waits on (ch->content: 1, then 2)
	 */
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

/*
 * Read what the client sent: the protocol header first, then whole frames,
 * each checked (size, frame end) and handled in order.
 */
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
				conn_reason(c, true, "client sent the header of another protocol than "
							"AMQP 0-9-1");
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

/* The client's socket closed or failed: the connection is destroyed. */
static void
conn_event(struct bufferevent *bev, short what, void *arg)
{
	Conn	   *c = arg;

	if (what & BEV_EVENT_ERROR)
		conn_reason(c, true, "socket error: %s",
					evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	else if ((what & BEV_EVENT_EOF) && c->state == C_HEADER &&
			 evbuffer_get_length(bufferevent_get_input(bev)) == 0)
		conn_reason(c, false, "client closed TCP connection before sending anything "
					"(a port check?)");
	else if (what & BEV_EVENT_EOF)
		conn_reason(c, true, "client unexpectedly closed TCP connection");
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		conn_destroy(c);
}

/* The handshake took too long (from accept to open-ok): closed. */
static void
handshake_timeout(evutil_socket_t fd, short what, void *arg)
{
	Conn	   *c = arg;
	struct timeval handshake_tv = {cfg.handshake_timeout, 0};

	if (c->state == C_OPEN || c->state == C_CLOSING || c->dead)
		return;
	if (c->state == C_AUTHING || c->state == C_OPENING)
	{
		/* waiting for PostgreSQL (which has its own timeout), not the client */
		evtimer_add(c->handshake_timer, &handshake_tv);
		return;
	}
	logmsg("%s: handshake not done within %d s%s: closed", c->peer, (int) handshake_tv.tv_sec,
		   c->state == C_LOGIN_WAIT ? " (its login waited for a slot)" : "");
	conn_reason(c, true, "handshake timeout: not done within %d s",
				(int) handshake_tv.tv_sec);
	conn_destroy(c);
}

/*
 * A client connected: its Conn, its buffered socket and the handshake's
 * time limit; it is expected to send the protocol header first.
 */
void
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
		snprintf(c->addr, sizeof(c->addr), "%s", a);
	}
	else if (sa->sa_family == AF_INET6)
	{
		struct sockaddr_in6 *in = (struct sockaddr_in6 *) sa;
		char		a[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, &in->sin6_addr, a, sizeof(a));
		snprintf(c->peer, sizeof(c->peer), "[%s]:%d", a, ntohs(in->sin6_port));
		snprintf(c->addr, sizeof(c->addr), "%s", a);
	}
	c->loopback = sockaddr_is_loopback(sa);
	{
		/* the gateway's end: the address and port the client came to */
		struct sockaddr_storage ss;
		socklen_t	sslen = sizeof(ss);
		char		a[INET6_ADDRSTRLEN];

		if (getsockname(fd, (struct sockaddr *) &ss, &sslen) == 0 && ss.ss_family == AF_INET)
		{
			struct sockaddr_in *in = (struct sockaddr_in *) &ss;

			inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
			snprintf(c->local, sizeof(c->local), "%s:%d", a, ntohs(in->sin_port));
		}
		else if (getsockname(fd, (struct sockaddr *) &ss, &sslen) == 0 &&
				 ss.ss_family == AF_INET6)
		{
			struct sockaddr_in6 *in = (struct sockaddr_in6 *) &ss;

			inet_ntop(AF_INET6, &in->sin6_addr, a, sizeof(a));
			snprintf(c->local, sizeof(c->local), "[%s]:%d", a, ntohs(in->sin6_port));
		}
		else
			snprintf(c->local, sizeof(c->local), "%s", cfg.listen);
	}
	c->bev = bufferevent_socket_new(gw_base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->state = C_HEADER;
	c->last_recv = time(NULL);
	c->frame_max = 0;
	bufferevent_setcb(c->bev, conn_read, conn_written, conn_event, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, cfg.out_high / 4, 0);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->handshake_timer = evtimer_new(gw_base, handshake_timeout, c);
	{
		struct timeval handshake_tv = {cfg.handshake_timeout, 0};

		evtimer_add(c->handshake_timer, &handshake_tv);
	}
	c->next = conns;
	conns = c;
	loginfo("%s: accepting AMQP connection (%s -> %s)", c->peer, c->peer, c->local);
}
