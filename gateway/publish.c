/*-------------------------------------------------------------------------
 *
 * publish.c
 *	  A batch of publishes as one statement: pg_temp.amqp_publish (set up
 *	  with each channel's session) and its arguments, binary arrays of the
 *	  batch's messages.
 *
 * It builds the statement and its parameters only; when a batch runs and
 * what its result means are operations.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdlib.h>
#include <string.h>

/*
 * One statement publishes a batch: a function in the session's pg_temp runs
 * mq.publish for each message in its own subtransaction, so that one refused
 * publish is nacked alone; the statement's commit confirms the others.
 */
const char publish_fn[] =
"CREATE FUNCTION pg_temp.amqp_publish(ex text[], rk text[], body bytea[], hdr jsonb[], "
"mand boolean[], prio int[], expi interval[], dly interval[], ct text[], corr text[], "
"rep text[]) RETURNS TABLE (n int, msg_id bigint, state text, message text, hint text) "
"LANGUAGE plpgsql AS $f$ "
"BEGIN "
"  FOR i IN 1 .. coalesce(array_length(ex, 1), 0) LOOP "
"    n := i; msg_id := NULL; state := NULL; message := NULL; hint := NULL; "
"    BEGIN "
"      msg_id := mq.publish(ex[i], rk[i], body[i], headers => hdr[i], mandatory => mand[i], "
"        priority => prio[i], expiration => expi[i], delay => dly[i], content_type => ct[i], "
"        correlation_id => corr[i], reply_to => rep[i]); "
"    EXCEPTION WHEN OTHERS THEN "
"      GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, "
"        hint = PG_EXCEPTION_HINT; "
"    END; "
"    RETURN NEXT; "
"    EXIT WHEN state IS NOT NULL AND state NOT IN ('P0002', '53400'); "
"  END LOOP; "
"END $f$";

/* a one-dimensional binary array of n elements */
typedef const void *(*elem_fn) (PubMsg *m, int *len);

/*
 * b: a one-dimensional binary array of type elemtype with one element per
 * message of msgs, as get gives it (NULL: a null element).
 */
static void
bin_array(Buf *b, Oid elemtype, PubMsg *msgs, int n, elem_fn get)
{
	PubMsg	   *m;

	b->len = 0;
	buf_u32(b, 1);				/* ndim */
	buf_u32(b, 1);				/* has nulls */
	buf_u32(b, elemtype);
	buf_u32(b, n);
	buf_u32(b, 1);				/* lower bound */
	for (m = msgs; m; m = m->next)
	{
		int			len;
		const void *p = get(m, &len);

		if (p == NULL)
			buf_u32(b, (uint32_t) -1);
		else
		{
			buf_u32(b, len);
			buf_bytes(b, p, len);
		}
	}
}

static uint8_t scratch[64];

/* The element getters of bin_array: one field of a message each. */
static const void *
el_ex(PubMsg *m, int *len)
{
	*len = strlen(m->exchange);
	return m->exchange;
}

static const void *
el_rk(PubMsg *m, int *len)
{
	*len = strlen(m->rk);
	return m->rk;
}

static const void *
el_body(PubMsg *m, int *len)
{
	*len = m->body.len;
	return m->body.data ? (const void *) m->body.data : "";
}

static Buf	jsonb_tmp;

/* The headers as binary jsonb (version byte, then the JSON text). */
static const void *
el_hdr(PubMsg *m, int *len)
{
	if (!m->headers_json)
		return NULL;
	jsonb_tmp.len = 0;
	buf_u8(&jsonb_tmp, 1);
	buf_bytes(&jsonb_tmp, m->headers_json, strlen(m->headers_json));
	*len = jsonb_tmp.len;
	return jsonb_tmp.data;
}

static const void *
el_mand(PubMsg *m, int *len)
{
	scratch[0] = m->mandatory;
	*len = 1;
	return scratch;
}

/* The priority property as a binary int4, or null if it has none. */
static const void *
el_prio(PubMsg *m, int *len)
{
	if (m->priority < 0)
		return NULL;
	scratch[0] = 0;
	scratch[1] = 0;
	scratch[2] = 0;
	scratch[3] = m->priority;
	*len = 4;
	return scratch;
}

/* An interval of ms milliseconds, binary (in scratch). */
static const void *
interval_bin(int64_t ms, int *len)
{
	int64_t		us = ms * 1000;
	int			i;

	for (i = 0; i < 8; i++)
		scratch[i] = (uint8_t) (((uint64_t) us) >> (56 - 8 * i));
	memset(scratch + 8, 0, 8);	/* days, months */
	*len = 16;
	return scratch;
}

/* The expiration property as an interval, or null. */
static const void *
el_expi(PubMsg *m, int *len)
{
	return m->expiration[0] ? interval_bin(strtoll(m->expiration, NULL, 10), len) : NULL;
}

/* The x-delay header as an interval, or null. */
static const void *
el_delay(PubMsg *m, int *len)
{
	return m->delay[0] ? interval_bin(strtoll(m->delay, NULL, 10), len) : NULL;
}

static const void *
el_ct(PubMsg *m, int *len)
{
	*len = m->content_type ? strlen(m->content_type) : 0;
	return m->content_type;
}

static const void *
el_corr(PubMsg *m, int *len)
{
	*len = m->correlation_id ? strlen(m->correlation_id) : 0;
	return m->correlation_id;
}

static const void *
el_rep(PubMsg *m, int *len)
{
	*len = m->reply_to ? strlen(m->reply_to) : 0;
	return m->reply_to;
}

/*
 * The statement of a batch (msgs, linked by next) on the channel's session,
 * its arguments binary arrays; cb gets the rows of pg_temp.amqp_publish.
 */
void
publish_send(PgSess *pg, PubMsg *msgs, pg_result_cb cb, void *arg)
{
	static const Oid types[11] = {1009, 1009, 1001, 3807, 1000, 1007, 1187, 1187, 1009, 1009, 1009};
	static const elem_fn fns[11] = {el_ex, el_rk, el_body, el_hdr, el_mand, el_prio, el_expi,
	el_delay, el_ct, el_corr, el_rep};
	static const Oid elem[11] = {25, 25, 17, 3802, 16, 23, 1186, 1186, 25, 25, 25};
	Buf			arrs[11];
	const char *vals[11];
	int			lens[11],
				fmts[11],
				i,
				n = 0;
	PubMsg	   *m;

	for (m = msgs; m; m = m->next)
		n++;
	memset(arrs, 0, sizeof(arrs));
	for (i = 0; i < 11; i++)
	{
		bin_array(&arrs[i], elem[i], msgs, n, fns[i]);
		vals[i] = (const char *) arrs[i].data;
		lens[i] = arrs[i].len;
		fmts[i] = 1;
	}
	pg_send(pg, "SELECT n, msg_id, state, message, hint FROM pg_temp.amqp_publish($1, $2, $3, $4, "
			"$5, $6, $7, $8, $9, $10, $11)", 11, types, vals, lens, fmts, 0, cb, arg);
	for (i = 0; i < 11; i++)
		buf_free(&arrs[i]);
}
