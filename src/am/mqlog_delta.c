/*-------------------------------------------------------------------------
 *
 * mqlog_delta.c
 *	  Delta encoding of a row's data against the row before it on the same
 *	  page, used in WAL records (mqlog_xlog.c).
 *
 * Consecutive rows of a log are much alike: the same exchange, routing key
 * and headers, the same publish time within a transaction, ids one apart.
 * A row logged as a delta is a sequence of runs against a base (the data
 * of the page's previous row, which redo finds on the page in the same
 * state):
 *
 *		{ varint same; varint lit; lit literal bytes }...
 *
 * "same" bytes are copied from the base at the current position, then "lit"
 * bytes from the record; the row's data ends where the encoding ends.  A
 * varint is one byte below 128, else two (high bit set in the first; rows
 * are shorter than a page).  heap_update's prefix/suffix compression is the
 * same idea restricted to one run at each end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_bitutils.h"

#include "am/mqlog.h"

/* An equal run shorter than this is cheaper left inside a literal */
#define MIN_SAME_RUN	4

static inline char *
put_varint(char *p, Size v)
{
	Assert(v < 0x8000);
	if (v < 0x80)
		*p++ = (char) v;
	else
	{
		*p++ = (char) (0x80 | (v >> 8));
		*p++ = (char) (v & 0xFF);
	}
	return p;
}

static inline bool
get_varint(const char **p, const char *end, Size *v)
{
	uint8		b;

	if (*p >= end)
		return false;
	b = (uint8) *(*p)++;
	if (b < 0x80)
	{
		*v = b;
		return true;
	}
	if (*p >= end)
		return false;
	*v = ((Size) (b & 0x7F) << 8) | (uint8) *(*p)++;
	return true;
}

/* The 8 bytes of data at p XORed with the base's: zero bytes are equal ones */
static inline uint64
xor_word(const char *data, const char *base, Size p)
{
	uint64		a,
				b;

	memcpy(&a, data + p, sizeof(uint64));
	memcpy(&b, base + p, sizeof(uint64));
	return a ^ b;
}

/*
 * The first byte of 8 in memory order that is set in mask (little-endian:
 * the lowest one; a byte of mask is 0 or has bits set)
 */
static inline Size
first_byte(uint64 mask)
{
#ifdef WORDS_BIGENDIAN
	return (63 - pg_leftmost_one_pos64(mask)) / 8;
#else
	return pg_rightmost_one_pos64(mask) / 8;
#endif
}

/* Length of the run of equal bytes at pos (8 bytes at a time) */
static inline Size
same_run(const char *data, Size len, const char *base, Size baselen, Size pos)
{
	Size		max = Min(len, baselen);
	Size		p = pos;

	while (p + sizeof(uint64) <= max)
	{
		uint64		x = xor_word(data, base, p);

		if (x != 0)
			return p + first_byte(x) - pos;
		p += sizeof(uint64);
	}
	while (p < max && data[p] == base[p])
		p++;
	return p - pos;
}

/* Do MIN_SAME_RUN bytes at pos equal the base's? */
static inline bool
worth_a_run(const char *data, Size len, const char *base, Size baselen, Size pos)
{
	uint32		a,
				b;

	StaticAssertStmt(MIN_SAME_RUN == sizeof(uint32), "MIN_SAME_RUN is one uint32");
	if (pos + MIN_SAME_RUN > Min(len, baselen))
		return false;
	memcpy(&a, data + pos, sizeof(uint32));
	memcpy(&b, base + pos, sizeof(uint32));
	return a == b;
}

/*
 * The number of positions from pos on at none of which a run of
 * MIN_SAME_RUN equal bytes can start, found 8 bytes at a time: a run
 * starting at pos + i needs byte pos + i equal to the base's, and a word of
 * the two XORed with no zero byte has no equal byte; in one that has, the
 * first zero byte is the first equal one (the test below can also flag a
 * byte after a zero byte, never one before).  Random bodies, where almost
 * no byte matches, are then skipped at a few instructions per 8 bytes
 * instead of one worth_a_run per byte.
 */
static inline Size
no_run_words(const char *data, Size len, const char *base, Size baselen, Size pos)
{
	Size		max = Min(len, baselen);
	Size		p = pos;

	while (p + sizeof(uint64) <= max)
	{
		uint64		x = xor_word(data, base, p);
		uint64		zero = (x - UINT64CONST(0x0101010101010101)) & ~x &
			UINT64CONST(0x8080808080808080);

		if (zero != 0)
		{
#ifdef WORDS_BIGENDIAN
			/* the lowest address is the most significant byte: exact only below */
			return p - pos;
#else
			return p + first_byte(zero) - pos;
#endif
		}
		p += sizeof(uint64);
	}
	return p - pos;
}

/*
 * Encode data (len bytes) against base into out, which has room for len
 * bytes.  Returns the encoded length, or -1 when the encoding would not be
 * shorter than the data itself (log it plainly then).  Allocates nothing.
 */
int
mqlog_delta_encode(const char *data, Size len, const char *base,
				   Size baselen, char *out)
{
	char	   *p = out;
	char	   *end = out + len;
	Size		pos = 0;

	if (len >= 0x8000 || baselen >= 0x8000)
		return -1;
	while (pos < len)
	{
		Size		same = same_run(data, len, base, baselen, pos);
		Size		litstart = pos + same;
		Size		lit = 0;

		/* the literal runs up to the next MIN_SAME_RUN equal bytes */
		while (litstart + lit < len)
		{
			Size		skip = no_run_words(data, len, base, baselen, litstart + lit);

			lit += skip;
			if (litstart + lit >= len ||
				worth_a_run(data, len, base, baselen, litstart + lit))
				break;
			lit++;
		}
		/* worst case 4 bytes of varints before the literal */
		if (end - p < (ptrdiff_t) (4 + lit))
			return -1;
		p = put_varint(p, same);
		p = put_varint(p, lit);
		memcpy(p, data + litstart, lit);
		p += lit;
		pos = litstart + lit;
	}
	if (p - out >= (ptrdiff_t) len)
		return -1;
	return (int) (p - out);
}

/*
 * Length of the data an encoding decodes to, checking it against the base;
 * -1 if the encoding is malformed.
 */
int
mqlog_delta_decoded_len(const char *enc, Size enclen, Size baselen)
{
	const char *p = enc;
	const char *end = enc + enclen;
	Size		pos = 0;

	while (p < end)
	{
		Size		same,
					lit;

		if (!get_varint(&p, end, &same) || !get_varint(&p, end, &lit))
			return -1;
		if (pos + same > baselen || (Size) (end - p) < lit)
			return -1;
		pos += same + lit;
		p += lit;
	}
	return (int) pos;
}

/* Decode (after mqlog_delta_decoded_len accepted it) into out */
void
mqlog_delta_decode(const char *enc, Size enclen, const char *base, char *out)
{
	const char *p = enc;
	const char *end = enc + enclen;
	Size		pos = 0;

	while (p < end)
	{
		Size		same = 0,
					lit = 0;

		(void) get_varint(&p, end, &same);
		(void) get_varint(&p, end, &lit);
		memcpy(out + pos, base + pos, same);
		pos += same;
		memcpy(out + pos, p, lit);
		pos += lit;
		p += lit;
	}
}
