/*-------------------------------------------------------------------------
 *
 * filter.c
 *	  Message filters of consumer groups, as RocketMQ's: tag expressions
 *	  and SQL92 selectors, compiled once and evaluated per message.
 *
 * Tag expressions are FilterAPI.buildSubscriptionData's: "*" or empty
 * matches every message; otherwise the expression is split on "||", each
 * piece trimmed, empty pieces dropped, and a message matches when its tag
 * is one of the pieces (exactly, case-sensitively).  A message without a
 * tag matches only "*".
 *
 * SQL92 selectors follow RocketMQ's SelectorParser.jj (a JMS selector
 * grammar taken from ActiveMQ) and the expression classes of
 * org.apache.rocketmq.filter.expression, including their quirks: the
 * checks RocketMQ makes while building the tree are made here at compile
 * time, with the same results, and evaluation follows ComparisonExpression,
 * LogicExpression and UnaryExpression step by step (which operand is
 * evaluated first, which comparisons give NULL and which FALSE, the string
 * conversions of ComparisonExpression.__compare).  A Java exception during
 * evaluation is MQ_FILTER_ERROR here: it ends the evaluation at once, and
 * the message does not match.
 *
 * RocketMQ's properties are a map of strings; ours are the top-level keys
 * of the message's headers, a jsonb object, so a value may also be a
 * number, a boolean, null (as if missing) or an object or array.  Numbers
 * take the place of RocketMQ's typed test contexts (ExpressionTest puts
 * Integer and Double values in them): a number written without a fraction
 * is an Integer or a Long by its range, any other a Double.  Objects and
 * arrays are a non-null value that is not Comparable (ExpressionTest's
 * "new Object()"): equal to nothing, an error under <, >, <=, >=, no
 * string for CONTAINS and friends, not a string for IN.  The property
 * TAGS is the message's tag, not a header.
 *
 * Evaluation allocates nothing for the common cases: properties are looked
 * up in the jsonb container in place, strings compared in place, and
 * numbers from the headers compared as numeric with the literal's numeric
 * (built at compile time, also for the number a string literal spells).
 * Only comparisons between two properties of different types (a string
 * and a number) and unary minus on a property build values at run time.
 * Comparing numbers exactly where RocketMQ compares doubles changes a
 * result only beyond double precision (about 16 significant digits).
 *
 * Where this differs from RocketMQ, on purpose, is listed in docs/api.md
 * ("Filters").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/hashfn.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "filter.h"

/* ----------------------------------------------------------------
 *		Values
 * ----------------------------------------------------------------
 */

/* The Java class of a value, as far as the selector can tell them apart */
typedef enum FType
{
	FT_NULL,
	FT_BOOL,					/* Boolean */
	FT_STRING,					/* String */
	FT_NUMBER,					/* Integer, Long or Double: see FNumKind */
	FT_OBJECT					/* JSON object or array: not Comparable */
} FType;

typedef enum FNumKind
{
	FK_UNKNOWN,					/* a header's number, not classified yet */
	FK_INT,						/* Integer */
	FK_LONG,					/* Long */
	FK_DOUBLE					/* Double */
} FNumKind;

/*
 * What a string literal gives to Integer.valueOf, Long.valueOf,
 * Double.valueOf and Boolean.valueOf, computed at compile time so that
 * comparing a header's number with a string literal builds nothing.
 */
typedef struct FStrConv
{
	bool		int_ok;			/* Integer.valueOf succeeds */
	bool		long_ok;		/* Long.valueOf succeeds */
	bool		double_ok;		/* Double.valueOf succeeds */
	bool		bool_val;		/* Boolean.valueOf */
	int64		i;				/* the integer, when long_ok */
	double		d;				/* the double, when double_ok */
	Numeric		n_i;			/* i as numeric, when long_ok */
	Numeric		n_d;			/* the double's text as numeric, when double_ok */
} FStrConv;

/*
 * A value during evaluation.  Strings point into the jsonb container or the
 * compiled filter; nothing is copied.
 */
typedef struct FVal
{
	FType		type;
	FNumKind	nkind;			/* numbers */
	bool		b;				/* booleans */
	int			len;			/* strings: length in bytes */
	const char *s;				/* strings: not NUL-terminated */
	Numeric		num;			/* numbers: the exact value; NULL only for a
								 * number read from a string by a comparison */
	bool		native;			/* numbers: i (FK_INT, FK_LONG) or d
								 * (FK_DOUBLE) holds the value */
	int64		i;
	double		d;
	const FStrConv *conv;		/* string literals */
} FVal;

/* ----------------------------------------------------------------
 *		The compiled form
 * ----------------------------------------------------------------
 */

typedef enum FNodeKind
{
	FN_CONST,					/* a literal, or a folded unary minus */
	FN_PROP,					/* a property: a header, or TAGS */
	FN_NEG,						/* unary minus of a non-literal */
	FN_NOT,
	FN_BOOLCAST,				/* a property used as a boolean */
	FN_AND,
	FN_OR,
	FN_EQ,						/* =, and IS NULL as "= NULL" */
	FN_GT,
	FN_GE,
	FN_LT,
	FN_LE,
	FN_IN,						/* IN / NOT IN (negated) */
	FN_CONTAINS,				/* and NOT CONTAINS (negated) */
	FN_STARTSWITH,
	FN_ENDSWITH
} FNodeKind;

typedef struct FStr
{
	int			len;
	const char *s;
} FStr;

typedef struct FNode
{
	FNodeKind	kind;
	bool		negated;		/* NOT IN, NOT CONTAINS, ... */
	bool		is_bool;		/* a BooleanExpression in RocketMQ's tree */
	bool		is_literal;		/* a ConstantExpression in RocketMQ's tree */
	bool		is_tags;		/* FN_PROP: the property TAGS */
	int			pos;			/* byte offset of its first token (errors) */
	struct FNode *left;			/* operand (unary), left operand */
	struct FNode *right;
	FVal		value;			/* FN_CONST */
	FStr		name;			/* FN_PROP: the property name */
	FStr		search;			/* FN_CONTAINS ...: the string looked for */
	int			nlist;			/* FN_IN */
	FStr	   *list;
} FNode;

/* A tag of a tag filter */
typedef struct FTag
{
	uint32		hash;			/* mq_tag_hash */
	int			len;
	char	   *tag;
} FTag;

struct MqFilter
{
	MemoryContext cxt;			/* holds everything of the filter */
	MqFilterKind kind;
	bool		all;			/* every message matches */
	char	   *expr;			/* the expression (NULL: none) */
	int			ntags;			/* tag filters: the tags, sorted by hash */
	FTag	   *tags;
	FNode	   *root;			/* SQL92 filters: the selector */
};

/* ----------------------------------------------------------------
 *		Java's conversions of strings
 * ----------------------------------------------------------------
 */

/* String.trim: drop characters <= ' ' at both ends */
static void
java_trim(const char **s, int *len)
{
	while (*len > 0 && (unsigned char) (*s)[0] <= ' ')
	{
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && (unsigned char) (*s)[*len - 1] <= ' ')
		(*len)--;
}

/*
 * Integer.valueOf / Long.valueOf: an optional sign and decimal digits, no
 * blanks, within [min, max].  (Java also takes non-ASCII digits; we do not.)
 */
