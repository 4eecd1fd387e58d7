/*-------------------------------------------------------------------------
 *
 * filter.h
 *	  Server-side message filters of consumer groups, with RocketMQ's
 *	  semantics: tag expressions ("TagA || TagB", "*") and SQL92 selectors
 *	  over a message's headers and its tag.
 *
 * A filter is parsed and checked once (mq_filter_compile, which raises
 * 42601 with the character position of a bad expression) and evaluated
 * many times (mq_filter_eval).  Everything here is pure computation over
 * C strings and jsonb values: no catalog access, no SPI.  The grammar and
 * the semantics, and where they differ from RocketMQ, are in docs/api.md
 * ("Filters").
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_FILTER_H
#define MQ_FILTER_H

#include "postgres.h"

#include "utils/jsonb.h"
#include "utils/palloc.h"

/*
 * Deepest nesting of an sql92 filter: unary operators and parentheses
 * inside each other, and nodes on a path of its tree (a run of N terms
 * joined by AND or OR is N + 1 deep).  mq_filter_compile refuses more
 * with 54001, so that every filter it accepts can be evaluated (a
 * consumer group's filter at every consume).
 */
#define MQ_FILTER_MAX_DEPTH 1000

/* A compiled filter (private; see filter.c) */
typedef struct MqFilter MqFilter;

typedef enum MqFilterKind
{
	MQ_FILTER_TAG,				/* filter_type 'tag' */
	MQ_FILTER_SQL92				/* filter_type 'sql92' */
} MqFilterKind;

/*
 * The outcome of evaluating a filter for one message.  Only MATCH lets the
 * message through: a selector that is null-valued for the message, or whose
 * evaluation fails (a string that is not a number compared with a number),
 * does not match, as in RocketMQ.  Tag filters give MATCH or NO_MATCH.
 */
typedef enum MqFilterResult
{
	MQ_FILTER_NO_MATCH = 0,
	MQ_FILTER_MATCH = 1,
	MQ_FILTER_NULL = 2,			/* the selector's value is NULL */
	MQ_FILTER_ERROR = 3			/* evaluation failed (RocketMQ: an exception) */
} MqFilterResult;

/* The tag hash of a message without a tag (NULL or empty) */
#define MQ_TAG_HASH_NONE	((uint32) 0)

/*
 * filter_type 'tag' or 'sql92' (case-insensitive); false for anything
 * else.  mq_filter_compile raises 22023 for those itself.
 */
extern bool mq_filter_kind_parse(const char *filter_type, MqFilterKind *kind);

/*
 * Parse and check expr (NULL: no filter, every message matches).  The
 * result lives in its own memory context, a child of cxt, so that a caller
 * can keep it as long as cxt lives (a consumer group's lifetime) or free it
 * with mq_filter_free.  Errors: 22023 for an unknown filter_type, 42601
 * for a bad expression (the message says the character where it is wrong),
 * 54001 for an expression nested deeper than MQ_FILTER_MAX_DEPTH.
 * Nothing is left behind in cxt on error.
 */
extern MqFilter *mq_filter_compile(const char *filter_type, const char *expr,
								   MemoryContext cxt);
extern void mq_filter_free(MqFilter *filter);

/*
 * Evaluate filter for a message with these headers (a jsonb object, NULL
 * for none; a non-object counts as none) and tag (taglen bytes, not
 * necessarily NUL-terminated; NULL for none).  Allocates nothing in the
 * common cases (see filter.c); when it does, in CurrentMemoryContext.
 */
extern MqFilterResult mq_filter_eval(const MqFilter *filter, Jsonb *headers,
									 const char *tag, int taglen);

extern MqFilterKind mq_filter_kind(const MqFilter *filter);
/* True when the filter lets every message through (NULL, '', '*') */
extern bool mq_filter_matches_all(const MqFilter *filter);
/* The expression text the filter was compiled from (NULL if none) */
extern const char *mq_filter_expression(const MqFilter *filter);

/*
 * Tag hashes, to store with a queue entry so that a tag filter can skip
 * entries without reading their message.  mq_tag_hash gives
 * MQ_TAG_HASH_NONE for no tag and never for a tag.
 * mq_filter_tag_hash_may_match is false only when no message with that tag
 * hash can match: a collision lets a message through to mq_filter_eval,
 * never drops one.  It is always true for SQL92 filters.
 */
extern uint32 mq_tag_hash(const char *tag, int taglen);
extern bool mq_filter_tag_hash_may_match(const MqFilter *filter,
										 uint32 tag_hash);

#endif							/* MQ_FILTER_H */
