/*-------------------------------------------------------------------------
 *
 * codec.c
 *	  AMQP 0-9-1 encoding and decoding for mq-amqp (amqp.h): frame fields,
 *	  field tables as JSON, and lookups in that JSON.
 *
 * Field tables (a message's headers, declare arguments) are held as JSON,
 * the form queue_ext stores headers in.  JSON has strings, numbers,
 * booleans, null, objects and arrays; AMQP has more types.  The common ones
 * map onto JSON natively: S (UTF-8 text), I (32-bit integer), l (64-bit
 * integer outside 32 bits), d (double), t, V, F, A.  Every other value --
 * byte arrays, decimals, timestamps, small and unsigned integers, floats, a
 * 64-bit integer that would fit 32 bits, text that is not UTF-8 -- is kept
 * as an object {"$amqp": "<type>", ...} and decoded back on delivery, so
 * that headers come back exactly as sent (docs/amqp.md).
 *
 * It knows nothing of PostgreSQL, connections or channels: bytes in,
 * bytes or JSON out.
 *
 *-------------------------------------------------------------------------
 */
#include "amqp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Make room for more bytes in b (doubling); out of memory exits. */
void
buf_reserve(Buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	while (b->len + more > b->cap)
		b->cap = b->cap ? b->cap * 2 : 256;
	b->data = realloc(b->data, b->cap);
	if (b->data == NULL)
	{
		fprintf(stderr, "mq-amqp: out of memory\n");
		exit(1);
	}
}