static bool
java_parse_integer(const char *s, int len, int64 min, int64 max, int64 *out)
{
	bool		neg = false;
	uint64		v = 0;
	uint64		limit;
	int			k = 0;

	if (len > 0 && (s[0] == '-' || s[0] == '+'))
	{
		neg = (s[0] == '-');
		k = 1;
	}
	if (k >= len)
		return false;
	limit = neg ? (uint64) (-(min + 1)) + 1 : (uint64) max;
	for (; k < len; k++)
	{
		int			digit;

		if (s[k] < '0' || s[k] > '9')
			return false;
		digit = s[k] - '0';
		if (v > (limit - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	if (neg)
		*out = (v == 0) ? 0 : -(int64) (v - 1) - 1;
	else
		*out = (int64) v;
	return true;
}

/*
 * Double.valueOf: trimmed, an optional sign, then NaN, Infinity or a
 * decimal number with an optional exponent and an optional f/F/d/D type
 * suffix.  (Java's hexadecimal form, "0x1p3", is not taken.)  On success
 * *d is the correctly rounded value (strtod, in the backend's C locale for
 * numbers), and *text, *textlen the decimal number without blanks and
 * suffix, for numeric_in; *textlen is 0 for NaN and Infinity.
 */
static bool
java_parse_double(const char *s, int len, double *d,
				  const char **text, int *textlen)
{
	int			k = 0;
	int			ndigits = 0;
	int			end;
	char		buf[128];
	char	   *cp;

	java_trim(&s, &len);
	if (len > 0 && (s[0] == '-' || s[0] == '+'))
		k = 1;
	if (len - k == 3 && strncmp(s + k, "NaN", 3) == 0)
	{
		*d = get_float8_nan();
		*textlen = 0;
		return true;
	}
	if (len - k == 8 && strncmp(s + k, "Infinity", 8) == 0)
	{
		*d = (s[0] == '-') ? -get_float8_infinity() : get_float8_infinity();
		*textlen = 0;
		return true;
	}
	while (k < len && isdigit((unsigned char) s[k]))
		k++, ndigits++;
	if (k < len && s[k] == '.')
	{
		k++;
		while (k < len && isdigit((unsigned char) s[k]))
			k++, ndigits++;
	}
	if (ndigits == 0)
		return false;
	if (k < len && (s[k] == 'e' || s[k] == 'E'))
	{
		int			expdigits = 0;

		k++;
		if (k < len && (s[k] == '-' || s[k] == '+'))
			k++;
		while (k < len && isdigit((unsigned char) s[k]))
			k++, expdigits++;
		if (expdigits == 0)
			return false;
	}
	end = k;
	if (k < len && s[k] != '\0' && strchr("fFdD", s[k]) != NULL)
		k++;
	if (k != len)
		return false;

	/* strtod wants a terminated string */
	cp = (end < sizeof(buf)) ? buf : palloc(end + 1);
	memcpy(cp, s, end);
	cp[end] = '\0';
	*d = strtod(cp, NULL);		/* overflow: +-HUGE_VAL, as Java's Infinity */
	if (cp != buf)
		pfree(cp);
	*text = s;
	*textlen = end;
	return true;
}

/* Boolean.valueOf: "true" in any case is true, everything else false */
static bool
java_parse_bool(const char *s, int len)
{
	return len == 4 && pg_strncasecmp(s, "true", 4) == 0;
}

/* Double.compare: NaN above everything and equal to itself, -0.0 < 0.0 */
static int
java_double_cmp(double a, double b)
{
	int64		abits;
	int64		bbits;

	if (a < b)
		return -1;
	if (a > b)
		return 1;
	/* equal, or one of them NaN: compare doubleToLongBits */
	if (isnan(a))
		a = get_float8_nan();
	if (isnan(b))
		b = get_float8_nan();
	memcpy(&abits, &a, sizeof(abits));
	memcpy(&bbits, &b, sizeof(bbits));
	return (abits == bbits) ? 0 : (abits < bbits ? -1 : 1);
}

/* ----------------------------------------------------------------
 *		Numbers
 * ----------------------------------------------------------------
 */

/*
 * A decimal number's text as numeric, or NULL when numeric_in might refuse
 * it (very long text, huge exponents: numeric's limits are not double's).
 */
static Numeric
decimal_numeric(const char *text, int len)
{
	char		buf[320];
	const char *e;

	if (len <= 0 || len >= 300)
		return NULL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	e = strpbrk(buf, "eE");
	if (e != NULL && labs(strtol(e + 1, NULL, 10)) > 400)
		return NULL;
	return DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1)));
}

static int
num_cmp(Numeric a, Numeric b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(a),
											 NumericGetDatum(b)));
}

/* Bounds of Integer and Long as numeric, made once per backend */
static Numeric int32_min_num, int32_max_num, int64_min_num, int64_max_num;

/*
 * The Java class of a header's number: without a fraction, Integer or Long
 * by its range, else Double.  Only needed when a string is converted to
 * the number's class.
 */
static FNumKind
fv_numkind(FVal *v)
{
	if (v->nkind != FK_UNKNOWN)
		return v->nkind;
	if (int32_min_num == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		int32_min_num = int64_to_numeric(PG_INT32_MIN);
		int32_max_num = int64_to_numeric(PG_INT32_MAX);
		int64_min_num = int64_to_numeric(PG_INT64_MIN);
		int64_max_num = int64_to_numeric(PG_INT64_MAX);
		MemoryContextSwitchTo(old);
	}
	if (DatumGetInt32(DirectFunctionCall1(numeric_scale,
										  NumericGetDatum(v->num))) > 0)
		v->nkind = FK_DOUBLE;
	else if (num_cmp(v->num, int32_min_num) >= 0 &&
			 num_cmp(v->num, int32_max_num) <= 0)
		v->nkind = FK_INT;
	else if (num_cmp(v->num, int64_min_num) >= 0 &&
			 num_cmp(v->num, int64_max_num) <= 0)
		v->nkind = FK_LONG;
	else
		v->nkind = FK_DOUBLE;
	return v->nkind;
}

/*
 * Give a header's number its native value (the one allocating path: only
 * for a comparison with a string read at run time).  strtod, unlike
 * float8in, never fails: out of range gives infinity or zero, as Java.
 */
static void
fv_native(FVal *v)
{
	char	   *text;

	if (v->native)
		return;
	text = DatumGetCString(DirectFunctionCall1(numeric_out,
											   NumericGetDatum(v->num)));
	if (fv_numkind(v) == FK_DOUBLE)
		v->d = strtod(text, NULL);
	else
		v->i = strtoi64(text, NULL, 10);
	pfree(text);
	v->native = true;
}

/*
 * Compare two numbers.  Both have a numeric (a header's number, a literal,
 * a string literal's number): compare exactly.  Otherwise one was read from
 * a string in the class of the other, and they compare in that class, as
 * RocketMQ: as long integers or as doubles.
 */
static int
fv_num_cmp(FVal *a, FVal *b)
{
	if (a->num != NULL && b->num != NULL)
		return num_cmp(a->num, b->num);
	fv_native(a);
	fv_native(b);
	if (a->nkind == FK_DOUBLE || b->nkind == FK_DOUBLE)
		return java_double_cmp(a->nkind == FK_DOUBLE ? a->d : (double) a->i,
							   b->nkind == FK_DOUBLE ? b->d : (double) b->i);
	return (a->i > b->i) - (a->i < b->i);
}

/*
 * The string s read as a number of class kind, as Integer.valueOf,
 * Long.valueOf or Double.valueOf would (false: NumberFormatException).
 */
