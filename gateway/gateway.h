/*
 * gateway.h: the objects of mq-amqp (docs/amqp.md)
 *
 * Conn: one AMQP connection (a client socket).  Chan: one AMQP channel, with
 * its own PostgreSQL session for declares, publishes, gets and acks, run one
 * statement at a time from the channel's queue of operations.  Consumer: one
 * basic.consume, with its own PostgreSQL session that long-polls mq.consume;
 * its deliveries belong to that session, and the channel acks them by
 * receipt.  PgSess: an asynchronous libpq connection driven by libevent.
 */
#ifndef MQ_GATEWAY_H
#define MQ_GATEWAY_H

#include <event2/event.h>
#include <event2/bufferevent.h>
#include <libpq-fe.h>

#include "amqp.h"

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
} PgSess;

extern PgSess *pg_connect(const char *user, const char *password, const char *dbname,
						  bool check_client, pg_connect_cb cb, void *arg);
extern void pg_send(PgSess *s, const char *sql, int n, const Oid *types,
					const char *const *vals, const int *lens, const int *fmts,
					int result_format, pg_result_cb cb, void *arg);
extern void pg_close(PgSess *s);
extern void pg_cancel(PgSess *s);

#endif
