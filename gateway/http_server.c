/*-------------------------------------------------------------------------
 *
 * http_server.c
 *	  The management HTTP API of mq-amqp (docs/management.md): libevent's
 *	  evhttp on the gateway's event loop, HTTP basic authentication onto
 *	  PostgreSQL roles, each request's asynchronous session, RabbitMQ's
 *	  error shapes, and the web UI's static files.
 *
 * A request under /api/ is authenticated as the AMQP gateway's logins are:
 * its session connects as the role with the password given, and the login
 * is refused (401) unless the server checked that password
 * (--allow-passwordless-logins: development only); guest/guest from a
 * loopback address is --guest-role's role.  Sessions are kept in pgsess.c's
 * pool under the login, its password and the vhost's database, so that a
 * client polling the API does not connect once per request.  A handler
 * (http_rabbit.c, http_qext.c) runs its statements one at a time through
 * http_sql, never blocking the loop, and answers with http_reply_*.
 *
 * Anything else is a file of --http-www (the web UI): GET and HEAD only,
 * no path that leaves the directory, a Content-Type by extension.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#ifndef MQ_SHAREDIR
#define MQ_SHAREDIR "/usr/share/postgresql/15"
#endif

#define HTTP_MAX_BODY	(64 * 1024 * 1024)
#define lengthof(a) (sizeof(a) / sizeof((a)[0]))

static struct evhttp *http;
static char www_dir[1024];
static http_handler rabbit_paths;	/* main.c's: RabbitMQ's paths */
static http_handler qext_paths;	/* and queue_ext's own */

/* the requests in progress (for shutdown) */
static HttpReq *requests;

/* the requests whose new session is connecting (http_login_bound) */
static int	http_logins;

/* message rates: the last sample of each counter (http_rate) */
static json_object *rate_samples;

static void http_free(HttpReq *r);
static void http_send_now(HttpReq *r);

/* a response header */
static void
add_header(HttpReq *r, const char *key, const char *val)
{
	evhttp_add_header(evhttp_request_get_output_headers(r->ev), key, val);
}

/*
 * Answer the request and free it: body (may be NULL) of type ctype.  The
 * request's session goes back to the pool when it is clean.
 */
static void
reply(HttpReq *r, int code, const char *ctype, const char *body, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	const char *reason;

	if (ctype)
		add_header(r, "Content-Type", ctype);
	add_header(r, "Cache-Control", "no-cache");
	add_header(r, "Vary", "accept, accept-encoding, origin");
	if (body)
		evbuffer_add(b, body, len);
	switch (code)
	{
		case 200:
			reason = "OK";
			break;
		case 201:
			reason = "Created";
			break;
		case 204:
			reason = "No Content";
			break;
		case 400:
			reason = "Bad Request";
			break;
		case 401:
			reason = "Unauthorized";
			break;
		case 404:
			reason = "Not Found";
			break;
		case 405:
			reason = "Method Not Allowed";
			break;
		case 415:
			reason = "Unsupported Media Type";
			break;
		case 503:
			reason = "Service Unavailable";
			break;
		default:
			reason = code >= 500 ? "Internal Server Error" : "Error";
	}
	evhttp_send_reply(r->ev, code, reason, b);
	evbuffer_free(b);
	http_free(r);
}

void
http_reply_text(HttpReq *r, int code, const char *ctype, const char *body)
{
	reply(r, code, ctype, body, body ? strlen(body) : 0);
}

void
http_reply_empty(HttpReq *r, int code)
{
	reply(r, code, NULL, NULL, 0);
}

void
http_reply_json(HttpReq *r, int code, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
												   JSON_C_TO_STRING_NOSLASHESCAPE);

	reply(r, code, "application/json", s, strlen(s));
	json_object_put(o);
}

/*
 * A JSON text written by the caller (http_json_str, http_json_double,
 * buf_bytes): b's bytes are the body, and b is freed.  Long lists are
 * written this way rather than built as json-c objects: at 1,000 queues
 * the objects cost the gateway three times the text (issue 41).
 */
