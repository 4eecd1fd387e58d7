/*-------------------------------------------------------------------------
 *
 * http_qext.c
 *	  queue_ext's own management paths under /api/queue-ext/
 *	  (docs/management.md): streams with partitions and offsets, consumer
 *	  groups with lag per partition and seek, dead-letter queues and
 *	  redrive, delayed and half messages, message trace, replication.
 *
 * Each is one statement of queue_ext's views and functions, run as the
 * login's role, that builds the JSON the docs name; the views show a role
 * only the queues it holds a privilege on.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

/* the ISO 8601 text of a timestamptz column c, in UTC */
#define ISO(c) "to_char((" c ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/*
 * Streams: their partitions from one read of mq.stream_partitions (which
 * reads the streams' state alone), then each stream's row of mq.queues
 * from mq._queue_stats(name), which reads that stream's state alone (not
 * the 1,000 other queues')
 */
static const char streams_sql[] =
"SELECT coalesce(json_agg(json_build_object("
"  'vhost', $1::text, 'name', q.queue, 'partitions', q.partitions, "
"  'messages', s.messages, 'retention', q.retention, 'arguments', q.arguments, "
"  'partitions_detail', s.detail) ORDER BY q.queue), '[]') "
"FROM (SELECT p.queue, coalesce(sum(p.end_offset - p.first_offset), 0) AS messages, "
"      json_agg(json_build_object("
"     'partition', p.partition, 'first_offset', p.first_offset, 'next_offset', p.end_offset, "
"     'bytes', p.bytes, 'first_time', " ISO("p.first_time") ", "
"     'last_time', " ISO("p.last_time") ") ORDER BY p.partition) AS detail "
"      FROM mq.stream_partitions p GROUP BY p.queue) s "
"CROSS JOIN LATERAL mq._queue_stats(s.queue) q WHERE q.type = 'stream'";

/*
 * Groups: from mq.consumer_groups (every role sees the groups of the
 * streams it sees); the catalog's filter and order only for a superuser
 */
#define GROUPS_SQL(catalog_cols, catalog_join) \
"WITH dl AS MATERIALIZED (SELECT d.queue FROM mq.bindings d "	\
"     WHERE d.exchange = '' AND d.queue LIKE '\\%DLQ\\%%') "	\
"SELECT coalesce(json_agg(g ORDER BY g->>'stream', g->>'name'), '[]') FROM ("	\
"SELECT json_build_object('vhost', $1::text, 'name', cg.group_name, 'stream', cg.queue, "	\
"  'mode', min(cg.mode), " catalog_cols ", "	\
"  'consumers', max(cg.consumers), 'lag', sum(cg.lag), 'in_flight', sum(cg.in_flight), "	\
"  'dead_lettered', sum(cg.dead_lettered), "	\
"  'dead_letter_queue', (SELECT dl.queue FROM dl "	\
"     WHERE dl.queue = '%DLQ%' || cg.group_name), "	\
"  'partitions', json_agg(json_build_object('partition', cg.partition, "	\
"     'consumer', cg.consumer, 'committed_offset', cg.committed_offset, "	\
"     'end_offset', cg.end_offset, 'lag', cg.lag, 'in_flight', cg.in_flight, "	\
"     'retrying', cg.retrying, 'dead_lettered', cg.dead_lettered, "	\
"     'last_delivery', " ISO("cg.last_delivery") ") "	\
"     ORDER BY cg.partition, cg.consumer)) AS g "	\
"FROM mq.consumer_groups cg " catalog_join	\
"GROUP BY cg.queue, cg.group_name) s"

static const char groups_sql_super[] =
GROUPS_SQL("'filter', min(c.filter), 'filter_type', min(c.filter_type), "
		   "'ordered', bool_or(c.ordered)",
		   "LEFT JOIN mq.cat_queue cq ON cq.name = cg.queue "
		   "LEFT JOIN mq.cat_group c ON c.queue_id = cq.id AND c.name = cg.group_name ");

static const char groups_sql[] =
GROUPS_SQL("'filter', NULL::text, 'filter_type', NULL::text, 'ordered', NULL::boolean", "");

/*
 * Dead-letter queues: a group's %DLQ%<group>, and the queues bound to an
 * exchange that a queue's x-dead-letter-exchange names
 */
static const char dead_letters_sql[] =
"WITH q AS MATERIALIZED (SELECT queue, ready, unacked, arguments FROM mq.queues), "
"dlx AS (SELECT q.queue AS src, q.arguments->>'x-dead-letter-exchange' AS x "
"        FROM q WHERE q.arguments ? 'x-dead-letter-exchange'), "
"t AS (SELECT b.queue, dlx.src FROM dlx JOIN mq.bindings b ON b.exchange = dlx.x "
"      UNION "
"      SELECT q.queue, 'group:' || substr(q.queue, 6) FROM q WHERE q.queue LIKE '\\%DLQ\\%%') "
"SELECT coalesce(json_agg(json_build_object('vhost', $1::text, 'queue', q.queue, "
"  'messages', q.ready + q.unacked, 'messages_ready', q.ready, 'source', t.srcs) "
"  ORDER BY q.queue), '[]') "
"FROM q JOIN (SELECT queue, array_agg(src ORDER BY src) AS srcs FROM t GROUP BY queue) t "
"ON t.queue = q.queue";

static const char delayed_sql[] =
"SELECT coalesce(json_agg(json_build_object('vhost', $1::text, 'queue_or_exchange', q.name, "
"  'message_id', t.msg_id, 'deliver_at', " ISO("t.due") ") ORDER BY t.due, t.msg_id), '[]') "
"FROM (SELECT * FROM mq.timer ORDER BY due, msg_id LIMIT $2::int) t "
"JOIN mq.cat_queue q ON q.id = t.queue_id";

static const char half_sql[] =
"SELECT coalesce(json_agg(json_build_object('vhost', $1::text, 'id', h.half_id, "
"  'topic', h.exchange, 'routing_key', h.routing_key, 'producer_group', h.producer_group, "
"  'state', h.state, 'age_seconds', round(extract(epoch FROM now() - h.created_at)::numeric, 3), "
"  'checks', h.checks, 'last_error', h.last_error) "
"  ORDER BY h.state <> 'pending', h.created_at), '[]') "
"FROM (SELECT * FROM mq.half_messages ORDER BY state <> 'pending', created_at "
"      LIMIT $2::int) h";

static const char trace_id_sql[] =
"SELECT coalesce(json_agg(json_build_object('message_id', $1::bigint, 'event', t.event, "
"  'at', " ISO("t.at") ", 'queue', t.queue, 'detail', t.detail)), '[]') "
"FROM mq.trace($1::bigint) t";

static const char trace_key_sql[] =
"SELECT coalesce(json_agg(json_build_object('message_id', m.msg_id, 'event', t.event, "
"  'at', " ISO("t.at") ", 'queue', t.queue, 'detail', t.detail) "
"  ORDER BY m.msg_id DESC, t.at), '[]') "
"FROM (SELECT DISTINCT msg_id FROM mq.messages_by_key($1, 10)) m, "
"LATERAL mq.trace(m.msg_id) t";

static const char replication_sql[] =
"SELECT json_build_object("
"  'role', CASE WHEN pg_is_in_recovery() THEN 'standby' ELSE 'primary' END, "
"  'synchronous_standby_names', current_setting('synchronous_standby_names'), "
"  'quorum_unavailable', current_setting('mq.quorum_unavailable', true), "
"  'required_sync_standbys', min(required_sync_standbys), "
"  'connected_sync_standbys', min(connected_sync_standbys), "
"  'quorum_met', bool_and(quorum_met), "
"  'commits_without_quorum', min(commits_without_quorum), "
"  'without_quorum_since', " ISO("min(without_quorum_since)") ", "
"  'standbys', coalesce(json_agg(json_build_object('application_name', application_name, "
"     'client_addr', client_addr, 'state', state, 'sync_state', sync_state, "
"     'sync_priority', sync_priority, 'flush_lag_bytes', flush_lag_bytes, "
"     'replay_lag_bytes', replay_lag_bytes, 'write_lag', write_lag, 'flush_lag', flush_lag, "
"     'replay_lag', replay_lag, 'reply_time', " ISO("reply_time") ")) "
"     FILTER (WHERE application_name IS NOT NULL OR state IS NOT NULL), '[]')) "
"FROM mq.replication";

/* a JSON listing as it is */
static void
json_done(HttpReq *r, PGresult *res)
{
	json_object *o;

	if (!http_sql_ok(r, res) || (o = http_parse_result(r, res)) == NULL)
		return;
	http_reply_json(r, 200, o);
}

/* done, nothing to say (a seek) */
static void
no_content(HttpReq *r, PGresult *res)
{
	if (!http_sql_ok(r, res))
		return;
	http_reply_empty(r, 204);
}

static void
redriven(HttpReq *r, PGresult *res)
{
	json_object *o;

	if (!http_sql_ok(r, res))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "moved", json_object_new_int64(atoll(PQgetvalue(res, 0, 0))));
	http_reply_json(r, 200, o);
}

