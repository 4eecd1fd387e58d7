/*
 * rmq_floor.c: the least a gateway does for one RocketMQ SendMessage, for
 * bench/rmq_send_cost.sh (issue 39: "the gateway adds at most 20 % to the
 * SQL path's cost for a send").
 *
 * With the libraries mq-rocketmq uses (libevent's loop, libnghttp2,
 * protobuf-c, libpq) and nothing else: one HTTP/2 connection at a time,
 * read() and write() on its socket straight into and out of nghttp2; a
 * request's DATA is collected until END_STREAM, unpacked as a
 * SendMessageRequest (protobuf-c, into a static buffer reused by every
 * request: no malloc or free of its parts, nothing to walk to free it,
 * which is as little as unpacking can cost), and its first
 * message's topic and body go with a fixed headers text to the gateway's
 * own prepared statement (PQsendQueryPrepared, the result read with
 * PQconsumeInput / PQgetResult on the loop); then a fixed, packed once
 * SendMessageResponse (one OK entry) is the response's one DATA frame, and
 * trailers with grpc-status 0.  No routing of methods, no checks, no
 * errors answered, no batching, no pooling: it serves h2load -c 1 -m 1 and
 * nothing else.  Not a program to run anywhere but under that bench.
 *
 *   rmq_floor PORT CONNINFO ROLE
 *
 * Built by rmq_send_cost.sh with rocketmq/rocketmq.proto's protoc-c output:
 *   cc -O2 rmq_floor.c rocketmq.pb-c.c -lpq -levent -lnghttp2 -lprotobuf-c
 */
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <libpq-fe.h>
#include <nghttp2/nghttp2.h>

#include "rocketmq.pb-c.h"

#define SEND_SQL "SELECT mq.message_offset(mq.send($1, $2::bytea," \
	" headers => $3::jsonb, deliver_at => to_timestamp($4::bigint / 1000.0)," \
	" key => $5, tag => $6, message_group => $7))"
/* what mq-rocketmq makes of the bench's message (rocketmq_bench.js body) */
#define HEADERS "{\"x-rocketmq\":{\"id\":\"01B0A2C3D4E5F60000000000000000\"," \
	"\"type\":\"NORMAL\",\"keys\":[],\"born\":1765000000000,\"born_host\":\"bench\"}}"

static struct event_base *base;
static PGconn *pg;
static struct event *pg_ev;
static nghttp2_session *h2;
static int	client = -1;
static struct event *client_ev;

static uint8_t in[1 << 16];		/* the request's DATA */
static size_t in_len;
static int32_t stream_id;		/* the stream waiting for its statement */
static Apache__Rocketmq__V2__SendMessageRequest *req;

/* what a request unpacks into: a bump allocator over one static buffer */
static _Alignas(16) uint8_t arena[1 << 17];
static size_t arena_used;

static void *
arena_alloc(void *data, size_t n)
{
	void	   *p;

	n = (n + 15) & ~(size_t) 15;
	if (n > sizeof(arena) - arena_used)
		return NULL;
	p = arena + arena_used;
	arena_used += n;
	return p;
}

static void
arena_free(void *data, void *p)
{
}

static ProtobufCAllocator arena_allocator = {arena_alloc, arena_free, NULL};

static uint8_t out[256];		/* the response: gRPC-framed, packed once */
static size_t out_len;
static size_t out_off;

static void
fail(const char *what)
{
	fprintf(stderr, "rmq_floor: %s: %s\n", what, pg ? PQerrorMessage(pg) : "");
	exit(1);
}

static void
flush_h2(void)
{
	const uint8_t *data;
	ssize_t		n;

	while ((n = nghttp2_session_mem_send(h2, &data)) > 0)
		if (write(client, data, n) != n)
			fail("write");
}

static ssize_t
data_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
		  uint32_t *flags, nghttp2_data_source *source, void *user)
{
	static const nghttp2_nv tr[1] = {
		{(uint8_t *) "grpc-status", (uint8_t *) "0", 11, 1, NGHTTP2_NV_FLAG_NONE}
	};
	size_t		n = out_len - out_off;

	if (n > length)
		n = length;
	memcpy(buf, out + out_off, n);
	out_off += n;
	if (out_off == out_len)
	{
		*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		nghttp2_submit_trailer(s, id, tr, 1);
	}
	return n;
}

static int
on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
			  size_t len, void *user)
{
	if (in_len + len > sizeof(in))
		fail("request too large");
	memcpy(in + in_len, data, len);
	in_len += len;
	return 0;
}

