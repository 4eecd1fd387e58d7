/*-------------------------------------------------------------------------
 *
 * config.c
 *	  mq-rocketmq's settings (set by main.c from the command line, read by
 *	  every file) and its log (stderr, UTC timestamps).
 *
 * It owns the rmq_ settings and the log; nothing here touches a
 * connection, a stream or a session.
 *
 *-------------------------------------------------------------------------
 */
#include "rmq.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct event_base *rmq_base;
PQconninfoOption *rmq_conninfo;
const char *rmq_default_db;
const char *rmq_advertise_host;
int			rmq_advertise_port;
int			rmq_max_sessions = 100;
int			rmq_max_body = 4 * 1024 * 1024;
const char *rmq_producer_group = "rocketmq";
int			rmq_tx_check = 30;
int			rmq_push_invisible = 60;
bool		rmq_verbose;
const char *rmq_insecure_role;
int			rmq_max_clock_skew = 900;

void
logmsg(const char *fmt,...)
{
	va_list		ap;
	char		when[32];
	time_t		now = time(NULL);
	struct tm	tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(stderr, "%s mq-rocketmq: ", when);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
die(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "mq-rocketmq: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}
