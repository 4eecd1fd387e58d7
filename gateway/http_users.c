/*-------------------------------------------------------------------------
 *
 * http_users.c
 *	  RabbitMQ's users, permissions, policies and parameters paths of the
 *	  management API (docs/management.md, "Users and permissions"), mapped
 *	  onto PostgreSQL's login roles and queue_ext's grants.
 *
 * A user is a login role.  Its tags are read from the role: a superuser is
 * "administrator", a member of pg_monitor "monitoring", any other login
 * "management" (every login may use the API).  PUT creates or alters the
 * role and DELETE drops it, each run as the request's own login, so that
 * PostgreSQL decides (CREATEROLE, or a superuser for a superuser); the
 * password is hashed here (PQencryptPasswordConn, the server's
 * password_encryption) and never sent in clear, and the role's hash is
 * never shown.  Identifiers and literals are quoted by libpq
 * (PQescapeIdentifier, PQescapeLiteral) or passed as parameters.
 *
 * A permission is what the role may do with the queues and exchanges that
 * exist: configure, write (publish) and read (consume) as regular
 * expressions naming them, "^(a|b)$".  RabbitMQ's patterns also match
 * names not yet declared, which a grant cannot: a PUT takes only patterns
 * that name objects one by one, and answers any other with 400.
 *
 * queue_ext has no policies, parameters, topic permissions, vhost or user
 * limits: their lists are empty and a PUT is 400, with the reason.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

/* RabbitMQ's answer to a login that is not an administrator */
#define NOT_ADMIN "Not administrator user"

/* may the login manage roles (RabbitMQ's administrator for these paths) */
static const char admin_sql[] =
"SELECT r.rolsuper OR r.rolcreaterole, current_setting('password_encryption') "
"FROM pg_roles r WHERE r.rolname = current_user";

/* the login roles, or the one named $1, with what their tags are read from */
static const char users_sql[] =
"SELECT r.rolname, r.rolsuper, "
"  NOT r.rolsuper AND pg_has_role(r.oid, 'pg_monitor', 'MEMBER') "
"FROM pg_roles r WHERE r.rolcanlogin AND ($1::text IS NULL OR r.rolname = $1) "
"ORDER BY r.rolname";

/*
 * Each login role's permission in this vhost (database), or the one named
 * $1: the names it may configure, write and read, as RabbitMQ's regular
 * expressions ("^(a|b)$", each name's special characters quoted).  A
 * superuser holds everything (".*"); another role what it owns (or has the
 * privileges of the owner of) and what was granted to it or to a role it
 * has the privileges of.  PUBLIC's grants (the amq.* exchanges take every
 * role's publishes) are every role's and no user's permission.  A role
 * that holds nothing else has no permission.  Reads the catalog: a
 * superuser's statement.
 */
#define PERM_RE(cond) \
	"coalesce('^(' || string_agg(DISTINCT regexp_replace(p.name, " \
	"'([.^$*+?()\\[\\]{}|\\\\])', '\\\\\\1', 'g'), '|' ORDER BY regexp_replace(p.name, " \
	"'([.^$*+?()\\[\\]{}|\\\\])', '\\\\\\1', 'g')) FILTER (WHERE " cond ") || ')$', '^$')"

static const char perms_sql[] =
"WITH o AS (SELECT 'q'::\"char\" AS kind, id, name, owner FROM mq.cat_queue "
"  UNION ALL SELECT 'x', id, name, owner FROM mq.cat_exchange WHERE name <> ''), "
"r AS (SELECT oid, rolname, rolsuper FROM pg_roles WHERE rolcanlogin "
"  AND ($1::text IS NULL OR rolname = $1)), "
/* each role with the owners and grantees it has the privileges of: a few pairs */
"m AS (SELECT r.oid AS role, a.via FROM r JOIN (SELECT owner AS via FROM o "
"  UNION SELECT grantee FROM mq.cat_grant WHERE grantee <> 0) a "
"  ON NOT r.rolsuper AND pg_has_role(r.oid, a.via, 'USAGE')), "
"p AS (SELECT m.role, o.kind, o.name, x.priv FROM m JOIN o ON o.owner = m.via "
"  CROSS JOIN unnest(ARRAY['configure', 'publish', 'consume']) x(priv) "
"  UNION SELECT m.role, o.kind, o.name, g.privilege FROM m "
"  JOIN mq.cat_grant g ON g.grantee = m.via "
"  JOIN o ON o.kind = g.object_kind AND o.id = g.object_id) "
"SELECT r.rolname, CASE WHEN r.rolsuper THEN '.*' ELSE " PERM_RE("p.priv = 'configure'") " END, "
"  CASE WHEN r.rolsuper THEN '.*' ELSE " PERM_RE("p.priv = 'publish'") " END, "
"  CASE WHEN r.rolsuper THEN '.*' ELSE " PERM_RE("p.priv = 'consume' AND p.kind = 'q'") " END "
"FROM r LEFT JOIN p ON p.role = r.oid GROUP BY r.rolname, r.rolsuper "
"HAVING r.rolsuper OR count(p.name) > 0 ORDER BY r.rolname";

