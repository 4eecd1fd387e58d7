/*-------------------------------------------------------------------------
 *
 * publish.c
 *	  Publish path: route, store the message once in the log, append one
 *	  entry per destination queue, and make the commit as durable as the
 *	  destinations require.  Also what publishing and settling call each
 *	  other for: length limits and drop-head overflow, dead-lettering
 *	  (which republishes) and the settling sequence.
 *
 * Publishing happens inside the caller's transaction: the "confirm" is its
 * COMMIT, and routing to several queues is all-or-nothing with it.
 *
 * This file owns that recursion (publish -> drop heads -> settle ->
 * dead-letter -> publish) and the steps of mq_publish.  It calls down to
 * routing (route.c), the message log (msglog.c), queue state (src/queue/)
 * and storage, never up: the entry points convert SQL arguments, and what
 * needs none of the recursion lives elsewhere: what a publish builds
 * (publish_entry.c), durability.c, purge.c, timers_fire.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "mqutils.h"
#include "acl.h"
#include "annotations.h"
#include "args.h"
#include "owner.h"
#include "am/mqlog.h"
#include "msglog.h"
#include "filter.h"
#include "publish.h"
#include "route.h"
#include "queue/queue.h"
#include "timers.h"

/* GUCs */
int			mq_dedup_window = 5 * 60 * 1000;	/* mq.dedup_window, ms */


/* Settings of publishing (from _PG_init) */
void
mq_publish_init(void)
{
	DefineCustomIntVariable("mq.dedup_window",
							"How long a publish dedup_id is remembered.",
							NULL,
							&mq_dedup_window, 5 * 60 * 1000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
}

/* Per destination queue and lane: the entries to append */
typedef struct Dest
{
	MqQueue    *q;
	int			n;
	int			cap;
	int		   *msg_index;		/* which message */
	int		   *lane;
} Dest;

/* q's entry in dests, or NULL */
static Dest *
dest_find(Dest *dests, int ndests, MqQueue *q)
{
	for (int i = 0; i < ndests; i++)
		if (dests[i].q == q)
			return &dests[i];
	return NULL;
}

static Dest *
dest_for(Dest **dests, int *ndests, MqQueue *q)
{
	Dest	   *d = dest_find(*dests, *ndests, q);

	if (d)
		return d;
	*dests = *ndests == 0 ? palloc(sizeof(Dest) * 8) :
		((*ndests % 8) == 0 ? repalloc(*dests, sizeof(Dest) * (*ndests + 8)) : *dests);
	(*dests)[*ndests].q = q;
	(*dests)[*ndests].n = 0;
	(*dests)[*ndests].cap = 16;
	(*dests)[*ndests].msg_index = palloc(sizeof(int) * 16);
	(*dests)[*ndests].lane = palloc(sizeof(int) * 16);
	return &(*dests)[(*ndests)++];
}

static void
dest_add(Dest *d, int msg_index, int lane)
{
	if (d->n == d->cap)
	{
		d->cap *= 2;
		d->msg_index = repalloc(d->msg_index, sizeof(int) * d->cap);
		d->lane = repalloc(d->lane, sizeof(int) * d->cap);
	}
	d->msg_index[d->n] = msg_index;
	d->lane[d->n] = lane;
	d->n++;
}

/* qsort order of destinations: by queue id */
static int
dest_cmp_queue_id(const void *a, const void *b)
{
	int32		qa = ((const Dest *) a)->q->id;
	int32		qb = ((const Dest *) b)->q->id;

	return (qa > qb) - (qa < qb);
}

/* Has q a length limit (and so do its publishers take turns)? */
bool
mq_queue_limited(MqQueue *q)
{
	return q->max_length >= 0 || q->max_length_bytes >= 0;
}

/*
 * reject-publish: the publish that would take q over one of its limits
 * fails whole (RabbitMQ nacks it; here the error is the nack, and the
 * transaction's other publishes go with it).
 */
static void
reject_over_limit(Dest *dst, bytea **bodies)
{
	MqQueue    *q = dst->q;
	int64		ready_bytes;
	int64		ready = mq_queue_ready_bytes_for_publish(q, &ready_bytes);
	int64		adding = 0;

	if (q->max_length >= 0 && ready + dst->n > q->max_length)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("queue \"%s\" is full", q->name),
				 errdetail("It holds its x-max-length of " INT64_FORMAT " ready messages and x-overflow is reject-publish.",
						   q->max_length)));
	if (q->max_length_bytes < 0)
		return;
	for (int e = 0; e < dst->n; e++)
		adding += mq_body_size(bodies[dst->msg_index[e]]);
	if (ready_bytes + adding > q->max_length_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("queue \"%s\" is full", q->name),
				 errdetail("Its ready messages hold " INT64_FORMAT " body bytes, the publish adds " INT64_FORMAT ", x-max-length-bytes is " INT64_FORMAT " and x-overflow is reject-publish.",
						   ready_bytes, adding, q->max_length_bytes)));
}

/*
 * Does one more message of size body bytes fit q's limits with *ready
 * messages of *ready_bytes body bytes ready, as RabbitMQ's queue checks
 * each publish?  If it does, it counts in them.
 */
bool
mq_limits_admit_one(MqQueue *q, int64 *ready, int64 *ready_bytes, int32 size)
{
	if ((q->max_length >= 0 && *ready + 1 > q->max_length) ||
		(q->max_length_bytes >= 0 && *ready_bytes + size > q->max_length_bytes))
		return false;
	(*ready)++;
	*ready_bytes += size;
	return true;
}

/* A message that a reject-publish-dlx queue refused */
typedef struct Refused
{
	MqQueue    *q;
	int			msg_index;
} Refused;

