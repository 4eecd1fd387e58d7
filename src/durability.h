/*-------------------------------------------------------------------------
 *
 * durability.h
 *	  How durable this transaction's commit must be: asked for by publish,
 *	  consume, settle and half messages, arranged once per transaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_DURABILITY_H
#define MQ_DURABILITY_H

/* Durability a publish asks for (mq.publish's durability property) */
typedef enum MqDurability
{
	MQ_DURABILITY_DEFAULT = -1,
	MQ_DURABILITY_ASYNC = 0,
	MQ_DURABILITY_LOCAL = 1,
	MQ_DURABILITY_QUORUM = 2
} MqDurability;

/* Make this transaction's commit at least as durable as level */
extern void mq_require_durability(MqDurability level);

#endif							/* MQ_DURABILITY_H */
