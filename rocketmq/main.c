/*-------------------------------------------------------------------------
 *
 * main.c
 *	  mq-rocketmq, a gateway that serves RocketMQ 5's gRPC protocol
 *	  (apache.rocketmq.v2.MessagingService) in front of queue_ext:
 *	  start-up (settings, credentials, the listening socket, signals), the
 *	  event loop and the check of RocketMQ's request signatures.
 *
 * docs/rocketmq.md describes the mapping: a topic is a stream, its message
 * queues the stream's partitions, a namespace a database, a consumer group
 * a stream's consumer group, a receipt handle queue_ext's receipt.
 *
 * Logins: a RocketMQ client signs each request's x-mq-date-time with its
 * secret key (MQv2-HMAC-SHA1).  PostgreSQL's password hashes cannot check
 * that, so the gateway holds a credentials file (--credentials, mode 0600
 * or stricter) mapping each access key to its secret key and a PostgreSQL
 * role: it checks the signature and the date's freshness, then runs the
 * request's SQL as that role (SET ROLE from its own login role, which must
 * be a member of it), so that queue_ext's privileges apply.  Unsigned
 * requests are refused, unless --insecure-loopback-role names a role for
 * them (development only: the gateway must then listen on loopback).
 *
 *-------------------------------------------------------------------------
 */
#include "rmq.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <event2/listener.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define RMQ_VERSION "0.2"

struct event_base *rmq_base;
PQconninfoOption *rmq_conninfo;
const char *rmq_default_db;
const char *rmq_advertise_host;
int			rmq_advertise_port;
int			rmq_max_sessions = 100;
int			rmq_max_body = 4 * 1024 * 1024;
const char *rmq_producer_group = "rocketmq";
int			rmq_tx_check = 30;
bool		rmq_verbose;

static const char *insecure_role;
static int	max_clock_skew = 900;

typedef struct Credential
{
	char	   *access_key;
	char	   *secret_key;
	char	   *role;
} Credential;

static Credential *credentials;
static int	n_credentials;

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

static void die(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

static void
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
 * Read the credentials file: one "access_key secret_key role" a line, '#'
 * comments.  It holds secrets: refused unless only its owner may read it.
 */
static void
read_credentials(const char *path)
{
	FILE	   *f = fopen(path, "r");
	struct stat st;
	char		line[1024];
	int			lineno = 0;

	if (f == NULL)
		die("cannot open credentials file \"%s\": %s", path, strerror(errno));
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
		die("credentials file \"%s\" is not a regular file", path);
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		die("credentials file \"%s\" has group or world access (mode %04o); chmod 600 it",
			path, (unsigned) (st.st_mode & 07777));
	while (fgets(line, sizeof(line), f))
	{
		char	   *ak,
				   *sk,
				   *role,
				   *extra,
				   *save = NULL;

		lineno++;
		if (strchr(line, '#'))
			*strchr(line, '#') = '\0';
		ak = strtok_r(line, " \t\r\n", &save);
		if (ak == NULL)
			continue;
		sk = strtok_r(NULL, " \t\r\n", &save);
		role = strtok_r(NULL, " \t\r\n", &save);
		extra = strtok_r(NULL, " \t\r\n", &save);
		if (sk == NULL || role == NULL || extra != NULL)
			die("credentials file \"%s\", line %d: expected \"access_key secret_key role\"",
				path, lineno);
		credentials = realloc(credentials, (n_credentials + 1) * sizeof(Credential));
		credentials[n_credentials].access_key = strdup(ak);
		credentials[n_credentials].secret_key = strdup(sk);
		credentials[n_credentials].role = strdup(role);
		n_credentials++;
	}
	fclose(f);
}

/* x-mq-date-time (yyyyMMddTHHmmssZ, UTC) as a time; -1 if malformed */
static time_t
parse_date_time(const char *s)
{
	struct tm	tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y%m%dT%H%M%SZ", &tm);
	if (end == NULL || *end != '\0')
		return -1;
	return timegm(&tm);
}

/* the value of "name=" in a comma-separated authorization header, copied */
static bool
auth_field(const char *header, const char *name, char *out, size_t outlen)
{
	const char *p = header;
	size_t		nl = strlen(name);

	while ((p = strstr(p, name)) != NULL)
	{
		if ((p == header || p[-1] == ' ' || p[-1] == ',') && p[nl] == '=')
		{
			const char *v = p + nl + 1;
			size_t		n = strcspn(v, ", ");

			if (n >= outlen)
				return false;
			memcpy(out, v, n);
			out[n] = '\0';
			return true;
		}
		p += nl;
	}
	return false;
}

const char *
auth_role(const char *authorization, const char *date_time, int *code,
		  char *why, size_t whylen)
{
	char		ak[256],
				sig[128],
				expect[2 * EVP_MAX_MD_SIZE + 1];
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	int			i;
	Credential *cred = NULL;
	time_t		when;

	*code = CODE(UNAUTHORIZED);
	if (authorization[0] == '\0')
	{
		if (insecure_role)
			return insecure_role;
		snprintf(why, whylen, "this gateway needs signed requests (an access key and secret key)");
		return NULL;
	}
	if (strncmp(authorization, "MQv2-HMAC-SHA1 ", 15) != 0 ||
		!auth_field(authorization + 15, "Credential", ak, sizeof(ak)) ||
		!auth_field(authorization + 15, "Signature", sig, sizeof(sig)))
	{
		snprintf(why, whylen, "malformed authorization header (expected MQv2-HMAC-SHA1)");
		return NULL;
	}
	for (i = 0; i < n_credentials; i++)
		if (strcmp(credentials[i].access_key, ak) == 0)
			cred = &credentials[i];
	if (cred == NULL)
	{
		snprintf(why, whylen, "unknown access key");
		return NULL;
	}
	when = parse_date_time(date_time);
	if (when < 0 || when < time(NULL) - max_clock_skew || when > time(NULL) + max_clock_skew)
	{
		snprintf(why, whylen, "x-mq-date-time is missing or more than %d s away from the gateway's clock",
				 max_clock_skew);
		return NULL;
	}
	HMAC(EVP_sha1(), cred->secret_key, (int) strlen(cred->secret_key),
		 (const unsigned char *) date_time, strlen(date_time), mac, &maclen);
	for (i = 0; i < (int) maclen; i++)
		sprintf(expect + 2 * i, "%02X", mac[i]);
	for (i = 0; sig[i]; i++)
		if (sig[i] >= 'a' && sig[i] <= 'f')
			sig[i] -= 'a' - 'A';
	if (strlen(sig) != 2 * maclen || CRYPTO_memcmp(sig, expect, 2 * maclen) != 0)
	{
		snprintf(why, whylen, "signature does not match");
		return NULL;
	}
	return cred->role;
}

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
	evutil_make_socket_nonblocking(fd);
	h2_accept(fd, peer);
}

