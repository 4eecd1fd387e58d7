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
#include <ctype.h>
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

/*
 * The n-th (from 0) double-quoted name of a server message, malloc'd ("" if
 * there is none)
 */
static char *
quoted_name(const char *msg, int n)
{
	const char *p = msg;

	for (;;)
	{
		const char *open = strchr(p, '"');
		const char *close = open ? strchr(open + 1, '"') : NULL;
		char	   *name;

		if (close == NULL)
			return xstrdup("");
		if (n-- == 0)
		{
			name = xmalloc(close - open);
			memcpy(name, open + 1, close - open - 1);
			name[close - open - 1] = '\0';
			return name;
		}
		p = close + 1;
	}
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t		ls = strlen(s);
	size_t		lx = strlen(suffix);

	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/*
 * The hint mqctl shows instead of the server's for the errors whose hint
 * names SQL arguments (group_name =>, target_queue =>) or functions: the
 * same advice in mqctl's commands and flags (malloc'd; NULL: keep the
 * server's).  The SQLSTATE and the message stay the server's.
 */
static char *
cli_hint(const char *sqlstate, const char *msg)
{
	char		buf[1024];
	char	   *a = NULL;
	char	   *b = NULL;

	buf[0] = '\0';
	if (strcmp(sqlstate, "0A000") == 0 && strncmp(msg, "mq.browse does not read streams", 31) == 0)
	{
		a = quoted_name(msg, 0);
		snprintf(buf, sizeof(buf),
				 "Read the stream with \"mqctl read %s --partition P --offset O\".", a);
	}
	else if (strncmp(msg, "dead-letter queue \"", 19) == 0 && strstr(msg, "\" is kept: it holds "))
	{
		a = quoted_name(msg, 0);
		snprintf(buf, sizeof(buf),
				 "Move them back with \"mqctl dlq redrive '%s'\", or delete the queue with "
				 "\"mqctl delete queue '%s'\".", a, a);
	}
	else if (strcmp(sqlstate, "0A000") == 0 && ends_with(msg, "needs a consumer group"))
	{
		a = quoted_name(msg, 0);
		snprintf(buf, sizeof(buf),
				 "Pass --group GROUP, a group declared with \"mqctl declare group %s GROUP\", "
				 "or read the stream without a group: \"mqctl read %s --partition P --offset O\".",
				 a, a);
	}
	else if (strcmp(sqlstate, "22023") == 0 && ends_with(msg, "needs a consumer name"))
		snprintf(buf, sizeof(buf),
				 "Pass --consumer NAME, a name that stays the same across the consumer's restarts.");
	else if (strcmp(sqlstate, "42704") == 0 && strncmp(msg, "consumer group \"", 16) == 0 &&
			 ends_with(msg, "does not exist"))
	{
		a = quoted_name(msg, 0);
		b = quoted_name(msg, 1);
		snprintf(buf, sizeof(buf), "Declare it with \"mqctl declare group %s %s\".", b, a);
	}
	else if (strcmp(sqlstate, "22023") == 0 && ends_with(msg, "has no origin to redrive it to"))
		snprintf(buf, sizeof(buf), "Pass --to TARGET, the queue to move it to.");
	else if (strcmp(sqlstate, "22023") == 0 && ends_with(msg, "came from that queue itself"))
		snprintf(buf, sizeof(buf), "Pass --to TARGET, another queue.");
	else if (strcmp(sqlstate, "42809") == 0 && strncmp(msg, "queue \"", 7) == 0 &&
			 ends_with(msg, "is not a stream"))
		snprintf(buf, sizeof(buf),
				 "mqctl read and mqctl seek are for streams; use mqctl consume or "
				 "mqctl dlq show on classic and quorum queues.");
	free(a);
	free(b);
	return buf[0] ? xstrdup(buf) : NULL;
}

/*
 * The server's message with the SQL argument names mqctl has flags for
 * (from_time, to_offset, target_queue...) written as those flags, outside
 * double-quoted names (malloc'd)
 */
static const char *const sql_flags[][2] = {
	{"from_offset", "--offset"}, {"from_time", "--from-time"},
	{"to_offset", "--to-offset"}, {"to_time", "--to-time"},
	{"target_queue", "--to"}, {NULL, NULL}
};

static char *
cli_message(const char *msg)
{
	size_t		cap = strlen(msg) * 2 + 1;
	char	   *out = xmalloc(cap);
	size_t		n = 0;
	bool		quoted = false;

	for (const char *p = msg; *p;)
	{
		bool		word_start = p == msg || !(isalnum((unsigned char) p[-1]) || p[-1] == '_');
		int			i = 0;

		if (*p == '"')
			quoted = !quoted;
		if (!quoted && word_start)
		{
			for (i = 0; sql_flags[i][0]; i++)
			{
				size_t		len = strlen(sql_flags[i][0]);

				if (strncmp(p, sql_flags[i][0], len) == 0 &&
					!(isalnum((unsigned char) p[len]) || p[len] == '_'))
				{
					n += sprintf(out + n, "%s", sql_flags[i][1]);
					p += len;
					break;
				}
			}
		}
		if (quoted || !word_start || sql_flags[i][0] == NULL)
			out[n++] = *p++;
	}
	out[n] = '\0';
	return out;
}

/*
 * Notices and warnings as psql shows them, with mqctl's hint where
 * cli_hint has one
 */
static void
notice_receiver(void *arg, const PGresult *res)
{
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY);
	const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	char	   *mine = NULL;

	(void) arg;
	if (severity && primary && sqlstate)
		mine = cli_hint(sqlstate, primary);
	if (mine == NULL)
	{
		fputs(PQresultErrorMessage(res), stderr);
		return;
	}
	fprintf(stderr, "%s:  %s\n", severity, primary);
	if (detail)
		fprintf(stderr, "DETAIL:  %s\n", detail);
	fprintf(stderr, "HINT:  %s\n", mine);
	free(mine);
}