/*
 * The checks before a permission's PUT or DELETE: is $1 a login role, is
 * it a superuser, and which names of $2 (a JSON array of {"n": name,
 * "q": a queue is needed}) are no queue or exchange.
 */
static const char perm_check_sql[] =
"SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = $1 AND rolcanlogin), "
"  (SELECT string_agg(DISTINCT quote_ident(w.n), ', ') "
"   FROM jsonb_to_recordset($2::jsonb) w(n text, q boolean) "
"   WHERE NOT EXISTS (SELECT 1 FROM mq.cat_queue c WHERE c.name = w.n) "
"   AND (w.q OR NOT EXISTS (SELECT 1 FROM mq.cat_exchange e "
"     WHERE e.name = w.n AND e.name <> ''))), "
"  EXISTS (SELECT 1 FROM mq.cat_grant g JOIN pg_roles r ON r.oid = g.grantee WHERE r.rolname = $1)";

/* every grant of $1 on a queue or exchange of this vhost revoked */
static const char perm_revoke_sql[] =
"SELECT count(mq.revoke(g.privilege, "
"  CASE g.object_kind WHEN 'q' THEN 'queue' ELSE 'exchange' END, "
"  coalesce(q.name, e.name), r.oid::regrole)) "
"FROM mq.cat_grant g JOIN pg_roles r ON r.oid = g.grantee "
"LEFT JOIN mq.cat_queue q ON g.object_kind = 'q' AND q.id = g.object_id "
"LEFT JOIN mq.cat_exchange e ON g.object_kind = 'x' AND e.id = g.object_id "
"WHERE r.rolname = $1 AND coalesce(q.name, e.name) IS NOT NULL";

/*
 * The grants of a permission: $2 configure, $3 write, $4 read, each a JSON
 * array of names; configure and write on the queue and the exchange of
 * that name, read on the queue
 */
static const char perm_grant_sql[] =
"SELECT count(mq.grant(w.priv, w.kind, w.name, "
"  (SELECT oid FROM pg_roles WHERE rolname = $1)::regrole)) FROM ("
"  SELECT 'configure' AS priv, 'queue' AS kind, n AS name "
"    FROM jsonb_array_elements_text($2::jsonb) n "
"    WHERE EXISTS (SELECT 1 FROM mq.cat_queue c WHERE c.name = n) "
"  UNION SELECT 'configure', 'exchange', n FROM jsonb_array_elements_text($2::jsonb) n "
"    WHERE EXISTS (SELECT 1 FROM mq.cat_exchange e WHERE e.name = n) "
"  UNION SELECT 'publish', 'queue', n FROM jsonb_array_elements_text($3::jsonb) n "
"    WHERE EXISTS (SELECT 1 FROM mq.cat_queue c WHERE c.name = n) "
"  UNION SELECT 'publish', 'exchange', n FROM jsonb_array_elements_text($3::jsonb) n "
"    WHERE EXISTS (SELECT 1 FROM mq.cat_exchange e WHERE e.name = n) "
"  UNION SELECT 'consume', 'queue', n FROM jsonb_array_elements_text($4::jsonb) n) w";

/* a permission's pattern that no grant can be */
#define PATTERN_REFUSED \
	"%s pattern \"%.200s\" cannot be a grant: it matches names not declared yet, and " \
	"queue_ext's privileges are granted on each queue and exchange; name them, " \
	"\"^(a|b)$\" (\"^$\" for none), or make the role a superuser for \".*\""

static void users_step(HttpReq *r, PGresult *res);
static void user_put_step(HttpReq *r, PGresult *res);
static void user_delete_step(HttpReq *r, PGresult *res);
static void perm_put_step(HttpReq *r, PGresult *res);

/*
 * A failed statement of these paths: a refusal is RabbitMQ's answer to a
 * login that is not an administrator (PostgreSQL's reason in the log)
 */
static bool
users_sql_ok(HttpReq *r, PGresult *res)
{
	if (res_ok(res))
		return true;
	if (res && strcmp(res_state(res), "42501") == 0)
	{
		loginfo("http: %s by \"%s\" refused: %s", evhttp_request_get_uri(r->ev), r->user,
				res_message(res));
		http_error(r, 401, "not_authorised", NOT_ADMIN);
		return false;
	}
	if (res && (strncmp(res_state(res), "2B", 2) == 0 || strncmp(res_state(res), "55", 2) == 0))
		http_bad_request(r, res_message(res));
	else
		http_sql_error(r, res);
	return false;
}

