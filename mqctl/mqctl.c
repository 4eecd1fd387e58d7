/*-------------------------------------------------------------------------
 *
 * mqctl.c
 *	  mqctl, the command-line tool of queue_ext: git-style subcommands over
 *	  the SQL API of schema mq (docs/mqctl.md), on libpq with psql's
 *	  connection conventions.
 *
 *	  Exit status: 0 ok, 1 an error from the server (or no connection),
 *	  2 bad usage.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mqctl.h"

static const char *main_help =
"mqctl is the command-line tool of queue_ext, the message broker in PostgreSQL:\n"
"git-style commands over the SQL API of schema mq, connecting as psql does.\n"
"\n"
"Usage: mqctl [CONNECTION OPTION]... COMMAND [ARGUMENT]... [OPTION]...\n"
"  or:  mqctl COMMAND --help\n"
"\n"
"Commands:\n"
"  list queues|exchanges|bindings|groups|consumers   show the topology and its state\n"
"  declare queue|exchange|group ...   create a queue, an exchange or a consumer group\n"
"  delete queue|exchange|group ...    delete one\n"
"  bind QUEUE EXCHANGE [KEY]          bind a queue to an exchange\n"
"  unbind QUEUE EXCHANGE [KEY]        remove a binding\n"
"  purge QUEUE                        remove the ready messages of a queue\n"
"  publish EXCHANGE KEY [BODY]...     publish messages through an exchange ('' or\n"
"                                     amq.default: the default exchange)\n"
"  send QUEUE [BODY]...               send messages straight to a queue\n"
"  consume QUEUE                      take messages, print them, ack them\n"
"  read STREAM --partition P          read a stream from an offset or a time,\n"
"                                     without a group (nothing is taken)\n"
"  seek STREAM GROUP                  move a group to an offset or a time\n"
"  trace MSG_ID                       the life of a message\n"
"  lookup --key KEY                   messages published with a key\n"
"  dlq list|show QUEUE|redrive QUEUE  dead-letter queues\n"
"  definitions export|import FILE     RabbitMQ's definitions JSON\n"
"  top                                a live screen of every queue and group\n"
"  bench                              publish and consume throughput\n"
"\n"
"Every command takes --help.  Names are plain arguments and properties are\n"
"options (mqctl declare queue jobs --type quorum), not rabbitmqadmin's\n"
"name=jobs.  Without -d, -h, -p, -U the PG* environment variables (PGHOST,\n"
"PGPORT, PGDATABASE, PGUSER, PGSERVICE...) and ~/.pgpass apply, as for psql.\n"
"\n"
"Exit status: 0 ok, 1 an error from the server or the connection, 2 bad\n"
"usage, 130 publish or send stopped by Ctrl-C (after saying how many were\n"
"sent).  The database needs the extension (CREATE EXTENSION queue_ext).  The\n"
"full manual is docs/mqctl.md of queue_ext; the SQL API, docs/api.md.\n"
"\n"
"Options:\n"
"  --help       show this help, then exit\n"
"  --version    show the version, then exit\n"
CONN_HELP;

static void
print_help(const char *text)
{
	fputs(text, stdout);
	fputs(CONN_HELP, stdout);
	exit(EXIT_OK);
}

static const char *
json_text(json_object *obj)
{
	return json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
										  JSON_C_TO_STRING_NOSLASHESCAPE);
}

/*
 * Options of simple commands: the connection options, --format, --arg and
 * the flags and values each command lists in longopts (their values land in
 * vals[], by index into longopts, "" for a flag).
 */
typedef struct CmdOpts
{
	OutputFormat format;
	json_object *args;			/* --arg k=v */
	const char *vals[32];
	char	  **pos;			/* positional arguments */
	int			npos;
} CmdOpts;

#define OPT_BASE 1000