/* Free b's data; b is empty and can be used again. */
void
buf_free(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void
buf_u8(Buf *b, uint8_t v)
{
	buf_reserve(b, 1);
	b->data[b->len++] = v;
}

void
buf_u16(Buf *b, uint16_t v)
{
	buf_reserve(b, 2);
	b->data[b->len++] = v >> 8;
	b->data[b->len++] = v & 0xff;
}

void
buf_u32(Buf *b, uint32_t v)
{
	buf_u16(b, v >> 16);
	buf_u16(b, v & 0xffff);
}

void
buf_u64(Buf *b, uint64_t v)
{
	buf_u32(b, v >> 32);
	buf_u32(b, v & 0xffffffff);
}

/*
 * Overwrite 4 bytes at offset at with v, big-endian: a length known only
 * once what it counts is written.
 */
void
buf_set_u32(Buf *b, size_t at, uint32_t v)
{
	b->data[at] = v >> 24;
	b->data[at + 1] = (v >> 16) & 0xff;
	b->data[at + 2] = (v >> 8) & 0xff;
	b->data[at + 3] = v & 0xff;
}

void
buf_bytes(Buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	buf_reserve(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/*
 * Append an AMQP short string (one length byte, at most 255 bytes; a
 * longer s is cut).
 */
void
buf_shortstr(Buf *b, const char *s)
{
	size_t		n = s ? strlen(s) : 0;

	if (n > 255)
		n = 255;
	buf_u8(b, n);
	buf_bytes(b, s, n);
}

/* Append an AMQP long string (four length bytes). */
void
buf_longstr(Buf *b, const void *p, size_t n)
{
	buf_u32(b, n);
	buf_bytes(b, p, n);
}

uint16_t
be16(const uint8_t *p)
{
	return (uint16_t) ((p[0] << 8) | p[1]);
}

uint32_t
be32(const uint8_t *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
		((uint32_t) p[2] << 8) | p[3];
}

uint64_t
be64(const uint8_t *p)
{
	return ((uint64_t) be32(p) << 32) | be32(p + 4);
}

/* ---- base64, for byte arrays and non-UTF-8 text in JSON ---- */

static const char b64chars[] =
"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/*
 * s in base64, malloc'd: how byte arrays are kept in a field table's JSON.
 */
static char *
b64_encode(const uint8_t *p, size_t n)
{
	char	   *out = malloc(4 * ((n + 2) / 3) + 1);
	size_t		i,
				o = 0;

	for (i = 0; i < n; i += 3)
	{
		uint32_t	v = (uint32_t) p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t) p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = b64chars[(v >> 18) & 63];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64chars[v & 63] : '=';
	}
	out[o] = '\0';
	return out;
}

/* The value of one base64 digit, or -1. */
static int
b64_value(char c)
{
	const char *p = c ? strchr(b64chars, c) : NULL;

	return p ? (int) (p - b64chars) : -1;
}

/* decode into b; false on a malformed string */
static bool
b64_decode(Buf *b, const char *s)
{
	uint32_t	v = 0;
	int			nbits = 0;

	for (; *s && *s != '='; s++)
	{
		int			d = b64_value(*s);

		if (d < 0)
			return false;
		v = (v << 6) | d;
		nbits += 6;
		if (nbits >= 8)
		{
			nbits -= 8;
			buf_u8(b, (v >> nbits) & 0xff);
		}
	}
	return true;
}

/*
 * Whether the n bytes at p are well-formed UTF-8 (no overlong forms, no
 * surrogates): an S field that is not is kept as bytes.
 */
static bool
utf8_valid(const uint8_t *p, size_t n)
{
	size_t		i = 0;

	while (i < n)
	{
		uint8_t		c = p[i];
		int			k;
		size_t		j;

		if (c == 0)
			return false;
		if (c < 0x80)
		{
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0 && c >= 0xc2)
			k = 1;
		else if ((c & 0xf0) == 0xe0)
			k = 2;
		else if ((c & 0xf8) == 0xf0 && c <= 0xf4)
			k = 3;
		else
			return false;
		for (j = 1; j <= (size_t) k; j++)
			if (i + j >= n || (p[i + j] & 0xc0) != 0x80)
				return false;
		i += k + 1;
	}
	return true;
}

/* ---- reader ---- */

/* Start reading the len bytes at p. */
void
rd_init(Rd *r, const uint8_t *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->pos = 0;
	r->err = false;
	r->nbit = 8;
	r->bits = 0;
}

/*
 * Whether n more bytes are there to read; if not, r->err is set, and stays.
 */
static bool
rd_need(Rd *r, size_t n)
{
	r->nbit = 8;
	if (r->err || r->len - r->pos < n)
	{
		r->err = true;
		return false;
	}
	return true;
}

uint8_t
rd_u8(Rd *r)
{
	if (!rd_need(r, 1))
		return 0;
	return r->p[r->pos++];
}

uint16_t
rd_u16(Rd *r)
{
	uint16_t	v;

	if (!rd_need(r, 2))
		return 0;
	v = be16(r->p + r->pos);
	r->pos += 2;
	return v;
}

uint32_t
rd_u32(Rd *r)
{
	uint32_t	v;

	if (!rd_need(r, 4))
		return 0;
	v = be32(r->p + r->pos);
	r->pos += 4;
	return v;
}

uint64_t
rd_u64(Rd *r)
{
	uint64_t	v;

	if (!rd_need(r, 8))
		return 0;
	v = be64(r->p + r->pos);
	r->pos += 8;
	return v;
}

/* consecutive bits share an octet, least significant bit first */
bool
rd_bit(Rd *r)
{
	bool		v;

	if (r->nbit >= 8)
	{
		if (r->err || r->len - r->pos < 1)
		{
			r->err = true;
			return false;
		}
		r->bits = r->p[r->pos++];
		r->nbit = 0;
	}
	v = (r->bits >> r->nbit) & 1;
	r->nbit++;
	return v;
}

/*
 * Read a short string into out (256 bytes), NUL-terminated; a NUL inside
 * it is an error.
 */
void
rd_shortstr(Rd *r, char *out)
{
	uint8_t		n = rd_u8(r);

	out[0] = '\0';
	if (!rd_need(r, n))
		return;
	memcpy(out, r->p + r->pos, n);
	out[n] = '\0';
	if (memchr(out, '\0', n) != NULL)
		r->err = true;
	r->pos += n;
}

/*
 * Read a long string: a pointer into the frame, and its length in len;
 * NULL if it runs short.
 */
const uint8_t *
rd_longstr(Rd *r, uint32_t *len)
{
	const uint8_t *p;

	*len = rd_u32(r);
	if (!rd_need(r, *len))
		return NULL;
	p = r->p + r->pos;
	r->pos += *len;
	return p;
}

/*
 * A JSON object {AMQP_TYPE_KEY: type}: an AMQP value JSON has no type for.
 */
static json_object *
typed(const char *type)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, AMQP_TYPE_KEY, json_object_new_string(type));
	return o;
}

