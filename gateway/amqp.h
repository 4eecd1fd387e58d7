/*-------------------------------------------------------------------------
 *
 * amqp.h
 *	  AMQP 0-9-1 wire format for mq-amqp (docs/amqp.md), the interface of
 *	  codec.c.
 *
 * Buffers to build frames, a reader to parse method arguments and content
 * headers, and the conversion between AMQP field tables and the JSON that
 * queue_ext stores as a message's headers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MQ_AMQP_H
#define MQ_AMQP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* frame types, end octet */
#define AMQP_FRAME_METHOD	1
#define AMQP_FRAME_HEADER	2
#define AMQP_FRAME_BODY		3
#define AMQP_FRAME_HEARTBEAT 8
#define AMQP_FRAME_END		0xCE

/* classes */
#define AMQP_CONNECTION	10
#define AMQP_CHANNEL	20
#define AMQP_EXCHANGE	40
#define AMQP_QUEUE		50
#define AMQP_BASIC		60
#define AMQP_CONFIRM	85
#define AMQP_TX			90

/* reply codes */
#define AMQP_REPLY_SUCCESS		200
#define AMQP_CONTENT_TOO_LARGE	311
#define AMQP_NO_ROUTE			312
#define AMQP_CONNECTION_FORCED	320
#define AMQP_INVALID_PATH		402
#define AMQP_ACCESS_REFUSED		403
#define AMQP_NOT_FOUND			404
#define AMQP_RESOURCE_LOCKED	405
#define AMQP_PRECONDITION_FAILED 406
#define AMQP_FRAME_ERROR		501
#define AMQP_SYNTAX_ERROR		502
#define AMQP_COMMAND_INVALID	503
#define AMQP_CHANNEL_ERROR		504
#define AMQP_UNEXPECTED_FRAME	505
#define AMQP_RESOURCE_ERROR		506
#define AMQP_NOT_ALLOWED		530
#define AMQP_NOT_IMPLEMENTED	540
#define AMQP_INTERNAL_ERROR		541

/* the key of the headers object that keeps what queue_ext has no column for */
#define AMQP_PROPS_KEY "x-amqp-properties"
/* the key that marks a typed value jsonb cannot hold (docs/amqp.md) */
#define AMQP_TYPE_KEY "$amqp"

typedef struct Buf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
} Buf;

extern void buf_reserve(Buf *b, size_t more);
extern void buf_free(Buf *b);
extern void buf_u8(Buf *b, uint8_t v);
extern void buf_u16(Buf *b, uint16_t v);
extern void buf_u32(Buf *b, uint32_t v);
extern void buf_u64(Buf *b, uint64_t v);
extern void buf_bytes(Buf *b, const void *p, size_t n);
extern void buf_shortstr(Buf *b, const char *s);
extern void buf_longstr(Buf *b, const void *p, size_t n);
extern void buf_set_u32(Buf *b, size_t at, uint32_t v);
/* a field table from a JSON object (typed values decoded), NULL: empty */
extern bool buf_table_json(Buf *b, json_object *obj, char *err, size_t errlen);

typedef struct Rd
{
	const uint8_t *p;
	size_t		len;
	size_t		pos;
	bool		err;
	/* bit fields: the octet being read and the next bit */
	uint8_t		bits;
	int			nbit;
} Rd;

extern void rd_init(Rd *r, const uint8_t *p, size_t len);
extern uint8_t rd_u8(Rd *r);
extern uint16_t rd_u16(Rd *r);
extern uint32_t rd_u32(Rd *r);
extern uint64_t rd_u64(Rd *r);
extern bool rd_bit(Rd *r);
/* a shortstr into out (256 bytes), NUL-terminated; err if it holds a NUL */
extern void rd_shortstr(Rd *r, char *out);
extern const uint8_t *rd_longstr(Rd *r, uint32_t *len);
/* a field table as a JSON object (typed encoding for what JSON lacks) */
extern json_object *rd_table(Rd *r);
/* x-arguments' typed numbers as plain JSON numbers, in place */
extern void amqp_args_plain(json_object *tbl, bool only_x);

/* the AMQP value of a broker-written ISO 8601 UTC time, -1 if none */
extern int64_t amqp_parse_iso_time(const char *s);

/* lookups in the JSON of a table: a member, a member that is a string */
extern json_object *json_get(json_object *o, const char *key);
extern const char *json_str(json_object *o, const char *key);

extern uint16_t be16(const uint8_t *p);
extern uint32_t be32(const uint8_t *p);
extern uint64_t be64(const uint8_t *p);

#endif
