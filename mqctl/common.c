/*-------------------------------------------------------------------------
 *
 * common.c
 *	  What every command of mqctl uses: memory, errors and exit statuses,
 *	  the connection (psql's conventions), queries, option parsing, and the
 *	  progress line on stderr that errors must end first.  A leaf: it calls
 *	  no other file of mqctl.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/time.h>

#include "mqctl.h"

const char *progname = "mqctl";

/* connection settings from the options; NULL: libpq's defaults (PG*) */
static const char *opt_dbname;
static const char *opt_host;
static const char *opt_port;
static const char *opt_user;
static int	opt_prompt;			/* -1 never (-w), 0 when needed, 1 first (-W) */
static PGconn *conn;

/* The wall clock in seconds, for rates and intervals */
double
now_seconds(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/*
 * A progress line is on stderr (messages.c draws it): it must be ended
 * before anything else is written there
 */
bool		progress_line_open = false;

void
end_progress_line(void)
{
	if (progress_line_open)
	{
		fputc('\n', stderr);
		progress_line_open = false;
	}
}

/* ---------------------------------------------------------------- helpers */

void *
xmalloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
	{
		fprintf(stderr, "%s: error: out of memory\n", progname);
		exit(EXIT_SERVER);
	}
	return p;
}

void *
xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (p == NULL)
	{
		fprintf(stderr, "%s: error: out of memory\n", progname);
		exit(EXIT_SERVER);
	}
	return p;
}

char *
xstrdup(const char *s)
{
	char	   *d = xmalloc(strlen(s) + 1);

	strcpy(d, s);
	return d;
}

/* Bad usage: the message, a pointer to --help, exit 2 */
void
die_usage(const char *cmd, const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: error: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fprintf(stderr, "Try \"%s%s%s --help\" for more information.\n",
			progname, cmd ? " " : "", cmd ? cmd : "");
	exit(EXIT_USAGE);
}

/* An error from the server, printed as psql prints it, then exit 1 */
void
die_result(PGresult *res)
{
	const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);

	end_progress_line();
	if (primary)
		fprintf(stderr, "%s: error: %s\n", progname, primary);
	else
		fprintf(stderr, "%s: error: %s", progname,
				PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res) :
				PQerrorMessage(conn));
	if (detail)
		fprintf(stderr, "DETAIL:  %s\n", detail);
	if (hint)
		fprintf(stderr, "HINT:  %s\n", hint);
	PQclear(res);
	mq_disconnect();
	exit(EXIT_SERVER);
}

/* The connection failed or broke: its message, exit 1 */
void
die_conn(void)
{
	end_progress_line();
	fprintf(stderr, "%s: error: %s", progname, PQerrorMessage(conn));
	mq_disconnect();
	exit(EXIT_SERVER);
}

/* Notices and warnings as psql shows them */
static void
notice_processor(void *arg, const char *message)
{
	(void) arg;
	fputs(message, stderr);
}

PGconn *
mq_connect(void)
{
	const char *keywords[8];
	const char *values[8];
	char	   *password = NULL;
	int			n;

	if (conn)
		return conn;
	for (;;)
	{
		n = 0;
		keywords[n] = "host", values[n++] = opt_host;
		keywords[n] = "port", values[n++] = opt_port;
		keywords[n] = "user", values[n++] = opt_user;
		keywords[n] = "password", values[n++] = password;
		keywords[n] = "fallback_application_name", values[n++] = progname;
		/* last, so that a conninfo or URI in it overrides the options above */
		keywords[n] = "dbname", values[n++] = opt_dbname;
		keywords[n] = NULL, values[n] = NULL;
		if (opt_prompt == 1 && password == NULL)
			password = xstrdup(getpass("Password: "));
		else
		{
			conn = PQconnectdbParams(keywords, values, 1);
			if (PQstatus(conn) == CONNECTION_OK)
				break;
			if (PQconnectionNeedsPassword(conn) && password == NULL &&
				opt_prompt >= 0 && isatty(fileno(stdin)))
			{
				PQfinish(conn);
				conn = NULL;
				password = xstrdup(getpass("Password: "));
				continue;
			}
			die_conn();
		}
	}
	free(password);
	PQsetNoticeProcessor(conn, notice_processor, NULL);
	return conn;
}

void
mq_disconnect(void)
{
	if (conn)
		PQfinish(conn);
	conn = NULL;
}

/* Run sql with text parameters; an error ends the program (exit 1). */
PGresult *
run_query(const char *sql, int nparams, const char *const *values)
{
	PGresult   *res = PQexecParams(mq_connect(), sql, nparams, NULL, values,
								   NULL, NULL, 0);

	if (res == NULL)
		die_conn();
	if (PQresultStatus(res) != PGRES_TUPLES_OK &&
		PQresultStatus(res) != PGRES_COMMAND_OK)
		die_result(res);
	return res;
}

void
run_command(const char *sql)
{
	PQclear(run_query(sql, 0, NULL));
}

/* Handle a connection option of getopt; false if c is none */
int
conn_option(int c, const char *arg)
{
	switch (c)
	{
		case 'd':
			opt_dbname = arg;
			return true;
		case 'h':
			opt_host = arg;
			return true;
		case 'p':
			opt_port = arg;
			return true;
		case 'U':
			opt_user = arg;
			return true;
		case 'w':
			opt_prompt = -1;
			return true;
		case 'W':
			opt_prompt = 1;
			return true;
	}
	return false;
}

bool
parse_format(const char *arg, bool allow_raw, OutputFormat *fmt)
{
	if (strcmp(arg, "table") == 0 && !allow_raw)
		*fmt = FORMAT_TABLE;
	else if (strcmp(arg, "csv") == 0 && !allow_raw)
		*fmt = FORMAT_CSV;
	else if (strcmp(arg, "json") == 0)
		*fmt = FORMAT_JSON;
	else if (strcmp(arg, "raw") == 0 && allow_raw)
		*fmt = FORMAT_RAW;
	else
		return false;
	return true;
}

/* An integer option in [min, max], else bad usage */
long
parse_count(const char *cmd, const char *opt, const char *arg, long min, long max)
{
	char	   *end;
	long		v = strtol(arg, &end, 10);

	if (*arg == '\0' || *end != '\0' || v < min || v > max)
		die_usage(cmd, "%s must be an integer from %ld to %ld, not \"%s\"",
				  opt, min, max, arg);
	return v;
}

/*
 * Add k=v to the JSON object obj: v is JSON if it reads as JSON (10, true,
 * "s", {"a": 1}), else a string.
 */
void
add_kv(const char *cmd, const char *opt, json_object *obj, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char	   *key;
	json_object *val;
	json_tokener *tok;

	if (eq == NULL || eq == kv)
		die_usage(cmd, "%s takes KEY=VALUE, not \"%s\"", opt, kv);
	key = xmalloc(eq - kv + 1);
	memcpy(key, kv, eq - kv);
	key[eq - kv] = '\0';
	tok = json_tokener_new();
	/* the terminating NUL too: it ends a number at the end of the string */
	val = json_tokener_parse_ex(tok, eq + 1, (int) strlen(eq + 1) + 1);
	if (val == NULL || json_tokener_get_error(tok) != json_tokener_success ||
		json_tokener_get_parse_end(tok) != strlen(eq + 1))
	{
		json_object_put(val);
		val = json_object_new_string(eq + 1);
	}
	json_tokener_free(tok);
	json_object_object_add(obj, key, val);
	free(key);
}

/* Is --help among the arguments (before a "--")? */
bool
want_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--help") == 0)
			return true;
	}
	return false;
}

