/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Per-backend cache of exchanges, queues, bindings and grants, and the
 *	  lookups in it.
 *
 * The topology lives in ordinary heap tables (mq.cat_*).  Routing a message
 * must not run SQL, so each backend loads the whole topology once into
 * memory (routing structures included) and reloads it only after a change:
 * every change calls mq._topology_changed(), which queues a relcache
 * invalidation of mq.cat_exchange; all backends receive it at commit and
 * mark their cache stale.  Reloading happens only at the start of a SQL
 * entry point (mq_catalog_refresh), so pointers into the cache stay valid
 * for the duration of one call.
 *
 * This file owns the cache: loading, invalidation, lookups by name and id.
 * It does not route (route.c) nor decide privileges (acl.c): both read
 * the cache from above, and nothing here calls them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/memutils.h"
#include "lib/stringinfo.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "catalog.h"
#include "filter.h"
#include "owner.h"

PG_FUNCTION_INFO_V1(mq_topology_changed);

static MemoryContext mq_cache_cxt = NULL;
static bool mq_cache_valid = false;
static bool mq_callback_registered = false;
static Oid	mq_cat_exchange_relid = InvalidOid;
static bool mq_changed_in_xact = false;

static HTAB *mq_queue_by_name = NULL;	/* name -> MqQueue* */

/*
 * The queue found last, by name or id: a publish looks its queue up by
 * name, routes by name (the default exchange), then by id; and the
 * exchange found last by name (every mq.send's is the default exchange).
 * Valid as long as the hashes are (reset with them).
 */
static MqQueue *mq_last_queue = NULL;
static MqExchange *mq_last_exchange = NULL;
static HTAB *mq_queue_by_id_htab = NULL;	/* id -> MqQueue* */
static HTAB *mq_exchange_by_name = NULL;	/* name -> MqExchange* */
static HTAB *mq_exchange_by_id = NULL;	/* id -> MqExchange* */

typedef struct NameEntry
{
	char		name[MQ_NAME_KEYSIZE];
	void	   *ptr;
} NameEntry;

typedef struct IdEntry
{
	int32		id;
	void	   *ptr;
} IdEntry;

/*
 * Relcache callback: any invalidation of mq.cat_exchange (or a full reset)
 * makes the cache stale.
 */
static void
mq_catalog_relcache_cb(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == mq_cat_exchange_relid)
		mq_cache_valid = false;
}

/* Abort of a transaction that changed the topology: forget what it loaded */
static void
mq_catalog_xact_cb(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		if (mq_changed_in_xact)
			mq_cache_valid = false;
		mq_changed_in_xact = false;
	}
	else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE)
		mq_changed_in_xact = false;
}

void
mq_catalog_invalidate(void)
{
	mq_cache_valid = false;
	mq_changed_in_xact = true;
}

/*
 * mq._topology_changed(): called by every function that changes the
 * mq.cat_* tables.
 */
Datum
mq_topology_changed(PG_FUNCTION_ARGS)
{
	CacheInvalidateRelcacheByRelid(mq_internal_relid("cat_exchange"));
	mq_catalog_invalidate();
	PG_RETURN_VOID();
}

/*
 * Relation id of a table in schema mq; errors if the extension is not
 * installed in this database.
 */
/*
 * The relids found are kept (a publish asks for mq.cat_queue's to take a
 * queue's object lock): a few names, forgotten on any relcache
 * invalidation, which dropping or renaming one of these tables sends (as
 * queue_lane.c's cache of lane table relids).
 */
#define MQ_INTERNAL_RELIDS 16

typedef struct InternalRelid
{
	char		name[NAMEDATALEN];
	Oid			relid;
} InternalRelid;

static InternalRelid internal_relids[MQ_INTERNAL_RELIDS];
static int	n_internal_relids = 0;
static bool internal_relids_cb = false;
static uint64 internal_relids_invals = 0;

static void
internal_relids_inval(Datum arg, Oid relid)
{
	n_internal_relids = 0;
	internal_relids_invals++;
}

Oid
mq_internal_relid(const char *relname)
{
	Oid			nsp;
	Oid			relid = InvalidOid;
	uint64		invals = internal_relids_invals;

	for (int i = 0; i < n_internal_relids; i++)
		if (strcmp(internal_relids[i].name, relname) == 0)
			return internal_relids[i].relid;

	nsp = get_namespace_oid(MQ_SCHEMA, true);
	if (OidIsValid(nsp))
		relid = get_relname_relid(relname, nsp);
	if (OidIsValid(relid) && invals == internal_relids_invals &&
		n_internal_relids < MQ_INTERNAL_RELIDS && strlen(relname) < NAMEDATALEN)
	{
		if (!internal_relids_cb)
		{
			CacheRegisterRelcacheCallback(internal_relids_inval, (Datum) 0);
			internal_relids_cb = true;
		}
		strlcpy(internal_relids[n_internal_relids].name, relname, NAMEDATALEN);
		internal_relids[n_internal_relids].relid = relid;
		n_internal_relids++;
	}
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("queue_ext is not installed in this database"),
				 errdetail("Relation \"%s.%s\" does not exist.", MQ_SCHEMA, relname),
				 errhint("Run CREATE EXTENSION queue_ext.")));
	return relid;
}