/*
 * reject-publish-dlx: take the messages of dst that fit, in order, each
 * one checked as RabbitMQ's queue process checks a publish (one more
 * message, its body bytes more); the others are taken off dst and added to
 * refused[], to be dead-lettered once they are stored.
 */
static void
refuse_over_limit(Dest *dst, bytea **bodies, Refused **refused, int *nrefused)
{
	MqQueue    *q = dst->q;
	int64		ready_bytes;
	int64		ready = mq_queue_ready_bytes_for_publish(q, &ready_bytes);
	int			k = 0;

	for (int e = 0; e < dst->n; e++)
	{
		if (!mq_limits_admit_one(q, &ready, &ready_bytes, mq_body_size(bodies[dst->msg_index[e]])))
		{
			if (*nrefused == 0)
				*refused = palloc(sizeof(Refused) * 8);
			else if (*nrefused % 8 == 0)
				*refused = repalloc(*refused, sizeof(Refused) * (*nrefused + 8));
			(*refused)[*nrefused].q = q;
			(*refused)[*nrefused].msg_index = dst->msg_index[e];
			(*nrefused)++;
			continue;
		}
		dst->msg_index[k] = dst->msg_index[e];
		dst->lane[k] = dst->lane[e];
		k++;
	}
	dst->n = k;
}

/*
 * drop-head overflow: dead-letter the oldest ready messages of q (reason
 * maxlen) until it is within x-max-length and x-max-length-bytes.  The
 * count tells at once how many must go; for bytes, heads go one at a time
 * until the rest fits (a body larger than the limit goes too, as in
 * RabbitMQ).  All are taken first, then settled together.
 */
static void
drop_heads(MqQueue *q)
{
	MqDelivery *dl = NULL;
	int			ndl = 0;
	int			cap = 0;

	for (;;)
	{
		int64		ready_bytes;
		int64		ready = mq_queue_ready_bytes_for_publish(q, &ready_bytes);
		int64		excess = q->max_length >= 0 ? ready - q->max_length : 0;
		int			got;

		if (q->max_length_bytes >= 0 && ready_bytes > q->max_length_bytes)
			excess = Max(excess, 1);
		if (excess <= 0)
			break;
		if (ndl + excess > cap)
		{
			cap = ndl + (int) excess;
			dl = dl ? repalloc(dl, sizeof(MqDelivery) * cap) :
				palloc(sizeof(MqDelivery) * cap);
		}
		/* taken dead, reason maxlen */
		got = mq_queue_take(q, (int) excess, 0, MQ_TAKE_DROP_HEAD, NULL, 0, dl + ndl);
		ndl += got;
		if (got < excess || q->max_length_bytes < 0)
			break;				/* nothing more to take, or the count is met */
		CHECK_FOR_INTERRUPTS();
	}
	if (ndl > 0)
	{
		(void) mq_settle_deliveries(q, dl, ndl, 0, 0);
		pfree(dl);
	}
}

/*
 * Publish one message to one lane of q, the message and its entry as one
 * WAL record.  The message goes to the log, the entry to queue state:
 * neither knows the other, and this is the one place that takes their
 * locks together, in the order
 *		the segment opened (a full one is replaced by DDL first), then
 *		the queue's gen_lock -> the log page -> the entry page.
 * Returns the message id.
 */
static int64
publish_linked(MqQueue *q, int lane, MqMessage *msg, MqEntry *entry, bool durable)
{
	int64		segno;
	Relation	seg = mq_log_open_append(durable, &segno);
	MqQueueLink link;
	MqlogLinkedRow rows[2];

	mq_queue_link_begin(q, lane, &link);
	mq_log_link_reserve(seg, segno, msg, &rows[0]);
	entry->msg_id = msg->msg_id;
	mq_queue_link_reserve(&link, entry, &rows[1]);
	mqlog_linked_write(rows, 2);
	mq_queue_link_end(&link, &rows[1]);
	mq_log_link_done(seg, msg, &rows[0]);
	table_close(seg, NoLock);
	return msg->msg_id;
}

/*
 * Publish one message to a lane of stream q, kept in its entry row
 * (inline, queue.h): one row and one WAL record, and no message log page.
 * False, having written nothing, when the lane's write generation cannot
 * carry messages (an entry log from before inline messages): the caller
 * stores it in the log.
 */
static bool
publish_inline(MqQueue *q, int lane, MqMessage *msg, MqEntry *entry)
{
	MqQueueLink link;
	MqlogLinkedRow row;
	Datum		values[MQ_LOG_NATTS];
	bool		isnull[MQ_LOG_NATTS];

	StaticAssertStmt(MQ_LOG_NATTS == MQ_ENTRY_PAYLOAD_NATTS,
					 "a stream entry row carries the message log's columns");
	/* formed before any lock is taken */
	mq_log_row_values(msg, values, isnull);
	if (!mq_queue_inline_begin(q, lane, &link))
		return false;
	msg->msg_id = mq_queue_inline_reserve(&link, entry, values, isnull, &row);
	mqlog_linked_write(&row, 1);
	mq_queue_link_end(&link, &row);
	return true;
}

/* Is q one of the queues this publish must not deliver to? */
static bool
skip_queue(const MqPublishOpts *o, MqQueue *q)
{
	for (int i = 0; i < o->nskip_queues; i++)
		if (strcmp(o->skip_queues[i], q->name) == 0)
			return true;
	return false;
}

/*
 * The messages of a batch routed to stream dst, their only destination
 * (msgs[i] for message i, NULL when it was not routed), each kept in its
 * entry row (inline, queue.h): one row per message.  A partition whose
 * write generation cannot carry messages gets them in the log.  Sets ids[].
 */
