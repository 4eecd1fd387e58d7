/*-------------------------------------------------------------------------
 *
 * owner.c
 *	  Run internal SQL as the extension owner, safely.
 *
 * queue_ext's private tables belong to the extension owner and ordinary
 * roles cannot read them; the C entry points check queue_ext's own
 * privileges and then run their internal SQL as the owner.  Doing that
 * under the caller's search_path would let the caller decide what an
 * unqualified name in that SQL means: a domain pg_temp.text (types are
 * looked up in pg_temp first), an aggregate count(*) or an operator = in a
 * schema the caller puts first.  Any of those would then run with the
 * owner's rights.  So the switch to the owner happens here only, and it
 * always pins search_path to "pg_catalog, pg_temp" in a new GUC nest level
 * and adds SECURITY_RESTRICTED_OPERATION, as PostgreSQL does for code it
 * runs on behalf of a table's owner (VACUUM, REFRESH MATERIALIZED VIEW).
 * The SQL text itself also schema-qualifies what it uses.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "mqutils.h"
#include "owner.h"

/* The path internal SQL runs under: nothing the caller can create first */
#define MQ_OWNER_SEARCH_PATH "pg_catalog, pg_temp"

Oid
mq_extension_owner(void)
{
	static Oid	owner = InvalidOid;
	static Oid	owner_db = InvalidOid;

	if (!OidIsValid(owner) || owner_db != MyDatabaseId)
	{
		Oid			nsp = get_namespace_oid(MQ_SCHEMA, false);
		HeapTuple	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for namespace %u", nsp);
		owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
		owner_db = MyDatabaseId;
		ReleaseSysCache(tup);
	}
	return owner;
}

void
mq_owner_enter(MqOwnerScope *scope)
{
	Oid			owner = mq_extension_owner();

	GetUserIdAndSecContext(&scope->save_userid, &scope->save_sec_context);
	SetUserIdAndSecContext(owner, scope->save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	scope->save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", MQ_OWNER_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
mq_owner_leave(MqOwnerScope *scope)
{
	SPI_finish();
	AtEOXact_GUC(false, scope->save_nestlevel);
	SetUserIdAndSecContext(scope->save_userid, scope->save_sec_context);
}

void
mq_owner_exec(const char *sql, int nargs, Oid *types, Datum *values,
			  const char *nulls, bool read_only, int expected, const char *what)
{
	int			ret = SPI_execute_with_args(sql, nargs, types, values, nulls,
											read_only, 0);

	if (ret != expected)
		elog(ERROR, "queue_ext could not %s: %s", what, SPI_result_code_string(ret));
}