static HTAB *
make_name_htab(const char *what, long n)
{
	HASHCTL		ctl;

	ctl.keysize = MQ_NAME_KEYSIZE;
	ctl.entrysize = sizeof(NameEntry);
	ctl.hcxt = mq_cache_cxt;
	return hash_create(what, Max(n, 16), &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

static HTAB *
make_id_htab(const char *what, long n)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(int32);
	ctl.entrysize = sizeof(IdEntry);
	ctl.hcxt = mq_cache_cxt;
	return hash_create(what, Max(n, 16), &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

static char *
spi_text(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	if (isnull)
		return NULL;
	return TextDatumGetCString(d);
}

static Jsonb *
spi_jsonb(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	if (isnull)
		return NULL;
	return DatumGetJsonbPCopy(d);
}

char *
mq_jsonb_get_text(Jsonb *args, const char *key)
{
	JsonbValue	k;
	JsonbValue *v;

	if (args == NULL)
		return NULL;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	v = findJsonbValueFromContainer(&args->root, JB_FOBJECT, &k);
	if (v == NULL)
		return NULL;
	if (v->type == jbvString)
		return pnstrdup(v->val.string.val, v->val.string.len);
	if (v->type == jbvNumeric)
		return DatumGetCString(DirectFunctionCall1(numeric_out,
												   NumericGetDatum(v->val.numeric)));
	if (v->type == jbvBool)
		return pstrdup(v->val.boolean ? "true" : "false");
	return NULL;
}

static int64
jsonb_arg_int(Jsonb *args, const char *key, int64 dflt)
{
	char	   *s = mq_jsonb_get_text(args, key);

	return s ? strtoll(s, NULL, 10) : dflt;
}

/*
 * The arguments of a stream queue, checked at declare time by
 * mq._stream_args_check: the retention interval is parsed here as
 * PostgreSQL's interval input does (months as 30 days).
 */
static void
stream_args(MqQueue *q)
{
	char	   *retention = mq_jsonb_get_text(q->arguments, "retention");
	char	   *durability = mq_jsonb_get_text(q->arguments, "durability");

	if (retention)
	{
		Interval   *iv = DatumGetIntervalP(DirectFunctionCall3(interval_in,
															   CStringGetDatum(retention),
															   ObjectIdGetDatum(InvalidOid),
															   Int32GetDatum(-1)));

		q->retention_us = iv->time + (int64) iv->day * USECS_PER_DAY +
			(int64) iv->month * DAYS_PER_MONTH * USECS_PER_DAY;
	}
	q->max_bytes = jsonb_arg_int(q->arguments, "max_bytes", -1);
	q->quorum_durable = durability && strcmp(durability, "quorum") == 0;
}

static int
priv_from_name(const char *s)
{
	if (strcmp(s, "configure") == 0)
		return MQ_PRIV_CONFIGURE;
	if (strcmp(s, "publish") == 0)
		return MQ_PRIV_PUBLISH;
	return MQ_PRIV_CONSUME;
}

static void
acl_add(MqAcl *acl, Oid grantee, int priv)
{
	for (int i = 0; i < acl->ngrants; i++)
	{
		if (acl->grants[i].grantee == grantee)
		{
			acl->grants[i].privs |= priv;
			return;
		}
	}
	if (acl->grants == NULL)
		acl->grants = palloc(sizeof(MqGrant) * 4);
	else if ((acl->ngrants & 3) == 0)
		acl->grants = repalloc(acl->grants, sizeof(MqGrant) * (acl->ngrants + 4));
	acl->grants[acl->ngrants].grantee = grantee;
	acl->grants[acl->ngrants].privs = priv;
	acl->ngrants++;
}

/*
 * The rows of one catalog table, read by catalog_read: each row formed with
 * the named columns only, in the order named (column 1 the first name).
 */
typedef struct CatRows
{
	TupleDesc	desc;
	HeapTuple  *vals;
	uint64		n;
} CatRows;

/*
 * Read the columns cols of every row of catalog table mq.<relname>, with
 * the active snapshot, into the current memory context.  A scan of the
 * heap, not SQL: a session's first call to any entry point loads the whole
 * catalog, and parsing and planning seven queries (the planner opening
 * every index of each table) was most of that load, a quarter of a fresh
 * session's first mq.send_batch.  Columns are found by name, as SQL would
 * (a database upgraded from an older version may have them in another
 * order).  The lock is kept to the end of the transaction, as a query's.
 */
static CatRows
catalog_read(const char *relname, const char *const *cols, int ncols)
{
	Relation	rel = table_open(mq_internal_relid(relname), AccessShareLock);
	TupleDesc	rdesc = RelationGetDescr(rel);
	AttrNumber *attnos = palloc(sizeof(AttrNumber) * ncols);
	AttrNumber	maxatt = 0;
	Datum	   *values = palloc(sizeof(Datum) * ncols);
	bool	   *nulls = palloc(sizeof(bool) * ncols);
	uint64		cap = 16;
	CatRows		rows;
	TableScanDesc scan;
	TupleTableSlot *slot;

	rows.desc = CreateTemplateTupleDesc(ncols);
	for (int i = 0; i < ncols; i++)
	{
		attnos[i] = InvalidAttrNumber;
		for (int a = 0; a < rdesc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(rdesc, a);

			if (!att->attisdropped && strcmp(NameStr(att->attname), cols[i]) == 0)
			{
				attnos[i] = att->attnum;
				break;
			}
		}
		if (attnos[i] == InvalidAttrNumber)
			elog(ERROR, "queue_ext catalog table %s.%s has no column \"%s\"",
				 MQ_SCHEMA, relname, cols[i]);
		TupleDescCopyEntry(rows.desc, i + 1, rdesc, attnos[i]);
		maxatt = Max(maxatt, attnos[i]);
	}
	rows.vals = palloc(sizeof(HeapTuple) * cap);
	rows.n = 0;
	slot = table_slot_create(rel, NULL);
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		slot_getsomeattrs(slot, maxatt);
		for (int i = 0; i < ncols; i++)
		{
			values[i] = slot->tts_values[attnos[i] - 1];
			nulls[i] = slot->tts_isnull[attnos[i] - 1];
		}
		if (rows.n == cap)
		{
			cap *= 2;
			rows.vals = repalloc(rows.vals, sizeof(HeapTuple) * cap);
		}
		rows.vals[rows.n++] = heap_form_tuple(rows.desc, values, nulls);
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	return rows;
}

/* The int4 column col of a row (catalog_read), NOT NULL in the catalog */
static int32
row_int32(CatRows *rows, uint64 i, int col)
{
	bool		isnull;

	return DatumGetInt32(heap_getattr(rows->vals[i], col, rows->desc, &isnull));
}

static int
rows_by_id_cmp(const void *a, const void *b, void *arg)
{
	TupleDesc	desc = (TupleDesc) arg;
	bool		isnull;
	int32		x = DatumGetInt32(heap_getattr(*(HeapTuple *) a, 1, desc, &isnull));
	int32		y = DatumGetInt32(heap_getattr(*(HeapTuple *) b, 1, desc, &isnull));

	return (x > y) - (x < y);
}

/* Sort rows by their first column, an int4 id (ORDER BY id) */
static void
rows_sort_by_id(CatRows *rows)
{
	if (rows->n > 1)
		qsort_arg(rows->vals, rows->n, sizeof(HeapTuple), rows_by_id_cmp, rows->desc);
}

/*
 * The anchor of queue id: the relation mq_storage.a<id> (InvalidOid if
 * there is none), as to_regclass() finds it (one queue: a whole load finds
 * every queue's in one scan, load_anchors)
 */
static Oid
queue_anchor(int32 id)
{
	Oid			nsp = get_namespace_oid("mq_storage", true);
	char		name[NAMEDATALEN];

	if (!OidIsValid(nsp))
		return InvalidOid;
	snprintf(name, sizeof(name), "a%d", id);
	return get_relname_relid(name, nsp);
}

/* The columns of mq.cat_queue that queue_from_row reads, in its order */
static const char *const queue_columns[] = {
	"id", "name", "type", "durable", "arguments", "lanes", "owner", "notify_channel"
};
#define QUEUE_COLUMNS "SELECT id, name, type, durable, arguments, lanes, owner, " \
	"notify_channel FROM mq.cat_queue"

/*
 * The queue of row tup (queue_columns, QUEUE_COLUMNS), made in the cache's
 * context and entered in its hashes by name and id; its anchor is left
 * for the caller to find (load_anchors, queue_anchor)
 */
static MqQueue *
queue_from_row(HeapTuple tup, TupleDesc desc)
{
	MemoryContext old = MemoryContextSwitchTo(mq_cache_cxt);
	MqQueue    *q = palloc0(sizeof(MqQueue));
	bool		isnull;
	ArrayType  *lanes;
	Datum	   *elems;
	int			nelems;
	NameEntry  *ne;
	IdEntry    *ie;
	char	   *type;

	q->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	q->name = spi_text(tup, desc, 2);
	type = spi_text(tup, desc, 3);
	q->type = strcmp(type, "quorum") == 0 ? MQ_QUEUE_QUORUM :
		strcmp(type, "stream") == 0 ? MQ_QUEUE_STREAM : MQ_QUEUE_CLASSIC;
	q->durable = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
	q->arguments = spi_jsonb(tup, desc, 5);
	lanes = DatumGetArrayTypePCopy(SPI_getbinval(tup, desc, 6, &isnull));
	deconstruct_array(lanes, OIDOID, sizeof(Oid), true, TYPALIGN_INT,
					  &elems, NULL, &nelems);
	q->nlanes = nelems;
	q->lanes = palloc(sizeof(Oid) * nelems);
	for (int l = 0; l < nelems; l++)
		q->lanes[l] = DatumGetObjectId(elems[l]);
	q->acl.owner = DatumGetObjectId(SPI_getbinval(tup, desc, 7, &isnull));
	q->anchor = InvalidOid;
	q->notify_channel = spi_text(tup, desc, 8);

	q->message_ttl_ms = jsonb_arg_int(q->arguments, "x-message-ttl", -1);
	q->max_length = jsonb_arg_int(q->arguments, "x-max-length", -1);
	q->max_length_bytes = jsonb_arg_int(q->arguments, "x-max-length-bytes", -1);
	{
		char	   *ord = mq_jsonb_get_text(q->arguments, "ordered");

		q->ordered = ord && strcmp(ord, "true") == 0;
	}
	{
		char	   *ov = mq_jsonb_get_text(q->arguments, "x-overflow");

		q->overflow_dlx = ov && strcmp(ov, "reject-publish-dlx") == 0;
		q->overflow_reject = q->overflow_dlx ||
			(ov && strcmp(ov, "reject-publish") == 0);
	}
	q->dead_letter_exchange = mq_jsonb_get_text(q->arguments, "x-dead-letter-exchange");
	q->dead_letter_routing_key = mq_jsonb_get_text(q->arguments, "x-dead-letter-routing-key");
	/*
	 * RabbitMQ 4: quorum queues have a delivery limit of 20 unless set;
	 * a negative one (-1) means none.
	 */
	q->delivery_limit = (int32) jsonb_arg_int(q->arguments, "x-delivery-limit",
											  q->type == MQ_QUEUE_QUORUM ?
											  MQ_QUORUM_DELIVERY_LIMIT : -1);
	if (q->delivery_limit < 0)
		q->delivery_limit = -1;
	q->retention_us = MQ_STREAM_DEFAULT_RETENTION_US;
	q->max_bytes = -1;
	q->quorum_durable = false;
	if (q->type == MQ_QUEUE_STREAM)
		stream_args(q);
	q->stream = q;

	ne = hash_search(mq_queue_by_name, q->name, HASH_ENTER, NULL);
	ne->ptr = q;
	ie = hash_search(mq_queue_by_id_htab, &q->id, HASH_ENTER, NULL);
	ie->ptr = q;
	MemoryContextSwitchTo(old);
	return q;
}

/*
 * The anchor tables of the queues just loaded: one index scan of pg_class
 * over the names a*, those in mq_storage named a<id> of a queue.  As
 * to_regclass of each, it reads the catalog as our catalog snapshot shows
 * it.
 */
static void
load_anchors(void)
{
	MqStorageScan s;
	Form_pg_class c;
	const char *rest;

	mq_storage_scan_begin(&s, "a", true);
	while ((c = mq_storage_scan_next(&s, &rest)) != NULL)
	{
		char	   *end;
		long		id;
		int32		qid;
		IdEntry    *ie;

		if (rest[0] < '0' || rest[0] > '9')
			continue;
		errno = 0;
		id = strtol(rest, &end, 10);
		if (errno != 0 || *end != '\0' || id <= 0 || id > PG_INT32_MAX)
			continue;
		qid = (int32) id;
		ie = hash_search(mq_queue_by_id_htab, &qid, HASH_FIND, NULL);
		if (ie != NULL)
			((MqQueue *) ie->ptr)->anchor = c->oid;
	}
	mq_storage_scan_end(&s);
}

static void
load_queues(void)
{
	CatRows		rows = catalog_read("cat_queue", queue_columns, lengthof(queue_columns));

	mq_queue_by_name = make_name_htab("mq queues by name", rows.n);
	mq_queue_by_id_htab = make_id_htab("mq queues by id", rows.n);

	for (uint64 i = 0; i < rows.n; i++)
		(void) queue_from_row(rows.vals[i], rows.desc);
	load_anchors();
}

/*
 * Add the queue name, made by this call, to the cache in place, so that
 * the call can use it at once (a consumer group's dead-letter queue, made
 * at the group's first dead letter in the middle of a settlement): nothing
 * of the cache is freed or moved, so the pointers the call holds stay
 * valid, unlike a reload (mq_catalog_refresh), which only the next entry
 * point does.  The queue comes without its grants and consumers; the cache
 * is stale (its maker changed the topology), and the next entry point
 * loads it all.  Read with the latest snapshot, as a reload is: the queue
 * may have been made and committed by another session meanwhile.  NULL if
 * there is no such queue.
 */
MqQueue *
mq_catalog_add_queue(const char *name)
{
	MqOwnerScope owner;
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	MqQueue    *q = mq_queue_lookup(name, true);

	if (q != NULL)
		return q;
	values[0] = CStringGetTextDatum(name);
	PushActiveSnapshot(GetLatestSnapshot());
	mq_owner_enter(&owner);
	mq_owner_exec(QUEUE_COLUMNS " WHERE name OPERATOR(pg_catalog.=) $1",
				  1, types, values, NULL, true, SPI_OK_SELECT, "read its catalog");
	if (SPI_processed == 1)
	{
		q = queue_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
		q->anchor = queue_anchor(q->id);
	}
	mq_owner_leave(&owner);
	PopActiveSnapshot();
	return q;
}

static void
load_exchanges(void)
{
	static const char *const cols[] = {
		"id", "name", "type", "durable", "alternate_exchange", "owner"
	};
	CatRows		rows = catalog_read("cat_exchange", cols, lengthof(cols));

	mq_exchange_by_name = make_name_htab("mq exchanges by name", rows.n);
	mq_exchange_by_id = make_id_htab("mq exchanges by id", rows.n);

	for (uint64 i = 0; i < rows.n; i++)
	{
		HeapTuple	tup = rows.vals[i];
		TupleDesc	desc = rows.desc;
		MemoryContext old = MemoryContextSwitchTo(mq_cache_cxt);
		MqExchange *ex = palloc0(sizeof(MqExchange));
		bool		isnull;
		char	   *type;
		NameEntry  *ne;
		IdEntry    *ie;

		ex->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		ex->name = spi_text(tup, desc, 2);
		type = spi_text(tup, desc, 3);
		if (strcmp(type, "topic") == 0)
			ex->type = MQ_EXCHANGE_TOPIC;
		else if (strcmp(type, "fanout") == 0)
			ex->type = MQ_EXCHANGE_FANOUT;
		else if (strcmp(type, "headers") == 0)
			ex->type = MQ_EXCHANGE_HEADERS;
		else
			ex->type = MQ_EXCHANGE_DIRECT;
		ex->durable = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
		ex->alternate_exchange = spi_text(tup, desc, 5);
		ex->acl.owner = DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull));
		mq_route_set_init(&ex->fanout);
		if (ex->type == MQ_EXCHANGE_TOPIC)
			ex->trie = mq_topic_trie_create(mq_cache_cxt);
		if (ex->type == MQ_EXCHANGE_DIRECT)
		{
			HASHCTL		ctl;

			ctl.keysize = MQ_NAME_KEYSIZE;
			ctl.entrysize = sizeof(MqDirectEntry);
			ctl.hcxt = mq_cache_cxt;
			ex->direct = hash_create("mq direct bindings", 16, &ctl,
									 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
		}

		ne = hash_search(mq_exchange_by_name, ex->name, HASH_ENTER, NULL);
		ne->ptr = ex;
		ie = hash_search(mq_exchange_by_id, &ex->id, HASH_ENTER, NULL);
		ie->ptr = ex;
		MemoryContextSwitchTo(old);
	}
}

static void
load_bindings(void)
{
	static const char *const cols[] = {
		"exchange_id", "queue_id", "binding_key", "arguments"
	};
	CatRows		rows = catalog_read("cat_binding", cols, lengthof(cols));

	for (uint64 i = 0; i < rows.n; i++)
	{
		HeapTuple	tup = rows.vals[i];
		TupleDesc	desc = rows.desc;
		MemoryContext old = MemoryContextSwitchTo(mq_cache_cxt);
		bool		isnull;
		int32		exid = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		int32		qid = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		char	   *key = spi_text(tup, desc, 3);
		IdEntry    *ie = hash_search(mq_exchange_by_id, &exid, HASH_FIND, NULL);
		MqExchange *ex;

		if (ie == NULL)
		{
			MemoryContextSwitchTo(old);
			continue;
		}
		ex = ie->ptr;
		ex->nbindings++;
		switch (ex->type)
		{
			case MQ_EXCHANGE_DIRECT:
				{
					char		k[MQ_NAME_KEYSIZE];
					MqDirectEntry *de;
					bool		found;

					strlcpy(k, key, sizeof(k));
					de = hash_search(ex->direct, k, HASH_ENTER, &found);
					if (!found)
						mq_route_set_init(&de->set);
					mq_route_set_add(&de->set, qid);
					break;
				}
			case MQ_EXCHANGE_TOPIC:
				mq_topic_trie_add(ex->trie, key, qid);
				break;
			case MQ_EXCHANGE_FANOUT:
				mq_route_set_add(&ex->fanout, qid);
				break;
			case MQ_EXCHANGE_HEADERS:
				{
					MqHeadersBinding *hb = palloc(sizeof(MqHeadersBinding));

					hb->arguments = spi_jsonb(tup, desc, 4);
					hb->queue_id = qid;
					ex->headers = lappend(ex->headers, hb);
					break;
				}
		}
		MemoryContextSwitchTo(old);
	}
}

static void
load_grants(void)
{
	static const char *const cols[] = {
		"object_kind", "object_id", "grantee", "privilege"
	};
	CatRows		rows = catalog_read("cat_grant", cols, lengthof(cols));

	for (uint64 i = 0; i < rows.n; i++)
	{
		HeapTuple	tup = rows.vals[i];
		TupleDesc	desc = rows.desc;
		MemoryContext old = MemoryContextSwitchTo(mq_cache_cxt);
		bool		isnull;
		char		kind = DatumGetChar(SPI_getbinval(tup, desc, 1, &isnull));
		int32		objid = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		Oid			grantee = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		int			priv = priv_from_name(spi_text(tup, desc, 4));
		IdEntry    *ie;

		if (kind == 'q')
		{
			ie = hash_search(mq_queue_by_id_htab, &objid, HASH_FIND, NULL);
			if (ie)
				acl_add(&((MqQueue *) ie->ptr)->acl, grantee, priv);
		}
		else
		{
			ie = hash_search(mq_exchange_by_id, &objid, HASH_FIND, NULL);
			if (ie)
				acl_add(&((MqExchange *) ie->ptr)->acl, grantee, priv);
		}
		MemoryContextSwitchTo(old);
	}
}

/*
 * RocketMQ's retry levels (messageDelayLevel 3..18) for a group without
 * retry_delays: 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h
 */
static const int rocketmq_retry_s[] = {
	10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200
};

/*
 * Consumer groups, last: each gets a view of its stream, a copy of the
 * stream's MqQueue (grants and consumers included) with group set.
 */
static void
load_groups(void)
{
	static const char *const cols[] = {
		"id", "queue_id", "name", "mode", "start", "max_retries", "retry_delays",
		"filter", "filter_type", "ordered"
	};
	CatRows		rows = catalog_read("cat_group", cols, lengthof(cols));

	rows_sort_by_id(&rows);

	for (uint64 i = 0; i < rows.n; i++)
	{
		HeapTuple	tup = rows.vals[i];
		TupleDesc	desc = rows.desc;
		MemoryContext old = MemoryContextSwitchTo(mq_cache_cxt);
		bool		isnull;
		int32		qid = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		IdEntry    *ie = hash_search(mq_queue_by_id_htab, &qid, HASH_FIND, NULL);
		bool		nodelays;
		Datum		delays = SPI_getbinval(tup, desc, 7, &nodelays);
		MqQueue    *q;
		MqGroup    *g;

		if (ie == NULL)
		{
			MemoryContextSwitchTo(old);
			continue;
		}
		q = (MqQueue *) ie->ptr;
		g = palloc0(sizeof(MqGroup));
		g->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		g->name = spi_text(tup, desc, 3);
		g->mode = spi_text(tup, desc, 4);
		g->broadcast = strcmp(g->mode, "broadcast") == 0;
		g->start = spi_text(tup, desc, 5);
		g->max_retries = DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull));
		/* NULL retry_delays: none (the query's ARRAY() of them was empty) */
		if (!nodelays)
		{
			Datum	   *elems;
			int			n;

			/* each (date_part('epoch', d) * 1000000)::int8 */
			deconstruct_array(DatumGetArrayTypeP(delays), INTERVALOID, sizeof(Interval),
							  false, TYPALIGN_DOUBLE, &elems, NULL, &n);
			g->nretry_delays = Min(n, MQ_MAX_RETRY_DELAYS);
			for (int k = 0; k < g->nretry_delays; k++)
			{
				float8		s = DatumGetFloat8(DirectFunctionCall2(interval_part,
																   CStringGetTextDatum("epoch"),
																   elems[k]));

				g->retry_delays_us[k] =
					DatumGetInt64(DirectFunctionCall1(dtoi8, Float8GetDatum(s * 1000000.0)));
			}
		}
		if (g->nretry_delays == 0)
		{
			g->nretry_delays = lengthof(rocketmq_retry_s);
			for (int k = 0; k < g->nretry_delays; k++)
				g->retry_delays_us[k] = (int64) rocketmq_retry_s[k] * USECS_PER_SEC;
		}
		g->filter_expr = spi_text(tup, desc, 8);
		g->filter_type = spi_text(tup, desc, 9);
		g->ordered = DatumGetBool(SPI_getbinval(tup, desc, 10, &isnull)) && !isnull;
		g->stream = q;
		g->view = palloc(sizeof(MqQueue));
		memcpy(g->view, q, sizeof(MqQueue));
		g->view->group_id = g->id;
		g->view->group = g;
		g->view->stream = q;
		g->view->groups = NIL;
		/* a group counts its failed deliveries: max_retries is its limit */
		g->view->delivery_limit = g->max_retries;
		g->view->dead_letter_exchange = NULL;
		g->view->dead_letter_routing_key = NULL;
		/* an ordered group gates its message groups (queue_order.c) */
		g->view->ordered = g->ordered;
		q->groups = lappend(q->groups, g);
		MemoryContextSwitchTo(old);
	}
}

