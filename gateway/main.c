/*-------------------------------------------------------------------------
 *
 * main.c
 *	  mq-amqp, an AMQP 0-9-1 gateway in front of queue_ext: start-up (the
 *	  settings, the listening socket, signals) and the event loop.
 *
 * Clients speak AMQP 0-9-1; the gateway speaks queue_ext's SQL API to
 * PostgreSQL.  docs/amqp.md describes the mapping:
 *
 *	- PLAIN (or AMQPLAIN) login: the gateway connects as that role with that
 *	  password, and refuses the login unless the server checked the password
 *	  (--allow-passwordless-logins: development only); guest/guest from a
 *	  loopback address may log in as --guest-role's role; the virtual host
 *	  names the database ("/": --dbname's).
 *	- each channel has its own PostgreSQL session, which runs the channel's
 *	  operations (declares, binds, publishes, gets, acks, tx) in order, one
 *	  statement at a time;
 *	- each basic.consume has its own session too, long-polling mq.consume
 *	  (wait => ...), so that a waiting consumer never holds up anything else.
 *	  Its deliveries belong to that session (queue_ext: a delivery belongs to
 *	  the session that consumed it); the channel settles them by receipt
 *	  (mq.ack/nack/reject with receipts =>).  Closing a channel closes its
 *	  sessions, and queue_ext returns their unacked deliveries at once.
 *
 * It owns the process; everything a connection does is below it.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include <event2/listener.h>

/* the event loop of every socket, client and server */
struct event_base *gw_base;

/* --dbname's options: every session's, but for the login's role and a vhost's database */
PQconninfoOption *gw_conninfo;

/* out of file descriptors (or another accept error): pause a second
 * rather than spin on the readable listening socket */
static struct event *accept_resume;

/* Accepting resumes after its pause (on_accept_error). */
static void
on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	evconnlistener_enable(arg);
}

/*
 * accept failed (most often: out of file descriptors): accepting pauses for
 * a second rather than spin on the readable listening socket.
 */
static void
on_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval tv = {1, 0};
	int			err = EVUTIL_SOCKET_ERROR();

	logmsg("accept failed: %s; not accepting for a second", evutil_socket_error_to_string(err));
	evconnlistener_disable(l);
	if (accept_resume == NULL)
		accept_resume = evtimer_new(gw_base, on_accept_resume, l);
	evtimer_add(accept_resume, &tv);
}

/* at shutdown: time is up for the sessions still ending */
static bool drain_over = false;

static void
on_drain_over(evutil_socket_t fd, short what, void *arg)
{
	drain_over = true;
}

/* SIGINT or SIGTERM: the loop stops. */
static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	lognote("received signal %d, shutting down", (int) sig);
	event_base_loopexit(gw_base, NULL);
}

/*
 * --guest-role at start-up: a superuser is refused.  Logged in as the role
 * (without a password, as a guest login would), is_superuser says; a server
 * that cannot be reached now is no reason not to start: every guest login
 * checks again.
 */
static bool
guest_role_checked(void)
{
	PGconn	   *pg = pg_connect_blocking(cfg.guest_role, NULL);
	bool		ok = true;

	if (pg && PQstatus(pg) == CONNECTION_OK)
	{
		const char *su = PQparameterStatus(pg, "is_superuser");

		if (su == NULL || strcmp(su, "off") != 0)
		{
			fprintf(stderr, "mq-amqp: --guest-role \"%s\" is a superuser (or cannot tell): "
					"refusing to start; make an unprivileged role for guest (docs/amqp.md)\n",
					cfg.guest_role);
			ok = false;
		}
		else
			lognote("guest (password guest, loopback clients only) logs in as role \"%s\"",
				   cfg.guest_role);
	}
	else
	{
		char		err[512];
		size_t		n;

		snprintf(err, sizeof(err), "%s", pg ? PQerrorMessage(pg) : "out of memory");
		n = strlen(err);
		while (n > 0 && err[n - 1] == '\n')
			err[--n] = '\0';
		logmsg("could not check --guest-role \"%s\" now (%s): each guest login checks it",
			   cfg.guest_role, err);
	}
	PQfinish(pg);
	return ok;
}

/*
 * Settings, then the listening socket and signals, then the event loop
 * until a signal.
 */