/* the groups' statement once the session tells whether its role is a superuser */
static void
groups_run(HttpReq *r, PGresult *res)
{
	const char *vals[1] = {http_vhost_name(r)};

	if (!http_sql_ok(r, res))
		return;
	http_sql(r, PQgetvalue(res, 0, 0)[0] == 't' ? groups_sql_super : groups_sql, 1, vals,
			 json_done);
}

static void
delayed_run(HttpReq *r, PGresult *res)
{
	const char *vals[2] = {http_vhost_name(r), r->scratch};

	if (!http_sql_ok(r, res))
		return;
	if (PQgetvalue(res, 0, 0)[0] != 't')
	{
		http_error(r, 401, "not_authorised",
				   "Access refused. (the delayed-message list reads mq.timer: superusers only)");
		return;
	}
	http_sql(r, delayed_sql, 2, vals, json_done);
}

/* ?limit=: 1..10000, default 100; false (and the reply) if bad */
static bool
limit_arg(HttpReq *r)
{
	const char *l = http_qarg(r, "limit");
	char	   *end;
	long		n = 100;

	if (l)
	{
		n = strtol(l, &end, 10);
		if (*l == '\0' || *end != '\0' || n < 1 || n > 10000)
		{
			http_bad_request(r, "limit must be an integer from 1 to 10000");
			return false;
		}
	}
	snprintf(r->scratch, sizeof(r->scratch), "%ld", n);
	return true;
}