static void
publish_stream_batch(Dest *dst, MqMessage **msgs, bytea **bodies, const MqPublishOpts *o,
					 TimestampTz visible_at, TimestampTz expires_at, bool durable,
					 int64 *ids)
{
	MqQueue    *q = dst->q;
	MqEntry    *entries = palloc(sizeof(MqEntry) * dst->n);
	MqMessage **lane_msgs = palloc(sizeof(MqMessage *) * dst->n);
	int		   *index = palloc(sizeof(int) * dst->n);
	Datum	   *values = palloc(sizeof(Datum) * MQ_LOG_NATTS * dst->n);
	bool	   *isnull = palloc(sizeof(bool) * MQ_LOG_NATTS * dst->n);

	for (int lane = 0; lane < q->nlanes; lane++)
	{
		int			k = 0;

		for (int e = 0; e < dst->n; e++)
		{
			int			i = dst->msg_index[e];

			if (dst->lane[e] != lane)
				continue;
			index[k] = i;
			lane_msgs[k] = msgs[i];
			mq_publish_entry_init(&entries[k], q, 0, visible_at, expires_at, bodies[i], o,
								  mq_publish_msg_tag(o, i));
			mq_log_row_values(msgs[i], values + k * MQ_LOG_NATTS, isnull + k * MQ_LOG_NATTS);
			k++;
		}
		if (k == 0)
			continue;
		if (!mq_queue_append_inline(q, lane, entries, k, values, isnull))
		{
			mq_log_append(lane_msgs, k, durable);
			for (int j = 0; j < k; j++)
				entries[j].msg_id = lane_msgs[j]->msg_id;
			mq_queue_append(q, lane, entries, k);
		}
		for (int j = 0; j < k; j++)
			ids[index[j]] = entries[j].msg_id;
	}
	pfree(entries);
	pfree(lane_msgs);
	pfree(index);
	pfree(values);
	pfree(isnull);
}

/* The working state of one mq_publish call, handed from step to step */
typedef struct PublishCall
{
	/* the call's arguments */
	MqExchange *ex;
	int			n;
	char	  **routing_keys;
	bytea	  **bodies;
	const MqPublishOpts *o;
	int64	   *ids;
	/* per message */
	Jsonb	  **hdrs;			/* headers, without the CC and BCC keys */
	Jsonb	  **mprops;			/* properties, annotations included */
	bool	   *routed;			/* reached at least one queue */
	MqMessage **msgs;
	int			nrouted;
	/* per destination queue */
	Dest	   *dests;
	int			ndests;
	bool		durable;		/* a destination is durable */
	bool		quorum;			/* a destination is a quorum queue, or one */
	/* messages a reject-publish-dlx queue refused */
	Refused    *refused;
	int			nrefused;
	TimestampTz now;
	TimestampTz visible_at;
	TimestampTz expires_at;
	bool		delayed;
	Jsonb	   *props;
} PublishCall;

/*
 * 1a. The queues message i reaches: by its routing key and those of its CC
 * and BCC headers, or where the message before went.  Checks its routing
 * key and its size.
 */
static void
route_message(PublishCall *pc, int i, MqRouteSet *sets)
{
	const MqPublishOpts *o = pc->o;
	char	  **keys;
	int			nkeys;
	Jsonb	   *ann = NULL;
	bool		same_route;

	/*
	 * A message without headers and with the routing key of the one before,
	 * which had none either, goes where that one went: a batch to one queue
	 * is routed once.  (Routing is a function of the exchange, the keys and
	 * the headers; without headers there are no CC or BCC keys and no
	 * annotations.)
	 */
	same_route = i > 0 && pc->hdrs[i] == NULL && pc->hdrs[i - 1] == NULL &&
		o->route_keys == NULL &&
		strcmp(pc->routing_keys[i], pc->routing_keys[i - 1]) == 0;
	if (!same_route)
		mq_routing_key_check(pc->routing_keys[i], "routing key");
	if (pc->bodies[i] && VARSIZE_ANY_EXHDR(pc->bodies[i]) > (Size) mqlog_max_row_size)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("message to exchange \"%s\" with routing key \"%s\" is too large",
						pc->ex->name, pc->routing_keys[i]),
				 errdetail("The body has %zu bytes; mq.max_message_size is %d bytes.",
						   (Size) VARSIZE_ANY_EXHDR(pc->bodies[i]), mqlog_max_row_size)));
	if (same_route)
	{
		sets[i] = sets[i - 1];
		return;
	}
	/* the routing key, and those of the CC and BCC headers */
	if (o->route_keys)
	{
		keys = o->route_keys;
		nkeys = o->nroute_keys;
	}
	else
		nkeys = mq_sender_keys(pc->routing_keys[i], &pc->hdrs[i], &keys, &ann);
	if (ann)
		pc->mprops[i] = pc->props ?
			DatumGetJsonbP(DirectFunctionCall2(jsonb_concat,
											   JsonbPGetDatum(pc->props),
											   JsonbPGetDatum(ann))) : ann;
	mq_route_set_init(&sets[i]);
	mq_route_message(pc->ex, keys, nkeys, pc->hdrs[i], o->check_privileges, &sets[i]);
}

/*
 * 1b. Message i goes to the queues of set, each to the lane its priority or
 * partition picks (the default exchange needs publish on each queue).
 * Returns true when it passed over a queue deleted meanwhile.
 */
