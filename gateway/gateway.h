/*-------------------------------------------------------------------------
 *
 * gateway.h
 *	  The interface of mq-amqp's files to each other (docs/amqp.md): the
 *	  objects of the gateway and what one file calls in another.  amqp.h is
 *	  the wire format's (codec.c).
 *
 * Conn: one AMQP connection (a client socket).  Chan: one AMQP channel, with
 * a PostgreSQL session for declares, publishes, gets and acks (taken from
 * the pool of idle sessions, or connected, when an operation needs one;
 * given back clean when the channel holds nothing in it, and at its
 * close), run one statement at a time from the channel's queue of
 * operations.  Consumer: one
 * basic.consume, with its own PostgreSQL session that long-polls mq.consume;
 * its deliveries belong to that session, and the channel acks them by
 * receipt.  PgSess: an asynchronous libpq connection driven by libevent.
 *
 * The files, from the top down: each calls only files below it, though a
 * callback may be named below the file that defines it (on_accept).  A file
 * reports events to one above it only through callbacks that one registers:
 * a statement's pg_result_cb, channel_open.c's ChanSessionEvents (from
 * operations.c), a Consumer's on_polled and on_consume_done (set by
 * operations.c):
 *
 * main.c				start-up: settings, listening socket, signals, the loop
 * connection.c			a client connection: frames in, the connection class
 * methods.c			an open channel's methods, queued as its operations
 * content.c			a publish's content header and body
 * operations.c			a channel's operations run in order, and their replies
 * consumer_session.c	a consumer's own session: set up, its polls' deliveries
 * teardown.c			exceptions; channels and connections closed and freed
 * channel_open.c		a channel's sessions opened and set up
 * channel.c			a channel's lists: operations, unacked deliveries
 * consumer.c			consumers: credit, turns on a queue, polls, consume-ok,
 *						removal
 * registry.c			the connections, the queues the gateway keeps state of
 * control.c			a connection's control session (handshake, cleanups)
 * logins.c			the bounds on logins in progress, and the logins waiting
 * delivery.c			a delivered row as AMQP, and its delivery tag
 * publish.c			a batch of publishes as one statement
 * frames.c				frames to the client, the texts of reply codes
 * sql.c				SQLSTATEs, results, RabbitMQ's values in SQL's terms
 * config.c				the settings, and the log
 * pgsess.c				asynchronous libpq sessions on libevent
 * codec.c				the wire format (amqp.h): fields, field tables as JSON
 *
 * Beside them, the management HTTP API (docs/management.md), on the same
 * event loop: it reads the registry (connections, channels, consumers) and
 * uses pgsess.c and sql.c; nothing of the AMQP side calls it but main.c:
 *
 * http_server.c		evhttp: requests, basic auth onto roles, sessions, errors,
 *						the static files of the web UI
 * http_rabbit.c		RabbitMQ's paths (/api/queues, /api/exchanges, ...)
 * http_users.c			its users, permissions, policies and parameters
 * http_health.c			its health checks and node-wide paths (cluster-name, ...)
 * http_list.c			sort, columns and paging of the listings
 * http_qext.c			queue_ext's own paths (/api/queue-ext/...)
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_GATEWAY_H
#define MQ_GATEWAY_H

#include <regex.h>
#include <stdio.h>
#include <time.h>

#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <libpq-fe.h>

#include "amqp.h"

#define GW_VERSION "0.2"

/* the settings (config.c) */
typedef struct GwConfig
{
	char		listen[300];
	char	   *dbname;
	int			heartbeat;		/* seconds proposed in connection.tune */
	uint32_t	frame_max;
	int			channel_max;
	char		lease[64];		/* lease of a delivery: RabbitMQ has none */
	int			poll_wait;		/* seconds a consumer's long poll waits */
	int			batch_max;		/* publishes per statement (and commit) */
	size_t		max_message;
	size_t		out_high;		/* client output held before consumers pause */
	size_t		pending_high;	/* publish bytes waiting before reading stops */
	bool		allow_passwordless;	/* logins the server did not check a
									 * password of (development only) */
	char	   *guest_role;		/* guest/guest from loopback logs in as this
								 * role; NULL: no guest */
	int			max_logins;		/* handshakes past start-ok at once */
	int			max_logins_per_addr;	/* the same, per client address */
	int			handshake_timeout;	/* seconds from accept to open-ok */
	char		http_listen[300];	/* the management API's HOST:PORT, "off" */
	char	   *http_www;		/* its static files; NULL: the installed ones */
	bool		http_listen_set;	/* http_listen given, not the default */
} GwConfig;