/* RabbitMQ's user object of users_sql's row i */
static json_object *
user_json(PGresult *res, int i)
{
	json_object *o = json_object_new_object();
	json_object *tags = json_object_new_array();

	json_object_object_add(o, "name", json_object_new_string(PQgetvalue(res, i, 0)));
	/* never the role's hash: RabbitMQ's value for a user without one */
	json_object_object_add(o, "password_hash", json_object_new_string(""));
	json_object_object_add(o, "hashing_algorithm",
						   json_object_new_string("rabbit_password_hashing_sha256"));
	if (PQgetvalue(res, i, 1)[0] == 't')
		json_object_array_add(tags, json_object_new_string("administrator"));
	else if (PQgetvalue(res, i, 2)[0] == 't')
		json_object_array_add(tags, json_object_new_string("monitoring"));
	else
		json_object_array_add(tags, json_object_new_string("management"));
	json_object_object_add(o, "tags", tags);
	json_object_object_add(o, "limits", json_object_new_object());
	return o;
}

/* /api/whoami: the login's name and its tags, as /api/users gives them */
static void
whoami_done(HttpReq *r, PGresult *res)
{
	json_object *u,
			   *o;

	if (!http_sql_ok(r, res))
		return;
	if (PQntuples(res) != 1)
	{
		http_error(r, 401, "not_authorized", "Login failed");
		return;
	}
	u = user_json(res, 0);
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(r->user));
	json_object_object_add(o, "tags", json_object_get(json_get(u, "tags")));
	json_object_put(u);
	http_reply_json(r, 200, o);
}

void
http_whoami(HttpReq *r)
{
	const char *vals[1] = {NULL};

	/* users_sql of the session's role (guest's is --guest-role's) */
	http_sql(r, "SELECT r.rolname, r.rolsuper, "
			 "NOT r.rolsuper AND pg_has_role(r.oid, 'pg_monitor', 'MEMBER') "
			 "FROM pg_roles r WHERE r.rolname = current_user", 0, vals, whoami_done);
}

/* ---------------------------------------------------------------- users */

/*
 * The tags of a PUT ("a,b" as rabbitmqadmin sends them, or a list) as the
 * role's attributes: *super for administrator, *monitor for monitoring;
 * management (and none) are every login's.  false (and a 400) for a tag
 * queue_ext cannot keep.
 */
static bool
put_tags(HttpReq *r, json_object *tags, bool *super, bool *monitor)
{
	json_object *list = NULL;
	char		why[400];
	bool		ok = true;

	*super = *monitor = false;
	if (json_object_is_type(tags, json_type_array))
		list = json_object_get(tags);
	else if (json_object_is_type(tags, json_type_string))
	{
		char	   *s = strdup(json_object_get_string(tags)),
				   *save = NULL;

		list = json_object_new_array();
		for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save))
		{
			char	   *e;

			while (*t == ' ')
				t++;
			for (e = t + strlen(t); e > t && e[-1] == ' '; e--)
				;
			json_object_array_add(list, json_object_new_string_len(t, (int) (e - t)));
		}
		free(s);
	}
	else
	{
		http_bad_request(r, "tags must be a string (\"a,b\") or a list");
		return false;
	}
	for (size_t i = 0; ok && i < json_object_array_length(list); i++)
	{
		json_object *t = json_object_array_get_idx(list, i);
		const char *s = json_object_get_string(t);

		if (!json_object_is_type(t, json_type_string))
		{
			http_bad_request(r, "tags must be strings");
			ok = false;
		}
		else if (strcmp(s, "administrator") == 0)
			*super = true;
		else if (strcmp(s, "monitoring") == 0)
			*monitor = true;
		else if (strcmp(s, "management") != 0 && s[0] != '\0')
		{
			snprintf(why, sizeof(why),
					 "tag \"%.100s\" is not kept: a user is a PostgreSQL login role, whose tags "
					 "are administrator (SUPERUSER), monitoring (a member of pg_monitor) and "
					 "management (every login)", s);
			http_bad_request(r, why);
			ok = false;
		}
	}
	json_object_put(list);
	return ok;
}

/* the statement's text with s quoted by libpq as an identifier or literal */
static char *
quoted(HttpReq *r, const char *s, bool ident)
{
	PGconn	   *pg = r->pg->pg;

	return ident ? PQescapeIdentifier(pg, s, strlen(s)) : PQescapeLiteral(pg, s, strlen(s));
}

/* run text (built here, freed) in the request's session, then then */
static void
run_built(HttpReq *r, char *text, http_result_cb then)
{
	if (text == NULL)
	{
		http_error(r, 500, "internal_server_error", "could not build the statement");
		return;
	}
	http_sql(r, text, 0, NULL, then);
	free(text);
}