static bool
add_destinations(PublishCall *pc, int i, MqRouteSet *set)
{
	const MqPublishOpts *o = pc->o;
	bool		deleted = false;

	for (int j = 0; j < set->n; j++)
	{
		MqQueue    *q = mq_queue_by_id(set->ids[j]);
		int			lane;

		if (q == NULL || skip_queue(o, q))
			continue;
		/*
		 * A queue deleted meanwhile is routed past (RabbitMQ); checked when
		 * the call first routes to q
		 */
		if (dest_find(pc->dests, pc->ndests, q) == NULL && mq_queue_deleted(q))
		{
			if (o->to_queue)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("queue \"%s\" does not exist", q->name),
						 errdetail("It was deleted by a concurrent transaction.")));
			deleted = true;
			continue;
		}
		/* the default exchange needs publish on the queue itself */
		if (o->check_privileges && pc->ex->name[0] == '\0')
			mq_check_queue_privilege(q, MQ_PRIV_PUBLISH);
		lane = q->type == MQ_QUEUE_STREAM ?
			mq_publish_partition(q, o, mq_publish_msg_key(o, i)) :
			mq_priority_lane(q, o->priority);
		dest_add(dest_for(&pc->dests, &pc->ndests, q), i, lane);
		pc->durable |= q->durable;
		/* a stream declared with "durability": "quorum" is one */
		pc->quorum |= q->type == MQ_QUEUE_QUORUM || q->quorum_durable;
		pc->routed[i] = true;
	}
	return deleted;
}

/* message i of a mandatory publish reached no queue: P0002 */
static void
refuse_unroutable(PublishCall *pc, int i)
{
	ereport(ERROR,
			(errcode(ERRCODE_NO_DATA_FOUND),
			 errmsg("message to exchange \"%s\" with routing key \"%s\" is unroutable",
					pc->ex->name, pc->routing_keys[i]),
			 errdetail("No queue is bound that matches, and mandatory is true.")));
}

/*
 * 1. Route every message first, so that nothing is written if one fails:
 * an unroutable one is an error when mandatory, else it gets id 0.
 */
static void
route_all(PublishCall *pc, Jsonb **headers)
{
	MqRouteSet *sets = palloc(sizeof(MqRouteSet) * pc->n);

	for (int i = 0; i < pc->n; i++)
	{
		pc->hdrs[i] = headers ? headers[i] : NULL;
		pc->mprops[i] = pc->props;
		route_message(pc, i, sets);
		pc->ids[i] = 0;
		pc->routed[i] = false;
		if (sets[i].n == 0)
		{
			if (pc->o->mandatory)
				refuse_unroutable(pc, i);
			continue;
		}
		if (add_destinations(pc, i, &sets[i]) && !pc->routed[i] && pc->o->mandatory)
			refuse_unroutable(pc, i);
		if (pc->routed[i])
			pc->nrouted++;
	}
}

/*
 * 2. x-max-length and x-max-length-bytes: publishers to a limited queue
 * take turns (one transaction at a time, in queue id order so that two
 * never wait for each other), so that each sees what the one before
 * committed and the limits hold after every commit; then reject-publish
 * overflow (the publish fails) and reject-publish-dlx (what does not fit
 * is dead-lettered instead, step 6).
 */
static void
take_turns(PublishCall *pc)
{
	if (pc->ndests > 1)
		qsort(pc->dests, pc->ndests, sizeof(Dest), dest_cmp_queue_id);
	for (int d = 0; d < pc->ndests; d++)
	{
		if (!mq_queue_limited(pc->dests[d].q))
			continue;
		/* the worker (dead-lettering, timers) waits for no lock of a user */
		if (!mq_queue_turn_lock(pc->dests[d].q, !mq_lock_nowait))
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("queue \"%s\" is locked by another transaction",
							pc->dests[d].q->name)));
	}
	for (int d = 0; d < pc->ndests; d++)
	{
		MqQueue    *q = pc->dests[d].q;

		if (!mq_queue_limited(q) || !q->overflow_reject)
			continue;
		if (q->overflow_dlx)
			refuse_over_limit(&pc->dests[d], pc->bodies, &pc->refused, &pc->nrefused);
		else
			reject_over_limit(&pc->dests[d], pc->bodies);
	}
}

/*
 * 3. Dedup: a retried publish of one message with a dedup_id returns the
 * id the first one got (true; ids[0] set) while mq.dedup_window remembers it
 */
static bool
find_duplicate(PublishCall *pc)
{
	const MqPublishOpts *o = pc->o;
	int64		first;

	if (!o->dedup_id || pc->n != 1 || o->existing_ids != NULL)
		return false;
	DirectFunctionCall1(pg_advisory_xact_lock_int8,
						Int64GetDatum((int64) hash_bytes((unsigned char *) o->dedup_id,
														 strlen(o->dedup_id)) | ((int64) 0x6d71 << 32)));
	first = mq_log_find_dedup(o->dedup_id, pc->now - (int64) mq_dedup_window * 1000);
	if (first == 0)
		return false;
	pc->ids[0] = first;
	return true;
}

/* The message to store for message i of the call, with this business key */
static MqMessage *
call_message(PublishCall *pc, int i, char *key)
{
	return mq_publish_message(pc->ex, pc->routing_keys[i], pc->hdrs[i], pc->bodies[i],
							  pc->o, key, mq_publish_msg_tag(pc->o, i), pc->mprops[i],
							  pc->now);
}

/*
 * 4. Store each routed message once and set ids[].  Returns true when its
 * entries were written with it (step 5 is done): one new message for one
 * queue lane, the message and its entry in one WAL record; or a batch to
 * one stream, each message in its entry row.
 */
