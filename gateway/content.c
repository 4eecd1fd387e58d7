/*-------------------------------------------------------------------------
 *
 * content.c
 *	  A publish's content from the client: the content header's properties
 *	  in queue_ext's terms, a channel exception in its turn when they are
 *	  refused, and the complete message queued as a publish.
 *
 * It reads content frames only after methods.c has taken the
 * basic.publish; the statement that publishes is publish.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <string.h>

/*
 * Whether s is a valid expiration property: a decimal count of
 * milliseconds, as RabbitMQ accepts.
 */
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
bool
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
void
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

/*
 * The publish in ch->pub has all its content: queued as an operation
 * (batched with the publishes next to it).
 */
void
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
