/*-------------------------------------------------------------------------
 *
 * h2.c
 *	  HTTP/2 connections of mq-rocketmq (libnghttp2 on libevent) and the
 *	  gRPC framing of their streams.
 *
 * Each client connection is an nghttp2 server session fed from and writing
 * to a libevent bufferevent.  A request stream is one RPC: its :path names
 * the method, its DATA carries gRPC messages (a 1-byte compressed flag and
 * a 4-byte big-endian length before each), which go one by one to the
 * layer above (rpc.c) through the StreamHandlers it registered.
 * A response is the headers (:status 200, content-type application/grpc),
 * the messages rpc.c sends, and trailers with grpc-status; a response that
 * is still open (server streaming, Telemetry) defers its DATA until rpc.c
 * sends more or finishes it.
 *
 * Under TLS (tls.c) the bufferevent is a TLS one and every byte goes
 * through it; on plain TCP output may go straight to the socket
 * (conn_write_direct).  A connection has HANDSHAKE_TIMEOUT seconds from
 * its accept to finish any TLS handshake and send the HTTP/2 preface and
 * its first frame, however slowly it trickles bytes; after that it may
 * stay idle (RocketMQ clients keep theirs).
 *
 *-------------------------------------------------------------------------
 */
#include "rmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

/*
 * seconds a new connection has to finish its TLS handshake (if any) and
 * send the HTTP/2 connection preface and first frame
 */
#define HANDSHAKE_TIMEOUT 10

/* a request message larger than this ends the stream (RESOURCE_EXHAUSTED) */
#define MAX_REQUEST_MESSAGE (64 * 1024 * 1024)

/*
 * Bytes of HTTP/2 output waiting for a client to read them beyond which the
 * gateway stops making more (nghttp2 keeps the frames not yet made) and
 * stops reading the client's requests, until the client has read half of
 * it: a client that reads nothing costs this much, not what it asks for.
 * Flow control alone does not bound it: a client may open its windows wide,
 * and HEADERS, trailers and control frames are not flow controlled.
 */
#define OUTPUT_HIGH (1024 * 1024)

struct Conn
{
	struct bufferevent *bev;
	nghttp2_session *h2;
	char		peer[64];
	Stream	   *streams;
	bool		flushing;
	bool		dead;
	bool		free_scheduled;
	bool		greeted;		/* the client's connection preface arrived */
	bool		throttled;		/* OUTPUT_HIGH reached: not reading */
	bool		tls;			/* bev is a TLS bufferevent (tls.c) */
	struct event *hello;		/* HANDSHAKE_TIMEOUT, until greeted */
};

/* the connections open, each until conn_free (--max-connections) */
static int	n_conns;

int
h2_connections(void)
{
	return n_conns;
}

/* the layer above's handlers of stream events (rpc.c registers them) */
static const StreamHandlers *handlers;

void
h2_set_handlers(const StreamHandlers *h)
{
	handlers = h;
}

/* room for n more bytes */
static void
buf_reserve(Buf *b, size_t n)
{
	if (b->len + n > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 256;

		while (cap < b->len + n)
			cap *= 2;
		b->data = realloc(b->data, cap);
		if (b->data == NULL)
		{
			logmsg("out of memory");
			abort();
		}
		b->cap = cap;
	}
}

