/*-------------------------------------------------------------------------
 *
 * http_health.c
 *	  RabbitMQ's health checks and the small node-wide paths of the
 *	  management API: /api/healthchecks/node, /api/health/checks/...,
 *	  /api/aliveness-test/{vhost}, /api/cluster-name, /api/extensions,
 *	  /api/auth and /api/feature-flags (docs/management.md).
 *
 * Each check that asks PostgreSQL anything runs one statement on the
 * login's session, so that a check also tells that the database answers.
 * What queue_ext has not (alarms, mirrored queues, TLS certificates,
 * management UI extensions, OAuth, feature flags) is answered as RabbitMQ
 * answers a node without it: "ok", or an empty list.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/http.h>

/* the node's name, as RabbitMQ's rabbit@host: mq-amqp@host */
const char *
http_node_name(void)
{
	static char name[300];

	if (name[0] == '\0')
	{
		char		host[256] = "localhost";

		gethostname(host, sizeof(host) - 1);
		snprintf(name, sizeof(name), "mq-amqp@%s", host);
	}
	return name;
}

/* the port of a HOST:PORT setting, dflt if it has none */
static int
listen_port(const char *hostport, int dflt)
{
	const char *p = strrchr(hostport, ':');

	return p ? atoi(p + 1) : dflt;
}

static void
status_ok(HttpReq *r, PGresult *res)
{
	json_object *o;

	if (!http_sql_ok(r, res))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_string("ok"));
	http_reply_json(r, 200, o);
}

/* aliveness-test: declare, publish to and get from queue "aliveness-test" */
static void
alive_step(HttpReq *r, PGresult *res)
{
	if (!http_sql_ok(r, res))
		return;
	r->step++;
	if (r->step == 1)
		http_sql(r, "SELECT mq.send('aliveness-test', 'test_message'::text)", 0, NULL, alive_step);
	else if (r->step == 2)
		http_sql(r, "SELECT count(*) FROM mq.consume('aliveness-test', 10, auto_ack => true)",
				 0, NULL, alive_step);
	else
		status_ok(r, res);
}

/*
 * port-listener/{port}: is one of the gateway's listeners (AMQP, HTTP) on
 * that port; RabbitMQ's 503 names the ports there are
 */
static void
port_listener(HttpReq *r, PGresult *res)
{
	int			amqp = listen_port(cfg.listen, 5672),
				http = listen_port(cfg.http_listen, 15672);
	const char *s = r->seg[3];
	char	   *end;
	long		port = strtol(s, &end, 10);
	json_object *o;

	if (!http_sql_ok(r, res))
		return;
	if (*s == '\0' || *end != '\0' || port < 0 || port > 65535)
	{
		http_bad_request(r, "port must be an integer");
		return;
	}
	o = json_object_new_object();
	if (port == amqp || port == http)
	{
		json_object_object_add(o, "status", json_object_new_string("ok"));
		json_object_object_add(o, "port", json_object_new_int((int) port));
		http_reply_json(r, 200, o);
	}
	else
	{
		json_object *ports = json_object_new_array();

		json_object_array_add(ports, json_object_new_int(amqp));
		json_object_array_add(ports, json_object_new_int(http));
		json_object_object_add(o, "status", json_object_new_string("failed"));
		json_object_object_add(o, "reason", json_object_new_string("No active listener"));
		json_object_object_add(o, "missing", json_object_new_int((int) port));
		json_object_object_add(o, "ports", ports);
		http_reply_json(r, 503, o);
	}
}

/*
 * protocol-listener/{protocol}: the gateway listens for AMQP 0-9-1 and
 * HTTP (RabbitMQ's names: amqp, amqp091, amqp0-9-1, http)
 */
static void
protocol_listener(HttpReq *r, PGresult *res)
{
	char		proto[64];
	size_t		i;
	json_object *o;
	bool		have;

	if (!http_sql_ok(r, res))
		return;
	for (i = 0; r->seg[3][i] && i < sizeof(proto) - 1; i++)
		proto[i] = (char) tolower((unsigned char) r->seg[3][i]);
	proto[i] = '\0';
	have = strcmp(proto, "amqp") == 0 || strcmp(proto, "amqp091") == 0 ||
		strcmp(proto, "amqp0-9-1") == 0 || strcmp(proto, "amqp0.9.1") == 0 ||
		strcmp(proto, "http") == 0;
	o = json_object_new_object();
	if (have)
	{
		json_object_object_add(o, "status", json_object_new_string("ok"));
		json_object_object_add(o, "protocol", json_object_new_string(r->seg[3]));
		http_reply_json(r, 200, o);
	}
	else
	{
		json_object *ps = json_object_new_array();

		json_object_array_add(ps, json_object_new_string("amqp"));
		json_object_array_add(ps, json_object_new_string("http"));
		json_object_object_add(o, "status", json_object_new_string("failed"));
		json_object_object_add(o, "reason", json_object_new_string("No active listener"));
		json_object_object_add(o, "missing", json_object_new_string(r->seg[3]));
		json_object_object_add(o, "protocols", ps);
		http_reply_json(r, 503, o);
	}
}

