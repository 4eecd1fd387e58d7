/*-------------------------------------------------------------------------
 *
 * route.h
 *	  Routing dispatch: which queues a message published to an exchange
 *	  reaches (queue ids in an MqRouteSet, routing.h).  Reads the topology
 *	  cache, writes nothing.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_ROUTE_H
#define MQ_ROUTE_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "catalog.h"

/*
 * Route one message by all its routing keys (its routing key first, then
 * its CC and BCC keys), following alternate exchanges when none matched;
 * with check_privileges, the publisher must hold publish on ex.
 */
extern void mq_route_message(MqExchange *ex, char **keys, int nkeys,
							 Jsonb *headers, bool check_privileges,
							 MqRouteSet *set);

/*
 * Would a message with these routing keys and headers reach a queue now?
 * Writes nothing; privileges are the caller's to check.
 */
extern bool mq_route_reaches_queue(MqExchange *ex, char **keys, int nkeys,
								   Jsonb *headers);

#endif							/* MQ_ROUTE_H */