static bool
fv_string_to_number(const FVal *s, FNumKind kind, FVal *out)
{
	const FStrConv *c = s->conv;

	memset(out, 0, sizeof(FVal));
	out->type = FT_NUMBER;
	out->nkind = kind;
	out->native = true;
	if (c != NULL)
	{
		/* a string literal: everything is ready */
		if (kind == FK_DOUBLE)
		{
			if (!c->double_ok)
				return false;
			out->d = c->d;
			out->num = c->n_d;
		}
		else
		{
			if (!(kind == FK_INT ? c->int_ok : c->long_ok))
				return false;
			out->i = c->i;
			out->num = c->n_i;
		}
		return true;
	}
	if (kind == FK_DOUBLE)
	{
		const char *text;
		int			textlen;

		return java_parse_double(s->s, s->len, &out->d, &text, &textlen);
	}
	if (kind == FK_INT)
		return java_parse_integer(s->s, s->len, PG_INT32_MIN, PG_INT32_MAX,
								  &out->i);
	return java_parse_integer(s->s, s->len, PG_INT64_MIN, PG_INT64_MAX,
							  &out->i);
}

/*
 * ComparisonExpression.__compare with convertStringExpressions on (as
 * SelectorParser.parse always sets it): values of different classes are
 * converted as RocketMQ does, or the comparison answers -1.  Neither value
 * is NULL or an object.  False for what throws in Java: a string that does
 * not read as the other side's number, a Boolean against a String.
 */
static bool
fv_compare(FVal *l, FVal *r, int *cmp)
{
	FVal		conv;

	Assert(l->type != FT_NULL && r->type != FT_NULL);
	if (l->type == FT_OBJECT || r->type == FT_OBJECT)
		return false;
	if (l->type == r->type)
	{
		switch (l->type)
		{
			case FT_BOOL:
				*cmp = (int) l->b - (int) r->b;
				return true;
			case FT_STRING:
				{
					int			c = memcmp(l->s, r->s, Min(l->len, r->len));

					*cmp = (c != 0) ? c : l->len - r->len;
					return true;
				}
			case FT_NUMBER:
				*cmp = fv_num_cmp(l, r);
				return true;
			default:
				return false;
		}
	}
	switch (l->type)
	{
		case FT_BOOL:
			/* RocketMQ casts the Boolean to String: ClassCastException */
			if (r->type == FT_STRING)
				return false;
			break;
		case FT_NUMBER:
			if (r->type == FT_STRING)
			{
				if (!fv_string_to_number(r, fv_numkind(l), &conv))
					return false;
				*cmp = fv_num_cmp(l, &conv);
				return true;
			}
			break;
		case FT_STRING:
			if (r->type == FT_BOOL)
			{
				*cmp = (int) java_parse_bool(l->s, l->len) - (int) r->b;
				return true;
			}
			if (r->type == FT_NUMBER)
			{
				if (!fv_string_to_number(l, fv_numkind(r), &conv))
					return false;
				*cmp = fv_num_cmp(&conv, r);
				return true;
			}
			break;
		default:
			break;
	}
	*cmp = -1;
	return true;
}

/* ----------------------------------------------------------------
 *		Lexer
 * ----------------------------------------------------------------
 */

typedef enum FTok
{
	TK_EOF,
	TK_ID,
	TK_STRING,
	TK_DECIMAL,
	TK_FLOAT,
	TK_LPAREN,
	TK_RPAREN,
	TK_COMMA,
	TK_EQ,
	TK_NE,
	TK_GT,
	TK_GE,
	TK_LT,
	TK_LE,
	TK_PLUS,
	TK_MINUS,
	/* keywords, in any case */
	TK_NOT,
	TK_AND,
	TK_OR,
	TK_BETWEEN,
	TK_IN,
	TK_TRUE,
	TK_FALSE,
	TK_NULL,
	TK_IS,
	TK_CONTAINS,
	TK_STARTSWITH,
	TK_ENDSWITH
} FTok;

static const struct
{
	const char *word;
	FTok		tok;
}			filter_keywords[] =
{
	{"NOT", TK_NOT},
	{"AND", TK_AND},
	{"OR", TK_OR},
	{"BETWEEN", TK_BETWEEN},
	{"IN", TK_IN},
	{"TRUE", TK_TRUE},
	{"FALSE", TK_FALSE},
	{"NULL", TK_NULL},
	{"IS", TK_IS},
	{"CONTAINS", TK_CONTAINS},
	{"STARTSWITH", TK_STARTSWITH},
	{"ENDSWITH", TK_ENDSWITH}
};

typedef struct FToken
{
	FTok		type;
	int			start;			/* byte offset in the expression */
	int			len;
} FToken;

typedef struct FParser
{
	const char *expr;
	int			exprlen;
	FToken		tok;			/* the current token */
	int			depth;			/* unary operators and parentheses open */
} FParser;

/*
 * Raise 42601 for the sql92 expression, pointing at byte offset off.  The
 * position is in characters, 1-based, as PostgreSQL's own positions.
 */
static void
filter_error(const FParser *ps, int off, const char *msg, const char *hint)
pg_attribute_noreturn();

static void
filter_error(const FParser *ps, int off, const char *msg, const char *hint)
{
	int			charpos = pg_mbstrlen_with_len(ps->expr, off) + 1;

	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("invalid sql92 filter: %s", msg),
			 errdetail("The error is at character %d of the filter expression.",
					   charpos),
			 hint ? errhint("%s", hint) : 0));
}

/*
 * Raise 54001 for an expression nested deeper than MQ_FILTER_MAX_DEPTH,
 * pointing at byte offset off.  The one limit of the nesting, checked
 * while parsing (so before a consumer group is declared with it), keeps
 * the evaluation's recursion within the stack.
 */
static void
filter_too_deep(const FParser *ps, int off) pg_attribute_noreturn();

static void
filter_too_deep(const FParser *ps, int off)
{
	int			charpos = pg_mbstrlen_with_len(ps->expr, off) + 1;

	ereport(ERROR,
			(errcode(ERRCODE_STATEMENT_TOO_COMPLEX),
			 errmsg("sql92 filter is nested too deeply"),
			 errdetail("It nests more than %d operators at character %d of the filter expression.",
					   MQ_FILTER_MAX_DEPTH, charpos),
			 errhint("Write a long list of alternatives as IN (...), or group long runs of AND or OR in parentheses.")));
}

/* "syntax error at or near ..." for the current token */
static void
filter_unexpected(const FParser *ps) pg_attribute_noreturn();

static void
filter_unexpected(const FParser *ps)
{
	if (ps->tok.type == TK_EOF)
		filter_error(ps, ps->tok.start, "syntax error at end of input", NULL);
	filter_error(ps, ps->tok.start,
				 psprintf("syntax error at or near \"%.*s\"",
						  Min(ps->tok.len, 40), ps->expr + ps->tok.start),
				 NULL);
}

static bool
is_id_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		c == '_' || c == '$';
}

static bool
is_id_char(char c)
{
	return is_id_start(c) || (c >= '0' && c <= '9');
}

/*
 * The token starting at or after byte offset off (blanks and comments are
 * skipped).  Longest match, as JavaCC's token manager: "notx" is a name,
 * "5Lx" is 5L then x, "007" is 0, 0 and 7.
 */