static bool
store_messages(PublishCall *pc)
{
	const MqPublishOpts *o = pc->o;
	Dest	   *dests = pc->dests;
	int			m = 0;

	if (!o->existing_ids && !pc->delayed && pc->nrouted == 1 && pc->ndests == 1 &&
		dests[0].n == 1)
	{
		Dest	   *dst = &dests[0];
		int			i = dst->msg_index[0];
		MqEntry		entry;
		MqMessage  *msg;

		mq_publish_entry_init(&entry, dst->q, 0, pc->visible_at, pc->expires_at, pc->bodies[i], o,
							  mq_publish_msg_tag(o, i));
		msg = call_message(pc, i, mq_publish_msg_key(o, i));

		/*
		 * A stream's message is kept in its entry row unless something
		 * must find it in the log: its key and dedup_id are indexed there
		 */
		if (dst->q->type == MQ_QUEUE_STREAM && msg->key == NULL && msg->dedup_id == NULL &&
			publish_inline(dst->q, dst->lane[0], msg, &entry))
			pc->ids[i] = msg->msg_id;
		else
			pc->ids[i] = publish_linked(dst->q, dst->lane[0], msg, &entry, pc->durable);
		return true;
	}
	if (o->existing_ids)
	{
		for (int i = 0; i < pc->n; i++)
			if (pc->routed[i])
				pc->ids[i] = o->existing_ids[i];
		return false;
	}
	if (!pc->delayed && pc->ndests == 1 && dests[0].n == pc->nrouted &&
		dests[0].q->type == MQ_QUEUE_STREAM && o->dedup_id == NULL &&
		o->key == NULL && !mq_publish_any_key(o, pc->n))
	{
		for (int i = 0; i < pc->n; i++)
			pc->msgs[i] = pc->routed[i] ? call_message(pc, i, NULL) : NULL;
		publish_stream_batch(&dests[0], pc->msgs, pc->bodies, o, pc->visible_at,
							 pc->expires_at, pc->durable, pc->ids);
		return true;
	}
	for (int i = 0; i < pc->n; i++)
		if (pc->routed[i])
			pc->msgs[m++] = call_message(pc, i, mq_publish_msg_key(o, i));
	/* delayed messages wait in durable timers: their body must too */
	mq_log_append(pc->msgs, m, pc->durable || pc->delayed);
	m = 0;
	for (int i = 0; i < pc->n; i++)
		if (pc->routed[i])
			pc->ids[i] = pc->msgs[m++]->msg_id;
	return false;
}

/*
 * 5. One entry per destination queue, in order, per lane; a delayed
 * message's in a timer instead
 */
static void
append_entries(PublishCall *pc)
{
	for (int d = 0; d < pc->ndests; d++)
	{
		Dest	   *dst = &pc->dests[d];
		MqEntry    *entries = palloc(sizeof(MqEntry) * dst->n);

		for (int lane = 0; lane < dst->q->nlanes; lane++)
		{
			int			k = 0;

			for (int e = 0; e < dst->n; e++)
			{
				int			i = dst->msg_index[e];

				if (dst->lane[e] != lane)
					continue;
				mq_publish_entry_init(&entries[k++], dst->q, pc->ids[i], pc->visible_at,
									  pc->expires_at, pc->bodies[i], pc->o,
									  mq_publish_msg_tag(pc->o, i));
			}
			if (k > 0 && pc->delayed)
				mq_timers_add(dst->q, lane, entries, k);
			else if (k > 0)
				mq_queue_append(dst->q, lane, entries, k);
		}
		pfree(entries);
	}
}

/*
 * 6. reject-publish-dlx: a message a full queue refused goes to the
 * queue's dead-letter exchange (reason maxlen), and the publish goes on:
 * RabbitMQ also nacks it, but here the only nack is an error, which would
 * roll the copy back too.  A refused message that no dead-letter exchange
 * takes would be lost: that publish fails as with reject-publish.
 */
static void
dead_letter_refused(PublishCall *pc)
{
	for (int r = 0; r < pc->nrefused; r++)
	{
		MqQueue    *q = pc->refused[r].q;

		if (mq_dead_letter(q, pc->ids[pc->refused[r].msg_index], "maxlen") != MQ_SETTLE_DEAD)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("queue \"%s\" is full", q->name),
					 errdetail("x-overflow is reject-publish-dlx, but no dead-letter exchange took the message."),
					 errhint("Give the queue an x-dead-letter-exchange with a queue bound to it.")));
		mq_queue_count_at_commit(q, MQ_C_DEAD_LETTERED, 1);
	}
}

/* 8. The commit as durable as the destinations, or the publisher, ask */
static void
require_call_durability(PublishCall *pc)
{
	if (pc->quorum || pc->o->durability == MQ_DURABILITY_QUORUM)
		mq_require_durability(MQ_DURABILITY_QUORUM);
	else if (pc->durable || pc->o->durability == MQ_DURABILITY_LOCAL)
		mq_require_durability(MQ_DURABILITY_LOCAL);
}

/*
 * Publish n messages to exchange ex (publish.h), in the steps above: route
 * all, take turns on limited queues, dedup, store, append the entries,
 * dead-letter what reject-publish-dlx refused, drop heads, durability.
 */
