/*-------------------------------------------------------------------------
 *
 * receipt.c
 *	  The text form of receipts: 48 hexadecimal digits, the queue id (8),
 *	  the consumer state id (8), the message id (16) and the delivery's
 *	  nonce (16).  Opaque to users; fixed length, so that a truncated or
 *	  altered copy is refused rather than misread.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "receipt.h"

#define MQ_RECEIPT_LEN 48

char *
mq_receipt_format(const MqReceipt *r)
{
	char	   *s = palloc(MQ_RECEIPT_LEN + 1);

	snprintf(s, MQ_RECEIPT_LEN + 1, "%08x%08x%016llx%016llx",
			 (uint32) r->queue_id, (uint32) r->state_id,
			 (unsigned long long) r->msg_id, (unsigned long long) r->nonce);
	return s;
}

/* The value of the hexadecimal digits s[0..n-1]; false if one is not */
static bool
hex_value(const char *s, int n, uint64 *v)
{
	*v = 0;
	for (int i = 0; i < n; i++)
	{
		char		c = s[i];
		int			d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		*v = (*v << 4) | (uint64) d;
	}
	return true;
}

void
mq_receipt_parse(const char *text, MqReceipt *r)
{
	uint64		qid,
				sid,
				mid,
				nonce;

	if (strlen(text) != MQ_RECEIPT_LEN ||
		!hex_value(text, 8, &qid) || !hex_value(text + 8, 8, &sid) ||
		!hex_value(text + 16, 16, &mid) || !hex_value(text + 32, 16, &nonce) ||
		nonce == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid receipt: \"%s\"", text),
				 errdetail("A receipt is the receipt column of a row mq.consume returned, %d hexadecimal digits.",
						   MQ_RECEIPT_LEN)));
	r->queue_id = (int32) (uint32) qid;
	r->state_id = (int32) (uint32) sid;
	r->msg_id = (int64) mid;
	r->nonce = nonce;
}