void
http_reply_buf(HttpReq *r, int code, Buf *b)
{
	reply(r, code, "application/json", (const char *) b->data, b->len);
	buf_free(b);
}

/*
 * s as a JSON string, escaped as json-c's serializer escapes it (with
 * JSON_C_TO_STRING_NOSLASHESCAPE, as http_reply_json): text written here
 * and text json-c writes are the same bytes.
 */
void
http_json_str(Buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;

	buf_bytes(b, "\"", 1);
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;
		char		esc[6];
		int			n = 2;

		if (c >= ' ' && c != '"' && c != '\\')
			continue;
		buf_bytes(b, run, s - run);
		run = s + 1;
		esc[0] = '\\';
		switch (c)
		{
			case '\b':
				esc[1] = 'b';
				break;
			case '\n':
				esc[1] = 'n';
				break;
			case '\r':
				esc[1] = 'r';
				break;
			case '\t':
				esc[1] = 't';
				break;
			case '\f':
				esc[1] = 'f';
				break;
			case '"':
			case '\\':
				esc[1] = c;
				break;
			default:
				memcpy(esc + 1, "u00", 3);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 0xf];
				n = 6;
		}
		buf_bytes(b, esc, n);
	}
	buf_bytes(b, run, s - run);
	buf_bytes(b, "\"", 1);
}

/* v as json-c writes a double ("0.0", "0.5", "0.33333333333333331") */
void
http_json_double(Buf *b, double v)
{
	static json_object *d;
	const char *s;

	if (v == 0.0 && !signbit(v))
	{
		buf_bytes(b, "0.0", 3);
		return;
	}
	if (d == NULL)
		d = json_object_new_double(v);
	else
		json_object_set_double(d, v);
	s = json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN);
	buf_bytes(b, s, strlen(s));
}

/* RabbitMQ's error body: {"error": error, "reason": reason} */
void
http_error(HttpReq *r, int code, const char *error, const char *reason)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(error));
	json_object_object_add(o, "reason", json_object_new_string(reason ? reason : ""));
	if (code == 401)
		add_header(r, "WWW-Authenticate", "Basic realm=\"RabbitMQ Management\"");
	http_reply_json(r, code, o);
}

void
http_not_found(HttpReq *r)
{
	http_error(r, 404, "Object Not Found", "Not Found");
}

void
http_bad_request(HttpReq *r, const char *reason)
{
	http_error(r, 400, "bad_request", reason);
}

/* 405 with the methods the path has, and no body (as RabbitMQ) */
void
http_method_not_allowed(HttpReq *r, const char *allow)
{
	add_header(r, "Allow", allow);
	http_reply_empty(r, 405);
}

/*
 * A failed statement as RabbitMQ's error: what does not exist (or a vhost
 * without queue_ext) 404, a missing privilege 401, a bad value or a state
 * that refuses it 400, the server's own trouble 503 or 500.
 */
void
http_sql_error(HttpReq *r, PGresult *res)
{
	const char *st;
	const char *msg;

	if (res == NULL)
	{
		http_error(r, 503, "service_unavailable", "the PostgreSQL session was lost");
		return;
	}
	st = res_state(res);
	msg = res_message(res);
	if (strcmp(st, "42704") == 0 || strcmp(st, "3F000") == 0 || strcmp(st, "42P01") == 0 ||
		strcmp(st, "42883") == 0 || strcmp(st, "3D000") == 0)
		http_not_found(r);
	else if (strcmp(st, "42501") == 0 || strcmp(st, "42939") == 0)
	{
		/* RabbitMQ's words (and spelling) for a refused operation */
		loginfo("http: %s %s by \"%s\" refused: %s",
				r->method == EVHTTP_REQ_GET ? "GET" : r->method == EVHTTP_REQ_PUT ? "PUT" :
				r->method == EVHTTP_REQ_POST ? "POST" : "DELETE",
				evhttp_request_get_uri(r->ev), r->user, msg);
		http_error(r, 401, "not_authorised", "Access refused.");
	}
	else if (strncmp(st, "22", 2) == 0 || strcmp(st, "55000") == 0 || strcmp(st, "42809") == 0 ||
			 strcmp(st, "0A000") == 0 || strcmp(st, "P0002") == 0 || strcmp(st, "53400") == 0 ||
			 strcmp(st, "54000") == 0 || strcmp(st, "2202E") == 0 || strcmp(st, "23505") == 0 ||
			 strncmp(st, "42", 2) == 0)
		http_bad_request(r, msg);
	else if (strncmp(st, "53", 2) == 0 || strncmp(st, "57", 2) == 0 || strncmp(st, "08", 2) == 0 ||
			 strncmp(st, "40", 2) == 0)
		http_error(r, 503, "service_unavailable", msg);
	else
		http_error(r, 500, "internal_server_error", msg);
}

