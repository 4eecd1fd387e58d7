/*-------------------------------------------------------------------------
 *
 * http_rabbit.c
 *	  RabbitMQ's management paths (docs/management.md): overview, whoami,
 *	  vhosts, queues, exchanges, bindings, definitions, connections,
 *	  channels, health checks, with RabbitMQ's field names and status codes.
 *	  Users, permissions, policies and parameters are http_users.c's; the
 *	  listings' sort, columns and paging http_list.c's.
 *
 * Each path is one or a few statements of queue_ext's SQL API, run as the
 * login's role (http_sql), whose JSON is shaped here: what RabbitMQ has
 * and queue_ext has not is RabbitMQ's error shape, never a crash.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#define RABBIT_API_VERSION "3.10.8"

#define lengthof(a) (sizeof(a) / sizeof((a)[0]))

/* {"rate": r} */
static json_object *
rate_obj(double r)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "rate", json_object_new_double(r));
	return o;
}

/* a number of o's key (0 if none or null) */
static double
jnum(json_object *o, const char *key)
{
	json_object *v = json_get(o, key);

	return v ? json_object_get_double(v) : 0.0;
}

/* the segment that names an exchange: amq.default is the default one */
static const char *
exchange_seg(const char *s)
{
	return strcmp(s, "amq.default") == 0 ? "" : s;
}

/* ---------------------------------------------------------------- queues */

/* the gateway's consumers of a queue, as consumer_details */
static json_object *
consumer_details(HttpReq *r, const char *queue)
{
	json_object *a = json_object_new_array();
	Conn	   *c;

	for (c = conns; c; c = c->next)
	{
		if (c->dead || c->chans == NULL || strcmp(c->db, r->vhost) != 0)
			continue;
		if (!r->superuser && strcmp(c->user, r->user) != 0)
			continue;
		for (int i = 1; i <= c->channel_max; i++)
		{
			Chan	   *ch = c->chans[i];

			if (ch == NULL)
				continue;
			for (Consumer *k = ch->consumers; k; k = k->next)
			{
				json_object *o,
						   *cd,
						   *qo;
				char		name[300];

				if (strcmp(k->queue, queue) != 0 || k->cancelled)
					continue;
				o = json_object_new_object();
				cd = json_object_new_object();
				qo = json_object_new_object();
				snprintf(name, sizeof(name), "%s -> %s (%d)", c->peer, c->local, ch->id);
				json_object_object_add(cd, "name", json_object_new_string(name));
				json_object_object_add(cd, "number", json_object_new_int(ch->id));
				json_object_object_add(cd, "user", json_object_new_string(c->user));
				json_object_object_add(cd, "connection_name", json_object_new_string(name));
				json_object_object_add(o, "channel_details", cd);
				json_object_object_add(qo, "name", json_object_new_string(queue));
				json_object_object_add(qo, "vhost", json_object_new_string(http_vhost_name(r)));
				json_object_object_add(o, "queue", qo);
				json_object_object_add(o, "consumer_tag", json_object_new_string(k->tag));
				json_object_object_add(o, "ack_required", json_object_new_boolean(!k->no_ack));
				json_object_object_add(o, "exclusive", json_object_new_boolean(k->exclusive));
				json_object_object_add(o, "prefetch_count", json_object_new_int(k->prefetch));
				json_object_object_add(o, "active", json_object_new_boolean(true));
				json_object_array_add(a, o);
			}
		}
	}
	return a;
}

/*
 * A path that names one object: list's first element (list is let go), or
 * NULL after answering 404 when the list is empty.
 */
static json_object *
only_one(HttpReq *r, json_object *list)
{
	json_object *x = NULL;

	if (json_object_array_length(list) > 0)
		x = json_object_get(json_object_array_get_idx(list, 0));
	json_object_put(list);
	if (x == NULL)
		http_not_found(r);
	return x;
}

/*
 * A queue's row: each visible queue with its counts (mq.queues's) and its
 * counters since the server started (the function behind the view has them
 * too), which become message_stats with rates (http_rate): one read of the
 * queues' state.  Given a queue's name ($1), the function reads that
 * queue's state alone, not every queue's.
 *
 * The rows are written as RabbitMQ's queue objects straight into the
 * reply's text (qfield): at 1,000 queues, json_agg's 740 kB parsed into
 * json-c objects, completed and written out again cost the gateway about
 * 60 ms of CPU a call, three quarters of the call (issue 41).
 */
static const char queues_sql[] =
"SELECT q.queue, q.type, q.durable, q.arguments, q.ready + q.unacked, q.ready, "
"  q.unacked, q.delayed, q.consumers, q.ready_bytes, "
"  to_char(q.last_delivery AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS+00:00'), "
"  q.partitions, to_json(q.first_offset), to_json(q.last_offset), "
"  q.published, q.delivered, q.redelivered, q.acked "
"FROM mq._queue_stats($1::text) q ORDER BY q.queue";

/* queues_sql's columns */
enum
{
	QC_NAME, QC_TYPE, QC_DURABLE, QC_ARGUMENTS, QC_MESSAGES, QC_READY, QC_UNACKED,
	QC_DELAYED, QC_CONSUMERS, QC_READY_BYTES, QC_IDLE_SINCE, QC_PARTITIONS,
	QC_FIRST_OFFSET, QC_LAST_OFFSET, QC_PUBLISH, QC_DELIVER, QC_REDELIVER, QC_ACK
};

/* a queue object's fields, in the order they are written */
enum
{
	QF_NAME, QF_TYPE, QF_DURABLE, QF_ARGUMENTS, QF_MESSAGES, QF_READY, QF_UNACKED,
	QF_DELAYED, QF_CONSUMERS, QF_READY_BYTES, QF_IDLE_SINCE, QF_PARTITIONS,
	QF_FIRST_OFFSET, QF_LAST_OFFSET, QF_VHOST, QF_NODE, QF_STATE, QF_AUTO_DELETE,
	QF_EXCLUSIVE, QF_POLICY, QF_EXCLUSIVE_CONSUMER_TAG, QF_EFFECTIVE_POLICY,
	QF_MESSAGES_DETAILS, QF_READY_DETAILS, QF_UNACKED_DETAILS, QF_MESSAGE_STATS,
	QF_COUNT
};

static const char *const qf_names[QF_COUNT] = {
	"name", "type", "durable", "arguments", "messages", "messages_ready",
	"messages_unacknowledged", "messages_delayed", "consumers", "message_bytes_ready",
	"idle_since", "partitions", "first_offset", "last_offset", "vhost", "node", "state",
	"auto_delete", "exclusive", "policy", "exclusive_consumer_tag",
	"effective_policy_definition", "messages_details", "messages_ready_details",
	"messages_unacknowledged_details", "message_stats"
};

/* the rates of a queue: three gauges, then message_stats' four counters */
#define QRATES 7
static const char *const qrate_names[QRATES] = {
	"messages", "messages_ready", "messages_unacknowledged",
	"publish", "deliver", "redeliver", "ack"
};
static const int qrate_cols[QRATES] = {
	QC_MESSAGES, QC_READY, QC_UNACKED, QC_PUBLISH, QC_DELIVER, QC_REDELIVER, QC_ACK
};

typedef struct QRow
{
	int			row;			/* of the result */
	bool		auto_delete;
	bool		exclusive;
	double		rate[QRATES];
	/* the sort's value: 0 none, 1 number, 2 string */
	int			skind;
	double		snum;
	const char *sstr;
} QRow;

typedef struct QList
{
	PGresult   *res;
	const char *vhost;			/* as RabbitMQ names it */
	QRow	   *rows;
	int			n;
} QList;

/* a column's text, NULL if null */
static const char *
qcol(const QList *ql, int i, int col)
{
	int			row = ql->rows[i].row;

	return PQgetisnull(ql->res, row, col) ? NULL : PQgetvalue(ql->res, row, col);
}

/* a number column as json_build_object wrote it: its text, or null */
static void
qnum(Buf *b, const QList *ql, int i, int col)
{
	const char *v = qcol(ql, i, col);

	if (v)
		buf_bytes(b, v, strlen(v));
	else
		buf_bytes(b, "null", 4);
}

/* {"rate":r} */
static void
qrate(Buf *b, double r)
{
	buf_bytes(b, "{\"rate\":", 8);
	http_json_double(b, r);
	buf_bytes(b, "}", 1);
}

/* "key": (the keys here are plain ASCII, with nothing to escape) */
static void
qkey(Buf *b, const char *key)
{
	size_t		n = strlen(key);

	buf_reserve(b, n + 3);
	b->data[b->len++] = '"';
	memcpy(b->data + b->len, key, n);
	b->len += n;
	b->data[b->len++] = '"';
	b->data[b->len++] = ':';
}

/* does queue i have field f (classic queues have no partitions) */
static bool
qhas(const QList *ql, int i, int f)
{
	if (f == QF_PARTITIONS || f == QF_FIRST_OFFSET || f == QF_LAST_OFFSET)
		return qcol(ql, i, QC_PARTITIONS) != NULL;
	return f >= 0 && f < QF_COUNT;
}

/* is field f of queue i null (?columns leaves those out, as before) */
static bool
qnull(const QList *ql, int i, int f)
{
	if (f == QF_POLICY || f == QF_EXCLUSIVE_CONSUMER_TAG)
		return true;
	if (f == QF_IDLE_SINCE)
		return qcol(ql, i, QC_IDLE_SINCE) == NULL;
	/* the fields up to last_offset are the columns, in order */
	return f <= QF_LAST_OFFSET && qcol(ql, i, f) == NULL;
}

/* message_stats' members: a counter, then its rate, for each */
static const char *const qstat_names[] = {
	"publish", "publish_details", "deliver", "deliver_details", "redeliver",
	"redeliver_details", "ack", "ack_details", "deliver_get", "deliver_get_details"
};

/*
 * Member k (qstat_names) of queue i's message_stats: the counter (0 if
 * null, as before) or {"rate": r}; deliver_get is deliver (queue_ext counts
 * deliveries and gets as one)
 */
static void
qstat(Buf *b, const QList *ql, int i, int k)
{
	int			stat = 3 + (k < 8 ? k / 2 : 1);

	if (k % 2 == 0)
	{
		/* a bigint's text, as json-c writes an int64; null: 0 */
		const char *v = qcol(ql, i, qrate_cols[stat]);

		if (v)
			buf_bytes(b, v, strlen(v));
		else
			buf_bytes(b, "0", 1);
	}
	else
		qrate(b, ql->rows[i].rate[stat]);
}

