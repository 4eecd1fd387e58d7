/*-------------------------------------------------------------------------
 *
 * rpc.c
 *	  MessagingService's RPCs onto queue_ext's SQL API.
 *
 * Each RPC runs one statement at a time on a pooled session of its
 * namespace's database as its role (pg.c), except that SendMessages and
 * AckMessages that arrive while others of their kind run are grouped into
 * one statement, one transaction (send_kick, ack_kick); errors travel in
 * the response's Status, as RocketMQ's do, never as a hang:
 *
 *	QueryRoute		the stream's partitions (mq.queues), each a message queue
 *					served by this gateway; TOPIC_NOT_FOUND otherwise
 *	SendMessage		mq.send (a batch's over unnest of arrays): keys (the
 *					first one is queue_ext's key), tag, message_group,
 *					deliver_at; the rest in the x-rocketmq header; the result
 *					carries the offset mq.message_offset reports;
 *					a TRANSACTION message is mq.publish_half of --producer-group
 *	EndTransaction	mq.end_half
 *	ReceiveMessage	mq.consume of the group: invisible duration = lease,
 *					long polling = wait, receipt handle = receipt; the
 *					subscription's filter on top of the group's
 *	AckMessage		mq.ack by receipts (a batch's together)
 *	ChangeInvisibleDuration  mq.extend_lease by receipt (0: mq.nack)
 *	QueryAssignment	message queue 0 of the stream (a receive takes from all)
 *	ForwardMessageToDeadLetterQueue  mq.nack without requeue: %DLQ%<group>
 *	Heartbeat, NotifyClientTermination  OK
 *	Telemetry		answers each Settings with the server's settings (a
 *					consumer's: its group's retry policy and FIFO flag, from
 *					mq.group_options); carries transaction check-backs
 *	a PushConsumer's deliveries (auto_renew) have their leases renewed
 *					until settled (mq.extend_lease)
 *	any other of MessagingService's RPCs: Status NOT_IMPLEMENTED; a method
 *	the service does not have: grpc-status UNIMPLEMENTED.
 *
 *-------------------------------------------------------------------------
 */
#include "rmq.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <json-c/json.h>
#include <openssl/evp.h>

enum
{
	RPC_NONE,
	RPC_QUERY_ROUTE,
	RPC_HEARTBEAT,
	RPC_SEND,
	RPC_RECEIVE,
	RPC_ACK,
	RPC_CHANGE_INVISIBLE,
	RPC_TELEMETRY,
	RPC_NOTIFY_TERMINATION,
	RPC_QUERY_ASSIGNMENT,
	RPC_FORWARD_DLQ,
	RPC_END_TRANSACTION,
	RPC_NOT_IMPLEMENTED,		/* the service's, not served (yet) */
	RPC_DONE					/* answered; anything more is ignored */
};

static const struct
{
	const char *method;
	int			rpc;
}			methods[] = {
	{"QueryRoute", RPC_QUERY_ROUTE},
	{"Heartbeat", RPC_HEARTBEAT},
	{"SendMessage", RPC_SEND},
	{"ReceiveMessage", RPC_RECEIVE},
	{"AckMessage", RPC_ACK},
	{"ChangeInvisibleDuration", RPC_CHANGE_INVISIBLE},
	{"Telemetry", RPC_TELEMETRY},
	{"NotifyClientTermination", RPC_NOTIFY_TERMINATION},
	{"QueryAssignment", RPC_QUERY_ASSIGNMENT},
	{"ForwardMessageToDeadLetterQueue", RPC_FORWARD_DLQ},
	{"PullMessage", RPC_NOT_IMPLEMENTED},
	{"UpdateOffset", RPC_NOT_IMPLEMENTED},
	{"GetOffset", RPC_NOT_IMPLEMENTED},
	{"QueryOffset", RPC_NOT_IMPLEMENTED},
	{"EndTransaction", RPC_END_TRANSACTION},
	{"RecallMessage", RPC_NOT_IMPLEMENTED},
	{"SyncLiteSubscription", RPC_NOT_IMPLEMENTED},
};

#define SERVICE_PREFIX "/apache.rocketmq.v2.MessagingService/"
#define MAX_PARAMS 10

/* An RPC waiting for PostgreSQL */
typedef struct Req
{
	Stream	   *s;				/* NULL once the stream is gone */
	int			rpc;
	char		db[128];
	char		role[128];
	ProtobufCMessage *msg;		/* the decoded request */
	const char *params[MAX_PARAMS];
	int			lengths[MAX_PARAMS];
	int			formats[MAX_PARAMS];
	char	   *owned[MAX_PARAMS];	/* params to free */
	size_t		idx;			/* the entry being worked on */
	/* SendMessage: its entries so far */
	PB(SendMessageResponse) send_res;
	PB(SendResultEntry) * send_entries;
	PB(Status) * send_status;
	/* AckMessage */
	PB(AckMessageResponse) ack_res;
	PB(AckMessageResultEntry) * ack_entries;
	PB(Status) * ack_status;
	int64_t		invisible_ms;
	bool		auto_renew;		/* ReceiveMessage: the gateway renews the leases */
	PB(Resource) * topic;		/* QueryRoute, QueryAssignment: in msg */
	/* SendMessage in a batch (send_enqueue): its messages' x-rocketmq headers */
	char	  **headers;
	struct Req *next_batch;
	/*
	 * A SendMessage of one message (the clients' send): its entry, status
	 * and headers are these, not allocated
	 */
	PB(SendResultEntry) send_entry1;
	PB(Status) send_status1;
	char	   *headers1[1];
} Req;

/* ---------------------------------------------------------------------
 * Answers
 * --------------------------------------------------------------------- */

/* A response that is a Status alone (every response's field 1), then OK */
static void
answer_status(Stream *s, int code, const char *message)
{
	PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;
	PB(StatusResponse) r = APACHE__ROCKETMQ__V2__STATUS_RESPONSE__INIT;

	if (s == NULL || s->closed)
		return;
	st.code = code;
	st.message = (char *) (message ? message : (code == CODE(OK) ? "OK" : ""));
	r.status = &st;
	if (code != CODE(OK) && message && rmq_verbose)
		logmsg("%s: grpc-status 0: %s", s->path, message);
	stream_answer(s, &r.base);
	s->rpc = RPC_DONE;
}

/* the RocketMQ code of a failed statement */
static int
code_of(const PGresult *res, int not_found)
{
	const char *st = res_state(res);
	const char *msg = res_message(res);

	if (res == NULL)
		return CODE(HA_NOT_AVAILABLE);
	if (strcmp(st, "42704") == 0)
		return strncmp(msg, "consumer group", 14) == 0 ? CODE(CONSUMER_GROUP_NOT_FOUND) :
			strncmp(msg, "producer group", 14) == 0 ? CODE(PRECONDITION_FAILED) : not_found;
	if (strcmp(st, "42501") == 0)
		return CODE(FORBIDDEN);
	if (strcmp(st, "54000") == 0)
		return CODE(MESSAGE_BODY_TOO_LARGE);
	if (strcmp(st, "53400") == 0)
		return CODE(TOO_MANY_REQUESTS);
	if (strcmp(st, "25006") == 0 || strcmp(st, "53000") == 0 || strncmp(st, "08", 2) == 0 ||
		strncmp(st, "57", 2) == 0)
		return CODE(HA_NOT_AVAILABLE);
	if (strcmp(st, "0A000") == 0)
		return CODE(UNSUPPORTED);
	if (strcmp(st, "42809") == 0)
		return CODE(ILLEGAL_TOPIC);
	if (strcmp(st, "42601") == 0 || strcmp(st, "54001") == 0)
		return CODE(ILLEGAL_FILTER_EXPRESSION);
	if (strncmp(st, "22", 2) == 0)
		return CODE(BAD_REQUEST);
	return CODE(INTERNAL_SERVER_ERROR);
}

/*
 * The status of a settle by receipt that failed: a receipt whose lease ran
 * out, that was settled, that is malformed or of another queue or group is
 * INVALID_RECEIPT_HANDLE
 * (40013); anything else as code_of says
 */
static int
receipt_code(const PGresult *res)
{
	const char *state = res_state(res);

	if (strcmp(state, "55000") == 0 || strcmp(state, "22P02") == 0 ||
		(strcmp(state, "22023") == 0 && strncmp(res_message(res), "receipt", 7) == 0))
		return CODE(INVALID_RECEIPT_HANDLE);
	return code_of(res, CODE(TOPIC_NOT_FOUND));
}

static bool
res_good(const PGresult *res)
{
	return res && (PQresultStatus(res) == PGRES_TUPLES_OK || PQresultStatus(res) == PGRES_COMMAND_OK);
}

/* ---------------------------------------------------------------------
 * Request messages
 *
 * A request message is unpacked into an arena of its own, which msg_free
 * frees at once: protobuf-c's default allocator made a malloc for each of
 * its strings and sub-messages, and protobuf_c_message_free_unpacked walked
 * the message's descriptors to free them one by one, together a tenth of
 * the gateway's own instructions a send (bench/README.md, RocketMQ).
 * protobuf-c allocates the message itself first (protobuf-c.c,
 * protobuf_c_message_unpack): the arena's first block is just before it.
 * What protobuf-c frees while it unpacks (a field given twice) stays in the
 * arena until msg_free: at most the request's size again.
 * --------------------------------------------------------------------- */

typedef struct ArenaBlock
{
	struct ArenaBlock *next;
	size_t		used;
	size_t		size;
} ArenaBlock;

#define ARENA_ALIGN 16
#define ARENA_ROUND(n) (((n) + ARENA_ALIGN - 1) & ~(size_t) (ARENA_ALIGN - 1))
#define ARENA_HDR ARENA_ROUND(sizeof(ArenaBlock))

typedef struct Arena
{
	ArenaBlock *first;
	ArenaBlock *cur;
	size_t		block;			/* the size of a new block */
} Arena;

static void *
arena_alloc(void *data, size_t n)
{
	Arena	   *a = data;
	ArenaBlock *b = a->cur;
	char	   *p;

	n = ARENA_ROUND(n > 0 ? n : 1);
	if (b == NULL || b->size - b->used < n)
	{
		size_t		size = n > a->block ? n : a->block;
		ArenaBlock *nb = malloc(ARENA_HDR + size);

		if (nb == NULL)
			return NULL;
		nb->next = NULL;
		nb->used = 0;
		nb->size = size;
		if (b)
			b->next = nb;
		else
			a->first = nb;
		a->cur = b = nb;
	}
	p = (char *) b + ARENA_HDR + b->used;
	b->used += n;
	return p;
}

static void
arena_free(void *data, void *p)
{
	/* all of it goes at once, in msg_free */
}

static void
arena_free_blocks(ArenaBlock *b)
{
	while (b)
	{
		ArenaBlock *next = b->next;

		free(b);
		b = next;
	}
}

/* The request message of type d in data, or NULL: it is malformed. */
static ProtobufCMessage *
msg_unpack(const ProtobufCMessageDescriptor *d, size_t len, const uint8_t *data)
{
	Arena		a = {NULL, NULL, 1024 + len};
	ProtobufCAllocator alloc = {arena_alloc, arena_free, &a};
	ProtobufCMessage *m = protobuf_c_message_unpack(d, &alloc, len, data);

	if (m == NULL)
	{
		arena_free_blocks(a.first);
		return NULL;
	}
	if ((char *) m != (char *) a.first + ARENA_HDR)
		die("protobuf-c did not allocate the message first: msg_free cannot free it");
	return m;
}

/* Free a message msg_unpack made. */
static void
msg_free(ProtobufCMessage *m)
{
	if (m)
		arena_free_blocks((ArenaBlock *) ((char *) m - ARENA_HDR));
}

/* ---------------------------------------------------------------------
 * Requests
 * --------------------------------------------------------------------- */

static Req *
req_new(Stream *s, int rpc, const char *ns, ProtobufCMessage *msg)
{
	Req		   *r = calloc(1, sizeof(Req));

	r->s = s;
	r->rpc = rpc;
	r->msg = msg;
	/* the client's namespace header, else the resource's */
	str_copy(r->db, sizeof(r->db), s->namespace_[0] ? s->namespace_ : (ns ? ns : ""));
	str_copy(r->role, sizeof(r->role), s->role);
	s->req = r;
	return r;
}

static void
req_param(Req *r, int i, const char *value)
{
	free(r->owned[i]);
	r->owned[i] = value ? strdup(value) : NULL;
	r->params[i] = r->owned[i];
	r->lengths[i] = 0;
	r->formats[i] = 0;
}

/* a binary parameter (bytea) */
static void
req_param_bin(Req *r, int i, const void *data, size_t len)
{
	free(r->owned[i]);
	r->owned[i] = malloc(len ? len : 1);
	if (len)
		memcpy(r->owned[i], data, len);
	r->params[i] = r->owned[i];
	r->lengths[i] = (int) len;
	r->formats[i] = 1;
}

static void
req_free(Req *r)
{
	int			i;

	if (r->s)
		r->s->req = NULL;
	for (i = 0; i < MAX_PARAMS; i++)
		free(r->owned[i]);
	if (r->headers && r->msg)
		for (i = 0; i < (int) ((PB(SendMessageRequest) *) r->msg)->n_messages; i++)
			free(r->headers[i]);
	if (r->headers != r->headers1)
		free(r->headers);
	if (r->msg)
		msg_free(r->msg);
	if (r->send_entries != &r->send_entry1)
		free(r->send_entries);
	if (r->send_status != &r->send_status1)
		free(r->send_status);
	free(r->ack_entries);
	free(r->ack_status);
	free(r);
}

#define BUSY_TEXT "the gateway has --max-sessions PostgreSQL sessions busy"

/*
 * Run sql for r, its results as text (result_format 0) or binary (1,
 * pg_run); false: answered already (too many sessions)
 */
static bool
req_run_as(Req *r, const char *sql, int nparams, int result_format, pg_result_cb cb)
{
	if (pg_run(r->db, r->role, sql, nparams, r->params, r->lengths, r->formats,
			   result_format, cb, r))
		return true;
	answer_status(r->s, CODE(TOO_MANY_REQUESTS), BUSY_TEXT);
	req_free(r);
	return false;
}

/* Run sql for r, its results as text; false: answered already */
static bool
req_run(Req *r, const char *sql, int nparams, pg_result_cb cb)
{
	return req_run_as(r, sql, nparams, 0, cb);
}