typedef void (*pg_result_cb) (void *arg, PGresult *res);
typedef void (*pg_connect_cb) (void *arg, bool ok, const char *error);

typedef struct PgSess
{
	PGconn	   *pg;
	struct event *rev;			/* read readiness (persistent) */
	struct event *wev;			/* write readiness while flushing / connecting */
	struct event *tev;			/* connect timeout */
	bool		connecting;
	bool		busy;
	bool		closed;			/* pg_close called: free after the callback */
	bool		in_cb;
	bool		send_failed;
	PGresult   *res;			/* the result being gathered */
	pg_result_cb cb;
	void	   *cbarg;
	pg_connect_cb on_connect;
	void	   *arg;
	void		(*on_lost) (void *arg);	/* the server went away while idle */
	bool		draining;		/* closed while busy: ends once its statement has */
	struct event *dev;			/* ... or when this gives up waiting */
	/* an idle session in the pool (pg_pool_put), NULL key: not pooled */
	char	   *pool_key;
	struct event *pool_ev;		/* closes it after POOL_IDLE_SECS unused */
	struct PgSess *pool_next;
	const void *last_user;		/* who gave it back (pg_pool_take's hint) */
} PgSess;

typedef struct Conn Conn;
typedef struct Chan Chan;
typedef struct Consumer Consumer;
typedef struct Ctl Ctl;	/* control.c */

typedef struct Unacked
{
	uint64_t	tag;
	char	   *queue;
	char	   *receipt;
	Consumer   *cons;			/* NULL: a basic.get */
	bool		early;			/* its ack came: credited before it is stored */
	struct Unacked *next;
} Unacked;

typedef struct PubMsg
{
	char		exchange[256];
	char		rk[256];
	bool		mandatory;
	uint64_t	seq;			/* publisher confirm sequence, 0 without */
	uint64_t	body_size;
	Buf			body;
	Buf			props;			/* the content header's properties, as sent */
	char	   *headers_json;	/* what queue_ext stores */
	int			priority;		/* -1: none */
	char		expiration[64];	/* interval text, "" none */
	char		delay[64];
	char	   *content_type;
	char	   *correlation_id;
	char	   *reply_to;
	Conn	   *owner;			/* counted in its pending bytes */
	struct PubMsg *next;
} PubMsg;

enum OpKind
{
	OP_EXCHANGE_DECLARE, OP_EXCHANGE_DELETE, OP_QUEUE_DECLARE, OP_QUEUE_BIND,
	OP_QUEUE_UNBIND, OP_QUEUE_PURGE, OP_QUEUE_DELETE, OP_CONSUME, OP_GET,
	OP_SETTLE, OP_PUBLISH, OP_TX_SELECT, OP_TX_COMMIT, OP_TX_ROLLBACK,
	OP_REPLY, OP_RECOVER, OP_ERROR, OP_CLOSE
};

enum SettleKind
{
	SETTLE_ACK, SETTLE_NACK, SETTLE_REJECT
};