/*
 * PUT /api/users/{name}: step 1 the login may manage roles (and the
 * server's password_encryption), 2 the role as it is, 3 BEGIN, 4 CREATE
 * or ALTER ROLE, 5 pg_monitor granted or revoked, 6 COMMIT: 201 created,
 * 204 altered.  A failed step ends the session, which rolls back.
 */
static void
user_put_step(HttpReq *r, PGresult *res)
{
	const char *name = r->seg[1];
	json_object *pw = json_get(r->body, "password");
	bool		super = json_object_get_boolean(json_get(r->acc, "tag_super"));
	bool		monitor = json_object_get_boolean(json_get(r->acc, "tag_monitor"));
	char		sql[600];

	if (!users_sql_ok(r, res))
		return;
	r->step++;
	if (r->step == 1)
	{
		const char *vals[1] = {name};

		if (PQgetvalue(res, 0, 0)[0] != 't')
		{
			http_error(r, 401, "not_authorised", NOT_ADMIN);
			return;
		}
		/* the password's hash: SCRAM, or what the server is set to */
		snprintf(r->scratch, sizeof(r->scratch), "%s", PQgetvalue(res, 0, 1));
		http_sql(r, "SELECT r.rolcanlogin, r.rolsuper, pg_has_role(r.oid, 'pg_monitor', 'MEMBER') "
				 "FROM pg_roles r WHERE r.rolname = $1", 1, vals, user_put_step);
	}
	else if (r->step == 2)
	{
		bool		exists = PQntuples(res) == 1;

		if (exists && PQgetvalue(res, 0, 0)[0] != 't')
		{
			http_bad_request(r, "the role is not a login role (a group): queue_ext's users "
							 "are login roles, and it does not make a group one");
			return;
		}
		/* what the role is now, for steps 4 and 6 */
		json_object_object_add(r->acc, "exists", json_object_new_boolean(exists));
		json_object_object_add(r->acc, "super",
							   json_object_new_boolean(exists && PQgetvalue(res, 0, 1)[0] == 't'));
		json_object_object_add(r->acc, "monitor",
							   json_object_new_boolean(exists && PQgetvalue(res, 0, 2)[0] == 't'));
		http_sql(r, "BEGIN", 0, NULL, user_put_step);
	}
	else if (r->step == 3)
	{
		bool		exists = json_object_get_boolean(json_get(r->acc, "exists"));
		bool		was_super = json_object_get_boolean(json_get(r->acc, "super"));
		char	   *id = quoted(r, name, true);
		char	   *lit = NULL;
		char	   *text;
		size_t		len;

		if (id == NULL)
		{
			http_bad_request(r, PQerrorMessage(r->pg->pg));
			return;
		}
		if (pw && json_object_is_type(pw, json_type_string) && json_object_get_string(pw)[0])
		{
			char	   *hash = PQencryptPasswordConn(r->pg->pg, json_object_get_string(pw), name,
													 r->scratch);

			if (hash == NULL)
			{
				PQfreemem(id);
				http_bad_request(r, PQerrorMessage(r->pg->pg));
				return;
			}
			lit = quoted(r, hash, false);
			PQfreemem(hash);
		}
		len = strlen(id) + (lit ? strlen(lit) : 0) + 100;
		text = malloc(len);
		/* SUPERUSER only when it changes: a CREATEROLE login may alter others */
		snprintf(text, len, "%s ROLE %s%s%s PASSWORD %s",
				 exists ? "ALTER" : "CREATE", id, exists ? "" : " LOGIN",
				 super && !was_super ? " SUPERUSER" : !super && was_super ? " NOSUPERUSER" : "",
				 lit ? lit : "NULL");
		PQfreemem(id);
		if (lit)
			PQfreemem(lit);
		run_built(r, text, user_put_step);
	}
	else if (r->step == 4)
	{
		/* a superuser is a member of every role: pg_monitor is not its own matter */
		bool		was_monitor = json_object_get_boolean(json_get(r->acc, "monitor")) &&
			!json_object_get_boolean(json_get(r->acc, "super"));
		char	   *id;

		if (super || monitor == was_monitor)
		{
			http_sql(r, "SELECT 1", 0, NULL, user_put_step);
			return;
		}
		id = quoted(r, name, true);
		if (id == NULL)
		{
			http_bad_request(r, PQerrorMessage(r->pg->pg));
			return;
		}
		snprintf(sql, sizeof(sql), monitor ? "GRANT pg_monitor TO %s" : "REVOKE pg_monitor FROM %s",
				 id);
		PQfreemem(id);
		http_sql(r, sql, 0, NULL, user_put_step);
	}
	else if (r->step == 5)
		http_sql(r, "COMMIT", 0, NULL, user_put_step);
	else
	{
		http_forget_login(r, name);
		http_reply_empty(r, json_object_get_boolean(json_get(r->acc, "exists")) ? 204 : 201);
	}
}