/* true if res succeeded; else the error is the reply (and r is gone) */
bool
http_sql_ok(HttpReq *r, PGresult *res)
{
	if (res_ok(res))
		return true;
	http_sql_error(r, res);
	return false;
}

/*
 * The first column of the first row of res, a JSON text, parsed; NULL (and
 * a 500 reply) if it is not JSON
 */
json_object *
http_parse_result(HttpReq *r, PGresult *res)
{
	json_object *o;

	if (PQntuples(res) < 1 || PQgetisnull(res, 0, 0))
		return json_object_new_array();
	o = json_tokener_parse(PQgetvalue(res, 0, 0));
	if (o == NULL)
		http_error(r, 500, "internal_server_error", "the server's answer is not JSON");
	return o;
}

/* a query string parameter, NULL if not given */
const char *
http_qarg(HttpReq *r, const char *key)
{
	return r->query ? evhttp_find_header(r->query, key) : NULL;
}

/*
 * A boolean of a request body as RabbitMQ takes them: true/false, or the
 * strings "true"/"false" (rabbitmqadmin sends strings); dflt when absent;
 * -1 when it is neither
 */
int
http_jbool(json_object *o, const char *key, int dflt)
{
	json_object *v = json_get(o, key);

	if (v == NULL || json_object_is_type(v, json_type_null))
		return dflt;
	if (json_object_is_type(v, json_type_boolean))
		return json_object_get_boolean(v);
	if (json_object_is_type(v, json_type_string))
	{
		const char *s = json_object_get_string(v);

		if (strcmp(s, "true") == 0)
			return 1;
		if (strcmp(s, "false") == 0)
			return 0;
	}
	return -1;
}

/*
 * An integer of a request body, a number or a string of digits ("count":
 * "1"); dflt when absent; *bad set when it is neither
 */
long long
http_jint(json_object *o, const char *key, long long dflt, bool *bad)
{
	json_object *v = json_get(o, key);

	if (v == NULL || json_object_is_type(v, json_type_null))
		return dflt;
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	if (json_object_is_type(v, json_type_string))
	{
		const char *s = json_object_get_string(v);
		char	   *end;
		long long	n;

		errno = 0;
		n = strtoll(s, &end, 10);
		if (*s && *end == '\0' && errno == 0)
			return n;
	}
	*bad = true;
	return dflt;
}

/* the request's vhost as RabbitMQ names it: "/" for the default database */
const char *
http_vhost_name(HttpReq *r)
{
	return r->vhost[0] ? r->vhost : "/";
}

/*
 * The rate per second of a counter (or gauge) value of obj in vhost, from
 * the sample kept the last time it was asked for: a sample is replaced once
 * it is 5 seconds old, so that pollers a second apart see a rate over the
 * last 5 to 10 seconds; 0 the first time.
 */