static FToken
filter_lex(const FParser *ps, int off)
{
	const char *s = ps->expr;
	int			n = ps->exprlen;
	FToken		t;
	int			k;

	for (;;)
	{
		while (off < n && strchr(" \t\n\r\f", s[off]) != NULL)
			off++;
		if (off + 1 < n && s[off] == '-' && s[off + 1] == '-')
		{
			/* to the end of the line (or of the expression) */
			while (off < n && s[off] != '\n' && s[off] != '\r')
				off++;
			continue;
		}
		if (off + 1 < n && s[off] == '/' && s[off + 1] == '*')
		{
			int			start = off;

			off += 2;
			while (off + 1 < n && !(s[off] == '*' && s[off + 1] == '/'))
				off++;
			if (off + 1 >= n)
				filter_error(ps, start, "unterminated /* comment", NULL);
			off += 2;
			continue;
		}
		break;
	}

	t.start = off;
	t.len = 1;
	if (off >= n)
	{
		t.type = TK_EOF;
		t.len = 0;
		return t;
	}
	k = off;
	switch (s[k])
	{
		case '(':
			t.type = TK_LPAREN;
			return t;
		case ')':
			t.type = TK_RPAREN;
			return t;
		case ',':
			t.type = TK_COMMA;
			return t;
		case '=':
			t.type = TK_EQ;
			return t;
		case '+':
			t.type = TK_PLUS;
			return t;
		case '-':
			t.type = TK_MINUS;
			return t;
		case '>':
			t.type = TK_GT;
			if (k + 1 < n && s[k + 1] == '=')
				t.type = TK_GE, t.len = 2;
			return t;
		case '<':
			t.type = TK_LT;
			if (k + 1 < n && s[k + 1] == '=')
				t.type = TK_LE, t.len = 2;
			else if (k + 1 < n && s[k + 1] == '>')
				t.type = TK_NE, t.len = 2;
			return t;
		case '\'':
			k++;
			for (;;)
			{
				if (k >= n)
					filter_error(ps, off, "unterminated quoted string", NULL);
				if (s[k] == '\'')
				{
					if (k + 1 < n && s[k + 1] == '\'')
					{
						k += 2;
						continue;
					}
					break;
				}
				k++;
			}
			t.type = TK_STRING;
			t.len = k + 1 - off;
			return t;
		default:
			break;
	}

	if (isdigit((unsigned char) s[k]) ||
		(s[k] == '.' && k + 1 < n && isdigit((unsigned char) s[k + 1])))
	{
		int			digits_end;
		bool		is_float = false;

		while (k < n && isdigit((unsigned char) s[k]))
			k++;
		digits_end = k;
		if (k < n && s[k] == '.')
		{
			is_float = true;
			k++;
			while (k < n && isdigit((unsigned char) s[k]))
				k++;
		}
		/* an exponent, only when digits follow it */
		if (k < n && (s[k] == 'e' || s[k] == 'E'))
		{
			int			e = k + 1;

			if (e < n && (s[e] == '+' || s[e] == '-'))
				e++;
			if (e < n && isdigit((unsigned char) s[e]))
			{
				while (e < n && isdigit((unsigned char) s[e]))
					e++;
				k = e;
				is_float = true;
			}
		}
		if (is_float)
		{
			t.type = TK_FLOAT;
			t.len = k - off;
			return t;
		}
		/* "0" | [1-9][0-9]* [lL]? */
		t.type = TK_DECIMAL;
		if (s[off] == '0')
			t.len = 1;
		else
		{
			k = digits_end;
			if (k < n && (s[k] == 'l' || s[k] == 'L'))
				k++;
			t.len = k - off;
		}
		return t;
	}

	if (is_id_start(s[k]))
	{
		while (k < n && is_id_char(s[k]))
			k++;
		t.type = TK_ID;
		t.len = k - off;
		for (int i = 0; i < lengthof(filter_keywords); i++)
		{
			if (strlen(filter_keywords[i].word) == t.len &&
				pg_strncasecmp(filter_keywords[i].word, s + off, t.len) == 0)
			{
				t.type = filter_keywords[i].tok;
				break;
			}
		}
		return t;
	}

	filter_error(ps, off,
				 psprintf("invalid character \"%.*s\"",
						  pg_mblen(s + off), s + off),
				 NULL);
}

static void
filter_advance(FParser *ps)
{
	ps->tok = filter_lex(ps, ps->tok.start + ps->tok.len);
}

/* The token after the current one, without moving */
static FTok
filter_peek(const FParser *ps)
{
	return filter_lex(ps, ps->tok.start + ps->tok.len).type;
}

static void
filter_expect(FParser *ps, FTok type)
{
	if (ps->tok.type != type)
		filter_unexpected(ps);
	filter_advance(ps);
}

/* ----------------------------------------------------------------
 *		Parser: SelectorParser.jj, one function per production
 * ----------------------------------------------------------------
 */

static FNode *parse_or(FParser *ps);

static FNode *
make_node(FNodeKind kind, int pos)
{
	FNode	   *n = palloc0(sizeof(FNode));

	n->kind = kind;
	n->pos = pos;
	n->is_bool = (kind != FN_CONST && kind != FN_PROP && kind != FN_NEG);
	return n;
}

static FNode *
make_binary(FNodeKind kind, FNode *left, FNode *right)
{
	FNode	   *n = make_node(kind, left->pos);

	n->left = left;
	n->right = right;
	return n;
}

static FNode *
make_not(FNode *operand, int pos)
{
	FNode	   *n = make_node(FN_NOT, pos);

	n->left = operand;
	return n;
}

/*
 * SelectorParser.asBooleanExpression: a boolean expression as it is, a
 * property as a boolean cast, anything else an error.
 */
static FNode *
as_boolean(const FParser *ps, FNode *n)
{
	FNode	   *cast;

	if (n->is_bool)
		return n;
	if (n->kind == FN_PROP)
	{
		cast = make_node(FN_BOOLCAST, n->pos);
		cast->left = n;
		return cast;
	}
	filter_error(ps, n->pos, "expression does not yield a boolean value",
				 "Compare it with something, as in \"a > 1\".");
}

/* ComparisonExpression.checkEqualOperand: no NULL literal beside = or <> */
static void
check_equal_operand(const FParser *ps, const FNode *n, const char *op)
{
	if (n->is_literal && n->value.type == FT_NULL)
		filter_error(ps, n->pos,
					 psprintf("NULL cannot be compared with \"%s\"", op),
					 "Use IS NULL or IS NOT NULL.");
}

/*
 * ComparisonExpression.createEqual's checks, then the node (doCreateEqual).
 * For <>, the caller puts NOT above it, as RocketMQ.
 */
static FNode *
make_equal(const FParser *ps, FNode *left, FNode *right, const char *op)
{
	check_equal_operand(ps, left, op);
	check_equal_operand(ps, right, op);
	/* checkEqualOperandCompatability */
	if (left->is_literal && right->is_literal && left->is_bool &&
		!right->is_bool)
		filter_error(ps, right->pos,
					 psprintf("TRUE or FALSE cannot be compared with a non-boolean literal by \"%s\"", op),
					 NULL);
	return make_binary(FN_EQ, left, right);
}

/*
 * ComparisonExpression.checkLessThanOperand: only a number literal, or
 * anything that is neither a literal nor a boolean expression.
 */
static void
check_less_than_operand(const FParser *ps, const FNode *n, const char *op)
{
	if (n->is_literal)
	{
		if (n->value.type != FT_NUMBER)
			filter_error(ps, n->pos,
						 psprintf("only numbers can be compared by \"%s\"", op),
						 NULL);
	}
	else if (n->is_bool)
		filter_error(ps, n->pos,
					 psprintf("a boolean expression cannot be compared by \"%s\"", op),
					 "Put it in parentheses and compare it with = TRUE if that is what you mean.");
}

static FNode *
make_less_than(const FParser *ps, FNodeKind kind, FNode *left, FNode *right)
{
	static const char *const ops[] = {">", ">=", "<", "<="};
	const char *op = ops[kind - FN_GT];

	check_less_than_operand(ps, left, op);
	check_less_than_operand(ps, right, op);
	return make_binary(kind, left, right);
}