int
main(int argc, char **argv)
{
	static struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"dbname", required_argument, NULL, 'd'},
		{"config", required_argument, NULL, 'c'},
		{"heartbeat", required_argument, NULL, 'H'},
		{"frame-max", required_argument, NULL, 'F'},
		{"channel-max", required_argument, NULL, 'C'},
		{"lease", required_argument, NULL, 'L'},
		{"poll-wait", required_argument, NULL, 'W'},
		{"guest-role", required_argument, NULL, 'g'},
		{"allow-passwordless-logins", no_argument, NULL, 'P'},
		{"max-logins", required_argument, NULL, 'M'},
		{"max-logins-per-address", required_argument, NULL, 'm'},
		{"handshake-timeout", required_argument, NULL, 'T'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"log-level", required_argument, NULL, 'o'},
		{"http-listen", required_argument, NULL, 'w'},
		{"http-www", required_argument, NULL, 'D'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	int			o,
				i;
	char	   *host,
			   *colon;
	int			port;
	struct evutil_addrinfo hints,
			   *ai = NULL;
	struct evconnlistener *listener;
	char		portstr[16];
	char	   *err = NULL;
	struct event *sigint,
			   *sigterm;

	/* the config file first, so that flags override it */
	for (i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			read_config(argv[i + 1]);
		else if (strncmp(argv[i], "--config=", 9) == 0)
			read_config(argv[i] + 9);
	}
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1)
	{
		switch (o)
		{
			case 'l':
				set_option("listen", optarg);
				break;
			case 'd':
				set_option("dbname", optarg);
				break;
			case 'c':
				break;
			case 'H':
				set_option("heartbeat", optarg);
				break;
			case 'F':
				set_option("frame_max", optarg);
				break;
			case 'C':
				set_option("channel_max", optarg);
				break;
			case 'L':
				set_option("lease", optarg);
				break;
			case 'W':
				set_option("poll_wait", optarg);
				break;
			case 'g':
				set_option("guest_role", optarg);
				break;
			case 'P':
				set_option("allow_passwordless_logins", "on");
				break;
			case 'M':
				set_option("max_logins", optarg);
				break;
			case 'm':
				set_option("max_logins_per_address", optarg);
				break;
			case 'T':
				set_option("handshake_timeout", optarg);
				break;
			case 'v':
				set_option("log_level", "debug");
				break;
			case 'q':
				set_option("log_level", "warning");
				break;
			case 'o':
				set_option("log_level", optarg);
				break;
			case 'w':
				set_option("http_listen", optarg);
				break;
			case 'D':
				set_option("http_www", optarg);
				break;
			case 'h':
				usage(stdout);
				return 0;
			case 'V':
				printf("mq-amqp (queue_ext) %s\n", GW_VERSION);
				return 0;
			default:
				usage(stderr);
				return 2;
		}
	}
	if (optind < argc)
	{
		fprintf(stderr, "mq-amqp: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	gw_conninfo = PQconninfoParse(cfg.dbname ? cfg.dbname : "", &err);
	if (gw_conninfo == NULL)
	{
		fprintf(stderr, "mq-amqp: invalid --dbname: %s", err ? err : "out of memory\n");
		return 2;
	}

	if (cfg.allow_passwordless)
	{
		logmsg("--allow-passwordless-logins is set: a login is accepted whenever "
			   "PostgreSQL lets its role in, also without checking the password (trust): "
			   "ANY password, or none, logs in, even as a superuser.  For development only; "
			   "never expose this gateway.");
	}
	if (cfg.guest_role && !guest_role_checked())
		return 2;

	host = strdup(cfg.listen);
	colon = strrchr(host, ':');
	if (colon == NULL || (port = atoi(colon + 1)) <= 0 || port > 65535)
	{
		fprintf(stderr, "mq-amqp: --listen must be HOST:PORT, not \"%s\"\n", cfg.listen);
		return 2;
	}
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']')
	{
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	signal(SIGPIPE, SIG_IGN);
	{
		/* a socket per client: as many descriptors as allowed */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
		{
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	srandom((unsigned) time(NULL) ^ (unsigned) getpid());

	gw_base = event_base_new();
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE;
	snprintf(portstr, sizeof(portstr), "%d", port);
	if (evutil_getaddrinfo(host[0] ? host : NULL, portstr, &hints, &ai) != 0 || ai == NULL)
	{
		fprintf(stderr, "mq-amqp: could not resolve listen address \"%s\"\n", cfg.listen);
		return 1;
	}
	listener = evconnlistener_new_bind(gw_base, on_accept, NULL,
									   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
									   ai->ai_addr, ai->ai_addrlen);
	evutil_freeaddrinfo(ai);
	if (listener == NULL)
	{
		fprintf(stderr, "mq-amqp: could not listen on %s: %s\n", cfg.listen, strerror(errno));
		return 1;
	}
	evconnlistener_set_error_cb(listener, on_accept_error);
	operations_start();
	if (!http_start())
		return 1;
	sigint = evsignal_new(gw_base, SIGINT, on_signal, NULL);
	sigterm = evsignal_new(gw_base, SIGTERM, on_signal, NULL);
	event_add(sigint, NULL);
	event_add(sigterm, NULL);
	lognote("listening on %s", cfg.listen);
	event_base_dispatch(gw_base);

	{
		/*
		 * The connections go; their consumers' sessions end once their
		 * polls, woken, have returned (pg_close), and control sessions once
		 * their jobs are done: so PostgreSQL logs no client lost.  Within
		 * --poll-wait and a few seconds at most.
		 */
		struct timeval tv = {cfg.poll_wait + 5, 0};
		Conn	   *c;
		struct event *t;

		evconnlistener_disable(listener);
		http_stop();
		for (c = conns; c; c = c->next)
			conn_reason(c, false, "the gateway is shutting down");
		while (conns)
			conn_destroy(conns);
		t = evtimer_new(gw_base, on_drain_over, NULL);
		evtimer_add(t, &tv);
		while (pg_sessions() > 0 && !drain_over)
			event_base_loop(gw_base, EVLOOP_ONCE);
		event_free(t);
	}
	evconnlistener_free(listener);
	if (accept_resume)
		event_free(accept_resume);
	event_free(sigint);
	event_free(sigterm);
	event_base_free(gw_base);
	PQconninfoFree(gw_conninfo);
	free(host);
	buf_free(&out);
	return 0;
}
