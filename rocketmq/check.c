/*-------------------------------------------------------------------------
 *
 * check.c
 *	  RocketMQ's rules for names and messages: what a RocketMQ 5 Proxy
 *	  refuses before it does anything (docs/rocketmq.md, "Status codes").
 *
 * The rules and limits are those of the Proxy's defaults (its GrpcValidator,
 * SendMessageActivity and ProxyConfig; the client's Validators for names):
 * a topic or group name of letters, digits, '%', '|', '_' and '-', at most
 * 127 (topic) or 255 (group) characters; a tag, key or message group neither
 * blank nor holding a control character, a tag without '|', a message
 * group under 64 bytes; at most 128 user properties, none named as one of
 * RocketMQ's system properties or as the gateway's own header (RMQ_HEADER),
 * and together with the tag and keys at most
 * 16 KiB.  Each check answers 0 or the status code, with why set to the
 * message the client gets.
 *
 *-------------------------------------------------------------------------
 */
#include "rmq.h"

#include <string.h>

#define TOPIC_MAX_LENGTH 127
#define GROUP_MAX_LENGTH 255
#define MESSAGE_GROUP_MAX_SIZE 64
#define USER_PROPERTY_MAX_NUM 128
#define USER_PROPERTY_MAX_SIZE (16 * 1024)

/* the property names RocketMQ keeps for itself (MessageConst) */
static const char *const system_properties[] = {
	"KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID",
	"TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID",
	"ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG", "MQ2_FLAG",
	"RECONSUME_TIME", "MSG_REGION", "TRACE_ON", "UNIQ_KEY",
	"MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "POP_CK", "POP_CK_OFFSET",
	"1ST_POP_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "DUP_INFO",
	"EXTEND_UNIQ_INFO", "INSTANCE_ID", "CORRELATION_ID", "REPLY_TO_CLIENT",
	"TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE",
	"INNER_MULTI_QUEUE_OFFSET", "TIMER_DELAY_MS", "TIMER_DELAY_SEC",
	"TIMER_DELIVER_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS",
	"TIMER_ROLL_TIMES", "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY", "TIMER_DEL_MS",
	"TIMER_DELAY_LEVEL", "__BORNHOST", "BORN_TIMESTAMP", "DLQ_ORIGIN_TOPIC",
	"DLQ_ORIGIN_MESSAGE_ID", "__CRC32#",
};

/* only whitespace, as Java's Character.isWhitespace has it for ASCII */
static bool
blank(const char *s)
{
	for (; *s; s++)
		if (!strchr(" \t\n\v\f\r\x1c\x1d\x1e\x1f", *s))
			return false;
	return true;
}

/* a control character: U+0000-U+001F, U+007F-U+009F (Java's ISO control) */
static bool
has_control(const char *s)
{
	const unsigned char *p = (const unsigned char *) s;

	for (; *p; p++)
		if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return true;
	return false;
}

/* a name of RocketMQ's characters, of 1 to max characters */
static int
check_name(const char *name, size_t max, int code, const char *what, const char **why)
{
	size_t		n = strlen(name);

	if (n == 0 || blank(name))
	{
		*why = strcmp(what, "topic") == 0 ? "no topic given" : "no consumer group given";
		return code;
	}
	if (strspn(name, "%|_-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != n)
	{
		*why = strcmp(what, "topic") == 0 ?
			"the topic name contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$" :
			"the consumer group name contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$";
		return code;
	}
	if (n > max)
	{
		*why = strcmp(what, "topic") == 0 ?
			"the topic name is longer than 127 characters" :
			"the consumer group name is longer than 255 characters";
		return code;
	}
	return 0;
}

int
rmq_check_topic(const char *name, const char **why)
{
	return check_name(name ? name : "", TOPIC_MAX_LENGTH, CODE(ILLEGAL_TOPIC), "topic", why);
}

int
rmq_check_group(const char *name, const char **why)
{
	return check_name(name ? name : "", GROUP_MAX_LENGTH, CODE(ILLEGAL_CONSUMER_GROUP), "group", why);
}

/*
 * One message of a SendMessage whose first message names topic; the body's
 * size and encoding are the caller's (they depend on its settings).
 */
int
rmq_check_message(const PB(Message) * m, const char *topic, const char **why)
{
	const PB(SystemProperties) * sp = m->system_properties;
	size_t		size = 0;

	if (m->topic == NULL || sp == NULL)
	{
		*why = "a message needs a topic and system properties";
		return CODE(BAD_REQUEST);
	}
	if (strcmp(m->topic->name, topic) != 0)
	{
		*why = "the messages of one SendMessage name different topics";
		return CODE(MESSAGE_CORRUPTED);
	}
	if (blank(sp->message_id))
	{
		*why = "message id cannot be empty";
		return CODE(ILLEGAL_MESSAGE_ID);
	}
	if (sp->tag[0])
	{
		*why = blank(sp->tag) ? "tag cannot be the char sequence of whitespace" :
			strchr(sp->tag, '|') ? "tag cannot contain '|'" :
			has_control(sp->tag) ? "tag cannot contain control character" : NULL;
		if (*why)
			return CODE(ILLEGAL_MESSAGE_TAG);
		size += strlen(sp->tag);
	}
	for (size_t i = 0; i < sp->n_keys; i++)
	{
		if (sp->keys[i][0] == '\0')
			continue;
		*why = blank(sp->keys[i]) ? "key cannot be the char sequence of whitespace" :
			has_control(sp->keys[i]) ? "key cannot contain control character" : NULL;
		if (*why)
			return CODE(ILLEGAL_MESSAGE_KEY);
		size += strlen(sp->keys[i]);
	}
	if (sp->message_group[0])
	{
		*why = blank(sp->message_group) ? "message group cannot be the char sequence of whitespace" :
			strlen(sp->message_group) >= MESSAGE_GROUP_MAX_SIZE ? "message group exceeds the max size 64" :
			has_control(sp->message_group) ? "message group cannot contain control character" : NULL;
		if (*why)
			return CODE(ILLEGAL_MESSAGE_GROUP);
	}
	if (m->n_user_properties > USER_PROPERTY_MAX_NUM)
	{
		*why = "too many user properties, max is 128";
		return CODE(MESSAGE_PROPERTIES_TOO_LARGE);
	}
	for (size_t i = 0; i < m->n_user_properties; i++)
	{
		const char *k = m->user_properties[i]->key;
		const char *v = m->user_properties[i]->value;

		for (size_t j = 0; j < sizeof(system_properties) / sizeof(system_properties[0]); j++)
			if (strcmp(k, system_properties[j]) == 0)
			{
				*why = "the user property's name is one of RocketMQ's system properties";
				return CODE(ILLEGAL_MESSAGE_PROPERTY_KEY);
			}
		if (strcmp(k, RMQ_HEADER) == 0)
		{
			*why = "the user property " RMQ_HEADER " is reserved";
			return CODE(ILLEGAL_MESSAGE_PROPERTY_KEY);
		}
		if (has_control(k) || has_control(v))
		{
			*why = has_control(k) ? "the key of property cannot contain control character" :
				"the value of property cannot contain control character";
			return CODE(ILLEGAL_MESSAGE_PROPERTY_KEY);
		}
		size += strlen(k) + strlen(v);
	}
	if (size > USER_PROPERTY_MAX_SIZE)
	{
		*why = "the total size of user properties, tag and keys is too large, max is 16384";
		return CODE(MESSAGE_PROPERTIES_TOO_LARGE);
	}
	return 0;
}
