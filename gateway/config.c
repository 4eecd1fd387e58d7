/*-------------------------------------------------------------------------
 *
 * config.c
 *	  The gateway's settings: their defaults, the configuration file (key =
 *	  value lines) and the command-line options that override it, and the
 *	  log they make verbose (stderr, UTC timestamps).
 *
 * It owns cfg and the log; nothing here touches a connection or a
 * session.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * --log-level: warning (--quiet: what went wrong only), info (the default:
 * also each connection accepted, logged in and closed, with why), debug
 * (--verbose: also channel errors and server notices)
 */
int			gw_log_level = GW_LOG_INFO;
bool		gw_verbose = false;	/* gw_log_level >= GW_LOG_DEBUG */

/* the settings, their defaults */
GwConfig	cfg = {"127.0.0.1:5672", NULL, 60, 131072, 2047, "1 day", 10, 500, 128 * 1024 * 1024,
	4 * 1024 * 1024, 64 * 1024 * 1024, false, NULL, 64, 8, 10, "127.0.0.1:15672", NULL};

/*
 * a line of the log on stderr, its time in UTC, then its level word in
 * brackets as RabbitMQ writes it ([warning], [info], [debug])
 */
static void logv(const char *level, const char *fmt, va_list ap) __attribute__((format(gnu_printf, 2, 0)));

static void
logv(const char *level, const char *fmt, va_list ap)
{
	time_t		now = time(NULL);
	char		ts[32];
	char		text[2048];
	size_t		n;

	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", gmtime(&now));
	vsnprintf(text, sizeof(text), fmt, ap);
	/* one line: libpq's messages end with a newline, some have several */
	n = strlen(text);
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
		text[--n] = '\0';
	for (char *p = text; *p; p++)
		if (*p == '\n')
			*p = ' ';
	fprintf(stderr, "%s UTC mq-amqp: [%s] %s\n", ts, level, text);
}

/* a line of the log whatever the level: something went wrong (warning) */
void
logmsg(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	logv("warning", fmt, ap);
	va_end(ap);
}

/*
 * a line of the log at info level, whatever the level: the gateway's start
 * and stop, the settings it runs with
 */
void
lognote(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	logv("info", fmt, ap);
	va_end(ap);
}

/* a line of the log at info level (the default; not with --quiet) */
void
loginfo(const char *fmt,...)
{
	va_list		ap;

	if (gw_log_level < GW_LOG_INFO)
		return;
	va_start(ap, fmt);
	logv("info", fmt, ap);
	va_end(ap);
}

/* a line of the log at debug level (--verbose) */
void
logdebug(const char *fmt,...)
{
	va_list		ap;

	if (gw_log_level < GW_LOG_DEBUG)
		return;
	va_start(ap, fmt);
	logv("debug", fmt, ap);
	va_end(ap);
}

/* set the log level by name: warning, info or debug; false if unknown */
static bool
set_log_level(const char *val)
{
	if (strcmp(val, "warning") == 0 || strcmp(val, "error") == 0)
		gw_log_level = GW_LOG_WARNING;
	else if (strcmp(val, "info") == 0)
		gw_log_level = GW_LOG_INFO;
	else if (strcmp(val, "debug") == 0)
		gw_log_level = GW_LOG_DEBUG;
	else
		return false;
	gw_verbose = gw_log_level >= GW_LOG_DEBUG;
	return true;
}

/* Print the command-line options and their defaults, to f. */
void
usage(FILE *f)
{
	fprintf(f,
			"mq-amqp: an AMQP 0-9-1 gateway in front of queue_ext\n\n"
			"Usage: mq-amqp [OPTION]...\n\n"
			"Options:\n"
			"  --listen HOST:PORT    address to listen on (default 127.0.0.1:5672)\n"
			"  --dbname CONNINFO     the PostgreSQL server and database of vhost \"/\"\n"
			"                        (libpq connection string; user and password come\n"
			"                        from each client's login, other vhosts name databases)\n"
			"  --config FILE         read settings (key = value lines) from FILE\n"
			"  --heartbeat SECONDS   heartbeat proposed to clients (default 60, 0 none)\n"
			"  --frame-max BYTES     largest frame (default 131072)\n"
			"  --channel-max N       most channels per connection (default 2047)\n"
			"  --lease INTERVAL      lease of an unacked delivery (default '1 day')\n"
			"  --poll-wait SECONDS   longest wait of a consumer's long poll (default 10)\n"
			"  --guest-role ROLE     log in AMQP user guest (password guest, from a\n"
			"                        loopback address only) as PostgreSQL role ROLE,\n"
			"                        without a password; ROLE must not be a superuser\n"
			"  --allow-passwordless-logins\n"
			"                        FOR DEVELOPMENT ONLY: accept logins PostgreSQL let\n"
			"                        in without checking the password (trust)\n"
			"  --max-logins N        handshakes past connection.start-ok at once (64);\n"
			"                        as many HTTP logins (new sessions), counted apart\n"
			"  --max-logins-per-address N\n"
			"                        the same, per client address (default 8)\n"
			"  --handshake-timeout SECONDS\n"
			"                        close a client not open within that (default 10)\n"
			"  --http-listen HOST:PORT\n"
			"                        the management HTTP API and web UI (default\n"
			"                        127.0.0.1:15672; off: none), docs/management.md\n"
			"  --http-www DIR        the web UI's files (default the installed ones)\n"
			"  --log-level LEVEL     warning, info (default: also each connection\n"
			"                        accepted, logged in and closed, and why) or debug\n"
			"  --quiet               --log-level warning\n"
			"  --verbose             --log-level debug (also channel errors)\n"
			"  --help                show this help, then exit\n"
			"  --version             show the version, then exit\n\n"
			"Settings in the file: listen, dbname, heartbeat, frame_max, channel_max,\n"
			"lease, poll_wait, batch_max, max_message, guest_role,\n"
			"allow_passwordless_logins, max_logins, max_logins_per_address,\n"
			"handshake_timeout, http_listen, http_www, log_level, verbose.  docs/amqp.md has more.\n");
}