double
http_rate(const char *vhost, const char *obj, const char *field, double value)
{
	char		key[1024];
	json_object *s;
	struct timeval tv;
	double		now,
				rate = 0.0;

	static double last_prune = 0;

	gettimeofday(&tv, NULL);
	now = tv.tv_sec + tv.tv_usec / 1e6;
	if (rate_samples == NULL)
		rate_samples = json_object_new_object();
	/* samples not asked for in 10 minutes (deleted queues) go */
	if (now - last_prune > 600)
	{
		json_object *keep = json_object_new_object();

		json_object_object_foreach(rate_samples, k, v)
		{
			if (now - json_object_get_double(json_object_array_get_idx(v, 0)) < 600)
				json_object_object_add(keep, k, json_object_get(v));
		}
		json_object_put(rate_samples);
		rate_samples = keep;
		last_prune = now;
	}
	{
		/*
		 * vhost \x1f obj \x1f field, cut to fit (snprintf here was 8M
		 * instructions of a list of 1,000 queues, per callgrind)
		 */
		const char *part[3] = {vhost, obj, field};
		size_t		len = 0;

		for (int i = 0; i < 3; i++)
		{
			size_t		n = strlen(part[i]);

			if (i > 0 && len < sizeof(key) - 1)
				key[len++] = '\x1f';
			if (n > sizeof(key) - 1 - len)
				n = sizeof(key) - 1 - len;
			memcpy(key + len, part[i], n);
			len += n;
		}
		key[len] = '\0';
	}
	s = json_get(rate_samples, key);
	if (s)
	{
		double		t0 = json_object_get_double(json_object_array_get_idx(s, 0));
		double		v0 = json_object_get_double(json_object_array_get_idx(s, 1));

		if (now - t0 > 0.5)
			rate = (value - v0) / (now - t0);
		if (now - t0 < 5.0)
			return rate;
	}
	s = json_object_new_array();
	json_object_array_add(s, json_object_new_double(now));
	json_object_array_add(s, json_object_new_double(value));
	json_object_object_add(rate_samples, key, s);
	return rate;
}

/* Free a request (after its reply): its session back to the pool. */
static void
http_free(HttpReq *r)
{
	HttpReq   **pp;
	int			i;

	for (pp = &requests; *pp; pp = &(*pp)->next)
		if (*pp == r)
		{
			*pp = r->next;
			break;
		}
	if (r->in_login)
		http_logins--;
	if (r->pg)
	{
		if (r->pg_ready && !r->pg->busy)
		{
			char		key[1024];

			snprintf(key, sizeof(key), "http\x1f%s\x1f%s\x1f%s", r->pguser,
					 r->password ? r->password : "", r->vhost);
			pg_pool_put(r->pg, key);
		}
		else
			pg_close(r->pg);
	}
	for (i = 0; i < r->nseg; i++)
		free(r->seg[i]);
	for (i = 0; i < r->nparams; i++)
		free(r->params[i]);
	free(r->sql);
	free(r->password);
	if (r->body)
		json_object_put(r->body);
	if (r->acc)
		json_object_put(r->acc);
	if (r->query)
	{
		evhttp_clear_headers(r->query);
		free(r->query);
	}
	free(r);
}

/*
 * The sessions of role's logins are not used again: its password or its
 * attributes changed (a PUT or DELETE of /api/users), and a pooled
 * session would let the old password in for up to 10 s more.  The
 * request's own session goes too, if it is role's.
 */
void
http_forget_login(HttpReq *r, const char *role)
{
	char		prefix[300];

	snprintf(prefix, sizeof(prefix), "http\x1f%s\x1f", role);
	pg_pool_drop(prefix);
	if (strcmp(r->pguser, role) == 0)
		r->pg_ready = false;
}

/* the statement's result: to the handler's callback */
static void
http_result(void *arg, PGresult *res)
{
	HttpReq    *r = arg;
	http_result_cb then = r->then;

	r->then = NULL;
	if (res == NULL)
	{
		/* the session is gone: it is not given back */
		r->pg_ready = false;
	}
	else if (!res_ok(res))
	{
		/*
		 * a failed statement may leave deliveries leased to the session
		 * (a get whose settle failed): it is not given back, and ending it
		 * returns them
		 */
		r->pg_ready = false;
	}
	then(r, res);
}

/* send the statement waiting for the session */
static void
http_send_now(HttpReq *r)
{
	pg_send(r->pg, r->sql, r->nparams, NULL, (const char *const *) r->params, NULL, NULL, 0,
			http_result, r);
}