void
mq_publish(MqExchange *ex, int n, char **routing_keys, bytea **bodies,
		   Jsonb **headers, const MqPublishOpts *o, int64 *ids)
{
	PublishCall pc;

	memset(&pc, 0, sizeof(pc));
	pc.ex = ex;
	pc.n = n;
	pc.routing_keys = routing_keys;
	pc.bodies = bodies;
	pc.o = o;
	pc.ids = ids;
	pc.msgs = palloc(sizeof(MqMessage *) * n);
	pc.hdrs = palloc(sizeof(Jsonb *) * n);
	pc.mprops = palloc(sizeof(Jsonb *) * n);
	pc.routed = palloc(sizeof(bool) * n);
	pc.now = GetCurrentTimestamp();
	pc.visible_at = o->deliver_at > pc.now ? o->deliver_at : pc.now;
	pc.delayed = o->deliver_at > pc.now;
	pc.expires_at = DT_NOEND;
	pc.props = o->properties ? o->properties : mq_publish_properties(o);
	if (o->expiration_ms >= 0)
		pc.expires_at = mq_time_add(pc.visible_at, o->expiration_ms * 1000, "expiration");

	/* read-only transactions and hot standbys cannot publish */
	PreventCommandIfReadOnly("mq.publish");
	PreventCommandDuringRecovery("mq.publish");

	Assert(o->route_keys == NULL || n == 1);

	route_all(&pc, headers);
	if (pc.nrouted == 0)
		return;
	take_turns(&pc);
	if (find_duplicate(&pc))
		return;
	if (!store_messages(&pc))
		append_entries(&pc);
	dead_letter_refused(&pc);
	/* 7. drop-head overflow: dead-letter the oldest ready messages */
	for (int d = 0; d < pc.ndests; d++)
		(void) mq_overflow_drop_head(pc.dests[d].q, MQ_TRIM_PUBLISH);
	require_call_durability(&pc);
}

/* ---------- settling deliveries: the one sequence ---------- */

/*
 * The dead-letter queue %DLQ%<group> of consumer group g, made now if it
 * does not exist yet: a group's DLQ is made at its first dead letter (as
 * RocketMQ's), in the transaction that dead-letters (rolled back with it),
 * and added to the catalog cache in place (mq_catalog_add_queue) so that
 * the settlement under way can publish to it.  NULL when the group is gone.
 */
static MqQueue *
group_dlq(MqGroup *g)
{
	char	   *name = psprintf("%s%s", MQ_GROUP_DLQ_PREFIX, g->name);
	MqQueue    *dlq = mq_queue_lookup(name, true);
	Oid			types[1] = {INT4OID};
	Datum		values[1];

	if (dlq != NULL)
		return dlq;
	values[0] = Int32GetDatum(g->id);
	if (mq_run_internal("_group_dlq_create", 1, types, values, NULL) == NULL)
		return NULL;
	return mq_catalog_add_queue(name);
}

/*
 * Dead-letter a message of a consumer group (view gq): a copy goes to the
 * group's dead-letter queue %DLQ%<group> through the default exchange, as
 * RocketMQ's, with headers saying where it came from and why ("nack":
 * rejected, "max_retries": its deliveries ran out).  The queue is made at
 * the group's first dead letter (group_dlq); a message the group's filter
 * rejects is no dead letter, and makes none.  Returns the settlement kind
 * to record.
 */
static int16
group_dead_letter(MqQueue *gq, MqDelivery *d)
{
	MqQueue    *dlq;
	MqExchange *ex = mq_exchange_lookup("", true);
	MqMessage	m;
	MqPublishOpts o;
	Jsonb	   *headers;
	int64		id;
	char	   *rk;
	const char *reason = d->dead_reason == NULL ? "nack" :
		strcmp(d->dead_reason, "rejected") == 0 ? "nack" :
		strcmp(d->dead_reason, "delivery_limit") == 0 ? "max_retries" : d->dead_reason;

	if (!mq_log_fetch(d->msg_id, &m))
		return MQ_SETTLE_DROPPED;

	/*
	 * The filter first: a message the group's filter rejects was never the
	 * group's to deliver, so it is settled as a filtered one (ACK) however
	 * often it was taken (by consume calls that rolled back, returning it
	 * over max_retries) or however long it waited.  A nack's (rejected) was
	 * delivered, so it matched.
	 */
	if (d->dead_reason == NULL || strcmp(d->dead_reason, "rejected") != 0)
	{
		MqFilter   *filter = mq_group_filter(gq->group);

		if (filter != NULL &&
			mq_filter_eval(filter, m.headers, m.tag,
						   m.tag ? strlen(m.tag) : 0) != MQ_FILTER_MATCH)
			return MQ_SETTLE_ACK;
	}
	if (ex == NULL || (dlq = group_dlq(gq->group)) == NULL)
		return MQ_SETTLE_DROPPED;

	/* via SQL, as mq_dead_letter: a rare path */
	{
		MqOwnerScope owner;
		Oid			types[8] = {JSONBOID, TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID,
		INT4OID, TEXTOID};
		Datum		values[8];
		char		nulls[9] = "        ";
		bool		isnull;
		MemoryContext cxt = CurrentMemoryContext;

		values[0] = m.headers ? JsonbPGetDatum(m.headers) : (Datum) 0;
		if (m.headers == NULL)
			nulls[0] = 'n';
		values[1] = CStringGetTextDatum(gq->name);
		values[2] = CStringGetTextDatum(gq->group->name);
		values[3] = Int32GetDatum(mq_qpos_lane(d->qpos));
		values[4] = Int64GetDatum(d->offset);
		values[5] = Int64GetDatum(d->msg_id);
		values[6] = Int32GetDatum(Max(d->delivery_count - 1, 0));
		values[7] = CStringGetTextDatum(reason);
		mq_owner_enter(&owner);
		mq_owner_exec("SELECT COALESCE($1, '{}'::pg_catalog.jsonb) OPERATOR(pg_catalog.||) "
					  "pg_catalog.jsonb_build_object('x-dlq-origin-queue', $2, "
					  "'x-dlq-origin-group', $3, 'x-dlq-origin-partition', $4, "
					  "'x-dlq-origin-offset', $5, 'x-dlq-origin-msg-id', $6, "
					  "'x-reconsume-times', $7, 'x-dlq-reason', $8)",
					  8, types, values, nulls, true, SPI_OK_SELECT,
					  "build a consumer group's dead letter");
		{
			MemoryContext spi = MemoryContextSwitchTo(cxt);

			headers = DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0],
													   SPI_tuptable->tupdesc, 1, &isnull));
			MemoryContextSwitchTo(spi);
		}
		mq_owner_leave(&owner);
	}
	mq_publish_opts_init(&o);
	o.check_privileges = false;
	o.properties = m.properties;
	o.key = m.key;
	o.tag = m.tag;
	o.message_group = m.message_group;
	rk = dlq->name;
	mq_publish(ex, 1, &rk, &m.body, &headers, &o, &id);
	if (id == 0)
		return MQ_SETTLE_DROPPED;
	mq_group_note_dead(gq, mq_qpos_lane(d->qpos));
	return MQ_SETTLE_DEAD;
}

