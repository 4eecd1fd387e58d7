/*-------------------------------------------------------------------------
 *
 * main.c
 *	  mq-rocketmq, a gateway that serves RocketMQ 5's gRPC protocol
 *	  (apache.rocketmq.v2.MessagingService) in front of queue_ext:
 *	  start-up (options into config.c's settings, credentials, the listening
 *	  socket, signals) and the event loop.
 *
 * docs/rocketmq.md describes the mapping: a topic is a stream, its message
 * queues the stream's partitions, a namespace a database, a consumer group
 * a stream's consumer group, a receipt handle queue_ext's receipt.
 * auth.c checks the requests' signatures.
 *
 *-------------------------------------------------------------------------
 */
#include "rmq.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <event2/listener.h>

#define RMQ_VERSION "0.2"

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
		  void *arg)
{
	char		host[INET6_ADDRSTRLEN] = "?";
	char		peer[80];
	int			port = 0;

	if (sa->sa_family == AF_INET)
	{
		inet_ntop(AF_INET, &((struct sockaddr_in *) sa)->sin_addr, host, sizeof(host));
		port = ntohs(((struct sockaddr_in *) sa)->sin_port);
	}
	else if (sa->sa_family == AF_INET6)
	{
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *) sa)->sin6_addr, host, sizeof(host));
		port = ntohs(((struct sockaddr_in6 *) sa)->sin6_port);
	}
	snprintf(peer, sizeof(peer), "%s:%d", host, port);
	if (h2_connections() >= rmq_max_connections)
	{
		/* over --max-connections: closed at once, the others unaffected */
		if (rmq_verbose)
			logmsg("%s: closed at once: %d connections open (--max-connections)",
				   peer, h2_connections());
		evutil_closesocket(fd);
		return;
	}
	evutil_make_socket_nonblocking(fd);
	/*
	 * an answer's frames (headers, data, trailers) go out at once: without
	 * it Nagle's algorithm held the last small write back until the
	 * client's delayed ack (as mq-amqp, bench/README.md RocketMQ)
	 */
	{
		int			one = 1;

		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	h2_accept(fd, peer);
}

/* accepting resumes after its pause (on_accept_error) */
static struct event *accept_resume;

static void
on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	evconnlistener_enable(arg);
}

/*
 * accept failed (most often: out of file descriptors): accepting pauses for
 * a second rather than spin on the readable listening socket; the clients
 * connected are served meanwhile
 */
static void
on_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval tv = {1, 0};

	logmsg("accept failed: %s; not accepting for a second",
		   evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	evconnlistener_disable(l);
	if (accept_resume == NULL)
		accept_resume = evtimer_new(rmq_base, on_accept_resume, l);
	evtimer_add(accept_resume, &tv);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	logmsg("signal %d: stopping", (int) sig);
	event_base_loopexit(rmq_base, NULL);
}

static void
usage(FILE *f)
{
	fprintf(f,
			"mq-rocketmq serves RocketMQ 5's gRPC protocol (apache.rocketmq.v2) in front of\n"
			"queue_ext, so that RocketMQ 5 clients run unchanged against PostgreSQL.\n\n"
			"Usage:\n  mq-rocketmq [OPTION]...\n\n"
			"Options:\n"
			"  --listen=HOST:PORT        address to listen on (default 127.0.0.1:8081)\n"
			"  --advertise=HOST:PORT     endpoint given to clients in routes (default: --listen's)\n"
			"  --dbname=CONNINFO         PostgreSQL connection string: server, login role and the\n"
			"                            database of the default namespace \"\" (default: libpq's)\n"
			"  --credentials=FILE        \"access_key secret_key role\" lines (mode 0600)\n"
			"  --insecure-loopback-role=ROLE\n"
			"                            DEVELOPMENT ONLY: unsigned requests act as ROLE\n"
			"                            (only with a loopback --listen address)\n"
			"  --tls-cert=FILE           TLS only: the server's certificate, then its chain (PEM)\n"
			"  --tls-key=FILE            its private key (PEM, unencrypted, mode 0600)\n"
			"  --max-clock-skew=SECONDS  how far a signed x-mq-date-time may be off (default 900)\n"
			"  --max-connections=N       most client connections at once; more are closed at\n"
			"                            once (default 10000)\n"
			"  --max-sessions=N          most PostgreSQL sessions at once (default 100)\n"
			"  --max-body-size=BYTES     largest message body (default 4194304)\n"
			"  --producer-group=NAME     queue_ext producer group of transactional messages\n"
			"                            (default rocketmq; declare it: docs/rocketmq.md)\n"
			"  --transaction-check=SECONDS  ask a producer about a half message pending that\n"
			"                            long, and again every SECONDS (default 30; 0: never)\n"
			"  --push-invisible-time=SECONDS  lease of a PushConsumer's deliveries, renewed\n"
			"                            while its client lives (default 60)\n"
			"  --verbose                 log connections and errors\n"
			"  --help                    show this help, then exit\n"
			"  --version                 show the version, then exit\n\n"
			"docs/rocketmq.md describes the mapping onto queue_ext.\n");
}

