/*-------------------------------------------------------------------------
 *
 * durability.c
 *	  The durability of the current transaction's commit (durability.h).
 *
 * The commit of a transaction that published to durable or quorum queues,
 * or settled deliveries of quorum queues, must wait for the WAL flush, or
 * for the synchronous standbys: this raises synchronous_commit for the
 * transaction (SET LOCAL), once per level, and never lowers it.  It is a
 * leaf beside quorum.c, which decides what happens when the standbys are
 * missing; it knows no queue and writes nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/guc.h"

#include "durability.h"
#include "quorum.h"

/* Durability already arranged for the current transaction */
static MqDurability xact_durability = MQ_DURABILITY_DEFAULT;
static TransactionId xact_durability_xid = InvalidTransactionId;


/*
 * Raise synchronous_commit for this transaction so that its COMMIT waits
 * for what the destination queues (or the publisher) ask: local WAL flush,
 * or also the synchronous standbys (quorum; src/quorum.c decides what
 * happens when they are missing).  Never lowers it.
 */
void
mq_require_durability(MqDurability level)
{
	const char *value;
	TransactionId xid = GetTopTransactionIdIfAny();

	if (xact_durability_xid != xid || !TransactionIdIsValid(xid))
	{
		xact_durability = MQ_DURABILITY_DEFAULT;
		xact_durability_xid = xid;
	}
	if (level <= xact_durability)
		return;

	switch (level)
	{
		case MQ_DURABILITY_QUORUM:
			/* errors (53000) when the standbys are missing, or warns */
			value = mq_quorum_require();
			/* remote_apply (or remote_write for a local-only commit) is more */
			if (synchronous_commit >= (strcmp(value, "on") == 0 ?
									   SYNCHRONOUS_COMMIT_REMOTE_FLUSH :
									   SYNCHRONOUS_COMMIT_LOCAL_FLUSH))
			{
				xact_durability = level;
				return;
			}
			break;
		case MQ_DURABILITY_LOCAL:
			if (synchronous_commit >= SYNCHRONOUS_COMMIT_LOCAL_FLUSH)
			{
				xact_durability = level;
				return;
			}
			value = "local";
			break;
		default:
			return;
	}
	(void) set_config_option("synchronous_commit", value, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	xact_durability = level;
}