/*
 * The consumers of broadcast groups, after the groups: each gets a view, a
 * copy of its group's with group_id its own id.
 */
static void
load_group_consumers(void)
{
	static const char *const cols[] = {"id", "group_id", "consumer"};
	static const char *const group_cols[] = {"id", "queue_id"};
	CatRows		rows = catalog_read("cat_group_consumer", cols, lengthof(cols));
	CatRows		groups = catalog_read("cat_group", group_cols, lengthof(group_cols));

	/* the queue of each consumer's group (a join of the two tables) */
	rows_sort_by_id(&rows);
	rows_sort_by_id(&groups);

	for (uint64 i = 0; i < rows.n; i++)
	{
		HeapTuple	tup = rows.vals[i];
		TupleDesc	desc = rows.desc;
		MemoryContext old = MemoryContextSwitchTo(mq_cache_cxt);
		bool		isnull;
		int32		gid = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		int32		qid = 0;
		IdEntry    *ie = NULL;
		ListCell   *lc;
		uint64		lo = 0,
					hi = groups.n;

		while (lo < hi)
		{
			uint64		mid = lo + (hi - lo) / 2;
			int32		id = row_int32(&groups, mid, 1);

			if (id == gid)
			{
				qid = row_int32(&groups, mid, 2);
				ie = hash_search(mq_queue_by_id_htab, &qid, HASH_FIND, NULL);
				break;
			}
			if (id < gid)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (ie != NULL)
			foreach(lc, ((MqQueue *) ie->ptr)->groups)
			{
				MqGroup    *g = lfirst(lc);
				MqGroupConsumer *c;

				if (g->id != gid)
					continue;
				c = palloc0(sizeof(MqGroupConsumer));
				c->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
				c->name = spi_text(tup, desc, 3);
				c->group = g;
				c->view = palloc(sizeof(MqQueue));
				memcpy(c->view, g->view, sizeof(MqQueue));
				c->view->group_id = c->id;
				g->consumers = lappend(g->consumers, c);
				break;
			}
		MemoryContextSwitchTo(old);
	}
}

MqGroupConsumer *
mq_group_consumer_lookup(MqGroup *g, const char *name)
{
	ListCell   *lc;

	if (name == NULL)
		return NULL;
	foreach(lc, g->consumers)
	{
		MqGroupConsumer *c = lfirst(lc);

		if (strcmp(c->name, name) == 0)
			return c;
	}
	return NULL;
}

struct MqFilter *
mq_group_filter(MqGroup *g)
{
	if (!g->filter_compiled)
	{
		/* checked by group_declare: an error here is the catalog's */
		if (g->filter_expr != NULL)
			g->filter = mq_filter_compile(g->filter_type ? g->filter_type : "tag",
										  g->filter_expr, mq_cache_cxt);
		if (g->filter != NULL && mq_filter_matches_all(g->filter))
		{
			mq_filter_free(g->filter);
			g->filter = NULL;
		}
		g->filter_compiled = true;
	}
	return g->filter;
}

MqGroup *
mq_group_lookup(MqQueue *q, const char *name, bool missing_ok)
{
	ListCell   *lc;

	foreach(lc, q->groups)
	{
		MqGroup    *g = lfirst(lc);

		if (strcmp(g->name, name) == 0)
			return g;
	}
	if (!missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("consumer group \"%s\" of stream \"%s\" does not exist", name, q->name),
				 errhint("Declare it with mq.group_declare().")));
	return NULL;
}