/* the request's session connected (or not): checked as an AMQP login */
static void
http_connected(void *arg, bool ok, const char *error)
{
	HttpReq    *r = arg;
	PGconn	   *pg = ok ? r->pg->pg : NULL;

	r->in_login = false;
	http_logins--;
	if (ok)
	{
		const char *su = PQparameterStatus(pg, "is_superuser");

		r->superuser = su && strcmp(su, "on") == 0;
		if (r->password == NULL && cfg.guest_role && strcmp(r->user, "guest") == 0 &&
			!(su && strcmp(su, "off") == 0))
		{
			logmsg("http: login of \"guest\" refused: --guest-role \"%s\" is a superuser",
				   r->pguser);
			http_error(r, 401, "not_authorized", "Login failed");
			return;
		}
		if (r->password != NULL && !cfg.allow_passwordless && !PQconnectionUsedPassword(pg))
		{
			logmsg("http: login of \"%s\" refused: PostgreSQL let the role in without "
				   "checking its password (trust?); --allow-passwordless-logins allows "
				   "that, for development only", r->user);
			http_error(r, 401, "not_authorized", "Login failed");
			return;
		}
		r->pg_ready = true;
		r->pg->on_lost = NULL;
		http_send_now(r);
		return;
	}
	r->pg_ready = false;
	if (strstr(error, "does not exist") && strstr(error, "database"))
		http_not_found(r);
	else if (strstr(error, "authentication failed") || strstr(error, "no password") ||
			 strstr(error, "role") || strstr(error, "not permitted to log in") ||
			 strstr(error, "no pg_hba.conf entry") || strstr(error, "permission denied"))
	{
		logdebug("http: login of \"%s\" refused: %s", r->user, error);
		http_error(r, 401, "not_authorized", "Login failed");
	}
	else
		http_error(r, 503, "service_unavailable", error);
}

/*
 * Connect the request's new session, within the AMQP side's bounds on
 * logins in progress (--max-logins, --max-logins-per-address), counted
 * apart: a login PostgreSQL takes long to check (a flood of them, an
 * authentication server that hangs) holds a connection slot and a backend
 * each.  Over a bound the request is answered 503 at once (with
 * Retry-After): an HTTP client retries, where AMQP's handshake waits.
 */
static void
http_login(HttpReq *r)
{
	char		why[200];
	int			from_addr = 0;

	for (HttpReq *o = requests; o; o = o->next)
		if (o->in_login && strcmp(o->addr, r->addr) == 0)
			from_addr++;
	if (http_logins >= cfg.max_logins || from_addr >= cfg.max_logins_per_addr)
	{
		if (http_logins >= cfg.max_logins)
			snprintf(why, sizeof(why), "%d logins in progress (max_logins)", http_logins);
		else
			snprintf(why, sizeof(why), "%d logins in progress from %s (max_logins_per_address)",
					 from_addr, r->addr);
		logmsg("http: login of \"%s\" refused: %s", r->user, why);
		add_header(r, "Retry-After", "1");
		http_error(r, 503, "service_unavailable", why);
		return;
	}
	r->in_login = true;
	http_logins++;
	r->pg = pg_connect(r->pguser, r->password, r->vhost[0] ? r->vhost : NULL, false,
					   http_connected, r);
}

/*
 * Run one statement (params are copied) in the request's session, then
 * then(r, res).  The first one connects (or takes a pooled session), which
 * is where the login is checked: a refused one is answered 401 and then is
 * never called.
 */
void
http_sql(HttpReq *r, const char *sql, int n, const char *const *params, http_result_cb then)
{
	int			i;

	if (n > (int) lengthof(r->params))
	{
		http_error(r, 500, "internal_server_error", "too many parameters");
		return;
	}
	free(r->sql);
	for (i = 0; i < r->nparams; i++)
		free(r->params[i]);
	r->sql = strdup(sql);
	r->nparams = n;
	for (i = 0; i < n; i++)
		r->params[i] = params[i] ? strdup(params[i]) : NULL;
	r->then = then;
	if (r->pg_ready)
	{
		http_send_now(r);
		return;
	}
	if (r->pg == NULL)
	{
		char		key[1024];

		snprintf(key, sizeof(key), "http\x1f%s\x1f%s\x1f%s", r->pguser,
				 r->password ? r->password : "", r->vhost);
		r->pg = pg_pool_take(key, NULL);
		if (r->pg)
		{
			const char *su = PQparameterStatus(r->pg->pg, "is_superuser");

			r->superuser = su && strcmp(su, "on") == 0;
			r->pg_ready = true;
			http_send_now(r);
			return;
		}
		http_login(r);
		return;
	}
	/* a session that failed a statement: a new one */
	pg_close(r->pg);
	r->pg = NULL;
	http_login(r);
}