/*
 * The one sequence that settles deliveries, used by every caller: consume
 * (expired and over-limit messages; auto-ack), ack, nack and reject,
 * purge, drop-head overflow and the maintenance worker's expiry.  dl[] are
 * deliveries queue state has already taken or marked settling
 * (mq_queue_take, mq_queue_settle):
 *	1. a delivery with dead set is dead-lettered (mq_dead_letter decides
 *	   whether a copy went anywhere: MQ_SETTLE_DEAD or MQ_SETTLE_DROPPED);
 *	   the others get live_kind (0: none, they stay delivered);
 *	2. MQ_SETTLE_RETRY arms a timer that appends the entry again at
 *	   retry_at, carrying its delivery count, to the lane it was in;
 *	3. the records go to the settlement logs together (one WAL record per
 *	   page), then the floors;
 *	4. acks, dead letters and expiries count in q's counters (mq.metrics)
 *	   once the transaction commits.
 * It lives here, beside dead-lettering, because dead-lettering publishes
 * and publishing drops heads: a file of its own would call publish.c and
 * be called by it.  Returns how many were settled.  The commit's
 * durability is the caller's to ask for.
 */
int
mq_settle_deliveries(MqQueue *q, MqDelivery *dl, int n, int16 live_kind,
					 TimestampTz retry_at)
{
	return mq_settle_deliveries_as(q, dl, n, live_kind, retry_at, MQ_C_ACKED);
}

/*
 * mq_settle_deliveries, the live ones given MQ_SETTLE_ACK counted in
 * acked_counter: MQ_C_FILTERED for the messages a group's filter rejected
 * once fetched, which are settled without being delivered or acked
 */
int
mq_settle_deliveries_as(MqQueue *q, MqDelivery *dl, int n, int16 live_kind,
						TimestampTz retry_at, int acked_counter)
{
	MqSettleBatch batch;
	int			settled;
	int64		acked = 0;
	int64		dead_lettered = 0;
	int64		expired = 0;
	int64		filtered = 0;

	mq_settle_batch_init(&batch, q);
	for (int i = 0; i < n; i++)
	{
		if (dl[i].dead)
		{
			int16		kind = q->group != NULL ?
				group_dead_letter(q, &dl[i]) :
				mq_dead_letter(q, dl[i].msg_id, dl[i].dead_reason);

			mq_settle_batch_add(&batch, kind, dl[i].qpos);
			dead_lettered += kind == MQ_SETTLE_DEAD;
			/* a group's dead one its filter rejects: group_dead_letter */
			filtered += q->group != NULL && kind == MQ_SETTLE_ACK;
			expired += dl[i].dead_reason != NULL &&
				strcmp(dl[i].dead_reason, "expired") == 0;
		}
		else if (live_kind != 0)
		{
			mq_settle_batch_add(&batch, live_kind, dl[i].qpos);
			acked += live_kind == MQ_SETTLE_ACK;
		}
		if (!dl[i].dead && live_kind == MQ_SETTLE_RETRY)
		{
			MqEntry		e;

			e.msg_id = dl[i].msg_id;
			e.visible_at = retry_at;
			e.expires_at = dl[i].expires_at;
			e.delivery_count = Max(dl[i].delivery_count, 1);
			e.body_size = mq_queue_body_size(q, dl[i].msg_id);
			e.group_hash = 0;	/* never on ordered queues: see settle.c */
			e.tag_hash = MQ_TAG_HASH_NONE;	/* not a stream */
			mq_timers_add(q, mq_qpos_lane(dl[i].qpos), &e, 1);
		}
	}
	settled = batch.n;
	if (settled > 0)
	{
		mq_settle_batch_flush(&batch);
		mq_queue_write_floors(q);
	}
	/* the counters of mq.metrics, once the settlements commit */
	mq_queue_count_at_commit(q, (MqCounter) acked_counter, acked);
	mq_queue_count_at_commit(q, MQ_C_DEAD_LETTERED, dead_lettered);
	mq_queue_count_at_commit(q, MQ_C_EXPIRED, expired);
	mq_queue_count_at_commit(q, MQ_C_FILTERED, filtered);
	return settled;
}

/* Does q hold more ready messages, or body bytes, than its limits allow? */
static bool
over_limits(MqQueue *q)
{
	int64		ready_bytes;
	int64		ready = mq_queue_ready_bytes_for_publish(q, &ready_bytes);

	return (q->max_length >= 0 && ready > q->max_length) ||
		(q->max_length_bytes >= 0 && ready_bytes > q->max_length_bytes);
}

