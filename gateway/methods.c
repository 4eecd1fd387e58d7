/*-------------------------------------------------------------------------
 *
 * methods.c
 *	  The methods of an open channel (channel, exchange, queue, basic,
 *	  confirm and tx classes): each is decoded and queued as an operation of
 *	  the channel, or answered at once.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
chan_method(Conn *c, Chan *ch, uint16_t cls, uint16_t meth, Rd *r)
{
	char		s1[256],
				text[600];
	Op		   *op = NULL;

	if (cls == AMQP_CHANNEL && meth == 40)
	{
		/* channel.close from the client */
		if (ch->state == CH_CLOSING)
		{
			/* crossed ours */
			send_simple(c, ch->id, AMQP_CHANNEL, 41);
			chan_free(ch);
			return;
		}
		/* what came before it is done first (publishes, acks) */
		if (ch->pub)
		{
			pub_free(ch->pub);
			ch->pub = NULL;
		}
		ch->content = 0;
		ch->client_closing = true;
		op_new(ch, OP_CLOSE, cls, meth);
		chan_pump(ch);
		return;
	}
	if (ch->client_closing || ch->discarding)
		return;
	if (ch->state == CH_CLOSING)
	{
		if (cls == AMQP_CHANNEL && meth == 41)
			chan_free(ch);
		return;					/* everything else is dropped until close-ok */
	}
	if (ch->content)
	{
		conn_error(c, AMQP_UNEXPECTED_FRAME,
				   "UNEXPECTED_FRAME - expected content header or body, got a method", cls, meth);
		return;
	}

#define QUEUE_ERROR(code_, text_) \
	do { if (op == NULL) op = op_new(ch, OP_ERROR, cls, meth); \
		 op->kind = OP_ERROR; op->code = (code_); \
		 snprintf(op->s2, sizeof(op->s2), "%s", (text_)); chan_pump(ch); return; } while (0)