/*
 * ComparisonExpression.createBetween / createNotBetween.  BETWEEN checks
 * two literal bounds (not NULL, in order, with RocketMQ's conversions);
 * NOT BETWEEN does not.
 */
static FNode *
make_between(const FParser *ps, FNode *value, FNode *low, FNode *high,
			 bool negated)
{
	FNode	   *first;
	FNode	   *second;

	/* the checks run in RocketMQ's order: low bound first */
	if (negated)
	{
		first = make_less_than(ps, FN_LT, value, low);
		second = make_less_than(ps, FN_GT, value, high);
		return make_binary(FN_OR, first, second);
	}
	if (low->is_literal && high->is_literal)
	{
		FVal		lv = low->value;
		FVal		hv = high->value;
		int			cmp;

		if (lv.type == FT_NULL || hv.type == FT_NULL)
			filter_error(ps, lv.type == FT_NULL ? low->pos : high->pos,
						 "the bounds of BETWEEN must not be NULL", NULL);
		if (!fv_compare(&hv, &lv, &cmp))
			filter_error(ps, low->pos,
						 "the bounds of BETWEEN cannot be compared with each other",
						 NULL);
		if (cmp < 0)
			filter_error(ps, low->pos,
						 "the lower bound of BETWEEN is greater than its upper bound",
						 NULL);
	}
	first = make_less_than(ps, FN_GE, value, low);
	second = make_less_than(ps, FN_LE, value, high);
	return make_binary(FN_AND, first, second);
}

/* The decoded text of the current string literal token ('' is ') */
static FStr
parse_string_literal(FParser *ps)
{
	FStr		r;
	char	   *out;
	int			n = 0;
	const char *s = ps->expr + ps->tok.start;

	if (ps->tok.type != TK_STRING)
		filter_unexpected(ps);
	out = palloc(ps->tok.len);
	for (int i = 1; i < ps->tok.len - 1; i++)
	{
		out[n++] = s[i];
		if (s[i] == '\'')
			i++;
	}
	out[n] = '\0';
	r.s = out;
	r.len = n;
	filter_advance(ps);
	return r;
}

/* A string literal's value, with what it reads as when it meets a number */
static FNode *
make_string_const(FStr str, int pos)
{
	FNode	   *n = make_node(FN_CONST, pos);
	FStrConv   *c = palloc0(sizeof(FStrConv));
	const char *text;
	int			textlen;

	n->is_literal = true;
	n->value.type = FT_STRING;
	n->value.s = str.s;
	n->value.len = str.len;
	n->value.conv = c;

	c->bool_val = java_parse_bool(str.s, str.len);
	c->long_ok = java_parse_integer(str.s, str.len, PG_INT64_MIN, PG_INT64_MAX,
									&c->i);
	c->int_ok = c->long_ok && c->i >= PG_INT32_MIN && c->i <= PG_INT32_MAX;
	if (c->long_ok)
		c->n_i = int64_to_numeric(c->i);
	c->double_ok = java_parse_double(str.s, str.len, &c->d, &text, &textlen);
	if (c->double_ok)
	{
		c->n_d = decimal_numeric(text, textlen);
		if (c->n_d == NULL)
			c->n_d = DatumGetNumeric(DirectFunctionCall1(float8_numeric,
														 Float8GetDatum(c->d)));
	}
	return n;
}

/* literal(): DECIMAL_LITERAL (createFromDecimal), FLOATING_POINT_LITERAL */
static FNode *
make_number_const(FParser *ps)
{
	FNode	   *n = make_node(FN_CONST, ps->tok.start);
	const char *s = ps->expr + ps->tok.start;
	int			len = ps->tok.len;
	FVal	   *v = &n->value;

	n->is_literal = true;
	v->type = FT_NUMBER;
	v->native = true;
	if (ps->tok.type == TK_DECIMAL)
	{
		if (s[len - 1] == 'l' || s[len - 1] == 'L')
			len--;
		if (!java_parse_integer(s, len, PG_INT64_MIN, PG_INT64_MAX, &v->i))
			filter_error(ps, ps->tok.start, "integer literal out of range",
						 "Integers must be between -9223372036854775807 and 9223372036854775807.");
		v->nkind = (v->i <= PG_INT32_MAX) ? FK_INT : FK_LONG;
		v->num = int64_to_numeric(v->i);
	}
	else
	{
		const char *text;
		int			textlen;
		bool		nonzero = false;

		(void) java_parse_double(s, len, &v->d, &text, &textlen);
		for (int i = 0; i < len && s[i] != 'e' && s[i] != 'E'; i++)
			if (s[i] >= '1' && s[i] <= '9')
				nonzero = true;

		/*
		 * createFloat refuses what overflows to infinity, and what is below
		 * Double.MIN_VALUE: that is a number rounding to zero, but also zero
		 * itself (0.0), which we take.
		 */
		if (isinf(v->d) || (v->d == 0 && nonzero))
			filter_error(ps, ps->tok.start,
						 "floating-point literal out of range", NULL);
		v->nkind = FK_DOUBLE;
		v->num = decimal_numeric(text, textlen);
		if (v->num == NULL)
			v->num = DatumGetNumeric(DirectFunctionCall1(float8_numeric,
														 Float8GetDatum(v->d)));
	}
	filter_advance(ps);
	return n;
}

/* primaryExpr(): literal | variable | "(" orExpression ")" */
static FNode *
parse_primary(FParser *ps)
{
	FNode	   *n;
	int			pos = ps->tok.start;

	switch (ps->tok.type)
	{
		case TK_STRING:
			return make_string_const(parse_string_literal(ps), pos);
		case TK_DECIMAL:
		case TK_FLOAT:
			return make_number_const(ps);
		case TK_TRUE:
		case TK_FALSE:
		case TK_NULL:
			/* BooleanConstantExpression: a literal and a boolean */
			n = make_node(FN_CONST, pos);
			n->is_literal = true;
			n->is_bool = true;
			n->value.type = (ps->tok.type == TK_NULL) ? FT_NULL : FT_BOOL;
			n->value.b = (ps->tok.type == TK_TRUE);
			filter_advance(ps);
			return n;
		case TK_ID:
			n = make_node(FN_PROP, pos);
			n->name.s = pnstrdup(ps->expr + pos, ps->tok.len);
			n->name.len = ps->tok.len;
			n->is_tags = (ps->tok.len == 4 && strncmp(n->name.s, "TAGS", 4) == 0);
			filter_advance(ps);
			return n;
		case TK_LPAREN:
			filter_advance(ps);
			n = parse_or(ps);
			filter_expect(ps, TK_RPAREN);
			return n;
		default:
			filter_unexpected(ps);
	}
}

/*
 * UnaryExpression.negate of a constant, folded.  The result is no literal
 * for the checks (RocketMQ's is a UnaryExpression): "a > -1" is fine,
 * "a between 5 and -1" is not checked.  A string, a boolean or NULL negated
 * is NULL.
 */
static FNode *
fold_negation(FNode *operand, int pos)
{
	FNode	   *n = make_node(FN_CONST, pos);
	const FVal *v = &operand->value;

	n->value.type = FT_NULL;
	if (v->type == FT_NUMBER)
	{
		n->value = *v;
		n->value.num = DatumGetNumeric(DirectFunctionCall1(numeric_uminus,
														   NumericGetDatum(v->num)));
		if (v->nkind == FK_DOUBLE)
			n->value.d = -v->d;
		else
			n->value.i = -v->i;	/* no overflow: literals are not negative */
	}
	return n;
}

static FNode *parse_unary_op(FParser *ps);