/* "host:port" or "[v6]:port" */
static void
split_address(const char *addr, char *host, size_t hostlen, int *port)
{
	const char *colon = strrchr(addr, ':');
	size_t		n;

	if (colon == NULL)
		die("address \"%s\" has no port (HOST:PORT)", addr);
	n = colon - addr;
	if (addr[0] == '[' && n >= 2 && addr[n - 1] == ']')
	{
		addr++;
		n -= 2;
	}
	if (n >= hostlen)
		die("address \"%s\" is too long", addr);
	memcpy(host, addr, n);
	host[n] = '\0';
	*port = atoi(colon + 1);
	if (*port <= 0 || *port > 65535)
		die("bad port in \"%s\"", addr);
}

int
main(int argc, char **argv)
{
	static struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"advertise", required_argument, NULL, 'a'},
		{"dbname", required_argument, NULL, 'd'},
		{"credentials", required_argument, NULL, 'c'},
		{"insecure-loopback-role", required_argument, NULL, 'i'},
		{"max-clock-skew", required_argument, NULL, 'k'},
		{"tls-cert", required_argument, NULL, 'C'},
		{"tls-key", required_argument, NULL, 'K'},
		{"max-connections", required_argument, NULL, 'm'},
		{"max-sessions", required_argument, NULL, 's'},
		{"max-body-size", required_argument, NULL, 'b'},
		{"producer-group", required_argument, NULL, 'p'},
		{"transaction-check", required_argument, NULL, 't'},
		{"push-invisible-time", required_argument, NULL, 'r'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	const char *listen_addr = "127.0.0.1:8081";
	const char *advertise = NULL;
	const char *conninfo = "";
	const char *cred_path = NULL;
	const char *tls_cert = NULL;
	const char *tls_key = NULL;
	char		host[256],
				adv_host[256];
	int			port,
				o;
	char	   *err = NULL;
	struct evutil_addrinfo hints,
			   *ai = NULL;
	struct evconnlistener *listener;
	struct event *sigint,
			   *sigterm;
	char		portstr[16];
	PQconninfoOption *opt;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1)
	{
		switch (o)
		{
			case 'l':
				listen_addr = optarg;
				break;
			case 'a':
				advertise = optarg;
				break;
			case 'd':
				conninfo = optarg;
				break;
			case 'c':
				cred_path = optarg;
				break;
			case 'i':
				rmq_insecure_role = optarg;
				break;
			case 'k':
				rmq_max_clock_skew = atoi(optarg);
				break;
			case 'C':
				tls_cert = optarg;
				break;
			case 'K':
				tls_key = optarg;
				break;
			case 'm':
				rmq_max_connections = atoi(optarg);
				break;
			case 's':
				rmq_max_sessions = atoi(optarg);
				break;
			case 'b':
				rmq_max_body = atoi(optarg);
				break;
			case 'p':
				rmq_producer_group = optarg;
				break;
			case 't':
				rmq_tx_check = atoi(optarg);
				break;
			case 'r':
				rmq_push_invisible = atoi(optarg);
				break;
			case 'v':
				rmq_verbose = true;
				break;
			case 'h':
				usage(stdout);
				return 0;
			case 'V':
				printf("mq-rocketmq (queue_ext) %s\n", RMQ_VERSION);
				return 0;
			default:
				usage(stderr);
				return 1;
		}
	}
	if (optind < argc)
		die("unexpected argument \"%s\" (try --help)", argv[optind]);
	if (rmq_max_sessions < 1 || rmq_max_body < 1 || rmq_max_clock_skew < 1 ||
		rmq_max_connections < 1)
		die("--max-sessions, --max-body-size, --max-clock-skew and --max-connections must be positive");
	if ((tls_cert == NULL) != (tls_key == NULL))
		die("--tls-cert and --tls-key go together");
	if (rmq_tx_check < 0)
		die("--transaction-check must not be negative");
	if (rmq_push_invisible < 3 || rmq_push_invisible > 12 * 3600)
		die("--push-invisible-time must be 3 to 43200 seconds");

	split_address(listen_addr, host, sizeof(host), &port);
	split_address(advertise ? advertise : listen_addr, adv_host, sizeof(adv_host),
				  &rmq_advertise_port);
	rmq_advertise_host = adv_host;
	if (cred_path)
		auth_read_credentials(cred_path);
	if (tls_cert)
		tls_init(tls_cert, tls_key);
	if (rmq_insecure_role)
	{
		struct in_addr a4;
		struct in6_addr a6;

		if (!((inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127) ||
			  (inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6))))
			die("--insecure-loopback-role needs a loopback --listen address (127.x.x.x or ::1), not \"%s\"",
				host);
		logmsg("WARNING: unsigned requests act as role \"%s\" (--insecure-loopback-role: development only)",
			   rmq_insecure_role);
	}
	if (!cred_path && !rmq_insecure_role)
		logmsg("WARNING: neither --credentials nor --insecure-loopback-role: every request will be refused");

	rmq_conninfo = PQconninfoParse(conninfo, &err);
	if (rmq_conninfo == NULL)
		die("bad --dbname: %s", err ? err : "out of memory");
	for (opt = rmq_conninfo; opt->keyword; opt++)
		if (strcmp(opt->keyword, "dbname") == 0 && opt->val)
			rmq_default_db = opt->val;
	if (rmq_default_db == NULL)
	{
		/* libpq's default database (PGDATABASE, else the login role's name) */
		PQconninfoOption *d = PQconndefaults();

		for (opt = d; opt && opt->keyword; opt++)
			if (strcmp(opt->keyword, "dbname") == 0 && opt->val)
				rmq_default_db = strdup(opt->val);
		for (opt = d; !rmq_default_db && opt && opt->keyword; opt++)
			if (strcmp(opt->keyword, "user") == 0 && opt->val)
				rmq_default_db = strdup(opt->val);
		if (rmq_default_db == NULL)
			rmq_default_db = "postgres";
	}

	signal(SIGPIPE, SIG_IGN);
	{
		/* a socket per client and per session: as many descriptors as allowed */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
		{
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rmq_verbose)
			logmsg("file descriptors: at most %llu (RLIMIT_NOFILE); connections: at most %d (--max-connections)",
				   (unsigned long long) rl.rlim_cur, rmq_max_connections);
	}
	rmq_base = event_base_new();
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE;
	snprintf(portstr, sizeof(portstr), "%d", port);
	if (evutil_getaddrinfo(host, portstr, &hints, &ai) != 0 || ai == NULL)
		die("cannot resolve listen address \"%s\"", listen_addr);
	listener = evconnlistener_new_bind(rmq_base, on_accept, NULL,
									   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
									   ai->ai_addr, (int) ai->ai_addrlen);
	if (listener == NULL)
		die("cannot listen on %s: %s", listen_addr, strerror(errno));
	evutil_freeaddrinfo(ai);
	evconnlistener_set_error_cb(listener, on_accept_error);
	rpc_start();
	sigint = evsignal_new(rmq_base, SIGINT, on_signal, NULL);
	sigterm = evsignal_new(rmq_base, SIGTERM, on_signal, NULL);
	event_add(sigint, NULL);
	event_add(sigterm, NULL);
	logmsg("listening on %s (%s; default database \"%s\", routes point to %s:%d)", listen_addr,
		   tls_enabled() ? "TLS" : "no TLS", rmq_default_db, rmq_advertise_host,
		   rmq_advertise_port);
	event_base_dispatch(rmq_base);
	evconnlistener_free(listener);
	if (accept_resume)
		event_free(accept_resume);
	event_free(sigint);
	event_free(sigterm);
	event_base_free(rmq_base);
	PQconninfoFree(rmq_conninfo);
	return 0;
}
