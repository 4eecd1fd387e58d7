/*-------------------------------------------------------------------------
 *
 * acl.h
 *	  Privileges on queues and exchanges: does the current user hold a
 *	  grant, and the errors of the entry points when it does not.
 *
 * The grants themselves (MqAcl, MQ_PRIV_*) are loaded by the topology
 * cache (catalog.h); this only reads them, and runs no SQL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_ACL_H
#define MQ_ACL_H

#include "catalog.h"

/* Does the current user hold priv (MQ_PRIV_*) on an object with acl? */
extern bool mq_acl_allows(const MqAcl *acl, int priv);

/* May the current user see q in the monitoring views? */
extern bool mq_queue_visible(MqQueue *q);

/* 42501 unless the current user holds priv on q, or on ex */
extern void mq_check_queue_privilege(MqQueue *q, int priv);
extern void mq_check_exchange_privilege(MqExchange *ex, int priv);

/* 42501 unless the current user may create queues and exchanges */
extern void mq_check_create_privilege(const char *kind, const char *name);

/* The name of privilege priv, as mq.grant spells it */
extern const char *mq_priv_name(int priv);

#endif							/* MQ_ACL_H */