static void
parse_cmd(const char *cmd, const char *help, int argc, char **argv,
		  const char *const *names, const bool *takes_value, CmdOpts *o)
{
	struct option longopts[48] = {CONN_LONGOPTS,
		{"format", required_argument, NULL, 'f'},
		{"arg", required_argument, NULL, 'a'},
		{"help", no_argument, NULL, '?'}};
	int			nl = 9;
	int			c;

	memset(o, 0, sizeof(*o));
	o->format = FORMAT_TABLE;
	o->args = json_object_new_object();
	if (want_help(argc, argv))
		print_help(help);
	for (int i = 0; names && names[i]; i++, nl++)
	{
		longopts[nl].name = names[i];
		longopts[nl].has_arg = takes_value[i] ? required_argument : no_argument;
		longopts[nl].flag = NULL;
		longopts[nl].val = OPT_BASE + i;
	}
	memset(&longopts[nl], 0, sizeof(struct option));
	optind = 0;
	while ((c = getopt_long(argc, argv, CONN_SHORTOPTS "f:", longopts, NULL)) != -1)
	{
		if (conn_option(c, optarg))
			continue;
		if (c >= OPT_BASE)
		{
			o->vals[c - OPT_BASE] = optarg ? optarg : "";
			continue;
		}
		switch (c)
		{
			case 'f':
				if (!parse_format(optarg, false, &o->format))
					die_usage(cmd, "--format must be table, json or csv, not \"%s\"", optarg);
				break;
			case 'a':
				add_kv(cmd, "--arg", o->args, optarg);
				break;
			default:
				die_usage(cmd, "unknown option or missing value: \"%s\"",
						  argv[optind - 1]);
		}
	}
	o->pos = argv + optind;
	o->npos = argc - optind;
	for (int i = 0; i < o->npos; i++)
		check_name(cmd, help, o->pos[i]);
}

static void
want_pos(const char *cmd, CmdOpts *o, int min, int max, const char *what)
{
	if (o->npos < min)
		die_usage(cmd, "missing %s", what);
	if (o->npos > max)
		die_usage(cmd, "too many arguments (\"%s\")", o->pos[max]);
}

/* Print the single value of a one-row result, then free it */
static void
print_scalar(PGresult *res)
{
	if (PQntuples(res) == 1 && PQnfields(res) == 1 && !PQgetisnull(res, 0, 0))
		printf("%s\n", PQgetvalue(res, 0, 0));
	PQclear(res);
}

/* ---------------------------------------------------------------- list */

static const char *list_help =
"mqctl list: show the topology and its state, from the views of schema mq.\n"
"\n"
"Usage:\n"
"  mqctl list queues      [--format table|json|csv]   mq.queues\n"
"  mqctl list exchanges   [...]                       mq.exchanges\n"
"  mqctl list bindings    [...]                       mq.bindings\n"
"  mqctl list groups      [...]                       mq.consumer_groups\n"
"  mqctl list consumers   [...]                       consumers per queue and group\n"
"\n"
"Options:\n"
"  -f, --format=FORMAT    table (default; on a terminal cut to its width),\n"
"                         json (an array of objects) or csv (with a header)\n"
"  --columns=A,B,...      only these columns, in this order\n"
"  --all                  every column in a table too (tables of queues and\n"
"                         groups show the main ones; json and csv show all)\n";

/*
 * What a table shows of the wide views by default (--all: every column;
 * JSON and CSV always have every column)
 */
#define QUEUES_TABLE_COLUMNS \
	"queue,type,durable,ready,unacked,delayed,consumers,oldest_ready_age,arguments"
#define GROUPS_TABLE_COLUMNS \
	"queue,group_name,mode,partition,consumer,committed_offset,end_offset,lag," \
	"in_flight,retrying,dead_lettered,consumers,idle"

/* "SELECT a, b FROM" for the comma-separated column names of list */
static char *
select_columns(const char *list)
{
	char	   *copy = xstrdup(list);
	size_t		cap = strlen(list) * 3 + 32;
	char	   *sql = xmalloc(cap);
	size_t		len = 0;
	char	   *save = NULL;

	len += snprintf(sql, cap, "SELECT ");
	for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save))
	{
		char	   *q = PQescapeIdentifier(mq_connect(), name, strlen(name));

		if (q == NULL)
			die_conn();
		sql = xrealloc(sql, cap += strlen(q) + 4);
		len += snprintf(sql + len, cap - len, "%s%s", len > 7 ? ", " : "", q);
		PQfreemem(q);
	}
	if (len == 7)
		die_usage("list", "--columns needs column names");
	snprintf(sql + len, cap - len, " FROM");
	free(copy);
	return sql;
}

