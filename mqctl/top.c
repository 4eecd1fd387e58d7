/*-------------------------------------------------------------------------
 *
 * top.c
 *	  mqctl top: a live screen (ncurses) of every queue and consumer group,
 *	  refreshed every second, the stalled ones highlighted; --batch prints
 *	  the same frames as text (as top -b).
 *
 *	  Rates come from the difference of two samples: publishes per second
 *	  from the end offsets of streams and groups, acks per second from the
 *	  committed offsets of groups.  mq.queues has no counters of classic and
 *	  quorum queues, so their rates are not shown.
 *
 *-------------------------------------------------------------------------
 */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ncurses.h>

#include "mqctl.h"

/* a queue with work that nobody delivered for this long is stalled */
#define STALL_SECONDS	30.0

static const char *top_help =
"mqctl top: a live screen of every queue and consumer group.\n"
"\n"
"Usage:\n"
"  mqctl top [--interval SECONDS] [--batch [--iterations N]]\n"
"\n"
"Columns: READY, UNACKED (groups: in flight), DELAY (delayed; groups:\n"
"retrying), LAG (groups), IN/s (publishes: streams and groups), ACK/s\n"
"(groups), CONS (consumers), OLDEST (age of the oldest ready message),\n"
"IDLE (since the last delivery), STATE.\n"
"A queue or group with ready messages (or lag) and no consumer, or no\n"
"delivery for 30 seconds, is \"stalled\" and highlighted.  Keys: q quits.\n"
"\n"
"Options:\n"
"  --interval=SECONDS     refresh interval (default 1)\n"
"  -b, --batch            print frames as text on stdout, no screen handling\n"
"                         (also when stdout is no terminal)\n"
"  -n, --iterations=N     frames to print in batch mode (default 1)\n";

#define TOP_SQL \
	"SELECT q.queue, NULL::text AS group_name, q.type, q.ready, q.unacked, q.delayed," \
	"       NULL::bigint AS lag, q.consumers," \
	"       extract(epoch FROM q.oldest_ready_age)::float8 AS oldest," \
	"       extract(epoch FROM now() - q.last_delivery)::float8 AS idle," \
	"       (SELECT sum(p.end_offset) FROM mq.stream_partitions p" \
	"         WHERE p.queue = q.queue)::bigint AS produced," \
	"       NULL::bigint AS settled" \
	"  FROM mq.queues q" \
	" UNION ALL " \
	"SELECT queue, group_name, 'group', NULL, sum(in_flight)::bigint, sum(retrying)::bigint," \
	"       sum(lag)::bigint, max(consumers), NULL, min(idle), sum(endo)::bigint, sum(comm)::bigint" \
	"  FROM (SELECT queue, group_name, partition, sum(in_flight) AS in_flight," \
	"               sum(retrying) AS retrying, max(lag) AS lag, max(consumers) AS consumers," \
	"               extract(epoch FROM now() - max(last_delivery))::float8 AS idle," \
	"               max(end_offset) AS endo, min(committed_offset) AS comm" \
	"          FROM mq.consumer_groups GROUP BY queue, group_name, partition) pp" \
	" GROUP BY queue, group_name" \
	" ORDER BY 1, 2 NULLS FIRST"

typedef struct Row
{
	char	   *queue;
	char	   *group;			/* NULL: the queue itself */
	char		type[16];
	long long	ready, unacked, delayed, lag, consumers;
	bool		has_ready, has_lag;
	double		oldest, idle;	/* seconds; NAN: none */
	long long	produced, settled;	/* -1: not known */
	double		in_rate, ack_rate;	/* NAN: not known */
	bool		stalled;
} Row;

typedef struct Sample
{
	Row		   *rows;
	int			n;
	double		at;
} Sample;

static volatile sig_atomic_t top_stop;
static bool screen_on;

/* at exit (an error included): give the terminal back */
static void
top_atexit(void)
{
	if (screen_on && !isendwin())
		endwin();
}

static void
top_signal(int signo)
{
	(void) signo;
	top_stop = 1;
}

static long long
get_ll(PGresult *res, int r, int c, bool *has)
{
	if (PQgetisnull(res, r, c))
	{
		if (has)
			*has = false;
		return -1;
	}
	if (has)
		*has = true;
	return strtoll(PQgetvalue(res, r, c), NULL, 10);
}

static double
get_d(PGresult *res, int r, int c)
{
	return PQgetisnull(res, r, c) ? NAN : strtod(PQgetvalue(res, r, c), NULL);
}

static void
free_sample(Sample *s)
{
	for (int i = 0; i < s->n; i++)
	{
		free(s->rows[i].queue);
		free(s->rows[i].group);
	}
	free(s->rows);
	s->rows = NULL;
	s->n = 0;
}

