/*-------------------------------------------------------------------------
 *
 * acl.c
 *	  Privileges on queues and exchanges (see acl.h).
 *
 * A queue's or exchange's owner, members of its role and superusers hold
 * every privilege; others hold what mq.grant gave them or PUBLIC.  This
 * file only decides from the grants the topology cache holds: it loads
 * nothing, runs no SQL and changes nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/acl.h"

#include "mqutils.h"
#include "acl.h"

/* The name of privilege priv, as mq.grant spells it */
const char *
mq_priv_name(int priv)
{
	switch (priv)
	{
		case MQ_PRIV_CONFIGURE:
			return "configure";
		case MQ_PRIV_PUBLISH:
			return "publish";
		default:
			return "consume";
	}
}

/*
 * Does the current user hold priv on an object with this acl?  Superusers
 * and members of the owner role hold everything.
 */
bool
mq_acl_allows(const MqAcl *acl, int priv)
{
	Oid			user = GetUserId();

	if (superuser_arg(user) || has_privs_of_role(user, acl->owner))
		return true;
	for (int i = 0; i < acl->ngrants; i++)
	{
		if ((acl->grants[i].privs & priv) == 0)
			continue;
		if (acl->grants[i].grantee == InvalidOid ||
			has_privs_of_role(user, acl->grants[i].grantee))
			return true;
	}
	return false;
}

/*
 * May the current user see queue q (its row, counters, consumer groups and
 * partitions) in the monitoring views and the functions behind them
 * (mq.queues, mq.metrics, mq.consumer_groups, mq.stream_partitions)?  When
 * it holds some privilege on the queue (configure, publish or consume; its
 * owner and superusers hold all), as RabbitMQ shows a user only the vhosts
 * it may use, or has the privileges of pg_read_all_stats (members of
 * pg_monitor do), as PostgreSQL shows other sessions' statistics.
 */
bool
mq_queue_visible(MqQueue *q)
{
	return has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) ||
		mq_acl_allows(&q->acl, MQ_PRIV_CONFIGURE | MQ_PRIV_PUBLISH | MQ_PRIV_CONSUME);
}

void
mq_check_queue_privilege(MqQueue *q, int priv)
{
	if (!mq_acl_allows(&q->acl, priv))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s queue \"%s\"", mq_priv_name(priv), q->name),
				 errhint("The queue's owner can run mq.grant('%s', 'queue', '%s', role).",
						 mq_priv_name(priv), q->name)));
}

void
mq_check_exchange_privilege(MqExchange *ex, int priv)
{
	if (!mq_acl_allows(&ex->acl, priv))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s exchange \"%s\"", mq_priv_name(priv), ex->name),
				 errhint("The exchange's owner can run mq.grant('%s', 'exchange', '%s', role).",
						 mq_priv_name(priv), ex->name)));
}

/*
 * Creating new queues and exchanges needs CREATE on schema mq (or
 * superuser), as creating tables needs CREATE on a schema.
 */
void
mq_check_create_privilege(const char *kind, const char *name)
{
	Oid			nsp = get_namespace_oid(MQ_SCHEMA, false);

	if (pg_namespace_aclcheck(nsp, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create %s \"%s\"", kind, name),
				 errhint("Creating queues and exchanges needs CREATE on schema mq.")));
}
