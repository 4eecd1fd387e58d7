/*-------------------------------------------------------------------------
 *
 * sql.c
 *	  What the gateway's SQL needs: the AMQP reply code of an SQLSTATE, a
 *	  result's status and message, a text[] literal, and RabbitMQ's values
 *	  in queue_ext's terms (a duration as an interval, a queue's arguments).
 *
 * It knows results and SQLSTATEs, nothing of connections.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the AMQP reply code of an SQLSTATE (docs/amqp.md) */
int
sqlstate_code(const char *st)
{
	if (st == NULL)
		return AMQP_INTERNAL_ERROR;
	if (strcmp(st, "42704") == 0 || strcmp(st, "42P01") == 0)
		return AMQP_NOT_FOUND;
	if (strcmp(st, "42501") == 0 || strcmp(st, "42939") == 0)
		return AMQP_ACCESS_REFUSED;
	if (strcmp(st, "0A000") == 0)
		return AMQP_NOT_IMPLEMENTED;
	if (strncmp(st, "22", 2) == 0 || strcmp(st, "55000") == 0 ||
		strcmp(st, "53400") == 0 || strcmp(st, "54000") == 0 ||
		strcmp(st, "42809") == 0 || strcmp(st, "53000") == 0 ||
		strcmp(st, "2BP01") == 0 || strcmp(st, "P0002") == 0 ||
		strcmp(st, "55006") == 0)
		return AMQP_PRECONDITION_FAILED;
	if (strcmp(st, "40001") == 0 || strcmp(st, "40P01") == 0 || strcmp(st, "55P03") == 0)
		return AMQP_RESOURCE_LOCKED;
	return AMQP_INTERNAL_ERROR;
}

/* Whether res is a statement's success (NULL, a lost session, is not). */
bool
res_ok(PGresult *res)
{
	return res && (PQresultStatus(res) == PGRES_TUPLES_OK ||
				   PQresultStatus(res) == PGRES_COMMAND_OK);
}

/* The SQLSTATE of a failed res, or NULL. */
const char *
res_state(PGresult *res)
{
	return res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
}

/* The primary message of a failed res; for NULL, the session was lost. */
const char *
res_message(PGresult *res)
{
	const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	return m ? m : "PostgreSQL session lost";
}

/* the server's hint of an error, NULL if none */
const char *
res_hint(PGresult *res)
{
	return res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
}

/* a text[] literal of n strings */
void
text_array(Buf *b, char **items, int n)
{
	int			i;

	b->len = 0;
	buf_u8(b, '{');
	for (i = 0; i < n; i++)
	{
		const char *p;

		if (i)
			buf_u8(b, ',');
		buf_u8(b, '"');
		for (p = items[i]; *p; p++)
		{
			if (*p == '"' || *p == '\\')
				buf_u8(b, '\\');
			buf_u8(b, *p);
		}
		buf_u8(b, '"');
	}
	buf_u8(b, '}');
	buf_u8(b, '\0');
}

/*
 * A RabbitMQ duration (x-stream-offset: 7D, 12h, 30m, 10s, 1Y, 2M) as a
 * PostgreSQL interval in out; zero allowed or not.  False: not one.  (A
 * stream's x-max-age is passed on to mq.queue_declare, which maps it.)
 */
bool
rabbit_duration(const char *s, bool zero_ok, char *out, size_t outlen)
{
	char	   *end;
	long		n = strtol(s, &end, 10);
	const char *unit = NULL;

	if (end == s)
		return false;
	switch (*end)
	{
		case 'Y':
			unit = "years";
			break;
		case 'M':
			unit = "months";
			break;
		case 'D':
			unit = "days";
			break;
		case 'h':
			unit = "hours";
			break;
		case 'm':
			unit = "minutes";
			break;
		case 's':
			unit = "seconds";
			break;
	}
	if (unit == NULL || end[1] != '\0' || n < 0 || (n == 0 && !zero_ok))
		return false;
	snprintf(out, outlen, "%ld %s", n, unit);
	return true;
}

/* arguments without what queue_ext does not have (RabbitMQ accepts unknown
 * x-arguments); sets *type from x-queue-type */
char *
queue_arguments(json_object *args, const char **type, char *err, size_t errlen)
{
	static const char *const keep[] = {
		"x-message-ttl", "x-max-length", "x-max-length-bytes", "x-overflow",
		"x-dead-letter-exchange", "x-dead-letter-routing-key", "x-delivery-limit",
		"x-max-priority", NULL
	};
	json_object *o = json_object_new_object();
	const char *qt = json_str(args, "x-queue-type");
	char	   *s;
	int			i;

	*type = "classic";
	if (qt)
	{
		if (strcmp(qt, "classic") != 0 && strcmp(qt, "quorum") != 0 && strcmp(qt, "stream") != 0)
		{
			snprintf(err, errlen, "invalid arg 'x-queue-type' for queue: \"%s\"", qt);
			json_object_put(o);
			return NULL;
		}
		*type = qt;
	}
	if (strcmp(*type, "stream") == 0)
	{
		json_object *v;

		/* mq.queue_declare makes it the retention (mq._rabbit_age) */
		if ((v = json_get(args, "x-max-age")))
			json_object_object_add(o, "x-max-age", json_object_get(v));
		if ((v = json_get(args, "x-max-length-bytes")))
			json_object_object_add(o, "max_bytes", json_object_get(v));
	}
	else
		for (i = 0; keep[i]; i++)
		{
			json_object *v = json_get(args, keep[i]);

			if (v)
				json_object_object_add(o, keep[i], json_object_get(v));
		}
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}