/* base64 (RFC 4648) decoded into out (NUL-terminated); false if invalid */
static bool
base64_decode(const char *in, char *out, size_t outlen)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint32_t	acc = 0;
	int			bits = 0;
	size_t		n = 0;

	for (; *in && *in != '='; in++)
	{
		const char *p = strchr(tbl, *in);

		if (p == NULL || *in == '\0')
			return false;
		acc = (acc << 6) | (uint32_t) (p - tbl);
		bits += 6;
		if (bits >= 8)
		{
			bits -= 8;
			if (n + 1 >= outlen)
				return false;
			out[n++] = (char) ((acc >> bits) & 0xff);
		}
	}
	out[n] = '\0';
	return memchr(out, '\0', n) == NULL;
}

/*
 * The Authorization header's login: user and password set, or false (the
 * request is answered 401).  guest/guest from loopback maps to
 * --guest-role as in AMQP.
 */
static bool
http_auth(HttpReq *r)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(r->ev), "Authorization");
	char		dec[1024];
	char	   *colon;

	if (h == NULL)
	{
		add_header(r, "WWW-Authenticate", "Basic realm=\"RabbitMQ Management\"");
		http_reply_empty(r, 401);
		return false;
	}
	while (*h == ' ')
		h++;
	if (strncasecmp(h, "Basic ", 6) != 0 || !base64_decode(h + 6, dec, sizeof(dec)) ||
		(colon = strchr(dec, ':')) == NULL || colon - dec > 255 || colon == dec)
	{
		http_error(r, 401, "not_authorized", "Login failed");
		return false;
	}
	*colon = '\0';
	snprintf(r->user, sizeof(r->user), "%s", dec);
	if (cfg.guest_role && strcmp(r->user, "guest") == 0)
	{
		if (!r->loopback || strcmp(colon + 1, "guest") != 0)
		{
			http_error(r, 401, "not_authorized", "Login failed");
			return false;
		}
		snprintf(r->pguser, sizeof(r->pguser), "%s", cfg.guest_role);
		r->password = NULL;
		return true;
	}
	/* libpq would take an empty password as none (and read ~/.pgpass) */
	if (colon[1] == '\0' && !cfg.allow_passwordless)
	{
		http_error(r, 401, "not_authorized", "Login failed");
		return false;
	}
	snprintf(r->pguser, sizeof(r->pguser), "%s", r->user);
	r->password = strdup(colon + 1);
	return true;
}