static int
cmd_list(int argc, char **argv)
{
	static const char *const names[] = {"columns", "all", NULL};
	static const bool values[] = {true, false};
	CmdOpts		o;
	const char *what;
	const char *from;
	const char *order;
	const char *table_columns = NULL;
	char	   *select;
	char	   *sql;

	parse_cmd("list", list_help, argc, argv, names, values, &o);
	want_pos("list", &o, 1, 1, "what to list (queues, exchanges, bindings, groups, consumers)");
	what = o.pos[0];
	if (strcmp(what, "queues") == 0)
	{
		from = "mq.queues";
		order = "queue";
		table_columns = QUEUES_TABLE_COLUMNS;
	}
	else if (strcmp(what, "exchanges") == 0)
		from = "mq.exchanges", order = "exchange";
	else if (strcmp(what, "bindings") == 0)
		from = "mq.bindings", order = "exchange, queue, binding_key, arguments::text";
	else if (strcmp(what, "groups") == 0)
	{
		from = "mq.consumer_groups";
		order = "queue, group_name, partition, consumer NULLS FIRST";
		table_columns = GROUPS_TABLE_COLUMNS;
	}
	else if (strcmp(what, "consumers") == 0)
	{
		from = "(SELECT queue, NULL::text AS group_name, consumers, unacked AS in_flight,"
			" last_delivery FROM mq.queues WHERE type <> 'stream'"
			" UNION ALL "
			"SELECT queue, group_name, max(consumers), sum(in_flight)::bigint, max(last_delivery)"
			"  FROM mq.consumer_groups GROUP BY queue, group_name) c";
		order = "queue, group_name NULLS FIRST";
	}
	else
		die_usage("list", "cannot list \"%s\": queues, exchanges, bindings, groups or consumers", what);
	if (o.vals[0] && o.vals[1])
		die_usage("list", "--columns and --all exclude each other");
	if (o.vals[0])
		select = select_columns(o.vals[0]);
	else if (table_columns && o.format == FORMAT_TABLE && !o.vals[1])
		select = select_columns(table_columns);
	else
		select = xstrdup("SELECT * FROM");
	sql = xmalloc(strlen(select) + strlen(from) + strlen(order) + 16);
	sprintf(sql, "%s %s ORDER BY %s", select, from, order);
	print_query(sql, 0, NULL, o.format);
	free(select);
	free(sql);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- declare */

static const char *declare_help =
"mqctl declare: create a queue, an exchange or a consumer group (idempotent).\n"
"\n"
"Usage:\n"
"  mqctl declare queue NAME [--type classic|quorum|stream] [--arg KEY=VALUE]...\n"
"                           [--durable|--no-durable]\n"
"  mqctl declare exchange NAME [TYPE] [--alternate-exchange NAME] [--arg KEY=VALUE]...\n"
"                           [--durable|--no-durable]\n"
"  mqctl declare group QUEUE GROUP [--mode clustering|broadcast] [--start latest|earliest|TIME]\n"
"                           [--filter EXPR] [--filter-type tag|sql92] [--ordered]\n"
"                           [--max-retries N] [--retry-delays INTERVAL,...]\n"
"\n"
"An exchange's TYPE is direct (default), topic, fanout or headers.  A queue\n"
"named \"\" gets a server-chosen name, which is printed.  --arg values are\n"
"JSON when they read as JSON (x-max-length=10), else strings\n"
"(x-overflow=reject-publish): the arguments of mq.queue_declare (RabbitMQ's\n"
"x-... names; partitions, retention, max_bytes for streams).\n";

enum
{
	D_TYPE, D_DURABLE, D_NO_DURABLE, D_ALT, D_MODE, D_START, D_FILTER,
	D_FILTER_TYPE, D_ORDERED, D_MAX_RETRIES, D_RETRY_DELAYS
};

static const char *const declare_names[] = {"type", "durable", "no-durable",
	"alternate-exchange", "mode", "start", "filter", "filter-type", "ordered",
"max-retries", "retry-delays", NULL};
static const bool declare_values[] = {true, false, false, true, true, true, true,
true, false, true, true};

static const char *
durable_arg(CmdOpts *o)
{
	if (o->vals[D_DURABLE] && o->vals[D_NO_DURABLE])
		die_usage("declare", "--durable and --no-durable exclude each other");
	return o->vals[D_NO_DURABLE] ? "false" : "true";
}

static int
cmd_declare(int argc, char **argv)
{
	CmdOpts		o;
	const char *what;

	parse_cmd("declare", declare_help, argc, argv, declare_names, declare_values, &o);
	want_pos("declare", &o, 1, 4, "what to declare (queue, exchange, group)");
	what = o.pos[0];
	if (strcmp(what, "queue") == 0)
	{
		const char *p[4];

		want_pos("declare", &o, 2, 2, "the queue's name");
		if (o.vals[D_MODE] || o.vals[D_START] || o.vals[D_FILTER] || o.vals[D_ALT])
			die_usage("declare", "that option is not one of declare queue");
		p[0] = o.pos[1];
		p[1] = o.vals[D_TYPE];	/* NULL: --arg x-queue-type, else classic */
		p[2] = durable_arg(&o);
		p[3] = json_text(o.args);
		print_scalar(run_query("SELECT mq.queue_declare($1, $2, $3::boolean, $4::jsonb)",
							   4, p));
	}
	else if (strcmp(what, "exchange") == 0)
	{
		const char *p[5];

		want_pos("declare", &o, 2, 3, "the exchange's name");
		if (o.vals[D_MODE] || o.vals[D_START] || o.vals[D_FILTER] || o.vals[D_TYPE])
			die_usage("declare", "that option is not one of declare exchange");
		p[0] = exchange_name(o.pos[1]);
		p[1] = o.npos > 2 ? o.pos[2] : "direct";
		p[2] = durable_arg(&o);
		p[3] = exchange_name(o.vals[D_ALT]);
		p[4] = json_text(o.args);
		PQclear(run_query("SELECT mq.exchange_declare($1, $2, $3::boolean, $4, $5::jsonb)",
						  5, p));
	}
	else if (strcmp(what, "group") == 0)
	{
		const char *p[9];

		want_pos("declare", &o, 3, 3, "the stream and the group's name");
		if (o.vals[D_TYPE] || o.vals[D_ALT] || o.vals[D_DURABLE] ||
			o.vals[D_NO_DURABLE] || json_object_object_length(o.args) > 0)
			die_usage("declare", "that option is not one of declare group");
		p[0] = o.pos[1];
		p[1] = o.pos[2];
		p[2] = o.vals[D_MODE] ? o.vals[D_MODE] : "clustering";
		p[3] = o.vals[D_START] ? o.vals[D_START] : "latest";
		p[4] = o.vals[D_FILTER];
		p[5] = o.vals[D_FILTER_TYPE] ? o.vals[D_FILTER_TYPE] : "tag";
		p[6] = o.vals[D_ORDERED] ? "true" : "false";
		p[7] = o.vals[D_MAX_RETRIES] ? o.vals[D_MAX_RETRIES] : "16";
		p[8] = o.vals[D_RETRY_DELAYS];
		PQclear(run_query("SELECT mq.group_declare($1, $2, mode => $3, start => $4,"
						  " filter => $5, filter_type => $6, ordered => $7::boolean,"
						  " max_retries => $8::int,"
						  " retry_delays => string_to_array($9, ',')::interval[])",
						  9, p));
	}
	else
		die_usage("declare", "cannot declare \"%s\": queue, exchange or group", what);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- delete */

static const char *delete_help =
"mqctl delete: delete a queue, an exchange or a consumer group.\n"
"\n"
"Usage:\n"
"  mqctl delete queue NAME [--if-unused] [--if-empty]   prints the messages it held\n"
"  mqctl delete exchange NAME [--if-unused]\n"
"  mqctl delete group QUEUE GROUP\n";

static int
cmd_delete(int argc, char **argv)
{
	static const char *const names[] = {"if-unused", "if-empty", NULL};
	static const bool values[] = {false, false};
	CmdOpts		o;
	const char *what;
	const char *p[3];

	parse_cmd("delete", delete_help, argc, argv, names, values, &o);
	want_pos("delete", &o, 1, 3, "what to delete (queue, exchange, group)");
	what = o.pos[0];
	if (strcmp(what, "queue") == 0)
	{
		want_pos("delete", &o, 2, 2, "the queue's name");
		p[0] = o.pos[1];
		p[1] = o.vals[0] ? "true" : "false";
		p[2] = o.vals[1] ? "true" : "false";
		print_scalar(run_query("SELECT mq.queue_delete($1, $2::boolean, $3::boolean)", 3, p));
	}
	else if (strcmp(what, "exchange") == 0)
	{
		want_pos("delete", &o, 2, 2, "the exchange's name");
		if (o.vals[1])
			die_usage("delete", "--if-empty is for queues");
		p[0] = exchange_name(o.pos[1]);
		p[1] = o.vals[0] ? "true" : "false";
		PQclear(run_query("SELECT mq.exchange_delete($1, $2::boolean)", 2, p));
	}
	else if (strcmp(what, "group") == 0)
	{
		want_pos("delete", &o, 3, 3, "the stream and the group's name");
		if (o.vals[0] || o.vals[1])
			die_usage("delete", "--if-unused and --if-empty are for queues and exchanges");
		p[0] = o.pos[1];
		p[1] = o.pos[2];
		PQclear(run_query("SELECT mq.group_delete($1, $2)", 2, p));
	}
	else
		die_usage("delete", "cannot delete \"%s\": queue, exchange or group", what);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- bind, unbind, purge */

static const char *bind_help =
"mqctl bind / unbind: add or remove a binding of a queue to an exchange.\n"
"\n"
"Usage:\n"
"  mqctl bind QUEUE EXCHANGE [KEY] [--arg KEY=VALUE]...\n"
"  mqctl unbind QUEUE EXCHANGE [KEY] [--arg KEY=VALUE]...\n"
"\n"
"KEY is the binding key ('' by default; topic patterns with * and #).  For a\n"
"headers exchange --arg gives the headers to match and x-match=all|any.\n"
"The default exchange is '' (or amq.default, as rabbitmqadmin names it).\n";

static int
cmd_bind(int argc, char **argv)
{
	CmdOpts		o;
	const char *p[4];
	bool		unbind = strcmp(argv[0], "unbind") == 0;

	parse_cmd(argv[0], bind_help, argc, argv, NULL, NULL, &o);
	want_pos(argv[0], &o, 2, 3, "the queue and the exchange");
	p[0] = o.pos[0];
	p[1] = exchange_name(o.pos[1]);
	p[2] = o.npos > 2 ? o.pos[2] : "";
	p[3] = json_text(o.args);
	PQclear(run_query(unbind ? "SELECT mq.unbind($1, $2, $3, $4::jsonb)" :
					  "SELECT mq.bind($1, $2, $3, $4::jsonb)", 4, p));
	return EXIT_OK;
}

static const char *purge_help =
"mqctl purge: remove the ready messages of a queue (delivered, unacked ones\n"
"stay); prints how many were removed.\n"
"\n"
"Usage:\n"
"  mqctl purge QUEUE\n";

static int
cmd_purge(int argc, char **argv)
{
	CmdOpts		o;
	const char *p[1];

	parse_cmd("purge", purge_help, argc, argv, NULL, NULL, &o);
	want_pos("purge", &o, 1, 1, "the queue");
	p[0] = o.pos[0];
	print_scalar(run_query("SELECT mq.queue_purge($1)", 1, p));
	return EXIT_OK;
}

/* ---------------------------------------------------------------- trace, lookup */

static const char *trace_help =
"mqctl trace: the life of a message (mq.trace): published, routed, delivered,\n"
"acked, dead-lettered...\n"
"\n"
"Usage:\n"
"  mqctl trace MSG_ID [--format table|json|csv]\n";

static int
cmd_trace(int argc, char **argv)
{
	CmdOpts		o;
	const char *p[1];

	parse_cmd("trace", trace_help, argc, argv, NULL, NULL, &o);
	want_pos("trace", &o, 1, 1, "the message id");
	(void) parse_count("trace", "MSG_ID", o.pos[0], 1, 0x7fffffffffffffffL);
	p[0] = o.pos[0];
	print_query("SELECT * FROM mq.trace($1::bigint)", 1, p, o.format);
	return EXIT_OK;
}

/* the columns of a message shown by lookup and dlq show: its body cut */
#define MESSAGE_COLUMNS \
	"msg_id, queue, exchange, routing_key, published_at, redelivered, delivery_count, " \
	"key, tag, message_group, headers, length(body) AS body_bytes, " \
	"CASE WHEN length(body) > 64 THEN encode(substring(body FROM 1 FOR 64), 'escape') || '...'" \
	" ELSE encode(body, 'escape') END AS body"

static const char *lookup_help =
"mqctl lookup: the messages published with a key (mq.messages_by_key),\n"
"newest first.\n"
"\n"
"Usage:\n"
"  mqctl lookup --key KEY [--count N] [--format table|json|csv]\n";

static int
cmd_lookup(int argc, char **argv)
{
	static const char *const names[] = {"key", "count", NULL};
	static const bool values[] = {true, true};
	CmdOpts		o;
	const char *p[2];

	parse_cmd("lookup", lookup_help, argc, argv, names, values, &o);
	want_pos("lookup", &o, 0, 0, "");
	if (o.vals[0] == NULL)
		die_usage("lookup", "--key is required");
	p[0] = o.vals[0];
	p[1] = o.vals[1] ? o.vals[1] : "10";
	(void) parse_count("lookup", "--count", p[1], 1, 10000);
	print_query("SELECT " MESSAGE_COLUMNS " FROM mq.messages_by_key($1, $2::int)",
				2, p, o.format);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- dlq */

static const char *dlq_help =
"mqctl dlq: dead-letter queues.\n"
"\n"
"Usage:\n"
"  mqctl dlq list              the consumer groups' %DLQ%<group> queues and the\n"
"                              queues dead-letter exchanges route to\n"
"  mqctl dlq show QUEUE [--count N]   its next messages (mq.browse), not taken\n"
"  mqctl dlq redrive QUEUE [--to TARGET] [--count N]\n"
"                              move its ready messages back where they came\n"
"                              from, or to TARGET (mq.redrive); prints how many\n"
"\n"
"Options:\n"
"  -f, --format=FORMAT    table, json or csv (list and show)\n";

static int
cmd_dlq(int argc, char **argv)
{
	static const char *const names[] = {"count", "to", NULL};
	static const bool values[] = {true, true};
	CmdOpts		o;
	const char *what;

	parse_cmd("dlq", dlq_help, argc, argv, names, values, &o);
	want_pos("dlq", &o, 1, 2, "list, show or redrive");
	what = o.pos[0];
	if (strcmp(what, "list") == 0)
	{
		want_pos("dlq", &o, 1, 1, "");
		print_query("SELECT queue, type, ready, unacked, total, oldest_ready_age"
					"  FROM mq.queues q"
					" WHERE queue LIKE '\\%DLQ\\%%'"
					"    OR EXISTS (SELECT 1 FROM mq.queues s JOIN mq.bindings b"
					"                 ON b.exchange = s.arguments->>'x-dead-letter-exchange'"
					"              WHERE b.queue = q.queue)"
					" ORDER BY queue", 0, NULL, o.format);
	}
	else if (strcmp(what, "show") == 0)
	{
		const char *p[2];

		want_pos("dlq", &o, 2, 2, "the queue");
		p[0] = o.pos[1];
		p[1] = o.vals[0] ? o.vals[0] : "10";
		(void) parse_count("dlq", "--count", p[1], 1, 10000);
		print_query("SELECT " MESSAGE_COLUMNS " FROM mq.browse($1, $2::int)", 2, p, o.format);
	}
	else if (strcmp(what, "redrive") == 0)
	{
		const char *p[3];

		want_pos("dlq", &o, 2, 2, "the queue");
		p[0] = o.pos[1];
		p[1] = o.vals[1];
		p[2] = o.vals[0];
		if (p[2])
			(void) parse_count("dlq", "--count", p[2], 0, 0x7fffffffL);
		print_scalar(run_query("SELECT mq.redrive($1, $2, $3::int)", 3, p));
	}
	else
		die_usage("dlq", "unknown dlq command \"%s\": list, show or redrive", what);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- seek */

static const char *seek_help =
"mqctl seek: move a consumer group of a stream to an offset or a time\n"
"(mq.seek; RocketMQ's resetOffset).\n"
"\n"
"Usage:\n"
"  mqctl seek STREAM GROUP --to-offset N [--partition P]\n"
"  mqctl seek STREAM GROUP --to-time TIMESTAMP [--partition P]\n"
"\n"
"The group next consumes offset N (or the first message stored at or after\n"
"TIMESTAMP) of every partition, or of partition P only: back over messages\n"
"it acked (they are delivered again) or forward (those between are skipped).\n"
"Its deliveries in flight are discarded.\n"
"\n"
"Options:\n"
"  --to-offset=N          the offset to consume next (clamped to what is retained)\n"
"  --to-time=TIMESTAMP    a time: '2026-12-01 10:00', 'now', ...\n"
"  --partition=P          only partition P (default: every partition)\n";

static int
cmd_seek(int argc, char **argv)
{
	static const char *const names[] = {"to-offset", "to-time", "partition", NULL};
	static const bool values[] = {true, true, true};
	CmdOpts		o;
	const char *p[5];

	parse_cmd("seek", seek_help, argc, argv, names, values, &o);
	want_pos("seek", &o, 2, 2, "the stream and the group");
	if ((o.vals[0] != NULL) == (o.vals[1] != NULL))
		die_usage("seek", "give one of --to-offset and --to-time");
	if (o.vals[0])
		(void) parse_count("seek", "--to-offset", o.vals[0], -0x7fffffffffffffffL,
						   0x7fffffffffffffffL);
	if (o.vals[2])
		(void) parse_count("seek", "--partition", o.vals[2], 0, 0x7fffffffL);
	p[0] = o.pos[0];
	p[1] = o.pos[1];
	p[2] = o.vals[0];
	p[3] = o.vals[1];
	p[4] = o.vals[2];
	PQclear(run_query("SELECT mq.seek($1, $2, to_offset => $3::bigint,"
					  " to_time => $4::timestamptz, \"partition\" => $5::int)", 5, p));
	return EXIT_OK;
}

/* ---------------------------------------------------------------- definitions */

static const char *definitions_help =
"mqctl definitions: a topology in RabbitMQ's definitions format.\n"
"\n"
"Usage:\n"
"  mqctl definitions export [FILE]     this database's exchanges, queues and\n"
"                                      bindings (mq.definitions_export), to FILE\n"
"                                      or stdout\n"
"  mqctl definitions import FILE|- [--vhost VHOST] [--format table|json|csv]\n"
"                                      declare what a RabbitMQ export holds\n"
"                                      (mq.definitions_import, one transaction)\n"
"                                      and print what was done with each object\n"
"\n"
"import exits 1 when an object failed (the others are imported; the report\n"
"says why), 0 when everything was created, existed or was reported skipped.\n";

/* The whole of FILE ("-": stdin) as a string, else exit 2 */
static char *
read_whole_file(const char *cmd, const char *path)
{
	FILE	   *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t		cap = 65536;
	size_t		len = 0;
	size_t		n;
	char	   *buf;

	if (f == NULL)
		die_usage(cmd, "could not open \"%s\": %s", path, strerror(errno));
	buf = xmalloc(cap);
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0)
	{
		len += n;
		if (len + 1 == cap)
			buf = xrealloc(buf, cap *= 2);
	}
	buf[len] = '\0';
	if (f != stdin)
		fclose(f);
	return buf;
}

static int
cmd_definitions(int argc, char **argv)
{
	static const char *const names[] = {"vhost", NULL};
	static const bool values[] = {true};
	CmdOpts		o;
	const char *what;

	parse_cmd("definitions", definitions_help, argc, argv, names, values, &o);
	want_pos("definitions", &o, 1, 2, "export or import");
	what = o.pos[0];
	if (strcmp(what, "export") == 0)
	{
		PGresult   *res;
		json_object *defs;
		FILE	   *out = stdout;

		if (o.vals[0])
			die_usage("definitions", "--vhost is for import");
		res = run_query("SELECT mq.definitions_export()", 0, NULL);
		defs = json_tokener_parse(PQgetvalue(res, 0, 0));
		if (o.npos > 1 && strcmp(o.pos[1], "-") != 0)
		{
			out = fopen(o.pos[1], "w");
			if (out == NULL)
				die_usage("definitions", "could not write \"%s\": %s", o.pos[1], strerror(errno));
		}
		fputs(json_object_to_json_string_ext(defs, JSON_C_TO_STRING_PRETTY |
											 JSON_C_TO_STRING_SPACED |
											 JSON_C_TO_STRING_NOSLASHESCAPE), out);
		fputc('\n', out);
		if (out != stdout && fclose(out) != 0)
		{
			fprintf(stderr, "%s: error: could not write \"%s\": %s\n", progname,
					o.pos[1], strerror(errno));
			return EXIT_SERVER;
		}
		json_object_put(defs);
		PQclear(res);
	}
	else if (strcmp(what, "import") == 0)
	{
		const char *p[2];
		PGresult   *res;
		int			failed = 0;
		int			action;

		want_pos("definitions", &o, 2, 2, "the file to import (- for stdin)");
		p[0] = read_whole_file("definitions", o.pos[1]);
		p[1] = o.vals[0] ? o.vals[0] : "/";
		res = run_query("SELECT * FROM mq.definitions_import($1::jsonb, $2)", 2, p);
		action = PQfnumber(res, "action");
		for (int r = 0; r < PQntuples(res); r++)
			if (action >= 0 && strcmp(PQgetvalue(res, r, action), "failed") == 0)
				failed++;
		if (o.format == FORMAT_JSON)
		{
			json_object *arr = json_object_new_array();

			for (int r = 0; r < PQntuples(res); r++)
				json_object_array_add(arr, row_to_json(res, r));
			puts(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY |
												JSON_C_TO_STRING_SPACED |
												JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(arr);
		}
		else
			print_result(res, o.format);
		PQclear(res);
		free((char *) p[0]);
		if (failed > 0)
		{
			fflush(stdout);
			fprintf(stderr, "%s: error: %d object%s could not be imported (action \"failed\" above)\n",
					progname, failed, failed == 1 ? "" : "s");
			return EXIT_SERVER;
		}
	}
	else
		die_usage("definitions", "unknown definitions command \"%s\": export or import", what);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- main */

typedef struct Command
{
	const char *name;
	int			(*fn) (int argc, char **argv);
} Command;

static const Command commands[] = {
	{"list", cmd_list},
	{"declare", cmd_declare},
	{"delete", cmd_delete},
	{"bind", cmd_bind},
	{"unbind", cmd_bind},
	{"purge", cmd_purge},
	{"publish", cmd_publish},
	{"send", cmd_send},
	{"consume", cmd_consume},
	{"read", cmd_read},
	{"seek", cmd_seek},
	{"trace", cmd_trace},
	{"lookup", cmd_lookup},
	{"dlq", cmd_dlq},
	{"definitions", cmd_definitions},
	{"top", cmd_top},
	{"bench", cmd_bench},
	{NULL, NULL}
};

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {CONN_LONGOPTS,
		{"help", no_argument, NULL, 'H'},
		{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0}};
	int			c;
	int			rc;

	setlocale(LC_ALL, "");
	opterr = 0;					/* mqctl words the errors itself */
	/* options before the command: "+" stops at the first non-option */
	while ((c = getopt_long(argc, argv, "+" CONN_SHORTOPTS, longopts, NULL)) != -1)
	{
		if (conn_option(c, optarg))
			continue;
		if (c == 'H')
		{
			fputs(main_help, stdout);
			return EXIT_OK;
		}
		if (c == 'V')
		{
			printf("mqctl (queue_ext) %s\n", MQCTL_VERSION);
			return EXIT_OK;
		}
		die_usage(NULL, "unknown option or missing value: \"%s\"", argv[optind - 1]);
	}
	if (optind >= argc)
		die_usage(NULL, "no command given");
	for (const Command *cmd = commands; cmd->name; cmd++)
	{
		if (strcmp(cmd->name, argv[optind]) == 0)
		{
			rc = cmd->fn(argc - optind, argv + optind);
			mq_disconnect();
			return rc;
		}
	}
	if (strcmp(argv[optind], "help") == 0)
	{
		fputs(main_help, stdout);
		return EXIT_OK;
	}
	die_usage(NULL, "unknown command \"%s\"", argv[optind]);
}
