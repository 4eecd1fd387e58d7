/*-------------------------------------------------------------------------
 *
 * http_list.c
 *	  The listings of the management API: RabbitMQ 3.10's sort, columns and
 *	  paging (rabbit_mgmt_util), in one place for every list.
 *
 * A list of json-c objects is answered by http_reply_list; the queue list,
 * written as text straight from its rows (http_rabbit.c), pages through the
 * same HttpPage functions.  Paging: ?page=N (from 1) of ?page_size=M
 * (1-500, default 100) after ?sort and the ?name= filter (a
 * case-insensitive substring, or with ?use_regex=true a case-insensitive
 * POSIX extended expression), answered as RabbitMQ's paged object; without
 * ?page nothing is paged or filtered.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * RabbitMQ's paging parameters (rabbit_mgmt_util:pagination_params) into
 * pg: page 0 when none is asked for.  false (and the 400 reply, RabbitMQ's)
 * if they are invalid, or the regular expression does not compile.
 */
bool
http_page_begin(HttpReq *r, HttpPage *pg)
{
	const char *ps[2] = {http_qarg(r, "page"), http_qarg(r, "page_size")};
	const char *use_regex = http_qarg(r, "use_regex");
	long long	v[2] = {0, 0};
	char		why[200];

	memset(pg, 0, sizeof(*pg));
	pg->size = 100;
	for (int k = 0; k < 2; k++)
	{
		const char *s = ps[k];
		char	   *end;

		if (s == NULL)
			continue;
		/* Erlang's list_to_integer: an optional sign and digits */
		errno = 0;
		v[k] = strtoll(s, &end, 10);
		if (*s == '\0' || isspace((unsigned char) *s) || *end != '\0' || errno != 0)
		{
			http_error(r, 400, "bad_request", "Pagination parameters are invalid");
			return false;
		}
	}
	if (ps[0] == NULL)
		return true;
	if (!(v[0] > 0 && (ps[1] == NULL || (v[1] > 0 && v[1] <= 500))))
	{
		if (ps[1])
			snprintf(why, sizeof(why), "Invalid pagination parameters: page number %lld, "
					 "page size %lld", v[0], v[1]);
		else
			snprintf(why, sizeof(why), "Invalid pagination parameters: page number %lld, "
					 "page size undefined", v[0]);
		http_error(r, 400, "invalid_pagination_parameters", why);
		return false;
	}
	pg->page = v[0];
	pg->size = ps[1] ? v[1] : 100;
	pg->filter = http_qarg(r, "name");
	if (pg->filter && *pg->filter == '\0')
		pg->filter = NULL;
	if (pg->filter && use_regex && strcmp(use_regex, "true") == 0)
	{
		if (regcomp(&pg->re, pg->filter, REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0)
		{
			http_error(r, 400, "bad_request", "Pagination parameters are invalid");
			return false;
		}
		pg->have_re = true;
	}
	return true;
}

/* does the ?name= filter keep an object of this name (all when not paged) */
bool
http_page_keeps(const HttpPage *pg, const char *name)
{
	if (pg->page == 0 || pg->filter == NULL)
		return true;
	if (name == NULL)
		return false;
	if (pg->have_re)
		return regexec(&pg->re, name, 0, NULL, 0) == 0;
	return strcasestr(name, pg->filter) != NULL;
}

/*
 * The page's objects among the matched ones: from *first (counted from 0)
 * to before *last; all of them when not paged.  false (and RabbitMQ's 400
 * page_out_of_range) for a page past the one after the last.
 */
bool
http_page_range(HttpReq *r, const HttpPage *pg, int matched, int *first, int *last)
{
	long long	page = pg->page,
				size = pg->size;

	*first = page <= 0 ? 0 : page - 1 > INT_MAX / size ? INT_MAX : (int) ((page - 1) * size);
	*last = page <= 0 || *first + size > matched ? matched : (int) (*first + size);
	if (page > 0 && *first > matched)
	{
		char		why[200];

		snprintf(why, sizeof(why), "Page out of range, page: %lld page size: %lld, len: %d",
				 page, size, matched);
		http_error(r, 400, "page_out_of_range", why);
		return false;
	}
	return true;
}

/*
 * The paged object around a page's items written as text: the head before
 * the items' array, the tail after it.  RabbitMQ 3.10 writes its keys in
 * their sorted order.
 */
void
http_page_head(Buf *b, const HttpPage *pg, int matched, int first, int last)
{
	char		head[100];

	if (pg->page == 0)
		return;
	snprintf(head, sizeof(head), "{\"filtered_count\":%d,\"item_count\":%d,\"items\":",
			 matched, last > first ? last - first : 0);
	buf_bytes(b, head, strlen(head));
}

void
http_page_tail(Buf *b, const HttpPage *pg, int matched, int total)
{
	char		tail[200];

	if (pg->page == 0)
		return;
	snprintf(tail, sizeof(tail), ",\"page\":%lld,\"page_count\":%lld,\"page_size\":%lld,"
			 "\"total_count\":%d}",
			 pg->page, (matched + pg->size - 1) / pg->size, pg->size, total);
	buf_bytes(b, tail, strlen(tail));
}

void
http_page_end(HttpPage *pg)
{
	if (pg->have_re)
		regfree(&pg->re);
	pg->have_re = false;
}

/*
 * ?columns=a,b.c: keep only those fields of each object (a dotted name
 * keeps that field of an inner object); ?sort=f&sort_reverse=true
 */
static json_object *
shape_list(HttpReq *r, json_object *list)
{
	const char *cols = http_qarg(r, "columns");

	if (cols && *cols && json_object_is_type(list, json_type_array))
	{
		json_object *out = json_object_new_array();
		size_t		n = json_object_array_length(list);

		for (size_t i = 0; i < n; i++)
		{
			json_object *o = json_object_array_get_idx(list, i);
			json_object *k = json_object_new_object();
			char	   *c = strdup(cols),
					   *save = NULL,
					   *tok;

			for (tok = strtok_r(c, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			{
				char	   *dot = strchr(tok, '.');

				if (dot)
				{
					json_object *inner,
							   *v,
							   *dst;

					*dot = '\0';
					inner = json_get(o, tok);
					if (!json_object_is_type(inner, json_type_object))
						continue;
					/* the object is kept without the members it lacks, as RabbitMQ */
					dst = json_get(k, tok);
					if (dst == NULL)
					{
						dst = json_object_new_object();
						json_object_object_add(k, tok, dst);
					}
					v = json_get(inner, dot + 1);
					if (v != NULL)
						json_object_object_add(dst, dot + 1, json_object_get(v));
				}
				else if (json_get(o, tok))
					json_object_object_add(k, tok, json_object_get(json_get(o, tok)));
			}
			free(c);
			json_object_array_add(out, k);
		}
		json_object_put(list);
		list = out;
	}
	return list;
}

static const char *sort_key;
static bool sort_rev;

static int
cmp_sort(const void *a, const void *b)
{
	json_object *x = json_get(*(json_object *const *) a, sort_key);
	json_object *y = json_get(*(json_object *const *) b, sort_key);
	int			c;

	if (x == NULL || y == NULL)
		c = (x != NULL) - (y != NULL);
	else if (json_object_is_type(x, json_type_string) && json_object_is_type(y, json_type_string))
		c = strcmp(json_object_get_string(x), json_object_get_string(y));
	else
	{
		double		dx = json_object_get_double(x),
					dy = json_object_get_double(y);

		c = dx < dy ? -1 : dx > dy;
	}
	return sort_rev ? -c : c;
}

/*
 * The reply of a listing (list is let go): sorted, paged when pageable (the
 * listings RabbitMQ 3.10 pages: queues, exchanges, vhosts, connections,
 * channels) and ?page is given, columns picked, 200
 */
void
http_reply_list(HttpReq *r, json_object *list, bool pageable)
{
	const char *sort = http_qarg(r, "sort");
	HttpPage	pg;

	if (sort && *sort && json_object_is_type(list, json_type_array))
	{
		const char *rev = http_qarg(r, "sort_reverse");

		sort_key = sort;
		sort_rev = rev && strcmp(rev, "true") == 0;
		json_object_array_sort(list, cmp_sort);
	}
	if (!pageable || !json_object_is_type(list, json_type_array))
	{
		http_reply_json(r, 200, shape_list(r, list));
		return;
	}
	if (!http_page_begin(r, &pg))
	{
		json_object_put(list);
		return;
	}
	if (pg.page > 0)
	{
		size_t		n = json_object_array_length(list);
		json_object *items = json_object_new_array();
		json_object *o = json_object_new_object();
		int			matched = 0,
					first,
					last;

		for (size_t i = 0; i < n; i++)
			matched += http_page_keeps(&pg, json_str(json_object_array_get_idx(list, i), "name"));
		if (!http_page_range(r, &pg, matched, &first, &last))
		{
			json_object_put(items);
			json_object_put(o);
			json_object_put(list);
			http_page_end(&pg);
			return;
		}
		for (size_t i = 0, m = 0; i < n; i++)
		{
			json_object *x = json_object_array_get_idx(list, i);

			if (!http_page_keeps(&pg, json_str(x, "name")) || (int) m++ < first || (int) m > last)
				continue;
			json_object_array_add(items, json_object_get(x));
		}
		json_object_object_add(o, "filtered_count", json_object_new_int(matched));
		json_object_object_add(o, "item_count", json_object_new_int(last > first ? last - first : 0));
		json_object_object_add(o, "items", shape_list(r, items));
		json_object_object_add(o, "page", json_object_new_int64(pg.page));
		json_object_object_add(o, "page_count",
							   json_object_new_int64((matched + pg.size - 1) / pg.size));
		json_object_object_add(o, "page_size", json_object_new_int64(pg.size));
		json_object_object_add(o, "total_count", json_object_new_int((int) n));
		json_object_put(list);
		http_page_end(&pg);
		http_reply_json(r, 200, o);
		return;
	}
	http_page_end(&pg);
	http_reply_json(r, 200, shape_list(r, list));
}

/*
 * A statement's answer callback for a listing that is always empty here
 * (policies, parameters, limits, extensions, ...): run after a statement
 * that checks the login, then []
 */
void
http_reply_empty_list(HttpReq *r, PGresult *res)
{
	if (!http_sql_ok(r, res))
		return;
	http_reply_list(r, json_object_new_array(), false);
}