static bool
same_row(const Row *a, const Row *b)
{
	return strcmp(a->queue, b->queue) == 0 &&
		((a->group == NULL && b->group == NULL) ||
		 (a->group && b->group && strcmp(a->group, b->group) == 0));
}

/* A new sample, its rates from prev (if any) */
static void
take_sample(Sample *s, const Sample *prev)
{
	PGresult   *res = run_query(TOP_SQL, 0, NULL);

	s->at = now_seconds();
	s->n = PQntuples(res);
	s->rows = xmalloc(sizeof(Row) * (s->n + 1));
	for (int r = 0; r < s->n; r++)
	{
		Row		   *row = &s->rows[r];
		bool		has_work;

		memset(row, 0, sizeof(Row));
		row->queue = xstrdup(PQgetvalue(res, r, 0));
		row->group = PQgetisnull(res, r, 1) ? NULL : xstrdup(PQgetvalue(res, r, 1));
		snprintf(row->type, sizeof(row->type), "%s", PQgetvalue(res, r, 2));
		row->ready = get_ll(res, r, 3, &row->has_ready);
		row->unacked = get_ll(res, r, 4, NULL);
		row->delayed = get_ll(res, r, 5, NULL);
		row->lag = get_ll(res, r, 6, &row->has_lag);
		row->consumers = get_ll(res, r, 7, NULL);
		row->oldest = get_d(res, r, 8);
		row->idle = get_d(res, r, 9);
		row->produced = get_ll(res, r, 10, NULL);
		row->settled = get_ll(res, r, 11, NULL);
		row->in_rate = row->ack_rate = NAN;
		for (int i = 0; prev && i < prev->n; i++)
		{
			const Row  *p = &prev->rows[i];
			double		dt = s->at - prev->at;

			if (!same_row(row, p) || dt <= 0)
				continue;
			if (row->produced >= 0 && p->produced >= 0)
				row->in_rate = (row->produced - p->produced) / dt;
			if (row->settled >= 0 && p->settled >= 0)
				row->ack_rate = (row->settled - p->settled) / dt;
			break;
		}
		/* streams are read, not consumed: their groups stall, they do not */
		has_work = row->group ? (row->lag - row->unacked > 0) :
			(strcmp(row->type, "stream") != 0 && row->ready > 0);
		row->stalled = has_work &&
			(row->consumers <= 0 || isnan(row->idle) || row->idle > STALL_SECONDS);
	}
	PQclear(res);
}