/*
 * Drop-head overflow: dead-letter the oldest ready messages of q (the head
 * in delivery order) while it holds more than x-max-length or
 * x-max-length-bytes allow, whatever put it over.  Takes the queue's turn
 * first, the lock publishers to a limited queue hold until they commit, so
 * that no publisher's count is in flight meanwhile.
 *	- After a publish (MQ_TRIM_PUBLISH) the publisher already holds the turn
 *	  and keeps it to its commit.
 *	- After a return (MQ_TRIM_RETURN: nack, reject) and in the worker
 *	  (MQ_TRIM_WORKER: after a session end, a rollback, a delayed message
 *	  falling due) there is nothing to do in the common case, checked
 *	  first without the lock; otherwise the turn is taken (the worker only
 *	  if it is free: it never waits on a publisher) and given back as soon
 *	  as the heads are taken, since taken heads no longer count as ready
 *	  even before this transaction commits.  Held to the end of the
 *	  worker's pass, it would stall the queue's publishers for all of it.
 * Returns false when the worker found the turn taken.
 */
bool
mq_overflow_drop_head(MqQueue *q, MqTrimWhen when)
{
	if (!mq_queue_limited(q) || q->overflow_reject)
		return true;
	if (when != MQ_TRIM_PUBLISH && !over_limits(q))
		return true;
	if (!mq_queue_turn_lock(q, when != MQ_TRIM_WORKER))
		return false;
	drop_heads(q);
	if (when != MQ_TRIM_PUBLISH)
		mq_queue_turn_unlock(q);
	return true;
}

/* The elements of a text[] datum, as C strings */
static int
text_array_strings(Datum arr, char ***out)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(DatumGetArrayTypeP(arr), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	*out = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		(*out)[i] = nulls[i] ? "" : TextDatumGetCString(elems[i]);
	return n;
}

/*
 * Dead-letter: republish a copy of the message to the queue's dead-letter
 * exchange with RabbitMQ's death headers; drop it when the queue has none,
 * the exchange does not exist or routes it nowhere.  mq._x_death builds the
 * copy (RabbitMQ 4.x's mc:record_death): headers, properties, the routing
 * keys (the queue's x-dead-letter-routing-key, else the message's own, CC
 * and BCC included) and the queues that would close a dead-letter cycle
 * without a rejection, which the copy skips (rabbit_dead_letter's
 * detect_cycles: other destinations still get it).
 * Returns the settlement kind to record: MQ_SETTLE_DEAD or
 * MQ_SETTLE_DROPPED.
 */
int16
mq_dead_letter(MqQueue *q, int64 msg_id, const char *reason)
{
	MqExchange *dlx;
	MqMessage	m;
	MqPublishOpts o;
	Jsonb	   *headers;
	char	   *prio;
	int64		id;

	if (q->dead_letter_exchange == NULL)
		return MQ_SETTLE_DROPPED;
	dlx = mq_exchange_lookup(q->dead_letter_exchange, true);
	if (dlx == NULL || !mq_log_fetch(msg_id, &m))
		return MQ_SETTLE_DROPPED;

	mq_publish_opts_init(&o);
	o.check_privileges = false;

	/* via SQL: rare path, and jsonb editing is clearer there */
	{
		MqOwnerScope owner;
		Oid			types[7] = {JSONBOID, JSONBOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
		Datum		values[7];
		char		nulls[7] = "       ";
		bool		isnull;
		HeapTuple	tup;
		TupleDesc	desc;
		MemoryContext cxt = CurrentMemoryContext;

		values[0] = m.headers ? JsonbPGetDatum(m.headers) : (Datum) 0;
		if (m.headers == NULL)
			nulls[0] = 'n';
		values[1] = m.properties ? JsonbPGetDatum(m.properties) : (Datum) 0;
		if (m.properties == NULL)
			nulls[1] = 'n';
		values[2] = CStringGetTextDatum(reason);
		values[3] = CStringGetTextDatum(q->name);
		values[4] = CStringGetTextDatum(m.exchange ? m.exchange : "");
		values[5] = CStringGetTextDatum(m.routing_key ? m.routing_key : "");
		values[6] = q->dead_letter_routing_key ?
			CStringGetTextDatum(q->dead_letter_routing_key) : (Datum) 0;
		if (q->dead_letter_routing_key == NULL)
			nulls[6] = 'n';
		mq_owner_enter(&owner);
		mq_owner_exec("SELECT new_headers, new_properties, routing_keys, cycle "
					  "FROM mq._x_death($1, $2, $3, $4, $5, $6, $7)", 7, types, values, nulls,
					  true, SPI_OK_SELECT, "build a dead-lettered copy");
		tup = SPI_tuptable->vals[0];
		desc = SPI_tuptable->tupdesc;
		/* the results outlive SPI: build them in the caller's context */
		{
			MemoryContext spi = MemoryContextSwitchTo(cxt);

			headers = DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 1, &isnull));
			o.properties = DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 2, &isnull));
			o.nroute_keys = text_array_strings(SPI_getbinval(tup, desc, 3, &isnull),
											   &o.route_keys);
			o.nskip_queues = text_array_strings(SPI_getbinval(tup, desc, 4, &isnull),
												&o.skip_queues);
			MemoryContextSwitchTo(spi);
		}
		mq_owner_leave(&owner);
	}

	/* the other properties travel along (the TTL does not: see _x_death) */
	prio = mq_jsonb_get_text(o.properties, "priority");
	if (prio)
		o.priority = atoi(prio);
	o.key = m.key;
	o.tag = m.tag;
	o.message_group = m.message_group;
	mq_publish(dlx, 1, &o.route_keys[0], &m.body, &headers, &o, &id);
	return id != 0 ? MQ_SETTLE_DEAD : MQ_SETTLE_DROPPED;
}