static void
user_put(HttpReq *r)
{
	json_object *pw = json_get(r->body, "password");
	json_object *tags = json_get(r->body, "tags");
	bool		super,
				monitor;

	if (r->body == NULL || !json_object_is_type(r->body, json_type_object))
	{
		http_bad_request(r, "not_json");
		return;
	}
	if (json_get(r->body, "password_hash") &&
		json_object_get_string(json_get(r->body, "password_hash"))[0] != '\0')
	{
		http_bad_request(r, "password_hash is not taken: RabbitMQ's hashes are not "
						 "PostgreSQL's; give the password");
		return;
	}
	if (pw && !json_object_is_type(pw, json_type_string))
	{
		http_bad_request(r, "password must be a string");
		return;
	}
	if (tags == NULL)
	{
		http_bad_request(r, "tags_not_present");
		return;
	}
	if (!put_tags(r, tags, &super, &monitor))
		return;
	r->acc = json_object_new_object();
	json_object_object_add(r->acc, "tag_super", json_object_new_boolean(super));
	json_object_object_add(r->acc, "tag_monitor", json_object_new_boolean(monitor));
	r->step = 0;
	http_sql(r, admin_sql, 0, NULL, user_put_step);
}

/*
 * DELETE /api/users/{name}: step 1 the login may manage roles, 2 the role
 * is a login role (else 404), 3 BEGIN, 4 its grants on this vhost's queues
 * and exchanges revoked (RabbitMQ deletes a user's permissions with it; a
 * grant left to a dropped role's OID would be a new role's that got the
 * same OID), 5 DROP ROLE, 6 COMMIT: 204.  The grants are read from the
 * catalog, which takes a superuser.  A role that owns objects or holds
 * other privileges is not dropped (400 with PostgreSQL's reason).
 */
static void
user_delete_step(HttpReq *r, PGresult *res)
{
	const char *vals[1] = {r->seg[1]};

	if (!users_sql_ok(r, res))
		return;
	r->step++;
	if (r->step == 1)
	{
		if (PQgetvalue(res, 0, 0)[0] != 't')
			http_error(r, 401, "not_authorised", NOT_ADMIN);
		else
			http_sql(r, "SELECT 1 FROM pg_roles WHERE rolname = $1 AND rolcanlogin", 1, vals,
					 user_delete_step);
	}
	else if (r->step == 2)
	{
		if (PQntuples(res) == 0)
			http_not_found(r);
		else
			http_sql(r, "BEGIN", 0, NULL, user_delete_step);
	}
	else if (r->step == 3)
		http_sql(r, perm_revoke_sql, 1, vals, user_delete_step);
	else if (r->step == 4)
	{
		char	   *id;
		char		sql[600];

		if ((id = quoted(r, r->seg[1], true)) == NULL)
		{
			http_bad_request(r, PQerrorMessage(r->pg->pg));
			return;
		}
		snprintf(sql, sizeof(sql), "DROP ROLE %s", id);
		PQfreemem(id);
		http_sql(r, sql, 0, NULL, user_delete_step);
	}
	else if (r->step == 5)
		http_sql(r, "COMMIT", 0, NULL, user_delete_step);
	else
	{
		http_forget_login(r, r->seg[1]);
		http_reply_empty(r, 204);
	}
}

/*
 * GET of users: step 1 the login may manage roles (else 401, as RabbitMQ
 * answers a user that is not an administrator), then the roles; for
 * without-permissions, the permissions of vhost / first (perms_sql), whose
 * users are left out
 */
static void
users_step(HttpReq *r, PGresult *res)
{
	bool		without = r->nseg == 2 && strcmp(r->seg[1], "without-permissions") == 0;
	const char *vals[1] = {r->nseg == 2 && !without ? r->seg[1] : NULL};
	json_object *a;
	int			n;

	if (!users_sql_ok(r, res))
		return;
	r->step++;
	if (r->step == 1)
	{
		if (PQgetvalue(res, 0, 0)[0] != 't')
			http_error(r, 401, "not_authorised", NOT_ADMIN);
		else
			http_sql(r, without ? perms_sql : users_sql, 1, vals, users_step);
		return;
	}
	if (r->step == 2 && without)
	{
		r->acc = json_object_new_object();
		for (int i = 0; i < PQntuples(res); i++)
			json_object_object_add(r->acc, PQgetvalue(res, i, 0), NULL);
		http_sql(r, users_sql, 1, vals, users_step);
		return;
	}
	n = PQntuples(res);
	if (r->nseg == 2 && !without)
	{
		if (n == 0)
			http_not_found(r);
		else
			http_reply_json(r, 200, user_json(res, 0));
		return;
	}
	a = json_object_new_array();
	for (int i = 0; i < n; i++)
		if (r->acc == NULL || !json_object_object_get_ex(r->acc, PQgetvalue(res, i, 0), NULL))
			json_object_array_add(a, user_json(res, i));
	http_reply_list(r, a, false);
}