void
buf_add(Buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

void
buf_free(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/*
 * src into dst of size bytes, cut short if need be, always terminated: what
 * snprintf(dst, size, "%s", src) does, for a tenth of its instructions (it
 * ran several times a request; bench/README.md, RocketMQ)
 */
void
str_copy(char *dst, size_t size, const char *src)
{
	size_t		n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void conn_free(Conn *c);

static void
conn_free_cb(evutil_socket_t fd, short what, void *arg)
{
	conn_free(arg);
}

/*
 * The connection ends: freed from the event loop, never under a caller
 * that may still hold one of its streams
 */
static void
conn_schedule_free(Conn *c)
{
	struct timeval zero = {0, 0};

	c->dead = true;
	if (c->free_scheduled)
		return;
	c->free_scheduled = true;
	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	event_base_once(rmq_base, -1, EV_TIMEOUT, conn_free_cb, c, &zero);
}

/*
 * Output made while nothing waits in the socket's buffer (the bufferevent's
 * output) is gathered, up to this, and written to the socket at once, with
 * one send: the bufferevent would copy it, wait for the socket's write
 * event (adding and deleting it) and write it in a later turn of the loop,
 * a twelfth of the gateway's instructions for a send answered
 * (bench/README.md, RocketMQ)
 */
#define DIRECT_MAX 16384

/* n bytes at p to the socket: what it does not take to the bufferevent */
static void
conn_write_direct(Conn *c, const uint8_t *p, size_t n)
{
	ssize_t		w = send(bufferevent_getfd(c->bev), p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	/* it would block, or failed: the bufferevent tries, and reports an error */
	if (w < 0)
		w = 0;
	if ((size_t) w < n)
		bufferevent_write(c->bev, p + w, n - w);
}

/* nghttp2 has output: write it to the socket's buffer, up to OUTPUT_HIGH */
void
conn_flush(Conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	uint8_t		direct[DIRECT_MAX];
	size_t		ndirect = 0;
	bool		can_direct;

	if (c->dead || c->flushing)
		return;
	c->flushing = true;
	/* TLS: every byte through the TLS bufferevent */
	can_direct = !c->tls && evbuffer_get_length(out) == 0;
	while (evbuffer_get_length(out) < OUTPUT_HIGH)
	{
		const uint8_t *data;
		ssize_t		n = nghttp2_session_mem_send(c->h2, &data);

		if (n < 0)
		{
			logmsg("%s: HTTP/2 error: %s", c->peer, nghttp2_strerror((int) n));
			c->dead = true;
			break;
		}
		if (n == 0)
			break;
		if (can_direct && ndirect + n <= DIRECT_MAX)
		{
			memcpy(direct + ndirect, data, n);
			ndirect += n;
			continue;
		}
		/* in order: what was gathered first, then all through the bufferevent */
		if (ndirect > 0)
			conn_write_direct(c, direct, ndirect);
		ndirect = 0;
		can_direct = false;
		bufferevent_write(c->bev, data, n);
	}
	if (ndirect > 0)
		conn_write_direct(c, direct, ndirect);
	c->flushing = false;
	if (!c->dead && !c->throttled && evbuffer_get_length(out) >= OUTPUT_HIGH)
	{
		/* the client does not read: neither do we (on_write resumes) */
		c->throttled = true;
		bufferevent_disable(c->bev, EV_READ);
		if (rmq_verbose)
			logmsg("%s: %d bytes of output unread: not reading the client's requests",
				   c->peer, OUTPUT_HIGH);
	}
	if (c->dead ||
		(!nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2) &&
		 evbuffer_get_length(bufferevent_get_output(c->bev)) == 0))
		conn_schedule_free(c);
}

static Stream *
stream_find(Conn *c, int32_t id)
{
	return nghttp2_session_get_stream_user_data(c->h2, id);
}

/* the DATA of a response: what rpc.c sent, then the trailers */
static ssize_t
data_read(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t length,
		  uint32_t *flags, nghttp2_data_source *source, void *user)
{
	Stream	   *s = source->ptr;
	size_t		n = s->out.len - s->out_off;

	if (n > length)
		n = length;
	memcpy(buf, s->out.data + s->out_off, n);
	s->out_off += n;
	if (s->out_off == s->out.len)
	{
		s->out.len = s->out_off = 0;
		if (s->finished)
		{
			char		status[16];
			nghttp2_nv	tr[1];

			/* gRPC's status codes are 0 to 16 */
			if (s->grpc_status >= 0 && s->grpc_status < 10)
			{
				status[0] = '0' + s->grpc_status;
				status[1] = '\0';
			}
			else
				snprintf(status, sizeof(status), "%d", s->grpc_status);
			tr[0] = (nghttp2_nv)
			{
				(uint8_t *) "grpc-status", (uint8_t *) status, 11, strlen(status),
					NGHTTP2_NV_FLAG_NONE
			};
			*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
			if (!s->trailers_sent)
			{
				s->trailers_sent = true;
				nghttp2_submit_trailer(h2, id, tr, 1);
			}
			return n;
		}
		if (n == 0)
			return NGHTTP2_ERR_DEFERRED;
	}
	return n;
}

static void
stream_respond(Stream *s)
{
	Conn	   *c = s->conn;

	if (s->closed)
		return;
	if (!s->responding)
	{
		nghttp2_nv	hdrs[2] = {
			{(uint8_t *) ":status", (uint8_t *) "200", 7, 3, NGHTTP2_NV_FLAG_NONE},
			{(uint8_t *) "content-type", (uint8_t *) "application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE},
		};
		nghttp2_data_provider prd;

		prd.source.ptr = s;
		prd.read_callback = data_read;
		s->responding = true;
		nghttp2_submit_response(c->h2, s->id, hdrs, 2, &prd);
	}
	else
		nghttp2_session_resume_data(c->h2, s->id);
	conn_flush(c);
}

/* m, gRPC-framed, after what s has to send */
static void
stream_put_message(Stream *s, const ProtobufCMessage *m)
{
	size_t		n = protobuf_c_message_get_packed_size(m);
	uint8_t    *p;

	buf_reserve(&s->out, 5 + n);
	p = (uint8_t *) s->out.data + s->out.len;
	p[0] = 0;
	p[1] = (n >> 24) & 0xff;
	p[2] = (n >> 16) & 0xff;
	p[3] = (n >> 8) & 0xff;
	p[4] = n & 0xff;
	protobuf_c_message_pack(m, p + 5);
	s->out.len += 5 + n;
}

/* Send one response message on the stream (gRPC-framed). */
void
stream_send_message(Stream *s, const ProtobufCMessage *m)
{
	if (s->closed || s->finished)
		return;
	stream_put_message(s, m);
	stream_respond(s);
}

/*
 * The one answer of a unary RPC: m, then trailers with grpc-status 0, as
 * stream_send_message and stream_finish(s, 0, NULL) would send them, but
 * made into frames and written together (headers, DATA with END_STREAM's
 * trailers after it) instead of in two rounds with an empty DATA frame
 * between them
 */
void
stream_answer(Stream *s, const ProtobufCMessage *m)
{
	if (s->closed || s->finished)
		return;
	stream_put_message(s, m);
	s->finished = true;
	s->grpc_status = 0;
	stream_respond(s);
}

/* End the response: trailers with grpc-status (0: OK) once all is sent. */
void
stream_finish(Stream *s, int grpc_status, const char *msg)
{
	if (s->closed || s->finished)
		return;
	s->finished = true;
	s->grpc_status = grpc_status;
	if (msg && rmq_verbose)
		logmsg("%s: grpc-status %d: %s", s->path, grpc_status, msg);
	stream_respond(s);
}

/*
 * Freed streams kept for the next ones: a Stream is over 1 kB, which glibc
 * allocates on its slower path (no thread cache), and a stream comes and
 * goes with every RPC (bench/README.md, RocketMQ)
 */
#define STREAM_CACHE 16
static Stream *stream_cache[STREAM_CACHE];
static int	n_stream_cache;

/* kept with a cached stream: its buffers, when no larger than this */
#define STREAM_CACHE_BUF 4096

/* a new stream, zeroed but for the room of its (empty) buffers */
static Stream *
stream_new(void)
{
	Stream	   *s;
	Buf			in,
				out;

	if (n_stream_cache == 0)
		return calloc(1, sizeof(Stream));
	s = stream_cache[--n_stream_cache];
	in = s->in;
	out = s->out;
	memset(s, 0, sizeof(Stream));
	s->in.data = in.data;
	s->in.cap = in.cap;
	s->out.data = out.data;
	s->out.cap = out.cap;
	return s;
}

static void
stream_delete(Stream *s)
{
	if (n_stream_cache < STREAM_CACHE)
	{
		if (s->in.cap > STREAM_CACHE_BUF)
			buf_free(&s->in);
		if (s->out.cap > STREAM_CACHE_BUF)
			buf_free(&s->out);
		stream_cache[n_stream_cache++] = s;
	}
	else
	{
		buf_free(&s->in);
		buf_free(&s->out);
		free(s);
	}
}

static int
on_begin_headers(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
	Conn	   *c = user;
	Stream	   *s;

	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	s = stream_new();
	s->conn = c;
	s->id = frame->hd.stream_id;
	s->next = c->streams;
	c->streams = s;
	nghttp2_session_set_stream_user_data(h2, s->id, s);
	return 0;
}

static void
copy_header(char *dst, size_t size, const uint8_t *value, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, value, len);
	dst[len] = '\0';
}

static int
on_header(nghttp2_session *h2, const nghttp2_frame *frame, const uint8_t *name,
		  size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
		  void *user)
{
	Stream	   *s = stream_find(user, frame->hd.stream_id);

	if (s == NULL || frame->hd.type != NGHTTP2_HEADERS)
		return 0;
#define IS(n) (namelen == strlen(n) && memcmp(name, n, namelen) == 0)
	if (IS(":path"))
		copy_header(s->path, sizeof(s->path), value, valuelen);
	else if (IS("authorization"))
		copy_header(s->authorization, sizeof(s->authorization), value, valuelen);
	else if (IS("x-mq-date-time"))
		copy_header(s->date_time, sizeof(s->date_time), value, valuelen);
	else if (IS("x-mq-namespace"))
		copy_header(s->namespace_, sizeof(s->namespace_), value, valuelen);
	else if (IS("x-mq-client-id"))
		copy_header(s->client_id, sizeof(s->client_id), value, valuelen);
#undef IS
	return 0;
}

/* Hand the complete messages of s->in to the layer above. */
static void
stream_take_messages(Stream *s)
{
	size_t		at = 0;

	while (!s->closed && !s->finished && s->in.len - at >= 5)
	{
		const uint8_t *p = (const uint8_t *) s->in.data + at;
		uint32_t	n = ((uint32_t) p[1] << 24) | ((uint32_t) p[2] << 16) |
			((uint32_t) p[3] << 8) | p[4];

		if (p[0] != 0)
		{
			/* no grpc-encoding was offered: a compressed message is an error */
			stream_finish(s, 12, "compressed messages are not supported");
			break;
		}
		if (n > MAX_REQUEST_MESSAGE)
		{
			stream_finish(s, 8, "request message too large");
			break;
		}
		if (s->in.len - at - 5 < n)
			break;
		handlers->message(s, p + 5, n);
		at += 5 + n;
	}
	if (at > 0 && at <= s->in.len)
	{
		memmove(s->in.data, s->in.data + at, s->in.len - at);
		s->in.len -= at;
	}
}

static int
on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *data,
			  size_t len, void *user)
{
	Stream	   *s = stream_find(user, id);

	if (s == NULL || s->finished)
		return 0;
	if (s->in.len + len > MAX_REQUEST_MESSAGE + 5)
	{
		stream_finish(s, 8, "request message too large");
		return 0;
	}
	buf_add(&s->in, data, len);
	stream_take_messages(s);
	return 0;
}

static int
on_frame_recv(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
	Conn	   *c = user;
	Stream	   *s;

	if (!c->greeted)
	{
		/* it spoke HTTP/2 (preface, then a frame): idle clients may stay */
		c->greeted = true;
		event_free(c->hello);
		c->hello = NULL;
	}
	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	s = stream_find(user, frame->hd.stream_id);
	if (s == NULL)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
		handlers->begin(s);
	if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && !s->in_ended)
	{
		s->in_ended = true;
		if (!s->finished && !s->closed)
		{
			if (s->in.len > 0)
				stream_finish(s, 13, "truncated request message");
			else
				handlers->end_of_input(s);
		}
	}
	return 0;
}

/*
 * A response ended (trailers, END_STREAM) before its request did: the rest
 * of the request is not wanted, so the stream is reset with NO_ERROR, as
 * RFC 9113 8.1 allows, rather than stay open for a client that may never
 * end it
 */
static int
on_frame_send(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
	Stream	   *s;

	if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	s = stream_find(user, frame->hd.stream_id);
	if (s != NULL && !s->in_ended)
		nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
	return 0;
}

static int
on_stream_close(nghttp2_session *h2, int32_t id, uint32_t error_code, void *user)
{
	Conn	   *c = user;
	Stream	   *s = stream_find(c, id);
	Stream	  **p;

	if (s == NULL)
		return 0;
	s->closed = true;
	nghttp2_session_set_stream_user_data(h2, id, NULL);
	for (p = &c->streams; *p; p = &(*p)->next)
		if (*p == s)
		{
			*p = s->next;
			break;
		}
	handlers->gone(s);
	/* the gone handler detached any pending work from it */
	stream_delete(s);
	return 0;
}

static void
conn_free(Conn *c)
{
	Stream	   *s,
			   *next;

	for (s = c->streams; s; s = next)
	{
		next = s->next;
		s->closed = true;
		handlers->gone(s);
		stream_delete(s);
	}
	c->streams = NULL;
	nghttp2_session_del(c->h2);
	bufferevent_free(c->bev);
	if (c->hello)
		event_free(c->hello);
	n_conns--;
	if (rmq_verbose)
		logmsg("%s: connection closed", c->peer);
	free(c);
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	Conn	   *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t		len = evbuffer_get_length(in);
	unsigned char *data;
	ssize_t		n;

	if (c->dead)
	{
		evbuffer_drain(in, len);
		return;
	}
	data = evbuffer_pullup(in, -1);
	c->flushing = true;			/* callbacks may send: one flush after */
	n = nghttp2_session_mem_recv(c->h2, data, len);
	c->flushing = false;
	if (n < 0)
	{
		if (rmq_verbose)
			logmsg("%s: bad HTTP/2 input: %s", c->peer, nghttp2_strerror((int) n));
		nghttp2_session_terminate_session(c->h2, NGHTTP2_PROTOCOL_ERROR);
		evbuffer_drain(in, len);
		conn_flush(c);
		return;
	}
	evbuffer_drain(in, n);
	conn_flush(c);
}

/* the output drained to OUTPUT_HIGH / 2 (the write low watermark) */
static void
on_write(struct bufferevent *bev, void *arg)
{
	Conn	   *c = arg;

	if (c->dead)
		return;
	conn_flush(c);
	if (c->dead)
		return;
	if (c->throttled && evbuffer_get_length(bufferevent_get_output(bev)) < OUTPUT_HIGH)
	{
		c->throttled = false;
		bufferevent_enable(bev, EV_READ);
	}
	if (!nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2) &&
		evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_schedule_free(c);
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	Conn	   *c = arg;
	char		msg[512];

	if ((what & BEV_EVENT_CONNECTED) && c->tls && rmq_verbose)
	{
		/* the TLS handshake is done (ALPN chose h2: tls.c) */
		tls_describe(bev, msg, sizeof(msg));
		logmsg("%s: TLS (%s)", c->peer, msg);
	}
	if ((what & BEV_EVENT_ERROR) && c->tls && rmq_verbose)
		logmsg("%s: TLS %s: %s", c->peer, c->greeted ? "error" : "handshake failed",
			   tls_error(bev, msg, sizeof(msg)));
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		conn_schedule_free(c);
}

/* HANDSHAKE_TIMEOUT passed and the client has not spoken HTTP/2 */
static void
on_hello_timeout(evutil_socket_t fd, short what, void *arg)
{
	Conn	   *c = arg;

	if (rmq_verbose)
		logmsg("%s: no %sHTTP/2 preface in %d s: closing", c->peer,
			   c->tls ? "TLS handshake and " : "", HANDSHAKE_TIMEOUT);
	conn_schedule_free(c);
}

/* A new client connection on socket fd (TLS when tls.c is on). */
void
h2_accept(evutil_socket_t fd, const char *peer)
{
	Conn	   *c = calloc(1, sizeof(Conn));
	nghttp2_session_callbacks *cbs;
	nghttp2_settings_entry iv[2] = {
		{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000},
		{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
	};
	struct timeval tv = {HANDSHAKE_TIMEOUT, 0};

	if (c == NULL)
	{
		logmsg("%s: out of memory: connection closed", peer);
		evutil_closesocket(fd);
		return;
	}
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->tls = tls_enabled();
	if (c->tls)
		c->bev = tls_bufferevent(fd, c->peer);
	else
		c->bev = bufferevent_socket_new(rmq_base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->hello = evtimer_new(rmq_base, on_hello_timeout, c);
	if (c->bev == NULL || c->hello == NULL)
	{
		logmsg("%s: out of memory: connection closed", peer);
		if (c->bev)
			bufferevent_free(c->bev);
		else
			evutil_closesocket(fd);	/* (EBADF if libevent closed it) */
		if (c->hello)
			event_free(c->hello);
		free(c);
		return;
	}
	n_conns++;
	nghttp2_session_callbacks_new(&cbs);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
	nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
	nghttp2_session_server_new(&c->h2, cbs, c);
	nghttp2_session_callbacks_del(cbs);
	nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 2);
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, OUTPUT_HIGH / 2, 0);
	/* a client that does not speak HTTP/2 in time is dropped */
	evtimer_add(c->hello, &tv);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	if (rmq_verbose)
		logmsg("%s: connection", c->peer);
	conn_flush(c);
}
