/*-------------------------------------------------------------------------
 *
 * annotations.h
 *	  The broker's annotations of a message: sender-selected routing keys
 *	  (CC, BCC) and the properties consumers see without them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_ANNOTATIONS_H
#define MQ_ANNOTATIONS_H

#include "postgres.h"

#include "utils/jsonb.h"

/*
 * Sender-selected distribution: the routing keys of a message published
 * with routing key rk and *headers (rk, then the strings of its CC and BCC
 * arrays); BCC is taken out of *headers.  *annotations receives the
 * properties to store with the message for later routing, the object
 * {"annotations": {"routing-keys": [...], "bcc": [...]}} (NULL when rk is
 * the only key).  A CC or BCC that is not an array raises 22023.
 */
extern int	mq_sender_keys(char *rk, Jsonb **headers, char ***keys,
						   Jsonb **annotations);

/* The routing keys of a stored message: its routing key, CC and BCC */
extern int	mq_message_keys(char *rk, Jsonb *properties, char ***keys);

/*
 * Did the broker dead-letter this message (its x-death headers are the
 * broker's own, not a publisher's)?  The death-history mark of mq._x_death.
 */
extern bool mq_properties_dead_lettered(Jsonb *properties);

/* Properties without the broker's annotations, as consumers see them */
extern Jsonb *mq_properties_public(Jsonb *properties);

#endif							/* MQ_ANNOTATIONS_H */
