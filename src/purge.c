/*-------------------------------------------------------------------------
 *
 * purge.c
 *	  Purging a queue: every ready message taken and settled as dropped.
 *
 * It takes from queue state and settles through the one settling sequence
 * (mq_settle_deliveries, publish.h), so the records and floors are written
 * as for any other settlement; it checks no privilege (the entry point
 * does) and dead-letters nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "publish.h"
#include "purge.h"
#include "queue/queue.h"

/*
 * Purge: settle every ready message of q, without dead-lettering (as
 * RabbitMQ's queue.purge).  Returns how many.
 */
int64
mq_purge(MqQueue *q)
{
	int64		total = 0;
	MqDelivery *dl = palloc(sizeof(MqDelivery) * 1000);

	for (;;)
	{
		int			got = mq_queue_take(q, 1000, 0, MQ_TAKE_DROP_HEAD, NULL, 0, dl);

		for (int i = 0; i < got; i++)
			dl[i].dead = false;
		total += mq_settle_deliveries(q, dl, got, MQ_SETTLE_DROPPED, 0);
		if (got < 1000)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(dl);
	return total;
}