static void
fmt_count(char *buf, size_t len, long long v, bool has)
{
	if (!has || v < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%lld", v);
}

static void
fmt_rate(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.0f", v);
}

static void
fmt_age(char *buf, size_t len, double s)
{
	if (isnan(s))
		snprintf(buf, len, "-");
	else if (s < 60)
		snprintf(buf, len, "%.1fs", s);
	else if (s < 3600)
		snprintf(buf, len, "%.0fm", s / 60);
	else if (s < 86400)
		snprintf(buf, len, "%.1fh", s / 3600);
	else
		snprintf(buf, len, "%.1fd", s / 86400);
}

#define LINE_FMT "%-20.20s %-12.12s %-7.7s %8s %7s %6s %8s %7s %7s %4s %6s %6s %s"

static void
header_line(char *buf, size_t len)
{
	snprintf(buf, len, LINE_FMT, "QUEUE", "GROUP", "TYPE", "READY", "UNACKED",
			 "DELAY", "LAG", "IN/s", "ACK/s", "CONS", "OLDEST", "IDLE", "STATE");
}

static void
row_line(const Row *row, char *buf, size_t len)
{
	char		ready[24], unacked[24], delayed[24], lag[24], in[24], ack[24],
				cons[24], oldest[24], idle[24];

	fmt_count(ready, sizeof(ready), row->ready, row->has_ready);
	fmt_count(unacked, sizeof(unacked), row->unacked, true);
	fmt_count(delayed, sizeof(delayed), row->delayed, true);
	fmt_count(lag, sizeof(lag), row->lag, row->has_lag);
	fmt_rate(in, sizeof(in), row->in_rate);
	fmt_rate(ack, sizeof(ack), row->ack_rate);
	fmt_count(cons, sizeof(cons), row->consumers, true);
	fmt_age(oldest, sizeof(oldest), row->oldest);
	fmt_age(idle, sizeof(idle), row->idle);
	snprintf(buf, len, LINE_FMT, row->queue, row->group ? row->group : "",
			 row->type, ready, unacked, delayed, lag, in, ack, cons, oldest, idle,
			 row->stalled ? "stalled" : "");
}

static void
title_line(const Sample *s, char *buf, size_t len)
{
	PGconn	   *pg = mq_connect();
	time_t		t = time(NULL);
	char		when[32];
	long long	ready = 0, unacked = 0, lag = 0;
	int			queues = 0, groups = 0, stalled = 0;

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
	for (int i = 0; i < s->n; i++)
	{
		if (s->rows[i].group)
			groups++, lag += s->rows[i].lag > 0 ? s->rows[i].lag : 0;
		else
		{
			queues++;
			ready += s->rows[i].ready > 0 && strcmp(s->rows[i].type, "stream") != 0 ?
				s->rows[i].ready : 0;
			unacked += s->rows[i].unacked > 0 ? s->rows[i].unacked : 0;
		}
		stalled += s->rows[i].stalled;
	}
	snprintf(buf, len, "mqctl top - %s %s@%s:%s - queues %d, ready %lld, unacked %lld;"
			 " groups %d, lag %lld; stalled %d",
			 when, PQdb(pg), PQhost(pg), PQport(pg), queues, ready, unacked,
			 groups, lag, stalled);
}

static void
print_frame(const Sample *s)
{
	char		line[512];

	title_line(s, line, sizeof(line));
	printf("%s\n\n", line);
	header_line(line, sizeof(line));
	printf("%s\n", line);
	for (int i = 0; i < s->n; i++)
	{
		row_line(&s->rows[i], line, sizeof(line));
		/* no trailing blanks */
		for (size_t l = strlen(line); l > 0 && line[l - 1] == ' '; l--)
			line[l - 1] = '\0';
		printf("%s\n", line);
	}
	fflush(stdout);
}

static void
draw_screen(const Sample *s, int interval)
{
	char		line[512];
	int			y = 0;

	erase();
	title_line(s, line, sizeof(line));
	mvaddnstr(y++, 0, line, COLS);
	snprintf(line, sizeof(line), "refresh %ds, q: quit", interval);
	mvaddnstr(y++, 0, line, COLS);
	y++;
	header_line(line, sizeof(line));
	attron(A_BOLD);
	mvaddnstr(y++, 0, line, COLS);
	attroff(A_BOLD);
	for (int i = 0; i < s->n && y < LINES; i++)
	{
		int			attr = 0;

		row_line(&s->rows[i], line, sizeof(line));
		if (s->rows[i].stalled)
			attr = has_colors() ? (COLOR_PAIR(1) | A_BOLD) : A_REVERSE;
		if (attr)
			attron(attr);
		mvaddnstr(y++, 0, line, COLS);
		if (attr)
			attroff(attr);
	}
	refresh();
}

int
cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		CONN_LONGOPTS,
		{"interval", required_argument, NULL, 'i'},
		{"batch", no_argument, NULL, 'b'},
		{"iterations", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'H'},
		{NULL, 0, NULL, 0}
	};
	int			interval = 1;
	long		iterations = 1;
	bool		batch = false;
	Sample		prev = {0};
	Sample		cur = {0};
	struct sigaction sa;
	int			c;

	if (want_help(argc, argv))
	{
		fputs(top_help, stdout);
		fputs(CONN_HELP, stdout);
		return EXIT_OK;
	}
	optind = 0;
	while ((c = getopt_long(argc, argv, CONN_SHORTOPTS "bn:", longopts, NULL)) != -1)
	{
		if (conn_option(c, optarg))
			continue;
		switch (c)
		{
			case 'i':
				interval = (int) parse_count("top", "--interval", optarg, 1, 3600);
				break;
			case 'b':
				batch = true;
				break;
			case 'n':
				iterations = parse_count("top", "--iterations", optarg, 1, 1000000);
				break;
			default:
				die_usage("top", "unknown option or missing value: \"%s\"", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("top", "too many arguments (\"%s\")", argv[optind]);
	if (!isatty(fileno(stdout)) || !isatty(fileno(stdin)))
		batch = true;

	(void) mq_connect();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = top_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (batch)
	{
		for (long i = 0; i < iterations && !top_stop; i++)
		{
			if (i > 0)
			{
				sleep(interval);
				putchar('\n');
			}
			take_sample(&cur, i > 0 ? &prev : NULL);
			print_frame(&cur);
			free_sample(&prev);
			prev = cur;
			memset(&cur, 0, sizeof(cur));
		}
		free_sample(&prev);
		return EXIT_OK;
	}

	atexit(top_atexit);
	initscr();
	screen_on = true;
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	if (has_colors())
	{
		start_color();
		use_default_colors();
		init_pair(1, COLOR_RED, -1);
	}
	timeout(interval * 1000);
	while (!top_stop)
	{
		int			key;

		take_sample(&cur, prev.n > 0 || prev.at > 0 ? &prev : NULL);
		draw_screen(&cur, interval);
		free_sample(&prev);
		prev = cur;
		memset(&cur, 0, sizeof(cur));
		key = getch();
		if (key == 'q' || key == 'Q')
			break;
	}
	endwin();
	free_sample(&prev);
	return EXIT_OK;
}
