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

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

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
int			rmq_max_connections = 10000;

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

/*
 * Open a file that holds secrets (what names it in messages: "credentials
 * file", "TLS key file") for reading; exits unless it is a regular file
 * that its group and others have no access to
 */
FILE *
open_private_file(const char *path, const char *what)
{
	FILE	   *f = fopen(path, "r");
	struct stat st;

	if (f == NULL)
		die("cannot open %s \"%s\": %s", what, path, strerror(errno));
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
		die("%s \"%s\" is not a regular file", what, path);
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		die("%s \"%s\" has group or world access (mode %04o); chmod 600 it",
			what, path, (unsigned) (st.st_mode & 07777));
	return f;
}