/*
 * Is queue_ext missing from the database?  Asked after an error about an
 * unknown schema, relation or function (in a failed transaction: rolled
 * back first, the program ends anyway).
 */
static bool
extension_missing(void)
{
	PGresult   *res;
	bool		missing;

	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
		return false;
	if (PQtransactionStatus(conn) == PQTRANS_INERROR)
		PQclear(PQexec(conn, "ROLLBACK"));
	res = PQexec(conn, "SELECT count(*) FROM pg_catalog.pg_extension WHERE extname = 'queue_ext'");
	missing = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
		strcmp(PQgetvalue(res, 0, 0), "0") == 0;
	PQclear(res);
	return missing;
}

/* An error from the server, printed as psql prints it, then exit 1 */
void
die_result(PGresult *res)
{
	const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
	const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	char	   *mine = NULL;

	end_progress_line();
	if (sqlstate && (strcmp(sqlstate, "3F000") == 0 || strcmp(sqlstate, "42P01") == 0 ||
					 strcmp(sqlstate, "42883") == 0) && extension_missing())
	{
		fprintf(stderr, "%s: error: the extension queue_ext is not installed in database \"%s\"\n",
				progname, PQdb(conn));
		fprintf(stderr, "DETAIL:  The server said: %s\n", primary ? primary : "");
		fprintf(stderr, "HINT:  Run \"CREATE EXTENSION queue_ext;\" in that database "
				"(psql -d %s), or pick another database with -d DBNAME.\n", PQdb(conn));
		PQclear(res);
		mq_disconnect();
		exit(EXIT_SERVER);
	}
	if (primary)
	{
		char	   *msg = cli_message(primary);

		fprintf(stderr, "%s: error: %s\n", progname, msg);
		free(msg);
	}
	else
		fprintf(stderr, "%s: error: %s", progname,
				PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res) :
				PQerrorMessage(conn));
	if (detail)
		fprintf(stderr, "DETAIL:  %s\n", detail);
	if (sqlstate && primary)
		mine = cli_hint(sqlstate, primary);
	if (mine || hint)
		fprintf(stderr, "HINT:  %s\n", mine ? mine : hint);
	free(mine);
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
	PQsetNoticeReceiver(conn, notice_receiver, NULL);
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


