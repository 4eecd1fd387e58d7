/*-------------------------------------------------------------------------
 *
 * annotations.c
 *	  What the broker stores with a message beyond what its publisher
 *	  set: the routing keys of sender-selected distribution (CC, BCC) and
 *	  the marks of its death history, kept in the message's properties
 *	  under "annotations" (RabbitMQ 4 keeps them as message annotations),
 *	  and the properties as consumers see them, without those.
 *
 * A pure helper of the publish path, dead-lettering and consuming: it
 * reads and builds jsonb, nothing else.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "annotations.h"
#include "routing.h"

/*
 * The strings of header name's array (CC or BCC), appended to keys[*n];
 * returns whether the header is there.  RabbitMQ refuses a message whose
 * CC or BCC is not an array (rabbit_basic:header_routes), and takes only
 * the strings of an array.
 */
static bool
sender_header_keys(Jsonb *headers, const char *name, char ***keys, int *n, int *cap)
{
	JsonbValue	k;
	JsonbValue *v;
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;

	if (headers == NULL)
		return false;
	k.type = jbvString;
	k.val.string.val = (char *) name;
	k.val.string.len = strlen(name);
	v = findJsonbValueFromContainer(&headers->root, JB_FOBJECT, &k);
	if (v == NULL)
		return false;
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("header \"%s\" must be an array of routing keys", name),
				 errdetail("Sender-selected distribution takes the strings of a JSON array as extra routing keys.")));
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		char	   *key;

		if (tok != WJB_ELEM || elem.type != jbvString)
			continue;
		key = pnstrdup(elem.val.string.val, elem.val.string.len);
		mq_routing_key_check(key, strcmp(name, "CC") == 0 ? "CC routing key" : "BCC routing key");
		if (*n == *cap)
		{
			*cap *= 2;
			*keys = repalloc(*keys, sizeof(char *) * *cap);
		}
		(*keys)[(*n)++] = key;
	}
	return true;
}

/* A JSON array of n strings, appended to buf */
static void
append_json_strings(StringInfo buf, char **strs, int n)
{
	appendStringInfoChar(buf, '[');
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoString(buf, ", ");
		escape_json(buf, strs[i]);
	}
	appendStringInfoChar(buf, ']');
}

int
mq_sender_keys(char *rk, Jsonb **headers, char ***keys, Jsonb **annotations)
{
	int			cap = 4;
	int			n = 1;
	int			ncc;
	bool		has_bcc;

	*keys = palloc(sizeof(char *) * cap);
	(*keys)[0] = rk;
	*annotations = NULL;
	(void) sender_header_keys(*headers, "CC", keys, &n, &cap);
	ncc = n;
	has_bcc = sender_header_keys(*headers, "BCC", keys, &n, &cap);
	/* consumers never see BCC (RabbitMQ strips it when it takes the message) */
	if (has_bcc)
		*headers = DatumGetJsonbP(DirectFunctionCall2(jsonb_delete,
													  JsonbPGetDatum(*headers),
													  CStringGetTextDatum("BCC")));
	if (n > 1)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfoString(&buf, "{\"annotations\": {\"routing-keys\": ");
		append_json_strings(&buf, *keys, n);
		if (n > ncc)
		{
			appendStringInfoString(&buf, ", \"bcc\": ");
			append_json_strings(&buf, *keys + ncc, n - ncc);
		}
		appendStringInfoString(&buf, "}}");
		*annotations = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
														  CStringGetDatum(buf.data)));
	}
	return n;
}

/* The annotations object of stored properties, or NULL */
static JsonbValue *
annotations_of(Jsonb *properties)
{
	JsonbValue	k;
	JsonbValue *v;

	if (properties == NULL)
		return NULL;
	k.type = jbvString;
	k.val.string.val = "annotations";
	k.val.string.len = strlen("annotations");
	v = findJsonbValueFromContainer(&properties->root, JB_FOBJECT, &k);
	if (v == NULL || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		return NULL;
	return v;
}

bool
mq_properties_dead_lettered(Jsonb *properties)
{
	JsonbValue *ann = annotations_of(properties);
	JsonbValue	k;
	JsonbValue *v;

	if (ann == NULL)
		return false;
	k.type = jbvString;
	k.val.string.val = "deaths";
	k.val.string.len = strlen("deaths");
	v = findJsonbValueFromContainer(ann->val.binary.data, JB_FOBJECT, &k);
	return v != NULL && v->type == jbvBool && v->val.boolean;
}

int
mq_message_keys(char *rk, Jsonb *properties, char ***keys)
{
	JsonbValue *ann = annotations_of(properties);
	JsonbValue	k;
	JsonbValue *v = NULL;
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	int			n = 0;
	int			cap = 4;

	if (ann)
	{
		k.type = jbvString;
		k.val.string.val = "routing-keys";
		k.val.string.len = strlen("routing-keys");
		v = findJsonbValueFromContainer(ann->val.binary.data, JB_FOBJECT, &k);
	}
	if (v == NULL || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
	{
		*keys = palloc(sizeof(char *));
		(*keys)[0] = rk;
		return 1;
	}
	*keys = palloc(sizeof(char *) * cap);
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM || elem.type != jbvString)
			continue;
		if (n == cap)
		{
			cap *= 2;
			*keys = repalloc(*keys, sizeof(char *) * cap);
		}
		(*keys)[n++] = pnstrdup(elem.val.string.val, elem.val.string.len);
	}
	if (n == 0)
		(*keys)[n++] = rk;
	return n;
}

Jsonb *
mq_properties_public(Jsonb *properties)
{
	Jsonb	   *res;

	if (annotations_of(properties) == NULL)
		return properties;
	res = DatumGetJsonbP(DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(properties),
											 CStringGetTextDatum("annotations")));
	/* nothing else: no properties, as for a message published without any */
	return JB_ROOT_COUNT(res) == 0 ? NULL : res;
}