/*
 * unaryExpr(): "+" unaryExpr | "-" unaryExpr | NOT unaryExpr | primaryExpr;
 * every nesting (a unary operator, parentheses) passes here and counts
 */
static FNode *
parse_unary(FParser *ps)
{
	FNode	   *n;

	if (++ps->depth > MQ_FILTER_MAX_DEPTH)
		filter_too_deep(ps, ps->tok.start);
	n = parse_unary_op(ps);
	ps->depth--;
	return n;
}

static FNode *
parse_unary_op(FParser *ps)
{
	int			pos = ps->tok.start;
	FNode	   *n;

	check_stack_depth();
	switch (ps->tok.type)
	{
		case TK_PLUS:
			filter_advance(ps);
			return parse_unary(ps);
		case TK_MINUS:
			filter_advance(ps);
			n = parse_unary(ps);
			if (n->kind == FN_CONST)
				return fold_negation(n, pos);
			{
				FNode	   *neg = make_node(FN_NEG, pos);

				neg->left = n;
				return neg;
			}
		case TK_NOT:
			filter_advance(ps);
			n = parse_unary(ps);
			return make_not(as_boolean(ps, n), pos);
		default:
			return parse_primary(ps);
	}
}

/* The string-matching operators after [NOT] */
static FNode *
parse_string_match(FParser *ps, FNode *left, bool negated)
{
	FNodeKind	kind;
	FNode	   *n;

	kind = (ps->tok.type == TK_CONTAINS) ? FN_CONTAINS :
		(ps->tok.type == TK_STARTSWITH) ? FN_STARTSWITH : FN_ENDSWITH;
	filter_advance(ps);
	n = make_node(kind, left->pos);
	n->left = left;
	n->negated = negated;
	n->search = parse_string_literal(ps);
	return n;
}

/* [NOT] IN ( 'a', 'b', ... ): only strings, only on a property */
static FNode *
parse_in(FParser *ps, FNode *left, bool negated, int oppos)
{
	FNode	   *n;
	int			cap = 4;

	if (left->kind != FN_PROP)
		filter_error(ps, oppos, "IN needs a property name on its left", NULL);
	filter_advance(ps);
	filter_expect(ps, TK_LPAREN);
	n = make_node(FN_IN, left->pos);
	n->left = left;
	n->negated = negated;
	n->list = palloc(cap * sizeof(FStr));
	for (;;)
	{
		if (n->nlist == cap)
		{
			cap *= 2;
			n->list = repalloc(n->list, cap * sizeof(FStr));
		}
		n->list[n->nlist++] = parse_string_literal(ps);
		if (ps->tok.type != TK_COMMA)
			break;
		filter_advance(ps);
	}
	filter_expect(ps, TK_RPAREN);
	return n;
}

/*
 * comparisonExpression(): unaryExpr followed by any number of >, >=, <,
 * <=, [NOT] CONTAINS/STARTSWITH/ENDSWITH 'x', [NOT] BETWEEN a AND b,
 * [NOT] IN (...).
 */
static FNode *
parse_comparison(FParser *ps)
{
	FNode	   *left = parse_unary(ps);

	for (;;)
	{
		FTok		t = ps->tok.type;
		int			oppos = ps->tok.start;
		bool		negated = false;

		if (t == TK_GT || t == TK_GE || t == TK_LT || t == TK_LE)
		{
			FNodeKind	kind = (t == TK_GT) ? FN_GT : (t == TK_GE) ? FN_GE :
				(t == TK_LT) ? FN_LT : FN_LE;

			filter_advance(ps);
			left = make_less_than(ps, kind, left, parse_unary(ps));
			continue;
		}
		if (t == TK_NOT)
		{
			FTok		next = filter_peek(ps);

			if (next != TK_CONTAINS && next != TK_STARTSWITH &&
				next != TK_ENDSWITH && next != TK_BETWEEN && next != TK_IN)
				break;
			filter_advance(ps);
			t = next;
			negated = true;
		}
		if (t == TK_CONTAINS || t == TK_STARTSWITH || t == TK_ENDSWITH)
			left = parse_string_match(ps, left, negated);
		else if (t == TK_BETWEEN)
		{
			FNode	   *low;
			FNode	   *high;

			filter_advance(ps);
			low = parse_unary(ps);
			filter_expect(ps, TK_AND);
			high = parse_unary(ps);
			left = make_between(ps, left, low, high, negated);
		}
		else if (t == TK_IN)
			left = parse_in(ps, left, negated, oppos);
		else
			break;
	}
	return left;
}

/* equalityExpression(): = , <>, IS NULL, IS NOT NULL, left to right */
static FNode *
parse_equality(FParser *ps)
{
	FNode	   *left = parse_comparison(ps);

	for (;;)
	{
		int			pos = ps->tok.start;

		if (ps->tok.type == TK_EQ)
		{
			filter_advance(ps);
			left = make_equal(ps, left, parse_comparison(ps), "=");
		}
		else if (ps->tok.type == TK_NE)
		{
			filter_advance(ps);
			left = make_not(make_equal(ps, left, parse_comparison(ps), "<>"),
							left->pos);
		}
		else if (ps->tok.type == TK_IS)
		{
			FNode	   *null = make_node(FN_CONST, pos);
			bool		not = false;

			null->is_literal = true;
			null->is_bool = true;
			null->value.type = FT_NULL;
			filter_advance(ps);
			if (ps->tok.type == TK_NOT)
			{
				not = true;
				filter_advance(ps);
			}
			filter_expect(ps, TK_NULL);
			/* createIsNull: doCreateEqual(left, NULL), without the checks */
			left = make_binary(FN_EQ, left, null);
			if (not)
				left = make_not(left, left->pos);
		}
		else
			break;
	}
	return left;
}

/* andExpression() */
static FNode *
parse_and(FParser *ps)
{
	FNode	   *left = parse_equality(ps);

	while (ps->tok.type == TK_AND)
	{
		FNode	   *right;

		filter_advance(ps);
		right = parse_equality(ps);
		left = as_boolean(ps, left);	/* checked before right, as RocketMQ */
		left = make_binary(FN_AND, left, as_boolean(ps, right));
	}
	return left;
}

/* orExpression() */
static FNode *
parse_or(FParser *ps)
{
	FNode	   *left = parse_and(ps);

	while (ps->tok.type == TK_OR)
	{
		FNode	   *right;

		filter_advance(ps);
		right = parse_and(ps);
		left = as_boolean(ps, left);	/* checked before right, as RocketMQ */
		left = make_binary(FN_OR, left, as_boolean(ps, right));
	}
	return left;
}

/*
 * Refuse a tree deeper than MQ_FILTER_MAX_DEPTH nodes (a long run of AND
 * or OR is parsed without recursion, but builds a deep tree, which the
 * evaluation walks recursively).  Walked with a stack of its own, which
 * never holds more than one node per level and a level more than allowed.
 */
static void
check_tree_depth(const FParser *ps, FNode *root)
{
	typedef struct DepthItem
	{
		const FNode *n;
		int			depth;
	} DepthItem;
	DepthItem  *stack = palloc(sizeof(DepthItem) * (2 * MQ_FILTER_MAX_DEPTH + 4));
	int			top = 0;

	stack[top].n = root;
	stack[top++].depth = 1;
	while (top > 0)
	{
		DepthItem	it = stack[--top];

		if (it.depth > MQ_FILTER_MAX_DEPTH)
			filter_too_deep(ps, it.n->pos);
		if (it.n->right)
		{
			stack[top].n = it.n->right;
			stack[top++].depth = it.depth + 1;
		}
		if (it.n->left)
		{
			stack[top].n = it.n->left;
			stack[top++].depth = it.depth + 1;
		}
	}
	pfree(stack);
}

