/*-------------------------------------------------------------------------
 *
 * owner.h
 *	  Run internal SQL as the extension owner, safely.
 *
 * Every statement queue_ext runs through SPI with the owner's rights goes
 * through mq_owner_enter/mq_owner_leave, which switch the user, pin
 * search_path and mark the operation security-restricted, so that nothing
 * the caller defined (temp types, functions, operators, aggregates in a
 * schema of theirs) can run with the owner's rights.  See
 * docs/architecture.md, "Running as the extension owner".
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_OWNER_H
#define MQ_OWNER_H

#include "postgres.h"

/* What mq_owner_enter saved, for mq_owner_leave to restore */
typedef struct MqOwnerScope
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} MqOwnerScope;

/* The role that owns schema mq (the extension's owner) */
extern Oid	mq_extension_owner(void);

/*
 * Become the extension owner with search_path = pg_catalog, pg_temp and
 * SECURITY_RESTRICTED_OPERATION, then connect SPI.  An error inside is
 * cleaned up by (sub)transaction abort; otherwise call mq_owner_leave.
 */
extern void mq_owner_enter(MqOwnerScope *scope);

/* SPI_finish, reset search_path and the user of mq_owner_enter */
extern void mq_owner_leave(MqOwnerScope *scope);

/*
 * Run one statement (SPI connected by mq_owner_enter); an outcome other
 * than expected is an internal error naming what was being done.
 */
extern void mq_owner_exec(const char *sql, int nargs, Oid *types, Datum *values,
						  const char *nulls, bool read_only, int expected,
						  const char *what);

#endif							/* MQ_OWNER_H */
