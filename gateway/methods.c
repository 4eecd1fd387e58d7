/*-------------------------------------------------------------------------
 *
 * methods.c
 *	  The methods of an open channel (channel, exchange, queue, basic,
 *	  confirm and tx classes): each is decoded and queued as an operation of
 *	  the channel, or answered at once.
 *
 * The map is chan_methods[] at the bottom, as TableAmRoutine is heapam's:
 * one row per (class, method) with its handler and properties.  chan_method
 * applies the rules every method shares (the channel's state, a pending
 * content, an unknown method) and then calls the row's handler.  A handler
 * decodes its arguments, answers at once or queues an Op; it returns the Op
 * it queued, and chan_method then starts the channel's queue (chan_pump).
 *
 * This file owns the decoding of a channel method's arguments and the
 * checks RabbitMQ makes before a method reaches the broker.  It runs no SQL
 * and sends no reply that depends on the broker: those are operations.c's,
 * in the operation's turn.  The connection class (channel 0) and
 * channel.open on a new channel are connection.c's; content frames are
 * content.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ChanMethod ChanMethod;

/*
 * A method's handler: decode the arguments in r, act, and return the Op
 * queued for chan_pump, or NULL when the method was answered at once, raised
 * a connection error or needs no pump.
 */
typedef Op *(*ChanMethodHandler) (Conn *c, Chan *ch, const ChanMethod *m, Rd *r);

/*
 * Properties of a method (ChanMethod.flags).  chan_method acts on the first
 * two; CM_CONTENT and CM_QUEUED, like the name, describe the method to the
 * reader of the table, as the spec's own tables do.
 */
#define CM_ANY_STATE	0x01	/* handled whatever the channel's state
								 * (channel.close) */
#define CM_WHILE_CLOSING 0x02	/* only while our channel.close waits for
								 * close-ok; unknown otherwise */
#define CM_CONTENT		0x04	/* followed by a content header and body
								 * (content.c) */
#define CM_QUEUED		0x08	/* may queue an operation, run in order with
								 * the channel's others */

struct ChanMethod
{
	uint16_t	cls;
	uint16_t	meth;
	const char *name;			/* "class.method", as the spec names it */
	ChanMethodHandler handler;
	int			flags;			/* CM_* */
};

/*
 * Queue an error of the channel as its next operation: the channel is closed
 * with code and text in the error's turn, after what came before it.  op is
 * the method's operation if it already made one (it becomes the error), or
 * NULL.  Returns the operation, for the caller to return to chan_method.
 */
static Op *
queue_error(Chan *ch, Op *op, const ChanMethod *m, int code, const char *text)
{
	if (op == NULL)
		op = op_new(ch, OP_ERROR, m->cls, m->meth);
	op->kind = OP_ERROR;
	op->code = code;
	snprintf(op->s2, sizeof(op->s2), "%s", text);
	return op;
}

/*
 * True, after closing the connection with FRAME_ERROR, if the method's
 * arguments could not be decoded (r ran short); false if they are all there.
 */
static bool
args_bad(Conn *c, Rd *r, const ChanMethod *m)
{
	if (!r->err)
		return false;
	conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - cannot decode the method's arguments",
			   m->cls, m->meth);
	return true;
}

/*
 * A new operation of kind for method m, queued, with what every exchange,
 * queue and basic method that names one begins with read from r: the
 * reserved short (the old ticket) and the exchange's or queue's name, into
 * s1.
 */
static Op *
op_begin(Chan *ch, const ChanMethod *m, enum OpKind kind, Rd *r)
{
	Op		   *op = op_new(ch, kind, m->cls, m->meth);

	rd_u16(r);
	rd_shortstr(r, op->s1);
	return op;
}

/* An empty queue name means the channel's last declared queue, as RabbitMQ. */
static void
default_queue(Chan *ch, char *name, size_t len)
{
	if (name[0] == '\0')
		snprintf(name, len, "%s", ch->last_queue);
}

/*
 * The end of a queue method's arguments: NULL after the FRAME_ERROR if they
 * ran short, else op, with an empty queue name made the last queue's.
 */