typedef struct Op
{
	enum OpKind kind;
	uint16_t	cls;
	uint16_t	meth;
	char		s1[256];		/* exchange / queue */
	char		s2[256];		/* type / exchange */
	char		s3[256];		/* routing key / consumer tag */
	bool		passive,
				durable,
				exclusive,
				auto_delete,
				nowait,
				if_unused,
				if_empty,
				no_ack,
				requeue;
	json_object *args;
	/* OP_SETTLE */
	enum SettleKind settle;
	uint64_t	tag;
	bool		multiple;
	bool		taken;			/* entries taken already (a merged batch) */
	int			retries;		/* after deadlocks */
	int64_t		expires;		/* queue.declare: x-expires (ms), 0: none */
	int			stage;			/* queue.declare: 1 once declared, counting */
	bool		existed;		/* queue.declare: the queue was there before */
	/* OP_ERROR: a channel exception in its turn */
	int			code;
	Unacked    *entries;
	/* OP_PUBLISH: the messages of the batch */
	PubMsg	   *msgs;
	/* OP_REPLY: a prepared reply method (no SQL) */
	Buf			reply;
	struct Op  *next;
} Op;

struct Consumer
{
	Chan	   *ch;
	char		tag[256];
	char		queue[256];
	bool		no_ack;
	bool		exclusive;
	PgSess	   *pg;
	bool		ready;
	bool		ok_pending;		/* consume-ok (and the basic.consume op) wait
								 * for its session: cons_session_ready */
	bool		ok_nowait;
	bool		first_poll;		/* the next poll does not wait (the one
								 * consume-ok waits for) */
	bool		polling;
	bool		cancelling;		/* basic.cancel: the poll is being cancelled */
	bool		cancel_nowait;
	bool		cancelled;		/* cancel-ok sent; kept while it has unacked */
	bool		woken;			/* its running poll was asked to return */
	int			prefetch;
	int			unacked;
	int			credited;		/* of those, acked by the client, not yet stored */
	int			asked;			/* messages asked by the running poll */
	PGresult   *held;			/* a poll's rows that came while the channel's
								 * flow was off: delivered when it is on again */
	/* a stream consumer reads through a consumer group of its own */
	bool		stream;
	char		group[64];
	json_object *offset_spec;	/* x-stream-offset */
	bool		in_turn;		/* waiting for its queue's turn to poll */
	Consumer   *turn_next;
	Consumer   *next;
	/*
	 * Set by the operations engine that makes the consumer, for the layers
	 * below to report to the ones above: a poll's result
	 * (consumer_session.c's cons_polled), and the channel's basic.consume
	 * done once consume-ok is sent (operations.c's consume_done)
	 */
	pg_result_cb on_polled;
	void		(*on_consume_done) (Chan *ch);
};

enum ChanState
{
	CH_OPEN, CH_CLOSING
};

struct Chan
{
	Conn	   *conn;
	uint16_t	id;
	enum ChanState state;
	PgSess	   *pg;
	bool		pg_ready;
	bool		pg_counted;		/* pg connecting, counted in sess_connecting */
	bool		pg_waiting;		/* waiting for a session (channel_open.c) */
	Chan	   *wait_next;
	PgSess	   *getpg;			/* basic.get of a tx-mode channel */
	bool		getpg_ready;
	Op		   *ops,
			   *ops_tail;
	bool		op_running;
	uint64_t	next_tag;
	Unacked    *unacked,
			   *unacked_tail;
	int			n_unacked;
	int			n_asked;
	Unacked    *tx_settled;		/* settled in the open transaction */
	Consumer   *consumers;
	bool		confirm;
	uint64_t	pub_seq;
	bool		tx;
	bool		flow;
	bool		client_closing;	/* channel.close from the client queued */
	bool		discarding;		/* an exception is queued: drop what comes */
	int			prefetch_consumer;
	int			prefetch_global;
	char		last_queue[256];
	/* content being received */
	int			content;		/* 0 none, 1 header expected, 2 body */
	PubMsg	   *pub;
};

enum ConnState
{
	C_HEADER, C_START_SENT, C_LOGIN_WAIT, C_AUTHING, C_TUNE_SENT, C_TUNED, C_OPENING, C_OPEN, C_CLOSING
};

