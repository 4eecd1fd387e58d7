/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  Per-backend cache of the broker's topology: exchanges, queues,
 *	  bindings and grants, loaded from the mq.cat_* tables and
 *	  invalidated whenever they change, and the lookups in it.
 *
 * The cache only holds and finds things: routing a message through it is
 * route.h's, checking a grant it holds is acl.h's (both above it).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_CATALOG_H
#define MQ_CATALOG_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/hsearch.h"
#include "datatype/timestamp.h"
#include "utils/jsonb.h"

#include "routing.h"

typedef enum MqExchangeType
{
	MQ_EXCHANGE_DIRECT,
	MQ_EXCHANGE_TOPIC,
	MQ_EXCHANGE_FANOUT,
	MQ_EXCHANGE_HEADERS
} MqExchangeType;

/* x-delivery-limit of a quorum queue that sets none (RabbitMQ 4) */
#define MQ_QUORUM_DELIVERY_LIMIT 20

typedef enum MqQueueType
{
	MQ_QUEUE_CLASSIC,
	MQ_QUEUE_QUORUM,
	MQ_QUEUE_STREAM				/* partitioned log: a lane per partition */
} MqQueueType;

/* Defaults of a stream queue's arguments */
#define MQ_STREAM_DEFAULT_RETENTION_US	((int64) 72 * USECS_PER_HOUR)

/* Privileges on queues and exchanges (bit mask) */
#define MQ_PRIV_CONFIGURE	0x01
#define MQ_PRIV_PUBLISH		0x02
#define MQ_PRIV_CONSUME		0x04

typedef struct MqGrant
{
	Oid			grantee;		/* InvalidOid = PUBLIC */
	int			privs;
} MqGrant;

typedef struct MqAcl
{
	Oid			owner;
	int			ngrants;
	MqGrant    *grants;
} MqAcl;

/*
 * Quorum queues have message priorities without x-max-priority, as
 * RabbitMQ 4.3's (rabbit_fifo_pq): 32 levels, 0..31, higher first, FIFO
 * within a level; larger priorities count as 31, and a message without a
 * priority has priority 4.  Each level is a lane, created with the queue.
 */
#define MQ_QUORUM_LANES				32
#define MQ_QUORUM_DEFAULT_PRIORITY	4

typedef struct MqQueue
{
	int32		id;
	char	   *name;
	MqQueueType type;
	bool		durable;
	int			nlanes;			/* 1 + x-max-priority; quorum: 32; stream:
								 * partitions */
	Oid		   *lanes;			/* first entry log of each lane: identifies the queue */
	Oid			anchor;			/* the relation whose lock is the queue's
								 * (mq_storage.a<id>); InvalidOid for a
								 * queue declared before there were any:
								 * its object lock */
	int64		message_ttl_ms; /* -1: none */
	int64		max_length;		/* -1: unlimited */
	int64		max_length_bytes;	/* ready body bytes; -1: unlimited */
	bool		overflow_reject;	/* reject-publish(-dlx) rather than drop-head */
	bool		overflow_dlx;	/* reject-publish-dlx: refused ones dead-lettered */
	bool		ordered;		/* "ordered": a message group in order, one at a
								 * time */
	char	   *dead_letter_exchange;	/* NULL: none */
	char	   *dead_letter_routing_key;	/* NULL: keep the message's */
	int32		delivery_limit; /* -1: unlimited */
	/* streams: retention by time and bytes, durability of publishes */
	int64		retention_us;	/* retention (default 72 hours) */
	int64		max_bytes;		/* body bytes per partition; -1: unlimited */
	bool		quorum_durable; /* "durability": "quorum" */
	Jsonb	   *arguments;
	char	   *notify_channel; /* mq.queue_notify: NOTIFYed by the worker
								 * when it makes a message ready; NULL: none */
	MqAcl		acl;
	List	   *consumers;		/* of MqConsumerDecl (mq.consumer_declare) */

	/*
	 * Streams: their consumer groups (of MqGroup).  A group's queue state
	 * is addressed through its own MqQueue, a copy of the stream's with
	 * group set (MqGroup.view): group NULL, group_id 0 is the queue itself.
	 */
	List	   *groups;
	int32		group_id;		/* 0: the queue itself */
	struct MqGroup *group;		/* NULL: the queue itself */
	struct MqQueue *stream;		/* a group's view: its stream, else itself */
	void	   *state_hint;		/* the queue's shared state where src/queue/
								 * last found it (checked before use) */
} MqQueue;

/* Most retry delays a consumer group may declare */
#define MQ_MAX_RETRY_DELAYS 32

/*
 * A consumer group of a stream (mq.group_declare): a cursor with
 * per-message leases over the stream's partitions.
 */