static void
on_accept_error(struct evconnlistener *l, void *arg)
{
	logmsg("accept failed: %s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
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
			"  --max-clock-skew=SECONDS  how far a signed x-mq-date-time may be off (default 900)\n"
			"  --max-sessions=N          most PostgreSQL sessions at once (default 100)\n"
			"  --max-body-size=BYTES     largest message body (default 4194304)\n"
			"  --producer-group=NAME     queue_ext producer group of transactional messages\n"
			"                            (default rocketmq; declare it: docs/rocketmq.md)\n"
			"  --transaction-check=SECONDS  ask a producer about a half message pending that\n"
			"                            long, and again every SECONDS (default 30; 0: never)\n"
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
		{"max-sessions", required_argument, NULL, 's'},
		{"max-body-size", required_argument, NULL, 'b'},
		{"producer-group", required_argument, NULL, 'p'},
		{"transaction-check", required_argument, NULL, 't'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	const char *listen_addr = "127.0.0.1:8081";
	const char *advertise = NULL;
	const char *conninfo = "";
	const char *cred_path = NULL;
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
				insecure_role = optarg;
				break;
			case 'k':
				max_clock_skew = atoi(optarg);
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
	if (rmq_max_sessions < 1 || rmq_max_body < 1 || max_clock_skew < 1)
		die("--max-sessions, --max-body-size and --max-clock-skew must be positive");
	if (rmq_tx_check < 0)
		die("--transaction-check must not be negative");

	split_address(listen_addr, host, sizeof(host), &port);
	split_address(advertise ? advertise : listen_addr, adv_host, sizeof(adv_host),
				  &rmq_advertise_port);
	rmq_advertise_host = adv_host;
	if (cred_path)
		read_credentials(cred_path);
	if (insecure_role)
	{
		struct in_addr a4;
		struct in6_addr a6;

		if (!((inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127) ||
			  (inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6))))
			die("--insecure-loopback-role needs a loopback --listen address (127.x.x.x or ::1), not \"%s\"",
				host);
		logmsg("WARNING: unsigned requests act as role \"%s\" (--insecure-loopback-role: development only)",
			   insecure_role);
	}
	if (!cred_path && !insecure_role)
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
	logmsg("listening on %s (default database \"%s\", routes point to %s:%d)", listen_addr,
		   rmq_default_db, rmq_advertise_host, rmq_advertise_port);
	event_base_dispatch(rmq_base);
	evconnlistener_free(listener);
	event_free(sigint);
	event_free(sigterm);
	event_base_free(rmq_base);
	PQconninfoFree(rmq_conninfo);
	return 0;
}
