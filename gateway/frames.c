/*-------------------------------------------------------------------------
 *
 * frames.c
 *	  Frames to the client: one frame is built at a time in out (method,
 *	  content header and body frames, cut at the connection's frame_max),
 *	  and the text of a reply code ("NOT_FOUND - ...").
 *
 * It builds and writes frames; it decodes nothing and knows nothing of
 * PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>

/* the frame being built (one at a time) */
Buf			out;

/* Start a frame of type on channel ch in out; frame_send ends it. */
void
frame_begin(uint8_t type, uint16_t ch)
{
	out.len = 0;
	buf_u8(&out, type);
	buf_u16(&out, ch);
	buf_u32(&out, 0);
}

/* End the frame in out (size and frame end) and write it to c. */
void
frame_send(Conn *c)
{
	buf_set_u32(&out, 3, out.len - 7);
	buf_u8(&out, AMQP_FRAME_END);
	if (!c->dead && c->bev)
		bufferevent_write(c->bev, out.data, out.len);
}

/* Start a method frame cls.meth on channel ch; its arguments follow. */
void
method_begin(uint16_t ch, uint16_t cls, uint16_t meth)
{
	frame_begin(AMQP_FRAME_METHOD, ch);
	buf_u16(&out, cls);
	buf_u16(&out, meth);
}

/* Send method cls.meth, which has no arguments. */
void
send_simple(Conn *c, uint16_t ch, uint16_t cls, uint16_t meth)
{
	method_begin(ch, cls, meth);
	frame_send(c);
}

/* the content header and body frames after a method */
void
send_content(Conn *c, uint16_t ch, const Buf *props, const uint8_t *body, size_t len)
{
	size_t		chunk = c->frame_max ? c->frame_max - 8 : cfg.frame_max - 8;
	size_t		off;

	frame_begin(AMQP_FRAME_HEADER, ch);
	buf_u16(&out, AMQP_BASIC);
	buf_u16(&out, 0);
	buf_u64(&out, len);
	if (props->len)
		buf_bytes(&out, props->data, props->len);
	else
		buf_u16(&out, 0);
	frame_send(c);
	for (off = 0; off < len; off += chunk)
	{
		size_t		n = len - off < chunk ? len - off : chunk;

		frame_begin(AMQP_FRAME_BODY, ch);
		buf_bytes(&out, body + off, n);
		frame_send(c);
	}
}

/* The name of reply code code ("NOT_FOUND"), for a reply text. */
static const char *
reply_name(int code)
{
	switch (code)
	{
		case 200:
			return "OK";
		case AMQP_CONTENT_TOO_LARGE:
			return "CONTENT_TOO_LARGE";
		case AMQP_NO_ROUTE:
			return "NO_ROUTE";
		case AMQP_CONNECTION_FORCED:
			return "CONNECTION_FORCED";
		case AMQP_INVALID_PATH:
			return "INVALID_PATH";
		case AMQP_ACCESS_REFUSED:
			return "ACCESS_REFUSED";
		case AMQP_NOT_FOUND:
			return "NOT_FOUND";
		case AMQP_RESOURCE_LOCKED:
			return "RESOURCE_LOCKED";
		case AMQP_PRECONDITION_FAILED:
			return "PRECONDITION_FAILED";
		case AMQP_FRAME_ERROR:
			return "FRAME_ERROR";
		case AMQP_SYNTAX_ERROR:
			return "SYNTAX_ERROR";
		case AMQP_COMMAND_INVALID:
			return "COMMAND_INVALID";
		case AMQP_CHANNEL_ERROR:
			return "CHANNEL_ERROR";
		case AMQP_UNEXPECTED_FRAME:
			return "UNEXPECTED_FRAME";
		case AMQP_RESOURCE_ERROR:
			return "RESOURCE_ERROR";
		case AMQP_NOT_ALLOWED:
			return "NOT_ALLOWED";
		case AMQP_NOT_IMPLEMENTED:
			return "NOT_IMPLEMENTED";
		default:
			return "INTERNAL_ERROR";
	}
}

/* "NOT_FOUND - text", at most a shortstr */
void
reply_text(char *buf, size_t len, int code, const char *text)
{
	snprintf(buf, len < 256 ? len : 256, "%s - %s", reply_name(code), text);
}

/*
 * A PostgreSQL error's: "PRECONDITION_FAILED - text. HINT: hint" when the
 * server gave a hint (the remedy: the client has no other way to see it),
 * at most a shortstr
 */
void
reply_text_hint(char *buf, size_t len, int code, const char *text, const char *hint)
{
	if (hint == NULL || hint[0] == '\0')
		reply_text(buf, len, code, text);
	else
		snprintf(buf, len < 256 ? len : 256, "%s - %s. HINT: %s", reply_name(code), text, hint);
}