#define ARGS_OK() \
	do { if (r->err) { conn_error(c, AMQP_FRAME_ERROR, "FRAME_ERROR - cannot decode the method's arguments", cls, meth); return; } } while (0)

	switch (cls * 1000 + meth)
	{
		case AMQP_CHANNEL * 1000 + 10:	/* channel.open on an open channel */
			conn_error(c, AMQP_CHANNEL_ERROR, "CHANNEL_ERROR - second 'channel.open' seen", cls, meth);
			return;
		case AMQP_CHANNEL * 1000 + 20:	/* flow */
			ch->flow = rd_bit(r);
			ARGS_OK();
			method_begin(ch->id, AMQP_CHANNEL, 21);
			buf_u8(&out, ch->flow ? 1 : 0);
			frame_send(c);
			if (ch->flow)
				chan_kick(ch);
			return;
		case AMQP_CHANNEL * 1000 + 21:	/* flow-ok: we never send flow */
			return;
		case AMQP_EXCHANGE * 1000 + 10:	/* declare */
			op = op_new(ch, OP_EXCHANGE_DECLARE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			rd_shortstr(r, op->s2);
			op->passive = rd_bit(r);
			op->durable = rd_bit(r);
			op->auto_delete = rd_bit(r);
			{
				bool		internal = rd_bit(r);

				op->nowait = rd_bit(r);
				op->args = rd_table(r);
				ARGS_OK();
				amqp_args_plain(op->args, false);
				if (internal && !op->passive)
				{
					QUEUE_ERROR(AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - internal exchanges are not supported by mq-amqp");
				}
			}
			break;
		case AMQP_EXCHANGE * 1000 + 20:	/* delete */
			op = op_new(ch, OP_EXCHANGE_DELETE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->if_unused = rd_bit(r);
			op->nowait = rd_bit(r);
			ARGS_OK();
			break;
		case AMQP_EXCHANGE * 1000 + 30:	/* bind */
		case AMQP_EXCHANGE * 1000 + 40:	/* unbind */
			QUEUE_ERROR(AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - exchange-to-exchange bindings are not supported by queue_ext");
		case AMQP_QUEUE * 1000 + 10:	/* declare */
			op = op_new(ch, OP_QUEUE_DECLARE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->passive = rd_bit(r);
			op->durable = rd_bit(r);
			op->exclusive = rd_bit(r);
			op->auto_delete = rd_bit(r);
			op->nowait = rd_bit(r);
			op->args = rd_table(r);
			ARGS_OK();
			amqp_args_plain(op->args, false);
			if (op->passive && op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			break;
		case AMQP_QUEUE * 1000 + 20:	/* bind */
		case AMQP_QUEUE * 1000 + 50:	/* unbind */
			op = op_new(ch, meth == 20 ? OP_QUEUE_BIND : OP_QUEUE_UNBIND, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			rd_shortstr(r, op->s2);
			rd_shortstr(r, op->s3);
			if (meth == 20)
				op->nowait = rd_bit(r);
			op->args = rd_table(r);
			ARGS_OK();
			amqp_args_plain(op->args, true);
			if (op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			if (op->s2[0] == '\0')
			{
				/* before the queue is looked up, as RabbitMQ */
				QUEUE_ERROR(AMQP_ACCESS_REFUSED, "ACCESS_REFUSED - operation not permitted on the default exchange");
			}
			break;
		case AMQP_QUEUE * 1000 + 30:	/* purge */
			op = op_new(ch, OP_QUEUE_PURGE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->nowait = rd_bit(r);
			ARGS_OK();
			if (op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			break;
		case AMQP_QUEUE * 1000 + 40:	/* delete */
			op = op_new(ch, OP_QUEUE_DELETE, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->if_unused = rd_bit(r);
			op->if_empty = rd_bit(r);
			op->nowait = rd_bit(r);
			ARGS_OK();
			if (op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			break;
		case AMQP_BASIC * 1000 + 10:	/* qos */
			{
				uint32_t	size = rd_u32(r);
				uint16_t	count = rd_u16(r);
				bool		global = rd_bit(r);

				ARGS_OK();
				if (size != 0)
				{
					/* a connection exception, as RabbitMQ's */
					snprintf(text, sizeof(text), "NOT_IMPLEMENTED - prefetch_size!=0 (%u)", size);
					conn_error(c, AMQP_NOT_IMPLEMENTED, text, cls, meth);
					return;
				}
				if (global)
					ch->prefetch_global = count;
				else
					ch->prefetch_consumer = count;
				op = op_new(ch, OP_REPLY, cls, meth);
				frame_begin(AMQP_FRAME_METHOD, ch->id);
				buf_u16(&out, AMQP_BASIC);
				buf_u16(&out, 11);
				buf_set_u32(&out, 3, out.len - 7);
				buf_u8(&out, AMQP_FRAME_END);
				buf_bytes(&op->reply, out.data, out.len);
				chan_kick(ch);
				break;
			}
		case AMQP_BASIC * 1000 + 20:	/* consume */
			{
				Consumer   *x;

				op = op_new(ch, OP_CONSUME, cls, meth);
				rd_u16(r);
				rd_shortstr(r, op->s1);
				rd_shortstr(r, op->s3);
				rd_bit(r);		/* no-local: nothing to do, as RabbitMQ */
				op->no_ack = rd_bit(r);
				op->exclusive = rd_bit(r);
				op->nowait = rd_bit(r);
				op->args = rd_table(r);
				ARGS_OK();
				amqp_args_plain(op->args, false);
				if (op->s1[0] == '\0')
					snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
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
						snprintf(text, sizeof(text),
								 "NOT_ALLOWED - attempt to reuse consumer tag '%s'", op->s3);
						conn_error(c, AMQP_NOT_ALLOWED, text, cls, meth);
						return;
					}
				break;
			}
		case AMQP_BASIC * 1000 + 30:	/* cancel */
			{
				Consumer   *x;
				bool		nowait;

				rd_shortstr(r, s1);
				nowait = rd_bit(r);
				ARGS_OK();
				for (x = ch->consumers; x; x = x->next)
					if (!x->cancelled && !x->cancelling && strcmp(x->tag, s1) == 0)
						break;
				if (x == NULL)
				{
					/* unknown tag: ok, as RabbitMQ */
					if (!nowait)
					{
						method_begin(ch->id, AMQP_BASIC, 31);
						buf_shortstr(&out, s1);
						frame_send(c);
					}
					return;
				}
				x->cancel_nowait = nowait;
				if (x->polling)
				{
					/* stop the long poll; its rows (if any) still go out */
					x->cancelling = true;
					pg_cancel(x->pg);
				}
				else if (!x->ready)
					x->cancelling = true;
				else
					cons_send_cancel_ok(x);
				return;
			}
		case AMQP_BASIC * 1000 + 40:	/* publish */
			{
				PubMsg	   *m = calloc(1, sizeof(PubMsg));
				bool		immediate;

				rd_u16(r);
				rd_shortstr(r, m->exchange);
				rd_shortstr(r, m->rk);
				m->mandatory = rd_bit(r);
				immediate = rd_bit(r);
				if (r->err)
				{
					pub_free(m);
					ARGS_OK();
				}
				if (immediate)
				{
					pub_free(m);
					conn_error(c, AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - immediate=true", cls, meth);
					return;
				}
				if (ch->confirm)
					m->seq = ++ch->pub_seq;
				ch->pub = m;
				ch->content = 1;
				return;
			}
		case AMQP_BASIC * 1000 + 70:	/* get */
			op = op_new(ch, OP_GET, cls, meth);
			rd_u16(r);
			rd_shortstr(r, op->s1);
			op->no_ack = rd_bit(r);
			ARGS_OK();
			if (op->s1[0] == '\0')
				snprintf(op->s1, sizeof(op->s1), "%s", ch->last_queue);
			break;
		case AMQP_BASIC * 1000 + 80:	/* ack */
		case AMQP_BASIC * 1000 + 90:	/* reject */
		case AMQP_BASIC * 1000 + 120:	/* nack */
			{
				uint64_t	tag = rd_u64(r);
				bool		multiple = false,
							requeue = true;

				if (meth == 80)
					multiple = rd_bit(r);
				else if (meth == 90)
					requeue = rd_bit(r);
				else
				{
					multiple = rd_bit(r);
					requeue = rd_bit(r);
				}
				ARGS_OK();
				/* the tag is checked in the operation's turn: after the
				 * publishes and deliveries before it */
				op = op_new(ch, OP_SETTLE, cls, meth);
				if (!ch->tx)
				{
					/*
					 * The consumer's prefetch credit comes back when the
					 * settle arrives, as RabbitMQ's, not when its statement
					 * is done: the consumers of a queue get their turns in
					 * the order their acks came.  (In tx mode: at commit.)
					 */
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
				op->settle = meth == 80 ? SETTLE_ACK : meth == 90 ? SETTLE_REJECT : SETTLE_NACK;
				op->requeue = requeue;
				op->tag = tag;
				op->multiple = multiple;
				break;
			}
		case AMQP_BASIC * 1000 + 100:	/* recover-async */
		case AMQP_BASIC * 1000 + 110:	/* recover */
			{
				bool		requeue = rd_bit(r);

				ARGS_OK();
				if (!requeue)
				{
					QUEUE_ERROR(AMQP_NOT_IMPLEMENTED, "NOT_IMPLEMENTED - requeue=false");
				}
				op = op_new(ch, meth == 110 ? OP_RECOVER : OP_SETTLE, cls, meth);
				op->settle = SETTLE_NACK;
				op->requeue = true;
				op->tag = 0;
				op->multiple = true;
				break;
			}
		case AMQP_CONFIRM * 1000 + 10:	/* select */
			{
				bool		nowait = rd_bit(r);

				ARGS_OK();
				if (ch->tx)
				{
					QUEUE_ERROR(AMQP_PRECONDITION_FAILED, "PRECONDITION_FAILED - cannot switch from tx to confirm mode");
				}
				ch->confirm = true;
				if (!nowait)
					send_simple(c, ch->id, AMQP_CONFIRM, 11);
				return;
			}
		case AMQP_TX * 1000 + 10:	/* select */
			if (ch->confirm)
			{
				QUEUE_ERROR(AMQP_PRECONDITION_FAILED, "PRECONDITION_FAILED - cannot switch from confirm to tx mode");
			}
			if (ch->tx)
			{
				send_simple(c, ch->id, AMQP_TX, 11);
				return;
			}
			op = op_new(ch, OP_TX_SELECT, cls, meth);
			break;
		case AMQP_TX * 1000 + 20:	/* commit */
		case AMQP_TX * 1000 + 30:	/* rollback */
			if (!ch->tx)
			{
				QUEUE_ERROR(AMQP_PRECONDITION_FAILED, "PRECONDITION_FAILED - channel is not transactional");
			}
			op = op_new(ch, meth == 20 ? OP_TX_COMMIT : OP_TX_ROLLBACK, cls, meth);
			break;
		default:
			/*
			 * An unknown method, of a known class or not: 540 is a
			 * connection exception in AMQP 0-9-1
			 */
			snprintf(text, sizeof(text), "NOT_IMPLEMENTED - method %d.%d is not supported", cls, meth);
			conn_error(c, AMQP_NOT_IMPLEMENTED, text, cls, meth);
			return;
	}
#undef ARGS_OK
#undef QUEUE_ERROR
	chan_pump(ch);
}