struct Conn
{
	struct bufferevent *bev;
	enum ConnState state;
	bool		dead;
	bool		opened;			/* connection.open-ok sent */
	bool		client_closing;	/* connection.close from the client */
	bool		finishing;		/* the socket goes once its output is written */
	bool		exclusive_dropped;	/* the close deleted its exclusive queues */
	bool		exclusive_waiting;	/* ... and waits for the deletions' end */
	bool		linger;			/* a close handshake is done: the socket is
								 * read and discarded until the client closes */
	size_t		pending;		/* bytes of publishes not yet done */
	bool		paused;			/* reading stopped until they are */
	char		peer[64];
	char		addr[64];		/* the peer's address without its port */
	char		local[64];		/* the gateway's address and port it came to */
	char		close_reason[700];	/* why it ends, for the log ("": not yet) */
	bool		close_warn;		/* ... logged as a warning, not at info */
	bool		loopback;		/* the peer is 127.0.0.0/8 or ::1 */
	bool		in_login;		/* counted in the logins in progress */
	Conn	   *login_next;		/* logging in, or waiting for a login slot: */
	Conn	  **login_pprev;	/* its list (logins.c) */
	void		(*login_start) (Conn *c);	/* starts its login (login_begin) */
	bool		guest;			/* guest mapped to --guest-role */
	char		user[256];		/* the AMQP login */
	char		pguser[256];	/* the PostgreSQL role its sessions log in as */
	char	   *password;		/* NULL: none (the guest mapping) */
	char		vhost[256];
	char		db[256];		/* "" : --dbname's */
	uint32_t	frame_max;
	uint16_t	channel_max;
	uint16_t	heartbeat;
	bool		cancel_notify;
	Chan	  **chans;
	int			sess_connecting;	/* channel sessions connecting */
	Ctl		   *ctl;
	time_t		last_recv;
	struct event *hb;
	struct event *close_timer;
	struct event *handshake_timer;	/* open within --handshake-timeout */
	Conn	   *next;
};


/* queues with state the gateway keeps: ownership, consumers */
typedef struct Qreg
{
	char		db[256];
	char		name[256];
	Conn	   *owner;			/* exclusive queue's connection */
	bool		auto_delete;
	bool		known;			/* declared here: auto_delete, owner and
								 * expires are as declared (queue_equivalent) */
	json_object *ignored_args;	/* and the RabbitMQ x-arguments it ignores */
	int			consumers;
	bool		had_consumer;
	Consumer   *exclusive_consumer;
	int64_t		expires;		/* x-expires (ms), 0: none */
	struct event *expire_ev;	/* fires when unused for that long */
	char		expire_user[256];	/* who deletes it then: the declarer */
	char	   *expire_password;
	/* several consumers here take turns to poll (round-robin) */
	Consumer   *poller;			/* whose poll runs, NULL: none */
	Consumer   *turn_head,
			   *turn_tail;		/* waiting for their turn, in order */
	int			batch;			/* most rows one turn takes (grows on backlog) */
	struct Qreg *next;
} Qreg;

/* the columns every delivery query selects, binary results */
#define DELIVERY_COLUMNS \
	"msg_id, queue, exchange, routing_key, body, headers::text, redelivered, " \
	"priority, properties::text, receipt, \"offset\""
enum
{
	COL_MSG_ID, COL_QUEUE, COL_EXCHANGE, COL_RK, COL_BODY, COL_HEADERS, COL_REDELIVERED,
	COL_PRIORITY, COL_PROPS, COL_RECEIPT, COL_OFFSET, COL_READY
};

/* main.c */
extern struct event_base *gw_base;
extern PQconninfoOption *gw_conninfo;

/* connection.c */
extern void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
					  int salen, void *arg);
/* logins.c: the bounds on logins in progress */
extern void login_begin(Conn *c, void (*start) (Conn *c));
extern void login_done(Conn *c);

/* methods.c */
extern void chan_method(Conn *c, Chan *ch, uint16_t cls, uint16_t meth, Rd *r);