/* the arguments of queue i, parsed (NULL if none or not an object) */
static json_object *
qargs(const QList *ql, int i)
{
	const char *v = qcol(ql, i, QC_ARGUMENTS);

	return v ? json_tokener_parse(v) : NULL;
}

/* the value of field f of queue i (qhas said it has it) */
static void
qvalue(Buf *b, const QList *ql, int i, int f)
{
	const QRow *q = &ql->rows[i];
	const char *v;

	switch (f)
	{
		case QF_NAME:
		case QF_TYPE:
		case QF_IDLE_SINCE:
			v = qcol(ql, i, f == QF_NAME ? QC_NAME : f == QF_TYPE ? QC_TYPE : QC_IDLE_SINCE);
			if (v)
				http_json_str(b, v);
			else
				buf_bytes(b, "null", 4);
			break;
		case QF_DURABLE:
			v = qcol(ql, i, QC_DURABLE);
			if (v)
				buf_bytes(b, v[0] == 't' ? "true" : "false", v[0] == 't' ? 4 : 5);
			else
				buf_bytes(b, "null", 4);
			break;
		case QF_ARGUMENTS:
			v = qcol(ql, i, QC_ARGUMENTS);
			if (v && strcmp(v, "{}") == 0)
				buf_bytes(b, "{}", 2);
			else
			{
				/* jsonb's text has spaces json-c's has not */
				json_object *a = qargs(ql, i);
				const char *s = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN |
															   JSON_C_TO_STRING_NOSLASHESCAPE);

				buf_bytes(b, s, strlen(s));
				json_object_put(a);
			}
			break;
		case QF_MESSAGES:
		case QF_READY:
		case QF_UNACKED:
		case QF_DELAYED:
		case QF_CONSUMERS:
		case QF_READY_BYTES:
		case QF_PARTITIONS:
		case QF_FIRST_OFFSET:
		case QF_LAST_OFFSET:
			/* the fields up to last_offset are the columns, in order */
			qnum(b, ql, i, f);
			break;
		case QF_VHOST:
			http_json_str(b, ql->vhost);
			break;
		case QF_NODE:
			http_json_str(b, http_node_name());
			break;
		case QF_STATE:
			buf_bytes(b, "\"running\"", 9);
			break;
		case QF_AUTO_DELETE:
		case QF_EXCLUSIVE:
			if (f == QF_AUTO_DELETE ? q->auto_delete : q->exclusive)
				buf_bytes(b, "true", 4);
			else
				buf_bytes(b, "false", 5);
			break;
		case QF_POLICY:
		case QF_EXCLUSIVE_CONSUMER_TAG:
			buf_bytes(b, "null", 4);
			break;
		case QF_EFFECTIVE_POLICY:
			buf_bytes(b, "{}", 2);
			break;
		case QF_MESSAGES_DETAILS:
		case QF_READY_DETAILS:
		case QF_UNACKED_DETAILS:
			qrate(b, q->rate[f - QF_MESSAGES_DETAILS]);
			break;
		case QF_MESSAGE_STATS:
			buf_bytes(b, "{", 1);
			for (int k = 0; k < (int) lengthof(qstat_names); k++)
			{
				if (k > 0)
					buf_bytes(b, ",", 1);
				qkey(b, qstat_names[k]);
				qstat(b, ql, i, k);
			}
			buf_bytes(b, "}", 1);
			break;
	}
}

/* queue i as RabbitMQ's queue object, without its closing brace */
static void
qobject_open(Buf *b, const QList *ql, int i)
{
	bool		first = true;

	buf_bytes(b, "{", 1);
	for (int f = 0; f < QF_COUNT; f++)
	{
		if (!qhas(ql, i, f))
			continue;
		if (!first)
			buf_bytes(b, ",", 1);
		first = false;
		qkey(b, qf_names[f]);
		qvalue(b, ql, i, f);
	}
}

/* the field named name, -1 if none */
static int
qfield(const char *name)
{
	for (int f = 0; f < QF_COUNT; f++)
		if (strcmp(qf_names[f], name) == 0)
			return f;
	return -1;
}

/*
 * Member sub of queue i's field f (an object), written as "sub":value;
 * false if it has none.  Objects are message_stats, the rates' {"rate": r}
 * and arguments (null members count as none, as before).
 */
static bool
qmember(Buf *b, const QList *ql, int i, int f, const char *sub)
{
	if (f == QF_MESSAGE_STATS)
	{
		for (int k = 0; k < (int) lengthof(qstat_names); k++)
			if (strcmp(qstat_names[k], sub) == 0)
			{
				if (b)
				{
					qkey(b, sub);
					qstat(b, ql, i, k);
				}
				return true;
			}
		return false;
	}
	if (f >= QF_MESSAGES_DETAILS && f <= QF_UNACKED_DETAILS)
	{
		if (strcmp(sub, "rate") != 0)
			return false;
		if (b)
		{
			qkey(b, sub);
			http_json_double(b, ql->rows[i].rate[f - QF_MESSAGES_DETAILS]);
		}
		return true;
	}
	if (f == QF_ARGUMENTS)
	{
		json_object *a = qargs(ql, i);
		json_object *v = json_get(a, sub);
		bool		found = v != NULL;

		if (found && b)
		{
			const char *s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
														   JSON_C_TO_STRING_NOSLASHESCAPE);

			qkey(b, sub);
			buf_bytes(b, s, strlen(s));
		}
		json_object_put(a);
		return found;
	}
	return false;
}

/*
 * ?columns=a,b.c: the fields kept, in the order first named; a dotted name
 * keeps that member of an object field (its members in the order named),
 * and the whole field, named too, wins
 */
typedef struct QCol
{
	int			f;
	bool		whole;
	int			nsub;
	char	   *sub[16];
} QCol;

