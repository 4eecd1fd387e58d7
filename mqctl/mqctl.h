/*-------------------------------------------------------------------------
 *
 * mqctl.h
 *	  What the files of mqctl share: the connection, error reporting, the
 *	  option helpers and the output formats.
 *
 * mqctl.c		main, connection, the topology and inspection commands
 * output.c		tables, JSON and CSV from a query result
 * messages.c	publish, send and consume
 * top.c		the live screen (ncurses)
 * bench.c		publish and consume throughput
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQCTL_H
#define MQCTL_H

#include <stdbool.h>
#include <stdio.h>

#include <libpq-fe.h>
#include <json-c/json.h>

#define MQCTL_VERSION "0.2"

/* exit codes */
#define EXIT_OK			0
#define EXIT_SERVER		1		/* an error from the server or the connection */
#define EXIT_USAGE		2		/* bad usage */
#define EXIT_INTERRUPTED 130	/* publish or send stopped by Ctrl-C */

typedef enum OutputFormat
{
	FORMAT_TABLE,
	FORMAT_JSON,
	FORMAT_CSV,
	FORMAT_RAW
} OutputFormat;

/* common.c */
extern const char *progname;
extern PGconn *mq_connect(void);
extern void mq_disconnect(void);
extern void die_usage(const char *cmd, const char *fmt,...)
			__attribute__((format(printf, 2, 3), noreturn));
extern void die_result(PGresult *res) __attribute__((noreturn));
extern void die_conn(void) __attribute__((noreturn));
extern PGresult *run_query(const char *sql, int nparams, const char *const *values);
extern void run_command(const char *sql);
extern void *xmalloc(size_t size);
extern void *xrealloc(void *p, size_t size);
extern char *xstrdup(const char *s);
extern int	conn_option(int c, const char *arg);
extern bool parse_format(const char *arg, bool allow_raw, OutputFormat *fmt);
extern long parse_count(const char *cmd, const char *opt, const char *arg, long min, long max);
extern void add_kv(const char *cmd, const char *opt, json_object *obj, const char *kv);
extern bool want_help(int argc, char **argv);
extern void check_name(const char *cmd, const char *help, const char *arg);
extern const char *exchange_name(const char *arg);
extern double now_seconds(void);

/* the connection options every command takes (getopt_long) */
#define CONN_SHORTOPTS "d:h:p:U:wW"
#define CONN_LONGOPTS \
	{"dbname", required_argument, NULL, 'd'}, \
	{"host", required_argument, NULL, 'h'}, \
	{"port", required_argument, NULL, 'p'}, \
	{"username", required_argument, NULL, 'U'}, \
	{"no-password", no_argument, NULL, 'w'}, \
	{"password", no_argument, NULL, 'W'}
#define CONN_HELP \
	"\nConnection options (as psql; PG* environment variables and ~/.pgpass apply):\n" \
	"  -d, --dbname=DBNAME|CONNINFO|URI  database to connect to\n" \
	"  -h, --host=HOSTNAME      database server host or socket directory\n" \
	"  -p, --port=PORT          database server port\n" \
	"  -U, --username=USERNAME  database user name\n" \
	"  -w, --no-password        never prompt for a password\n" \
	"  -W, --password           prompt for a password first\n"

/* output.c */
extern int	terminal_width(FILE *f);
extern void print_result(PGresult *res, OutputFormat fmt);
extern void print_query(const char *sql, int nparams, const char *const *values,
						OutputFormat fmt);
extern bool valid_utf8(const char *s, size_t len);
extern json_object *value_to_json(PGresult *res, int row, int col);
extern json_object *row_to_json(PGresult *res, int row);

/* common.c: the progress line (drawn by messages.c), ended before errors */
extern bool progress_line_open;
extern void end_progress_line(void);

/* messages.c */
extern int	cmd_read(int argc, char **argv);
extern int	cmd_publish(int argc, char **argv);
extern int	cmd_send(int argc, char **argv);
extern int	cmd_consume(int argc, char **argv);

/* top.c */
extern int	cmd_top(int argc, char **argv);

/* bench.c */
extern int	cmd_bench(int argc, char **argv);

#endif							/* MQCTL_H */