/* The requests of a batch no session could run: each answered busy, freed */
static void
batch_refuse(Req *reqs)
{
	Req		   *r,
			   *nx;

	for (r = reqs; r; r = nx)
	{
		nx = r->next_batch;
		if (r->s)
			answer_status(r->s, CODE(TOO_MANY_REQUESTS), BUSY_TEXT);
		req_free(r);
	}
}

/* ---------------------------------------------------------------------
 * QueryRoute
 * --------------------------------------------------------------------- */

/*
 * The first n message queues of a topic, ids 0..n-1 (partitions), all
 * served by this gateway: the route is a function of the stream's
 * partitions (docs/rocketmq.md).  One allocation: route_queues_free.
 */
typedef struct RouteAlloc
{
	PB(Address) addr;
	PB(Address) *addrs[1];
	PB(Endpoints) ep;
	PB(Broker) broker;
	PB(Resource) topic;
	PB(MessageType) types[4];
	PB(MessageQueue) mqs[];
} RouteAlloc;

static PB(MessageQueue) *
route_queues(const PB(Resource) * topic, int n)
{
	RouteAlloc *ra = calloc(1, offsetof(RouteAlloc, mqs) + (n + 1) * sizeof(PB(MessageQueue)));
	int			i;

	PBFN(address__init) (&ra->addr);
	ra->addr.host = (char *) rmq_advertise_host;
	ra->addr.port = rmq_advertise_port;
	ra->addrs[0] = &ra->addr;
	PBFN(endpoints__init) (&ra->ep);
	ra->ep.scheme = strspn(rmq_advertise_host, "0123456789.") == strlen(rmq_advertise_host) ?
		APACHE__ROCKETMQ__V2__ADDRESS_SCHEME__IPv4 :
		strchr(rmq_advertise_host, ':') ? APACHE__ROCKETMQ__V2__ADDRESS_SCHEME__IPv6 :
		APACHE__ROCKETMQ__V2__ADDRESS_SCHEME__DOMAIN_NAME;
	ra->ep.n_addresses = 1;
	ra->ep.addresses = ra->addrs;
	PBFN(broker__init) (&ra->broker);
	ra->broker.name = "mq-rocketmq";
	ra->broker.id = 0;
	ra->broker.endpoints = &ra->ep;
	PBFN(resource__init) (&ra->topic);
	ra->topic.resource_namespace = topic->resource_namespace;
	ra->topic.name = topic->name;
	ra->types[0] = APACHE__ROCKETMQ__V2__MESSAGE_TYPE__NORMAL;
	ra->types[1] = APACHE__ROCKETMQ__V2__MESSAGE_TYPE__FIFO;
	ra->types[2] = APACHE__ROCKETMQ__V2__MESSAGE_TYPE__DELAY;
	ra->types[3] = APACHE__ROCKETMQ__V2__MESSAGE_TYPE__TRANSACTION;
	for (i = 0; i < n; i++)
	{
		PBFN(message_queue__init) (&ra->mqs[i]);
		ra->mqs[i].topic = &ra->topic;
		ra->mqs[i].id = i;
		ra->mqs[i].permission = APACHE__ROCKETMQ__V2__PERMISSION__READ_WRITE;
		ra->mqs[i].broker = &ra->broker;
		ra->mqs[i].n_accept_message_types = 4;
		ra->mqs[i].accept_message_types = ra->types;
	}
	return ra->mqs;
}

static void
route_queues_free(PB(MessageQueue) * mqs)
{
	free((char *) mqs - offsetof(RouteAlloc, mqs));
}

static void
query_route_done(void *arg, PGresult *res)
{
	Req		   *r = arg;
	PB(Resource) * topic = r->topic;
	Stream	   *s = r->s;

	if (s == NULL)
	{
		req_free(r);
		return;
	}
	if (!res_good(res))
		answer_status(s, code_of(res, CODE(TOPIC_NOT_FOUND)), res_message(res));
	else if (PQntuples(res) == 0 || PQgetisnull(res, 0, 0))
	{
		char		msg[400];

		snprintf(msg, sizeof(msg), "topic \"%s\" does not exist (a topic is a stream: mq.queue_declare(..., type => 'stream'))",
				 topic->name);
		answer_status(s, CODE(TOPIC_NOT_FOUND), msg);
	}
	else if (r->rpc == RPC_QUERY_ASSIGNMENT)
	{
		/*
		 * One assignment, message queue 0: a ReceiveMessage takes from every
		 * partition, so one long poll per client is enough
		 */
		PB(QueryAssignmentResponse) out = APACHE__ROCKETMQ__V2__QUERY_ASSIGNMENT_RESPONSE__INIT;
		PB(Assignment) a = APACHE__ROCKETMQ__V2__ASSIGNMENT__INIT;
		PB(Assignment) * ap[1] = {&a};
		PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;
		PB(MessageQueue) *mq = route_queues(topic, 1);

		st.code = CODE(OK);
		st.message = "OK";
		a.message_queue = mq;
		out.status = &st;
		out.n_assignments = 1;
		out.assignments = ap;
		stream_send_message(s, &out.base);
		stream_finish(s, 0, NULL);
		s->rpc = RPC_DONE;
		route_queues_free(mq);
	}
	else
	{
		int			n = atoi(PQgetvalue(res, 0, 0));
		int			i;
		PB(QueryRouteResponse) out = APACHE__ROCKETMQ__V2__QUERY_ROUTE_RESPONSE__INIT;
		PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;
		PB(MessageQueue) *mqs = route_queues(topic, n);
		PB(MessageQueue) **mqp = calloc(n + 1, sizeof(void *));

		st.code = CODE(OK);
		st.message = "OK";
		for (i = 0; i < n; i++)
			mqp[i] = &mqs[i];
		out.status = &st;
		out.n_message_queues = n;
		out.message_queues = mqp;
		stream_send_message(s, &out.base);
		stream_finish(s, 0, NULL);
		s->rpc = RPC_DONE;
		route_queues_free(mqs);
		free(mqp);
	}
	req_free(r);
}

/*
 * A request's topic and group are names RocketMQ allows (check.c), or the
 * request is answered with why not and freed
 */
static bool
names_ok(Stream *s, const PB(Resource) * topic, const PB(Resource) * group, ProtobufCMessage *m)
{
	const char *why;
	int			code;

	if ((code = rmq_check_topic(topic->name, &why)) == 0 &&
		(code = rmq_check_group(group->name, &why)) == 0)
		return true;
	answer_status(s, code, why);
	msg_free(m);
	return false;
}

static void
query_route(Stream *s, PB(Resource) * topic, ProtobufCMessage *m, int rpc)
{
	Req		   *r;
	const char *why;

	if (rmq_check_topic(topic ? topic->name : NULL, &why) != 0)
	{
		answer_status(s, CODE(ILLEGAL_TOPIC), why);
		msg_free(m);
		return;
	}
	r = req_new(s, rpc, topic->resource_namespace, m);
	r->topic = topic;
	req_param(r, 0, topic->name);
	req_run(r, "SELECT partitions FROM mq._queue_stats($1::text) "
			"WHERE queue = $1 AND type = 'stream'", 1,
			query_route_done);
}

/* ---------------------------------------------------------------------
 * SendMessage
 * --------------------------------------------------------------------- */

static const char *
type_name(int t)
{
	switch (t)
	{
		case APACHE__ROCKETMQ__V2__MESSAGE_TYPE__FIFO:
			return "FIFO";
		case APACHE__ROCKETMQ__V2__MESSAGE_TYPE__DELAY:
			return "DELAY";
		case APACHE__ROCKETMQ__V2__MESSAGE_TYPE__TRANSACTION:
			return "TRANSACTION";
		default:
			return "NORMAL";
	}
}

static int
type_of(const char *name)
{
	if (name && strcmp(name, "FIFO") == 0)
		return APACHE__ROCKETMQ__V2__MESSAGE_TYPE__FIFO;
	if (name && strcmp(name, "DELAY") == 0)
		return APACHE__ROCKETMQ__V2__MESSAGE_TYPE__DELAY;
	if (name && strcmp(name, "TRANSACTION") == 0)
		return APACHE__ROCKETMQ__V2__MESSAGE_TYPE__TRANSACTION;
	return APACHE__ROCKETMQ__V2__MESSAGE_TYPE__NORMAL;
}

static int64_t
ts_ms(const PB(Timestamp) * t)
{
	return t ? t->seconds * 1000 + t->nanos / 1000000 : 0;
}

/* the longest JSON string s can become: quoted, each byte \u00XX */
static size_t
json_str_max(const char *s)
{
	return 2 + 6 * strlen(s);
}

/*
 * s as a JSON string at p (which has json_str_max(s) bytes): quoted, '"',
 * '\\' and control characters escaped; returns the end
 */
static char *
json_put_str(char *p, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	*p++ = '"';
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c >= 0x20 && c != '"' && c != '\\')
		{
			*p++ = c;
			continue;
		}
		*p++ = '\\';
		if (c == '"' || c == '\\')
			*p++ = c;
		else
		{
			memcpy(p, "u00", 3);
			p[3] = hex[c >> 4];
			p[4] = hex[c & 15];
			p += 5;
		}
	}
	*p++ = '"';
	return p;
}

/* text, which needs no escaping, at p; returns the end */
static char *
put_text(char *p, const char *text, size_t len)
{
	memcpy(p, text, len);
	return p + len;
}

#define PUT(p, lit) put_text(p, lit, sizeof(lit) - 1)

/* v in decimal at p (which has 21 bytes); returns the end */
static char *
put_int64(char *p, int64_t v)
{
	char		digits[20];
	int			n = 0;
	uint64_t	u = v < 0 ? -(uint64_t) v : (uint64_t) v;

	do
	{
		digits[n++] = '0' + u % 10;
		u /= 10;
	} while (u > 0);
	if (v < 0)
		*p++ = '-';
	while (n > 0)
		*p++ = digits[--n];
	return p;
}

/*
 * The headers of message m as JSON text (malloc'd): its user properties and
 * what has no column of its own, x-rocketmq (docs/rocketmq.md; check.c has
 * refused a user property of that name).  Written out directly into one
 * allocation of the most it can take: json-c objects for it were a fifth of
 * the gateway's own instructions a send, and a growing buffer written piece
 * by piece an eighth (bench/README.md, RocketMQ).  A key given twice keeps
 * its last value in jsonb, as json-c kept it.
 */
static char *
send_headers(const PB(Message) * m)
{
	PB(SystemProperties) * sp = m->system_properties;
	const char *type = type_name(sp->message_type);
	size_t		max = 128;		/* the keys, punctuation and numbers below */
	size_t		i;
	char	   *text;
	char	   *p;

	for (i = 0; i < m->n_user_properties; i++)
		max += json_str_max(m->user_properties[i]->key) +
			json_str_max(m->user_properties[i]->value) + 2;
	max += json_str_max(sp->message_id) + json_str_max(type) + json_str_max(sp->born_host);
	for (i = 0; i < sp->n_keys; i++)
		max += json_str_max(sp->keys[i]) + 1;
	if ((p = text = malloc(max)) == NULL)
	{
		logmsg("out of memory");
		abort();
	}
	*p++ = '{';
	for (i = 0; i < m->n_user_properties; i++)
	{
		p = json_put_str(p, m->user_properties[i]->key);
		*p++ = ':';
		p = json_put_str(p, m->user_properties[i]->value);
		*p++ = ',';
	}
	/* what has no column of its own: x-rocketmq (docs/rocketmq.md) */
	p = PUT(p, "\"" RMQ_HEADER "\":{\"id\":");
	p = json_put_str(p, sp->message_id);
	p = PUT(p, ",\"type\":");
	p = json_put_str(p, type);
	p = PUT(p, ",\"keys\":[");
	for (i = 0; i < sp->n_keys; i++)
	{
		if (i > 0)
			*p++ = ',';
		p = json_put_str(p, sp->keys[i]);
	}
	*p++ = ']';
	if (sp->born_timestamp)
	{
		p = PUT(p, ",\"born\":");
		p = put_int64(p, ts_ms(sp->born_timestamp));
	}
	if (sp->born_host[0])
	{
		p = PUT(p, ",\"born_host\":");
		p = json_put_str(p, sp->born_host);
	}
	if (sp->delivery_timestamp)
	{
		p = PUT(p, ",\"deliver_at\":");
		p = put_int64(p, ts_ms(sp->delivery_timestamp));
	}
	p = PUT(p, "}}");
	*p = '\0';
	return text;
}

static void send_next(Req *r);

/* a send entry's status message when it is "OK": not copied, not freed */
static char ok_text[] = "OK";

/*
 * The entry of the request's next message.  Its message id is the
 * request's own (which outlives the answer) or "": not copied.
 */
static void
send_entry(Req *r, int code, const char *message, const char *msg_id)
{
	PB(SendResultEntry) * e = &r->send_entries[r->idx];
	PB(Status) * st = &r->send_status[r->idx];

	st->code = code;
	st->message = message == NULL || strcmp(message, ok_text) == 0 ? ok_text : strdup(message);
	e->status = st;
	e->message_id = (char *) (msg_id ? msg_id : "");
	r->idx++;
}

