/*-------------------------------------------------------------------------
 *
 * timers_fire.h
 *	  Firing delayed messages that fell due (the worker's part of timers).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_TIMERS_FIRE_H
#define MQ_TIMERS_FIRE_H

#include "postgres.h"

#include "datatype/timestamp.h"

/*
 * Append the entries of delayed messages that fell due, as their publish
 * would have, limits included, each queue's in a subtransaction; returns
 * the next due time (0: none) and in *fired how many timers it took.
 */
extern TimestampTz mq_fire_due_timers(int *fired);

#endif							/* MQ_TIMERS_FIRE_H */