/* ---------------------------------------------------------------- permissions */

/* RabbitMQ's permission object of perms_sql's row i */
static json_object *
perm_json(HttpReq *r, PGresult *res, int i)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "user", json_object_new_string(PQgetvalue(res, i, 0)));
	json_object_object_add(o, "vhost", json_object_new_string(http_vhost_name(r)));
	json_object_object_add(o, "configure", json_object_new_string(PQgetvalue(res, i, 1)));
	json_object_object_add(o, "write", json_object_new_string(PQgetvalue(res, i, 2)));
	json_object_object_add(o, "read", json_object_new_string(PQgetvalue(res, i, 3)));
	return o;
}

/* the permissions listed (or one: 404 if the user has none) */
static void
perms_listed(HttpReq *r, PGresult *res)
{
	json_object *a;

	if (!users_sql_ok(r, res))
		return;
	if (strcmp(r->seg[0], "permissions") == 0 && r->nseg == 3)
	{
		if (PQntuples(res) == 0)
			http_not_found(r);
		else
			http_reply_json(r, 200, perm_json(r, res, 0));
		return;
	}
	a = json_object_new_array();
	for (int i = 0; i < PQntuples(res); i++)
		json_object_array_add(a, perm_json(r, res, i));
	http_reply_list(r, a, false);
}

/*
 * The names a permission's pattern names, into names (a JSON array): "" and
 * "^$" none, "^name$" or "^(a|b|...)$" those, each a name of literal
 * characters (a backslash quotes the next one, as perms_sql writes them).
 * false for any other pattern: it would match names not yet declared,
 * which no grant can give.  ".*" is *all.
 */
static bool
pattern_names(const char *p, json_object *names, bool *all)
{
	size_t		len = strlen(p);
	bool		group;
	char	   *name;
	size_t		n = 0;

	*all = strcmp(p, ".*") == 0 || strcmp(p, "^.*$") == 0;
	if (*all || len == 0 || strcmp(p, "^$") == 0)
		return true;
	if (len < 3 || p[0] != '^' || p[len - 1] != '$' || p[len - 2] == '\\')
		return false;
	p++;
	len -= 2;
	group = p[0] == '(' && p[len - 1] == ')' && p[len - 2] != '\\';
	if (group)
	{
		p++;
		len -= 2;
	}
	name = malloc(len + 1);
	for (size_t i = 0; i <= len; i++)
	{
		char		c = i < len ? p[i] : '|';

		if (c == '\\' && i + 1 < len)
			name[n++] = p[++i];
		else if (c == '|' && (group || i == len))
		{
			if (n == 0)
			{
				free(name);
				return false;
			}
			json_object_array_add(names, json_object_new_string_len(name, (int) n));
			n = 0;
		}
		else if (strchr(".^$*+?()[]{}|\\", c))
		{
			free(name);
			return false;
		}
		else
			name[n++] = c;
	}
	free(name);
	return true;
}

/*
 * PUT or DELETE /api/permissions/{vhost}/{user}: step 1 the checks
 * (perm_check_sql: a login role, not a superuser, the names exist), 2
 * BEGIN, 3 every grant of the role revoked, 4 the permission's granted
 * (PUT), 5 COMMIT: 201 if the role held no grant before, else 204.  Run as
 * the login, which must own the objects or be a superuser (mq.grant's
 * rule); the checks read the catalog, which takes a superuser.
 */