/*
 * certificate-expiration/{within}/{unit}: the gateway has no TLS
 * listener, so no certificate expires (RabbitMQ's answer without one)
 */
static void
certificates(HttpReq *r, PGresult *res)
{
	const char *u = r->seg[4];
	char	   *end;
	long		n = strtol(r->seg[3], &end, 10);

	if (!http_sql_ok(r, res))
		return;
	if (r->seg[3][0] == '\0' || *end != '\0' || n < 0 ||
		(strcmp(u, "days") != 0 && strcmp(u, "weeks") != 0 &&
		 strcmp(u, "months") != 0 && strcmp(u, "years") != 0))
	{
		http_bad_request(r, "within must be an integer and unit one of days, weeks, months, years");
		return;
	}
	status_ok(r, res);
}

/* /api/cluster-name: the node's name, as /api/overview's cluster_name */
static void
cluster_name(HttpReq *r, PGresult *res)
{
	json_object *o;

	if (!http_sql_ok(r, res))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(http_node_name()));
	http_reply_json(r, 200, o);
}

/* /api/auth: no OAuth 2 (UAA): basic authentication onto PostgreSQL roles */
static void
auth_settings(HttpReq *r, PGresult *res)
{
	json_object *o;

	if (!http_sql_ok(r, res))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "enable_uaa", json_object_new_boolean(false));
	json_object_object_add(o, "uaa_client_id", json_object_new_string(""));
	json_object_object_add(o, "uaa_location", json_object_new_string(""));
	http_reply_json(r, 200, o);
}

/* GET only: else 405 */
static bool
get_only(HttpReq *r)
{
	if (r->method == EVHTTP_REQ_GET || r->method == EVHTTP_REQ_HEAD)
		return true;
	http_method_not_allowed(r, "HEAD, GET, OPTIONS");
	return false;
}

/*
 * Route the health checks and node-wide paths: true if the path is one of
 * them (and it is answered).
 */
bool
http_health(HttpReq *r)
{
	const char *s0 = r->nseg ? r->seg[0] : "";
	http_result_cb then = NULL;

	if (strcmp(s0, "healthchecks") == 0 && r->nseg == 2 && strcmp(r->seg[1], "node") == 0)
		then = status_ok;
	else if (strcmp(s0, "health") == 0 && r->nseg >= 3 && strcmp(r->seg[1], "checks") == 0)
	{
		const char *c = r->seg[2];

		if (r->nseg == 3 &&
			(strcmp(c, "alarms") == 0 || strcmp(c, "local-alarms") == 0 ||
			 strcmp(c, "virtual-hosts") == 0 || strcmp(c, "node-is-quorum-critical") == 0 ||
			 strcmp(c, "node-is-mirror-sync-critical") == 0))
			then = status_ok;
		else if (r->nseg == 4 && strcmp(c, "port-listener") == 0)
			then = port_listener;
		else if (r->nseg == 4 && strcmp(c, "protocol-listener") == 0)
			then = protocol_listener;
		else if (r->nseg == 5 && strcmp(c, "certificate-expiration") == 0)
			then = certificates;
		else
			return false;
	}
	else if (strcmp(s0, "aliveness-test") == 0 && r->nseg == 2)
	{
		snprintf(r->vhost, sizeof(r->vhost), "%s",
				 strcmp(r->seg[1], "/") == 0 ? "" : r->seg[1]);
		if (get_only(r))
		{
			r->step = 0;
			http_sql(r, "SELECT mq.queue_declare('aliveness-test', durable => false)",
					 0, NULL, alive_step);
		}
		return true;
	}
	else if (strcmp(s0, "cluster-name") == 0 && r->nseg == 1)
	{
		if (r->method == EVHTTP_REQ_PUT)
		{
			http_bad_request(r, "the cluster name is mq-amqp's node name (NAME@host): "
							 "it is not set through the API");
			return true;
		}
		then = cluster_name;
	}
	else if ((strcmp(s0, "extensions") == 0 || strcmp(s0, "feature-flags") == 0) &&
			 r->nseg == 1)
		then = http_reply_empty_list;
	else if (strcmp(s0, "auth") == 0 && r->nseg == 1)
		then = auth_settings;
	else
		return false;
	if (get_only(r))
		http_sql(r, "SELECT 1", 0, NULL, then);
	return true;
}