static int
qcolumns(const char *cols, QCol *out, int max)
{
	char	   *c = strdup(cols),
			   *save = NULL,
			   *tok;
	int			n = 0;

	for (tok = strtok_r(c, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *dot = strchr(tok, '.');
		int			f,
					k;

		if (dot)
			*dot = '\0';
		f = qfield(tok);
		if (f < 0)
			continue;
		for (k = 0; k < n && out[k].f != f; k++)
			;
		if (k == n)
		{
			if (n == max)
				continue;
			memset(&out[n], 0, sizeof(QCol));
			out[n++].f = f;
		}
		if (!dot)
			out[k].whole = true;
		else if (out[k].nsub < (int) lengthof(out[k].sub))
		{
			bool		dup = false;

			for (int s = 0; s < out[k].nsub; s++)
				dup |= strcmp(out[k].sub[s], dot + 1) == 0;
			if (!dup)
				out[k].sub[out[k].nsub++] = strdup(dot + 1);
		}
	}
	free(c);
	return n;
}

/* queue i with only the columns' fields */
static void
qobject_columns(Buf *b, const QList *ql, int i, const QCol *cols, int ncols)
{
	bool		first = true,
				opened;

	buf_bytes(b, "{", 1);
	for (int c = 0; c < ncols; c++)
	{
		const QCol *col = &cols[c];

		if (!qhas(ql, i, col->f))
			continue;
		if (col->whole)
		{
			if (qnull(ql, i, col->f))
				continue;
			if (!first)
				buf_bytes(b, ",", 1);
			first = false;
			qkey(b, qf_names[col->f]);
			qvalue(b, ql, i, col->f);
			continue;
		}
		opened = false;
		for (int s = 0; s < col->nsub; s++)
		{
			if (!qmember(NULL, ql, i, col->f, col->sub[s]))
				continue;
			if (!opened)
			{
				if (!first)
					buf_bytes(b, ",", 1);
				first = false;
				qkey(b, qf_names[col->f]);
				buf_bytes(b, "{", 1);
			}
			else
				buf_bytes(b, ",", 1);
			opened = true;
			qmember(b, ql, i, col->f, col->sub[s]);
		}
		if (opened)
			buf_bytes(b, "}", 1);
		else if (!qnull(ql, i, col->f) &&
				 (col->f == QF_ARGUMENTS || col->f == QF_MESSAGE_STATS ||
				  (col->f >= QF_MESSAGES_DETAILS && col->f <= QF_UNACKED_DETAILS)))
		{
			/* RabbitMQ keeps the object without the members it lacks */
			if (!first)
				buf_bytes(b, ",", 1);
			first = false;
			qkey(b, qf_names[col->f]);
			buf_bytes(b, "{}", 2);
		}
	}
	buf_bytes(b, "}", 1);
}

/*
 * The sort's value of queue i: field f, or its member sub (RabbitMQ's
 * dotted sort keys: message_stats.publish, messages_details.rate,
 * message_stats.deliver_get_details.rate); as json-c's values compared
 * before: none (absent or null), a string, or a number (objects, arrays
 * and false 0, true 1)
 */
static void
qsortval(QList *ql, int i, int f, const char *sub)
{
	QRow	   *q = &ql->rows[i];
	const char *v = NULL;

	q->skind = 0;
	if (f < 0 || !qhas(ql, i, f))
		return;
	if (sub)
	{
		if (f >= QF_MESSAGES_DETAILS && f <= QF_UNACKED_DETAILS && strcmp(sub, "rate") == 0)
		{
			q->skind = 1;
			q->snum = q->rate[f - QF_MESSAGES_DETAILS];
		}
		else if (f == QF_MESSAGE_STATS)
		{
			for (int k = 0; k < (int) lengthof(qstat_names); k++)
			{
				int			stat = 3 + (k < 8 ? k / 2 : 1);
				size_t		len = strlen(qstat_names[k]);

				if (k % 2 == 0 && strcmp(sub, qstat_names[k]) == 0)
				{
					v = qcol(ql, i, qrate_cols[stat]);
					q->skind = 1;
					q->snum = v ? strtod(v, NULL) : 0;
				}
				else if (k % 2 == 1 && strncmp(sub, qstat_names[k], len) == 0 &&
						 strcmp(sub + len, ".rate") == 0)
				{
					q->skind = 1;
					q->snum = q->rate[stat];
				}
			}
		}
		return;
	}
	switch (f)
	{
		case QF_NAME:
		case QF_TYPE:
		case QF_IDLE_SINCE:
			v = qcol(ql, i, f == QF_NAME ? QC_NAME : f == QF_TYPE ? QC_TYPE : QC_IDLE_SINCE);
			q->skind = v ? 2 : 0;
			q->sstr = v;
			return;
		case QF_VHOST:
		case QF_NODE:
		case QF_STATE:
			q->skind = 2;
			q->sstr = f == QF_VHOST ? ql->vhost : f == QF_NODE ? http_node_name() : "running";
			return;
		case QF_MESSAGES:
		case QF_READY:
		case QF_UNACKED:
		case QF_DELAYED:
		case QF_CONSUMERS:
		case QF_READY_BYTES:
		case QF_PARTITIONS:
			v = qcol(ql, i, f);
			q->skind = v ? 1 : 0;
			q->snum = v ? strtod(v, NULL) : 0;
			return;
		case QF_DURABLE:
			v = qcol(ql, i, QC_DURABLE);
			q->skind = v ? 1 : 0;
			q->snum = v && v[0] == 't';
			return;
		case QF_AUTO_DELETE:
		case QF_EXCLUSIVE:
			q->skind = 1;
			q->snum = f == QF_AUTO_DELETE ? q->auto_delete : q->exclusive;
			return;
		case QF_POLICY:
		case QF_EXCLUSIVE_CONSUMER_TAG:
			return;
		case QF_ARGUMENTS:
		case QF_FIRST_OFFSET:
		case QF_LAST_OFFSET:
			q->skind = qcol(ql, i, f) ? 1 : 0;
			q->snum = 0;
			return;
		default:
			/* objects */
			q->skind = 1;
			q->snum = 0;
			return;
	}
}

static bool qsort_rev;

/* ?sort's order; ties keep the list's order (by name) */
static int
cmp_qrow(const void *a, const void *b)
{
	const QRow *x = a,
			   *y = b;
	int			c;

	if (x->skind == 0 || y->skind == 0)
		c = (x->skind != 0) - (y->skind != 0);
	else if (x->skind == 2 && y->skind == 2)
		c = strcmp(x->sstr, y->sstr);
	else
	{
		double		dx = x->skind == 2 ? strtod(x->sstr, NULL) : x->snum,
					dy = y->skind == 2 ? strtod(y->sstr, NULL) : y->snum;

		c = dx < dy ? -1 : dx > dy;
	}
	if (qsort_rev)
		c = -c;
	return c != 0 ? c : (x->row > y->row) - (x->row < y->row);
}

static void
queues_listed(HttpReq *r, PGresult *res)
{
	QList		ql;
	Buf			b = {0};
	const char *sort = http_qarg(r, "sort");
	const char *cols = http_qarg(r, "columns");
	HttpPage	pg = {0};
	QCol		col[32];
	int			ncol = 0,
				first,
				last,
				matched;
	bool	   *keep;

	if (!http_sql_ok(r, res))
		return;
	if (r->nseg < 3 && !http_page_begin(r, &pg))
		return;
	ql.res = res;
	ql.vhost = http_vhost_name(r);
	ql.n = PQntuples(res);
	ql.rows = calloc(ql.n + 1, sizeof(QRow));
	keep = calloc(ql.n + 1, sizeof(bool));
	if (ql.rows == NULL || keep == NULL)
	{
		fprintf(stderr, "mq-amqp: out of memory\n");
		exit(1);
	}
	for (int i = 0; i < ql.n; i++)
	{
		QRow	   *q = &ql.rows[i];
		const char *name = PQgetvalue(res, i, QC_NAME);
		Qreg	   *reg = qreg_find(r->vhost, name, false);

		q->row = i;
		q->auto_delete = reg && reg->known && reg->auto_delete;
		q->exclusive = reg && reg->owner != NULL;
		for (int k = 0; k < QRATES; k++)
		{
			const char *v = qcol(&ql, i, qrate_cols[k]);

			q->rate[k] = http_rate(ql.vhost, name, qrate_names[k], v ? strtod(v, NULL) : 0);
		}
	}

	/* the text is about 730 bytes a queue: one allocation, not a dozen doublings */
	buf_reserve(&b, (size_t) ql.n * 800 + 256);

	/* one queue's path: its object and its consumers */
	if (r->nseg >= 3)
	{
		if (ql.n == 0)
			http_not_found(r);
		else
		{
			json_object *cd = consumer_details(r, r->seg[2]);
			const char *s = json_object_to_json_string_ext(cd, JSON_C_TO_STRING_PLAIN |
														   JSON_C_TO_STRING_NOSLASHESCAPE);

			qobject_open(&b, &ql, 0);
			buf_bytes(&b, ",\"consumer_details\":", 20);
			buf_bytes(&b, s, strlen(s));
			buf_bytes(&b, "}", 1);
			json_object_put(cd);
			http_reply_buf(r, 200, &b);
		}
		goto done;
	}

	if (sort && *sort)
	{
		char	   *top = strdup(sort),
				   *dot = strchr(top, '.');
		const char *rev = http_qarg(r, "sort_reverse");

		if (dot)
			*dot++ = '\0';
		for (int i = 0; i < ql.n; i++)
			qsortval(&ql, i, qfield(top), dot);
		qsort_rev = rev && strcmp(rev, "true") == 0;
		qsort(ql.rows, ql.n, sizeof(QRow), cmp_qrow);
		free(top);
	}

	/* the page's queues: those the name filter keeps, from first to last */
	matched = 0;
	for (int i = 0; i < ql.n; i++)
	{
		keep[i] = http_page_keeps(&pg, PQgetvalue(res, ql.rows[i].row, QC_NAME));
		matched += keep[i];
	}
	if (!http_page_range(r, &pg, matched, &first, &last))
		goto done;

	if (cols && *cols)
		ncol = qcolumns(cols, col, lengthof(col));
	http_page_head(&b, &pg, matched, first, last);
	buf_bytes(&b, "[", 1);
	for (int i = 0, m = 0, out = 0; i < ql.n; i++)
	{
		if (!keep[i] || m++ < first || m > last)
			continue;
		if (out++ > 0)
			buf_bytes(&b, ",", 1);
		if (cols && *cols)
			qobject_columns(&b, &ql, i, col, ncol);
		else
		{
			qobject_open(&b, &ql, i);
			buf_bytes(&b, "}", 1);
		}
	}
	buf_bytes(&b, "]", 1);
	http_page_tail(&b, &pg, matched, ql.n);
	http_reply_buf(r, 200, &b);

done:
	for (int c = 0; c < ncol; c++)
		for (int s = 0; s < col[c].nsub; s++)
			free(col[c].sub[s]);
	http_page_end(&pg);
	free(ql.rows);
	free(keep);
}

static void
simple_done(HttpReq *r, PGresult *res)
{
	if (!http_sql_ok(r, res))
		return;
	http_reply_empty(r, 204);
}

/* PUT: 201 if made, 204 if it existed with the same settings */
static void
declared(HttpReq *r, PGresult *res)
{
	if (!http_sql_ok(r, res))
		return;
	http_reply_empty(r, strcmp(PQgetvalue(res, 0, 0), "t") == 0 ? 204 : 201);
}

static void
queue_deleted(HttpReq *r, PGresult *res)
{
	if (res && !res_ok(res) && strcmp(res_state(res), "55006") == 0)
	{
		char		text[700];

		/* if-empty or if-unused refused: RabbitMQ's 400 and words */
		snprintf(text, sizeof(text), "queue '%s' in vhost '%s' %s", r->seg[2],
				 http_vhost_name(r), strstr(res_message(res), "not empty") ? "not empty" : "in use");
		http_bad_request(r, text);
		return;
	}
	if (!http_sql_ok(r, res))
		return;
	cancel_queue_consumers(r->vhost, r->seg[2]);
	http_reply_empty(r, 204);
}

/*
 * true if the body has every key; else RabbitMQ's 400, whose reason is the
 * missing keys as Erlang's ~p prints them ("[{key_missing,count}]"): on
 * one line if it is shorter than the line (80) less the column it starts
 * at (1), else a line break and a space after each comma
 */
static bool
keys_present(HttpReq *r, const char *const *keys, size_t n)
{
	char		line[512] = "",
				text[512] = "";
	int			missing = 0;

	for (size_t i = 0; i < n; i++)
		if (json_get(r->body, keys[i]) == NULL)
		{
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s{key_missing,%s}",
					 missing ? "," : "", keys[i]);
			snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s{key_missing,%s}",
					 missing ? ",\n " : "", keys[i]);
			missing++;
		}
	if (missing == 0)
		return true;
	{
		char		reason[520];

		snprintf(reason, sizeof(reason), "[%s]", strlen(line) + 2 >= 79 ? text : line);
		http_bad_request(r, reason);
	}
	return false;
}

/* a JSON boolean field that must be one; false (and the reply) if not */
static bool
body_bool(HttpReq *r, const char *key, int dflt, int *out)
{
	char		why[300];

	*out = http_jbool(r->body, key, dflt);
	if (*out >= 0)
		return true;
	snprintf(why, sizeof(why), "%s must be true or false", key);
	http_bad_request(r, why);
	return false;
}

static void
queue_put(HttpReq *r)
{
	int			durable,
				auto_delete;
	json_object *args = json_get(r->body, "arguments");
	const char *type = "classic";
	char		err[300];
	char	   *qargs;
	const char *vals[4];

	if (r->body && !json_object_is_type(r->body, json_type_object))
	{
		http_bad_request(r, "not_json");
		return;
	}
	if (!body_bool(r, "durable", 1, &durable) || !body_bool(r, "auto_delete", 0, &auto_delete))
		return;
	if (auto_delete)
	{
		http_bad_request(r, "auto_delete queues are declared over AMQP only in queue_ext "
						 "(they go with their declaring connection's last consumer)");
		return;
	}
	if (args && json_object_is_type(args, json_type_null))
		args = NULL;
	if (args && !json_object_is_type(args, json_type_object))
	{
		http_bad_request(r, "arguments must be an object");
		return;
	}
	qargs = queue_arguments(args, &type, err, sizeof(err));
	if (qargs == NULL)
	{
		http_bad_request(r, err);
		return;
	}
	vals[0] = r->seg[2];
	vals[1] = type;
	vals[2] = durable || strcmp(type, "classic") != 0 ? "true" : "false";
	vals[3] = qargs;
	http_sql(r, "SELECT EXISTS (SELECT FROM mq._queue_stats($1) s), "
			 "mq.queue_declare($1, type => $2, durable => $3::boolean, arguments => $4::jsonb)",
			 4, vals, declared);
	free(qargs);
}

/* ---------------------------------------------------------------- get */

