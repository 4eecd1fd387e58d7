/*-------------------------------------------------------------------------
 *
 * bench.c
 *	  mqctl bench: publish, then consume + ack, throughput of a scratch
 *	  queue for a message size, batch size and number of producers and
 *	  consumers (one process and connection each, released together).
 *
 *-------------------------------------------------------------------------
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mqctl.h"

static const char *bench_help =
"mqctl bench: publish and consume throughput.\n"
"\n"
"Usage:\n"
"  mqctl bench [OPTION]...\n"
"\n"
"Declares a scratch queue (mqctl-bench-PID, deleted afterwards), publishes\n"
"the messages from the producers (mq.send_batch), then consumes and acks\n"
"them from the consumers (mq.consume + mq.ack, one transaction per batch),\n"
"and prints the rate of each phase.  Each producer and consumer is a\n"
"process with its own connection; the clock starts once all are connected.\n"
"\n"
"Options:\n"
"  --messages=N           messages in all (default 10000)\n"
"  --size=BYTES           body size (default 100)\n"
"  --batch=N              messages per publish call and per consume (default 100)\n"
"  --producers=N          publishing processes (default 1)\n"
"  --consumers=N          consuming processes (default 1)\n"
"  --type=TYPE            classic (default), quorum or stream (read by a\n"
"                         consumer group \"bench\")\n"
"  --format=table|json    how to print the result (default table)\n";

typedef struct BenchOpts
{
	long		messages;
	long		size;
	long		batch;
	long		producers;
	long		consumers;
	const char *type;
	char		queue[64];
	const char *group;			/* streams: the consumer group */
} BenchOpts;

/* One producer: quota messages in batches; returns how many it published */
static long
bench_produce(const BenchOpts *o, long quota)
{
	char		nbuf[32];
	char		sbuf[32];
	const char *p[3];
	long		done = 0;

	snprintf(sbuf, sizeof(sbuf), "%ld", o->size);
	p[0] = o->queue;
	p[1] = sbuf;
	while (done < quota)
	{
		long		n = quota - done < o->batch ? quota - done : o->batch;

		snprintf(nbuf, sizeof(nbuf), "%ld", n);
		p[2] = nbuf;
		PQclear(run_query("SELECT count(*) FROM mq.send_batch($1,"
						  " array_fill(repeat('x', $2::int), ARRAY[$3::int]))", 3, p));
		done += n;
	}
	return done;
}

/* One consumer: consume + ack until quota, or the queue stays empty 2 s */
static long
bench_consume(const BenchOpts *o, long quota)
{
	const char *p[3];
	char		nbuf[32];
	long		done = 0;
	int			empty = 0;

	p[0] = o->queue;
	p[2] = o->group;
	while (done < quota && empty < 2)
	{
		long		n = quota - done < o->batch ? quota - done : o->batch;
		PGresult   *res;
		int			got;

		snprintf(nbuf, sizeof(nbuf), "%ld", n);
		p[1] = nbuf;
		run_command("BEGIN");
		res = run_query("SELECT mq.ack($1, array_agg(msg_id), group_name => $3)"
						"  FROM mq.consume($1, $2::int, wait => '1 second', group_name => $3)"
						" HAVING count(*) > 0", 3, p);
		got = PQntuples(res) > 0 ? atoi(PQgetvalue(res, 0, 0)) : 0;
		PQclear(res);
		run_command("COMMIT");
		done += got;
		empty = got > 0 ? 0 : empty + 1;
	}
	return done;
}

/*
 * Run nproc processes of one phase, released together; returns the
 * seconds from the release to the last one's end, and in *total what they
 * did (each writes its count to a pipe).  Any failing process fails it.
 */
static double
bench_phase(const BenchOpts *o, long nproc, bool produce, long *total)
{
	int			go[2];
	int			ready[2];
	int			result[2];
	double		start;
	bool		failed = false;
	char		buf[64];
	FILE	   *rf;

	if (pipe(go) != 0 || pipe(ready) != 0 || pipe(result) != 0)
	{
		perror("pipe");
		exit(EXIT_SERVER);
	}
	fflush(stdout);
	fflush(stderr);
	for (long i = 0; i < nproc; i++)
	{
		long		quota = o->messages / nproc + (i < o->messages % nproc ? 1 : 0);
		pid_t		pid = fork();

		if (pid < 0)
		{
			perror("fork");
			exit(EXIT_SERVER);
		}
		if (pid == 0)
		{
			char		c;
			long		n;

			close(go[1]);
			close(ready[0]);
			close(result[0]);
			(void) mq_connect();
			/* connected; closing ready lets the parent see a child that died */
			if (write(ready[1], "r", 1) != 1)
				_exit(EXIT_SERVER);
			close(ready[1]);
			/* wait for the others: the parent closes go */
			while (read(go[0], &c, 1) > 0)
				;
			n = produce ? bench_produce(o, quota) : bench_consume(o, quota);
			snprintf(buf, sizeof(buf), "%ld\n", n);
			if (write(result[1], buf, strlen(buf)) < 0)
				_exit(EXIT_SERVER);
			mq_disconnect();
			_exit(EXIT_OK);
		}
	}
	close(go[0]);
	close(ready[1]);
	close(result[1]);
	/* all connected (or dead: then read returns 0 early) */
	for (long i = 0; i < nproc; i++)
		if (read(ready[0], buf, 1) != 1)
			break;
	start = now_seconds();
	close(go[1]);
	*total = 0;
	rf = fdopen(result[0], "r");
	while (fgets(buf, sizeof(buf), rf))
		*total += atol(buf);
	fclose(rf);
	close(ready[0]);
	for (long i = 0; i < nproc; i++)
	{
		int			status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed = true;
	}
	if (failed)
	{
		fprintf(stderr, "%s: error: a %s of the benchmark failed\n", progname,
				produce ? "producer" : "consumer");
		exit(EXIT_SERVER);
	}
	return now_seconds() - start;
}