static void
load_consumers(void)
{
	static const char *const cols[] = {"queue_id", "consumer", "prefetch"};
	CatRows		rows = catalog_read("cat_consumer", cols, lengthof(cols));

	for (uint64 i = 0; i < rows.n; i++)
	{
		HeapTuple	tup = rows.vals[i];
		TupleDesc	desc = rows.desc;
		MemoryContext old = MemoryContextSwitchTo(mq_cache_cxt);
		bool		isnull;
		int32		qid = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		IdEntry    *ie = hash_search(mq_queue_by_id_htab, &qid, HASH_FIND, NULL);

		if (ie)
		{
			MqQueue    *q = (MqQueue *) ie->ptr;
			MqConsumerDecl *c = palloc(sizeof(MqConsumerDecl));

			c->name = spi_text(tup, desc, 2);
			c->prefetch = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
			q->consumers = lappend(q->consumers, c);
		}
		MemoryContextSwitchTo(old);
	}
}

int32
mq_consumer_prefetch(MqQueue *q, const char *consumer)
{
	ListCell   *lc;

	if (consumer == NULL)
		return -1;
	foreach(lc, q->consumers)
	{
		MqConsumerDecl *c = lfirst(lc);

		if (strcmp(c->name, consumer) == 0)
			return c->prefetch;
	}
	return -1;
}

