/*-------------------------------------------------------------------------
 *
 * half.h
 *	  Transactional (half) messages and their check-back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_HALF_H
#define MQ_HALF_H

#include "postgres.h"

/* GUC mq.check_timeout: longest a check function may run, ms */
extern int	mq_check_timeout;

/* Define the settings of transactional messages (from _PG_init) */
extern void mq_half_init(void);

/* Ask producers about undecided half messages; returns how many checked */
extern int	mq_half_check_due(void);

/* Delete decided half messages an hour after the decision */
extern void mq_half_cleanup(void);

#endif							/* MQ_HALF_H */