static int
hexval(char c)
{
	return isdigit((unsigned char) c) ? c - '0' : (tolower((unsigned char) c) - 'a' + 10);
}

/* is s (len bytes) valid UTF-8 */
static bool
utf8_valid(const unsigned char *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		unsigned char c = s[i];
		int			n;

		if (c < 0x80)
			n = 0;
		else if ((c & 0xe0) == 0xc0 && c >= 0xc2)
			n = 1;
		else if ((c & 0xf0) == 0xe0)
			n = 2;
		else if ((c & 0xf8) == 0xf0 && c <= 0xf4)
			n = 3;
		else
			return false;
		for (int k = 1; k <= n; k++)
			if (i + k >= len || (s[i + k] & 0xc0) != 0x80)
				return false;
		i += n + 1;
	}
	return true;
}

static char *
base64_encode(const unsigned char *s, size_t len)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char	   *out = malloc(len / 3 * 4 + 8);
	size_t		o = 0;

	for (size_t i = 0; i < len; i += 3)
	{
		uint32_t	v = s[i] << 16 | (i + 1 < len ? s[i + 1] << 8 : 0) |
			(i + 2 < len ? s[i + 2] : 0);

		out[o++] = tbl[(v >> 18) & 63];
		out[o++] = tbl[(v >> 12) & 63];
		out[o++] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? tbl[v & 63] : '=';
	}
	out[o] = '\0';
	return out;
}

/* columns of the get's consume */
enum
{
	G_ID, G_EXCHANGE, G_RK, G_BODY, G_HEADERS, G_REDELIVERED, G_PRIORITY, G_PROPS
};

/* a get refused: RabbitMQ's 401 naming the queue */
static bool
get_refused(HttpReq *r, PGresult *res)
{
	char		text[700];

	if (res == NULL || res_ok(res) || strcmp(res_state(res), "42501") != 0)
		return false;
	snprintf(text, sizeof(text), "ACCESS_REFUSED - access to queue '%s' in vhost '%s' "
			 "refused for user '%s'", r->seg[2], http_vhost_name(r), r->user);
	http_error(r, 401, "not_authorised", text);
	return true;
}

/* the settle of the gets is done: their messages as RabbitMQ's get shows them */
static void
get_settled(HttpReq *r, PGresult *res)
{
	json_object *msgs = r->acc;
	int			ready;
	size_t		n;

	if (get_refused(r, res) || !http_sql_ok(r, res))
		return;
	r->acc = NULL;
	ready = atoi(PQgetvalue(res, 0, 0));
	n = json_object_array_length(msgs);
	for (size_t i = 0; i < n; i++)
		json_object_object_add(json_object_array_get_idx(msgs, i), "message_count",
							   json_object_new_int((int) (ready + n - 1 - i)));
	http_reply_json(r, 200, msgs);
}

/* the gets' messages: shaped into r->acc, then settled by the ackmode */
static void
get_consumed(HttpReq *r, PGresult *res)
{
	json_object *msgs;
	const char *ackmode = json_str(r->body, "ackmode");
	const char *encoding = json_str(r->body, "encoding");
	bool		bad = false;
	long long	truncate = http_jint(r->body, "truncate", -1, &bad);
	char		ids[8192];
	size_t		il = 0;
	const char *vals[3];
	const char *sql;
	int			nrows;

	if (get_refused(r, res) || !http_sql_ok(r, res))
		return;
	msgs = json_object_new_array();
	nrows = PQntuples(res);
	ids[il++] = '{';
	for (int i = 0; i < nrows; i++)
	{
		json_object *m = json_object_new_object();
		json_object *props = NULL;
		const char *hex = PQgetvalue(res, i, G_BODY);
		size_t		hl = strlen(hex) >= 2 ? strlen(hex) - 2 : 0;
		size_t		blen = hl / 2;
		unsigned char *body = malloc(blen + 1);
		size_t		shown;

		for (size_t k = 0; k < blen; k++)
			body[k] = (unsigned char) (hexval(hex[2 + 2 * k]) << 4 | hexval(hex[3 + 2 * k]));
		body[blen] = '\0';
		json_object_object_add(m, "payload_bytes", json_object_new_int64((int64_t) blen));
		json_object_object_add(m, "redelivered",
							   json_object_new_boolean(PQgetvalue(res, i, G_REDELIVERED)[0] == 't'));
		json_object_object_add(m, "exchange", json_object_new_string(PQgetvalue(res, i, G_EXCHANGE)));
		json_object_object_add(m, "routing_key", json_object_new_string(PQgetvalue(res, i, G_RK)));
		if (!PQgetisnull(res, i, G_PROPS))
			props = json_tokener_parse(PQgetvalue(res, i, G_PROPS));
		if (props && json_object_is_type(props, json_type_object))
		{
			json_object_object_del(props, "annotations");
			json_object_object_del(props, "durability");
		}
		else
		{
			if (props)
				json_object_put(props);
			props = json_object_new_object();
		}
		if (!PQgetisnull(res, i, G_HEADERS))
		{
			json_object *h = json_tokener_parse(PQgetvalue(res, i, G_HEADERS));

			if (h)
			{
				json_object_object_del(h, AMQP_PROPS_KEY);
				if (json_object_object_length(h) > 0)
					json_object_object_add(props, "headers", h);
				else
					json_object_put(h);
			}
		}
		if (!PQgetisnull(res, i, G_PRIORITY))
			json_object_object_add(props, "priority",
								   json_object_new_int(atoi(PQgetvalue(res, i, G_PRIORITY))));
		/* RabbitMQ (Erlang) writes no properties as [] */
		if (json_object_object_length(props) == 0)
		{
			json_object_put(props);
			props = json_object_new_array();
		}
		json_object_object_add(m, "properties", props);
		shown = truncate >= 0 && (size_t) truncate < blen ? (size_t) truncate : blen;
		if ((encoding == NULL || strcmp(encoding, "auto") == 0) && utf8_valid(body, shown) &&
			memchr(body, '\0', shown) == NULL)
		{
			json_object_object_add(m, "payload",
								   json_object_new_string_len((const char *) body, (int) shown));
			json_object_object_add(m, "payload_encoding", json_object_new_string("string"));
		}
		else
		{
			char	   *b64 = base64_encode(body, shown);

			json_object_object_add(m, "payload", json_object_new_string(b64));
			json_object_object_add(m, "payload_encoding", json_object_new_string("base64"));
			free(b64);
		}
		free(body);
		json_object_array_add(msgs, m);
		il += snprintf(ids + il, sizeof(ids) - il, "%s%s", i ? "," : "",
					   PQgetvalue(res, i, G_ID));
		if (il > sizeof(ids) - 64)
			break;
	}
	ids[il++] = '}';
	ids[il] = '\0';
	r->acc = msgs;
	vals[0] = r->seg[2];
	vals[1] = ids;
	if (strcmp(ackmode, "ack_requeue_false") == 0)
		sql = "SELECT (SELECT q.ready FROM mq._queue_stats($1) q), "
			"CASE WHEN cardinality($2::bigint[]) > 0 THEN mq.ack($1, msg_ids => $2::bigint[]) END";
	else if (strcmp(ackmode, "reject_requeue_false") == 0)
		sql = "SELECT (SELECT q.ready FROM mq._queue_stats($1) q), "
			"CASE WHEN cardinality($2::bigint[]) > 0 THEN "
			"mq.nack($1, msg_ids => $2::bigint[], requeue => false) END";
	else
		sql = "SELECT (SELECT q.ready FROM mq._queue_stats($1) q), "
			"CASE WHEN cardinality($2::bigint[]) > 0 THEN "
			"mq.nack($1, msg_ids => $2::bigint[], requeue => true) END";
	http_sql(r, sql, 2, vals, get_settled);
}

static void
queue_get(HttpReq *r)
{
	const char *ackmode = json_str(r->body, "ackmode");
	const char *encoding = json_str(r->body, "encoding");
	bool		bad = false;
	long long	count = http_jint(r->body, "count", 1, &bad);
	char		cnt[32];
	const char *vals[2];
	static const char *const keys[] = {"ackmode", "count", "encoding"};

	if (r->body == NULL || !json_object_is_type(r->body, json_type_object))
	{
		http_bad_request(r, "not_json");
		return;
	}
	if (!keys_present(r, keys, lengthof(keys)))
		return;
	http_jint(r->body, "truncate", -1, &bad);
	if (bad || count < 1 || count > 1000)
	{
		http_bad_request(r, "count must be an integer from 1 to 1000, truncate an integer");
		return;
	}
	if (ackmode == NULL || (strcmp(ackmode, "ack_requeue_true") != 0 &&
							strcmp(ackmode, "ack_requeue_false") != 0 &&
							strcmp(ackmode, "reject_requeue_true") != 0 &&
							strcmp(ackmode, "reject_requeue_false") != 0))
	{
		http_bad_request(r, "ackmode must be ack_requeue_true, ack_requeue_false, "
						 "reject_requeue_true or reject_requeue_false");
		return;
	}
	if (encoding && strcmp(encoding, "auto") != 0 && strcmp(encoding, "base64") != 0)
	{
		http_bad_request(r, "encoding must be auto or base64");
		return;
	}
	snprintf(cnt, sizeof(cnt), "%lld", count);
	vals[0] = r->seg[2];
	vals[1] = cnt;
	http_sql(r, "SELECT msg_id, exchange, routing_key, body, headers::text, redelivered, "
			 "priority, properties::text FROM mq.consume($1, $2::int, lease => '5 minutes')",
			 2, vals, get_consumed);
}

/* ---------------------------------------------------------------- exchanges */

static const char exchanges_sql[] =
"SELECT coalesce(json_agg(json_build_object("
"  'name', x.exchange, 'type', x.type, 'durable', x.durable, 'auto_delete', false, "
"  'internal', false, 'arguments', x.arguments || CASE WHEN x.alternate_exchange IS NULL "
"  THEN '{}'::jsonb ELSE jsonb_build_object('alternate-exchange', x.alternate_exchange) END) "
"  ORDER BY x.exchange), '[]') "
"FROM mq.exchanges x WHERE $1::text IS NULL OR x.exchange = $1";