typedef struct MqGroup
{
	int32		id;
	char	   *name;
	char	   *mode;			/* clustering or broadcast */
	bool		broadcast;		/* mode broadcast: every consumer name gets
								 * every message */
	char	   *start;
	int32		max_retries;	/* failed deliveries before the DLQ */
	int			nretry_delays;
	int64		retry_delays_us[MQ_MAX_RETRY_DELAYS];
	char	   *filter_expr;	/* NULL: no filter */
	char	   *filter_type;	/* tag or sql92 */
	bool		ordered;		/* ordered => true: one message at a time per
								 * message_group, in partition order */
	struct MqFilter *filter;	/* compiled on first use (mq_group_filter) */
	bool		filter_compiled;
	MqQueue    *stream;
	MqQueue    *view;			/* the stream as this group's queue state */
	List	   *consumers;		/* broadcast: of MqGroupConsumer, by id */
} MqGroup;

/*
 * A consumer of a broadcast group (mq.cat_group_consumer, made at its first
 * mq.consume): a queue state of its own, like a clustering group's, reached
 * through view (a copy of the group's view with group_id = id, group still
 * the group: its filter, retries and DLQ apply).  The ids come from the
 * groups' sequence, so group_id never names two states.
 */
typedef struct MqGroupConsumer
{
	int32		id;
	char	   *name;
	MqGroup    *group;
	MqQueue    *view;
} MqGroupConsumer;

/* Consumer name of broadcast group g (NULL: none yet) */
extern MqGroupConsumer *mq_group_consumer_lookup(MqGroup *g, const char *name);

/* The dead-letter queue of consumer group name: "%DLQ%<name>" */
#define MQ_GROUP_DLQ_PREFIX "%DLQ%"

/*
 * The compiled filter of g (NULL: every message matches), compiled on first
 * use into the catalog cache's memory context, so it lives and goes with
 * the cache entry and is compiled again after the catalog reloads
 */
extern struct MqFilter *mq_group_filter(MqGroup *g);

/* Group name of stream q (NULL if missing_ok and there is none) */
extern MqGroup *mq_group_lookup(MqQueue *q, const char *name, bool missing_ok);

/* A declared consumer of a queue: its prefetch (0: unlimited) */
typedef struct MqConsumerDecl
{
	char	   *name;
	int32		prefetch;
} MqConsumerDecl;

/* Declared prefetch of consumer on q, or -1 if it was not declared */
extern int32 mq_consumer_prefetch(MqQueue *q, const char *consumer);

typedef struct MqHeadersBinding
{
	Jsonb	   *arguments;
	int32		queue_id;
} MqHeadersBinding;

/* Longest name or direct binding key the cache's hash tables hold, + 1 */
#define MQ_NAME_KEYSIZE 256

/* An entry of MqExchange.direct: a binding key and the queues it reaches */
typedef struct MqDirectEntry
{
	char		key[MQ_NAME_KEYSIZE];
	MqRouteSet	set;
} MqDirectEntry;

typedef struct MqExchange
{
	int32		id;
	char	   *name;
	MqExchangeType type;
	bool		durable;
	char	   *alternate_exchange; /* NULL: none */
	MqAcl		acl;
	int			nbindings;
	/* routing structures, by type */
	HTAB	   *direct;			/* of MqDirectEntry, by binding key */
	MqTopicTrie *trie;
	MqRouteSet	fanout;
	List	   *headers;		/* of MqHeadersBinding */
} MqExchange;

/*
 * The version of the extension's SQL objects this library reads and writes:
 * default_version in queue_ext.control (the Makefile checks they agree).
 * Between a binary upgrade and ALTER EXTENSION queue_ext UPDATE a database
 * holds an older schema: the entry points refuse it (mq_catalog_refresh) and
 * the background worker leaves it alone until it is updated.
 */
#define MQ_EXTENSION_VERSION "0.2"

/* extversion of queue_ext in this database (palloc'd), NULL if none */
extern char *mq_extension_version(void);

/* Bring the cache up to date; call at the start of every SQL entry point */
extern void mq_catalog_refresh(void);

/* Mark the cache stale (after this backend changed the topology) */
extern void mq_catalog_invalidate(void);

extern MqQueue *mq_queue_lookup(const char *name, bool missing_ok);
extern MqQueue *mq_queue_by_id(int32 id);
extern MqQueue *mq_catalog_add_queue(const char *name);
extern MqExchange *mq_exchange_lookup(const char *name, bool missing_ok);
extern List *mq_queue_list(void);

/* Consumer groups belong to stream queues: 42809 for any other queue */
extern void mq_groups_need_stream(MqQueue *q);

/*
 * Run "SELECT mq.<fn>($1, ...)" as the extension owner; returns the result
 * as text (NULL for void) and marks the topology cache stale.
 */
extern char *mq_run_internal(const char *fn, int nargs, Oid *types,
							 Datum *values, const char *nulls);

/*
 * The value of key in a jsonb object, as text (strings and numbers), or
 * NULL when absent or of another type.
 */
extern char *mq_jsonb_get_text(Jsonb *obj, const char *key);

/* Relation ids of internal tables, looked up once per backend */
extern Oid	mq_internal_relid(const char *relname);

#endif							/* MQ_CATALOG_H */
