/*-------------------------------------------------------------------------
 *
 * purge.h
 *	  Purging a queue (mq.purge).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_PURGE_H
#define MQ_PURGE_H

#include "catalog.h"

/* Settle every ready message of q without dead-lettering; returns how many */
extern int64 mq_purge(MqQueue *q);

#endif							/* MQ_PURGE_H */