static void
exchanges_listed(HttpReq *r, PGresult *res)
{
	json_object *list;
	size_t		n;

	if (!http_sql_ok(r, res) || (list = http_parse_result(r, res)) == NULL)
		return;
	n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++)
	{
		json_object *x = json_object_array_get_idx(list, i);

		json_object_object_add(x, "vhost", json_object_new_string(http_vhost_name(r)));
		json_object_object_add(x, "user_who_performed_action",
							   json_object_new_string("queue_ext"));
	}
	if (r->nseg >= 3)
	{
		json_object *x = only_one(r, list);

		if (x == NULL)
			return;
		json_object_object_add(x, "incoming", json_object_new_array());
		json_object_object_add(x, "outgoing", json_object_new_array());
		http_reply_json(r, 200, x);
		return;
	}
	http_reply_list(r, list, true);
}

static void
exchange_put(HttpReq *r)
{
	const char *type = json_str(r->body, "type");
	int			durable,
				auto_delete,
				internal;
	json_object *args = json_get(r->body, "arguments");
	const char *ae = NULL;
	const char *vals[4];

	if (r->body == NULL || !json_object_is_type(r->body, json_type_object))
	{
		http_bad_request(r, "not_json");
		return;
	}
	if (!body_bool(r, "durable", 1, &durable) || !body_bool(r, "auto_delete", 0, &auto_delete) ||
		!body_bool(r, "internal", 0, &internal))
		return;
	/* RabbitMQ declares a direct exchange when the body names no type */
	if (type == NULL)
		type = "direct";
	if (auto_delete || internal)
	{
		http_bad_request(r, "queue_ext has no auto-delete or internal exchanges");
		return;
	}
	if (args && !json_object_is_type(args, json_type_null))
	{
		if (!json_object_is_type(args, json_type_object))
		{
			http_bad_request(r, "arguments must be an object");
			return;
		}
		ae = json_str(args, "alternate-exchange");
	}
	vals[0] = exchange_seg(r->seg[2]);
	vals[1] = type;
	vals[2] = durable ? "true" : "false";
	vals[3] = ae;
	http_sql(r, "SELECT EXISTS (SELECT FROM mq.exchanges x WHERE x.exchange = $1), "
			 "mq.exchange_declare($1, type => $2, durable => $3::boolean, "
			 "alternate_exchange => $4)", 4, vals, declared);
}

/*
 * A DELETE whose statement counts what it deleted: 204, or 404 when it
 * deleted nothing (an exchange, a binding)
 */
static void
deleted_or_404(HttpReq *r, PGresult *res)
{
	if (res && !res_ok(res) && strcmp(res_state(res), "55006") == 0 &&
		strcmp(r->seg[0], "exchanges") == 0)
	{
		char		text[700];

		/* if-unused refused: RabbitMQ's 400 and words */
		snprintf(text, sizeof(text), "exchange '%s' in vhost '%s' in use", r->seg[2],
				 http_vhost_name(r));
		http_bad_request(r, text);
		return;
	}
	if (!http_sql_ok(r, res))
		return;
	if (strcmp(PQgetvalue(res, 0, 0), "0") == 0)
		http_not_found(r);
	else
		http_reply_empty(r, 204);
}

static void
published(HttpReq *r, PGresult *res)
{
	json_object *o;

	if (res && !res_ok(res) && strcmp(res_state(res), "42501") == 0)
	{
		char		text[700];

		/* RabbitMQ answers a refused publish so (400, the channel's 403) */
		snprintf(text, sizeof(text), "403 ACCESS_REFUSED - access to exchange '%s' in vhost "
				 "'%s' refused for user '%s'", r->seg[2], http_vhost_name(r), r->user);
		http_bad_request(r, text);
		return;
	}
	if (res && !res_ok(res) && strcmp(res_state(res), "42704") == 0)
	{
		char		text[700];

		/* RabbitMQ answers a publish to no exchange with the channel's 404, as 400 */
		snprintf(text, sizeof(text), "404 NOT_FOUND - no exchange '%s' in vhost '%s'",
				 r->seg[2], http_vhost_name(r));
		http_bad_request(r, text);
		return;
	}
	if (res && !res_ok(res) && strcmp(res_state(res), "P0002") == 0)
	{
		o = json_object_new_object();
		json_object_object_add(o, "routed", json_object_new_boolean(false));
		http_reply_json(r, 200, o);
		return;
	}
	if (!http_sql_ok(r, res))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "routed", json_object_new_boolean(true));
	http_reply_json(r, 200, o);
}

static void
exchange_publish(HttpReq *r)
{
	const char *rk = json_str(r->body, "routing_key");
	const char *payload = json_str(r->body, "payload");
	const char *enc = json_str(r->body, "payload_encoding");
	json_object *props = json_get(r->body, "properties");
	json_object *headers = json_get(props, "headers");
	const char *vals[10];
	char		prio[32] = "",
				expi[64] = "";
	bool		bad = false;
	long long	p;

	if (r->body == NULL || !json_object_is_type(r->body, json_type_object))
	{
		http_bad_request(r, "not_json");
		return;
	}
	{
		static const char *const keys[] = {"routing_key", "properties", "payload",
		"payload_encoding"};

		if (!keys_present(r, keys, lengthof(keys)))
			return;
	}
	if (enc == NULL || (strcmp(enc, "string") != 0 && strcmp(enc, "base64") != 0))
	{
		json_object *o = json_object_new_object(),
				   *why = json_object_new_array();

		/* RabbitMQ's reason here is a list: ["unsupported_encoding", enc] */
		json_object_array_add(why, json_object_new_string("unsupported_encoding"));
		json_object_array_add(why, json_object_new_string(enc ? enc : ""));
		json_object_object_add(o, "error", json_object_new_string("bad_request"));
		json_object_object_add(o, "reason", why);
		http_reply_json(r, 400, o);
		return;
	}
	if (props && !json_object_is_type(props, json_type_object) &&
		!(json_object_is_type(props, json_type_array) && json_object_array_length(props) == 0))
	{
		http_bad_request(r, "properties must be an object");
		return;
	}
	if (headers && !json_object_is_type(headers, json_type_object))
	{
		http_bad_request(r, "properties.headers must be an object");
		return;
	}
	p = http_jint(props, "priority", -1, &bad);
	if (p >= 0)
		snprintf(prio, sizeof(prio), "%lld", p);
	if (json_get(props, "expiration"))
	{
		long long	e = http_jint(props, "expiration", -1, &bad);

		if (e < 0)
			bad = true;
		snprintf(expi, sizeof(expi), "%lld milliseconds", e);
	}
	if (bad)
	{
		http_bad_request(r, "properties.priority and properties.expiration must be integers");
		return;
	}
	vals[0] = exchange_seg(r->seg[2]);
	vals[1] = rk;
	vals[2] = payload;
	vals[3] = enc && strcmp(enc, "base64") == 0 ? "base64" : "string";
	vals[4] = headers && json_object_object_length(headers) > 0 ?
		json_object_to_json_string_ext(headers, JSON_C_TO_STRING_PLAIN) : NULL;
	vals[5] = prio[0] ? prio : NULL;
	vals[6] = expi[0] ? expi : NULL;
	vals[7] = json_str(props, "content_type");
	vals[8] = json_str(props, "correlation_id");
	vals[9] = json_str(props, "reply_to");
	http_sql(r, "SELECT mq.publish($1, $2, CASE $4 WHEN 'base64' THEN decode($3, 'base64') "
			 "ELSE convert_to($3, 'UTF8') END, headers => $5::jsonb, mandatory => true, "
			 "priority => $6::int, expiration => $7::interval, content_type => $8, "
			 "correlation_id => $9, reply_to => $10)", 10, vals, published);
}

/* ---------------------------------------------------------------- bindings */

/* RabbitMQ's properties_key: the key ("~" if empty), with a hash of arguments */
#define PROPS_KEY_SQL \
	"CASE WHEN b.arguments = '{}'::jsonb THEN CASE WHEN b.binding_key = '' THEN '~' " \
	"ELSE b.binding_key END ELSE b.binding_key || '~' || left(md5(b.arguments::text), 8) END"

static const char bindings_sql[] =
"SELECT coalesce(json_agg(json_build_object("
"  'source', b.exchange, 'destination', b.queue, 'destination_type', 'queue', "
"  'routing_key', b.binding_key, 'arguments', b.arguments, 'properties_key', " PROPS_KEY_SQL ") "
"  ORDER BY b.exchange <> '', b.exchange, b.queue, b.binding_key), '[]') "
"FROM mq.bindings b WHERE ($1::text IS NULL OR b.queue = $1) "
"AND ($2::text IS NULL OR b.exchange = $2) AND ($3::text IS NULL OR " PROPS_KEY_SQL " = $3)";

static void
bindings_listed(HttpReq *r, PGresult *res)
{
	json_object *list;
	size_t		n;

	if (!http_sql_ok(r, res) || (list = http_parse_result(r, res)) == NULL)
		return;
	n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++)
		json_object_object_add(json_object_array_get_idx(list, i), "vhost",
							   json_object_new_string(http_vhost_name(r)));
	/* one binding by its properties key */
	if (r->nseg == 7)
	{
		json_object *b = only_one(r, list);

		if (b != NULL)
			http_reply_json(r, 200, b);
		return;
	}
	http_reply_list(r, list, false);
}

static void
bound(HttpReq *r, PGresult *res)
{
	char		loc[700];

	if (res && !res_ok(res) && strcmp(res_state(res), "42704") == 0)
	{
		bool		queue = strncmp(res_message(res), "queue ", 6) == 0;

		/* RabbitMQ's 404 for a binding's missing end names it */
		snprintf(loc, sizeof(loc), "no %s '%s' in vhost '%s'", queue ? "queue" : "exchange",
				 queue ? r->seg[5] : r->seg[3], http_vhost_name(r));
		http_error(r, 404, "not_found", loc);
		return;
	}
	if (!http_sql_ok(r, res))
		return;
	snprintf(loc, sizeof(loc), "%s", PQgetvalue(res, 0, 0));
	{
		char	   *enc = evhttp_uriencode(loc, -1, 0);

		evhttp_add_header(evhttp_request_get_output_headers(r->ev), "Location", enc ? enc : loc);
		free(enc);
	}
	http_reply_empty(r, 201);
}

