/*-------------------------------------------------------------------------
 *
 * plan_defaults.h
 *	  A planner hook that puts the DEFAULT arguments of mq functions into
 *	  a call's plan from a per-backend copy (plan_defaults.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_PLAN_DEFAULTS_H
#define MQ_PLAN_DEFAULTS_H

/* Install the planner hook (from _PG_init) */
extern void mq_plan_defaults_init(void);

#endif							/* MQ_PLAN_DEFAULTS_H */