/*
 * rabbitmqadmin's names of arguments: "name=jobs" given where mqctl takes a
 * name is someone used to rabbitmqadmin, not a queue to create.  advice:
 * what mqctl takes instead (%1$s the value; NULL: the value as a plain
 * argument).
 */
static const struct
{
	const char *key;
	const char *advice;
}			rabbitmqadmin_keys[] =
{
	{"name", NULL},
	{"queue", NULL},
	{"exchange", NULL},
	{"payload", NULL},
	{"source", "the exchange \"%1$s\" is the second argument, after the queue"},
	{"destination", "the queue \"%1$s\" is the first argument, before the exchange"},
	{"destination_type", "mqctl binds queues to exchanges: leave it out"},
	{"routing_key", "the key \"%1$s\" is a plain argument, after the exchange"},
	{"type", "--type %1$s for a queue; for an exchange the type follows its name"},
	{"queue_type", "--type %1$s"},
	{"durable", NULL},
	{"auto_delete", "queue_ext has no auto-delete: a queue stays until deleted"},
	{"internal", "queue_ext has no internal exchanges: leave it out"},
	{"arguments", "--arg KEY=VALUE, once per argument"},
	{"properties", "--header=KEY=VALUE, --content-type=TYPE and the other property options"},
	{"payload_encoding", "a body is given as it is: leave it out"},
	{"count", "--count=%1$s"},
	{"ackmode", "--ack, --no-ack or --requeue"},
	{"requeue", "--requeue"},
	{"vhost", "-d DBNAME: a database is what a vhost is"},
	{"user", "-U %1$s"},
	{"password", "the password is asked for, or taken from PGPASSWORD or ~/.pgpass"},
	{NULL, NULL}
};

/*
 * Refuse (bad usage) a name that reads as rabbitmqadmin's KEY=VALUE, with a
 * hint showing mqctl's syntax: the "Usage:" lines of the command's help
 */
void
check_name(const char *cmd, const char *help, const char *arg)
{
	const char *usage = strstr(help, "Usage:\n");
	const char *end;
	const char *eq = strchr(arg, '=');

	if (eq == NULL)
		return;
	for (int i = 0; rabbitmqadmin_keys[i].key; i++)
	{
		const char *key = rabbitmqadmin_keys[i].key;
		const char *advice = rabbitmqadmin_keys[i].advice;
		const char *value = eq + 1;
		size_t		len = strlen(key);
		char		here[512];

		if ((size_t) (eq - arg) != len || strncmp(arg, key, len) != 0)
			continue;
		if (strcmp(key, "durable") == 0)
			advice = (strcmp(value, "false") == 0 || strcmp(value, "0") == 0 ||
					  strcmp(value, "no") == 0) ? "--no-durable" : "--durable, the default";
		if (advice)
			snprintf(here, sizeof(here), advice, value);
		else
			snprintf(here, sizeof(here), "\"%s\", not \"%s\"", value, arg);
		fprintf(stderr, "%s: error: \"%s\" is rabbitmqadmin's KEY=VALUE syntax, not a name\n",
				progname, arg);
		fprintf(stderr, "HINT:  mqctl takes names as plain arguments and properties as --options"
				" (here %s):\n", here);
		if (usage)
		{
			usage += strlen("Usage:\n");
			end = strstr(usage, "\n\n");
			if (end == NULL)
				end = usage + strlen(usage);
			/* the usage lines, without the help's last newline */
			while (end > usage && end[-1] == '\n')
				end--;
			fprintf(stderr, "%.*s\n", (int) (end - usage), usage);
		}
		fprintf(stderr, "Try \"%s %s --help\" for more information.\n", progname, cmd);
		exit(EXIT_USAGE);
	}
}

/*
 * The name of an exchange as given on the command line: "amq.default" is
 * the default exchange, '' (as in rabbitmqadmin and RabbitMQ's management
 * API)
 */
const char *
exchange_name(const char *arg)
{
	if (arg && strcmp(arg, "amq.default") == 0)
		return "";
	return arg;
}