/*
 * JmsSelector(): the whole expression.  RocketMQ's parser stops after the
 * first complete expression and ignores the rest ("a = 1 b = 2" is
 * "a = 1"); here the rest is a syntax error, since silently dropping a
 * condition the user wrote is worse than refusing it.
 */
static FNode *
parse_selector(const char *expr)
{
	FParser		ps;
	FNode	   *n;

	ps.expr = expr;
	ps.exprlen = strlen(expr);
	ps.depth = 0;
	ps.tok = filter_lex(&ps, 0);
	n = parse_or(&ps);
	if (ps.tok.type != TK_EOF)
		filter_unexpected(&ps);
	n = as_boolean(&ps, n);
	check_tree_depth(&ps, n);
	return n;
}

/* ----------------------------------------------------------------
 *		Evaluation
 * ----------------------------------------------------------------
 */

typedef struct FEvalCtx
{
	JsonbContainer *props;		/* the headers object, NULL if none */
	const char *tag;			/* NULL if none */
	int			taglen;
} FEvalCtx;

static void
set_bool(FVal *v, bool b)
{
	v->type = FT_BOOL;
	v->b = b;
}

static void
set_null(FVal *v)
{
	v->type = FT_NULL;
}

/* A property's value: the tag for TAGS, else the header of that name */
static void
fetch_property(const FNode *n, const FEvalCtx *cx, FVal *out)
{
	JsonbValue	jv;

	memset(out, 0, sizeof(FVal));
	if (n->is_tags)
	{
		if (cx->tag == NULL)
			set_null(out);
		else
		{
			out->type = FT_STRING;
			out->s = cx->tag;
			out->len = cx->taglen;
		}
		return;
	}
	if (cx->props == NULL ||
		getKeyJsonValueFromContainer(cx->props, n->name.s, n->name.len,
									 &jv) == NULL)
	{
		set_null(out);
		return;
	}
	switch (jv.type)
	{
		case jbvString:
			out->type = FT_STRING;
			out->s = jv.val.string.val;
			out->len = jv.val.string.len;
			break;
		case jbvNumeric:
			out->type = FT_NUMBER;
			out->nkind = FK_UNKNOWN;
			out->num = jv.val.numeric;
			break;
		case jbvBool:
			set_bool(out, jv.val.boolean);
			break;
		case jbvNull:
			set_null(out);
			break;
		default:
			out->type = FT_OBJECT;
			break;
	}
}

/* CONTAINS, STARTSWITH, ENDSWITH on bytes (UTF-8 is self-synchronising) */
static bool
string_match(FNodeKind kind, const FVal *v, const FStr *search)
{
	if (search->len > v->len)
		return false;
	if (kind == FN_STARTSWITH)
		return memcmp(v->s, search->s, search->len) == 0;
	if (kind == FN_ENDSWITH)
		return memcmp(v->s + v->len - search->len, search->s, search->len) == 0;
	for (int i = 0; i + search->len <= v->len; i++)
	{
		if (v->s[i] == search->s[0] &&
			memcmp(v->s + i, search->s, search->len) == 0)
			return true;
	}
	return false;
}

/*
 * Evaluate n into *out (a boolean, NULL or a value); false when RocketMQ
 * would throw, which ends the whole evaluation.
 */
static bool
eval_node(const FNode *n, const FEvalCtx *cx, FVal *out)
{
	FVal		lv;
	FVal		rv;
	int			cmp;

	check_stack_depth();
	switch (n->kind)
	{
		case FN_CONST:
			*out = n->value;
			return true;

		case FN_PROP:
			fetch_property(n, cx, out);
			return true;

		case FN_NEG:
			/* UnaryExpression.createNegate: numbers only, else NULL */
			if (!eval_node(n->left, cx, &lv))
				return false;
			if (lv.type != FT_NUMBER)
			{
				set_null(out);
				return true;
			}
			*out = lv;
			out->num = DatumGetNumeric(DirectFunctionCall1(numeric_uminus,
														   NumericGetDatum(lv.num)));
			out->native = false;
			return true;

		case FN_NOT:
			if (!eval_node(n->left, cx, &lv))
				return false;
			if (lv.type == FT_NULL)
				set_null(out);
			else
				set_bool(out, !lv.b);
			return true;

		case FN_BOOLCAST:
			/* createBooleanCast: NULL stays, a non-boolean is FALSE */
			if (!eval_node(n->left, cx, &lv))
				return false;
			if (lv.type == FT_NULL)
				set_null(out);
			else
				set_bool(out, lv.type == FT_BOOL && lv.b);
			return true;

		case FN_AND:
		case FN_OR:
			{
				/* LogicExpression: left first; decided by either side */
				bool		decisive = (n->kind == FN_OR);

				if (!eval_node(n->left, cx, &lv))
					return false;
				if (lv.type == FT_BOOL && lv.b == decisive)
				{
					set_bool(out, decisive);
					return true;
				}
				if (!eval_node(n->right, cx, &rv))
					return false;
				if (rv.type == FT_BOOL && rv.b == decisive)
					set_bool(out, decisive);
				else if (lv.type == FT_NULL || rv.type == FT_NULL)
					set_null(out);
				else
					set_bool(out, !decisive);
				return true;
			}

		case FN_EQ:
			/* doCreateEqual: both sides first, then the NULL rules */
			if (!eval_node(n->left, cx, &lv) || !eval_node(n->right, cx, &rv))
				return false;
			if ((lv.type == FT_NULL) != (rv.type == FT_NULL))
			{
				/* NULL = x is NULL, but x = NULL is FALSE */
				if (lv.type == FT_NULL)
					set_null(out);
				else
					set_bool(out, false);
				return true;
			}
			if (lv.type == FT_NULL)
			{
				set_bool(out, true);
				return true;
			}
			/* an object equals nothing (and is not Comparable) */
			if (lv.type == FT_OBJECT || rv.type == FT_OBJECT)
			{
				set_bool(out, false);
				return true;
			}
			if (!fv_compare(&lv, &rv, &cmp))
				return false;
			set_bool(out, cmp == 0);
			return true;

		case FN_GT:
		case FN_GE:
		case FN_LT:
		case FN_LE:
			/* ComparisonExpression.evaluate; objects fail the Comparable cast */
			if (!eval_node(n->left, cx, &lv) || lv.type == FT_OBJECT)
				return false;
			if (lv.type == FT_NULL)
			{
				set_null(out);
				return true;
			}
			if (!eval_node(n->right, cx, &rv) || rv.type == FT_OBJECT)
				return false;
			if (rv.type == FT_NULL)
			{
				set_null(out);
				return true;
			}
			if (lv.type == FT_STRING && rv.type == FT_STRING)
			{
				/* two strings compare as doubles, or the comparison fails */
				double		ld;
				double		rd;
				const char *text;
				int			textlen;

				if (!java_parse_double(lv.s, lv.len, &ld, &text, &textlen) ||
					!java_parse_double(rv.s, rv.len, &rd, &text, &textlen))
					return false;
				cmp = java_double_cmp(ld, rd);
			}
			else if (!fv_compare(&lv, &rv, &cmp))
				return false;
			switch (n->kind)
			{
				case FN_GT:
					set_bool(out, cmp > 0);
					break;
				case FN_GE:
					set_bool(out, cmp >= 0);
					break;
				case FN_LT:
					set_bool(out, cmp < 0);
					break;
				default:
					set_bool(out, cmp <= 0);
					break;
			}
			return true;

		case FN_IN:
			/* createInExpression: NULL for anything but a string */
			if (!eval_node(n->left, cx, &lv))
				return false;
			if (lv.type != FT_STRING)
			{
				set_null(out);
				return true;
			}
			{
				bool		found = false;

				for (int i = 0; i < n->nlist && !found; i++)
					found = (n->list[i].len == lv.len &&
							 memcmp(n->list[i].s, lv.s, lv.len) == 0);
				set_bool(out, found != n->negated);
			}
			return true;

		case FN_CONTAINS:
		case FN_STARTSWITH:
		case FN_ENDSWITH:
			/*
			 * ContainsExpression and friends: FALSE (never NULL) for an empty
			 * search string, a NULL or a non-string, in both the plain and
			 * the NOT form.
			 */
			if (n->search.len == 0)
			{
				set_bool(out, false);
				return true;
			}
			if (!eval_node(n->left, cx, &lv))
				return false;
			if (lv.type != FT_STRING)
				set_bool(out, false);
			else
				set_bool(out, string_match(n->kind, &lv, &n->search) != n->negated);
			return true;
	}
	return false;					/* not reached */
}

