/*-------------------------------------------------------------------------
 *
 * messages.c
 *	  publish, send (bodies from arguments, stdin lines or files, one
 *	  statement per message or batched, a progress bar on a terminal) and
 *	  consume (printing, then acking in the consuming transaction; --follow
 *	  long-polls until SIGINT).
 *
 *-------------------------------------------------------------------------
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mqctl.h"

#define BYTEAOID		17
#define TEXTOID			25

/* more messages than this get a progress bar on a terminal */
#define PROGRESS_THRESHOLD	2000
/* largest --batch: a statement has at most 65535 parameters */
#define MAX_BATCH		10000

/* ---------------------------------------------------------------- progress */

typedef struct Progress
{
	bool		enabled;		/* stderr is a terminal */
	long		total;			/* -1: not known */
	long		done;
	double		start;
	double		last_draw;
} Progress;

static Progress progress;

static void
format_duration(char *buf, size_t len, double s)
{
	long		t = (long) (s + 0.5);

	if (t >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
	else
		snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void
progress_draw(void)
{
	double		elapsed = now_seconds() - progress.start;
	double		rate = elapsed > 0 ? progress.done / elapsed : 0;
	char		text[160];
	char		dur[32];
	int			width = terminal_width(stderr);

	if (progress.total > 0)
	{
		int			pct = (int) (100.0 * progress.done / progress.total);
		int			barw;
		int			fill;

		if (rate > 0 && progress.done < progress.total)
			format_duration(dur, sizeof(dur), (progress.total - progress.done) / rate);
		else
			format_duration(dur, sizeof(dur), 0);
		snprintf(text, sizeof(text), " %ld/%ld %3d%% %.0f msg/s ETA %s",
				 progress.done, progress.total, pct, rate, dur);
		barw = width - (int) strlen(text) - 3;
		if (barw > 40)
			barw = 40;
		fputc('\r', stderr);
		if (barw >= 10)
		{
			fill = (int) ((long) barw * progress.done / progress.total);
			fputc('[', stderr);
			for (int i = 0; i < barw; i++)
				fputc(i < fill ? '#' : '.', stderr);
			fputc(']', stderr);
		}
		fputs(text, stderr);
	}
	else
	{
		format_duration(dur, sizeof(dur), elapsed);
		snprintf(text, sizeof(text), "%ld messages %.0f msg/s %s elapsed",
				 progress.done, rate, dur);
		fprintf(stderr, "\r%s", text);
	}
	fputs("\033[K", stderr);
	fflush(stderr);
	progress.last_draw = now_seconds();
}

static void
progress_start(long total)
{
	memset(&progress, 0, sizeof(progress));
	progress_line_open = false;
	progress.enabled = isatty(fileno(stderr));
	progress.total = total;
	progress.start = now_seconds();
}

static void
progress_add(long n)
{
	progress.done += n;
	if (!progress.enabled)
		return;
	if (!progress_line_open &&
		(progress.total > PROGRESS_THRESHOLD ||
		 (progress.total < 0 && progress.done > PROGRESS_THRESHOLD)))
		progress_line_open = true;
	if (progress_line_open &&
		(now_seconds() - progress.last_draw >= 0.2 || progress.done == progress.total))
		progress_draw();
}

static void
progress_finish(void)
{
	if (progress_line_open)
	{
		progress_draw();
		end_progress_line();
	}
}

/* ---------------------------------------------------------------- bodies */

typedef struct Body
{
	char	   *data;
	int			len;
} Body;

/* Where the bodies come from: arguments, the files of a directory, stdin */
typedef struct BodySource
{
	char	  **args;
	int			nargs;
	const char *dir;
	char	  **files;
	int			nfiles;
	int			next;
} BodySource;

static int
regular_file(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static void
source_open(const char *cmd, BodySource *src)
{
	struct dirent **list;
	int			n;

	if (src->dir == NULL)
		return;
	n = scandir(src->dir, &list, regular_file, alphasort);
	if (n < 0)
	{
		fprintf(stderr, "%s: error: could not read directory \"%s\": %s\n",
				progname, src->dir, strerror(errno));
		exit(EXIT_USAGE);
	}
	src->files = xmalloc(sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		size_t		len = strlen(src->dir) + strlen(list[i]->d_name) + 2;
		char	   *path = xmalloc(len);
		struct stat st;

		snprintf(path, len, "%s/%s", src->dir, list[i]->d_name);
		free(list[i]);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		{
			free(path);
			continue;
		}
		src->files[src->nfiles++] = path;
	}
	free(list);
	(void) cmd;
}

/* How many bodies there are, -1 when not known (stdin) */
static long
source_total(BodySource *src)
{
	if (src->nargs > 0)
		return src->nargs;
	if (src->dir)
		return src->nfiles;
	return -1;
}

/* The next body (malloc'd data) into *b; false at the end */
static bool
source_next(BodySource *src, Body *b)
{
	if (src->nargs > 0)
	{
		if (src->next >= src->nargs)
			return false;
		b->data = xstrdup(src->args[src->next++]);
		b->len = (int) strlen(b->data);
		return true;
	}
	if (src->dir)
	{
		FILE	   *f;
		size_t		cap = 8192;
		size_t		len = 0;
		size_t		n;

		if (src->next >= src->nfiles)
			return false;
		f = fopen(src->files[src->next], "rb");
		if (f == NULL)
		{
			end_progress_line();
			fprintf(stderr, "%s: error: could not open \"%s\": %s\n",
					progname, src->files[src->next], strerror(errno));
			exit(EXIT_USAGE);
		}
		b->data = xmalloc(cap);
		while ((n = fread(b->data + len, 1, cap - len, f)) > 0)
		{
			len += n;
			if (len == cap)
				b->data = xrealloc(b->data, cap *= 2);
		}
		fclose(f);
		b->len = (int) len;
		src->next++;
		return true;
	}
	else
	{
		char	   *line = NULL;
		size_t		cap = 0;
		ssize_t		n = getline(&line, &cap, stdin);

		if (n < 0)
		{
			free(line);
			return false;
		}
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		b->data = line;
		b->len = (int) n;
		return true;
	}
}

/* ---------------------------------------------------------------- signals */

static volatile sig_atomic_t interrupted;
static volatile sig_atomic_t waiting;
static PGcancel *volatile cancel_handle;

/*
 * SIGINT or SIGTERM during publish or send: the statement running ends
 * (it commits on its own), then mqctl says how many were sent and exits; a
 * second one cancels that statement
 */
static void
on_send_signal(int signo)
{
	char		errbuf[256];

	(void) signo;
	if (interrupted++ > 0 && cancel_handle)
		(void) PQcancel(cancel_handle, errbuf, sizeof(errbuf));
}

/* Catch SIGINT and SIGTERM with handler, without restarting reads */
static void
catch_signals(void (*handler) (int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* Did this statement fail because a second Ctrl-C cancelled it? */
static bool
cancelled(PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	return interrupted > 1 && PQresultStatus(res) != PGRES_TUPLES_OK &&
		state != NULL && strcmp(state, "57014") == 0;
}

/* Interrupted publish or send: how many were sent (committed), exit 130 */
static void
die_interrupted(const char *cmd, long sent)
{
	end_progress_line();
	fflush(stdout);
	fprintf(stderr, "%s: %s interrupted: %ld message%s sent and committed;"
			" no more were sent\n", progname, cmd, sent, sent == 1 ? "" : "s");
	mq_disconnect();
	exit(EXIT_INTERRUPTED);
}

/* ---------------------------------------------------------------- publish, send */

static const char *publish_help =
"mqctl publish / send: publish messages.\n"
"\n"
"Usage:\n"
"  mqctl publish EXCHANGE ROUTING_KEY [BODY]... [OPTION]...\n"
"  mqctl send QUEUE [BODY]... [OPTION]...\n"
"\n"
"Each BODY argument is a message; without any, each line of stdin is one\n"
"(its newline removed), or with --files DIR each file of DIR (sorted by name).\n"
"send publishes through the default exchange to QUEUE (always mandatory);\n"
"the default exchange is '' (or amq.default, as rabbitmqadmin names it).\n"
"\n"
"On a terminal, past 2000 messages, stderr shows the progress: with BODY\n"
"arguments or --files (the total is known) a bar with the count, the rate\n"
"and the time left (ETA); with stdin (the total is unknown, so no ETA) the\n"
"count, the rate and the time elapsed.  Ctrl-C (SIGINT) stops after the\n"
"statement running and prints how many messages were sent (committed);\n"
"exit status 130.\n"
"\n"
"Options:\n"
"  --files=DIR            one message per file of DIR\n"
"  --header=KEY=VALUE     a header (repeatable; VALUE as JSON if it reads as JSON)\n"
"  --key=KEY              the message key (mq.messages_by_key)\n"
"  --tag=TAG              the tag (consumer group filters)\n"
"  --message-group=GROUP  the message group (ordered delivery)\n"
"  --delay=INTERVAL       deliver later ('10 seconds', '5 min')\n"
"  --dedup-id=ID          deduplication id\n"
"  --priority=N, --expiration=INTERVAL, --content-type=TYPE, --correlation-id=ID,\n"
"  --reply-to=QUEUE, --durability=async|local|quorum, --partition=N\n"
"                         the other properties of mq.publish\n"
"  --mandatory            (publish) an unroutable message is an error\n"
"  --batch=N              N messages per statement (mq.publish_batch /\n"
"                         mq.send_batch; with --header, --key, --tag, --delay,\n"
"                         --durability, --partition, --mandatory only);\n"
"                         default 1\n"
"  --ids                  print the id of each message published\n";

enum
{
	P_FILES, P_HEADER, P_KEY, P_TAG, P_GROUP, P_DELAY, P_DEDUP, P_PRIORITY,
	P_EXPIRATION, P_CONTENT_TYPE, P_CORRELATION, P_REPLY_TO, P_DURABILITY,
	P_PARTITION, P_MANDATORY, P_BATCH, P_IDS, P_HELP, P_COUNT
};

/* text parameters of the statements, in this order ($1 .. $17) */
enum
{
	Q_TARGET, Q_RKEY, Q_BODY, Q_HEADERS, Q_MANDATORY, Q_DELAY, Q_KEY, Q_TAG,
	Q_GROUP, Q_PRIORITY, Q_EXPIRATION, Q_DEDUP, Q_CONTENT_TYPE, Q_CORRELATION,
	Q_REPLY_TO, Q_DURABILITY, Q_PARTITION, Q_COUNT
};

static int
publish_main(int argc, char **argv, bool is_send)
{
	static const struct option longopts[] = {
		CONN_LONGOPTS,
		{"files", required_argument, NULL, P_FILES},
		{"header", required_argument, NULL, P_HEADER},
		{"key", required_argument, NULL, P_KEY},
		{"tag", required_argument, NULL, P_TAG},
		{"message-group", required_argument, NULL, P_GROUP},
		{"delay", required_argument, NULL, P_DELAY},
		{"dedup-id", required_argument, NULL, P_DEDUP},
		{"priority", required_argument, NULL, P_PRIORITY},
		{"expiration", required_argument, NULL, P_EXPIRATION},
		{"content-type", required_argument, NULL, P_CONTENT_TYPE},
		{"correlation-id", required_argument, NULL, P_CORRELATION},
		{"reply-to", required_argument, NULL, P_REPLY_TO},
		{"durability", required_argument, NULL, P_DURABILITY},
		{"partition", required_argument, NULL, P_PARTITION},
		{"mandatory", no_argument, NULL, P_MANDATORY},
		{"batch", required_argument, NULL, P_BATCH},
		{"ids", no_argument, NULL, P_IDS},
		{"help", no_argument, NULL, P_HELP},
		{NULL, 0, NULL, 0}
	};
	const char *cmd = argv[0];
	const char *opt[P_COUNT];
	json_object *headers = json_object_new_object();
	bool		have_headers = false;
	long		batch = 1;
	int			npos = is_send ? 1 : 2;
	BodySource	src;
	const char *p[Q_COUNT];
	Oid			types[Q_COUNT];
	int			formats[Q_COUNT];
	int			lengths[Q_COUNT];
	long		unroutable = 0;
	int			c;
	Body	   *bodies;
	PGconn	   *pg;

	memset(opt, 0, sizeof(opt));
	memset(&src, 0, sizeof(src));
	if (want_help(argc, argv))
	{
		fputs(publish_help, stdout);
		fputs(CONN_HELP, stdout);
		return EXIT_OK;
	}
	optind = 0;
	while ((c = getopt_long(argc, argv, CONN_SHORTOPTS, longopts, NULL)) != -1)
	{
		if (conn_option(c, optarg))
			continue;
		if (c < 0 || c >= P_COUNT || c == P_HELP)
			die_usage(cmd, "unknown option or missing value: \"%s\"", argv[optind - 1]);
		if (c == P_HEADER)
		{
			add_kv(cmd, "--header", headers, optarg);
			have_headers = true;
		}
		else
			opt[c] = optarg ? optarg : "";
	}
	if (is_send && opt[P_MANDATORY])
		die_usage(cmd, "send is always mandatory: --mandatory is for publish");
	if (argc - optind < npos)
		die_usage(cmd, is_send ? "missing the queue" : "missing the exchange and the routing key");
	for (int i = 0; i < npos; i++)
		check_name(cmd, publish_help, argv[optind + i]);
	if (opt[P_BATCH])
		batch = parse_count(cmd, "--batch", opt[P_BATCH], 1, MAX_BATCH);
	if (opt[P_PRIORITY])
		(void) parse_count(cmd, "--priority", opt[P_PRIORITY], 0, 255);
	if (opt[P_PARTITION])
		(void) parse_count(cmd, "--partition", opt[P_PARTITION], 0, 0x7fffffffL);
	if (batch > 1)
	{
		static const int single_only[] = {P_GROUP, P_DEDUP,
			P_PRIORITY, P_EXPIRATION, P_CONTENT_TYPE, P_CORRELATION, P_REPLY_TO};

		for (size_t i = 0; i < sizeof(single_only) / sizeof(single_only[0]); i++)
			if (opt[single_only[i]])
				die_usage(cmd, "--%s cannot be used with --batch (mq.%s_batch does not take it)",
						  longopts[6 + single_only[i]].name, is_send ? "send" : "publish");
	}
	src.args = argv + optind + npos;
	src.nargs = argc - optind - npos;
	src.dir = opt[P_FILES];
	if (src.dir && src.nargs > 0)
		die_usage(cmd, "give bodies as arguments or --files, not both");
	source_open(cmd, &src);

	memset(p, 0, sizeof(p));
	for (int i = 0; i < Q_COUNT; i++)
		types[i] = TEXTOID, formats[i] = 0, lengths[i] = 0;
	p[Q_TARGET] = is_send ? argv[optind] : exchange_name(argv[optind]);
	p[Q_RKEY] = is_send ? NULL : argv[optind + 1];
	p[Q_HEADERS] = have_headers ?
		json_object_to_json_string_ext(headers, JSON_C_TO_STRING_PLAIN) : NULL;
	p[Q_MANDATORY] = opt[P_MANDATORY] ? "true" : "false";
	p[Q_DELAY] = opt[P_DELAY];
	p[Q_KEY] = opt[P_KEY];
	p[Q_TAG] = opt[P_TAG];
	p[Q_GROUP] = opt[P_GROUP];
	p[Q_PRIORITY] = opt[P_PRIORITY];
	p[Q_EXPIRATION] = opt[P_EXPIRATION];
	p[Q_DEDUP] = opt[P_DEDUP];
	p[Q_CONTENT_TYPE] = opt[P_CONTENT_TYPE];
	p[Q_CORRELATION] = opt[P_CORRELATION];
	p[Q_REPLY_TO] = opt[P_REPLY_TO];
	p[Q_DURABILITY] = opt[P_DURABILITY];
	p[Q_PARTITION] = opt[P_PARTITION];
	types[Q_BODY] = BYTEAOID;
	formats[Q_BODY] = 1;

	pg = mq_connect();
	cancel_handle = PQgetCancel(pg);
	catch_signals(on_send_signal);
	progress_start(source_total(&src));
	bodies = xmalloc(sizeof(Body) * batch);
	if (batch == 1)
	{
		const char *sql = is_send ?
			"SELECT mq.send($1, $3::bytea, headers => $4::jsonb, delay => $6::interval,"
			" key => $7, tag => $8, message_group => $9, priority => $10::int,"
			" expiration => $11::interval, dedup_id => $12, content_type => $13,"
			" correlation_id => $14, reply_to => $15, durability => $16,"
			" \"partition\" => $17::int)" :
			"SELECT mq.publish($1, $2, $3::bytea, headers => $4::jsonb,"
			" mandatory => $5::boolean, delay => $6::interval,"
			" key => $7, tag => $8, message_group => $9, priority => $10::int,"
			" expiration => $11::interval, dedup_id => $12, content_type => $13,"
			" correlation_id => $14, reply_to => $15, durability => $16,"
			" \"partition\" => $17::int)";
		PGresult   *res = PQprepare(pg, "pub", sql, Q_COUNT, types);

		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			die_result(res);
		PQclear(res);
		while (!interrupted && source_next(&src, &bodies[0]))
		{
			p[Q_BODY] = bodies[0].data;
			lengths[Q_BODY] = bodies[0].len;
			res = PQexecPrepared(pg, "pub", Q_COUNT, p, lengths, formats, 0);
			if (cancelled(res))
				die_interrupted(cmd, progress.done);
			if (PQresultStatus(res) != PGRES_TUPLES_OK)
				die_result(res);
			if (PQgetisnull(res, 0, 0))
				unroutable++;
			if (opt[P_IDS])
				printf("%s\n", PQgetvalue(res, 0, 0));
			PQclear(res);
			free(bodies[0].data);
			progress_add(1);
		}
	}
	else
	{
		/*
		 * $1 target, $2 routing key, $3 headers, $4 mandatory, $5 delay, $6
		 * durability, $7 partition, $8 key, $9 tag, $10... the bodies
		 */
		const int	nfixed = 9;
		const char **bp = xmalloc(sizeof(char *) * (nfixed + batch));
		Oid		   *bt = xmalloc(sizeof(Oid) * (nfixed + batch));
		int		   *bl = xmalloc(sizeof(int) * (nfixed + batch));
		int		   *bf = xmalloc(sizeof(int) * (nfixed + batch));
		size_t		sqlcap = 512 + 16 * batch;
		char	   *sql = xmalloc(sqlcap);

		bp[0] = p[Q_TARGET];
		bp[1] = is_send ? "" : p[Q_RKEY];
		bp[2] = p[Q_HEADERS];
		bp[3] = p[Q_MANDATORY];
		bp[4] = p[Q_DELAY];
		bp[5] = p[Q_DURABILITY];
		bp[6] = p[Q_PARTITION];
		bp[7] = p[Q_KEY];
		bp[8] = p[Q_TAG];
		for (int i = 0; i < nfixed + batch; i++)
		{
			bt[i] = i < nfixed ? TEXTOID : BYTEAOID;
			bf[i] = i < nfixed ? 0 : 1;
			bl[i] = 0;
		}
		for (;;)
		{
			int			n = 0;
			size_t		len;
			PGresult   *res;

			while (!interrupted && n < batch && source_next(&src, &bodies[n]))
			{
				bp[nfixed + n] = bodies[n].data;
				bl[nfixed + n] = bodies[n].len;
				n++;
			}
			/* Ctrl-C while the batch was read: none of it is sent */
			if (n == 0 || interrupted)
				break;
			len = snprintf(sql, sqlcap, "SELECT * FROM mq.%s($1, %sARRAY[",
						   is_send ? "send_batch" : "publish_batch",
						   is_send ? "" : "ARRAY[$2], ");
			for (int i = 0; i < n; i++)
				len += snprintf(sql + len, sqlcap - len, "%s$%d::bytea",
								i > 0 ? "," : "", nfixed + 1 + i);
			snprintf(sql + len, sqlcap - len,
					 "], headers => CASE WHEN $3::jsonb IS NULL THEN NULL"
					 " ELSE array_fill($3::jsonb, ARRAY[%d]) END,%s"
					 " delay => $5::interval, durability => $6, \"partition\" => $7::int,"
					 " keys => CASE WHEN $8::text IS NULL THEN NULL"
					 " ELSE array_fill($8::text, ARRAY[%d]) END,"
					 " tags => CASE WHEN $9::text IS NULL THEN NULL"
					 " ELSE array_fill($9::text, ARRAY[%d]) END)",
					 n, is_send ? "" : " mandatory => $4::boolean,", n, n);
			res = PQexecParams(pg, sql, nfixed + n, bt, bp, bl, bf, 0);
			if (cancelled(res))
				die_interrupted(cmd, progress.done);
			if (PQresultStatus(res) != PGRES_TUPLES_OK)
				die_result(res);
			for (int r = 0; r < PQntuples(res); r++)
			{
				if (PQgetisnull(res, r, 0))
					unroutable++;
				if (opt[P_IDS])
					printf("%s\n", PQgetvalue(res, r, 0));
			}
			PQclear(res);
			for (int i = 0; i < n; i++)
				free(bodies[i].data);
			progress_add(n);
		}
	}
	if (interrupted)
		die_interrupted(cmd, progress.done);
	progress_finish();
	fflush(stdout);
	if (unroutable > 0)
		fprintf(stderr, "%s: warning: %ld message%s routed to no queue\n",
				progname, unroutable, unroutable == 1 ? " was" : "s were");
	return EXIT_OK;
}

int
cmd_publish(int argc, char **argv)
{
	return publish_main(argc, argv, false);
}

int
cmd_send(int argc, char **argv)
{
	return publish_main(argc, argv, true);
}

/* ---------------------------------------------------------------- consume */

static const char *consume_help =
"mqctl consume: take messages from a queue, print them and ack them.\n"
"\n"
"Usage:\n"
"  mqctl consume QUEUE [OPTION]...\n"
"\n"
"Each batch is taken, acked and committed in one transaction, then printed:\n"
"a message printed is acked, and one not printed is not (it comes back).\n"
"\n"
"Options:\n"
"  --group=GROUP          consumer group (streams)\n"
"  --consumer=NAME        consumer name (prefetch declarations, broadcast groups)\n"
"  -n, --count=N          take at most N messages (default 1; --follow: no limit)\n"
"  --follow               long-poll for new messages like tail -f, until Ctrl-C\n"
"  --wait=SECONDS         how long one call waits for a message (default 0;\n"
"                         --follow: 10)\n"
"  --lease=INTERVAL       lease of the deliveries (default 30 seconds)\n"
"  --ack                  ack what was printed (default)\n"
"  --no-ack               leave it unacked: it comes back when mqctl exits\n"
"  --requeue              nack it with requeue: ready again at once\n"
"  --format=raw|json      raw: each body and a newline (default); json: one\n"
"                         object per line with every column of mq.consume (body\n"
"                         as a string, or body_base64 when it is not UTF-8)\n";

enum
{
	C_GROUP, C_CONSUMER, C_COUNT, C_FOLLOW, C_WAIT, C_LEASE, C_ACK, C_NO_ACK,
	C_REQUEUE, C_FORMAT, C_HELP, C_NOPTS
};

/*
 * The columns of mq.consume, published_at as JSON writes times (ISO 8601,
 * as in the JSON of list)
 */
#define CONSUME_COLUMNS \
	"msg_id, queue, exchange, routing_key, body, headers," \
	" to_json(published_at) #>> '{}' AS published_at, redelivered, delivery_count," \
	" \"partition\", \"offset\", key, tag, message_group, priority, properties," \
	" reconsume_times, receipt"

/*
 * SIGINT or SIGTERM during consume: a call waiting for messages is woken
 * by consume_exec; a second signal cancels it (it took nothing)
 */
static void
on_signal(int signo)
{
	char		errbuf[256];

	(void) signo;
	if (interrupted++ > 0 && waiting && cancel_handle)
		(void) PQcancel(cancel_handle, errbuf, sizeof(errbuf));
}

/*
 * End the long poll of pg's session quietly: mq._consume_wake(its pid) from
 * a second connection with the same parameters, so that mq.consume returns
 * what it has without an error (nothing in the server's log, as the
 * gateway's basic.cancel).  PQcancel only when the wake cannot be sent.
 */
static void
wake_consumer(PGconn *pg)
{
	PQconninfoOption *opts = PQconninfo(pg);
	const char *keywords[64];
	const char *values[64];
	int			n = 0;
	PGconn	   *w;
	bool		woken = false;
	char		errbuf[256];

	for (PQconninfoOption *o = opts; o && o->keyword && n < 63; o++)
		if (o->val && o->val[0])
			keywords[n] = o->keyword, values[n++] = o->val;
	keywords[n] = NULL, values[n] = NULL;
	w = PQconnectdbParams(keywords, values, 0);
	if (PQstatus(w) == CONNECTION_OK)
	{
		char		pid[16];
		const char *p[1] = {pid};
		PGresult   *res;

		snprintf(pid, sizeof(pid), "%d", PQbackendPID(pg));
		res = PQexecParams(w, "SELECT mq._consume_wake($1::int)", 1, NULL, p, NULL, NULL, 0);
		woken = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
			strcmp(PQgetvalue(res, 0, 0), "t") == 0;
		PQclear(res);
	}
	PQfinish(w);
	PQconninfoFree(opts);
	if (!woken && cancel_handle)
		(void) PQcancel(cancel_handle, errbuf, sizeof(errbuf));
}

/*
 * Run a call of mq.consume that may wait (its last result; NULL if the
 * connection broke), waking it at Ctrl-C
 */
static PGresult *
consume_exec(PGconn *pg, const char *sql, int n, const char *const *p)
{
	PGresult   *res;
	PGresult   *last = NULL;
	bool		woken = false;

	if (!PQsendQueryParams(pg, sql, n, NULL, p, NULL, NULL, 0))
		return NULL;
	for (;;)
	{
		while (PQisBusy(pg))
		{
			struct pollfd pfd;

			if (interrupted && !woken)
			{
				wake_consumer(pg);
				woken = true;
			}
			pfd.fd = PQsocket(pg);
			pfd.events = POLLIN;
			pfd.revents = 0;
			/* a signal between the test above and poll: seen 0.2 s later */
			if (poll(&pfd, 1, 200) < 0 && errno != EINTR)
				break;
			if (!PQconsumeInput(pg))
				break;
		}
		res = PQgetResult(pg);
		if (res == NULL)
			break;
		PQclear(last);
		last = res;
	}
	return last;
}

static char *
base64_encode(const unsigned char *s, size_t len)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char	   *out = xmalloc((len + 2) / 3 * 4 + 1);
	char	   *o = out;

	for (size_t i = 0; i < len; i += 3)
	{
		unsigned int v = s[i] << 16;

		if (i + 1 < len)
			v |= s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		*o++ = tab[(v >> 18) & 63];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? tab[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* Write row r of a consume result to f in fmt */
static void
format_message(FILE *f, PGresult *res, int r, OutputFormat fmt)
{
	int			bcol = PQfnumber(res, "body");
	size_t		blen = 0;
	unsigned char *body = PQunescapeBytea((unsigned char *) PQgetvalue(res, r, bcol), &blen);

	if (fmt == FORMAT_RAW)
	{
		fwrite(body, 1, blen, f);
		fputc('\n', f);
	}
	else
	{
		json_object *obj = json_object_new_object();

		for (int c = 0; c < PQnfields(res); c++)
		{
			if (c != bcol)
				json_object_object_add(obj, PQfname(res, c), value_to_json(res, r, c));
			else if (valid_utf8((char *) body, blen))
				json_object_object_add(obj, "body",
									   json_object_new_string_len((char *) body, (int) blen));
			else
			{
				char	   *b64 = base64_encode(body, blen);

				json_object_object_add(obj, "body_base64", json_object_new_string(b64));
				free(b64);
			}
		}
		fputs(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
											 JSON_C_TO_STRING_NOSLASHESCAPE), f);
		fputc('\n', f);
		json_object_put(obj);
	}
	PQfreemem(body);
}

/* Run sql in the open transaction; false (rolled back) on an error */
static bool
xact_query(PGconn *pg, const char *sql, int n, const char *const *p, PGresult **out)
{
	PGresult   *res = PQexecParams(pg, sql, n, NULL, p, NULL, NULL, 0);

	if (PQresultStatus(res) == PGRES_TUPLES_OK || PQresultStatus(res) == PGRES_COMMAND_OK)
	{
		if (out)
			*out = res;
		else
			PQclear(res);
		return true;
	}
	if (interrupted)
	{
		/* cancelled by Ctrl-C: nothing of this transaction is kept */
		PQclear(res);
		PQclear(PQexec(pg, "ROLLBACK"));
		return false;
	}
	die_result(res);
}

/*
 * The options and the one argument of consume and read: each option's value
 * into opt[0 .. nopts - 1] ("" for one without a value), -n as the option
 * count_opt; the last option, nopts - 1, is --help. Returns the argument,
 * the name of a queue or stream (what), checked; NULL when --help asked for
 * the help, which is printed.
 */
static const char *
one_name_options(const char *cmd, const char *help, const char *what,
				 int argc, char **argv, const struct option *longopts,
				 int count_opt, int nopts, const char **opt)
{
	int			c;

	memset(opt, 0, nopts * sizeof(*opt));
	if (want_help(argc, argv))
	{
		fputs(help, stdout);
		fputs(CONN_HELP, stdout);
		return NULL;
	}
	optind = 0;
	while ((c = getopt_long(argc, argv, CONN_SHORTOPTS "n:", longopts, NULL)) != -1)
	{
		if (conn_option(c, optarg))
			continue;
		if (c == 'n')
			c = count_opt;
		if (c < 0 || c >= nopts || c == nopts - 1)
			die_usage(cmd, "unknown option or missing value: \"%s\"", argv[optind - 1]);
		opt[c] = optarg ? optarg : "";
	}
	if (argc - optind < 1)
		die_usage(cmd, "missing the %s", what);
	if (argc - optind > 1)
		die_usage(cmd, "too many arguments (\"%s\")", argv[optind + 1]);
	check_name(cmd, help, argv[optind]);
	return argv[optind];
}

int
cmd_consume(int argc, char **argv)
{
	static const struct option longopts[] = {
		CONN_LONGOPTS,
		{"group", required_argument, NULL, C_GROUP},
		{"consumer", required_argument, NULL, C_CONSUMER},
		{"count", required_argument, NULL, C_COUNT},
		{"follow", no_argument, NULL, C_FOLLOW},
		{"wait", required_argument, NULL, C_WAIT},
		{"lease", required_argument, NULL, C_LEASE},
		{"ack", no_argument, NULL, C_ACK},
		{"no-ack", no_argument, NULL, C_NO_ACK},
		{"requeue", no_argument, NULL, C_REQUEUE},
		{"format", required_argument, NULL, C_FORMAT},
		{"help", no_argument, NULL, C_HELP},
		{NULL, 0, NULL, 0}
	};
	const char *opt[C_NOPTS];
	OutputFormat fmt = FORMAT_RAW;
	long		count;
	long		taken = 0;
	int			settle;
	char		wait[32];
	const char *queue;
	const char *p[6];
	PGconn	   *pg;

	queue = one_name_options("consume", consume_help, "queue", argc, argv,
							 longopts, C_COUNT, C_NOPTS, opt);
	if (queue == NULL)
		return EXIT_OK;
	if ((opt[C_ACK] != NULL) + (opt[C_NO_ACK] != NULL) + (opt[C_REQUEUE] != NULL) > 1)
		die_usage("consume", "--ack, --no-ack and --requeue exclude each other");
	settle = opt[C_NO_ACK] ? 0 : opt[C_REQUEUE] ? 2 : 1;
	if (opt[C_FORMAT] && !parse_format(opt[C_FORMAT], true, &fmt))
		die_usage("consume", "--format must be raw or json, not \"%s\"", opt[C_FORMAT]);
	count = opt[C_COUNT] ? parse_count("consume", "--count", opt[C_COUNT], 1, 0x7fffffffffffffffL) :
		opt[C_FOLLOW] ? -1 : 1;
	snprintf(wait, sizeof(wait), "%ld seconds",
			 opt[C_WAIT] ? parse_count("consume", "--wait", opt[C_WAIT], 0, 86400) :
			 opt[C_FOLLOW] ? 10 : 0);

	pg = mq_connect();
	cancel_handle = PQgetCancel(pg);
	catch_signals(on_signal);

	p[0] = queue;
	p[3] = opt[C_LEASE] ? opt[C_LEASE] : "30 seconds";
	p[4] = opt[C_GROUP];
	p[5] = opt[C_CONSUMER];
	p[2] = wait;
	while (!interrupted && (count < 0 || taken < count))
	{
		long		want = count < 0 || count - taken > 100 ? 100 : count - taken;
		char		nbuf[32];
		PGresult   *res = NULL;
		char	   *out = NULL;
		size_t		outlen = 0;
		FILE	   *mem;
		bool		ok;
		int			n;

		snprintf(nbuf, sizeof(nbuf), "%ld", want);
		p[1] = nbuf;
		if (!xact_query(pg, "BEGIN", 0, NULL, NULL))
			break;
		waiting = 1;
		if (interrupted)
			ok = false, PQclear(PQexec(pg, "ROLLBACK"));
		else
		{
			res = consume_exec(pg, "SELECT " CONSUME_COLUMNS " FROM mq.consume($1, $2::int,"
							   " wait => $3::interval, lease => $4::interval, group_name => $5,"
							   " consumer => $6)", 6, p);
			ok = res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK;
			if (res == NULL)
				die_conn();
			if (!ok && !interrupted)
				die_result(res);
			if (!ok)
			{
				/* cancelled by a second Ctrl-C: nothing of it is kept */
				PQclear(res);
				PQclear(PQexec(pg, "ROLLBACK"));
			}
		}
		waiting = 0;
		if (!ok)
			break;
		n = PQntuples(res);
		mem = open_memstream(&out, &outlen);
		if (n > 0)
		{
			size_t		cap = 16 + 21 * (size_t) n;
			char	   *ids = xmalloc(cap);
			size_t		len = 0;
			const char *sp[4];

			ids[len++] = '{';
			for (int r = 0; r < n; r++)
			{
				format_message(mem, res, r, fmt);
				len += snprintf(ids + len, cap - len, "%s%s", r > 0 ? "," : "",
								PQgetvalue(res, r, 0));
			}
			snprintf(ids + len, cap - len, "}");
			sp[0] = p[0];
			sp[1] = ids;
			sp[2] = p[4];
			sp[3] = p[5];
			ok = true;
			if (settle == 1)
				ok = xact_query(pg, "SELECT mq.ack($1, $2::bigint[], group_name => $3,"
								" consumer => $4)", 4, sp, NULL);
			else if (settle == 2)
				ok = xact_query(pg, "SELECT mq.nack($1, $2::bigint[], requeue => true,"
								" group_name => $3, consumer => $4)", 4, sp, NULL);
			free(ids);
		}
		PQclear(res);
		fclose(mem);
		if (ok)
			ok = xact_query(pg, "COMMIT", 0, NULL, NULL);
		if (ok)
		{
			/* committed: now what was acked is printed */
			fwrite(out, 1, outlen, stdout);
			fflush(stdout);
			taken += n;
		}
		free(out);
		if (!ok)
			break;
		if (!opt[C_FOLLOW] && n < want)
			break;
	}
	PQfreeCancel(cancel_handle);
	cancel_handle = NULL;
	return EXIT_OK;
}

/* ---------------------------------------------------------------- read */

static const char *read_help =
"mqctl read: read a stream's partition from an offset or a time (mq.read),\n"
"as kcat -C -o does: no consumer group, nothing is taken or acked.\n"
"\n"
"Usage:\n"
"  mqctl read STREAM [--partition P] [--offset O | --from-time TIMESTAMP]\n"
"                    [-n|--count N] [--format raw|json]\n"
"\n"
"Without --offset or --from-time it reads from the first retained message.\n"
"It stops after N messages or at the end of what is committed; read on\n"
"from the last offset printed + 1.\n"
"\n"
"Options:\n"
"  --partition=P          the partition (default 0)\n"
"  --offset=O             the first offset to read\n"
"  --from-time=TIMESTAMP  from the first message stored at or after it\n"
"  -n, --count=N          at most N messages (default 100)\n"
"  --format=raw|json      raw: each body and a newline (default); json: one\n"
"                         object per line with every column of mq.read, as\n"
"                         consume --format json prints them\n";

enum
{
	R_PARTITION, R_OFFSET, R_FROM_TIME, R_COUNT, R_FORMAT, R_HELP, R_NOPTS
};

int
cmd_read(int argc, char **argv)
{
	static const struct option longopts[] = {
		CONN_LONGOPTS,
		{"partition", required_argument, NULL, R_PARTITION},
		{"offset", required_argument, NULL, R_OFFSET},
		{"from-time", required_argument, NULL, R_FROM_TIME},
		{"count", required_argument, NULL, R_COUNT},
		{"format", required_argument, NULL, R_FORMAT},
		{"help", no_argument, NULL, R_HELP},
		{NULL, 0, NULL, 0}
	};
	const char *opt[R_NOPTS];
	OutputFormat fmt = FORMAT_RAW;
	long		count;
	long		done = 0;
	char		offset[32];
	const char *stream;
	const char *p[5];

	stream = one_name_options("read", read_help, "stream", argc, argv,
							  longopts, R_COUNT, R_NOPTS, opt);
	if (stream == NULL)
		return EXIT_OK;
	if (opt[R_OFFSET] && opt[R_FROM_TIME])
		die_usage("read", "--offset and --from-time exclude each other");
	if (opt[R_PARTITION])
		(void) parse_count("read", "--partition", opt[R_PARTITION], 0, 0x7fffffffL);
	if (opt[R_OFFSET])
		(void) parse_count("read", "--offset", opt[R_OFFSET], 0, 0x7fffffffffffffffL);
	count = opt[R_COUNT] ? parse_count("read", "--count", opt[R_COUNT], 1, 0x7fffffffffffffffL) : 100;
	if (opt[R_FORMAT] && !parse_format(opt[R_FORMAT], true, &fmt))
		die_usage("read", "--format must be raw or json, not \"%s\"", opt[R_FORMAT]);

	p[0] = stream;
	p[1] = opt[R_PARTITION] ? opt[R_PARTITION] : "0";
	p[2] = opt[R_OFFSET];
	p[4] = opt[R_FROM_TIME];
	/* in chunks of at most 1000, each from the offset after the last one */
	while (done < count)
	{
		long		want = count - done > 1000 ? 1000 : count - done;
		char		nbuf[32];
		PGresult   *res;
		int			ocol;
		int			n;

		snprintf(nbuf, sizeof(nbuf), "%ld", want);
		p[3] = nbuf;
		res = run_query("SELECT " CONSUME_COLUMNS " FROM mq.read($1, $2::int,"
						" from_offset => $3::bigint, max_messages => $4::int,"
						" from_time => $5::timestamptz)", 5, p);
		n = PQntuples(res);
		ocol = PQfnumber(res, "offset");
		for (int r = 0; r < n; r++)
			format_message(stdout, res, r, fmt);
		done += n;
		if (n > 0)
		{
			snprintf(offset, sizeof(offset), "%lld",
					 atoll(PQgetvalue(res, n - 1, ocol)) + 1);
			p[2] = offset;
			p[4] = NULL;
		}
		PQclear(res);
		if (n < want)
			break;
	}
	fflush(stdout);
	return EXIT_OK;
}
