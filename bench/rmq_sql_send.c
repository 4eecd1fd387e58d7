/*
 * rmq_sql_send.c: the SQL path of a RocketMQ send, for bench/rocketmq_bench.py.
 *
 * The statement mq-rocketmq runs for one normal message (rocketmq/rpc.c,
 * send_next), with the parameters it passes (a 100-byte random body as
 * binary bytea, the x-rocketmq headers the Node client's message gets),
 * issued directly over libpq: INFLIGHT connections, each with one statement
 * at a time (so INFLIGHT statements in flight), N statements in all, each in
 * its own transaction as the gateway's are.
 *
 *   rmq_sql_send CONNINFO TOPIC N INFLIGHT prepared|unnamed
 *
 * prepared: PQprepare once per connection, then PQsendQueryPrepared (the
 * floor); unnamed: PQsendQueryParams each time (parse, bind and execute of
 * an unnamed statement, as the gateway did before it prepared its
 * statements).  Prints one JSON line as rocketmq_bench.js does.
 *
 * Env: RMQ_SQL_STMT=send (the default: mq.send alone, the floor),
 * offset (the gateway's statement since mq.message_offset:
 * SELECT mq.message_offset(mq.send(...))) or position (the one before it:
 * SELECT "offset" FROM mq.message_position(mq.send(...))), for
 * bench/rmq_send_cost.sh.
 *
 * Built by rocketmq_bench.py: cc -O2 -o /tmp/... rmq_sql_send.c -lpq
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define SEND_ARGS \
	"$1, $2::bytea, headers => $3::jsonb," \
	" deliver_at => to_timestamp($4::bigint / 1000.0)," \
	" key => $5, tag => $6, message_group => $7"
#define SEND_SQL "SELECT mq.send(" SEND_ARGS ")"
#define OFFSET_SQL "SELECT mq.message_offset(mq.send(" SEND_ARGS "))"
#define POSITION_SQL "SELECT \"offset\" FROM mq.message_position(mq.send(" SEND_ARGS "))"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
cmp(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

typedef struct
{
	PGconn	   *pg;
	double		started;
	int			busy;
	char		body[100];
	char		headers[256];
} Slot;

static const char *topic;
static const char *send_sql = SEND_SQL;
static int	prepared;
static int	seq;

static void
fail(PGconn *pg, const char *what)
{
	fprintf(stderr, "rmq_sql_send: %s: %s", what, PQerrorMessage(pg));
	exit(1);
}

static void
start(Slot *s)
{
	const char *values[7];
	int			lengths[7] = {0, 100, 0, 0, 0, 0, 0};
	int			formats[7] = {0, 1, 0, 0, 0, 0, 0};
	int			i;

	for (i = 0; i < 100; i++)
		s->body[i] = (char) (random() & 0xff);
	/* what the gateway makes of a Node client's normal message */
	snprintf(s->headers, sizeof(s->headers),
			 "{\"x-rocketmq\":{\"id\":\"01B0A2C3D4E5F6%018d\",\"type\":\"NORMAL\","
			 "\"keys\":[],\"born\":%lld,\"born_host\":\"bench\"}}",
			 seq++, (long long) (now() * 1000));
	values[0] = topic;
	values[1] = s->body;
	values[2] = s->headers;
	values[3] = values[4] = values[5] = values[6] = NULL;
	s->started = now();
	if (!(prepared ? PQsendQueryPrepared(s->pg, "send", 7, values, lengths, formats, 0)
		  : PQsendQueryParams(s->pg, send_sql, 7, NULL, values, lengths, formats, 0)))
		fail(s->pg, "send");
	s->busy = 1;
}

int
main(int argc, char **argv)
{
	int			n,
				k,
				i,
				done = 0,
				issued = 0;
	Slot	   *slots;
	struct pollfd *fds;
	double	   *lat,
				t0,
				secs,
				cpu;
	clock_t		c0;

	if (argc != 6)
	{
		fprintf(stderr, "usage: rmq_sql_send CONNINFO TOPIC N INFLIGHT prepared|unnamed\n");
		return 2;
	}
	topic = argv[2];
	n = atoi(argv[3]);
	k = atoi(argv[4]);
	prepared = strcmp(argv[5], "prepared") == 0;
	if (getenv("RMQ_SQL_STMT") && strcmp(getenv("RMQ_SQL_STMT"), "offset") == 0)
		send_sql = OFFSET_SQL;
	else if (getenv("RMQ_SQL_STMT") && strcmp(getenv("RMQ_SQL_STMT"), "position") == 0)
		send_sql = POSITION_SQL;
	slots = calloc(k, sizeof(Slot));
	fds = calloc(k, sizeof(struct pollfd));
	lat = calloc(n + 1, sizeof(double));
	srandom(getpid());
	for (i = 0; i < k; i++)
	{
		PGresult   *r;

		slots[i].pg = PQconnectdb(argv[1]);
		if (PQstatus(slots[i].pg) != CONNECTION_OK)
			fail(slots[i].pg, "connect");
		if (prepared)
		{
			r = PQprepare(slots[i].pg, "send", send_sql, 0, NULL);
			if (PQresultStatus(r) != PGRES_COMMAND_OK)
				fail(slots[i].pg, "prepare");
			PQclear(r);
		}
		fds[i].fd = PQsocket(slots[i].pg);
		fds[i].events = POLLIN;
	}
	t0 = now();
	c0 = clock();
	for (i = 0; i < k && issued < n; i++, issued++)
		start(&slots[i]);
	while (done < n)
	{
		if (poll(fds, k, -1) < 0)
		{
			perror("poll");
			return 1;
		}
		for (i = 0; i < k; i++)
		{
			Slot	   *s = &slots[i];
			PGresult   *r;

			if (!(fds[i].revents & POLLIN) || !s->busy)
				continue;
			if (!PQconsumeInput(s->pg))
				fail(s->pg, "read");
			if (PQisBusy(s->pg))
				continue;
			while ((r = PQgetResult(s->pg)) != NULL)
			{
				if (PQresultStatus(r) != PGRES_TUPLES_OK)
					fail(s->pg, "mq.send");
				PQclear(r);
			}
			lat[done++] = (now() - s->started) * 1000;
			s->busy = 0;
			if (issued < n)
			{
				issued++;
				start(s);
			}
		}
	}
	secs = now() - t0;
	cpu = (double) (clock() - c0) / CLOCKS_PER_SEC;
	qsort(lat, n, sizeof(double), cmp);
	printf("{\"mode\": \"sql-%s\", \"n\": %d, \"inflight\": %d, \"seconds\": %.6f, \"rate\": %.3f,"
		   " \"p50_ms\": %.4f, \"p99_ms\": %.4f, \"client_cpu_us\": %.3f}\n",
		   prepared ? "prepared" : "unnamed", n, k, secs, n / secs, lat[n / 2],
		   lat[(int) (n * 0.99)], cpu / n * 1e6);
	for (i = 0; i < k; i++)
		PQfinish(slots[i].pg);
	return 0;
}