/* /api/bindings/{vhost}/e/{src}/q/{dst}[/{props}] */
static void
binding_path(HttpReq *r)
{
	const char *vals[3];

	if (strcmp(r->seg[2], "e") != 0 || (strcmp(r->seg[4], "q") != 0 && strcmp(r->seg[4], "e") != 0))
	{
		http_not_found(r);
		return;
	}
	if (strcmp(r->seg[4], "e") == 0)
	{
		if (r->method == EVHTTP_REQ_GET)
			http_sql(r, "SELECT '[]'", 0, NULL, bindings_listed);
		else
			http_bad_request(r, "queue_ext has no exchange-to-exchange bindings");
		return;
	}
	vals[0] = r->seg[5];
	vals[1] = exchange_seg(r->seg[3]);
	vals[2] = r->nseg == 7 ? r->seg[6] : NULL;
	if (r->method == EVHTTP_REQ_GET)
	{
		http_sql(r, bindings_sql, 3, vals, bindings_listed);
		return;
	}
	if (r->nseg == 6 && r->method == EVHTTP_REQ_POST)
	{
		json_object *args = json_get(r->body, "arguments");
		const char *rk = json_str(r->body, "routing_key");
		const char *bvals[4];

		if (r->body && !json_object_is_type(r->body, json_type_object))
		{
			http_bad_request(r, "not_json");
			return;
		}
		if (args && !json_object_is_type(args, json_type_object) &&
			!json_object_is_type(args, json_type_null))
		{
			http_bad_request(r, "arguments must be an object");
			return;
		}
		bvals[0] = r->seg[5];
		bvals[1] = exchange_seg(r->seg[3]);
		bvals[2] = rk ? rk : "";
		bvals[3] = args && json_object_is_type(args, json_type_object) ?
			json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN) : "{}";
		http_sql(r, "WITH b AS (SELECT $3::text AS binding_key, $4::jsonb AS arguments) "
				 "SELECT " PROPS_KEY_SQL " FROM b, LATERAL (SELECT mq.bind($1, $2, $3, $4::jsonb)) x",
				 4, bvals, bound);
		return;
	}
	if (r->nseg == 7 && r->method == EVHTTP_REQ_DELETE)
	{
		http_sql(r, "SELECT count(mq.unbind(b.queue, b.exchange, b.binding_key, b.arguments)) "
				 "FROM mq.bindings b WHERE b.queue = $1 AND b.exchange = $2 AND "
				 PROPS_KEY_SQL " = $3", 3, vals, deleted_or_404);
		return;
	}
	http_method_not_allowed(r, r->nseg == 7 ? "HEAD, GET, DELETE, OPTIONS" :
							"HEAD, GET, POST, OPTIONS");
}

/* /api/queues/{vhost}/{name}/bindings: the queue must exist */
static void
queue_bindings_checked(HttpReq *r, PGresult *res)
{
	const char *vals[3] = {r->seg[2], NULL, NULL};

	if (!http_sql_ok(r, res))
		return;
	if (strcmp(PQgetvalue(res, 0, 0), "0") == 0)
	{
		http_not_found(r);
		return;
	}
	http_sql(r, bindings_sql, 3, vals, bindings_listed);
}

/* ---------------------------------------------------------------- definitions */

static void
defs_exported(HttpReq *r, PGresult *res)
{
	json_object *d;

	/* the export reads the catalog: a superuser's, RabbitMQ's administrator */
	if (res && !res_ok(res) && strcmp(res_state(res), "42501") == 0 && !r->superuser)
	{
		http_error(r, 401, "not_authorised", "Not administrator user");
		return;
	}
	if (!http_sql_ok(r, res) || (d = http_parse_result(r, res)) == NULL)
		return;
	if (json_object_is_type(d, json_type_object))
	{
		json_object_object_add(d, "rabbit_version", json_object_new_string(RABBIT_API_VERSION));
		json_object_object_add(d, "rabbitmq_version", json_object_new_string(RABBIT_API_VERSION));
		json_object_object_add(d, "product_name", json_object_new_string("queue_ext"));
		json_object_object_add(d, "product_version", json_object_new_string(GW_VERSION));
		/* /api/definitions/{vhost}: that vhost's objects without the vhost key */
		if (r->nseg >= 2)
		{
			static const char *const kinds[] = {"queues", "exchanges", "bindings"};

			for (size_t k = 0; k < 3; k++)
			{
				json_object *a = json_get(d, kinds[k]);

				for (size_t i = 0; a && i < json_object_array_length(a); i++)
					json_object_object_del(json_object_array_get_idx(a, i), "vhost");
			}
			json_object_object_del(d, "vhosts");
			json_object_object_del(d, "users");
			json_object_object_del(d, "permissions");
		}
	}
	http_reply_json(r, 200, d);
}

static void
defs_imported(HttpReq *r, PGresult *res)
{
	if (!http_sql_ok(r, res))
		return;
	if (PQgetisnull(res, 0, 0))
		http_reply_empty(r, 204);
	else
		http_bad_request(r, PQgetvalue(res, 0, 0));
}

static void
definitions(HttpReq *r)
{
	if (r->method == EVHTTP_REQ_GET || r->method == EVHTTP_REQ_HEAD)
	{
		http_sql(r, "SELECT mq.definitions_export()", 0, NULL, defs_exported);
		return;
	}
	if (r->method == EVHTTP_REQ_POST)
	{
		const char *vals[2];
		json_object *b = r->body;

		if (b == NULL || !json_object_is_type(b, json_type_object))
		{
			http_bad_request(r, "not_json");
			return;
		}
		/* rabbitmqadmin import posts {"file": ..., ...}? no: the definitions */
		vals[0] = json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN);
		vals[1] = http_vhost_name(r);
		http_sql(r, "SELECT string_agg(format('%s %s: %s', kind, name, detail), '; ') "
				 "FILTER (WHERE action = 'failed') FROM mq.definitions_import($1::jsonb, $2)",
				 2, vals, defs_imported);
		return;
	}
	http_method_not_allowed(r, "HEAD, GET, POST, OPTIONS");
}

/* ---------------------------------------------------------------- overview */

static void
overview_done(HttpReq *r, PGresult *res)
{
	json_object *o,
			   *t;
	int			nconn = 0,
				nchan = 0,
				ncons = 0;
	static const char *const stats[] = {"publish", "deliver", "redeliver", "ack"};
	static const char *const types[] = {"direct", "fanout", "headers", "topic"};
	json_object *ms,
			   *qt,
			   *ot,
			   *et,
			   *ls;
	char		field[64];
	const char *port;

	if (!http_sql_ok(r, res) || (t = http_parse_result(r, res)) == NULL)
		return;
	for (Conn *c = conns; c; c = c->next)
	{
		if (c->dead || !c->opened)
			continue;
		if (!r->superuser && strcmp(c->user, r->user) != 0)
			continue;
		nconn++;
		if (c->chans)
			for (int i = 1; i <= c->channel_max; i++)
				if (c->chans[i])
				{
					nchan++;
					for (Consumer *k = c->chans[i]->consumers; k; k = k->next)
						ncons++;
				}
	}
	o = json_object_new_object();
	json_object_object_add(o, "management_version", json_object_new_string(RABBIT_API_VERSION));
	json_object_object_add(o, "rates_mode", json_object_new_string("basic"));
	et = json_object_new_array();
	for (size_t i = 0; i < 4; i++)
	{
		json_object *e = json_object_new_object();

		json_object_object_add(e, "name", json_object_new_string(types[i]));
		json_object_object_add(e, "description", json_object_new_string(""));
		json_object_object_add(e, "enabled", json_object_new_boolean(true));
		json_object_array_add(et, e);
	}
	json_object_object_add(o, "exchange_types", et);
	json_object_object_add(o, "product_version", json_object_new_string(GW_VERSION));
	json_object_object_add(o, "product_name", json_object_new_string("queue_ext"));
	json_object_object_add(o, "rabbitmq_version", json_object_new_string(RABBIT_API_VERSION));
	json_object_object_add(o, "cluster_name", json_object_new_string(http_node_name()));
	json_object_object_add(o, "node", json_object_new_string(http_node_name()));
	json_object_object_add(o, "disable_stats", json_object_new_boolean(false));
	ms = json_object_new_object();
	for (size_t i = 0; i < 4; i++)
	{
		double		v = jnum(t, stats[i]);

		json_object_object_add(ms, stats[i], json_object_new_int64((int64_t) v));
		snprintf(field, sizeof(field), "%s_details", stats[i]);
		json_object_object_add(ms, field, rate_obj(http_rate(http_vhost_name(r), "", stats[i], v)));
	}
	json_object_object_add(ms, "deliver_get", json_object_get(json_get(ms, "deliver")));
	json_object_object_add(ms, "deliver_get_details",
						   json_object_get(json_get(ms, "deliver_details")));
	json_object_object_add(o, "message_stats", ms);
	qt = json_object_new_object();
	json_object_object_add(qt, "messages", json_object_new_int64((int64_t) jnum(t, "messages")));
	json_object_object_add(qt, "messages_ready", json_object_new_int64((int64_t) jnum(t, "ready")));
	json_object_object_add(qt, "messages_unacknowledged",
						   json_object_new_int64((int64_t) jnum(t, "unacked")));
	json_object_object_add(qt, "messages_details",
						   rate_obj(http_rate(http_vhost_name(r), "", "messages", jnum(t, "messages"))));
	json_object_object_add(o, "queue_totals", qt);
	ot = json_object_new_object();
	json_object_object_add(ot, "channels", json_object_new_int(nchan));
	json_object_object_add(ot, "connections", json_object_new_int(nconn));
	json_object_object_add(ot, "consumers", json_object_new_int((int) jnum(t, "consumers") > ncons ?
																 (int) jnum(t, "consumers") : ncons));
	json_object_object_add(ot, "exchanges", json_object_new_int((int) jnum(t, "exchanges")));
	json_object_object_add(ot, "queues", json_object_new_int((int) jnum(t, "queues")));
	json_object_object_add(o, "object_totals", ot);
	ls = json_object_new_array();
	{
		json_object *l = json_object_new_object();

		port = strrchr(cfg.listen, ':');
		json_object_object_add(l, "node", json_object_new_string(http_node_name()));
		json_object_object_add(l, "protocol", json_object_new_string("amqp"));
		json_object_object_add(l, "port", json_object_new_int(port ? atoi(port + 1) : 5672));
		json_object_array_add(ls, l);
		l = json_object_new_object();
		port = strrchr(cfg.http_listen, ':');
		json_object_object_add(l, "node", json_object_new_string(http_node_name()));
		json_object_object_add(l, "protocol", json_object_new_string("http"));
		json_object_object_add(l, "port", json_object_new_int(port ? atoi(port + 1) : 15672));
		json_object_array_add(ls, l);
	}
	json_object_object_add(o, "listeners", ls);
	json_object_object_add(o, "database", json_object_get(json_get(t, "database")));
	json_object_object_add(o, "replication", json_object_get(json_get(t, "replication")));
	json_object_put(t);
	http_reply_json(r, 200, o);
}

