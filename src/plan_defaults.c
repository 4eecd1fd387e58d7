/*-------------------------------------------------------------------------
 *
 * plan_defaults.c
 *	  The DEFAULT arguments of mq functions, put into a call's plan without
 *	  reading them from the catalog again.
 *
 * A call that leaves out arguments with defaults (mq.send(q, body) leaves
 * out fifteen) gets them from pg_proc.proargdefaults twice: the parser
 * reads them to pick the function, and the planner reads them again to
 * insert them (expand_function_arguments), each time decompressing and
 * parsing their node text.  That second read was a quarter of the
 * instructions of a single-message publish
 * (bench/results/2026-12-01-stream-publish-profile.md).  A planner hook inserts them first,
 * from a copy parsed once per backend: the same nodes the planner would
 * insert, at the same place, so the plan is the one it would have made.
 *
 * Only functions of schema mq are handled, only where they are called
 * at the top of a SELECT (complete_query), and only calls the planner
 * would complete by appending the trailing defaults: not calls in named
 * notation, not variadic calls, not functions with polymorphic arguments
 * or result (whose argument coercions the planner checks again after the
 * insertion).  Anything else is left to the planner as it is.  The copies
 * are dropped on any invalidation of pg_proc (a CREATE OR REPLACE that
 * changes a default) or of pg_namespace.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "access/transam.h"
#include "optimizer/planner.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "mqutils.h"
#include "plan_defaults.h"

/* A function seen in a plan: whether it is handled, and its defaults */
typedef struct FuncDefaults
{
	Oid			funcid;			/* hash key */
	bool		handled;		/* an mq function whose calls we complete */
	int			nargs;			/* pronargs */
	List	   *defaults;		/* its proargdefaults, parsed (defaults_cxt) */
} FuncDefaults;

#define FUNC_DEFAULTS_MAX 4096

static planner_hook_type prev_planner_hook = NULL;
static MemoryContext defaults_cxt = NULL;
static HTAB *func_defaults = NULL;
static bool defaults_reset = false;

static void
defaults_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	defaults_reset = true;
}

/* What we know of function funcid (looked up and parsed on first sight) */
static FuncDefaults *
func_defaults_get(Oid funcid)
{
	FuncDefaults *fd;
	bool		found;
	HeapTuple	tup;

	if (func_defaults == NULL || defaults_reset ||
		hash_get_num_entries(func_defaults) >= FUNC_DEFAULTS_MAX)
	{
		HASHCTL		ctl;

		if (defaults_cxt == NULL)
		{
			defaults_cxt = AllocSetContextCreate(CacheMemoryContext,
												 "queue_ext function defaults",
												 ALLOCSET_SMALL_SIZES);
			CacheRegisterSyscacheCallback(PROCOID, defaults_inval, (Datum) 0);
			CacheRegisterSyscacheCallback(NAMESPACEOID, defaults_inval, (Datum) 0);
		}
		else
			MemoryContextReset(defaults_cxt);
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(FuncDefaults);
		ctl.hcxt = defaults_cxt;
		func_defaults = hash_create("queue_ext function defaults", 64, &ctl,
									HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		defaults_reset = false;
	}

	fd = hash_search(func_defaults, &funcid, HASH_ENTER, &found);
	if (found)
		return fd;
	fd->handled = false;
	fd->nargs = 0;
	fd->defaults = NIL;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tup);
		bool		handled;

		handled = proc->pronargdefaults > 0 &&
			!OidIsValid(proc->provariadic) &&
			!IsPolymorphicType(proc->prorettype) &&
			proc->pronamespace == get_namespace_oid(MQ_SCHEMA, true);
		for (int i = 0; handled && i < proc->pronargs; i++)
			handled = !IsPolymorphicType(proc->proargtypes.values[i]);
		if (handled)
		{
			bool		isnull;
			Datum		d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proargdefaults,
											&isnull);

			if (!isnull)
			{
				char	   *str = TextDatumGetCString(d);
				MemoryContext old = MemoryContextSwitchTo(defaults_cxt);
				List	   *defaults = castNode(List, stringToNode(str));

				MemoryContextSwitchTo(old);
				pfree(str);
				if (list_length(defaults) == proc->pronargdefaults)
				{
					fd->handled = true;
					fd->nargs = proc->pronargs;
					fd->defaults = defaults;
				}
			}
		}
		ReleaseSysCache(tup);
	}
	return fd;
}

/*
 * Append the defaults a positional call of an mq function leaves out, as
 * add_function_defaults would (a new list: the input list is not changed)
 */
static void
complete_call(FuncExpr *fexpr)
{
	int			nargs = list_length(fexpr->args);
	FuncDefaults *fd;
	ListCell   *lc;
	int			ndelete;

	if (fexpr->funcvariadic)
		return;
	foreach(lc, fexpr->args)
	{
		if (IsA(lfirst(lc), NamedArgExpr))
			return;
	}
	fd = func_defaults_get(fexpr->funcid);
	if (!fd->handled || nargs >= fd->nargs)
		return;
	ndelete = nargs + list_length(fd->defaults) - fd->nargs;
	if (ndelete < 0)
		return;					/* the planner says what is wrong */
	fexpr->args = list_concat_copy(fexpr->args,
								   copyObject(list_copy_tail(fd->defaults, ndelete)));
}

/*
 * Complete the calls of a SELECT's target list and FROM functions that are
 * function calls themselves: the forms mq functions are called in
 * (SELECT mq.send(...), SELECT ... FROM mq.consume(...), PERFORM).  Calls
 * anywhere else, or nested in other expressions, are left to the planner,
 * which inserts their defaults as always: looking at them all would cost
 * every query a walk of its whole tree.  Built-in functions are not
 * looked up (no mq function has an OID below FirstNormalObjectId).
 */
static void
complete_query(Query *parse)
{
	ListCell   *lc;

	if (parse->commandType != CMD_SELECT)
		return;
	foreach(lc, parse->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->expr && IsA(tle->expr, FuncExpr) &&
			((FuncExpr *) tle->expr)->funcid >= FirstNormalObjectId)
			complete_call((FuncExpr *) tle->expr);
	}
	foreach(lc, parse->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		ListCell   *fc;

		if (rte->rtekind != RTE_FUNCTION)
			continue;
		foreach(fc, rte->functions)
		{
			RangeTblFunction *rtf = lfirst_node(RangeTblFunction, fc);

			if (rtf->funcexpr && IsA(rtf->funcexpr, FuncExpr) &&
				((FuncExpr *) rtf->funcexpr)->funcid >= FirstNormalObjectId)
				complete_call((FuncExpr *) rtf->funcexpr);
		}
	}
}

static PlannedStmt *
plan_defaults_planner(Query *parse, const char *query_string, int cursorOptions,
					  ParamListInfo boundParams)
{
	complete_query(parse);
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

void
mq_plan_defaults_init(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = plan_defaults_planner;
}