static void
perm_put_step(HttpReq *r, PGresult *res)
{
	bool		put = r->method == EVHTTP_REQ_PUT;
	const char *vals[4];

	if (!users_sql_ok(r, res))
		return;
	r->step++;
	vals[0] = r->seg[2];
	if (r->step == 1)
	{
		char		why[700];

		if (PQgetisnull(res, 0, 0))
		{
			if (put)
				http_bad_request(r, "vhost_or_user_not_found");
			else
				http_not_found(r);
			return;
		}
		if (PQgetvalue(res, 0, 0)[0] == 't')
		{
			/* a superuser holds all: only ".*" everywhere is true of it */
			if (!put || json_object_get_int(json_get(r->acc, "nall")) != 3)
			{
				http_bad_request(r, "the user is a superuser (tag administrator): it holds "
								 "every privilege, which no permission changes");
				return;
			}
			http_reply_empty(r, 204);
			return;
		}
		if (json_object_get_int(json_get(r->acc, "nall")) > 0)
		{
			const char *key = json_object_get_string(json_get(r->acc, "all_key"));

			snprintf(why, sizeof(why), PATTERN_REFUSED, key,
					 json_object_get_string(json_get(r->body, key)));
			http_bad_request(r, why);
			return;
		}
		if (!PQgetisnull(res, 0, 1))
		{
			snprintf(why, sizeof(why), "not in vhost \"%s\": %.500s (a queue for read, a queue "
					 "or an exchange for configure and write); a permission is a grant on what "
					 "exists: declare it first", http_vhost_name(r), PQgetvalue(res, 0, 1));
			http_bad_request(r, why);
			return;
		}
		json_object_object_add(r->acc, "had",
							   json_object_new_boolean(PQgetvalue(res, 0, 2)[0] == 't'));
		http_sql(r, "BEGIN", 0, NULL, perm_put_step);
	}
	else if (r->step == 2)
		http_sql(r, perm_revoke_sql, 1, vals, perm_put_step);
	else if (r->step == 3 && put)
	{
		const char *k[3] = {"configure", "write", "read"};

		for (int i = 0; i < 3; i++)
			vals[i + 1] = json_object_to_json_string(json_get(json_get(r->acc, "names"), k[i]));
		http_sql(r, perm_grant_sql, 4, vals, perm_put_step);
	}
	else if (r->step == (put ? 4 : 3))
		http_sql(r, "COMMIT", 0, NULL, perm_put_step);
	else
		http_reply_empty(r, put && !json_object_get_boolean(json_get(r->acc, "had")) ? 201 : 204);
}

static void
perm_change(HttpReq *r)
{
	const char *keys[3] = {"configure", "write", "read"};
	json_object *names = json_object_new_object();
	json_object *check = json_object_new_array();
	int			nall = 0;
	const char *vals[2];

	r->acc = json_object_new_object();
	json_object_object_add(r->acc, "names", names);
	for (int i = 0; r->method == EVHTTP_REQ_PUT && i < 3; i++)
	{
		json_object *v = json_get(r->body, keys[i]);
		json_object *list = json_object_new_array();
		bool		all;
		char		why[600];

		json_object_object_add(names, keys[i], list);
		if (v == NULL || !json_object_is_type(v, json_type_string))
		{
			json_object_put(check);
			snprintf(why, sizeof(why), "[{key_missing,%s}]", keys[i]);
			http_bad_request(r, why);
			return;
		}
		if (!pattern_names(json_object_get_string(v), list, &all))
		{
			json_object_put(check);
			snprintf(why, sizeof(why), PATTERN_REFUSED, keys[i], json_object_get_string(v));
			http_bad_request(r, why);
			return;
		}
		if (all)
		{
			/* true of a superuser alone: step 1 tells */
			if (nall++ == 0)
				json_object_object_add(r->acc, "all_key", json_object_new_string(keys[i]));
		}
		for (size_t k = 0; k < json_object_array_length(list); k++)
		{
			json_object *c = json_object_new_object();

			json_object_object_add(c, "n", json_object_get(json_object_array_get_idx(list, k)));
			json_object_object_add(c, "q", json_object_new_boolean(i == 2));
			json_object_array_add(check, c);
		}
	}
	json_object_object_add(r->acc, "nall", json_object_new_int(nall));
	vals[0] = r->seg[2];
	vals[1] = json_object_to_json_string(check);
	r->step = 0;
	http_sql(r, perm_check_sql, 2, vals, perm_put_step);
	json_object_put(check);
}

/* ---------------------------------------------------------------- routing */

/* for paths that answer without a statement: the login checked first */
static void
not_found_after_login(HttpReq *r, PGresult *res)
{
	if (!http_sql_ok(r, res))
		return;
	http_not_found(r);
}

static bool
is_get(HttpReq *r)
{
	return r->method == EVHTTP_REQ_GET || r->method == EVHTTP_REQ_HEAD;
}

/*
 * What queue_ext has not (policies, parameters, topic permissions): an
 * empty list, 404 for one, 400 with why for a change
 */
static void
none_kept(HttpReq *r, int list_segs, const char *why)
{
	if (!is_get(r))
		http_bad_request(r, why);
	else if (r->nseg <= list_segs)
		http_sql(r, "SELECT 1", 0, NULL, http_reply_empty_list);
	else
		http_sql(r, "SELECT 1", 0, NULL, not_found_after_login);
}

/* the vhost of segment i: "/" is the default database ("") */
static void
vhost_of(HttpReq *r, int i)
{
	snprintf(r->vhost, sizeof(r->vhost), "%s", strcmp(r->seg[i], "/") == 0 ? "" : r->seg[i]);
}

#define NO_TOPIC_PERMISSIONS \
	"queue_ext has no topic permissions: publishing to an exchange is one privilege " \
	"(mq.grant publish), whatever the routing key"