static Op *
queue_args_end(Conn *c, Chan *ch, const ChanMethod *m, Rd *r, Op *op)
{
	if (args_bad(c, r, m))
		return NULL;
	default_queue(ch, op->s1, sizeof(op->s1));
	return op;
}

/* ---- channel class ---- */

/*
 * channel.close from the client.  If ours crossed it, it answers ours:
 * close-ok, and the channel is gone.  Otherwise a content being received is
 * dropped and the close is queued behind the channel's operations, so that
 * the publishes and acks before it are done first.
 */
static Op *
m_channel_close(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	Op		   *op;

	if (ch->state == CH_CLOSING)
	{
		send_simple(c, ch->id, AMQP_CHANNEL, 41);
		chan_free(ch);
		return NULL;
	}
	if (ch->pub)
	{
		pub_free(ch->pub);
		ch->pub = NULL;
	}
	ch->content = 0;
	ch->client_closing = true;
	op = op_new(ch, OP_CLOSE, m->cls, m->meth);
	return op;
}

/* channel.close-ok, the answer to our close: the channel is freed. */
static Op *
m_channel_close_ok(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	chan_free(ch);
	return NULL;
}

/* channel.open on a channel already open is a connection error. */
static Op *
m_channel_open(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	conn_error(c, AMQP_CHANNEL_ERROR, "CHANNEL_ERROR - second 'channel.open' seen", m->cls, m->meth);
	return NULL;
}

/*
 * channel.flow: active=true is answered at once; active=false is refused
 * with 540, a connection error, as RabbitMQ 3.10 does (clients rely on it:
 * docs/amqp.md), so the channel's flow stays on.
 */