static bool
is_get(HttpReq *r)
{
	return r->method == EVHTTP_REQ_GET || r->method == EVHTTP_REQ_HEAD;
}

/* a listing path: /api/queue-ext/{what}[/{vhost}] */
static bool
listing(HttpReq *r, const char *what)
{
	return strcmp(r->seg[1], what) == 0 && r->nseg <= 3;
}

static void
seek(HttpReq *r)
{
	const char *stream = json_str(r->body, "stream");
	const char *ts = json_str(r->body, "timestamp");
	json_object *off = json_get(r->body, "offset");
	json_object *part = json_get(r->body, "partition");
	bool		bad = false;
	long long	o = 0,
				p = -1;
	char		obuf[32],
				pbuf[32];
	const char *vals[5];

	if (r->body == NULL || !json_object_is_type(r->body, json_type_object))
	{
		http_bad_request(r, "not_json");
		return;
	}
	if (stream == NULL)
	{
		http_bad_request(r, "stream is required");
		return;
	}
	if (off && !json_object_is_type(off, json_type_null))
		o = http_jint(r->body, "offset", 0, &bad);
	else
		off = NULL;
	if (part && !json_object_is_type(part, json_type_null))
		p = http_jint(r->body, "partition", 0, &bad);
	else
		part = NULL;
	if (bad || (off == NULL) == (ts == NULL))
	{
		http_bad_request(r, "give one of offset (an integer) and timestamp, and partition "
						 "as an integer or null");
		return;
	}
	snprintf(obuf, sizeof(obuf), "%lld", o);
	snprintf(pbuf, sizeof(pbuf), "%lld", p);
	vals[0] = stream;
	vals[1] = r->seg[3];
	vals[2] = off ? obuf : NULL;
	vals[3] = ts;
	vals[4] = part ? pbuf : NULL;
	http_sql(r, "SELECT mq.seek($1, $2, to_offset => $3::bigint, to_time => $4::timestamptz, "
			 "\"partition\" => $5::int)", 5, vals, no_content);
}

