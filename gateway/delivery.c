/*-------------------------------------------------------------------------
 *
 * delivery.c
 *	  A delivery to the client: the basic properties of a row of
 *	  mq.consume from queue_ext's headers, its content frames, and its
 *	  delivery tag, remembered with its receipt for the ack.
 *
 * It turns rows into frames and tags; it decides nothing of when to
 * deliver (consumer.c) or settle (operations.c).
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x-death as RabbitMQ sends it: time an AMQP timestamp, count a long */
static void
fix_x_death(json_object *headers)
{
	json_object *xd = json_get(headers, "x-death");
	size_t		i;

	if (!xd || !json_object_is_type(xd, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(xd); i++)
	{
		json_object *d = json_object_array_get_idx(xd, i);
		const char *t = json_str(d, "time");
		json_object *cnt = json_get(d, "count");

		if (t)
		{
			int64_t		secs = amqp_parse_iso_time(t);

			if (secs >= 0)
			{
				json_object *ts = json_object_new_object();
				char		txt[32];

				snprintf(txt, sizeof(txt), "%lld", (long long) secs);
				json_object_object_add(ts, AMQP_TYPE_KEY, json_object_new_string("T"));
				json_object_object_add(ts, "v", json_object_new_string(txt));
				json_object_object_add(d, "time", ts);
			}
		}
		if (cnt && json_object_is_type(cnt, json_type_int))
		{
			json_object *l = json_object_new_object();

			json_object_object_add(l, AMQP_TYPE_KEY, json_object_new_string("l"));
			json_object_object_add(l, "v", json_object_new_int64(json_object_get_int64(cnt)));
			json_object_object_add(d, "count", l);
		}
	}
}

/*
 * The basic properties of a delivery, from queue_ext's headers (with the
 * properties the gateway kept under AMQP_PROPS_KEY), its properties and its
 * priority (docs/amqp.md).
 */
static void
props_from_row(Buf *b, const char *headers_txt, const char *props_txt, bool has_prio, int prio,
			   int64_t stream_offset)
{
	json_object *headers = headers_txt ? json_tokener_parse(headers_txt) : NULL;
	json_object *props = props_txt ? json_tokener_parse(props_txt) : NULL;
	json_object *extra = NULL;
	uint16_t	flags = 0;
	const char *content_type = json_str(props, "content_type");
	const char *correlation_id = json_str(props, "correlation_id");
	const char *reply_to = json_str(props, "reply_to");
	json_object *exp = json_get(props, "expiration");
	char		expiration[64] = "";
	const char *exp_str = NULL;
	json_object *v;
	bool		send_headers = false;
	char		err[128];

	if (headers && json_object_is_type(headers, json_type_object))
	{
		extra = json_get(headers, AMQP_PROPS_KEY);
		if (extra)
		{
			json_object_get(extra);
			json_object_object_del(headers, AMQP_PROPS_KEY);
		}
		send_headers = !(json_get(extra, "no-headers") && json_object_object_length(headers) == 0);
		fix_x_death(headers);
	}
	if (stream_offset >= 0)
	{
		/* RabbitMQ's streams tell a consumer each message's offset */
		json_object *l = json_object_new_object();

		if (headers == NULL || !json_object_is_type(headers, json_type_object))
		{
			if (headers)
				json_object_put(headers);
			headers = json_object_new_object();
		}
		json_object_object_add(l, AMQP_TYPE_KEY, json_object_new_string("l"));
		json_object_object_add(l, "v", json_object_new_int64(stream_offset));
		json_object_object_add(headers, "x-stream-offset", l);
		send_headers = true;
	}
	if (exp)
	{
		const char *s = json_str(extra, "expiration");

		if (s)
			snprintf(expiration, sizeof(expiration), "%s", s);
		else
			snprintf(expiration, sizeof(expiration), "%lld",
					 (long long) json_object_get_int64(exp));
		exp_str = expiration;
	}

	b->len = 0;
	buf_u16(b, 0);
#define SHORT_PROP(bit, val) \
	if (val) { flags |= (1 << (bit)); buf_shortstr(b, (val)); }
	SHORT_PROP(15, content_type);
	SHORT_PROP(14, json_str(extra, "content_encoding"));
	if (send_headers)
	{
		flags |= 1 << 13;
		if (!buf_table_json(b, headers, err, sizeof(err)))
			logmsg("headers of a message: %s", err);
	}
	if ((v = json_get(extra, "delivery_mode")))
	{
		flags |= 1 << 12;
		buf_u8(b, json_object_get_int(v));
	}
	if (has_prio)
	{
		flags |= 1 << 11;
		buf_u8(b, prio);
	}
	SHORT_PROP(10, correlation_id);
	SHORT_PROP(9, reply_to);
	SHORT_PROP(8, exp_str);
	SHORT_PROP(7, json_str(extra, "message_id"));
	if ((v = json_get(extra, "timestamp")))
	{
		flags |= 1 << 6;
		buf_u64(b, json_object_is_type(v, json_type_string) ?
				strtoull(json_object_get_string(v), NULL, 10) : (uint64_t) json_object_get_int64(v));
	}
	SHORT_PROP(5, json_str(extra, "type"));
	SHORT_PROP(4, json_str(extra, "user_id"));
	SHORT_PROP(3, json_str(extra, "app_id"));
	SHORT_PROP(2, json_str(extra, "cluster_id"));
#undef SHORT_PROP
	b->data[0] = flags >> 8;
	b->data[1] = flags & 0xff;
	if (headers)
		json_object_put(headers);
	if (props)
		json_object_put(props);
	if (extra)
		json_object_put(extra);
}

/* Column col of row, a binary int4. */
static int32_t
col_i32(PGresult *r, int row, int col)
{
	return (int32_t) be32((const uint8_t *) PQgetvalue(r, row, col));
}

/* Column col of row, a binary int8. */
int64_t
col_i64(PGresult *r, int row, int col)
{
	return (int64_t) be64((const uint8_t *) PQgetvalue(r, row, col));
}

/* Column col of row as a string, NULL if null. */
static const char *
col_str(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* remember a delivery for its ack; returns its tag */
uint64_t
track_delivery(Chan *ch, PGresult *r, int row, Consumer *cons, bool no_ack)
{
	uint64_t	tag = ++ch->next_tag;
	Unacked    *e;

	if (no_ack || PQgetisnull(r, row, COL_RECEIPT))
		return tag;
	e = calloc(1, sizeof(Unacked));
	e->tag = tag;
	e->queue = strdup(PQgetvalue(r, row, COL_QUEUE));
	e->receipt = strdup(PQgetvalue(r, row, COL_RECEIPT));
	e->cons = cons;
	if (ch->unacked_tail)
		ch->unacked_tail->next = e;
	else
		ch->unacked = e;
	ch->unacked_tail = e;
	ch->n_unacked++;
	if (cons)
		cons->unacked++;
	return tag;
}

/* The content header and body frames of row (a row of mq.consume). */
void
send_row_content(Chan *ch, PGresult *r, int row)
{
	Buf			props = {0};

	props_from_row(&props, col_str(r, row, COL_HEADERS), col_str(r, row, COL_PROPS),
				   !PQgetisnull(r, row, COL_PRIORITY),
				   PQgetisnull(r, row, COL_PRIORITY) ? 0 : col_i32(r, row, COL_PRIORITY),
				   PQgetisnull(r, row, COL_OFFSET) ? -1 : col_i64(r, row, COL_OFFSET));
	send_content(ch->conn, ch->id, &props, (const uint8_t *) PQgetvalue(r, row, COL_BODY),
				 PQgetlength(r, row, COL_BODY));
	buf_free(&props);
}
