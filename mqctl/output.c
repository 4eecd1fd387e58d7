/*-------------------------------------------------------------------------
 *
 * output.c
 *	  Query results as aligned tables (fitted to the terminal's width when
 *	  stdout is one), JSON (json-c) or CSV (as psql --csv).
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>
#include <sys/ioctl.h>

#include "mqctl.h"

/* type OIDs (pg_type.dat) of the values output treats specially */
#define BOOLOID			16
#define BYTEAOID		17
#define INT8OID			20
#define INT2OID			21
#define INT4OID			23
#define OIDOID			26
#define JSONOID			114
#define FLOAT4OID		700
#define FLOAT8OID		701
#define NUMERICOID		1700
#define JSONBOID		3802

/* narrowest a column is cut to when the table is wider than the terminal */
#define MIN_CUT_WIDTH	8

/* The width of the terminal f is, 0 when it is none. */
int
terminal_width(FILE *f)
{
	struct winsize ws;

	if (!isatty(fileno(f)))
		return 0;
	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* Is s[0..len) valid UTF-8 (no overlong forms, no surrogates)? */
bool
valid_utf8(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *) s;
	const unsigned char *end = p + len;

	while (p < end)
	{
		int			n;
		unsigned int cp;

		if (*p < 0x80)
		{
			p++;
			continue;
		}
		else if ((*p & 0xE0) == 0xC0)
			n = 1, cp = *p & 0x1F;
		else if ((*p & 0xF0) == 0xE0)
			n = 2, cp = *p & 0x0F;
		else if ((*p & 0xF8) == 0xF0)
			n = 3, cp = *p & 0x07;
		else
			return false;
		if (end - p <= n)
			return false;
		for (int i = 1; i <= n; i++)
		{
			if ((p[i] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3F);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
			(n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
			(cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		p += n + 1;
	}
	return true;
}

/* Display width of s on a terminal (in the current locale) */
static int
display_width(const char *s)
{
	mbstate_t	st;
	size_t		len = strlen(s);
	int			w = 0;

	memset(&st, 0, sizeof(st));
	while (len > 0)
	{
		wchar_t		wc;
		size_t		n = mbrtowc(&wc, s, len, &st);

		if (n == (size_t) -1 || n == (size_t) -2 || n == 0)
		{
			/* not a character of this locale: one column per byte */
			memset(&st, 0, sizeof(st));
			n = 1;
			w++;
		}
		else
		{
			int			cw = wcwidth(wc);

			w += cw < 0 ? 1 : cw;
		}
		s += n;
		len -= n;
	}
	return w;
}

/*
 * Print s in exactly width columns, cut with "..." (one column, U+2026 in
 * UTF-8 locales) when it is wider; right-aligned if right.  The last column
 * (last) is not padded on the right.
 */
static void
print_cell(const char *s, int width, bool right, bool last)
{
	int			w = display_width(s);

	if (w <= width)
	{
		if (right)
			printf("%*s%s", width - w, "", s);
		else if (last)
			fputs(s, stdout);
		else
			printf("%s%*s", s, width - w, "");
		return;
	}
	else
	{
		mbstate_t	st;
		size_t		len = strlen(s);
		int			used = 0;
		const char *ellipsis = MB_CUR_MAX > 1 ? "\xE2\x80\xA6" : "~";

		memset(&st, 0, sizeof(st));
		while (len > 0)
		{
			wchar_t		wc;
			size_t		n = mbrtowc(&wc, s, len, &st);
			int			cw;

			if (n == (size_t) -1 || n == (size_t) -2 || n == 0)
			{
				memset(&st, 0, sizeof(st));
				n = 1;
				cw = 1;
			}
			else
				cw = wcwidth(wc) < 0 ? 1 : wcwidth(wc);
			if (used + cw > width - 1)
				break;
			fwrite(s, 1, n, stdout);
			used += cw;
			s += n;
			len -= n;
		}
		fputs(ellipsis, stdout);
		printf("%*s", width - 1 - used, "");
	}
}

static bool
is_numeric_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID || t == OIDOID ||
		t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID;
}

/* A copy of a table cell: control characters (newlines, tabs) as spaces */
static char *
cell_text(PGresult *res, int row, int col)
{
	char	   *s = xstrdup(PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col));

	for (char *p = s; *p; p++)
		if ((unsigned char) *p < 0x20 || *p == 0x7F)
			*p = ' ';
	return s;
}

static void
print_table(PGresult *res)
{
	int			nrows = PQntuples(res);
	int			ncols = PQnfields(res);
	int		   *width = xmalloc(sizeof(int) * (ncols + 1));
	char	  **cells = xmalloc(sizeof(char *) * ((size_t) nrows * ncols + 1));
	int			termw = terminal_width(stdout);
	int			total;

	for (int c = 0; c < ncols; c++)
		width[c] = display_width(PQfname(res, c));
	for (int r = 0; r < nrows; r++)
		for (int c = 0; c < ncols; c++)
		{
			char	   *s = cell_text(res, r, c);
			int			w = display_width(s);

			cells[r * ncols + c] = s;
			if (w > width[c])
				width[c] = w;
		}

	/* on a terminal, cut the widest columns until the table fits */
	total = 0;
	for (int c = 0; c < ncols; c++)
		total += width[c] + (c > 0 ? 3 : 0);
	while (termw > 0 && total > termw - 1)
	{
		int			widest = 0;
		int			cut;

		for (int c = 1; c < ncols; c++)
			if (width[c] > width[widest])
				widest = c;
		if (width[widest] <= MIN_CUT_WIDTH)
			break;
		cut = total - (termw - 1);
		if (width[widest] - cut < MIN_CUT_WIDTH)
			cut = width[widest] - MIN_CUT_WIDTH;
		width[widest] -= cut;
		total -= cut;
	}

	for (int c = 0; c < ncols; c++)
	{
		if (c > 0)
			fputs(" | ", stdout);
		print_cell(PQfname(res, c), width[c], false, c == ncols - 1);
	}
	putchar('\n');
	for (int c = 0; c < ncols; c++)
	{
		if (c > 0)
			fputs("-+-", stdout);
		for (int i = 0; i < width[c]; i++)
			putchar('-');
	}
	putchar('\n');
	for (int r = 0; r < nrows; r++)
	{
		for (int c = 0; c < ncols; c++)
		{
			if (c > 0)
				fputs(" | ", stdout);
			print_cell(cells[r * ncols + c], width[c],
					   is_numeric_type(PQftype(res, c)), c == ncols - 1);
			free(cells[r * ncols + c]);
		}
		putchar('\n');
	}
	free(cells);
	free(width);
}

static void
print_csv_field(const char *s)
{
	if (strpbrk(s, ",\"\r\n") == NULL)
	{
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++)
	{
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void
print_csv(PGresult *res)
{
	int			ncols = PQnfields(res);

	for (int c = 0; c < ncols; c++)
	{
		if (c > 0)
			putchar(',');
		print_csv_field(PQfname(res, c));
	}
	putchar('\n');
	for (int r = 0; r < PQntuples(res); r++)
	{
		for (int c = 0; c < ncols; c++)
		{
			if (c > 0)
				putchar(',');
			if (!PQgetisnull(res, r, c))
				print_csv_field(PQgetvalue(res, r, c));
		}
		putchar('\n');
	}
}

/*
 * One value of a result as JSON, by its type: booleans, numbers, json and
 * jsonb as themselves, bytea as a string when it is UTF-8 (NULL when it is
 * not: the caller adds it in base64), everything else as its text.
 */
json_object *
value_to_json(PGresult *res, int row, int col)
{
	const char *v;
	Oid			t = PQftype(res, col);

	if (PQgetisnull(res, row, col))
		return NULL;
	v = PQgetvalue(res, row, col);
	switch (t)
	{
		case BOOLOID:
			return json_object_new_boolean(v[0] == 't');
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
			return json_object_new_int64(strtoll(v, NULL, 10));
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
			if (strcmp(v, "NaN") == 0 || strstr(v, "Infinity") != NULL)
				return json_object_new_string(v);
			return json_object_new_double_s(strtod(v, NULL), v);
		case JSONOID:
		case JSONBOID:
			{
				json_object *j = json_tokener_parse(v);

				return j ? j : json_object_new_string(v);
			}
		default:
			return json_object_new_string(v);
	}
}

/* A row as a JSON object, keys in column order (see value_to_json). */
json_object *
row_to_json(PGresult *res, int row)
{
	json_object *obj = json_object_new_object();

	for (int c = 0; c < PQnfields(res); c++)
		json_object_object_add(obj, PQfname(res, c), value_to_json(res, row, c));
	return obj;
}

/* Print a result as a table or CSV (JSON: see print_query) */
void
print_result(PGresult *res, OutputFormat fmt)
{
	if (fmt == FORMAT_CSV)
		print_csv(res);
	else
		print_table(res);
	fflush(stdout);
}

/*
 * Run sql (text parameters) and print its rows in fmt.  JSON is an array of
 * objects, one per row, whose values the server converts (row_to_json: so
 * arrays, intervals and timestamps read as PostgreSQL writes them in JSON).
 */
void
print_query(const char *sql, int nparams, const char *const *values,
			OutputFormat fmt)
{
	PGresult   *res;

	if (fmt == FORMAT_JSON)
	{
		size_t		len = strlen(sql) + 64;
		char	   *wrapped = xmalloc(len);
		json_object *arr = json_object_new_array();

		snprintf(wrapped, len, "SELECT row_to_json(t)::text FROM (%s) t", sql);
		res = run_query(wrapped, nparams, values);
		for (int r = 0; r < PQntuples(res); r++)
			json_object_array_add(arr, json_tokener_parse(PQgetvalue(res, r, 0)));
		puts(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY |
											JSON_C_TO_STRING_SPACED |
											JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(arr);
		free(wrapped);
		fflush(stdout);
	}
	else
	{
		res = run_query(sql, nparams, values);
		print_result(res, fmt);
	}
	PQclear(res);
}