static void
redrive(HttpReq *r)
{
	const char *to = json_str(r->body, "to");
	bool		bad = false;
	long long	n = -1;
	char		nbuf[32];
	const char *vals[3];

	if (r->body && !json_object_is_type(r->body, json_type_object))
	{
		http_bad_request(r, "not_json");
		return;
	}
	if (json_get(r->body, "count") && !json_object_is_type(json_get(r->body, "count"), json_type_null))
		n = http_jint(r->body, "count", -1, &bad);
	if (bad || (json_get(r->body, "to") && to == NULL &&
				!json_object_is_type(json_get(r->body, "to"), json_type_null)))
	{
		http_bad_request(r, "to must be a queue name or null, count an integer or null");
		return;
	}
	snprintf(nbuf, sizeof(nbuf), "%lld", n);
	vals[0] = r->seg[3];
	vals[1] = to;
	vals[2] = json_get(r->body, "count") &&
		!json_object_is_type(json_get(r->body, "count"), json_type_null) ? nbuf : NULL;
	http_sql(r, "SELECT mq.redrive($1, $2, $3::int)", 3, vals, redriven);
}

/* Route a request under /api/queue-ext/. */
void
http_qext(HttpReq *r)
{
	const char *vals[2];

	if (r->nseg < 2)
	{
		http_not_found(r);
		return;
	}
	if (r->nseg >= 3)
		snprintf(r->vhost, sizeof(r->vhost), "%s", strcmp(r->seg[2], "/") == 0 ? "" : r->seg[2]);
	vals[0] = http_vhost_name(r);

	if (listing(r, "streams"))
	{
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else
			http_sql(r, streams_sql, 1, vals, json_done);
	}
	else if (listing(r, "groups"))
	{
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else
			http_sql(r, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user", 0, NULL,
					 groups_run);
	}
	else if (strcmp(r->seg[1], "groups") == 0 && r->nseg == 5 && strcmp(r->seg[4], "seek") == 0)
	{
		if (r->method != EVHTTP_REQ_POST)
			http_method_not_allowed(r, "POST, OPTIONS");
		else
			seek(r);
	}
	else if (listing(r, "dead-letters"))
	{
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else
			http_sql(r, dead_letters_sql, 1, vals, json_done);
	}
	else if (strcmp(r->seg[1], "queues") == 0 && r->nseg == 5 && strcmp(r->seg[4], "redrive") == 0)
	{
		if (r->method != EVHTTP_REQ_POST)
			http_method_not_allowed(r, "POST, OPTIONS");
		else
			redrive(r);
	}
	else if (listing(r, "delayed"))
	{
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else if (limit_arg(r))
			http_sql(r, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user", 0, NULL,
					 delayed_run);
	}
	else if (listing(r, "half"))
	{
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else if (limit_arg(r))
		{
			const char *hv[2] = {vals[0], r->scratch};

			http_sql(r, half_sql, 2, hv, json_done);
		}
	}
	else if (strcmp(r->seg[1], "trace") == 0 && r->nseg == 3)
	{
		const char *id = http_qarg(r, "id");
		const char *key = http_qarg(r, "key");
		const char *tv[1] = {id ? id : key};

		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else if ((id == NULL) == (key == NULL))
			http_bad_request(r, "give one of id and key");
		else if (id && (strspn(id, "0123456789") != strlen(id) || id[0] == '\0' || strlen(id) > 18))
			http_bad_request(r, "id must be a message id (an integer)");
		else
			http_sql(r, id ? trace_id_sql : trace_key_sql, 1, tv, json_done);
	}
	else if (strcmp(r->seg[1], "replication") == 0 && r->nseg == 2)
	{
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else
			http_sql(r, replication_sql, 0, NULL, json_done);
	}
	else
		http_not_found(r);
}