/* content.c */
extern bool parse_content_header(Chan *ch, PubMsg *m, const uint8_t *p, size_t len, char *err,
								 size_t errlen);
extern void chan_error_queued(Chan *ch, int code, const char *text, int cls, int meth);
extern void publish_complete(Chan *ch);

/* channel_open.c */

/*
 * What channel_open.c reports of a channel's sessions to the operations
 * engine above it, which registers them (operations_start) before the
 * first connection: the channel's session is ready (its operations may
 * run), its basic.get session is set up (the get waiting for it runs), a
 * session could not be had (text says why) or not set up (res), a session
 * was lost (its on_lost: arg is the channel)
 */
typedef struct ChanSessionEvents
{
	void		(*ready) (Chan *ch);
	void		(*get_ready) (Chan *ch);
	void		(*connect_failed) (Chan *ch, const char *text);
	void		(*setup_failed) (Chan *ch, PGresult *res);
	void		(*lost) (void *arg);
} ChanSessionEvents;

extern void chan_session_events(const ChanSessionEvents *events);
extern bool chan_session(Chan *ch);
extern void chan_session_pool(Chan *ch);
extern void chan_session_idle(Chan *ch);
extern void chan_session_drop(Chan *ch);
extern void getpg_connected(void *arg, bool ok, const char *error);
extern Chan *chan_open(Conn *c, uint16_t id);

/* operations.c */
extern void run_op(Chan *ch, Op *op);
extern void chan_pump(Chan *ch);
extern void consume_done(Chan *ch);
extern void operations_start(void);

/* consumer_session.c */
extern void cons_send_cancel_ok(Consumer *cons);
extern void cons_polled(void *arg, PGresult *res);
extern void cons_connected(void *arg, bool ok, const char *error);
extern void cons_lost(void *arg);

/* teardown.c */
extern void chan_lost(void *arg);
extern void chan_sql_error(Chan *ch, PGresult *res, Op *op);
extern void chan_release(Chan *ch);
extern void chan_free(Chan *ch);
extern void chan_error(Chan *ch, int code, const char *text, int cls, int meth);
extern void close_timeout(evutil_socket_t fd, short what, void *arg);
extern void conn_error(Conn *c, int code, const char *text, int cls, int meth);
extern void conn_close_finish(Conn *c);
extern void conn_destroy(Conn *c);
extern void conn_reason(Conn *c, bool warn, const char *fmt,...)
			__attribute__((format(gnu_printf, 3, 4)));

/* channel.c */
extern void op_free(Op *op);
extern void pub_free(PubMsg *m);
extern Op *op_new(Chan *ch, enum OpKind kind, uint16_t cls, uint16_t meth);
extern void unacked_restore(Chan *ch, Unacked *list);
extern void settle_done_entries(Chan *ch, Unacked *e);
extern bool ack_tag_known(Chan *ch, uint64_t tag);
extern Unacked *take_entries(Chan *ch, uint64_t tag, bool multiple);

/* consumer.c */
extern bool cons_consume_ok(Consumer *cons);
extern void turn_pass(Qreg *q);
extern void turn_start(Consumer *newcons);
extern void cons_poll(Consumer *cons);
extern void cons_wake(Consumer *cons);
extern void cons_deliver_rows(Consumer *cons, PGresult *res);
extern void cons_deliver_held(Consumer *cons);
extern void cons_remove(Consumer *cons, bool notify, bool force);
extern void cancel_queue_consumers(const char *db, const char *queue);
extern void conn_kick(Conn *c);
extern void chan_kick(Chan *ch);

/* registry.c */
extern Conn *conns;
extern Qreg *qregs;
extern const char *conn_db(Conn *c);
extern Qreg *qreg_find(const char *db, const char *name, bool create);
extern void qreg_maybe_drop(Qreg *q);
extern void qreg_expires_off(Qreg *q);
extern void qreg_touch(Qreg *q);
extern bool qreg_locked(Conn *c, const char *name);
extern void qreg_expired(evutil_socket_t fd, short what, void *arg);

