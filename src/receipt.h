/*-------------------------------------------------------------------------
 *
 * receipt.h
 *	  Receipts: the token mq.consume hands out with each delivery, with
 *	  which any session holding the consume privilege settles or extends
 *	  that delivery within its lease (SQS's receipt handle, pgmq's msg_id
 *	  and visibility timeout, RocketMQ 5's receipt handle).
 *
 * A receipt names the queue, the consumer state (a consumer group or a
 * broadcast consumer of a stream, 0: the queue's own), the message and the
 * 64-bit random nonce of that one delivery, kept with its lease in shared
 * memory (src/queue/): a later delivery of the message has another nonce,
 * so a late receipt never settles it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_RECEIPT_H
#define MQ_RECEIPT_H

#include "postgres.h"

typedef struct MqReceipt
{
	int32		queue_id;
	int32		state_id;		/* MqQueue.group_id of the consumer state */
	int64		msg_id;
	uint64		nonce;
} MqReceipt;

/* The text of a receipt (palloc'd) */
extern char *mq_receipt_format(const MqReceipt *r);

/* Parse a receipt's text: 22P02 when it is not one */
extern void mq_receipt_parse(const char *text, MqReceipt *r);

#endif							/* MQ_RECEIPT_H */
