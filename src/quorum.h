/*-------------------------------------------------------------------------
 *
 * quorum.h
 *	  Whether a quorum commit can be confirmed now: the synchronous
 *	  standbys configured and connected, what a quorum publish or ack does
 *	  when there are too few (mq.quorum_unavailable), and the server-wide
 *	  record of commits made without a quorum.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_QUORUM_H
#define MQ_QUORUM_H

#include "postgres.h"

#include "datatype/timestamp.h"

/* mq.quorum_unavailable */
typedef enum MqQuorumUnavailable
{
	MQ_QUORUM_UNAVAILABLE_ERROR,	/* fail the publish/ack (53000) */
	MQ_QUORUM_UNAVAILABLE_WAIT	/* PostgreSQL's own: COMMIT waits */
} MqQuorumUnavailable;

extern int	mq_quorum_unavailable;

/* What mq.replication's summary shows */
typedef struct MqQuorumState
{
	int			required;		/* sync standbys a commit waits for; 0: none
								 * configured */
	int			connected;		/* of the configured ones, streaming now */
	bool		met;			/* required > 0 && connected >= required */
	int64		commits_without_quorum; /* since server start */
	TimestampTz without_quorum_since;	/* 0: not now */
} MqQuorumState;

/* Settings and shared memory (from _PG_init) */
extern void mq_quorum_init(void);

/* The synchronous standbys, as this backend's configuration sees them */
extern void mq_quorum_state(MqQuorumState *st);

/*
 * This transaction publishes or acks on a quorum queue.  With
 * mq.quorum_unavailable = error, errors (53000) unless enough synchronous
 * standbys are connected, and checks again just before COMMIT.  Returns
 * the synchronous_commit the transaction needs: "on", or "local" when no
 * synchronous standby is configured and the mode is wait (warned once per
 * condition, server-wide, and counted at commit).
 */
extern const char *mq_quorum_require(void);

/*
 * A consume of quorum queue "queue" read messages: wait, before they are
 * handed out, until the synchronous standbys have every commit that became
 * visible before they confirmed it (its wait for them ended early: a
 * cancel, a terminate, the postmaster's death).  Returns at once normally.
 */
extern void mq_quorum_wait_delivered(const char *queue);

/*
 * A queue whose commits need a quorum was declared: a WARNING, with the
 * remedy, when they would all fail (no synchronous standby configured and
 * mq.quorum_unavailable = error).
 */
extern void mq_quorum_declare_check(const char *queue);

#endif							/* MQ_QUORUM_H */