/* extversion of queue_ext in pg_extension (palloc'd), NULL if not installed */
char *
mq_extension_version(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("queue_ext"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * The schema must be the one this library was built for: an entry point
 * called in a database still at an older version (new binaries, no ALTER
 * EXTENSION UPDATE yet) would otherwise fail on whatever object changed.
 * Checked only when the cache is (re)built, so it costs nothing per call;
 * while it fails the cache stays invalid and every call checks again.
 */
static void
check_extension_version(void)
{
	char	   *version = mq_extension_version();

	if (version != NULL && strcmp(version, MQ_EXTENSION_VERSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("queue_ext library is version %s but the database has version %s",
						MQ_EXTENSION_VERSION, version),
				 errhint("Run ALTER EXTENSION queue_ext UPDATE.")));
	if (version != NULL)
		pfree(version);
}

/*
 * Reload the whole topology if it changed since we last looked.
 */
void
mq_catalog_refresh(void)
{
	MemoryContext loadcxt;
	MemoryContext oldcxt;

	if (!mq_callback_registered)
	{
		mq_cat_exchange_relid = mq_internal_relid("cat_exchange");
		CacheRegisterRelcacheCallback(mq_catalog_relcache_cb, (Datum) 0);
		RegisterXactCallback(mq_catalog_xact_cb, NULL);
		mq_callback_registered = true;
	}
	else
		AcceptInvalidationMessages();

	if (mq_cache_valid)
		return;

	if (mq_cache_cxt == NULL)
		mq_cache_cxt = AllocSetContextCreate(CacheMemoryContext,
											 "queue_ext topology cache",
											 ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(mq_cache_cxt);
	mq_queue_by_name = mq_queue_by_id_htab = NULL;
	mq_exchange_by_name = mq_exchange_by_id = NULL;
	mq_last_queue = NULL;
	mq_last_exchange = NULL;

	/* the relid may differ after DROP/CREATE EXTENSION */
	mq_cat_exchange_relid = mq_internal_relid("cat_exchange");
	check_extension_version();

	/*
	 * Valid from before the load, so that an invalidation arriving while
	 * we read (a topology change committed meanwhile) makes the next call
	 * load again rather than being lost; and read with the latest
	 * snapshot, not the statement's: an invalidation we have accepted may
	 * be for a change committed after the statement's snapshot was taken,
	 * which that snapshot would not show, and the cache would miss it
	 * until the next change of the topology.
	 */
	mq_cache_valid = true;
	PushActiveSnapshot(GetLatestSnapshot());
	loadcxt = AllocSetContextCreate(CurrentMemoryContext,
									"queue_ext catalog load",
									ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(loadcxt);
	PG_TRY();
	{
		load_queues();
		load_exchanges();
		load_bindings();
		load_grants();
		load_consumers();
		load_groups();
		load_group_consumers();
	}
	PG_CATCH();
	{
		MemoryContextReset(mq_cache_cxt);
		mq_queue_by_name = mq_queue_by_id_htab = NULL;
		mq_exchange_by_name = mq_exchange_by_id = NULL;
		mq_last_queue = NULL;
		mq_last_exchange = NULL;
		mq_cache_valid = false;
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(loadcxt);
	PopActiveSnapshot();
}

MqQueue *
mq_queue_lookup(const char *name, bool missing_ok)
{
	NameEntry  *ne = NULL;

	if (name != NULL && mq_last_queue != NULL && strcmp(mq_last_queue->name, name) == 0)
		return mq_last_queue;
	if (name != NULL && strlen(name) < MQ_NAME_KEYSIZE)
		ne = hash_search(mq_queue_by_name, name, HASH_FIND, NULL);
	if (ne == NULL)
	{
		if (missing_ok)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("queue \"%s\" does not exist", name ? name : "")));
	}
	mq_last_queue = ne->ptr;
	return ne->ptr;
}

MqQueue *
mq_queue_by_id(int32 id)
{
	IdEntry    *ie;

	if (mq_last_queue != NULL && mq_last_queue->id == id)
		return mq_last_queue;
	ie = hash_search(mq_queue_by_id_htab, &id, HASH_FIND, NULL);
	if (ie == NULL)
		return NULL;
	mq_last_queue = ie->ptr;
	return ie->ptr;
}

MqExchange *
mq_exchange_lookup(const char *name, bool missing_ok)
{
	NameEntry  *ne = NULL;

	if (name != NULL && mq_last_exchange != NULL && strcmp(mq_last_exchange->name, name) == 0)
		return mq_last_exchange;
	if (name != NULL && strlen(name) < MQ_NAME_KEYSIZE)
		ne = hash_search(mq_exchange_by_name, name, HASH_FIND, NULL);
	if (ne == NULL)
	{
		if (missing_ok)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("exchange \"%s\" does not exist", name ? name : "")));
	}
	mq_last_exchange = ne->ptr;
	return ne->ptr;
}

/* All queues (palloc'd list of MqQueue*), for the monitoring views */
List *
mq_queue_list(void)
{
	HASH_SEQ_STATUS st;
	IdEntry    *ie;
	List	   *res = NIL;

	hash_seq_init(&st, mq_queue_by_id_htab);
	while ((ie = hash_seq_search(&st)) != NULL)
		res = lappend(res, ie->ptr);
	return res;
}

/*
 * Run "SELECT <fn>($1, ...)" as the extension owner; returns the result as
 * a palloc'd C string in the caller's context (NULL for void/NULL).
 */
char *
mq_run_internal(const char *fn, int nargs, Oid *types, Datum *values, const char *nulls)
{
	StringInfoData sql;
	MqOwnerScope owner;
	char	   *result = NULL;
	MemoryContext callercxt = CurrentMemoryContext;
	int			ret;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s.%s(", MQ_SCHEMA, fn);
	for (int i = 0; i < nargs; i++)
		appendStringInfo(&sql, "%s$%d", i ? ", " : "", i + 1);
	appendStringInfoString(&sql, ")::pg_catalog.text");

	mq_owner_enter(&owner);
	PG_TRY();
	{
		ret = SPI_execute_with_args(sql.data, nargs, types, values, nulls, false, 1);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/*
		 * Report errors of the internal implementation as our own: its
		 * PL/pgSQL context lines mean nothing to the caller.
		 */
		MemoryContextSwitchTo(callercxt);
		edata = CopyErrorData();
		FlushErrorState();
		edata->context = NULL;
		edata->internalquery = NULL;
		ReThrowError(edata);
	}
	PG_END_TRY();
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "%s failed: %s", fn, SPI_result_code_string(ret));
	if (SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v)
			result = MemoryContextStrdup(callercxt, v);
	}
	mq_owner_leave(&owner);
	mq_catalog_invalidate();
	return result;
}

/* Consumer groups belong to stream queues: 42809 for any other queue */
void
mq_groups_need_stream(MqQueue *q)
{
	if (q->type != MQ_QUEUE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("queue \"%s\" is not a stream: consumer groups belong to stream queues",
						q->name),
				 errhint("Competing consumers of a classic or quorum queue share it without a group.")));
}