/* A typed value holding an integer v. */
static json_object *
typed_int(const char *type, int64_t v)
{
	json_object *o = typed(type);

	json_object_object_add(o, "v", json_object_new_int64(v));
	return o;
}

/* A typed value holding bytes, in base64. */
static json_object *
typed_bytes(const char *type, const uint8_t *p, size_t n)
{
	json_object *o = typed(type);
	char	   *s = b64_encode(p, n);

	json_object_object_add(o, "b64", json_object_new_string(s));
	free(s);
	return o;
}

/* a double as JSON text that reads back as the same double and as a
 * double (a decimal point); NULL when JSON (jsonb) cannot keep it */
static bool
double_text(double d, char *out, size_t outlen)
{
	int			prec;

	if (!isfinite(d))
		return false;
	for (prec = 1; prec <= 17; prec++)
	{
		snprintf(out, outlen, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	if (strchr(out, 'e') || strchr(out, 'E'))
		return false;			/* jsonb would turn 1e+20 into an integer */
	if (!strchr(out, '.'))
		strncat(out, ".0", outlen - strlen(out) - 1);
	return true;
}

static json_object *rd_value(Rd *r, int depth);
static const char *typed_string(json_object *o, const char *key);
static int64_t typed_i64(json_object *o);

/*
 * Read a field table as a JSON object, depth tables deep (at most 64);
 * r->err if it runs short or nests too deeply.
 */
static json_object *
rd_table_depth(Rd *r, int depth)
{
	uint32_t	len = rd_u32(r);
	size_t		end;
	json_object *obj = json_object_new_object();

	if (!rd_need(r, len) || depth > 64)
	{
		r->err = true;
		return obj;
	}
	end = r->pos + len;
	while (!r->err && r->pos < end)
	{
		char		key[256];
		json_object *v;

		rd_shortstr(r, key);
		if (r->err || !utf8_valid((const uint8_t *) key, strlen(key)))
		{
			r->err = true;
			break;
		}
		v = rd_value(r, depth + 1);
		json_object_object_add(obj, key, v);
	}
	if (r->pos != end)
		r->err = true;
	return obj;
}

/*
 * Read a field table as a JSON object (NULL never: empty on error, with
 * r->err set).
 */
json_object *
rd_table(Rd *r)
{
	return rd_table_depth(r, 0);
}

/*
 * Read one typed field value as JSON: the common types natively, the
 * others as typed objects that buf_value writes back unchanged.
 */
static json_object *
rd_value(Rd *r, int depth)
{
	uint8_t		t = rd_u8(r);
	char		txt[64];

	if (r->err)
		return NULL;
	switch (t)
	{
		case 't':
			return json_object_new_boolean(rd_u8(r) != 0);
		case 'b':
			return typed_int("b", (int8_t) rd_u8(r));
		case 'B':
			return typed_int("B", rd_u8(r));
		case 's':
			return typed_int("s", (int16_t) rd_u16(r));
		case 'U':
			return typed_int("U", (int16_t) rd_u16(r));
		case 'u':
			return typed_int("u", rd_u16(r));
		case 'I':
			return json_object_new_int64((int32_t) rd_u32(r));
		case 'i':
			return typed_int("i", rd_u32(r));
		case 'l':
			{
				int64_t		v = (int64_t) rd_u64(r);

				if (v >= INT32_MIN && v <= INT32_MAX)
					return typed_int("l", v);
				return json_object_new_int64(v);
			}
		case 'L':
			{
				uint64_t	v = rd_u64(r);
				json_object *o = typed("L");

				snprintf(txt, sizeof(txt), "%llu", (unsigned long long) v);
				json_object_object_add(o, "v", json_object_new_string(txt));
				return o;
			}
		case 'f':
			{
				uint32_t	bits = rd_u32(r);
				float		f;
				json_object *o = typed("f");

				memcpy(&f, &bits, 4);
				snprintf(txt, sizeof(txt), "%.9g", (double) f);
				json_object_object_add(o, "v", json_object_new_string(txt));
				return o;
			}
		case 'd':
			{
				uint64_t	bits = rd_u64(r);
				double		d;

				memcpy(&d, &bits, 8);
				if (double_text(d, txt, sizeof(txt)))
					return json_object_new_double_s(d, txt);
				else
				{
					json_object *o = typed("d");

					snprintf(txt, sizeof(txt), "%.17g", d);
					json_object_object_add(o, "v", json_object_new_string(txt));
					return o;
				}
			}
		case 'D':
			{
				uint8_t		scale = rd_u8(r);
				int32_t		v = (int32_t) rd_u32(r);
				json_object *o = typed_int("D", v);

				json_object_object_add(o, "scale", json_object_new_int(scale));
				return o;
			}
		case 'S':
			{
				uint32_t	n;
				const uint8_t *p = rd_longstr(r, &n);

				if (p == NULL)
					return NULL;
				if (utf8_valid(p, n))
					return json_object_new_string_len((const char *) p, n);
				return typed_bytes("S", p, n);
			}
		case 'x':
			{
				uint32_t	n;
				const uint8_t *p = rd_longstr(r, &n);

				if (p == NULL)
					return NULL;
				return typed_bytes("x", p, n);
			}
		case 'T':
			{
				uint64_t	v = rd_u64(r);
				json_object *o = typed("T");

				snprintf(txt, sizeof(txt), "%llu", (unsigned long long) v);
				json_object_object_add(o, "v", json_object_new_string(txt));
				return o;
			}
		case 'F':
			return rd_table_depth(r, depth + 1);
		case 'A':
			{
				uint32_t	len = rd_u32(r);
				size_t		end;
				json_object *arr = json_object_new_array();

				if (!rd_need(r, len) || depth > 64)
				{
					r->err = true;
					return arr;
				}
				end = r->pos + len;
				while (!r->err && r->pos < end)
					json_object_array_add(arr, rd_value(r, depth + 1));
				if (r->pos != end)
					r->err = true;
				return arr;
			}
		case 'V':
			return NULL;		/* json-c's null */
		default:
			r->err = true;
			return NULL;
	}
}

/*
 * x-arguments as queue_ext takes them: every AMQP number (8/16/64-bit and
 * unsigned integers, floats, doubles JSON cannot hold, decimals), which the
 * table reader keeps typed for headers, becomes a plain JSON number, as
 * RabbitMQ reads its x-arguments by value whatever the integer type the
 * client chose (amqplib sends x-max-length 2 as a short-short).  With
 * only_x, only keys starting "x-" (a binding's other arguments are matched
 * against headers, which keep their types).  Changes tbl in place.
 */
void
amqp_args_plain(json_object *tbl, bool only_x)
{
	if (tbl == NULL || !json_object_is_type(tbl, json_type_object))
		return;
	{
		json_object_object_foreach(tbl, key, val)
		{
		const char *type;
		json_object *plain = NULL;

		if (only_x && strncmp(key, "x-", 2) != 0)
			continue;
		if (val == NULL || !json_object_is_type(val, json_type_object) ||
			(type = typed_string(val, AMQP_TYPE_KEY)) == NULL ||
			type[0] == '\0' || type[1] != '\0')
			continue;
		switch (type[0])
		{
			case 'b':
			case 'B':
			case 's':
			case 'U':
			case 'u':
			case 'i':
			case 'l':
				plain = json_object_new_int64(typed_i64(val));
				break;
			case 'L':
				{
					const char *s = typed_string(val, "v");
					unsigned long long u = s ? strtoull(s, NULL, 10) : 0;

					if (u <= (unsigned long long) INT64_MAX)
						plain = json_object_new_int64((int64_t) u);
					break;
				}
			case 'f':
			case 'd':
				{
					const char *s = typed_string(val, "v");
					double		d = s ? strtod(s, NULL) : 0;
					char		txt[64];

					/* a JSON number with a decimal point: still a float */
					if (double_text(d, txt, sizeof(txt)))
						plain = json_object_new_double_s(d, txt);
					break;
				}
			case 'D':
				{
					json_object *sc;
					int			scale = json_object_object_get_ex(val, "scale", &sc) ?
						json_object_get_int(sc) : 0;
					int64_t		n = typed_i64(val);
					char		txt[64];

					if (scale == 0)
						plain = json_object_new_int64(n);
					else if (scale <= 9)
					{
						int64_t		p10 = 1;
						int			i;

						for (i = 0; i < scale; i++)
							p10 *= 10;
						if (n % p10 == 0)
							plain = json_object_new_int64(n / p10);
						else
						{
							snprintf(txt, sizeof(txt), "%s%lld.%0*lld", n < 0 ? "-" : "",
									 (long long) (llabs(n) / p10), scale,
									 (long long) (llabs(n) % p10));
							plain = json_object_new_double_s((double) n / (double) p10, txt);
						}
					}
					break;
				}
			default:
				break;
		}
		if (plain)
			json_object_object_add(tbl, key, plain);
		}
	}
}

/* ---- writer: JSON back to AMQP values ---- */

static bool buf_value(Buf *b, json_object *v, char *err, size_t errlen, int depth);

/* The string member key of a typed object, or NULL. */
static const char *
typed_string(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/*
 * The integer member v of a typed object (a number or a decimal string).
 */
static int64_t
typed_i64(json_object *o)
{
	json_object *v;

	if (!json_object_object_get_ex(o, "v", &v))
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	return json_object_get_int64(v);
}

/*
 * Write a typed object (made by rd_value, or by a client through
 * queue_ext's headers) as the AMQP value it stands for; false with err
 * set if it is malformed.
 */
static bool
buf_typed(Buf *b, json_object *o, const char *type, char *err, size_t errlen)
{
	const char *s;

	switch (type[0] && !type[1] ? type[0] : '?')
	{
		case 'b':
		case 'B':
			buf_u8(b, type[0]);
			buf_u8(b, (uint8_t) typed_i64(o));
			return true;
		case 's':
		case 'U':
		case 'u':
			buf_u8(b, type[0]);
			buf_u16(b, (uint16_t) typed_i64(o));
			return true;
		case 'i':
			buf_u8(b, 'i');
			buf_u32(b, (uint32_t) typed_i64(o));
			return true;
		case 'l':
			buf_u8(b, 'l');
			buf_u64(b, (uint64_t) typed_i64(o));
			return true;
		case 'L':
		case 'T':
			s = typed_string(o, "v");
			buf_u8(b, type[0]);
			buf_u64(b, s ? strtoull(s, NULL, 10) : (uint64_t) typed_i64(o));
			return true;
		case 'f':
			{
				float		f;
				uint32_t	bits;

				s = typed_string(o, "v");
				f = s ? strtof(s, NULL) : 0;
				memcpy(&bits, &f, 4);
				buf_u8(b, 'f');
				buf_u32(b, bits);
				return true;
			}
		case 'd':
			{
				double		d;
				uint64_t	bits;

				s = typed_string(o, "v");
				d = s ? strtod(s, NULL) : 0;
				memcpy(&bits, &d, 8);
				buf_u8(b, 'd');
				buf_u64(b, bits);
				return true;
			}
		case 'D':
			{
				json_object *sc;

				buf_u8(b, 'D');
				buf_u8(b, json_object_object_get_ex(o, "scale", &sc) ?
					   (uint8_t) json_object_get_int(sc) : 0);
				buf_u32(b, (uint32_t) (int32_t) typed_i64(o));
				return true;
			}
		case 'S':
		case 'x':
			{
				Buf			raw = {0};

				s = typed_string(o, "b64");
				if (s == NULL || !b64_decode(&raw, s))
				{
					buf_free(&raw);
					break;
				}
				buf_u8(b, type[0]);
				buf_longstr(b, raw.data, raw.len);
				buf_free(&raw);
				return true;
			}
		default:
			break;
	}
	snprintf(err, errlen, "malformed typed header value of type \"%s\"", type);
	return false;
}

/*
 * Write one JSON value as an AMQP field value; false with err set if it
 * cannot be (too deep, malformed typed value).
 */
static bool
buf_value(Buf *b, json_object *v, char *err, size_t errlen, int depth)
{
	if (depth > 64)
	{
		snprintf(err, errlen, "headers nested too deeply");
		return false;
	}
	switch (json_object_get_type(v))
	{
		case json_type_null:
			buf_u8(b, 'V');
			return true;
		case json_type_boolean:
			buf_u8(b, 't');
			buf_u8(b, json_object_get_boolean(v) ? 1 : 0);
			return true;
		case json_type_int:
			{
				int64_t		i = json_object_get_int64(v);

				if (i >= INT32_MIN && i <= INT32_MAX)
				{
					buf_u8(b, 'I');
					buf_u32(b, (uint32_t) (int32_t) i);
				}
				else
				{
					buf_u8(b, 'l');
					buf_u64(b, (uint64_t) i);
				}
				return true;
			}
		case json_type_double:
			{
				double		d = json_object_get_double(v);
				uint64_t	bits;

				memcpy(&bits, &d, 8);
				buf_u8(b, 'd');
				buf_u64(b, bits);
				return true;
			}
		case json_type_string:
			buf_u8(b, 'S');
			buf_longstr(b, json_object_get_string(v), json_object_get_string_len(v));
			return true;
		case json_type_array:
			{
				size_t		i,
							n = json_object_array_length(v);
				size_t		at;

				buf_u8(b, 'A');
				at = b->len;
				buf_u32(b, 0);
				for (i = 0; i < n; i++)
					if (!buf_value(b, json_object_array_get_idx(v, i), err, errlen, depth + 1))
						return false;
				buf_set_u32(b, at, b->len - at - 4);
				return true;
			}
		case json_type_object:
			{
				const char *type = typed_string(v, AMQP_TYPE_KEY);

				if (type)
					return buf_typed(b, v, type, err, errlen);
				buf_u8(b, 'F');
				return buf_table_json(b, v, err, errlen);
			}
	}
	snprintf(err, errlen, "unknown JSON value");
	return false;
}

/*
 * Write the JSON object obj (or NULL: empty) as an AMQP field table;
 * false with err set if a value cannot be written.
 */
bool
buf_table_json(Buf *b, json_object *obj, char *err, size_t errlen)
{
	size_t		at = b->len;

	buf_u32(b, 0);
	if (obj != NULL && json_object_is_type(obj, json_type_object))
	{
		json_object_object_foreach(obj, key, val)
		{
			buf_shortstr(b, key);
			if (!buf_value(b, val, err, errlen, 1))
				return false;
		}
	}
	buf_set_u32(b, at, b->len - at - 4);
	return true;
}

/*
 * Seconds since the epoch of an ISO 8601 UTC time (as PostgreSQL prints
 * a timestamptz), or -1 if s does not start with one.
 */
int64_t
amqp_parse_iso_time(const char *s)
{
	struct tm	tm;
	int			y,
				mo,
				d,
				h,
				mi,
				sec;

	if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec) != 6)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	return (int64_t) timegm(&tm);
}

/* a member of a JSON object; NULL: none (or o is no object) */
json_object *
json_get(json_object *o, const char *key)
{
	json_object *v;

	if (o && json_object_is_type(o, json_type_object) &&
		json_object_object_get_ex(o, key, &v))
		return v;
	return NULL;
}

/* a member that is a string; NULL: none */
const char *
json_str(json_object *o, const char *key)
{
	json_object *v = json_get(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}