static Op *
m_channel_flow(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	bool		active = rd_bit(r);

	if (args_bad(c, r, m))
		return NULL;
	if (!active)
	{
		conn_error(c, AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - active=false", m->cls, m->meth);
		return NULL;
	}
	ch->flow = true;
	method_begin(ch->id, AMQP_CHANNEL, 21);
	buf_u8(&out, ch->flow ? 1 : 0);
	frame_send(c);
	if (ch->flow)
		chan_kick(ch);
	return NULL;
}

/* channel.flow-ok: ignored, we never send channel.flow. */
static Op *
m_channel_flow_ok(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	return NULL;
}

/* ---- exchange class ---- */

/* exchange.declare; internal exchanges are refused unless passive. */
static Op *
m_exchange_declare(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	Op		   *op = op_begin(ch, m, OP_EXCHANGE_DECLARE, r);
	bool		internal;

	rd_shortstr(r, op->s2);
	op->passive = rd_bit(r);
	op->durable = rd_bit(r);
	op->auto_delete = rd_bit(r);
	internal = rd_bit(r);
	op->nowait = rd_bit(r);
	op->args = rd_table(r);
	if (args_bad(c, r, m))
		return NULL;
	amqp_args_plain(op->args, false);
	if (internal && !op->passive)
		return queue_error(ch, op, m, AMQP_NOT_IMPLEMENTED,
						   "NOT_IMPLEMENTED - internal exchanges are not supported by mq-amqp");
	return op;
}

/* exchange.delete */
static Op *
m_exchange_delete(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	Op		   *op = op_begin(ch, m, OP_EXCHANGE_DELETE, r);

	op->if_unused = rd_bit(r);
	op->nowait = rd_bit(r);
	if (args_bad(c, r, m))
		return NULL;
	return op;
}

/* exchange.bind and exchange.unbind: a channel error in their turn. */
static Op *
m_exchange_bind(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	return queue_error(ch, NULL, m, AMQP_NOT_IMPLEMENTED,
					   "NOT_IMPLEMENTED - exchange-to-exchange bindings are not supported by queue_ext");
}

/* ---- queue class ---- */

/* queue.declare; a passive declare without a name means the last queue. */
static Op *
m_queue_declare(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	Op		   *op = op_begin(ch, m, OP_QUEUE_DECLARE, r);

	op->passive = rd_bit(r);
	op->durable = rd_bit(r);
	op->exclusive = rd_bit(r);
	op->auto_delete = rd_bit(r);
	op->nowait = rd_bit(r);
	op->args = rd_table(r);
	if (args_bad(c, r, m))
		return NULL;
	amqp_args_plain(op->args, false);
	if (op->passive)
		default_queue(ch, op->s1, sizeof(op->s1));
	return op;
}

/*
 * queue.bind and queue.unbind (which has no no-wait bit).  Binding to the
 * default exchange is refused before the queue is looked up, as RabbitMQ.
 */
static Op *
m_queue_bind(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	Op		   *op = op_begin(ch, m, m->meth == 20 ? OP_QUEUE_BIND : OP_QUEUE_UNBIND, r);

	rd_shortstr(r, op->s2);
	rd_shortstr(r, op->s3);
	if (m->meth == 20)
		op->nowait = rd_bit(r);
	op->args = rd_table(r);
	if (args_bad(c, r, m))
		return NULL;
	amqp_args_plain(op->args, true);
	default_queue(ch, op->s1, sizeof(op->s1));
	if (op->s2[0] == '\0')
		return queue_error(ch, op, m, AMQP_ACCESS_REFUSED,
						   "ACCESS_REFUSED - operation not permitted on the default exchange");
	return op;
}

/* queue.purge */
static Op *
m_queue_purge(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	Op		   *op = op_begin(ch, m, OP_QUEUE_PURGE, r);

	op->nowait = rd_bit(r);
	return queue_args_end(c, ch, m, r, op);
}

/* queue.delete */
static Op *
m_queue_delete(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	Op		   *op = op_begin(ch, m, OP_QUEUE_DELETE, r);

	op->if_unused = rd_bit(r);
	op->if_empty = rd_bit(r);
	op->nowait = rd_bit(r);
	return queue_args_end(c, ch, m, r, op);
}

/* ---- basic class ---- */

/*
 * basic.qos: the prefetch count is set at once (for the channel if global,
 * else for its next consumers), and qos-ok is queued as a prebuilt reply so
 * that it goes out in order.  A prefetch size is a connection error, as
 * RabbitMQ's.
 */
static Op *
m_basic_qos(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	uint32_t	size = rd_u32(r);
	uint16_t	count = rd_u16(r);
	bool		global = rd_bit(r);
	Op		   *op;

	if (args_bad(c, r, m))
		return NULL;
	if (size != 0)
	{
		char		text[600];

		snprintf(text, sizeof(text), "NOT_IMPLEMENTED - prefetch_size!=0 (%u)", size);
		conn_error(c, AMQP_NOT_IMPLEMENTED, text, m->cls, m->meth);
		return NULL;
	}
	if (global)
		ch->prefetch_global = count;
	else
		ch->prefetch_consumer = count;
	op = op_new(ch, OP_REPLY, m->cls, m->meth);
	frame_begin(AMQP_FRAME_METHOD, ch->id);
	buf_u16(&out, AMQP_BASIC);
	buf_u16(&out, 11);
	buf_set_u32(&out, 3, out.len - 7);
	buf_u8(&out, AMQP_FRAME_END);
	buf_bytes(&op->reply, out.data, out.len);
	chan_kick(ch);
	return op;
}

/*
 * basic.consume: an empty tag gets a generated one; a tag in use on the
 * channel is a connection error (NOT_ALLOWED), as RabbitMQ's.  no-local is
 * read and ignored, as RabbitMQ does.
 */
static Op *
m_basic_consume(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	Op		   *op = op_begin(ch, m, OP_CONSUME, r);
	Consumer   *x;

	rd_shortstr(r, op->s3);
	rd_bit(r);					/* no-local */
	op->no_ack = rd_bit(r);
	op->exclusive = rd_bit(r);
	op->nowait = rd_bit(r);
	op->args = rd_table(r);
	if (args_bad(c, r, m))
		return NULL;
	amqp_args_plain(op->args, false);
	default_queue(ch, op->s1, sizeof(op->s1));
	if (op->s3[0] == '\0')
	{
		static uint64_t ctag = 0;

		snprintf(op->s3, sizeof(op->s3), "amq.ctag-%08lx%08lx-%llu",
				 (unsigned long) random(), (unsigned long) random(),
				 (unsigned long long) ++ctag);
	}
	for (x = ch->consumers; x; x = x->next)
		if (!x->cancelled && strcmp(x->tag, op->s3) == 0)
		{
			char		text[600];

			snprintf(text, sizeof(text),
					 "NOT_ALLOWED - attempt to reuse consumer tag '%s'", op->s3);
			conn_error(c, AMQP_NOT_ALLOWED, text, m->cls, m->meth);
			return NULL;
		}
	return op;
}

/*
 * basic.cancel, acted on at once: an unknown tag is answered cancel-ok, as
 * RabbitMQ.  A consumer in a long poll has the poll cancelled (the rows it
 * got still go out) and one not yet set up is marked; either sends
 * cancel-ok when it stops (consumer_session.c).
 */
static Op *
m_basic_cancel(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	char		tag[256];
	Consumer   *x;
	bool		nowait;

	rd_shortstr(r, tag);
	nowait = rd_bit(r);
	if (args_bad(c, r, m))
		return NULL;
	for (x = ch->consumers; x; x = x->next)
		if (!x->cancelled && !x->cancelling && strcmp(x->tag, tag) == 0)
			break;
	if (x == NULL)
	{
		if (!nowait)
		{
			method_begin(ch->id, AMQP_BASIC, 31);
			buf_shortstr(&out, tag);
			frame_send(c);
		}
		return NULL;
	}
	x->cancel_nowait = nowait;
	if (x->polling)
	{
		x->cancelling = true;
		cons_wake(x);			/* its poll returns, then cancel-ok */
	}
	else if (!x->ready)
		x->cancelling = true;
	else
		cons_send_cancel_ok(x);
	return NULL;
}

/*
 * basic.publish: the message waits in ch->pub for its content header
 * (content.c), which queues it; immediate=true is a connection error, as
 * RabbitMQ's.  In confirm mode it takes the channel's next sequence number.
 */
static Op *
m_basic_publish(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	PubMsg	   *msg = calloc(1, sizeof(PubMsg));
	bool		immediate;

	rd_u16(r);
	rd_shortstr(r, msg->exchange);
	rd_shortstr(r, msg->rk);
	msg->mandatory = rd_bit(r);
	immediate = rd_bit(r);
	if (r->err)
	{
		pub_free(msg);
		args_bad(c, r, m);
		return NULL;
	}
	if (immediate)
	{
		pub_free(msg);
		conn_error(c, AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - immediate=true", m->cls, m->meth);
		return NULL;
	}
	if (ch->confirm)
		msg->seq = ++ch->pub_seq;
	ch->pub = msg;
	ch->content = 1;
	return NULL;
}

/* basic.get */
static Op *
m_basic_get(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	Op		   *op = op_begin(ch, m, OP_GET, r);

	op->no_ack = rd_bit(r);
	return queue_args_end(c, ch, m, r, op);
}

/*
 * basic.ack, basic.reject and basic.nack (their bits differ).  The tag is
 * checked in the operation's turn, after the publishes and deliveries
 * before it.  Outside tx mode the consumers' prefetch credit comes back now,
 * when the settle arrives, as RabbitMQ's, not when its statement is done:
 * the consumers of a queue get their turns in the order their acks came.
 * (In tx mode: at commit.)
 */
static Op *
m_basic_settle(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	uint64_t	tag = rd_u64(r);
	bool		multiple = false,
				requeue = true;
	Op		   *op;

	/* ack: multiple; reject: requeue; nack: both */
	if (m->meth == 80)
		multiple = rd_bit(r);
	else if (m->meth == 90)
		requeue = rd_bit(r);
	else
	{
		multiple = rd_bit(r);
		requeue = rd_bit(r);
	}
	if (args_bad(c, r, m))
		return NULL;
	/* the tag is checked in the operation's turn (run_op) */
	op = op_new(ch, OP_SETTLE, m->cls, m->meth);
	if (!ch->tx)
	{
		Unacked    *e;
		bool		any = false;

		for (e = ch->unacked; e; e = e->next)
		{
			if (tag != 0 && e->tag > tag)
				break;
			if ((multiple || e->tag == tag) && e->cons && !e->early)
			{
				e->early = true;
				e->cons->credited++;
				any = true;
			}
		}
		if (any)
			chan_kick(ch);
	}
	op->settle = m->meth == 80 ? SETTLE_ACK : m->meth == 90 ? SETTLE_REJECT : SETTLE_NACK;
	op->requeue = requeue;
	op->tag = tag;
	op->multiple = multiple;
	return op;
}

/*
 * basic.recover-async and basic.recover: every unacked delivery is nacked
 * with requeue (recover answers recover-ok).  requeue=false is refused.
 */
static Op *
m_basic_recover(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	bool		requeue = rd_bit(r);
	Op		   *op;

	if (args_bad(c, r, m))
		return NULL;
	if (!requeue)
		return queue_error(ch, NULL, m, AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - requeue=false");
	op = op_new(ch, m->meth == 110 ? OP_RECOVER : OP_SETTLE, m->cls, m->meth);
	op->settle = SETTLE_NACK;
	op->requeue = true;
	op->tag = 0;
	op->multiple = true;
	return op;
}

/* ---- confirm and tx classes ---- */

/* confirm.select, at once; refused on a transactional channel. */
static Op *
m_confirm_select(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	bool		nowait = rd_bit(r);

	if (args_bad(c, r, m))
		return NULL;
	if (ch->tx)
		return queue_error(ch, NULL, m, AMQP_PRECONDITION_FAILED,
						   "PRECONDITION_FAILED - cannot switch from tx to confirm mode");
	ch->confirm = true;
	if (!nowait)
		send_simple(c, ch->id, AMQP_CONFIRM, 11);
	return NULL;
}

/*
 * tx.select: refused in confirm mode, answered at once if the channel is
 * already transactional, else queued (the switch waits for what is before).
 */
static Op *
m_tx_select(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	if (ch->confirm)
		return queue_error(ch, NULL, m, AMQP_PRECONDITION_FAILED,
						   "PRECONDITION_FAILED - cannot switch from confirm to tx mode");
	if (ch->tx)
	{
		send_simple(c, ch->id, AMQP_TX, 11);
		return NULL;
	}
	return op_new(ch, OP_TX_SELECT, m->cls, m->meth);
}

/* tx.commit and tx.rollback, only on a transactional channel. */
static Op *
m_tx_end(Conn *c, Chan *ch, const ChanMethod *m, Rd *r)
{
	if (!ch->tx)
		return queue_error(ch, NULL, m, AMQP_PRECONDITION_FAILED,
						   "PRECONDITION_FAILED - channel is not transactional");
	return op_new(ch, m->meth == 20 ? OP_TX_COMMIT : OP_TX_ROLLBACK, m->cls, m->meth);
}

/*
 * The methods of an open channel, in the spec's order.  A (class, method)
 * not listed here is answered 540 NOT_IMPLEMENTED, a connection error.
 */
static const ChanMethod chan_methods[] = {
	{AMQP_CHANNEL, 10, "channel.open", m_channel_open, 0},
	{AMQP_CHANNEL, 20, "channel.flow", m_channel_flow, 0},
	{AMQP_CHANNEL, 21, "channel.flow-ok", m_channel_flow_ok, 0},
	{AMQP_CHANNEL, 40, "channel.close", m_channel_close, CM_ANY_STATE | CM_QUEUED},
	{AMQP_CHANNEL, 41, "channel.close-ok", m_channel_close_ok, CM_WHILE_CLOSING},
	{AMQP_EXCHANGE, 10, "exchange.declare", m_exchange_declare, CM_QUEUED},
	{AMQP_EXCHANGE, 20, "exchange.delete", m_exchange_delete, CM_QUEUED},
	{AMQP_EXCHANGE, 30, "exchange.bind", m_exchange_bind, CM_QUEUED},
	{AMQP_EXCHANGE, 40, "exchange.unbind", m_exchange_bind, CM_QUEUED},
	{AMQP_QUEUE, 10, "queue.declare", m_queue_declare, CM_QUEUED},
	{AMQP_QUEUE, 20, "queue.bind", m_queue_bind, CM_QUEUED},
	{AMQP_QUEUE, 30, "queue.purge", m_queue_purge, CM_QUEUED},
	{AMQP_QUEUE, 40, "queue.delete", m_queue_delete, CM_QUEUED},
	{AMQP_QUEUE, 50, "queue.unbind", m_queue_bind, CM_QUEUED},
	{AMQP_BASIC, 10, "basic.qos", m_basic_qos, CM_QUEUED},
	{AMQP_BASIC, 20, "basic.consume", m_basic_consume, CM_QUEUED},
	{AMQP_BASIC, 30, "basic.cancel", m_basic_cancel, 0},
	{AMQP_BASIC, 40, "basic.publish", m_basic_publish, CM_CONTENT},
	{AMQP_BASIC, 70, "basic.get", m_basic_get, CM_QUEUED},
	{AMQP_BASIC, 80, "basic.ack", m_basic_settle, CM_QUEUED},
	{AMQP_BASIC, 90, "basic.reject", m_basic_settle, CM_QUEUED},
	{AMQP_BASIC, 100, "basic.recover-async", m_basic_recover, CM_QUEUED},
	{AMQP_BASIC, 110, "basic.recover", m_basic_recover, CM_QUEUED},
	{AMQP_BASIC, 120, "basic.nack", m_basic_settle, CM_QUEUED},
	{AMQP_CONFIRM, 10, "confirm.select", m_confirm_select, CM_QUEUED},
	{AMQP_TX, 10, "tx.select", m_tx_select, CM_QUEUED},
	{AMQP_TX, 20, "tx.commit", m_tx_end, CM_QUEUED},
	{AMQP_TX, 30, "tx.rollback", m_tx_end, CM_QUEUED},
};

/* The row of (cls, meth) in chan_methods, or NULL if there is none. */
static const ChanMethod *
chan_method_lookup(uint16_t cls, uint16_t meth)
{
	size_t		i;

	for (i = 0; i < sizeof(chan_methods) / sizeof(chan_methods[0]); i++)
		if (chan_methods[i].cls == cls && chan_methods[i].meth == meth)
			return &chan_methods[i];
	return NULL;
}

/*
 * A method frame on an open channel (connection.c has read its class and
 * method ids; r is at its arguments).
 *
 * channel.close is taken in any state.  Otherwise nothing is done while the
 * client's close is queued or the channel discards its input, and while our
 * close waits only close-ok counts.  A method where a content frame was due
 * is UNEXPECTED_FRAME; a method not in chan_methods, of a known class or
 * not, is 540 NOT_IMPLEMENTED, a connection exception in AMQP 0-9-1.  The
 * rest go to their handler, and the channel's queue is started if it
 * queued an operation.
 */
void
chan_method(Conn *c, Chan *ch, uint16_t cls, uint16_t meth, Rd *r)
{
	const ChanMethod *m = chan_method_lookup(cls, meth);
	Op		   *op;

	/* channel.close, whatever the state (a close may cross ours) */
	if (m && (m->flags & CM_ANY_STATE))
	{
		if (m->handler(c, ch, m, r))
			chan_pump(ch);
		return;
	}
	/* the client's close is queued, or a refused content is being dropped */
	if (ch->client_closing || ch->discarding)
		return;
	/* our close waits for close-ok; everything else is dropped until then */
	if (ch->state == CH_CLOSING)
	{
		if (m && (m->flags & CM_WHILE_CLOSING))
			m->handler(c, ch, m, r);
		return;
	}
	if (ch->content)
	{
		conn_error(c, AMQP_UNEXPECTED_FRAME,
				   "UNEXPECTED_FRAME - expected content header or body, got a method", cls, meth);
		return;
	}
	/*
	 * a method we do not know, of a known class or not; the class and
	 * method ids go in connection.close, as RabbitMQ's
	 */
	if (m == NULL || (m->flags & CM_WHILE_CLOSING))
	{
		char		text[128];

		snprintf(text, sizeof(text), "NOT_IMPLEMENTED - method %d.%d is not supported", cls, meth);
		conn_error(c, AMQP_NOT_IMPLEMENTED, text, cls, meth);
		return;
	}
	op = m->handler(c, ch, m, r);
	if (op)
		chan_pump(ch);
}
