/*-------------------------------------------------------------------------
 *
 * route.c
 *	  Routing dispatch: the queues a message published to an exchange
 *	  reaches, by the exchange's type, its routing keys and headers, and
 *	  its alternate exchanges.
 *
 * The routing structures are built by the topology cache (catalog.c) and
 * matched by the routing matchers (routing_topic.c, routing_headers.c);
 * this file picks the one for the exchange's type.  It returns queue ids
 * and writes nothing: storing the message and its entries is the
 * publisher's (publish.c), which calls down into here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "acl.h"
#include "catalog.h"
#include "route.h"

/*
 * Route a message: add the ids of the queues it goes to (without following
 * the alternate exchange, which the publisher handles) to out.
 */
static void
mq_route(MqExchange *ex, const char *routing_key, Jsonb *headers, MqRouteSet *out)
{
	ListCell   *lc;

	/* The default exchange routes to the queue named by the routing key */
	if (ex->name[0] == '\0')
	{
		MqQueue    *q = mq_queue_lookup(routing_key, true);

		if (q)
			mq_route_set_add(out, q->id);
		return;
	}

	switch (ex->type)
	{
		case MQ_EXCHANGE_DIRECT:
			if (strlen(routing_key) < MQ_NAME_KEYSIZE)
			{
				MqDirectEntry *de = hash_search(ex->direct, routing_key, HASH_FIND, NULL);

				if (de)
					for (int i = 0; i < de->set.n; i++)
						mq_route_set_add(out, de->set.ids[i]);
			}
			break;
		case MQ_EXCHANGE_TOPIC:
			mq_topic_trie_match(ex->trie, routing_key, out);
			break;
		case MQ_EXCHANGE_FANOUT:
			for (int i = 0; i < ex->fanout.n; i++)
				mq_route_set_add(out, ex->fanout.ids[i]);
			break;
		case MQ_EXCHANGE_HEADERS:
			foreach(lc, ex->headers)
			{
				MqHeadersBinding *hb = lfirst(lc);

				if (mq_headers_match(hb->arguments, headers))
					mq_route_set_add(out, hb->queue_id);
			}
			break;
	}
}

/*
 * Route one message by all its routing keys (the union of the queues each
 * one reaches, as RabbitMQ's rabbit_exchange:route), following alternate
 * exchanges, up to 8, when none matched.
 */
void
mq_route_message(MqExchange *ex, char **keys, int nkeys, Jsonb *headers,
				 bool check_privileges, MqRouteSet *set)
{
	int			hops = 0;

	while (ex)
	{
		if (check_privileges && ex->name[0] != '\0' && hops == 0)
			mq_check_exchange_privilege(ex, MQ_PRIV_PUBLISH);
		/* a headers exchange looks at the headers only: route once */
		for (int k = 0; k < (ex->type == MQ_EXCHANGE_HEADERS ? 1 : nkeys); k++)
			mq_route(ex, keys[k], headers, set);
		if (set->n > 0 || ex->alternate_exchange == NULL || ++hops > 8)
			break;
		ex = mq_exchange_lookup(ex->alternate_exchange, true);
	}
}

/*
 * Would a message with these routing keys and headers reach a queue now,
 * routed as a publish routes it (alternate exchanges followed)?  Nothing
 * is written; privileges are the caller's to check.
 */
bool
mq_route_reaches_queue(MqExchange *ex, char **keys, int nkeys, Jsonb *headers)
{
	MqRouteSet	set;

	mq_route_set_init(&set);
	mq_route_message(ex, keys, nkeys, headers, false, &set);
	for (int i = 0; i < set.n; i++)
		if (mq_queue_by_id(set.ids[i]) != NULL)
			return true;
	return false;
}