/*
 * The totals from one read of the queues' state (mq._queue_stats, behind
 * mq.queues, which also has each queue's counters; mq.metrics would read
 * every consumer group's too): 1,000 queues cost one pass over their
 * shared state, not one per total.  A stream's ready is the offsets it
 * retains and it has no unacked (NULL), as in mq.metrics.
 */
static const char overview_sql[] =
"SELECT json_build_object("
"  'queues', count(*), "
"  'messages', coalesce(sum(ready + coalesce(unacked, 0)), 0), "
"  'ready', coalesce(sum(ready), 0), "
"  'unacked', coalesce(sum(unacked), 0), "
"  'consumers', coalesce(sum(consumers), 0), "
"  'exchanges', (SELECT count(*) FROM mq.exchanges), "
"  'database', current_database(), "
"  'replication', (SELECT json_build_object('required_sync_standbys', required_sync_standbys, "
"     'connected_sync_standbys', connected_sync_standbys, 'quorum_met', quorum_met) "
"     FROM mq.replication LIMIT 1), "
"  'publish', sum(published), "
"  'deliver', sum(delivered), "
"  'redeliver', sum(redelivered), "
"  'ack', sum(acked)) "
"FROM mq._queue_stats()";

/* ---------------------------------------------------------------- whoami, vhosts */

static void
vhosts_done(HttpReq *r, PGresult *res)
{
	json_object *v,
			   *cs;

	if (!http_sql_ok(r, res))
		return;
	v = json_object_new_object();
	cs = json_object_new_object();
	json_object_object_add(v, "name", json_object_new_string(http_vhost_name(r)));
	json_object_object_add(v, "description", json_object_new_string(PQgetvalue(res, 0, 0)));
	json_object_object_add(v, "tags", json_object_new_array());
	json_object_object_add(v, "tracing", json_object_new_boolean(false));
	json_object_object_add(cs, http_node_name(), json_object_new_string("running"));
	json_object_object_add(v, "cluster_state", cs);
	json_object_object_add(v, "messages", json_object_new_int64(atoll(PQgetvalue(res, 0, 1))));
	json_object_object_add(v, "messages_ready", json_object_new_int64(atoll(PQgetvalue(res, 0, 2))));
	json_object_object_add(v, "messages_unacknowledged",
						   json_object_new_int64(atoll(PQgetvalue(res, 0, 3))));
	{
		/* the rates, from the samples /api/overview's totals take too */
		static const char *const f[] = {"messages", "messages_ready", "messages_unacknowledged"};
		json_object *md = json_object_new_object();
		char		key[64];

		for (int i = 0; i < 3; i++)
		{
			snprintf(key, sizeof(key), "%s_details", f[i]);
			json_object_object_add(v, key,
								   rate_obj(http_rate(http_vhost_name(r), "", f[i],
													  (double) atoll(PQgetvalue(res, 0, 1 + i)))));
		}
		json_object_object_add(md, "description", json_object_new_string(PQgetvalue(res, 0, 0)));
		json_object_object_add(md, "tags", json_object_new_array());
		json_object_object_add(v, "metadata", md);
		json_object_object_add(v, "default_queue_type", json_object_new_string("classic"));
	}
	if (r->nseg >= 2)
		http_reply_json(r, 200, v);
	else
	{
		json_object *a = json_object_new_array();

		json_object_array_add(a, v);
		http_reply_list(r, a, true);
	}
}

/* ---------------------------------------------------------------- connections */

static json_object *
conn_json(Conn *c)
{
	json_object *o = json_object_new_object();
	char		name[300];
	int			nchan = 0;
	const char *pc = strrchr(c->peer, ':'),
			   *lc = strrchr(c->local, ':');

	if (c->chans)
		for (int i = 1; i <= c->channel_max; i++)
			if (c->chans[i])
				nchan++;
	snprintf(name, sizeof(name), "%s -> %s", c->peer, c->local);
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "node", json_object_new_string(http_node_name()));
	json_object_object_add(o, "user", json_object_new_string(c->user));
	json_object_object_add(o, "vhost", json_object_new_string(c->vhost[0] ? c->vhost : "/"));
	json_object_object_add(o, "state", json_object_new_string(c->paused ? "flow" : "running"));
	json_object_object_add(o, "protocol", json_object_new_string("AMQP 0-9-1"));
	json_object_object_add(o, "type", json_object_new_string("network"));
	json_object_object_add(o, "auth_mechanism", json_object_new_string("PLAIN"));
	json_object_object_add(o, "ssl", json_object_new_boolean(false));
	json_object_object_add(o, "channels", json_object_new_int(nchan));
	json_object_object_add(o, "channel_max", json_object_new_int(c->channel_max));
	json_object_object_add(o, "frame_max", json_object_new_int64(c->frame_max));
	json_object_object_add(o, "timeout", json_object_new_int(c->heartbeat));
	json_object_object_add(o, "peer_host", json_object_new_string_len(c->peer, pc ? (int) (pc - c->peer) : (int) strlen(c->peer)));
	json_object_object_add(o, "peer_port", json_object_new_int(pc ? atoi(pc + 1) : 0));
	json_object_object_add(o, "host", json_object_new_string_len(c->local, lc ? (int) (lc - c->local) : (int) strlen(c->local)));
	json_object_object_add(o, "port", json_object_new_int(lc ? atoi(lc + 1) : 0));
	json_object_object_add(o, "database", json_object_new_string(c->db));
	return o;
}

/* may the request's login see connection c */
static bool
conn_visible(HttpReq *r, Conn *c, bool all)
{
	/* /api/vhosts/{vhost}/connections, /api/channels/{vhost}: that vhost's */
	bool		by_vhost = strcmp(r->seg[0], "vhosts") == 0 ||
		(r->nseg == 2 && strcmp(r->seg[0], "connections") != 0);

	return !c->dead && c->opened && (all || strcmp(c->user, r->user) == 0) &&
		(!by_vhost || strcmp(c->vhost, r->vhost) == 0);
}

static void
connections_done(HttpReq *r, PGresult *res)
{
	bool		all;
	json_object *a;

	if (!http_sql_ok(r, res))
		return;
	all = PQgetvalue(res, 0, 0)[0] == 't';
	a = json_object_new_array();
	if (strcmp(r->seg[0], "channels") == 0 ||
		(strcmp(r->seg[0], "vhosts") == 0 && strcmp(r->seg[2], "channels") == 0))
	{
		for (Conn *c = conns; c; c = c->next)
		{
			char		name[300];

			if (!conn_visible(r, c, all) || c->chans == NULL)
				continue;
			for (int i = 1; i <= c->channel_max; i++)
			{
				Chan	   *ch = c->chans[i];
				json_object *o,
						   *cd;
				int			ncons = 0;

				if (ch == NULL)
					continue;
				for (Consumer *k = ch->consumers; k; k = k->next)
					ncons++;
				o = json_object_new_object();
				cd = json_object_new_object();
				snprintf(name, sizeof(name), "%s -> %s (%d)", c->peer, c->local, ch->id);
				json_object_object_add(o, "name", json_object_new_string(name));
				json_object_object_add(o, "number", json_object_new_int(ch->id));
				json_object_object_add(o, "node", json_object_new_string(http_node_name()));
				json_object_object_add(o, "user", json_object_new_string(c->user));
				json_object_object_add(o, "vhost", json_object_new_string(c->vhost[0] ? c->vhost : "/"));
				json_object_object_add(o, "state", json_object_new_string(ch->state == CH_OPEN ? "running" : "closing"));
				json_object_object_add(o, "consumer_count", json_object_new_int(ncons));
				json_object_object_add(o, "messages_unacknowledged", json_object_new_int(ch->n_unacked));
				json_object_object_add(o, "prefetch_count", json_object_new_int(ch->prefetch_consumer));
				json_object_object_add(o, "global_prefetch_count", json_object_new_int(ch->prefetch_global));
				json_object_object_add(o, "confirm", json_object_new_boolean(ch->confirm));
				json_object_object_add(o, "transactional", json_object_new_boolean(ch->tx));
				snprintf(name, sizeof(name), "%s -> %s", c->peer, c->local);
				json_object_object_add(cd, "name", json_object_new_string(name));
				json_object_object_add(cd, "peer_host", json_object_new_string(c->addr));
				json_object_object_add(o, "connection_details", cd);
				json_object_array_add(a, o);
			}
		}
		http_reply_list(r, a, true);
		return;
	}
	if (strcmp(r->seg[0], "consumers") == 0)
	{
		for (Conn *c = conns; c; c = c->next)
		{
			if (!conn_visible(r, c, all) || c->chans == NULL)
				continue;
			for (int i = 1; i <= c->channel_max; i++)
			{
				Chan	   *ch = c->chans[i];

				if (ch == NULL)
					continue;
				for (Consumer *k = ch->consumers; k; k = k->next)
				{
					json_object *o = json_object_new_object(),
							   *q = json_object_new_object(),
							   *cd = json_object_new_object();
					char		name[300];

					snprintf(name, sizeof(name), "%s -> %s (%d)", c->peer, c->local, ch->id);
					json_object_object_add(cd, "name", json_object_new_string(name));
					json_object_object_add(cd, "number", json_object_new_int(ch->id));
					json_object_object_add(cd, "user", json_object_new_string(c->user));
					json_object_object_add(q, "name", json_object_new_string(k->queue));
					json_object_object_add(q, "vhost", json_object_new_string(c->vhost[0] ? c->vhost : "/"));
					json_object_object_add(o, "consumer_tag", json_object_new_string(k->tag));
					json_object_object_add(o, "queue", q);
					json_object_object_add(o, "channel_details", cd);
					json_object_object_add(o, "ack_required", json_object_new_boolean(!k->no_ack));
					json_object_object_add(o, "exclusive", json_object_new_boolean(k->exclusive));
					json_object_object_add(o, "prefetch_count", json_object_new_int(k->prefetch));
					json_object_array_add(a, o);
				}
			}
		}
		http_reply_list(r, a, false);
		return;
	}
	/* connections, or one of them */
	for (Conn *c = conns; c; c = c->next)
	{
		char		name[300];

		if (!conn_visible(r, c, all))
			continue;
		snprintf(name, sizeof(name), "%s -> %s", c->peer, c->local);
		if (r->nseg == 2 && strcmp(name, r->seg[1]) != 0)
			continue;
		if (r->nseg == 2 && r->method == EVHTTP_REQ_DELETE)
		{
			const char *reason = evhttp_find_header(evhttp_request_get_input_headers(r->ev),
													"X-Reason");
			char		text[600];

			json_object_put(a);
			snprintf(text, sizeof(text), "CONNECTION_FORCED - %s",
					 reason ? reason : "Closed via management plugin");
			conn_reason(c, false, "closed through the management API by '%s'", r->user);
			conn_error(c, AMQP_CONNECTION_FORCED, text, 0, 0);
			http_reply_empty(r, 204);
			return;
		}
		json_object_array_add(a, conn_json(c));
	}
	if (r->nseg == 2)
	{
		json_object *one = json_object_array_length(a) ?
			json_object_get(json_object_array_get_idx(a, 0)) : NULL;

		json_object_put(a);
		if (one)
			http_reply_json(r, 200, one);
		else
			http_not_found(r);
		return;
	}
	http_reply_list(r, a, true);
}

