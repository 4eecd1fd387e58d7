/*-------------------------------------------------------------------------
 *
 * rmq.h
 *	  mq-rocketmq, the RocketMQ 5 gRPC gateway of queue_ext (docs/rocketmq.md).
 *
 * The files, from the top down, each calling only files below it:
 *	main.c		start-up: options, the listening socket, signals, the loop
 *	rpc.c		MessagingService's RPCs onto queue_ext's SQL API
 *	h2.c		HTTP/2 (libnghttp2) connections and gRPC framing of their streams;
 *				a stream's events go up to rpc.c through the StreamHandlers
 *				that rpc.c registers
 *	tls.c		TLS of the listener (--tls-cert): OpenSSL's context, a
 *				connection's TLS bufferevent
 *	pg.c		asynchronous libpq sessions, pooled per (database, role)
 *	check.c		RocketMQ's rules for names and messages (what a Proxy refuses)
 *	auth.c		the credentials file, request signatures and their roles
 *	config.c	the settings and the log
 *
 * Protocol messages are rocketmq.proto's, compiled by protoc-c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RMQ_H
#define RMQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <event2/event.h>
#include <libpq-fe.h>
#include <nghttp2/nghttp2.h>

#include "rocketmq.pb-c.h"

/*
 * the jsonb header in which rpc.c keeps what a RocketMQ message carries
 * beyond queue_ext's columns (docs/rocketmq.md); no user property may take
 * its name (check.c)
 */
#define RMQ_HEADER "x-rocketmq"

/* the protocol's long names */
#define PB(x) Apache__Rocketmq__V2__##x
#define PBFN(x) apache__rocketmq__v2__##x
#define CODE(x) APACHE__ROCKETMQ__V2__CODE__##x

/* a growing byte buffer */
typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

extern void buf_add(Buf *b, const void *p, size_t n);
extern void buf_free(Buf *b);
extern void str_copy(char *dst, size_t size, const char *src);

/* config.c: the settings (set by main.c) and the log */
extern struct event_base *rmq_base;
extern PQconninfoOption *rmq_conninfo;
extern const char *rmq_default_db;
extern const char *rmq_advertise_host;
extern int	rmq_advertise_port;
extern int	rmq_max_sessions;
extern int	rmq_max_body;
extern const char *rmq_producer_group;
extern int	rmq_tx_check;
extern int	rmq_push_invisible;
extern bool rmq_verbose;
extern const char *rmq_insecure_role;
extern int	rmq_max_clock_skew;
extern int	rmq_max_connections;
extern FILE *open_private_file(const char *path, const char *what);
extern void logmsg(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void die(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

/*
 * check.c: 0 when a name or message keeps RocketMQ's rules, else the status
 * code, with why set to the client's message (a message: of a SendMessage
 * whose first message names topic)
 */
extern int	rmq_check_topic(const char *name, const char **why);
extern int	rmq_check_group(const char *name, const char **why);
extern int	rmq_check_message(const PB(Message) * m, const char *topic, const char **why);

/* auth.c: the credentials file (exits on a bad one) */
extern void auth_read_credentials(const char *path);

/*
 * Who a request acts as: the PostgreSQL role its access key maps to, or
 * NULL with why filled in (a status code and message for the client)
 */
extern const char *auth_role(const char *authorization, const char *date_time,
							 int *code, char *why, size_t whylen);

/* h2.c: an HTTP/2 stream carrying one RPC */
typedef struct Conn Conn;
typedef struct Stream
{
	Conn	   *conn;
	int32_t		id;
	char		path[128];
	char		authorization[512];
	char		date_time[64];
	char		namespace_[128];
	char		client_id[256];
	Buf			in;				/* request bytes not yet made into messages */
	Buf			out;			/* response bytes (gRPC-framed) not yet sent */
	size_t		out_off;
	bool		responding;		/* response headers submitted */
	bool		finished;		/* trailers once out is sent */
	bool		trailers_sent;
	int			grpc_status;
	bool		in_ended;		/* the client half-closed */
	bool		closed;			/* nghttp2 closed the stream */
	int			rpc;			/* an RPC_ value (rpc.c) */
	const char *role;			/* the role it acts as */
	void	   *req;			/* the RPC's pending work, if any */
	int			client_type;	/* Telemetry: the client's Settings */
	/* a producer's Telemetry stream: where check-backs go (rpc.c) */
	bool		producer;
	char		db[128];
	/*
	 * ",topic,topic," (PRODUCER_TOPICS bytes, malloc'd by rpc.c): not in the
	 * struct, whose every byte a new stream's calloc zeroes (bench/README.md,
	 * RocketMQ)
	 */
	char	   *topics;
	struct Stream *next_producer;
	struct Stream *next;
} Stream;

extern void stream_send_message(Stream *s, const ProtobufCMessage *m);
extern void stream_finish(Stream *s, int grpc_status, const char *msg);
extern void stream_answer(Stream *s, const ProtobufCMessage *m);
extern void conn_flush(Conn *c);
extern void h2_accept(evutil_socket_t fd, const char *peer);
extern int	h2_connections(void);

/*
 * What h2.c reports of a stream to the layer above (rpc.c), which registers
 * them with h2_set_handlers before the first connection: its headers are in
 * (begin), a whole gRPC message arrived (message), the client half-closed
 * (end_of_input), the stream is gone and must not be used again (gone)
 */
typedef struct StreamHandlers
{
	void		(*begin) (Stream *s);
	void		(*message) (Stream *s, const uint8_t *data, size_t len);
	void		(*end_of_input) (Stream *s);
	void		(*gone) (Stream *s);
} StreamHandlers;

extern void h2_set_handlers(const StreamHandlers *handlers);

/* rpc.c: the check-back timer started, and the handlers of h2.c's streams */
extern void rpc_start(void);

/*
 * tls.c: the listener's TLS, on once tls_init ran (it exits on a bad
 * certificate or key); tls_bufferevent is a server-side TLS bufferevent on
 * socket fd (NULL when out of memory), peer names the client in its log
 * lines and must live as long as the bufferevent; tls_error says why its
 * handshake or I/O failed, tls_describe what the handshake agreed
 */
struct bufferevent;
extern void tls_init(const char *cert_path, const char *key_path);
extern bool tls_enabled(void);
extern struct bufferevent *tls_bufferevent(evutil_socket_t fd, const char *peer);
extern const char *tls_error(struct bufferevent *bev, char *buf, size_t len);
extern void tls_describe(struct bufferevent *bev, char *buf, size_t len);

/* pg.c: one statement on a pooled session of (database, role) */
typedef void (*pg_result_cb) (void *arg, PGresult *res);
extern bool pg_run(const char *db, const char *role, const char *sql, int nparams,
				   const char *const *values, const int *lengths, const int *formats,
				   int result_format, pg_result_cb cb, void *arg);
extern const char *res_state(const PGresult *res);
extern const char *res_message(const PGresult *res);

#endif
