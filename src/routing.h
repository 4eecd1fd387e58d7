/*-------------------------------------------------------------------------
 *
 * routing.h
 *	  Routing matchers: topic binding keys (a trie of words) and headers
 *	  bindings, with RabbitMQ's semantics.
 *
 * Everything here is pure computation over C strings and jsonb values; no
 * catalog access.  The exchange code builds an MqTopicTrie per topic
 * exchange from its bindings and asks it for the destinations of each
 * routing key; headers exchanges test each binding with mq_headers_match().
 *
 *-------------------------------------------------------------------------
 */
#ifndef ROUTING_H
#define ROUTING_H

#include "postgres.h"

#include "utils/jsonb.h"
#include "utils/palloc.h"

/* AMQP 0-9-1 shortstr limit that applies to routing and binding keys */
#define MQ_ROUTING_KEY_MAX_BYTES 255

/*
 * Most '#' words a topic binding key may hold (RabbitMQ's
 * MAX_HASH_WILDCARDS): each one multiplies the work of routing.
 */
#define MQ_TOPIC_MAX_HASH_WILDCARDS 2

/*
 * A set of destination ids (no duplicates), palloc'd in the memory context
 * that was current at mq_route_set_init().  Read n and ids[0..n-1]; the
 * other fields are private.  A zeroed struct is not valid: call init.
 */
typedef struct MqRouteSet
{
	int			n;				/* number of ids */
	int			cap;			/* allocated length of ids */
	int32	   *ids;			/* ids, in insertion order (see sort) */
	int			nslots;			/* private: size of slots (0 = no hash) */
	int32	   *slots;			/* private: open-addressing index into ids */
} MqRouteSet;

extern void mq_route_set_init(MqRouteSet *set);
extern void mq_route_set_add(MqRouteSet *set, int32 id);
extern bool mq_route_set_contains(const MqRouteSet *set, int32 id);
extern void mq_route_set_sort(MqRouteSet *set);

/* Topic exchanges: a trie of binding key words (routing_topic.c) */
typedef struct MqTopicTrie MqTopicTrie;

extern MqTopicTrie *mq_topic_trie_create(MemoryContext cxt);
extern void mq_topic_trie_add(MqTopicTrie *trie, const char *binding_key,
							  int32 dest_id);
extern void mq_topic_trie_match(const MqTopicTrie *trie,
								const char *routing_key, MqRouteSet *out);
extern bool mq_topic_match(const char *binding_key, const char *routing_key);
extern void mq_topic_validate_binding_key(const char *binding_key);

/* Length check shared by every exchange type (routing_topic.c) */
extern void mq_routing_key_check(const char *key, const char *what);

/* Headers exchanges (routing_headers.c) */
extern void mq_headers_validate_binding(Jsonb *arguments);
extern bool mq_headers_match(Jsonb *binding_arguments, Jsonb *headers);

#endif							/* ROUTING_H */