/* control.c */
extern void ctl_job(Conn *c, const char *sql, const char *param, const char *param2);
extern bool ctl_job_then(Conn *c, const char *sql, void (*done) (Conn *c, int chan), int chan);
extern Ctl *ctl_new(Conn *c, const char *dbname,
					void (*then) (Conn *c, bool ok, const char *error));
extern void ctl_orphan(Ctl *ctl);
extern PGconn *ctl_pgconn(Ctl *ctl);
extern void ctl_oneshot(const char *user, const char *password, const char *dbname,
						const char *sql, const char *param);

/* delivery.c */
extern int64_t col_i64(PGresult *r, int row, int col);
extern uint64_t track_delivery(Chan *ch, PGresult *r, int row, Consumer *cons, bool no_ack);
extern void send_row_content(Chan *ch, PGresult *r, int row);

/* publish.c */
extern const char publish_fn[];
extern void publish_send(PgSess *pg, PubMsg *msgs, pg_result_cb cb, void *arg);

/* frames.c */
extern Buf	out;				/* the frame being built (one at a time) */
extern void frame_begin(uint8_t type, uint16_t ch);
extern void frame_send(Conn *c);
extern void method_begin(uint16_t ch, uint16_t cls, uint16_t meth);
extern void send_simple(Conn *c, uint16_t ch, uint16_t cls, uint16_t meth);
extern void send_content(Conn *c, uint16_t ch, const Buf *props, const uint8_t *body,
						 size_t len);
extern void reply_text(char *buf, size_t len, int code, const char *text);
extern void reply_text_hint(char *buf, size_t len, int code, const char *text,
							const char *hint);

/* sql.c */
extern int	sqlstate_code(const char *st);
extern bool res_ok(PGresult *res);
extern const char *res_state(PGresult *res);
extern const char *res_message(PGresult *res);
extern const char *res_hint(PGresult *res);
extern void text_array(Buf *b, char **items, int n);
extern bool rabbit_duration(const char *s, bool zero_ok, char *out, size_t outlen);
extern char *queue_arguments(json_object *args, const char **type, char *err, size_t errlen);

/* config.c */
extern GwConfig cfg;
#define GW_LOG_WARNING	0
#define GW_LOG_INFO		1
#define GW_LOG_DEBUG	2
extern int	gw_log_level;
extern bool gw_verbose;
extern void logmsg(const char *fmt,...) __attribute__((format(gnu_printf, 1, 2)));
extern void loginfo(const char *fmt,...) __attribute__((format(gnu_printf, 1, 2)));
extern void lognote(const char *fmt,...) __attribute__((format(gnu_printf, 1, 2)));
extern void logdebug(const char *fmt,...) __attribute__((format(gnu_printf, 1, 2)));
extern void usage(FILE *f);
extern bool set_option(const char *key, const char *val);
extern void read_config(const char *path);

/* http_server.c, http_rabbit.c, http_qext.c: the management API */
typedef struct HttpReq HttpReq;
typedef void (*http_result_cb) (HttpReq *r, PGresult *res);

struct HttpReq
{
	struct evhttp_request *ev;
	int			method;			/* EVHTTP_REQ_GET, ... */
	char		user[256];		/* the basic-auth login */
	char		pguser[256];	/* the role its session logs in as */
	char	   *password;		/* NULL: none (the guest mapping) */
	bool		loopback;		/* from 127.0.0.0/8 or ::1 */
	char		addr[64];		/* the client's address */
	bool		in_login;		/* its new session is connecting */
	char		vhost[256];		/* decoded; the session's database */
	char	   *seg[12];		/* the path's segments after /api, decoded */
	int			nseg;
	json_object *body;			/* the request's JSON body, NULL: none */
	struct evkeyvalq *query;	/* the query string's parameters */
	PgSess	   *pg;
	bool		pg_ready;
	bool		superuser;		/* the session's role is one */
	char	   *sql;			/* the statement waiting for the session */
	int			nparams;
	char	   *params[16];
	http_result_cb then;
	/* a handler's own state between its statements */
	json_object *acc;
	char		scratch[512];
	int			step;
	HttpReq    *next;
};

