/*
 * worker.c: consume a batch, do the work, ack -- all in one transaction.
 *
 * The same as ../python/worker.py, on libpq: the work is an INSERT into a
 * table of the same database, so it is done exactly once per message; a
 * failure before COMMIT rolls back the inserts and the consume together, and
 * the messages come again (flagged redelivered).  --fail-every N rolls back
 * every Nth batch on purpose, after its work, to show it.
 *
 *	./worker [--dsn DSN] [--queue jobs] [--count N] [--idle-timeout 5]
 *
 * Connects with the libpq environment variables (PGHOST, PGPORT, PGDATABASE,
 * PGUSER, ...) unless --dsn gives a connection string or URI.  Stops after
 * --count messages, or after --idle-timeout seconds without one; then checks
 * its table (each message it did there once, none twice) and exits 0 only if
 * that holds.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define MAX_BATCH 1000

static PGconn *conn;

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run a statement; on an error print it and exit (the server rolls back). */
static PGresult *
run(const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
	{
		const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		fprintf(stderr, "worker: %s%s%s", code ? code : "", code ? " " : "",
				PQerrorMessage(conn));
		PQclear(res);
		PQfinish(conn);
		exit(1);
	}
	return res;
}

static void
run_clear(const char *sql, int nparams, const char *const *params)
{
	PQclear(run(sql, nparams, params));
}

static void
usage(void)
{
	fprintf(stderr, "usage: worker [--dsn DSN] [--queue Q] [--table T] [--name N] [--count N]\n"
			"              [--idle-timeout S] [--batch N] [--fail-every N]\n");
	exit(2);
}

static double
seconds_arg(const char *opt, const char *v)
{
	char	   *end;
	double		s = strtod(v, &end);

	if (*v == '\0' || *end != '\0' || !(s > 0 && s <= 86400))
	{
		fprintf(stderr, "worker: %s: bad value \"%s\"\n", opt, v);
		exit(2);
	}
	return s;
}

static int
int_arg(const char *opt, const char *v, int min)
{
	char	   *end;
	long		n = strtol(v, &end, 10);

	if (*v == '\0' || *end != '\0' || n < min || n > 1000000)
	{
		fprintf(stderr, "worker: %s: bad value \"%s\"\n", opt, v);
		exit(2);
	}
	return (int) n;
}