/* A request under /api: split, authenticated, its body read, routed. */
static void
api_request(HttpReq *r, const char *path)
{
	const char *p = path + 4;	/* after "/api" */
	struct evbuffer *in = evhttp_request_get_input_buffer(r->ev);
	size_t		len = evbuffer_get_length(in);
	const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(r->ev));

	/* the segments, each decoded: %2F in a vhost or name is a slash */
	while (*p == '/')
	{
		const char *e = strchr(p + 1, '/');
		size_t		n = e ? (size_t) (e - p - 1) : strlen(p + 1);
		char	   *raw = strndup(p + 1, n);
		size_t		dlen = 0;
		char	   *dec = evhttp_uridecode(raw, 0, &dlen);

		free(raw);
		if (dec == NULL || dlen != strlen(dec) || r->nseg >= (int) lengthof(r->seg) ||
			dlen > 255)
		{
			free(dec);
			http_not_found(r);
			return;
		}
		/* a trailing slash is no segment */
		if (dlen == 0 && e == NULL)
		{
			free(dec);
			break;
		}
		r->seg[r->nseg++] = dec;
		p += n + 1;
	}
	if (q)
	{
		r->query = calloc(1, sizeof(struct evkeyvalq));
		if (evhttp_parse_query_str(q, r->query) != 0)
		{
			http_bad_request(r, "bad query string");
			return;
		}
	}
	if (!http_auth(r))
		return;
	if (len > 0 && (r->method == EVHTTP_REQ_PUT || r->method == EVHTTP_REQ_POST ||
					r->method == EVHTTP_REQ_DELETE))
	{
		char	   *text = malloc(len + 1);
		json_tokener *tok = json_tokener_new();

		evbuffer_copyout(in, text, len);
		text[len] = '\0';
		r->body = json_tokener_parse_ex(tok, text, (int) len);
		if (json_tokener_get_error(tok) != json_tokener_success ||
			tok->char_offset < (int) len)
		{
			/* trailing blanks are fine */
			bool		blank = r->body != NULL;

			for (size_t i = tok->char_offset; blank && i < len; i++)
				if (!strchr(" \t\r\n", text[i]))
					blank = false;
			if (!blank)
			{
				if (r->body)
					json_object_put(r->body);
				r->body = NULL;
				json_tokener_free(tok);
				free(text);
				http_bad_request(r, "not_json");
				return;
			}
		}
		json_tokener_free(tok);
		free(text);
	}
	if (r->nseg >= 1 && strcmp(r->seg[0], "queue-ext") == 0)
		qext_paths(r);
	else
		rabbit_paths(r);
}

/* the Content-Type of a file by its extension */
static const char *
content_type(const char *path)
{
	static const char *const types[][2] = {
		{".html", "text/html; charset=utf-8"},
		{".htm", "text/html; charset=utf-8"},
		{".js", "text/javascript; charset=utf-8"},
		{".mjs", "text/javascript; charset=utf-8"},
		{".css", "text/css; charset=utf-8"},
		{".json", "application/json"},
		{".svg", "image/svg+xml"},
		{".png", "image/png"},
		{".ico", "image/x-icon"},
		{".txt", "text/plain; charset=utf-8"},
		{".map", "application/json"},
		{".woff2", "font/woff2"},
	};
	const char *dot = strrchr(path, '.');

	if (dot && strchr(dot, '/') == NULL)
		for (size_t i = 0; i < lengthof(types); i++)
			if (strcasecmp(dot, types[i][0]) == 0)
				return types[i][1];
	return "application/octet-stream";
}

/*
 * A file of the web UI: GET or HEAD of a path under --http-www ("/":
 * index.html).  A decoded path with "..", a NUL, or a backslash is refused;
 * what is not a regular file is 404.
 */
static void
static_request(HttpReq *r, const char *rawpath)
{
	size_t		dlen = 0;
	char	   *path = evhttp_uridecode(rawpath, 0, &dlen);
	char		full[2048];
	struct stat st;
	int			fd;
	struct evbuffer *b;

	if (r->method != EVHTTP_REQ_GET && r->method != EVHTTP_REQ_HEAD)
	{
		free(path);
		http_method_not_allowed(r, "HEAD, GET");
		return;
	}
	if (path == NULL || dlen != strlen(path) || path[0] != '/' || strstr(path, "..") ||
		strchr(path, '\\') || strstr(path, "//"))
	{
		free(path);
		http_not_found(r);
		return;
	}
	snprintf(full, sizeof(full), "%s%s%s", www_dir, path,
			 path[strlen(path) - 1] == '/' ? "index.html" : "");
	free(path);
	fd = open(full, O_RDONLY | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
	{
		if (fd >= 0)
			close(fd);
		http_not_found(r);
		return;
	}
	add_header(r, "Content-Type", content_type(full));
	/* index.html always checked again; the rest cached for a while */
	add_header(r, "Cache-Control", strstr(full, "index.html") ? "no-cache" : "max-age=300");
	add_header(r, "X-Content-Type-Options", "nosniff");
	b = evbuffer_new();
	if (st.st_size > 0 && evbuffer_add_file(b, fd, 0, st.st_size) != 0)
	{
		close(fd);
		evbuffer_free(b);
		http_error(r, 500, "internal_server_error", "could not read the file");
		return;
	}
	if (st.st_size == 0)
		close(fd);
	evhttp_send_reply(r->ev, 200, "OK", b);
	evbuffer_free(b);
	http_free(r);
}

/* the request's peer address into r->addr: true if it is loopback */
static bool
peer_loopback(HttpReq *r)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(r->ev);
	const char *addr = NULL;
	ev_uint16_t port;

	if (conn == NULL)
		return false;
	evhttp_connection_get_peer(conn, (char **) &addr, &port);
	if (addr == NULL)
		return false;
	snprintf(r->addr, sizeof(r->addr), "%s", addr);
	return strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0 ||
		strncmp(addr, "::ffff:127.", 11) == 0;
}