/*
 * The paths' handlers, given by main.c: http_server.c parses, authenticates
 * and replies, and does not know them (they use it, it does not use them).
 */
typedef void (*http_handler) (HttpReq *r);
extern bool http_start(http_handler rabbit_paths, http_handler qext_paths);
extern void http_stop(void);
extern void http_sql(HttpReq *r, const char *sql, int n, const char *const *params,
					 http_result_cb then);
extern void http_reply_json(HttpReq *r, int code, json_object *o);
extern void http_reply_text(HttpReq *r, int code, const char *ctype, const char *body);
extern void http_reply_empty(HttpReq *r, int code);
extern void http_reply_buf(HttpReq *r, int code, Buf *b);
extern void http_json_str(Buf *b, const char *s);
extern void http_json_double(Buf *b, double v);
extern void http_error(HttpReq *r, int code, const char *error, const char *reason);
extern void http_not_found(HttpReq *r);
extern void http_bad_request(HttpReq *r, const char *reason);
extern void http_method_not_allowed(HttpReq *r, const char *allow);
extern void http_sql_error(HttpReq *r, PGresult *res);
extern bool http_sql_ok(HttpReq *r, PGresult *res);
extern const char *http_qarg(HttpReq *r, const char *key);
extern int	http_jbool(json_object *o, const char *key, int dflt);
extern long long http_jint(json_object *o, const char *key, long long dflt, bool *bad);
extern const char *http_vhost_name(HttpReq *r);
extern json_object *http_parse_result(HttpReq *r, PGresult *res);
extern double http_rate(const char *vhost, const char *obj, const char *field, double value);
extern void http_rabbit(HttpReq *r);
extern void http_qext(HttpReq *r);

/* http_list.c: sort, columns and paging of the listings */
typedef struct HttpPage
{
	long long	page;			/* from 1; 0: not paged */
	long long	size;
	const char *filter;			/* ?name=, NULL: none */
	bool		have_re;		/* filter is the compiled re */
	regex_t		re;
} HttpPage;
extern bool http_page_begin(HttpReq *r, HttpPage *pg);
extern bool http_page_keeps(const HttpPage *pg, const char *name);
extern bool http_page_range(HttpReq *r, const HttpPage *pg, int matched, int *first, int *last);
extern void http_page_head(Buf *b, const HttpPage *pg, int matched, int first, int last);
extern void http_page_tail(Buf *b, const HttpPage *pg, int matched, int total);
extern void http_page_end(HttpPage *pg);
extern void http_reply_list(HttpReq *r, json_object *list, bool pageable);
extern void http_reply_empty_list(HttpReq *r, PGresult *res);
extern void http_forget_login(HttpReq *r, const char *role);

/* http_users.c: users, permissions, policies, parameters */
extern bool http_users(HttpReq *r);
extern void http_whoami(HttpReq *r);

/* http_health.c: health checks and node-wide paths */
extern bool http_health(HttpReq *r);
extern const char *http_node_name(void);

/* pgsess.c */
extern PgSess *pg_connect(const char *user, const char *password, const char *dbname,
						  bool check_client, pg_connect_cb cb, void *arg);
extern void pg_send(PgSess *s, const char *sql, int n, const Oid *types,
					const char *const *vals, const int *lens, const int *fmts,
					int result_format, pg_result_cb cb, void *arg);
extern PGconn *pg_connect_blocking(const char *user, const char *password);
extern void pg_close(PgSess *s);
extern int	pg_sessions(void);
extern void pg_cancel(PgSess *s);
extern void pg_pool_put(PgSess *s, const char *key);
extern PgSess *pg_pool_take(const char *key, const void *hint);
extern void pg_pool_drop(const char *prefix);

#endif