int
cmd_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
		CONN_LONGOPTS,
		{"messages", required_argument, NULL, 'm'},
		{"size", required_argument, NULL, 's'},
		{"batch", required_argument, NULL, 'B'},
		{"producers", required_argument, NULL, 'P'},
		{"consumers", required_argument, NULL, 'C'},
		{"type", required_argument, NULL, 't'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'H'},
		{NULL, 0, NULL, 0}
	};
	BenchOpts	o;
	OutputFormat fmt = FORMAT_TABLE;
	const char *p[2];
	double		tpub;
	double		tcon;
	long		published;
	long		consumed;
	int			c;

	if (want_help(argc, argv))
	{
		fputs(bench_help, stdout);
		fputs(CONN_HELP, stdout);
		return EXIT_OK;
	}
	memset(&o, 0, sizeof(o));
	o.messages = 10000;
	o.size = 100;
	o.batch = 100;
	o.producers = 1;
	o.consumers = 1;
	o.type = "classic";
	optind = 0;
	while ((c = getopt_long(argc, argv, CONN_SHORTOPTS, longopts, NULL)) != -1)
	{
		if (conn_option(c, optarg))
			continue;
		switch (c)
		{
			case 'm':
				o.messages = parse_count("bench", "--messages", optarg, 1, 100000000);
				break;
			case 's':
				o.size = parse_count("bench", "--size", optarg, 0, 16 * 1024 * 1024);
				break;
			case 'B':
				o.batch = parse_count("bench", "--batch", optarg, 1, 10000);
				break;
			case 'P':
				o.producers = parse_count("bench", "--producers", optarg, 1, 64);
				break;
			case 'C':
				o.consumers = parse_count("bench", "--consumers", optarg, 1, 64);
				break;
			case 't':
				if (strcmp(optarg, "classic") != 0 && strcmp(optarg, "quorum") != 0 &&
					strcmp(optarg, "stream") != 0)
					die_usage("bench", "--type must be classic, quorum or stream, not \"%s\"", optarg);
				o.type = optarg;
				break;
			case 'f':
				if (!parse_format(optarg, false, &fmt) || fmt == FORMAT_CSV)
					die_usage("bench", "--format must be table or json, not \"%s\"", optarg);
				break;
			default:
				die_usage("bench", "unknown option or missing value: \"%s\"", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("bench", "too many arguments (\"%s\")", argv[optind]);

	snprintf(o.queue, sizeof(o.queue), "mqctl-bench-%d", (int) getpid());
	p[0] = o.queue;
	p[1] = o.type;
	PQclear(run_query("SELECT mq.queue_declare($1, $2)", 2, p));
	if (strcmp(o.type, "stream") == 0)
	{
		o.group = "bench";
		PQclear(run_query("SELECT mq.group_declare($1, 'bench', start => 'earliest')", 1, p));
	}
	mq_disconnect();			/* the children connect on their own */

	tpub = bench_phase(&o, o.producers, true, &published);
	tcon = bench_phase(&o, o.consumers, false, &consumed);

	/* the group's dead-letter queue, if it made one, goes with it */
	PQclear(run_query(o.group ?
					  "SELECT mq.group_delete($1, 'bench', drop_dead_letters => true), "
					  "mq.queue_delete($1)" :
					  "SELECT mq.queue_delete($1)", 1, p));

	if (fmt == FORMAT_JSON)
	{
		json_object *obj = json_object_new_object();
		json_object *pub = json_object_new_object();
		json_object *con = json_object_new_object();

		json_object_object_add(obj, "type", json_object_new_string(o.type));
		json_object_object_add(obj, "size", json_object_new_int64(o.size));
		json_object_object_add(obj, "batch", json_object_new_int64(o.batch));
		json_object_object_add(pub, "processes", json_object_new_int64(o.producers));
		json_object_object_add(pub, "messages", json_object_new_int64(published));
		json_object_object_add(pub, "seconds", json_object_new_double(tpub));
		json_object_object_add(pub, "per_second", json_object_new_double(published / tpub));
		json_object_object_add(con, "processes", json_object_new_int64(o.consumers));
		json_object_object_add(con, "messages", json_object_new_int64(consumed));
		json_object_object_add(con, "seconds", json_object_new_double(tcon));
		json_object_object_add(con, "per_second", json_object_new_double(consumed / tcon));
		json_object_object_add(obj, "publish", pub);
		json_object_object_add(obj, "consume_ack", con);
		puts(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY |
											JSON_C_TO_STRING_SPACED));
		json_object_put(obj);
	}
	else
	{
		printf("%s queue, %ld-byte bodies, batches of %ld\n", o.type, o.size, o.batch);
		printf("publish      %9ld messages  %2ld producers  %8.2f s  %9.0f msg/s  %7.1f MB/s\n",
			   published, o.producers, tpub, published / tpub,
			   published * (double) o.size / tpub / 1e6);
		printf("consume+ack  %9ld messages  %2ld consumers  %8.2f s  %9.0f msg/s  %7.1f MB/s\n",
			   consumed, o.consumers, tcon, consumed / tcon,
			   consumed * (double) o.size / tcon / 1e6);
	}
	if (consumed != published)
	{
		fprintf(stderr, "%s: error: %ld messages published but %ld consumed\n",
				progname, published, consumed);
		return EXIT_SERVER;
	}
	return EXIT_OK;
}