/* every request */
static void
on_request(struct evhttp_request *ev, void *arg)
{
	HttpReq    *r = calloc(1, sizeof(HttpReq));
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(ev));

	r->ev = ev;
	r->method = evhttp_request_get_command(ev);
	r->loopback = peer_loopback(r);
	r->next = requests;
	requests = r;
	if (path == NULL || path[0] == '\0')
		path = "/";
	if (strcmp(path, "/api") == 0 || strncmp(path, "/api/", 5) == 0)
		api_request(r, path);
	else
		static_request(r, path);
}

/*
 * Start the server on --http-listen (unless "off"): false (and a message)
 * if it cannot listen.
 */
bool
http_start(http_handler rabbit, http_handler qext)
{
	char		host[300];
	char	   *colon;
	int			port;

	rabbit_paths = rabbit;
	qext_paths = qext;

	if (strcmp(cfg.http_listen, "off") == 0 || cfg.http_listen[0] == '\0')
		return true;
	snprintf(host, sizeof(host), "%s", cfg.http_listen);
	colon = strrchr(host, ':');
	if (colon == NULL || (port = atoi(colon + 1)) <= 0 || port > 65535)
	{
		fprintf(stderr, "mq-amqp: --http-listen must be HOST:PORT or off, not \"%s\"\n",
				cfg.http_listen);
		return false;
	}
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']')
	{
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	snprintf(www_dir, sizeof(www_dir), "%s",
			 cfg.http_www ? cfg.http_www : MQ_SHAREDIR "/queue_ext/www");
	while (strlen(www_dir) > 1 && www_dir[strlen(www_dir) - 1] == '/')
		www_dir[strlen(www_dir) - 1] = '\0';
	http = evhttp_new(gw_base);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
							   EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
							   EVHTTP_REQ_PATCH);
	evhttp_set_max_body_size(http, HTTP_MAX_BODY);
	evhttp_set_max_headers_size(http, 64 * 1024);
	evhttp_set_timeout(http, 120);
	evhttp_set_gencb(http, on_request, NULL);
	if (evhttp_bind_socket_with_handle(http, host[0] ? host : "0.0.0.0", port) == NULL)
	{
		if (!cfg.http_listen_set)
		{
			/*
			 * the default address taken (another gateway on this host): the
			 * AMQP side still serves; only an address asked for must be had
			 */
			logmsg("management API not started: could not listen on %s (the default): %s; "
				   "--http-listen chooses another address, --http-listen off none",
				   cfg.http_listen, strerror(errno));
			evhttp_free(http);
			http = NULL;
			return true;
		}
		fprintf(stderr, "mq-amqp: could not listen on %s (--http-listen): %s\n",
				cfg.http_listen, strerror(errno));
		return false;
	}
	lognote("management API listening on http://%s/ (web UI files: %s)", cfg.http_listen,
			www_dir);
	return true;
}

/* at shutdown: requests still waiting are answered 503, the server goes */
void
http_stop(void)
{
	if (http == NULL)
		return;
	while (requests)
		http_error(requests, 503, "service_unavailable", "the gateway is shutting down");
	evhttp_free(http);
	http = NULL;
	if (rate_samples)
		json_object_put(rate_samples);
	rate_samples = NULL;
}