static int
on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *user)
{
	Apache__Rocketmq__V2__Message *m;
	const char *values[7];
	int			lengths[7] = {0};
	int			formats[7] = {0};

	if (frame->hd.type != NGHTTP2_DATA || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	if (in_len < 5)
		fail("no request message");
	arena_used = 0;
	req = apache__rocketmq__v2__send_message_request__unpack(&arena_allocator, in_len - 5, in + 5);
	in_len = 0;
	if (req == NULL || req->n_messages < 1)
		fail("bad request message");
	m = req->messages[0];
	stream_id = frame->hd.stream_id;
	values[0] = m->topic->name;
	values[1] = (const char *) m->body.data;
	lengths[1] = (int) m->body.len;
	formats[1] = 1;
	values[2] = HEADERS;
	values[3] = values[4] = values[5] = values[6] = NULL;
	if (!PQsendQueryPrepared(pg, "send", 7, values, lengths, formats, 0) ||
		PQflush(pg) != 0)
		fail("PQsendQueryPrepared");
	return 0;
}

static void
on_pg(evutil_socket_t fd, short what, void *arg)
{
	static const nghttp2_nv hdrs[2] = {
		{(uint8_t *) ":status", (uint8_t *) "200", 7, 3, NGHTTP2_NV_FLAG_NONE},
		{(uint8_t *) "content-type", (uint8_t *) "application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE},
	};
	nghttp2_data_provider prd;
	PGresult   *res;

	if (!PQconsumeInput(pg))
		fail("PQconsumeInput");
	while (!PQisBusy(pg))
	{
		if ((res = PQgetResult(pg)) == NULL)
		{
			/* the statement is done: answer (req's arena is reused) */
			req = NULL;
			out_off = 0;
			prd.source.ptr = NULL;
			prd.read_callback = data_read;
			nghttp2_submit_response(h2, stream_id, hdrs, 2, &prd);
			flush_h2();
			return;
		}
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			fail(PQresultErrorMessage(res));
		PQclear(res);
	}
}

static void
client_close(void)
{
	event_free(client_ev);
	nghttp2_session_del(h2);
	close(client);
	client = -1;
	in_len = 0;
}

static void
on_client(evutil_socket_t fd, short what, void *arg)
{
	uint8_t		buf[16384];
	ssize_t		n = read(fd, buf, sizeof(buf));

	if (n <= 0 || nghttp2_session_mem_recv(h2, buf, n) != n)
	{
		/* the client went: ready for the next one */
		client_close();
		return;
	}
	flush_h2();
}

static void
on_accept(evutil_socket_t fd, short what, void *arg)
{
	nghttp2_session_callbacks *cbs;
	nghttp2_settings_entry iv[2] = {
		{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000},
		{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
	};
	int			c = accept(fd, NULL, NULL);

	if (c < 0)
		return;
	/* one client at a time: the newest (the bench's port probe comes first) */
	if (client >= 0)
		client_close();
	client = c;
	nghttp2_session_callbacks_new(&cbs);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
	nghttp2_session_server_new(&h2, cbs, NULL);
	nghttp2_session_callbacks_del(cbs);
	nghttp2_submit_settings(h2, NGHTTP2_FLAG_NONE, iv, 2);
	client_ev = event_new(base, client, EV_READ | EV_PERSIST, on_client, NULL);
	event_add(client_ev, NULL);
	flush_h2();
}

static void
on_sigint(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(base);
}

int
main(int argc, char **argv)
{
	Apache__Rocketmq__V2__SendMessageResponse r = APACHE__ROCKETMQ__V2__SEND_MESSAGE_RESPONSE__INIT;
	Apache__Rocketmq__V2__SendResultEntry e = APACHE__ROCKETMQ__V2__SEND_RESULT_ENTRY__INIT;
	Apache__Rocketmq__V2__SendResultEntry *ep[1] = {&e};
	Apache__Rocketmq__V2__Status st = APACHE__ROCKETMQ__V2__STATUS__INIT;
	struct sockaddr_in sa = {0};
	int			one = 1;
	int			l;
	size_t		n;
	char		sql[200];
	PGresult   *res;

	if (argc != 4)
	{
		fprintf(stderr, "usage: rmq_floor PORT CONNINFO ROLE\n");
		return 2;
	}
	/* the response, packed once: what the gateway answers a send */
	st.code = APACHE__ROCKETMQ__V2__CODE__OK;
	st.message = "OK";
	e.status = &st;
	e.message_id = "01B0A2C3D4E5F60000000000000000";
	e.offset = 123456;
	r.status = &st;
	r.n_entries = 1;
	r.entries = ep;
	n = apache__rocketmq__v2__send_message_response__get_packed_size(&r);
	out[0] = 0;
	out[1] = n >> 24;
	out[2] = n >> 16;
	out[3] = n >> 8;
	out[4] = n;
	apache__rocketmq__v2__send_message_response__pack(&r, out + 5);
	out_len = n + 5;

	/* the session: as the gateway's (SET ROLE, the statement prepared) */
	pg = PQconnectdb(argv[2]);
	if (PQstatus(pg) != CONNECTION_OK)
		fail("connect");
	snprintf(sql, sizeof(sql), "SET ROLE %s", argv[3]);
	res = PQexec(pg, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		fail("SET ROLE");
	PQclear(res);
	res = PQprepare(pg, "send", SEND_SQL, 7, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		fail("prepare");
	PQclear(res);

	signal(SIGPIPE, SIG_IGN);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(atoi(argv[1]));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(l, (struct sockaddr *) &sa, sizeof(sa)) != 0 || listen(l, 16) != 0)
		fail("listen");

	base = event_base_new();
	event_add(event_new(base, l, EV_READ | EV_PERSIST, on_accept, NULL), NULL);
	pg_ev = event_new(base, PQsocket(pg), EV_READ | EV_PERSIST, on_pg, NULL);
	event_add(pg_ev, NULL);
	event_add(evsignal_new(base, SIGINT, on_sigint, NULL), NULL);
	event_base_dispatch(base);
	PQfinish(pg);
	return 0;
}