/*
 * Route /api/users..., /api/permissions..., /api/vhosts/{vhost}/permissions,
 * /api/policies..., /api/parameters..., topic permissions, vhost and user
 * limits: true if the path
 * is one of them (and it is answered).  Paths without a vhost are vhost /.
 */
bool
http_users(HttpReq *r)
{
	const char *s0 = r->nseg ? r->seg[0] : "";

	if (strcmp(s0, "users") == 0 && r->nseg <= 3)
	{
		r->step = 0;
		if (r->nseg == 3 && strcmp(r->seg[2], "permissions") == 0)
		{
			const char *vals[1] = {r->seg[1]};

			if (!is_get(r))
				http_method_not_allowed(r, "HEAD, GET, OPTIONS");
			else
				http_sql(r, perms_sql, 1, vals, perms_listed);
		}
		else if (r->nseg == 3 && strcmp(r->seg[2], "topic-permissions") == 0)
			none_kept(r, 3, NO_TOPIC_PERMISSIONS);
		else if (r->nseg == 3)
			http_not_found(r);
		else if (is_get(r))
			http_sql(r, admin_sql, 0, NULL, users_step);
		else if (r->nseg == 1 || strcmp(r->seg[1], "without-permissions") == 0)
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else if (r->method == EVHTTP_REQ_PUT)
			user_put(r);
		else if (r->method == EVHTTP_REQ_DELETE)
			http_sql(r, admin_sql, 0, NULL, user_delete_step);
		else
			http_method_not_allowed(r, "HEAD, GET, PUT, DELETE, OPTIONS");
		return true;
	}
	if (strcmp(s0, "permissions") == 0 && (r->nseg == 1 || r->nseg == 3))
	{
		const char *vals[1] = {r->nseg == 3 ? r->seg[2] : NULL};

		if (r->nseg == 3)
			vhost_of(r, 1);
		if (is_get(r))
			http_sql(r, perms_sql, 1, vals, perms_listed);
		else if (r->nseg == 3 && (r->method == EVHTTP_REQ_PUT || r->method == EVHTTP_REQ_DELETE))
			perm_change(r);
		else
			http_method_not_allowed(r, r->nseg == 3 ? "HEAD, GET, PUT, DELETE, OPTIONS" :
									"HEAD, GET, OPTIONS");
		return true;
	}
	if (strcmp(s0, "vhosts") == 0 && r->nseg == 3 &&
		(strcmp(r->seg[2], "permissions") == 0 || strcmp(r->seg[2], "topic-permissions") == 0))
	{
		const char *vals[1] = {NULL};

		vhost_of(r, 1);
		if (!is_get(r))
			http_method_not_allowed(r, "HEAD, GET, OPTIONS");
		else if (strcmp(r->seg[2], "permissions") == 0)
			http_sql(r, perms_sql, 1, vals, perms_listed);
		else
			none_kept(r, 3, NO_TOPIC_PERMISSIONS);
		return true;
	}
	if (strcmp(s0, "topic-permissions") == 0 && r->nseg <= 4)
	{
		if (r->nseg >= 2)
			vhost_of(r, 1);
		none_kept(r, 1, NO_TOPIC_PERMISSIONS);
		return true;
	}
	if ((strcmp(s0, "policies") == 0 || strcmp(s0, "operator-policies") == 0) && r->nseg <= 3)
	{
		if (r->nseg >= 2)
			vhost_of(r, 1);
		none_kept(r, 2, "queue_ext has no policies: a queue's arguments (x-message-ttl, "
				  "x-dead-letter-exchange, ...) are given when it is declared; "
				  "mq.definitions_import applies a policy's to the queues that exist");
		return true;
	}
	if (strcmp(s0, "parameters") == 0 && r->nseg <= 4)
	{
		if (r->nseg >= 3)
			vhost_of(r, 2);
		none_kept(r, 3, "queue_ext has no runtime parameters (shovels, federation)");
		return true;
	}
	if (strcmp(s0, "vhost-limits") == 0 && r->nseg <= 3)
	{
		if (r->nseg >= 2)
			vhost_of(r, 1);
		none_kept(r, 2, "queue_ext has no vhost limits (max-queues, max-connections): a "
				  "database's CONNECTION LIMIT and max_connections bound its sessions");
		return true;
	}
	if (strcmp(s0, "user-limits") == 0 && r->nseg <= 3)
	{
		none_kept(r, 2, "queue_ext has no user limits: a role's CONNECTION LIMIT "
				  "(ALTER ROLE) bounds its PostgreSQL sessions");
		return true;
	}
	if (strcmp(s0, "global-parameters") == 0 && r->nseg <= 2)
	{
		none_kept(r, 1, "queue_ext has no global parameters: its settings are PostgreSQL's "
				  "(mq.*) and mq-amqp's options");
		return true;
	}
	return false;
}