/* ---------------------------------------------------------------- nodes */

static void
nodes_done(HttpReq *r, PGresult *res)
{
	json_object *a,
			   *n;

	if (!http_sql_ok(r, res))
		return;
	/* RabbitMQ shows the nodes to monitoring and administrator users */
	if (PQgetvalue(res, 0, 0)[0] != 't')
	{
		http_error(r, 401, "not_authorised", "Not monitor user");
		return;
	}
	a = json_object_new_array();
	n = json_object_new_object();
	json_object_object_add(n, "name", json_object_new_string(http_node_name()));
	json_object_object_add(n, "type", json_object_new_string("disc"));
	json_object_object_add(n, "running", json_object_new_boolean(true));
	json_object_object_add(n, "mem_used", json_object_new_int(0));
	json_object_object_add(n, "mem_alarm", json_object_new_boolean(false));
	json_object_object_add(n, "disk_free_alarm", json_object_new_boolean(false));
	json_object_array_add(a, n);
	if (r->nseg >= 2)
	{
		if (strcmp(r->seg[1], http_node_name()) != 0)
		{
			json_object_put(a);
			http_not_found(r);
			return;
		}
		n = json_object_get(n);
		json_object_put(a);
		http_reply_json(r, 200, n);
		return;
	}
	http_reply_list(r, a, false);
}

/* ---------------------------------------------------------------- routing */

/* the vhost of segment i: "/" is the default database ("") */
static void
set_vhost(HttpReq *r, int i)
{
	snprintf(r->vhost, sizeof(r->vhost), "%s", strcmp(r->seg[i], "/") == 0 ? "" : r->seg[i]);
}

static bool
is_get(HttpReq *r)
{
	return r->method == EVHTTP_REQ_GET || r->method == EVHTTP_REQ_HEAD;
}

/* Route a request under /api/ to RabbitMQ's paths. */
void
http_rabbit(HttpReq *r)
{
	const char *s0 = r->nseg ? r->seg[0] : "";
	const char *vals[3] = {NULL, NULL, NULL};

	/* users, permissions, policies, parameters: http_users.c */
	if (http_users(r))
		return;
	/* health checks, cluster-name, extensions, ...: http_health.c */
	if (http_health(r))
		return;
	if (r->nseg >= 2 && strcmp(s0, "nodes") != 0 && strcmp(s0, "connections") != 0 &&
		strcmp(s0, "health") != 0)
		set_vhost(r, 1);

	if (strcmp(s0, "overview") == 0 && r->nseg == 1)
	{
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else
			http_sql(r, overview_sql, 0, NULL, overview_done);
	}
	else if (strcmp(s0, "whoami") == 0 && r->nseg == 1)
	{
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else
			http_whoami(r);
	}
	else if (strcmp(s0, "vhosts") == 0 && r->nseg <= 2)
	{
		if (!is_get(r))
			http_bad_request(r, "a vhost is a database: CREATE DATABASE and "
							 "CREATE EXTENSION queue_ext make one (docs/amqp.md)");
		else
			http_sql(r, "SELECT current_database(), coalesce(sum(ready + unacked), 0), "
					 "coalesce(sum(ready), 0), coalesce(sum(unacked), 0) FROM mq.queues",
					 0, NULL, vhosts_done);
	}
	else if (strcmp(s0, "nodes") == 0 && r->nseg <= 2)
	{
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else
			http_sql(r, "SELECT r.rolsuper OR pg_has_role('pg_monitor', 'MEMBER') "
					 "FROM pg_roles r WHERE r.rolname = current_user", 0, NULL, nodes_done);
	}
	else if (strcmp(s0, "queues") == 0 && r->nseg <= 4)
	{
		if (r->nseg <= 2 && is_get(r))
			http_sql(r, queues_sql, 1, vals, queues_listed);
		else if (r->nseg <= 2)
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else if (r->nseg == 3)
		{
			vals[0] = r->seg[2];
			if (is_get(r))
				http_sql(r, queues_sql, 1, vals, queues_listed);
			else if (r->method == EVHTTP_REQ_PUT)
				queue_put(r);
			else if (r->method == EVHTTP_REQ_DELETE)
			{
				const char *ie = http_qarg(r, "if-empty"),
						   *iu = http_qarg(r, "if-unused");

				vals[1] = ie && strcmp(ie, "true") == 0 ? "true" : "false";
				vals[2] = iu && strcmp(iu, "true") == 0 ? "true" : "false";
				http_sql(r, "SELECT mq.queue_delete($1, if_empty => $2::boolean, "
						 "if_unused => $3::boolean)", 3, vals, queue_deleted);
			}
			else
				http_method_not_allowed(r, "HEAD, GET, PUT, DELETE, OPTIONS");
		}
		else if (strcmp(r->seg[3], "get") == 0)
		{
			if (r->method != EVHTTP_REQ_POST)
				http_method_not_allowed(r, "POST, OPTIONS");
			else
				queue_get(r);
		}
		else if (strcmp(r->seg[3], "contents") == 0)
		{
			vals[0] = r->seg[2];
			if (r->method != EVHTTP_REQ_DELETE)
				http_method_not_allowed(r, "DELETE, OPTIONS");
			else
				http_sql(r, "SELECT mq.queue_purge($1)", 1, vals, simple_done);
		}
		else if (strcmp(r->seg[3], "bindings") == 0)
		{
			vals[0] = r->seg[2];
			if (!is_get(r))
				http_method_not_allowed(r, "HEAD, GET, OPTIONS");
			else
				http_sql(r, "SELECT count(*) FROM mq._queue_stats($1)", 1, vals,
						 queue_bindings_checked);
		}
		else
			http_not_found(r);
	}
	else if (strcmp(s0, "exchanges") == 0 && r->nseg <= 5)
	{
		if (r->nseg <= 2)
		{
			if (is_get(r))
				http_sql(r, exchanges_sql, 1, vals, exchanges_listed);
			else
				http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		}
		else if (r->nseg == 3)
		{
			vals[0] = exchange_seg(r->seg[2]);
			if (is_get(r))
				http_sql(r, exchanges_sql, 1, vals, exchanges_listed);
			else if (r->method == EVHTTP_REQ_PUT)
				exchange_put(r);
			else if (r->method == EVHTTP_REQ_DELETE)
			{
				const char *iu = http_qarg(r, "if-unused");

				vals[1] = iu && strcmp(iu, "true") == 0 ? "true" : "false";
				http_sql(r, "SELECT count(mq.exchange_delete($1, if_unused => $2::boolean)) "
						 "FROM mq.exchanges WHERE exchange = $1", 2, vals, deleted_or_404);
			}
			else
				http_method_not_allowed(r, "HEAD, GET, PUT, DELETE, OPTIONS");
		}
		else if (r->nseg == 4 && strcmp(r->seg[3], "publish") == 0)
		{
			if (r->method != EVHTTP_REQ_POST)
				http_method_not_allowed(r, "POST, OPTIONS");
			else
				exchange_publish(r);
		}
		else if (r->nseg == 5 && strcmp(r->seg[3], "bindings") == 0 &&
				 (strcmp(r->seg[4], "source") == 0 || strcmp(r->seg[4], "destination") == 0))
		{
			if (!is_get(r))
				http_method_not_allowed(r, "HEAD, GET, OPTIONS");
			else if (strcmp(r->seg[4], "destination") == 0)
				http_sql(r, "SELECT '[]'", 0, NULL, bindings_listed);
			else
			{
				vals[1] = exchange_seg(r->seg[2]);
				http_sql(r, bindings_sql, 3, vals, bindings_listed);
			}
		}
		else
			http_not_found(r);
	}
	else if (strcmp(s0, "bindings") == 0 && r->nseg <= 7)
	{
		if (r->nseg <= 2)
		{
			if (is_get(r))
				http_sql(r, bindings_sql, 3, vals, bindings_listed);
			else
				http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		}
		else if (r->nseg >= 6)
			binding_path(r);
		else
			http_not_found(r);
	}
	else if (strcmp(s0, "definitions") == 0 && r->nseg <= 2)
		definitions(r);
	else if (strcmp(s0, "vhosts") == 0 && r->nseg == 3 &&
			 (strcmp(r->seg[2], "connections") == 0 || strcmp(r->seg[2], "channels") == 0))
	{
		/* a vhost's connections or channels (the session is that database's) */
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else
			http_sql(r, "SELECT r.rolsuper OR pg_has_role('pg_monitor', 'MEMBER') "
					 "FROM pg_roles r WHERE r.rolname = current_user", 0, NULL, connections_done);
	}
	else if ((strcmp(s0, "connections") == 0 && r->nseg <= 2) ||
			 ((strcmp(s0, "channels") == 0 || strcmp(s0, "consumers") == 0) && r->nseg <= 2))
	{
		if (r->nseg == 2 && strcmp(s0, "connections") != 0)
			set_vhost(r, 1);
		if (!is_get(r) && !(r->method == EVHTTP_REQ_DELETE && r->nseg == 2 &&
							strcmp(s0, "connections") == 0))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else
			http_sql(r, "SELECT r.rolsuper OR pg_has_role('pg_monitor', 'MEMBER') "
					 "FROM pg_roles r WHERE r.rolname = current_user", 0, NULL, connections_done);
	}
	else
		http_not_found(r);
}