static void
send_done(void *arg, PGresult *res)
{
	Req		   *r = arg;
	PB(SendMessageRequest) * q = (PB(SendMessageRequest) *) r->msg;
	PB(Message) * m = q->messages[r->idx];

	if (res_good(res))
	{
		send_entry(r, CODE(OK), "OK", m->system_properties->message_id);
		/* the queue offset the append gave it (no row: a delay message) */
		if (m->system_properties->message_type != APACHE__ROCKETMQ__V2__MESSAGE_TYPE__TRANSACTION &&
			PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
			r->send_entries[r->idx - 1].offset = atoll(PQgetvalue(res, 0, 0));
		/* a half message: its id is the transaction id EndTransaction names */
		if (m->system_properties->message_type == APACHE__ROCKETMQ__V2__MESSAGE_TYPE__TRANSACTION &&
			PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
			r->send_entries[r->idx - 1].transaction_id = strdup(PQgetvalue(res, 0, 0));
	}
	else
		send_entry(r, code_of(res, CODE(TOPIC_NOT_FOUND)), res_message(res),
				   m->system_properties->message_id);
	send_next(r);
}

/* Publish the next message of the request, or answer when all are done */
static void
send_next(Req *r)
{
	PB(SendMessageRequest) * q = (PB(SendMessageRequest) *) r->msg;
	Stream	   *s = r->s;

	while (s && r->idx < q->n_messages)
	{
		PB(Message) * m = q->messages[r->idx];
		PB(SystemProperties) * sp = m->system_properties;
		char	   *headers;
		char		num[32];

		if (m->topic == NULL || m->topic->name[0] == '\0' || sp == NULL)
		{
			send_entry(r, CODE(BAD_REQUEST), "a message needs a topic and system properties", NULL);
			continue;
		}
		if (m->body.len > (size_t) rmq_max_body)
		{
			send_entry(r, CODE(MESSAGE_BODY_TOO_LARGE), "message body too large (--max-body-size)", sp->message_id);
			continue;
		}
		if (sp->body_encoding == APACHE__ROCKETMQ__V2__ENCODING__GZIP)
		{
			send_entry(r, CODE(UNSUPPORTED), "gzip-encoded bodies are not supported", sp->message_id);
			continue;
		}
		headers = send_headers(m);
		req_param(r, 0, m->topic->name);
		req_param_bin(r, 1, m->body.data, m->body.len);
		req_param(r, 2, headers);
		free(headers);
		if (sp->delivery_timestamp)
		{
			snprintf(num, sizeof(num), "%lld", (long long) ts_ms(sp->delivery_timestamp));
			req_param(r, 3, num);
		}
		else
			req_param(r, 3, NULL);
		req_param(r, 4, sp->n_keys > 0 ? sp->keys[0] : NULL);
		req_param(r, 5, sp->tag[0] ? sp->tag : NULL);
		req_param(r, 6, sp->message_group[0] ? sp->message_group : NULL);
		if (m->topic->resource_namespace[0] && !s->namespace_[0])
			snprintf(r->db, sizeof(r->db), "%s", m->topic->resource_namespace);
		/*
		 * deliver_at in the past is due at once; queue_ext's deliver_at
		 * takes any finite time
		 */
		if (sp->message_type == APACHE__ROCKETMQ__V2__MESSAGE_TYPE__TRANSACTION)
		{
			/*
			 * a half message of --producer-group, routed by the default
			 * exchange to the stream at its commit (EndTransaction)
			 */
			req_param(r, 3, rmq_producer_group);
			req_run(r,
					"SELECT mq.publish_half('', $1, $2::bytea, $4, headers => $3::jsonb,"
					" key => $5, tag => $6, message_group => $7)",
					7, send_done);
		}
		else
			req_run(r,
					"SELECT mq.message_offset(mq.send($1, $2::bytea,"
					" headers => $3::jsonb, deliver_at => to_timestamp($4::bigint / 1000.0),"
					" key => $5, tag => $6, message_group => $7))",
					7, send_done);
		return;
	}
	if (s)
	{
		bool		all_ok = true;

		for (size_t i = 0; i < r->idx; i++)
			if (r->send_status[i].code != CODE(OK))
				all_ok = false;
		{
			PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;
			PB(SendResultEntry) * ep_one[1];
			PB(SendResultEntry) **ep = r->idx <= 1 ? ep_one : calloc(r->idx, sizeof(void *));

			for (size_t i = 0; i < r->idx; i++)
				ep[i] = &r->send_entries[i];
			/* the first entry's status, as RocketMQ's proxy answers */
			if (all_ok || r->idx == 0)
			{
				st.code = r->idx == 0 ? CODE(BAD_REQUEST) : CODE(OK);
				st.message = r->idx == 0 ? "no messages" : "OK";
			}
			else
				for (size_t i = 0; i < r->idx; i++)
					if (r->send_status[i].code != CODE(OK))
					{
						st = r->send_status[i];
						break;
					}
			r->send_res.status = &st;
			r->send_res.n_entries = r->idx;
			r->send_res.entries = ep;
			stream_answer(s, &r->send_res.base);
			s->rpc = RPC_DONE;
			if (ep != ep_one)
				free(ep);
		}
	}
	for (size_t i = 0; i < r->idx; i++)
	{
		if (r->send_status[i].message != ok_text)
			free(r->send_status[i].message);
		if (r->send_entries[i].transaction_id != protobuf_c_empty_string)
			free(r->send_entries[i].transaction_id);
	}
	req_free(r);
}

/*
 * Sends in batches.  Every SendMessage of normal, FIFO or delay messages
 * waits in the queue of its (database, role); at most SEND_IN_FLIGHT
 * statements of a queue run at once, and each takes what waits, up to
 * SEND_BATCH_MAX messages, into one statement, one transaction: a commit
 * (a WAL flush) for the batch instead of one per message, as mq-amqp does
 * with a channel's publishes.  An answer leaves only after its batch
 * committed.  A batch that fails stored nothing: each of its requests then
 * runs message by message (send_next), so that each message gets its own
 * status.  A request alone in its queue runs at once, so that a client
 * sending one message at a time waits for nothing more.  The messages of a
 * request keep their order; requests in flight together have none between
 * them (their statements run on two sessions), as before batches.
 */
#define SEND_BATCH_MAX 256
#define SEND_IN_FLIGHT 2

typedef struct SendQueue
{
	char		db[128];
	char		role[128];
	Req		   *head;			/* waiting, linked by next_batch */
	Req		   *tail;
	int			running;		/* statements running */
	struct SendQueue *next;
} SendQueue;

typedef struct SendBatch
{
	SendQueue  *q;
	Req		   *reqs;
	int			n;				/* messages */
	Buf			arrays[7];
	const char *values[7];
	int			lengths[7];
	int			formats[7];
	char		deliver_at[32];	/* a batch of one: its parameter */
} SendBatch;

static SendQueue *send_queues;
static SendQueue *spare_queue;	/* a queue that went, for the next one */
static SendBatch *spare_batch;	/* a batch that ended, for the next one */

/* r waits at the tail of a queue (head, tail, linked by next_batch) */
static void
wait_batch(Req **head, Req **tail, Req *r)
{
	if (*tail)
		(*tail)->next_batch = r;
	else
		*head = r;
	*tail = r;
}

/*
 * Take waiting requests from the head of a queue (head, tail, linked by
 * next_batch) into a batch while their items, items(r) each, fit in
 * SEND_BATCH_MAX (the first always fits); a request whose client went away
 * before its turn is freed on the way (nothing of it was done).  *reqs gets
 * the requests taken, linked by next_batch; returns their items.
 */
static int
take_batch(Req **head, Req **tail, int (*items) (Req *r), Req **reqs)
{
	Req		  **last = reqs;
	Req		   *r;
	int			n = 0;

	*reqs = NULL;
	while ((r = *head) != NULL)
	{
		int			k = items(r);

		if (n > 0 && n + k > SEND_BATCH_MAX)
			break;
		*head = r->next_batch;
		if (*head == NULL)
			*tail = NULL;
		r->next_batch = NULL;
		if (r->s == NULL)
		{
			req_free(r);
			continue;
		}
		*last = r;
		last = &r->next_batch;
		n += k;
	}
	return n;
}

static int
send_items(Req *r)
{
	return (int) ((PB(SendMessageRequest) *) r->msg)->n_messages;
}

static int
ack_items(Req *r)
{
	return (int) ((PB(AckMessageRequest) *) r->msg)->n_entries;
}

static void send_kick(SendQueue *q);

static void
buf_u32(Buf *b, uint32_t v)
{
	uint8_t		x[4] = {v >> 24, v >> 16, v >> 8, v};

	buf_add(b, x, 4);
}

/* the header of a binary one-dimensional array of n elements of type elem */
static void
array_start(Buf *b, uint32_t elem, int n)
{
	buf_u32(b, 1);				/* ndim */
	buf_u32(b, 1);				/* may have nulls */
	buf_u32(b, elem);
	buf_u32(b, n);
	buf_u32(b, 1);				/* lower bound */
}

/* one element (NULL: a null one) */
static void
array_add(Buf *b, const void *p, size_t len)
{
	if (p == NULL)
		buf_u32(b, (uint32_t) -1);
	else
	{
		buf_u32(b, (uint32_t) len);
		if (len)
			buf_add(b, p, len);
	}
}

static void
array_add_str(Buf *b, const char *s)
{
	array_add(b, s, s ? strlen(s) : 0);
}

/*
 * Can r's messages go into a batch?  All of them normal, FIFO or delay
 * messages that send_next would send, in one namespace; their headers are
 * made here (r->headers).  Otherwise send_next sends them one by one and
 * answers what it refuses.
 */
static bool
send_batchable(Req *r)
{
	PB(SendMessageRequest) * q = (PB(SendMessageRequest) *) r->msg;
	const char *ns = NULL;
	size_t		i;

	if (q->n_messages == 0 || q->n_messages > SEND_BATCH_MAX)
		return false;
	for (i = 0; i < q->n_messages; i++)
	{
		PB(Message) * m = q->messages[i];
		PB(SystemProperties) * sp = m->system_properties;

		if (m->topic == NULL || m->topic->name[0] == '\0' || sp == NULL ||
			m->body.len > (size_t) rmq_max_body ||
			sp->body_encoding == APACHE__ROCKETMQ__V2__ENCODING__GZIP ||
			sp->message_type == APACHE__ROCKETMQ__V2__MESSAGE_TYPE__TRANSACTION ||
			(ns && strcmp(ns, m->topic->resource_namespace) != 0))
			return false;
		ns = m->topic->resource_namespace;
	}
	r->headers = q->n_messages == 1 ? r->headers1 : calloc(q->n_messages, sizeof(char *));
	for (i = 0; i < q->n_messages; i++)
		r->headers[i] = send_headers(q->messages[i]);
	if (ns[0] && !r->s->namespace_[0])
		snprintf(r->db, sizeof(r->db), "%s", ns);
	return true;
}

static void
send_enqueue(Req *r)
{
	SendQueue  *q;

	for (q = send_queues; q; q = q->next)
		if (strcmp(q->db, r->db) == 0 && strcmp(q->role, r->role) == 0)
			break;
	if (q == NULL)
	{
		/* a queue goes when nothing waits or runs: one is kept for the next */
		if (spare_queue)
		{
			q = spare_queue;
			spare_queue = NULL;
			memset(q, 0, sizeof(SendQueue));
		}
		else
			q = calloc(1, sizeof(SendQueue));
		str_copy(q->db, sizeof(q->db), r->db);
		str_copy(q->role, sizeof(q->role), r->role);
		q->next = send_queues;
		send_queues = q;
	}
	wait_batch(&q->head, &q->tail, r);
	send_kick(q);
}

static void
send_batch_free(SendBatch *b)
{
	for (int i = 0; i < 7; i++)
		buf_free(&b->arrays[i]);
	/* one is kept for the next batch (a send one at a time makes one each) */
	if (spare_batch == NULL)
		spare_batch = b;
	else
		free(b);
}

static SendBatch *
send_batch_new(void)
{
	SendBatch  *b = spare_batch;

	if (b == NULL)
		return calloc(1, sizeof(SendBatch));
	spare_batch = NULL;
	memset(b, 0, sizeof(SendBatch));
	return b;
}

/* A batch's statement is done: answer its requests, run what waits */
static void
send_batch_done(void *arg, PGresult *res)
{
	SendBatch  *b = arg;
	SendQueue  *q = b->q;
	bool		ok = res_good(res);
	Req		   *r,
			   *nx;
	int			row = 0;

	q->running--;
	for (r = b->reqs; r; r = nx)
	{
		PB(SendMessageRequest) * m = (PB(SendMessageRequest) *) r->msg;

		nx = r->next_batch;
		r->next_batch = NULL;
		if (ok)
			while (r->idx < m->n_messages)
			{
				send_entry(r, CODE(OK), "OK", m->messages[r->idx]->system_properties->message_id);
				/* a row per message, in order: its offset (NULL: a delay message) */
				if (row < PQntuples(res) && !PQgetisnull(res, row, 0))
					r->send_entries[r->idx - 1].offset = atoll(PQgetvalue(res, row, 0));
				row++;
			}
		else if (res == NULL || b->n == 1)
		{
			/*
			 * the session was lost (whether it committed is not known), or
			 * the one message of the batch failed: as send_done answers
			 */
			while (r->idx < m->n_messages)
				send_entry(r, code_of(res, CODE(TOPIC_NOT_FOUND)), res_message(res),
						   m->messages[r->idx]->system_properties->message_id);
		}
		/* all answered; or, the batch rolled back, each message on its own */
		send_next(r);
	}
	send_batch_free(b);
	send_kick(q);
	if (q->head == NULL && q->running == 0)
	{
		/* nothing waits or runs: the queue goes */
		SendQueue **p;

		for (p = &send_queues; *p != q; p = &(*p)->next)
			;
		*p = q->next;
		if (spare_queue == NULL)
			spare_queue = q;
		else
			free(q);
	}
}

/* Start q's waiting sends as a batch, if a statement of q may start */
static void
send_kick(SendQueue *q)
{
	static const uint32_t elem[7] = {25, 17, 25, 25, 25, 25, 25};	/* text, bytea */

	while (q->head && q->running < SEND_IN_FLIGHT)
	{
		SendBatch  *b = send_batch_new();
		Req		   *r;
		int			i;
		const char *sql;

		b->q = q;
		b->n = take_batch(&q->head, &q->tail, send_items, &b->reqs);
		if (b->n == 0)
		{
			send_batch_free(b);
			continue;
		}
		if (b->n == 1)
		{
			/* one message: mq.send as send_next runs it, no arrays */
			PB(Message) * m = ((PB(SendMessageRequest) *) b->reqs->msg)->messages[0];
			PB(SystemProperties) * sp = m->system_properties;

			if (sp->delivery_timestamp)
				snprintf(b->deliver_at, sizeof(b->deliver_at), "%lld",
						 (long long) ts_ms(sp->delivery_timestamp));
			b->values[0] = m->topic->name;
			b->values[1] = m->body.data ? (const char *) m->body.data : "";
			b->lengths[1] = (int) m->body.len;
			b->formats[1] = 1;
			b->values[2] = b->reqs->headers[0];
			b->values[3] = sp->delivery_timestamp ? b->deliver_at : NULL;
			b->values[4] = sp->n_keys > 0 ? sp->keys[0] : NULL;
			b->values[5] = sp->tag[0] ? sp->tag : NULL;
			b->values[6] = sp->message_group[0] ? sp->message_group : NULL;
			sql = "SELECT mq.message_offset(mq.send($1, $2::bytea,"
				" headers => $3::jsonb, deliver_at => to_timestamp($4::bigint / 1000.0),"
				" key => $5, tag => $6, message_group => $7))";
		}
		else
		{
			for (i = 0; i < 7; i++)
				array_start(&b->arrays[i], elem[i], b->n);
			for (r = b->reqs; r; r = r->next_batch)
			{
				PB(SendMessageRequest) * sq = (PB(SendMessageRequest) *) r->msg;

				for (size_t j = 0; j < sq->n_messages; j++)
				{
					PB(Message) * m = sq->messages[j];
					PB(SystemProperties) * sp = m->system_properties;
					char		num[32];

					array_add_str(&b->arrays[0], m->topic->name);
					array_add(&b->arrays[1], m->body.data ? (void *) m->body.data : "", m->body.len);
					array_add_str(&b->arrays[2], r->headers[j]);
					snprintf(num, sizeof(num), "%lld", (long long) ts_ms(sp->delivery_timestamp));
					array_add_str(&b->arrays[3], sp->delivery_timestamp ? num : NULL);
					array_add_str(&b->arrays[4], sp->n_keys > 0 ? sp->keys[0] : NULL);
					array_add_str(&b->arrays[5], sp->tag[0] ? sp->tag : NULL);
					array_add_str(&b->arrays[6], sp->message_group[0] ? sp->message_group : NULL);
				}
			}
			for (i = 0; i < 7; i++)
			{
				b->values[i] = b->arrays[i].data;
				b->lengths[i] = (int) b->arrays[i].len;
				b->formats[i] = 1;
			}
			sql = "SELECT mq.message_offset(mq.send(u.t, u.b,"
				" headers => u.h::jsonb, deliver_at => to_timestamp(u.d::bigint / 1000.0),"
				" key => u.k, tag => u.g, message_group => u.mg))"
				" FROM unnest($1::text[], $2::bytea[], $3::text[], $4::text[], $5::text[],"
				" $6::text[], $7::text[]) AS u(t, b, h, d, k, g, mg)";
		}
		if (!pg_run(q->db, q->role, sql,
					7, b->values, b->lengths, b->formats, 0, send_batch_done, b))
		{
			batch_refuse(b->reqs);
			send_batch_free(b);
			continue;
		}
		q->running++;
	}
}

static void
send_message(Stream *s, PB(SendMessageRequest) * q)
{
	Req		   *r;
	size_t		i;
	const char *why;
	int			code;

	/*
	 * RocketMQ's rules for every message first (check.c): a request with
	 * one message that breaks them stores none, as a Proxy refuses it whole.
	 * A message without a topic or system properties is answered in its
	 * entry (send_next).
	 */
	for (i = 0; i < q->n_messages; i++)
	{
		PB(Message) * m = q->messages[i];
		PB(Message) * first = q->messages[0];

		if (m->topic == NULL || m->topic->name[0] == '\0' || m->system_properties == NULL)
			continue;
		if ((code = rmq_check_topic(m->topic->name, &why)) != 0 ||
			(code = rmq_check_message(m, first->topic ? first->topic->name : m->topic->name, &why)) != 0)
		{
			answer_status(s, code, why);
			msg_free(&q->base);
			return;
		}
	}
	r = req_new(s, RPC_SEND, NULL, &q->base);
	PBFN(send_message_response__init) (&r->send_res);
	if (q->n_messages <= 1)
	{
		r->send_entries = &r->send_entry1;
		r->send_status = &r->send_status1;
	}
	else
	{
		r->send_entries = calloc(q->n_messages + 1, sizeof(PB(SendResultEntry)));
		r->send_status = calloc(q->n_messages + 1, sizeof(PB(Status)));
	}
	for (i = 0; i < q->n_messages; i++)
	{
		PBFN(send_result_entry__init) (&r->send_entries[i]);
		PBFN(status__init) (&r->send_status[i]);
	}
	if (send_batchable(r))
		send_enqueue(r);
	else
		send_next(r);
}

/* ---------------------------------------------------------------------
 * ReceiveMessage
 * --------------------------------------------------------------------- */

static int64_t
dur_ms(const PB(Duration) * d)
{
	return d ? d->seconds * 1000 + d->nanos / 1000000 : 0;
}

static void
set_ts(PB(Timestamp) * t, int64_t ms)
{
	PBFN(timestamp__init) (t);
	t->seconds = ms / 1000;
	t->nanos = (int32_t) (ms % 1000) * 1000000;
}

static void
md5_hex(const uint8_t *data, size_t len, char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	unsigned int i;

	EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL);
	for (i = 0; i < mdlen; i++)
		sprintf(out + 2 * i, "%02X", md[i]);
	out[2 * mdlen] = '\0';
}

/* ---------------------------------------------------------------------
 * PushConsumer: the gateway renews the leases of its deliveries
 *
 * A PushConsumer's ReceiveMessage asks the server to keep its deliveries
 * invisible while the client works on them (auto_renew, no invisible
 * duration), as a Proxy does: each delivery gets --push-invisible-time as
 * its lease and is remembered here; a timer extends (mq.extend_lease) the
 * leases that end within a third of it, until the client settles the
 * delivery (AckMessage, ChangeInvisibleDuration,
 * ForwardMessageToDeadLetterQueue by its receipt), terminates
 * (NotifyClientTermination), or is not heard from for CLIENT_IDLE_MS, or
 * RENEW_MAX_MS have passed; then the lease runs its course.
 * --------------------------------------------------------------------- */

#define RENEW_BUCKETS 4096
#define RENEW_MAX 100000		/* deliveries remembered at most */
#define RENEW_MAX_MS ((int64_t) 3 * 3600 * 1000)	/* a Proxy's renewMaxTime */
#define CLIENT_IDLE_MS 120000	/* a Proxy's client idle time */

typedef struct RenewClient
{
	char		id[256];		/* x-mq-client-id */
	int64_t		seen_ms;		/* its last request */
	int			n;				/* its deliveries remembered */
	struct RenewClient *next;
} RenewClient;

typedef struct Renewal
{
	char	   *db;
	char	   *role;
	char	   *topic;
	char	   *group;
	char		receipt[64];
	RenewClient *client;		/* NULL once forgotten */
	int64_t		lease_ms;		/* the lease each renewal gives */
	int64_t		lease_end_ms;
	int64_t		since_ms;		/* delivered then */
	bool		busy;			/* in the renewal queue */
	char		lease_text[32]; /* the statement's parameters */
	const char *params[4];
	struct Renewal *next;		/* hash chain */
} Renewal;

static Renewal *renewals[RENEW_BUCKETS];
static int	nrenewals;
static RenewClient *renew_clients;
static struct event *renew_timer;
static Renewal **renew_queue;	/* due this tick, renewed one at a time */
static int	renew_nqueue;
static int	renew_iqueue;
static bool renew_running;		/* a renewal statement is out */

static int64_t
now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static unsigned
renew_hash(const char *receipt)
{
	unsigned	h = 2166136261u;

	for (; *receipt; receipt++)
		h = (h ^ (unsigned char) *receipt) * 16777619u;
	return h % RENEW_BUCKETS;
}

static void
renewal_free(Renewal *w)
{
	free(w->db);
	free(w->role);
	free(w->topic);
	free(w->group);
	free(w);
}

/* Stop renewing w (unlinked from the hash already) */
static void
renewal_drop(Renewal *w)
{
	RenewClient **c;

	if (w->client)
	{
		if (--w->client->n == 0)
			for (c = &renew_clients; *c; c = &(*c)->next)
				if (*c == w->client)
				{
					*c = w->client->next;
					free(w->client);
					break;
				}
		w->client = NULL;
	}
	nrenewals--;
	/* one in the queue is freed when the queue reaches it */
	if (!w->busy)
		renewal_free(w);
}

/* The client settled (or gave up) the delivery of receipt: no more renewal */
static void
renew_forget(const char *receipt)
{
	Renewal   **p;

	if (nrenewals == 0 || receipt == NULL)
		return;
	for (p = &renewals[renew_hash(receipt)]; *p; p = &(*p)->next)
		if (strcmp((*p)->receipt, receipt) == 0)
		{
			Renewal    *w = *p;

			*p = w->next;
			renewal_drop(w);
			return;
		}
}

/* Every delivery of a client (NULL: of idle clients, and older than RENEW_MAX_MS) */
static void
renew_forget_client(const char *client_id)
{
	int64_t		now = now_ms();

	if (nrenewals == 0)
		return;
	for (int b = 0; b < RENEW_BUCKETS; b++)
	{
		Renewal   **p = &renewals[b];

		while (*p)
		{
			Renewal    *w = *p;

			if (client_id ? strcmp(w->client->id, client_id) == 0 :
				(now - w->client->seen_ms > CLIENT_IDLE_MS || now - w->since_ms > RENEW_MAX_MS))
			{
				*p = w->next;
				renewal_drop(w);
			}
			else
				p = &w->next;
		}
	}
}

/* A request of client_id: it lives */
static void
renew_seen(const char *client_id)
{
	RenewClient *c;

	if (client_id[0] == '\0')
		return;
	for (c = renew_clients; c; c = c->next)
		if (strcmp(c->id, client_id) == 0)
		{
			c->seen_ms = now_ms();
			return;
		}
}

/* Renew the lease of a delivery to s's client, of lease_ms, from now on */
static void
renew_add(Stream *s, const Req *r, const char *topic, const char *group, const char *receipt,
		  int64_t lease_ms)
{
	Renewal    *w;
	RenewClient *c;
	unsigned	h;

	if (nrenewals >= RENEW_MAX || s->client_id[0] == '\0' || strlen(receipt) >= sizeof(w->receipt))
	{
		if (rmq_verbose)
			logmsg("not renewing a delivery to client \"%s\" (%d remembered)", s->client_id, nrenewals);
		return;
	}
	for (c = renew_clients; c; c = c->next)
		if (strcmp(c->id, s->client_id) == 0)
			break;
	if (c == NULL)
	{
		c = calloc(1, sizeof(RenewClient));
		snprintf(c->id, sizeof(c->id), "%s", s->client_id);
		c->next = renew_clients;
		renew_clients = c;
	}
	c->seen_ms = now_ms();
	c->n++;
	w = calloc(1, sizeof(Renewal));
	w->db = strdup(r->db);
	w->role = strdup(r->role);
	w->topic = strdup(topic);
	w->group = strdup(group);
	snprintf(w->receipt, sizeof(w->receipt), "%s", receipt);
	w->client = c;
	w->lease_ms = lease_ms;
	w->since_ms = c->seen_ms;
	w->lease_end_ms = c->seen_ms + lease_ms;
	h = renew_hash(receipt);
	w->next = renewals[h];
	renewals[h] = w;
	nrenewals++;
}

static void renew_next(void);

static void
renew_done(void *arg, PGresult *res)
{
	Renewal    *w = arg;

	w->busy = false;
	renew_running = false;
	if (w->client == NULL)
		renewal_free(w);		/* forgotten meanwhile */
	else if (res_good(res))
		w->lease_end_ms = now_ms() + w->lease_ms;
	else
	{
		/* settled elsewhere, lease ran out, or the server went: let it be */
		if (rmq_verbose)
			logmsg("renewing the lease of %s: %s", w->receipt, res_message(res));
		renew_forget(w->receipt);
	}
	renew_next();
}

/* Renew the next delivery of the queue, one statement at a time */
static void
renew_next(void)
{
	while (renew_iqueue < renew_nqueue)
	{
		Renewal    *w = renew_queue[renew_iqueue++];

		if (w->client == NULL)
		{
			w->busy = false;
			renewal_free(w);
			continue;
		}
		snprintf(w->lease_text, sizeof(w->lease_text), "%lld milliseconds", (long long) w->lease_ms);
		w->params[0] = w->topic;
		w->params[1] = w->lease_text;
		w->params[2] = w->group;
		w->params[3] = w->receipt;
		if (pg_run(w->db, w->role,
				   "SELECT mq.extend_lease($1, lease => $2::interval, group_name => $3, receipts => ARRAY[$4])",
				   4, w->params, NULL, NULL, 0, renew_done, w))
		{
			renew_running = true;
			return;
		}
		/* no session now (--max-sessions): the next tick tries again */
		w->busy = false;
	}
	renew_nqueue = renew_iqueue = 0;
}

/* Every tick: the leases that end soon are renewed */
static void
renew_tick(evutil_socket_t fd, short what, void *arg)
{
	int64_t		now = now_ms();
	int			n = 0;

	if (renew_running || renew_iqueue < renew_nqueue)
		return;					/* the last tick's are still going */
	renew_forget_client(NULL);
	if (nrenewals == 0)
		return;
	renew_queue = realloc(renew_queue, sizeof(Renewal *) * nrenewals);
	for (int b = 0; b < RENEW_BUCKETS; b++)
		for (Renewal *w = renewals[b]; w; w = w->next)
			if (!w->busy && w->lease_end_ms - now < w->lease_ms / 3 && n < nrenewals)
			{
				w->busy = true;
				renew_queue[n++] = w;
			}
	renew_nqueue = n;
	renew_iqueue = 0;
	renew_next();
}

enum
{
	C_ID, C_BODY, C_HEADERS, C_PUBLISHED, C_COUNT, C_PARTITION, C_OFFSET, C_KEY, C_TAG,
	C_GROUP, C_RECEIPT
};

/*
 * The C_ columns of mq.consume's rows, run with binary results: the body
 * comes as its bytes (not as hex text, twice its size, to decode: a receive
 * of 3 MB bodies; bench/README.md, RocketMQ), every other column as text,
 * whose binary form is its bytes
 */
#define RECEIVE_COLUMNS \
	"SELECT msg_id::text, body, headers::text," \
	" ((extract(epoch FROM published_at) * 1000)::bigint)::text, delivery_count::text," \
	" partition::text, \"offset\"::text, key, tag, message_group, receipt"

/*
 * One row of mq.consume (or mq.message, in the C_ column order) as a
 * Message of topic ns/topic_name, given to emit.  invisible_ms 0: none.
 * The result is binary (pg_run's result_format 1): C_BODY a bytea's bytes
 * (PQgetlength long), every other column text or NULL.  libpq ends a
 * binary value with a zero byte too, and a text has none in it: the text
 * columns are C strings as they are.
 */
static void
message_of_row(PGresult *res, int row, const char *ns, const char *topic_name,
			   int64_t invisible_ms, void (*emit) (PB(Message) * m, void *arg), void *arg)
{
	PB(Message) m = APACHE__ROCKETMQ__V2__MESSAGE__INIT;
	PB(SystemProperties) sp = APACHE__ROCKETMQ__V2__SYSTEM_PROPERTIES__INIT;
	PB(Resource) topic = APACHE__ROCKETMQ__V2__RESOURCE__INIT;
	PB(Digest) digest = APACHE__ROCKETMQ__V2__DIGEST__INIT;
	PB(Timestamp) born,
				store,
				deliver;
	PB(Duration) invisible = APACHE__ROCKETMQ__V2__DURATION__INIT;
	PB(Message__UserPropertiesEntry) *props = NULL;
	PB(Message__UserPropertiesEntry) **propp = NULL;
	char	  **keys = NULL;
	const uint8_t *body = (const uint8_t *) PQgetvalue(res, row, C_BODY);
	size_t		blen = (size_t) PQgetlength(res, row, C_BODY);
	char		md5[64];
	char		idbuf[32];
	char		store_host[300];
	json_object *headers = json_tokener_parse(PQgetvalue(res, row, C_HEADERS));
	json_object *rmq = NULL;
	json_object *v;
	int64_t		published = atoll(PQgetvalue(res, row, C_PUBLISHED));
	size_t		n = 0;

	if (headers && json_object_is_type(headers, json_type_object) &&
		json_object_object_get_ex(headers, RMQ_HEADER, &rmq) &&
		!json_object_is_type(rmq, json_type_object))
		rmq = NULL;
	/* user properties: the headers but x-rocketmq; non-strings as JSON */
	if (headers && json_object_is_type(headers, json_type_object))
	{
		size_t		cap = json_object_object_length(headers);

		props = calloc(cap + 1, sizeof(*props));
		propp = calloc(cap + 1, sizeof(void *));
		{
		json_object_object_foreach(headers, hk, hv)
		{
			if (strcmp(hk, RMQ_HEADER) == 0)
				continue;
			PBFN(message__user_properties_entry__init) (&props[n]);
			props[n].key = hk;
			props[n].value = (char *) (json_object_is_type(hv, json_type_string) ?
									   json_object_get_string(hv) :
									   json_object_to_json_string_ext(hv, JSON_C_TO_STRING_PLAIN));
			propp[n] = &props[n];
			n++;
		}
		}
	}
	m.n_user_properties = n;
	m.user_properties = propp;

	topic.resource_namespace = (char *) ns;
	topic.name = (char *) topic_name;
	m.topic = &topic;
	m.body.data = (uint8_t *) body;
	m.body.len = blen;

	if (!PQgetisnull(res, row, C_TAG))
		sp.tag = PQgetvalue(res, row, C_TAG);
	if (rmq && json_object_object_get_ex(rmq, "keys", &v) && json_object_is_type(v, json_type_array))
	{
		size_t		k = json_object_array_length(v);

		keys = calloc(k + 1, sizeof(char *));
		for (size_t i = 0; i < k; i++)
			keys[i] = (char *) json_object_get_string(json_object_array_get_idx(v, i));
		sp.n_keys = k;
		sp.keys = keys;
	}
	else if (!PQgetisnull(res, row, C_KEY))
	{
		keys = calloc(2, sizeof(char *));
		keys[0] = PQgetvalue(res, row, C_KEY);
		sp.n_keys = 1;
		sp.keys = keys;
	}
	if (rmq && json_object_object_get_ex(rmq, "id", &v))
		sp.message_id = (char *) json_object_get_string(v);
	else
	{
		/* published by SQL or AMQP: queue_ext's id */
		snprintf(idbuf, sizeof(idbuf), "%s", PQgetvalue(res, row, C_ID));
		sp.message_id = idbuf;
	}
	md5_hex(body, blen, md5);
	digest.type = APACHE__ROCKETMQ__V2__DIGEST_TYPE__MD5;
	digest.checksum = md5;
	sp.body_digest = &digest;
	sp.body_encoding = APACHE__ROCKETMQ__V2__ENCODING__IDENTITY;
	if (!PQgetisnull(res, row, C_GROUP))
		sp.message_group = PQgetvalue(res, row, C_GROUP);
	sp.message_type = type_of(rmq && json_object_object_get_ex(rmq, "type", &v) ?
							  json_object_get_string(v) :
							  sp.message_group[0] ? "FIFO" : "NORMAL");
	set_ts(&born, rmq && json_object_object_get_ex(rmq, "born", &v) ?
		   json_object_get_int64(v) : published);
	sp.born_timestamp = &born;
	if (rmq && json_object_object_get_ex(rmq, "born_host", &v))
		sp.born_host = (char *) json_object_get_string(v);
	set_ts(&store, published);
	sp.store_timestamp = &store;
	snprintf(store_host, sizeof(store_host), "%s:%d", rmq_advertise_host, rmq_advertise_port);
	sp.store_host = store_host;
	if (rmq && json_object_object_get_ex(rmq, "deliver_at", &v))
	{
		set_ts(&deliver, json_object_get_int64(v));
		sp.delivery_timestamp = &deliver;
	}
	sp.receipt_handle = PQgetvalue(res, row, C_RECEIPT);
	sp.queue_id = PQgetisnull(res, row, C_PARTITION) ? 0 : atoi(PQgetvalue(res, row, C_PARTITION));
	sp.queue_offset = PQgetisnull(res, row, C_OFFSET) ? 0 : atoll(PQgetvalue(res, row, C_OFFSET));
	invisible.seconds = invisible_ms / 1000;
	invisible.nanos = (int32_t) (invisible_ms % 1000) * 1000000;
	sp.invisible_duration = invisible_ms > 0 ? &invisible : NULL;
	sp.delivery_attempt = atoi(PQgetvalue(res, row, C_COUNT));
	m.system_properties = &sp;

	emit(&m, arg);

	free(keys);
	free(props);
	free(propp);
	if (headers)
		json_object_put(headers);
}

static void
receive_emit(PB(Message) * m, void *arg)
{
	PB(ReceiveMessageResponse) out = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__INIT;

	out.content_case = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__CONTENT_MESSAGE;
	out.message = m;
	stream_send_message(arg, &out.base);
}

/* Send one row of mq.consume as a Message */
static void
receive_row(Req *r, PGresult *res, int row)
{
	PB(ReceiveMessageRequest) * q = (PB(ReceiveMessageRequest) *) r->msg;

	message_of_row(res, row, q->group ? q->group->resource_namespace : "",
				   q->message_queue->topic->name, r->invisible_ms, receive_emit, r->s);
}

static void
receive_done(void *arg, PGresult *res)
{
	Req		   *r = arg;
	Stream	   *s = r->s;
	int			i;

	if (s == NULL)
	{
		/*
		 * The client went away during the long poll: what mq.consume
		 * leased comes back when the lease runs out
		 */
		req_free(r);
		return;
	}
	if (!res_good(res))
	{
		PB(ReceiveMessageResponse) out = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__INIT;
		PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;

		st.code = code_of(res, CODE(TOPIC_NOT_FOUND));
		st.message = (char *) res_message(res);
		out.content_case = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__CONTENT_STATUS;
		out.status = &st;
		stream_send_message(s, &out.base);
	}
	else
	{
		PB(ReceiveMessageResponse) out = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__INIT;
		PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;
		PB(ReceiveMessageResponse) when = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__INIT;
		PB(Timestamp) now;
		struct timeval tv;

		for (i = 0; i < PQntuples(res); i++)
		{
			receive_row(r, res, i);
			if (r->auto_renew)
			{
				PB(ReceiveMessageRequest) * q = (PB(ReceiveMessageRequest) *) r->msg;

				renew_add(s, r, q->message_queue->topic->name, q->group->name,
						  PQgetvalue(res, i, C_RECEIPT), r->invisible_ms);
			}
		}
		if (PQntuples(res) > 0)
		{
			gettimeofday(&tv, NULL);
			set_ts(&now, (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000);
			when.content_case = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__CONTENT_DELIVERY_TIMESTAMP;
			when.delivery_timestamp = &now;
			stream_send_message(s, &when.base);
		}
		st.code = PQntuples(res) > 0 ? CODE(OK) : CODE(MESSAGE_NOT_FOUND);
		st.message = PQntuples(res) > 0 ? "OK" : "no new message";
		out.content_case = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__CONTENT_STATUS;
		out.status = &st;
		stream_send_message(s, &out.base);
	}
	stream_finish(s, 0, NULL);
	s->rpc = RPC_DONE;
	req_free(r);
}

static void
receive_status(Stream *s, int code, const char *message)
{
	PB(ReceiveMessageResponse) out = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__INIT;
	PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;

	st.code = code;
	st.message = (char *) message;
	out.content_case = APACHE__ROCKETMQ__V2__RECEIVE_MESSAGE_RESPONSE__CONTENT_STATUS;
	out.status = &st;
	stream_send_message(s, &out.base);
	stream_finish(s, 0, NULL);
	s->rpc = RPC_DONE;
}

static void
receive_message(Stream *s, PB(ReceiveMessageRequest) * q)
{
	Req		   *r;
	char		num[64];
	int64_t		invisible = dur_ms(q->invisible_duration);
	int64_t		wait = dur_ms(q->long_polling_timeout);
	int			batch = q->batch_size;
	const char *filter_type = NULL;
	bool		auto_renew = false;
	const char *why;
	int			code;

	if ((code = rmq_check_group(q->group ? q->group->name : NULL, &why)) != 0 ||
		(code = rmq_check_topic(q->message_queue && q->message_queue->topic ?
								q->message_queue->topic->name : NULL, &why)) != 0)
	{
		receive_status(s, code, why);
		msg_free(&q->base);
		return;
	}
	if (q->invisible_duration == NULL && q->auto_renew)
	{
		/*
		 * A PushConsumer asks the server to keep renewing its deliveries
		 * (auto_renew) and sends no duration: --push-invisible-time, renewed
		 * while the client works on them (renew_add)
		 */
		invisible = (int64_t) rmq_push_invisible * 1000;
		auto_renew = true;
	}
	else if (q->invisible_duration == NULL || invisible <= 0)
	{
		receive_status(s, CODE(ILLEGAL_INVISIBLE_TIME), "the invisible duration must be positive");
		msg_free(&q->base);
		return;
	}
	if (wait < 0 || wait > 3600 * 1000)
	{
		receive_status(s, CODE(ILLEGAL_POLLING_TIME), "the long polling timeout must be 0 to 1 hour");
		msg_free(&q->base);
		return;
	}
	if (q->filter_expression && q->filter_expression->expression[0] != '\0' &&
		!(q->filter_expression->type == APACHE__ROCKETMQ__V2__FILTER_TYPE__TAG &&
		  strcmp(q->filter_expression->expression, "*") == 0))
	{
		if (q->filter_expression->type == APACHE__ROCKETMQ__V2__FILTER_TYPE__TAG)
			filter_type = "tag";
		else if (q->filter_expression->type == APACHE__ROCKETMQ__V2__FILTER_TYPE__SQL)
			filter_type = "sql92";
		else
		{
			receive_status(s, CODE(ILLEGAL_FILTER_EXPRESSION), "unknown filter type");
			msg_free(&q->base);
			return;
		}
	}
	if (batch < 1)
		batch = 1;
	if (batch > 10000)
		batch = 10000;
	r = req_new(s, RPC_RECEIVE, q->group->resource_namespace, &q->base);
	r->invisible_ms = invisible;
	r->auto_renew = auto_renew;
	req_param(r, 0, q->message_queue->topic->name);
	snprintf(num, sizeof(num), "%d", batch);
	req_param(r, 1, num);
	snprintf(num, sizeof(num), "%lld milliseconds", (long long) wait);
	req_param(r, 2, num);
	snprintf(num, sizeof(num), "%lld milliseconds", (long long) invisible);
	req_param(r, 3, num);
	req_param(r, 4, q->group->name);
	/*
	 * detached leases (session_bound => false): the pooled session is not
	 * the client, only the invisible duration ends a delivery
	 */
	if (filter_type == NULL)
		req_run_as(r,
				   RECEIVE_COLUMNS
				   " FROM mq.consume($1, max_messages => $2::int, wait => $3::interval,"
				   " lease => $4::interval, group_name => $5, session_bound => false)",
				   5, 1, receive_done);
	else
	{
		/*
		 * The subscription's own filter, on top of the group's: what it
		 * rejects is settled for the group in the same statement (RocketMQ:
		 * a group's subscription decides what the group gets), never
		 * returned.  Over the user properties and the tag, as the group's.
		 */
		req_param(r, 5, filter_type);
		req_param(r, 6, q->filter_expression->expression);
		req_run_as(r,
				   /* the expression is checked first, with or without messages */
				   "WITH c AS (SELECT * FROM mq.consume($1, max_messages =>"
				   "  (SELECT CASE WHEN mq.filter_match($6, $7, '{}'::jsonb) THEN $2::int ELSE $2::int END),"
				   "  wait => $3::interval, lease => $4::interval, group_name => $5,"
				   "  session_bound => false)),"
				   " m AS (SELECT c.*, coalesce(mq.filter_match($6, $7, c.headers - '" RMQ_HEADER "', c.tag),"
				   "  false) AS pass FROM c),"
				   " skipped AS (SELECT mq.ack($1, group_name => $5, receipts => array_agg(receipt)) AS n"
				   "  FROM m WHERE NOT pass HAVING count(*) > 0)"
				   " " RECEIVE_COLUMNS
				   " FROM m, (SELECT count(*) FROM skipped) s WHERE pass",
				   7, 1, receive_done);
	}
}

/* ---------------------------------------------------------------------
 * AckMessage
 * --------------------------------------------------------------------- */

static void ack_next(Req *r);

static void
ack_done(void *arg, PGresult *res)
{
	Req		   *r = arg;
	PB(AckMessageRequest) * q = (PB(AckMessageRequest) *) r->msg;
	PB(AckMessageEntry) * e = q->entries[r->idx];
	PB(Status) * st = &r->ack_status[r->idx];

	if (res_good(res))
	{
		st->code = CODE(OK);
		st->message = strdup("OK");
	}
	else
	{
		st->code = receipt_code(res);
		st->message = strdup(res_message(res));
	}
	r->ack_entries[r->idx].message_id = e->message_id;
	r->ack_entries[r->idx].receipt_handle = e->receipt_handle;
	r->ack_entries[r->idx].status = st;
	r->idx++;
	ack_next(r);
}

static void
ack_next(Req *r)
{
	PB(AckMessageRequest) * q = (PB(AckMessageRequest) *) r->msg;
	Stream	   *s = r->s;

	if (s && r->idx < q->n_entries)
	{
		req_param(r, 0, q->topic->name);
		req_param(r, 1, q->group->name);
		req_param(r, 2, q->entries[r->idx]->receipt_handle);
		renew_forget(q->entries[r->idx]->receipt_handle);
		req_run(r, "SELECT mq.ack($1, group_name => $2, receipts => ARRAY[$3])", 3, ack_done);
		return;
	}
	if (s)
	{
		PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;
		PB(AckMessageResultEntry) **ep = calloc(r->idx + 1, sizeof(void *));

		st.code = CODE(OK);
		st.message = "OK";
		for (size_t i = 0; i < r->idx; i++)
		{
			ep[i] = &r->ack_entries[i];
			if (r->ack_status[i].code != CODE(OK) && st.code == CODE(OK))
				st = r->ack_status[i];
		}
		r->ack_res.status = &st;
		r->ack_res.n_entries = r->idx;
		r->ack_res.entries = ep;
		stream_send_message(s, &r->ack_res.base);
		stream_finish(s, 0, NULL);
		s->rpc = RPC_DONE;
		free(ep);
	}
	for (size_t i = 0; i < r->idx; i++)
		free(r->ack_status[i].message);
	req_free(r);
}

/*
 * Acks in batches, as sends are (send_kick): the AckMessages of a (database,
 * role, topic, group) that wait while SEND_IN_FLIGHT of its statements run
 * go into one mq.ack of all their receipts, one transaction.  mq.ack undoes
 * the whole call when one receipt is refused (55000, 22P02, ...): then each
 * request of the batch settles entry by entry (ack_next), so that each
 * receipt gets its own status.
 */
typedef struct AckQueue
{
	char		db[128];
	char		role[128];
	char	   *topic;
	char	   *group;
	Req		   *head;			/* waiting, linked by next_batch */
	Req		   *tail;
	int			running;
	struct AckQueue *next;
} AckQueue;

typedef struct AckBatch
{
	AckQueue   *q;
	Req		   *reqs;
	int			n;				/* receipts */
	Buf			receipts;
	const char *values[3];
	int			lengths[3];
	int			formats[3];
} AckBatch;

static AckQueue *ack_queues;

static void ack_kick(AckQueue *q);

static void
ack_enqueue(Req *r)
{
	PB(AckMessageRequest) * m = (PB(AckMessageRequest) *) r->msg;
	AckQueue   *q;

	for (q = ack_queues; q; q = q->next)
		if (strcmp(q->db, r->db) == 0 && strcmp(q->role, r->role) == 0 &&
			strcmp(q->topic, m->topic->name) == 0 && strcmp(q->group, m->group->name) == 0)
			break;
	if (q == NULL)
	{
		q = calloc(1, sizeof(AckQueue));
		snprintf(q->db, sizeof(q->db), "%s", r->db);
		snprintf(q->role, sizeof(q->role), "%s", r->role);
		q->topic = strdup(m->topic->name);
		q->group = strdup(m->group->name);
		q->next = ack_queues;
		ack_queues = q;
	}
	wait_batch(&q->head, &q->tail, r);
	ack_kick(q);
}

/* An ack batch's statement is done: answer its requests, run what waits */
static void
ack_batch_done(void *arg, PGresult *res)
{
	AckBatch   *b = arg;
	AckQueue   *q = b->q;
	Req		   *r,
			   *nx;

	q->running--;
	for (r = b->reqs; r; r = nx)
	{
		PB(AckMessageRequest) * m = (PB(AckMessageRequest) *) r->msg;

		nx = r->next_batch;
		r->next_batch = NULL;
		if (res_good(res) || res == NULL)
		{
			/* all settled; or the session was lost, nobody knows */
			for (; r->idx < m->n_entries; r->idx++)
			{
				PB(Status) * st = &r->ack_status[r->idx];

				st->code = res ? CODE(OK) : receipt_code(NULL);
				st->message = strdup(res ? "OK" : res_message(NULL));
				r->ack_entries[r->idx].message_id = m->entries[r->idx]->message_id;
				r->ack_entries[r->idx].receipt_handle = m->entries[r->idx]->receipt_handle;
				r->ack_entries[r->idx].status = st;
			}
		}
		/* answered; or, the batch undone, receipt by receipt */
		ack_next(r);
	}
	buf_free(&b->receipts);
	free(b);
	ack_kick(q);
	if (q->head == NULL && q->running == 0)
	{
		AckQueue  **p;

		for (p = &ack_queues; *p != q; p = &(*p)->next)
			;
		*p = q->next;
		free(q->topic);
		free(q->group);
		free(q);
	}
}

/* Start q's waiting acks as one statement, if one of q may start */
static void
ack_kick(AckQueue *q)
{
	while (q->head && q->running < SEND_IN_FLIGHT)
	{
		AckBatch   *b = calloc(1, sizeof(AckBatch));
		Req		   *r;

		b->q = q;
		b->n = take_batch(&q->head, &q->tail, ack_items, &b->reqs);
		if (b->n == 0)
		{
			free(b);
			continue;
		}
		array_start(&b->receipts, 25, b->n);
		for (r = b->reqs; r; r = r->next_batch)
		{
			PB(AckMessageRequest) * m = (PB(AckMessageRequest) *) r->msg;

			for (size_t j = 0; j < m->n_entries; j++)
			{
				/* as ack_next: a settled delivery is not renewed any more */
				renew_forget(m->entries[j]->receipt_handle);
				array_add_str(&b->receipts, m->entries[j]->receipt_handle);
			}
		}
		b->values[0] = q->topic;
		b->values[1] = q->group;
		b->values[2] = b->receipts.data;
		b->lengths[2] = (int) b->receipts.len;
		b->formats[2] = 1;
		if (!pg_run(q->db, q->role,
					"SELECT mq.ack($1, group_name => $2, receipts => $3::text[])",
					3, b->values, b->lengths, b->formats, 0, ack_batch_done, b))
		{
			batch_refuse(b->reqs);
			buf_free(&b->receipts);
			free(b);
			continue;
		}
		q->running++;
	}
}

static void
ack_message(Stream *s, PB(AckMessageRequest) * q)
{
	Req		   *r;

	if (q->group == NULL || q->group->name[0] == '\0' || q->topic == NULL ||
		q->topic->name[0] == '\0' || q->n_entries == 0)
	{
		answer_status(s, CODE(BAD_REQUEST), "AckMessage needs a group, a topic and entries");
		msg_free(&q->base);
		return;
	}
	if (!names_ok(s, q->topic, q->group, &q->base))
		return;
	r = req_new(s, RPC_ACK, q->group->resource_namespace, &q->base);
	PBFN(ack_message_response__init) (&r->ack_res);
	r->ack_entries = calloc(q->n_entries, sizeof(PB(AckMessageResultEntry)));
	r->ack_status = calloc(q->n_entries, sizeof(PB(Status)));
	for (size_t i = 0; i < q->n_entries; i++)
	{
		PBFN(ack_message_result_entry__init) (&r->ack_entries[i]);
		PBFN(status__init) (&r->ack_status[i]);
	}
	if (q->n_entries <= SEND_BATCH_MAX)
		ack_enqueue(r);
	else
		ack_next(r);
}

/* ---------------------------------------------------------------------
 * ChangeInvisibleDuration
 * --------------------------------------------------------------------- */

static void
change_invisible_done(void *arg, PGresult *res)
{
	Req		   *r = arg;
	PB(ChangeInvisibleDurationRequest) * q = (PB(ChangeInvisibleDurationRequest) *) r->msg;
	Stream	   *s = r->s;

	if (s)
	{
		PB(ChangeInvisibleDurationResponse) out = APACHE__ROCKETMQ__V2__CHANGE_INVISIBLE_DURATION_RESPONSE__INIT;
		PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;

		if (res_good(res))
		{
			st.code = CODE(OK);
			st.message = "OK";
			/* extend_lease keeps the receipt: the same handle stays valid */
			out.receipt_handle = q->receipt_handle;
		}
		else
		{
			st.code = receipt_code(res);
			st.message = (char *) res_message(res);
		}
		out.status = &st;
		stream_send_message(s, &out.base);
		stream_finish(s, 0, NULL);
		s->rpc = RPC_DONE;
	}
	req_free(r);
}

static void
change_invisible(Stream *s, PB(ChangeInvisibleDurationRequest) * q)
{
	Req		   *r;
	char		num[64];
	int64_t		ms = dur_ms(q->invisible_duration);

	if (q->group == NULL || q->group->name[0] == '\0' || q->topic == NULL ||
		q->topic->name[0] == '\0' || q->receipt_handle[0] == '\0')
	{
		answer_status(s, CODE(BAD_REQUEST), "ChangeInvisibleDuration needs a group, a topic and a receipt handle");
		msg_free(&q->base);
		return;
	}
	if (!names_ok(s, q->topic, q->group, &q->base))
		return;
	if (ms < 0)
	{
		answer_status(s, CODE(ILLEGAL_INVISIBLE_TIME), "the invisible duration must not be negative");
		msg_free(&q->base);
		return;
	}
	/* the client decides its delivery's lease now: no more renewal */
	renew_forget(q->receipt_handle);
	r = req_new(s, RPC_CHANGE_INVISIBLE, q->group->resource_namespace, &q->base);
	req_param(r, 0, q->topic->name);
	req_param(r, 1, q->group->name);
	req_param(r, 2, q->receipt_handle);
	if (ms > 0)
	{
		snprintf(num, sizeof(num), "%lld milliseconds", (long long) ms);
		req_param(r, 3, num);
		req_run(r, "SELECT mq.extend_lease($1, lease => $4::interval, group_name => $2, receipts => ARRAY[$3])",
				4, change_invisible_done);
	}
	else
		/* visible again now: a retry without delay */
		req_run(r, "SELECT mq.nack($1, requeue => true, delay => '0', group_name => $2, receipts => ARRAY[$3])",
				3, change_invisible_done);
}

/* ---------------------------------------------------------------------
 * ForwardMessageToDeadLetterQueue
 * --------------------------------------------------------------------- */

static void
forward_dlq_done(void *arg, PGresult *res)
{
	Req		   *r = arg;

	if (res_good(res))
		answer_status(r->s, CODE(OK), "OK");
	else
		answer_status(r->s, receipt_code(res), res_message(res));
	req_free(r);
}

/* the group's dead-letter queue %DLQ%<group>: mq.nack without requeue */
static void
forward_dlq(Stream *s, PB(ForwardMessageToDeadLetterQueueRequest) * q)
{
	Req		   *r;

	if (q->group == NULL || q->group->name[0] == '\0' || q->topic == NULL ||
		q->topic->name[0] == '\0' || q->receipt_handle[0] == '\0')
	{
		answer_status(s, CODE(BAD_REQUEST), "ForwardMessageToDeadLetterQueue needs a group, a topic and a receipt handle");
		msg_free(&q->base);
		return;
	}
	if (!names_ok(s, q->topic, q->group, &q->base))
		return;
	renew_forget(q->receipt_handle);
	r = req_new(s, RPC_FORWARD_DLQ, q->group->resource_namespace, &q->base);
	req_param(r, 0, q->topic->name);
	req_param(r, 1, q->group->name);
	req_param(r, 2, q->receipt_handle);
	req_run(r, "SELECT mq.nack($1, requeue => false, group_name => $2, receipts => ARRAY[$3])",
			3, forward_dlq_done);
}

/* ---------------------------------------------------------------------
 * EndTransaction
 * --------------------------------------------------------------------- */

static void
end_transaction_done(void *arg, PGresult *res)
{
	Req		   *r = arg;
	const char *state = res_state(res);

	if (res_good(res))
		answer_status(r->s, CODE(OK), "OK");
	else
		/* an unknown half, or one decided already */
		answer_status(r->s, (strcmp(state, "42704") == 0 || strcmp(state, "55000") == 0) ?
					  CODE(INVALID_TRANSACTION_ID) : code_of(res, CODE(TOPIC_NOT_FOUND)),
					  res_message(res));
	req_free(r);
}

/* mq.end_half of the half message the transaction id names */
static void
end_transaction(Stream *s, PB(EndTransactionRequest) * q)
{
	Req		   *r;
	const char *action;
	const char *t = q->transaction_id;

	if (t[0] == '\0' || strspn(t, "0123456789") != strlen(t) || strlen(t) > 18)
	{
		answer_status(s, CODE(INVALID_TRANSACTION_ID), "not a transaction id of mq-rocketmq");
		msg_free(&q->base);
		return;
	}
	if (q->resolution == APACHE__ROCKETMQ__V2__TRANSACTION_RESOLUTION__COMMIT)
		action = "commit";
	else if (q->resolution == APACHE__ROCKETMQ__V2__TRANSACTION_RESOLUTION__ROLLBACK)
		action = "rollback";
	else
	{
		/* unknown: nothing decided, the half stays pending */
		answer_status(s, CODE(OK), "OK");
		msg_free(&q->base);
		return;
	}
	r = req_new(s, RPC_END_TRANSACTION, q->topic ? q->topic->resource_namespace : "", &q->base);
	req_param(r, 0, t);
	req_param(r, 1, action);
	req_run(r, "SELECT mq.end_half($1::bigint, $2)", 2, end_transaction_done);
}

/* ---------------------------------------------------------------------
 * Transaction check-back: RecoverOrphanedTransactionCommand on the
 * Telemetry stream of a producer of the half message's topic
 * --------------------------------------------------------------------- */

static Stream *producers;
static struct event *check_timer;

/* the size of a producer stream's topics (rmq.h) */
#define PRODUCER_TOPICS 1024

/* A producer's Settings: its stream may be asked about its topics' halves */
static void
producer_register(Stream *s, PB(Settings) * in)
{
	size_t		i,
				len;

	snprintf(s->db, sizeof(s->db), "%s", s->namespace_);
	if (s->topics == NULL && (s->topics = malloc(PRODUCER_TOPICS)) == NULL)
	{
		logmsg("out of memory");
		abort();
	}
	strcpy(s->topics, ",");
	if (in->pub_sub_case == APACHE__ROCKETMQ__V2__SETTINGS__PUB_SUB_PUBLISHING && in->publishing)
		for (i = 0; i < in->publishing->n_topics; i++)
		{
			PB(Resource) * t = in->publishing->topics[i];

			if (!s->db[0] && t->resource_namespace[0])
				snprintf(s->db, sizeof(s->db), "%s", t->resource_namespace);
			len = strlen(s->topics);
			snprintf(s->topics + len, PRODUCER_TOPICS - len, "%s,", t->name);
		}
	if (!s->producer)
	{
		s->producer = true;
		s->next_producer = producers;
		producers = s;
	}
}

static void
producer_unregister(Stream *s)
{
	Stream	  **p;

	for (p = &producers; *p; p = &(*p)->next_producer)
		if (*p == s)
		{
			*p = s->next_producer;
			break;
		}
	s->producer = false;
	free(s->topics);
	s->topics = NULL;
}

/* a producer of this database that publishes to topic, if one is connected */
static Stream *
producer_of(const char *db, const char *topic)
{
	Stream	   *p;
	char		key[300];

	snprintf(key, sizeof(key), ",%s,", topic);
	for (p = producers; p; p = p->next_producer)
		if (!p->closed && !p->finished && strcmp(p->db, db) == 0 && strstr(p->topics, key))
			return p;
	return NULL;
}

typedef struct CheckReq
{
	char		db[128];
	char		interval[32];
	char	   *asked;			/* "{id,...}": halves asked about lately */
	const char *params[3];
} CheckReq;

/*
 * The halves asked about lately: not asked again while their producer's
 * answer may be on its way (ASKED_WINDOW_MS), so that a checker that takes
 * a while does not get the same question twice and answer it twice (the
 * second EndTransaction of a decided half: INVALID_TRANSACTION_ID)
 */
typedef struct Asked
{
	char		db[128];
	int64_t		half_id;
	int64_t		at_ms;
} Asked;

#define ASKED_MAX 10000
#define ASKED_WINDOW_MS ((int64_t) (rmq_tx_check * 2 > 30 ? rmq_tx_check * 2 : 30) * 1000)

static Asked *asked;
static int	nasked;

/* forget what was asked before the window */
static void
asked_expire(void)
{
	int64_t		now = now_ms();
	int			j = 0;

	for (int i = 0; i < nasked; i++)
		if (now - asked[i].at_ms < ASKED_WINDOW_MS)
			asked[j++] = asked[i];
	nasked = j;
}

static void
asked_add(const char *db, int64_t half_id)
{
	if (asked == NULL)
		asked = calloc(ASKED_MAX, sizeof(Asked));
	if (nasked >= ASKED_MAX)
		return;
	snprintf(asked[nasked].db, sizeof(asked[nasked].db), "%s", db);
	asked[nasked].half_id = half_id;
	asked[nasked].at_ms = now_ms();
	nasked++;
}

/* "{id,...}" of the halves of db asked about lately (malloc'd) */
static char *
asked_array(const char *db)
{
	Buf			b = {0};
	char		num[32];

	buf_add(&b, "{", 1);
	for (int i = 0; i < nasked; i++)
		if (strcmp(asked[i].db, db) == 0)
		{
			snprintf(num, sizeof(num), "%s%lld", b.len > 1 ? "," : "", (long long) asked[i].half_id);
			buf_add(&b, num, strlen(num));
		}
	buf_add(&b, "}", 2);
	return b.data;
}

typedef struct RecoverArg
{
	Stream	   *s;
	const char *transaction_id;
} RecoverArg;

static void
recover_emit(PB(Message) * m, void *arg)
{
	RecoverArg *ra = arg;
	PB(TelemetryCommand) out = APACHE__ROCKETMQ__V2__TELEMETRY_COMMAND__INIT;
	PB(RecoverOrphanedTransactionCommand) cmd = APACHE__ROCKETMQ__V2__RECOVER_ORPHANED_TRANSACTION_COMMAND__INIT;

	cmd.message = m;
	cmd.transaction_id = (char *) ra->transaction_id;
	out.command_case = APACHE__ROCKETMQ__V2__TELEMETRY_COMMAND__COMMAND_RECOVER_ORPHANED_TRANSACTION_COMMAND;
	out.recover_orphaned_transaction_command = &cmd;
	stream_send_message(ra->s, &out.base);
}

#define C_ROUTING_KEY (C_RECEIPT + 1)

static void
check_done(void *arg, PGresult *res)
{
	CheckReq   *c = arg;
	int			i;

	if (!res_good(res))
	{
		if (rmq_verbose)
			logmsg("transaction check-back in database \"%s\": %s", c->db, res_message(res));
		free(c->asked);
		free(c);
		return;
	}
	for (i = 0; i < PQntuples(res); i++)
	{
		const char *topic = PQgetvalue(res, i, C_ROUTING_KEY);
		RecoverArg	ra;

		ra.s = producer_of(c->db, topic);
		if (ra.s == NULL)
			continue;
		ra.transaction_id = PQgetvalue(res, i, C_ID);
		message_of_row(res, i, ra.s->db, topic, 0, recover_emit, &ra);
		asked_add(c->db, atoll(ra.transaction_id));
	}
	free(c->asked);
	free(c);
}

/* Every --transaction-check seconds: each database with producers */
static void
check_tick(evutil_socket_t fd, short what, void *arg)
{
	Stream	   *p,
			   *q;

	asked_expire();
	for (p = producers; p; p = p->next_producer)
	{
		CheckReq   *c;

		/* once per database: the first producer's role asks */
		for (q = producers; q != p; q = q->next_producer)
			if (strcmp(q->db, p->db) == 0)
				break;
		if (q != p || p->closed || p->finished)
			continue;
		c = calloc(1, sizeof(CheckReq));
		snprintf(c->db, sizeof(c->db), "%s", p->db);
		snprintf(c->interval, sizeof(c->interval), "%d seconds", rmq_tx_check);
		c->asked = asked_array(p->db);
		c->params[0] = rmq_producer_group;
		c->params[1] = c->interval;
		c->params[2] = c->asked;
		/*
		 * halves of the default exchange (a topic is its routing key)
		 * pending longer than --transaction-check, in the C_ columns
		 */
		if (!pg_run(p->db, p->role,
					"SELECT m.msg_id::text, m.body, m.headers::text,"
					" ((extract(epoch FROM m.published_at) * 1000)::bigint)::text, '0', NULL::text,"
					" NULL::text, m.key, m.tag, m.message_group, NULL::text, h.routing_key"
					" FROM mq.half_messages h, mq.message(h.half_id) m"
					" WHERE h.producer_group = $1 AND h.state = 'pending' AND h.exchange = ''"
					" AND h.created_at < now() - $2::interval AND h.half_id <> ALL ($3::bigint[])"
					" ORDER BY h.half_id LIMIT 100",
					3, c->params, NULL, NULL, 1, check_done, c))
		{
			free(c->asked);
			free(c);
		}
	}
}

/* ---------------------------------------------------------------------
 * Telemetry
 * --------------------------------------------------------------------- */

/*
 * RocketMQ's 16 retry levels, queue_ext's default retry_delays (ms)
 * (design.md: 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h)
 */
static const int64_t default_retry_ms[] = {
	10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000, 420000, 480000,
	540000, 600000, 1200000, 1800000, 3600000, 7200000
};

#define MAX_RETRY_DELAYS 64
/* a Proxy's defaults (ProxyConfig): receive batch size, longest long poll */
#define RECEIVE_BATCH_SIZE 32
#define LONG_POLLING_TIMEOUT_MS 20000

/* A consumer group's options, as mq.group_options shows them */
typedef struct GroupPolicy
{
	bool		ordered;
	int			max_retries;
	int			ndelays;
	int64_t		delays_ms[MAX_RETRY_DELAYS];
} GroupPolicy;

static void
set_dur(PB(Duration) * d, int64_t ms)
{
	PBFN(duration__init) (d);
	d->seconds = ms / 1000;
	d->nanos = (int32_t) (ms % 1000) * 1000000;
}

/*
 * The Settings that answer a client's: a producer's at once; a consumer's
 * with its group's retry policy and FIFO flag (gp; NULL: RocketMQ's
 * defaults, 16 retries on the 16 levels, not FIFO)
 */
static void
settings_send(Stream *s, PB(Settings) * in, const GroupPolicy *gp)
{
	PB(TelemetryCommand) out = APACHE__ROCKETMQ__V2__TELEMETRY_COMMAND__INIT;
	PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;
	PB(Settings) set = APACHE__ROCKETMQ__V2__SETTINGS__INIT;
	PB(RetryPolicy) retry = APACHE__ROCKETMQ__V2__RETRY_POLICY__INIT;
	PB(ExponentialBackoff) exp = APACHE__ROCKETMQ__V2__EXPONENTIAL_BACKOFF__INIT;
	PB(CustomizedBackoff) custom = APACHE__ROCKETMQ__V2__CUSTOMIZED_BACKOFF__INIT;
	PB(Duration) initial = APACHE__ROCKETMQ__V2__DURATION__INIT;
	PB(Duration) max = APACHE__ROCKETMQ__V2__DURATION__INIT;
	PB(Duration) poll = APACHE__ROCKETMQ__V2__DURATION__INIT;
	PB(Duration) next[MAX_RETRY_DELAYS];
	PB(Duration) *nextp[MAX_RETRY_DELAYS];
	PB(Publishing) pub = APACHE__ROCKETMQ__V2__PUBLISHING__INIT;
	PB(Subscription) sub = APACHE__ROCKETMQ__V2__SUBSCRIPTION__INIT;

	if (s == NULL || s->closed || s->finished)
		return;
	st.code = CODE(OK);
	st.message = "OK";
	set.client_type = in->client_type;
	set.access_point = in->access_point;
	set.request_timeout = in->request_timeout;
	exp.initial = &initial;
	exp.max = &max;
	if (in->client_type == APACHE__ROCKETMQ__V2__CLIENT_TYPE__PRODUCER ||
		in->pub_sub_case == APACHE__ROCKETMQ__V2__SETTINGS__PUB_SUB_PUBLISHING)
	{
		/*
		 * a Proxy's: exponential from 10 ms to 1 s, times 2, the
		 * producer's own attempts (the client's start-up waits for one)
		 */
		set_dur(&initial, 10);
		set_dur(&max, 1000);
		exp.multiplier = 2;
		retry.strategy_case = APACHE__ROCKETMQ__V2__RETRY_POLICY__STRATEGY_EXPONENTIAL_BACKOFF;
		retry.exponential_backoff = &exp;
		retry.max_attempts = in->backoff_policy && in->backoff_policy->max_attempts > 0 ?
			in->backoff_policy->max_attempts : 3;
		set.pub_sub_case = APACHE__ROCKETMQ__V2__SETTINGS__PUB_SUB_PUBLISHING;
		pub.max_body_size = rmq_max_body;
		/* queue_ext's streams are not typed: any type goes to any topic */
		pub.validate_message_type = 0;
		if (in->pub_sub_case == APACHE__ROCKETMQ__V2__SETTINGS__PUB_SUB_PUBLISHING && in->publishing)
		{
			pub.n_topics = in->publishing->n_topics;
			pub.topics = in->publishing->topics;
		}
		set.publishing = &pub;
	}
	else
	{
		GroupPolicy def;
		double		m = 1;
		bool		geometric = true;
		int			k;

		if (gp == NULL)
		{
			def.ordered = false;
			def.max_retries = 16;
			def.ndelays = (int) (sizeof(default_retry_ms) / sizeof(default_retry_ms[0]));
			memcpy(def.delays_ms, default_retry_ms, sizeof(default_retry_ms));
			gp = &def;
		}
		/* a group retries max_retries times: that many deliveries and one */
		retry.max_attempts = gp->max_retries + 1;

		/*
		 * The group's delays as a Proxy reports a group's retry policy: an
		 * exponential backoff when they are one (d, d*m, d*m^2, ... up to the
		 * last, which repeats, as queue_ext's last delay does), else the
		 * customized list
		 */
		if (gp->ndelays > 1 && gp->delays_ms[0] > 0)
			m = (double) gp->delays_ms[1] / gp->delays_ms[0];
		for (k = 1; k < gp->ndelays && geometric; k++)
		{
			double		want = gp->delays_ms[k - 1] * m;

			if (gp->delays_ms[k - 1] <= 0 || m < 1 ||
				(int64_t) (want + 0.5) != gp->delays_ms[k])
				geometric = false;
		}
		if (geometric && gp->ndelays > 0)
		{
			set_dur(&initial, gp->delays_ms[0]);
			set_dur(&max, gp->delays_ms[gp->ndelays - 1]);
			exp.multiplier = (float) m;
			retry.strategy_case = APACHE__ROCKETMQ__V2__RETRY_POLICY__STRATEGY_EXPONENTIAL_BACKOFF;
			retry.exponential_backoff = &exp;
		}
		else
		{
			for (k = 0; k < gp->ndelays; k++)
			{
				set_dur(&next[k], gp->delays_ms[k]);
				nextp[k] = &next[k];
			}
			custom.n_next = gp->ndelays;
			custom.next = nextp;
			retry.strategy_case = APACHE__ROCKETMQ__V2__RETRY_POLICY__STRATEGY_CUSTOMIZED_BACKOFF;
			retry.customized_backoff = &custom;
		}
		set.pub_sub_case = APACHE__ROCKETMQ__V2__SETTINGS__PUB_SUB_SUBSCRIPTION;
		if (in->pub_sub_case == APACHE__ROCKETMQ__V2__SETTINGS__PUB_SUB_SUBSCRIPTION && in->subscription)
		{
			sub.group = in->subscription->group;
			sub.n_subscriptions = in->subscription->n_subscriptions;
			sub.subscriptions = in->subscription->subscriptions;
		}
		sub.fifo = gp->ordered;
		sub.receive_batch_size = RECEIVE_BATCH_SIZE;
		set_dur(&poll, LONG_POLLING_TIMEOUT_MS);
		sub.long_polling_timeout = &poll;
		set.subscription = &sub;
	}
	set.backoff_policy = &retry;
	out.status = &st;
	out.command_case = APACHE__ROCKETMQ__V2__TELEMETRY_COMMAND__COMMAND_SETTINGS;
	out.settings = &set;
	stream_send_message(s, &out.base);
}

/* the group's options are in: the consumer's Settings */
static void
settings_done(void *arg, PGresult *res)
{
	Req		   *r = arg;
	PB(TelemetryCommand) * t = (PB(TelemetryCommand) *) r->msg;
	GroupPolicy gp;
	bool		found = false;

	if (res_good(res) && PQntuples(res) > 0)
	{
		const char *p = PQgetvalue(res, 0, 2);

		gp.ordered = PQgetvalue(res, 0, 0)[0] == 't';
		gp.max_retries = atoi(PQgetvalue(res, 0, 1));
		gp.ndelays = 0;
		/* "{1000,2000}" (ms); NULL: the 16 levels */
		if (PQgetisnull(res, 0, 2))
		{
			gp.ndelays = (int) (sizeof(default_retry_ms) / sizeof(default_retry_ms[0]));
			memcpy(gp.delays_ms, default_retry_ms, sizeof(default_retry_ms));
		}
		else
			while (*p && gp.ndelays < MAX_RETRY_DELAYS)
			{
				char	   *end;

				if (*p == '{' || *p == ',' || *p == '}')
				{
					p++;
					continue;
				}
				gp.delays_ms[gp.ndelays++] = strtoll(p, &end, 10);
				if (end == p)
					break;
				p = end;
			}
		found = true;
	}
	else if (!res_good(res) && rmq_verbose)
		logmsg("the Settings of a consumer: its group's options: %s", res_message(res));
	if (r->s)
		settings_send(r->s, t->settings, found ? &gp : NULL);
	req_free(r);
}

/*
 * The subscriptions consumers' Settings announced, per database, topic and
 * group: the latest one's filter.  RocketMQ requires the consumers of a
 * group to agree; a Proxy filters each receive by its own request's
 * expression (as the gateway does), so a disagreement loses messages to
 * the consumers that would have matched them.  The gateway says so in its
 * log when a consumer announces an expression that differs from the last
 * one announced for its group and topic.
 */
typedef struct Announced
{
	char	   *key;			/* "db\ttopic\tgroup" */
	int			type;
	char	   *expression;
	struct Announced *next;
} Announced;

#define ANNOUNCED_MAX 10000

static Announced *announced;
static int	nannounced;

static void
subscription_announced(Stream *s, const char *db, PB(Subscription) * sub)
{
	for (size_t i = 0; i < sub->n_subscriptions; i++)
	{
		PB(SubscriptionEntry) * e = sub->subscriptions[i];
		const char *expr = e->expression && e->expression->expression[0] ?
			e->expression->expression : "*";
		int			type = e->expression ? e->expression->type : APACHE__ROCKETMQ__V2__FILTER_TYPE__TAG;
		size_t		len;
		char	   *key;
		Announced  *a;

		if (e->topic == NULL)
			continue;
		len = strlen(db) + strlen(e->topic->name) + strlen(sub->group->name) + 3;
		key = malloc(len);
		snprintf(key, len, "%s\t%s\t%s", db, e->topic->name, sub->group->name);
		for (a = announced; a; a = a->next)
			if (strcmp(a->key, key) == 0)
				break;
		if (a == NULL)
		{
			if (nannounced >= ANNOUNCED_MAX)
			{
				free(key);
				continue;
			}
			a = calloc(1, sizeof(Announced));
			a->key = key;
			a->next = announced;
			announced = a;
			nannounced++;
		}
		else
		{
			free(key);
			if (a->type != type || strcmp(a->expression, expr) != 0)
				logmsg("consumer group \"%s\" of topic \"%s\": client \"%s\" subscribes with %s "
					   "\"%s\", another consumer of the group with %s \"%s\": RocketMQ requires "
					   "them to agree; each receive applies its own consumer's (docs/rocketmq.md)",
					   sub->group->name, e->topic->name, s->client_id,
					   type == APACHE__ROCKETMQ__V2__FILTER_TYPE__SQL ? "SQL92" : "TAG", expr,
					   a->type == APACHE__ROCKETMQ__V2__FILTER_TYPE__SQL ? "SQL92" : "TAG",
					   a->expression);
			free(a->expression);
		}
		a->type = type;
		a->expression = strdup(expr);
	}
}

/*
 * Answer a client's Settings with the server's: a consumer's after reading
 * its group's options (mq.group_options, as the key's role: a group of a
 * stream it may not see is not there) on the first subscribed topic that
 * has the group; RocketMQ's defaults when none has
 */
static void
telemetry_settings(Stream *s, PB(TelemetryCommand) * t)
{
	PB(Settings) * in = t->settings;
	PB(Subscription) * sub = in->subscription;
	json_object *topics;
	Req		   *r;

	if (in->client_type == APACHE__ROCKETMQ__V2__CLIENT_TYPE__PRODUCER ||
		in->pub_sub_case == APACHE__ROCKETMQ__V2__SETTINGS__PUB_SUB_PUBLISHING)
	{
		producer_register(s, in);
		settings_send(s, in, NULL);
		msg_free(&t->base);
		return;
	}
	if (in->pub_sub_case != APACHE__ROCKETMQ__V2__SETTINGS__PUB_SUB_SUBSCRIPTION || sub == NULL ||
		sub->group == NULL || sub->group->name[0] == '\0' || sub->n_subscriptions == 0)
	{
		settings_send(s, in, NULL);
		msg_free(&t->base);
		return;
	}
	/* a newer Settings replaces one still waiting: that one answers no one */
	if (s->req)
		((Req *) s->req)->s = NULL;
	r = req_new(s, RPC_TELEMETRY, sub->group->resource_namespace, &t->base);
	subscription_announced(s, r->db, sub);
	topics = json_object_new_array();
	for (size_t i = 0; i < sub->n_subscriptions; i++)
		if (sub->subscriptions[i]->topic)
			json_object_array_add(topics, json_object_new_string(sub->subscriptions[i]->topic->name));
	req_param(r, 0, sub->group->name);
	req_param(r, 1, json_object_to_json_string_ext(topics, JSON_C_TO_STRING_PLAIN));
	json_object_put(topics);
	if (!pg_run(r->db, r->role,
			"SELECT o.ordered, o.max_retries,"
			" (SELECT array_agg((extract(epoch FROM d) * 1000)::bigint ORDER BY n)"
			"  FROM unnest(o.retry_delays) WITH ORDINALITY u(d, n))"
			" FROM jsonb_array_elements_text($2::jsonb) WITH ORDINALITY t(topic, n)"
			" JOIN mq.group_options o ON o.queue = t.topic AND o.group_name = $1"
			" ORDER BY t.n LIMIT 1",
				2, r->params, r->lengths, r->formats, 0, settings_done, r))
	{
		/* no session to ask on (--max-sessions): RocketMQ's defaults */
		settings_send(s, in, NULL);
		req_free(r);
	}
}

/* ---------------------------------------------------------------------
 * Dispatch
 * --------------------------------------------------------------------- */

/* The request's headers are in: which RPC, and may its client call it? */
static void
rpc_begin(Stream *s)
{
	const char *method;
	size_t		i;
	int			code;
	char		why[256];

	s->rpc = RPC_NONE;
	if (strncmp(s->path, SERVICE_PREFIX, strlen(SERVICE_PREFIX)) != 0)
	{
		stream_finish(s, 12, "unknown service");
		s->rpc = RPC_DONE;
		return;
	}
	method = s->path + strlen(SERVICE_PREFIX);
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(methods[i].method, method) == 0)
		{
			s->rpc = methods[i].rpc;
			break;
		}
	if (s->rpc == RPC_NONE)
	{
		/* not a method of MessagingService: gRPC's UNIMPLEMENTED */
		stream_finish(s, 12, "unknown method");
		s->rpc = RPC_DONE;
		return;
	}
	s->role = auth_role(s->authorization, s->date_time, &code, why, sizeof(why));
	if (s->role == NULL)
	{
		if (rmq_verbose)
			logmsg("%s refused: %s", s->path, why);
		if (s->rpc == RPC_TELEMETRY)
		{
			PB(TelemetryCommand) out = APACHE__ROCKETMQ__V2__TELEMETRY_COMMAND__INIT;
			PB(Status) st = APACHE__ROCKETMQ__V2__STATUS__INIT;

			st.code = code;
			st.message = why;
			out.status = &st;
			stream_send_message(s, &out.base);
			stream_finish(s, 0, why);
			s->rpc = RPC_DONE;
		}
		else if (s->rpc == RPC_RECEIVE)
			receive_status(s, code, why);
		else
			answer_status(s, code, why);
		return;
	}
	renew_seen(s->client_id);
	if (s->rpc == RPC_NOT_IMPLEMENTED)
	{
		char		msg[200];

		snprintf(msg, sizeof(msg), "%s is not implemented by mq-rocketmq (docs/rocketmq.md)", method);
		if (strcmp(method, "PullMessage") == 0)
			receive_status(s, CODE(NOT_IMPLEMENTED), msg);
		else
			answer_status(s, CODE(NOT_IMPLEMENTED), msg);
	}
}

/* One request message of the stream */
static void
rpc_message(Stream *s, const uint8_t *data, size_t len)
{
	ProtobufCMessage *m = NULL;
	const ProtobufCMessageDescriptor *d = NULL;

	switch (s->rpc)
	{
		case RPC_QUERY_ROUTE:
			d = &apache__rocketmq__v2__query_route_request__descriptor;
			break;
		case RPC_QUERY_ASSIGNMENT:
			d = &apache__rocketmq__v2__query_assignment_request__descriptor;
			break;
		case RPC_FORWARD_DLQ:
			d = &apache__rocketmq__v2__forward_message_to_dead_letter_queue_request__descriptor;
			break;
		case RPC_END_TRANSACTION:
			d = &apache__rocketmq__v2__end_transaction_request__descriptor;
			break;
		case RPC_SEND:
			d = &apache__rocketmq__v2__send_message_request__descriptor;
			break;
		case RPC_RECEIVE:
			d = &apache__rocketmq__v2__receive_message_request__descriptor;
			break;
		case RPC_ACK:
			d = &apache__rocketmq__v2__ack_message_request__descriptor;
			break;
		case RPC_CHANGE_INVISIBLE:
			d = &apache__rocketmq__v2__change_invisible_duration_request__descriptor;
			break;
		case RPC_TELEMETRY:
			d = &apache__rocketmq__v2__telemetry_command__descriptor;
			break;
		case RPC_NOTIFY_TERMINATION:
			/* its deliveries are not renewed any more */
			if (s->client_id[0])
				renew_forget_client(s->client_id);
			answer_status(s, CODE(OK), "OK");
			return;
		case RPC_HEARTBEAT:
			answer_status(s, CODE(OK), "OK");
			return;
		default:
			/* answered already, or a second message of a unary RPC */
			return;
	}
	m = msg_unpack(d, len, data);
	if (m == NULL)
	{
		if (s->rpc == RPC_RECEIVE)
			receive_status(s, CODE(BAD_REQUEST), "malformed request message");
		else if (s->rpc == RPC_TELEMETRY)
			stream_finish(s, 3, "malformed TelemetryCommand");
		else
			answer_status(s, CODE(BAD_REQUEST), "malformed request message");
		s->rpc = RPC_DONE;
		return;
	}
	switch (s->rpc)
	{
		case RPC_QUERY_ROUTE:
			s->rpc = RPC_DONE;
			query_route(s, ((PB(QueryRouteRequest) *) m)->topic, m, RPC_QUERY_ROUTE);
			break;
		case RPC_QUERY_ASSIGNMENT:
			s->rpc = RPC_DONE;
			query_route(s, ((PB(QueryAssignmentRequest) *) m)->topic, m, RPC_QUERY_ASSIGNMENT);
			break;
		case RPC_FORWARD_DLQ:
			s->rpc = RPC_DONE;
			forward_dlq(s, (PB(ForwardMessageToDeadLetterQueueRequest) *) m);
			break;
		case RPC_END_TRANSACTION:
			s->rpc = RPC_DONE;
			end_transaction(s, (PB(EndTransactionRequest) *) m);
			break;
		case RPC_SEND:
			s->rpc = RPC_DONE;
			send_message(s, (PB(SendMessageRequest) *) m);
			break;
		case RPC_RECEIVE:
			s->rpc = RPC_DONE;
			receive_message(s, (PB(ReceiveMessageRequest) *) m);
			break;
		case RPC_ACK:
			s->rpc = RPC_DONE;
			ack_message(s, (PB(AckMessageRequest) *) m);
			break;
		case RPC_CHANGE_INVISIBLE:
			s->rpc = RPC_DONE;
			change_invisible(s, (PB(ChangeInvisibleDurationRequest) *) m);
			break;
		case RPC_TELEMETRY:
			{
				PB(TelemetryCommand) * t = (PB(TelemetryCommand) *) m;

				if (t->command_case == APACHE__ROCKETMQ__V2__TELEMETRY_COMMAND__COMMAND_SETTINGS &&
					t->settings)
					telemetry_settings(s, t);
				else
					msg_free(m);
			}
			break;
	}
}

/* The client half-closed the stream */
static void
rpc_end_of_input(Stream *s)
{
	if (s->rpc == RPC_TELEMETRY)
		stream_finish(s, 0, NULL);
	else if (s->rpc != RPC_DONE)
		/* a unary RPC without its request message */
		stream_finish(s, 13, "no request message");
	s->rpc = RPC_DONE;
}

/* The stream is gone: its pending work finishes for no one */
static void
rpc_stream_gone(Stream *s)
{
	if (s->producer)
		producer_unregister(s);
	if (s->req)
	{
		((Req *) s->req)->s = NULL;
		s->req = NULL;
	}
}

/* h2.c's streams are RPCs: what it reports of them comes here */
static const StreamHandlers rpc_handlers = {
	.begin = rpc_begin,
	.message = rpc_message,
	.end_of_input = rpc_end_of_input,
	.gone = rpc_stream_gone,
};

/* The gateway starts: the handlers of h2.c's streams, the check-back timer */
void
rpc_start(void)
{
	struct timeval tv = {rmq_tx_check, 0};
	struct timeval rtv = {rmq_push_invisible >= 24 ? rmq_push_invisible / 12 : 0,
	rmq_push_invisible >= 24 ? 0 : 500000};

	h2_set_handlers(&rpc_handlers);
	/* renewals: a few checks per third of the lease */
	renew_timer = event_new(rmq_base, -1, EV_PERSIST, renew_tick, NULL);
	event_add(renew_timer, &rtv);
	if (rmq_tx_check <= 0)
		return;
	check_timer = event_new(rmq_base, -1, EV_PERSIST, check_tick, NULL);
	event_add(check_timer, &tv);
}