/* ----------------------------------------------------------------
 *		Tag filters
 * ----------------------------------------------------------------
 */

uint32
mq_tag_hash(const char *tag, int taglen)
{
	uint32		h;

	if (tag == NULL || taglen <= 0)
		return MQ_TAG_HASH_NONE;
	h = hash_bytes((const unsigned char *) tag, taglen);
	return (h == MQ_TAG_HASH_NONE) ? 1 : h;
}

static int
ftag_cmp(const void *a, const void *b)
{
	const FTag *x = a;
	const FTag *y = b;

	if (x->hash != y->hash)
		return (x->hash > y->hash) ? 1 : -1;
	if (x->len != y->len)
		return x->len - y->len;
	return memcmp(x->tag, y->tag, x->len);
}

/*
 * FilterAPI.buildSubscriptionData: split on "||", trim, drop empty pieces.
 * (The caller has handled "*" and the empty expression.)  An expression of
 * only separators has no tags and matches nothing, as in RocketMQ.
 */
static void
compile_tags(MqFilter *f, const char *expr)
{
	int			cap = 4;
	const char *p = expr;

	f->tags = palloc(cap * sizeof(FTag));
	for (;;)
	{
		const char *sep = strstr(p, "||");
		const char *s = p;
		int			len = sep ? sep - p : strlen(p);

		java_trim(&s, &len);
		if (len > 0)
		{
			if (f->ntags == cap)
			{
				cap *= 2;
				f->tags = repalloc(f->tags, cap * sizeof(FTag));
			}
			f->tags[f->ntags].tag = pnstrdup(s, len);
			f->tags[f->ntags].len = len;
			f->tags[f->ntags].hash = mq_tag_hash(s, len);
			f->ntags++;
		}
		if (sep == NULL)
			break;
		p = sep + 2;
	}
	qsort(f->tags, f->ntags, sizeof(FTag), ftag_cmp);
}

/* Index of the first tag with this hash (f->ntags if none) */
static int
tag_lower_bound(const MqFilter *f, uint32 hash)
{
	int			lo = 0;
	int			hi = f->ntags;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (f->tags[mid].hash < hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool
tag_filter_match(const MqFilter *f, const char *tag, int taglen)
{
	uint32		h = mq_tag_hash(tag, taglen);

	if (h == MQ_TAG_HASH_NONE)
		return false;
	for (int i = tag_lower_bound(f, h); i < f->ntags && f->tags[i].hash == h; i++)
	{
		if (f->tags[i].len == taglen && memcmp(f->tags[i].tag, tag, taglen) == 0)
			return true;
	}
	return false;
}

/* ----------------------------------------------------------------
 *		Interface
 * ----------------------------------------------------------------
 */

bool
mq_filter_kind_parse(const char *filter_type, MqFilterKind *kind)
{
	if (filter_type == NULL)
		return false;
	if (pg_strcasecmp(filter_type, "tag") == 0)
		*kind = MQ_FILTER_TAG;
	else if (pg_strcasecmp(filter_type, "sql92") == 0)
		*kind = MQ_FILTER_SQL92;
	else
		return false;
	return true;
}

MqFilter *
mq_filter_compile(const char *filter_type, const char *expr, MemoryContext cxt)
{
	MqFilterKind kind;
	MemoryContext fcxt;
	MemoryContext old;
	MqFilter   *f;

	if (!mq_filter_kind_parse(filter_type, &kind))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown filter type \"%s\"",
						filter_type ? filter_type : "(null)"),
				 errhint("The filter type is \"tag\" or \"sql92\".")));

	/*
	 * Build under CurrentMemoryContext, so that an error leaves nothing
	 * behind in cxt, and move the finished filter under cxt.
	 */
	fcxt = AllocSetContextCreate(CurrentMemoryContext, "queue_ext filter",
								 ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(fcxt);
	f = palloc0(sizeof(MqFilter));
	f->cxt = fcxt;
	f->kind = kind;
	f->expr = expr ? pstrdup(expr) : NULL;
	if (expr == NULL)
		f->all = true;
	else if (kind == MQ_FILTER_TAG)
	{
		const char *s = expr;
		int			len = strlen(expr);

		/*
		 * RocketMQ compares the untrimmed expression with "*" and "" (so
		 * " * " is the tag "*" and "  " matches nothing); we trim first.
		 */
		java_trim(&s, &len);
		if (len == 0 || (len == 1 && s[0] == '*'))
			f->all = true;
		else
			compile_tags(f, expr);
	}
	else
		f->root = parse_selector(expr);
	MemoryContextSwitchTo(old);
	MemoryContextSetParent(fcxt, cxt);
	return f;
}

void
mq_filter_free(MqFilter *filter)
{
	if (filter != NULL)
		MemoryContextDelete(filter->cxt);
}

MqFilterResult
mq_filter_eval(const MqFilter *filter, Jsonb *headers, const char *tag,
			   int taglen)
{
	FEvalCtx	cx;
	FVal		v;

	if (filter->all)
		return MQ_FILTER_MATCH;
	if (filter->kind == MQ_FILTER_TAG)
		return tag_filter_match(filter, tag, taglen) ?
			MQ_FILTER_MATCH : MQ_FILTER_NO_MATCH;

	cx.props = NULL;
	if (headers != NULL && JB_ROOT_IS_OBJECT(headers) &&
		!JB_ROOT_IS_SCALAR(headers))
		cx.props = &headers->root;
	cx.tag = tag;
	cx.taglen = (tag != NULL) ? taglen : 0;
	if (!eval_node(filter->root, &cx, &v))
		return MQ_FILTER_ERROR;
	if (v.type == FT_NULL)
		return MQ_FILTER_NULL;
	Assert(v.type == FT_BOOL);
	return v.b ? MQ_FILTER_MATCH : MQ_FILTER_NO_MATCH;
}

MqFilterKind
mq_filter_kind(const MqFilter *filter)
{
	return filter->kind;
}

bool
mq_filter_matches_all(const MqFilter *filter)
{
	return filter->all;
}

const char *
mq_filter_expression(const MqFilter *filter)
{
	return filter->expr;
}

bool
mq_filter_tag_hash_may_match(const MqFilter *filter, uint32 tag_hash)
{
	int			i;

	if (filter->all || filter->kind != MQ_FILTER_TAG)
		return true;
	if (tag_hash == MQ_TAG_HASH_NONE)
		return false;
	i = tag_lower_bound(filter, tag_hash);
	return i < filter->ntags && filter->tags[i].hash == tag_hash;
}