/* on/off, true/false, 1/0, yes/no; anything else stops the gateway */
static bool
parse_bool(const char *key, const char *val)
{
	if (strcmp(val, "on") == 0 || strcmp(val, "true") == 0 || strcmp(val, "1") == 0 ||
		strcmp(val, "yes") == 0)
		return true;
	if (strcmp(val, "off") == 0 || strcmp(val, "false") == 0 || strcmp(val, "0") == 0 ||
		strcmp(val, "no") == 0)
		return false;
	fprintf(stderr, "mq-amqp: invalid value \"%s\" for %s (on or off)\n", val, key);
	exit(2);
}

/*
 * Set one setting by name, from the configuration file or the command
 * line; an unknown name or an invalid value ends the program (exit 2).
 */
bool
set_option(const char *key, const char *val)
{
	char	   *end;
	long		n;

	if (strcmp(key, "listen") == 0)
	{
		snprintf(cfg.listen, sizeof(cfg.listen), "%s", val);
		return true;
	}
	if (strcmp(key, "dbname") == 0)
	{
		free(cfg.dbname);
		cfg.dbname = strdup(val);
		return true;
	}
	if (strcmp(key, "http_listen") == 0 || strcmp(key, "http-listen") == 0)
	{
		snprintf(cfg.http_listen, sizeof(cfg.http_listen), "%s", val);
		cfg.http_listen_set = true;
		return true;
	}
	if (strcmp(key, "http_www") == 0 || strcmp(key, "http-www") == 0)
	{
		free(cfg.http_www);
		cfg.http_www = strdup(val);
		return true;
	}
	if (strcmp(key, "lease") == 0)
	{
		snprintf(cfg.lease, sizeof(cfg.lease), "%s", val);
		return true;
	}
	if (strcmp(key, "verbose") == 0)
	{
		if (parse_bool(key, val))
			set_log_level("debug");
		else if (gw_log_level > GW_LOG_INFO)
			set_log_level("info");
		return true;
	}
	if (strcmp(key, "log_level") == 0 || strcmp(key, "log-level") == 0)
	{
		if (!set_log_level(val))
		{
			fprintf(stderr, "mq-amqp: invalid value \"%s\" for %s (warning, info or debug)\n",
					val, key);
			exit(2);
		}
		return true;
	}
	if (strcmp(key, "allow_passwordless_logins") == 0)
	{
		cfg.allow_passwordless = parse_bool(key, val);
		return true;
	}
	if (strcmp(key, "guest_role") == 0)
	{
		free(cfg.guest_role);
		cfg.guest_role = val[0] ? strdup(val) : NULL;
		return true;
	}
	n = strtol(val, &end, 10);
	if (*val == '\0' || *end != '\0' || n < 0)
	{
		fprintf(stderr, "mq-amqp: invalid value \"%s\" for %s\n", val, key);
		exit(2);
	}
	if (strcmp(key, "heartbeat") == 0 && n <= 65535)
		cfg.heartbeat = n;
	else if ((strcmp(key, "frame_max") == 0 || strcmp(key, "frame-max") == 0) && n >= 4096)
		cfg.frame_max = n;
	else if ((strcmp(key, "channel_max") == 0 || strcmp(key, "channel-max") == 0) && n >= 1 && n <= 65535)
		cfg.channel_max = n;
	else if ((strcmp(key, "poll_wait") == 0 || strcmp(key, "poll-wait") == 0) && n >= 1)
		cfg.poll_wait = n;
	else if (strcmp(key, "batch_max") == 0 && n >= 1 && n <= 10000)
		cfg.batch_max = n;
	else if (strcmp(key, "max_message") == 0 && n >= 1)
		cfg.max_message = n;
	else if (strcmp(key, "max_logins") == 0 && n >= 1 && n <= 100000)
		cfg.max_logins = n;
	else if (strcmp(key, "max_logins_per_address") == 0 && n >= 1 && n <= 100000)
		cfg.max_logins_per_addr = n;
	else if (strcmp(key, "handshake_timeout") == 0 && n >= 1 && n <= 3600)
		cfg.handshake_timeout = n;
	else
	{
		fprintf(stderr, "mq-amqp: invalid setting %s = %s\n", key, val);
		exit(2);
	}
	return true;
}

/*
 * Read the configuration file path (key = value lines, # comments); exits
 * on an unreadable file or a bad line.
 */
void
read_config(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char		line[2048];
	int			lineno = 0;

	if (f == NULL)
	{
		fprintf(stderr, "mq-amqp: could not open %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while (fgets(line, sizeof(line), f))
	{
		char	   *k = line,
				   *eq,
				   *v,
				   *e;

		lineno++;
		while (*k == ' ' || *k == '\t')
			k++;
		if (*k == '#' || *k == '\n' || *k == '\0')
			continue;
		eq = strchr(k, '=');
		if (eq == NULL)
		{
			fprintf(stderr, "mq-amqp: %s:%d: expected key = value\n", path, lineno);
			exit(2);
		}
		for (e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = '\0';
		v = eq + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		for (e = v + strlen(v); e > v && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'); e--)
			;
		*e = '\0';
		if (e > v + 1 && ((*v == '\'' && e[-1] == '\'') || (*v == '"' && e[-1] == '"')))
		{
			e[-1] = '\0';
			v++;
		}
		set_option(k, v);
	}
	fclose(f);
}