int
main(int argc, char **argv)
{
	const char *dsn = "";
	const char *queue = "jobs";
	const char *table_name = "example_work";
	char		name[64];
	int			count = 0,
				batch = 5,
				fail_every = 0;
	double		idle_timeout = 5.0;
	char	   *table;
	char		sql[1024];
	int			done = 0,
				redelivered = 0,
				batches = 0,
				rolled_back = 0;
	double		last_message;
	PGresult   *res;
	long		mine,
				distinct,
				twice;
	int			ok;

	snprintf(name, sizeof(name), "c-%d", (int) getpid());
	for (int i = 1; i < argc; i += 2)
	{
		const char *opt = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			usage();
		if (strcmp(opt, "--dsn") == 0)
			dsn = v;
		else if (strcmp(opt, "--queue") == 0)
			queue = v;
		else if (strcmp(opt, "--table") == 0)
			table_name = v;
		else if (strcmp(opt, "--name") == 0)
			snprintf(name, sizeof(name), "%s", v);
		else if (strcmp(opt, "--count") == 0)
			count = int_arg(opt, v, 0);
		else if (strcmp(opt, "--batch") == 0)
			batch = int_arg(opt, v, 1);
		else if (strcmp(opt, "--fail-every") == 0)
			fail_every = int_arg(opt, v, 0);
		else if (strcmp(opt, "--idle-timeout") == 0)
			idle_timeout = seconds_arg(opt, v);
		else
			usage();
	}
	if (batch > MAX_BATCH)
		batch = MAX_BATCH;

	conn = PQconnectdb(dsn);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "worker: %s", PQerrorMessage(conn));
		PQfinish(conn);
		return 1;
	}
	table = PQescapeIdentifier(conn, table_name, strlen(table_name));
	if (table == NULL)
	{
		fprintf(stderr, "worker: %s", PQerrorMessage(conn));
		PQfinish(conn);
		return 1;
	}

	/* workers starting together: one creates the table, the others wait */
	run_clear("BEGIN", 0, NULL);
	run_clear("SELECT pg_advisory_xact_lock(hashtext('queue_ext examples'))", 0, NULL);
	run_clear("SET LOCAL client_min_messages = warning", 0, NULL);	/* "already exists" */
	snprintf(sql, sizeof(sql),
			 "CREATE TABLE IF NOT EXISTS %s (msg_id bigint NOT NULL, worker text NOT NULL,"
			 " body text, headers jsonb, redelivered boolean,"
			 " done_at timestamptz NOT NULL DEFAULT clock_timestamp())", table);
	run_clear(sql, 0, NULL);
	run_clear("SELECT mq.queue_declare($1)", 1, (const char *[]) {queue});
	run_clear("COMMIT", 0, NULL);

	snprintf(sql, sizeof(sql),
			 "INSERT INTO %s (msg_id, worker, body, headers, redelivered)"
			 " VALUES ($1, $2, $3, $4, $5)", table);
	last_message = now_seconds();
	while (count == 0 || done < count)
	{
		double		idle = now_seconds() - last_message;
		char		want[16],
					wait[32];
		int			n;
		char	   *ids;
		size_t		idslen = 3;

		if (idle >= idle_timeout)
			break;
		snprintf(want, sizeof(want), "%d",
				 count == 0 || count - done > batch ? batch : count - done);
		snprintf(wait, sizeof(wait), "%.3f seconds",
				 idle_timeout - idle < 1.0 ? idle_timeout - idle : 1.0);

		run_clear("BEGIN", 0, NULL);
		res = run("SELECT msg_id, convert_from(body, 'UTF8'), headers, redelivered"
				  "  FROM mq.consume($1, max_messages => $2::int, wait => $3::interval,"
				  "                  lease => '30 seconds')",
				  3, (const char *[]) {queue, want, wait});
		n = PQntuples(res);
		if (n == 0)
		{
			PQclear(res);
			run_clear("COMMIT", 0, NULL);
			continue;
		}

		/* the work */
		for (int i = 0; i < n; i++)
		{
			const char *params[5] = {
				PQgetvalue(res, i, 0), name, PQgetvalue(res, i, 1),
				PQgetisnull(res, i, 2) ? NULL : PQgetvalue(res, i, 2),
				PQgetvalue(res, i, 3)
			};

			run_clear(sql, 5, params);
			idslen += strlen(PQgetvalue(res, i, 0)) + 1;
		}

		/* the ids as an array literal {1,2,3} */
		ids = malloc(idslen);
		if (ids == NULL)
		{
			fprintf(stderr, "worker: out of memory\n");
			return 1;
		}
		strcpy(ids, "{");
		for (int i = 0; i < n; i++)
		{
			if (i > 0)
				strcat(ids, ",");
			strcat(ids, PQgetvalue(res, i, 0));
		}
		strcat(ids, "}");

		batches++;
		if (fail_every > 0 && batches % fail_every == 0)
		{
			run_clear("ROLLBACK", 0, NULL);
			rolled_back++;
			printf("worker %s: rolled back a batch of %d on purpose (ids %.*s): they come back\n",
				   name, n, (int) strlen(ids) - 2, ids + 1);
		}
		else
		{
			run_clear("SELECT mq.ack($1, $2::bigint[])", 2, (const char *[]) {queue, ids});
			run_clear("COMMIT", 0, NULL);	/* the work and the acks, together */
			for (int i = 0; i < n; i++)
			{
				int			again = strcmp(PQgetvalue(res, i, 3), "t") == 0;

				printf("worker %s: did %s %s%s\n", name, PQgetvalue(res, i, 0),
					   PQgetvalue(res, i, 1), again ? " (redelivered)" : "");
				redelivered += again;
			}
			done += n;
		}
		fflush(stdout);
		free(ids);
		PQclear(res);
		last_message = now_seconds();
	}

	snprintf(sql, sizeof(sql),
			 "SELECT count(*), count(DISTINCT msg_id) FROM %s WHERE worker = $1", table);
	res = run(sql, 1, (const char *[]) {name});
	mine = atol(PQgetvalue(res, 0, 0));
	distinct = atol(PQgetvalue(res, 0, 1));
	PQclear(res);
	snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM (SELECT msg_id FROM %s GROUP BY msg_id"
			 " HAVING count(*) > 1) d", table);
	res = run(sql, 0, NULL);
	twice = atol(PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfreemem(table);
	PQfinish(conn);

	ok = mine == done && distinct == done && twice == 0 && (count == 0 || done == count);
	printf("worker %s: did %d messages (%d redelivered), %d batches rolled back on purpose;"
		   " %s holds %ld rows for it, %ld distinct, %ld messages done twice: %s",
		   name, done, redelivered, rolled_back, table_name, mine, distinct, twice,
		   ok ? "OK" : "FAILED");
	if (count > 0 && done < count)
		printf(" (only %d of %d before the idle timeout)", done, count);
	printf("\n");
	return ok ? 0 : 1;
}
