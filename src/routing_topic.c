/*-------------------------------------------------------------------------
 *
 * routing_topic.c
 *	  Topic exchange matching: a trie of binding key words, a single-pair
 *	  matcher, destination sets and routing key checks.
 *
 * Semantics follow RabbitMQ (rabbit_db_topic_exchange.erl) exactly.  A key
 * is split on '.' into words; the empty key has no words at all, while any
 * other key has one more word than it has dots, so "a..b" is three words
 * with an empty middle one and "." is two empty words.  In a binding key
 * the word "*" matches exactly one word and "#" zero or more words; "*"
 * and "#" inside a longer word ("a#b") are ordinary characters.
 *
 * The trie is RabbitMQ's: one node per distinct binding key prefix, edges
 * labelled by words, destinations stored at the node where their binding
 * key ends.  Routing walks the words of the routing key, following at each
 * node the literal edge, the "*" edge and the "#" edge (which may swallow
 * any number of words), so the cost depends on the shape of the keys and
 * not on the number of bindings.  With two or more "#" on a path the same
 * (node, remaining words) state can be reached along combinatorially many
 * paths; as in RabbitMQ those states are remembered and visited once.
 *
 * mq_topic_match() is a separate dynamic-programming matcher for one pair;
 * it shares no code with the trie so that the regression test can check
 * each against the other.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "args.h"
#include "routing.h"

/* A word of a key: points into the key, not NUL-terminated */
typedef struct MqWord
{
	const char *str;
	int			len;
} MqWord;

/* Key of a literal trie edge: (parent node, word) */
typedef struct MqTrieEdgeKey
{
	int32		parent;
	int32		len;
	const char *word;
} MqTrieEdgeKey;

/* A literal trie edge, as stored in the edge hash table */
typedef struct MqTrieEdge
{
	MqTrieEdgeKey key;
	int32		child;
	uint32		hash;
	char		status;
} MqTrieEdge;

static inline uint32 mq_trie_edge_hash(const MqTrieEdgeKey *key);

#define SH_PREFIX		mqedge
#define SH_ELEMENT_TYPE MqTrieEdge
#define SH_KEY_TYPE		MqTrieEdgeKey
#define SH_KEY			key
#define SH_HASH_KEY(tb, k)	mq_trie_edge_hash(&(k))
#define SH_EQUAL(tb, a, b)	((a).parent == (b).parent && (a).len == (b).len && \
							 memcmp((a).word, (b).word, (a).len) == 0)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a)	((a)->hash)
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* A trie node; nodes are numbered by their index in MqTopicTrie.nodes */
typedef struct MqTrieNode
{
	int32		star;			/* child by a "*" word, or -1 */
	int32		hash;			/* child by a "#" word, or -1 */
	int			ndests;			/* destinations of keys ending here */
	int			capdests;
	int32	   *dests;
} MqTrieNode;

struct MqTopicTrie
{
	MemoryContext cxt;			/* everything below lives here */
	int			nnodes;
	int			capnodes;
	MqTrieNode *nodes;			/* nodes[0] is the root */
	mqedge_hash *edges;			/* literal edges */
};

/* State of one mq_topic_trie_match() call */
typedef struct MqTrieWalk
{
	const MqTopicTrie *trie;
	MqWord	   *words;
	int			nwords;
	MqRouteSet *out;
	/* visited (node, word index) states, used once two "#" were taken */
	uint64	   *seen;
	int			nseen;
	int			capseen;		/* power of two, 0 until first needed */
} MqTrieWalk;

/* slot value of an empty entry in the open-addressing tables below */
#define MQ_EMPTY_SLOT (-1)

/* route sets switch from a linear scan to a hash index above this size */
#define MQ_ROUTE_SET_LINEAR_MAX 16

static void mq_trie_walk(MqTrieWalk *walk, int32 node, int pos, int hashes);
static void mq_trie_skip_any(MqTrieWalk *walk, int32 node, int pos,
							 int hashes);

/*
 * Hash of a trie edge key.
 */
static inline uint32
mq_trie_edge_hash(const MqTrieEdgeKey *key)
{
	return hash_combine(murmurhash32((uint32) key->parent),
						hash_bytes((const unsigned char *) key->word, key->len));
}

/*
 * Split a key into words, RabbitMQ style: "" has no words, otherwise every
 * '.' separates two (possibly empty) words.  Returns the number of words;
 * *words is palloc'd in CurrentMemoryContext and points into key.
 */
static int
mq_split_words(const char *key, MqWord **words)
{
	int			nwords;
	int			i;
	const char *p;
	const char *start;

	if (key[0] == '\0')
	{
		*words = NULL;
		return 0;
	}

	nwords = 1;
	for (p = key; *p; p++)
		if (*p == '.')
			nwords++;

	*words = palloc(sizeof(MqWord) * nwords);
	i = 0;
	start = key;
	for (p = key;; p++)
	{
		if (*p == '.' || *p == '\0')
		{
			(*words)[i].str = start;
			(*words)[i].len = p - start;
			i++;
			if (*p == '\0')
				break;
			start = p + 1;
		}
	}
	Assert(i == nwords);
	return nwords;
}

/* Is this word the given one-character wildcard? */
static inline bool
mq_word_is(const MqWord *w, char c)
{
	return w->len == 1 && w->str[0] == c;
}

/* ----------------------------------------------------------------
 *		Destination sets
 * ----------------------------------------------------------------
 */

/*
 * Initialize an empty destination set in CurrentMemoryContext.
 */
void
mq_route_set_init(MqRouteSet *set)
{
	set->n = 0;
	set->cap = 8;
	set->ids = palloc(sizeof(int32) * set->cap);
	set->nslots = 0;
	set->slots = NULL;
}

/*
 * Find the slot of id in the set's hash index: the slot holding its
 * position in ids, or the empty slot where it would go.
 */
static int
mq_route_set_slot(const MqRouteSet *set, int32 id)
{
	uint32		mask = set->nslots - 1;
	uint32		i = murmurhash32((uint32) id) & mask;

	for (;;)
	{
		int32		pos = set->slots[i];

		if (pos == MQ_EMPTY_SLOT || set->ids[pos] == id)
			return i;
		i = (i + 1) & mask;
	}
}

/*
 * (Re)build the hash index of a set so that it stays at most half full.
 */
static void
mq_route_set_rehash(MqRouteSet *set)
{
	int			nslots = 64;
	int			i;

	while (nslots < set->cap * 2)
		nslots *= 2;
	if (set->slots)
		pfree(set->slots);
	set->slots = MemoryContextAlloc(GetMemoryChunkContext(set->ids),
									sizeof(int32) * nslots);
	set->nslots = nslots;
	for (i = 0; i < nslots; i++)
		set->slots[i] = MQ_EMPTY_SLOT;
	for (i = 0; i < set->n; i++)
		set->slots[mq_route_set_slot(set, set->ids[i])] = i;
}

/*
 * Is id in the set?
 */
bool
mq_route_set_contains(const MqRouteSet *set, int32 id)
{
	int			i;

	if (set->nslots > 0)
		return set->slots[mq_route_set_slot(set, id)] != MQ_EMPTY_SLOT;

	for (i = 0; i < set->n; i++)
		if (set->ids[i] == id)
			return true;
	return false;
}

/*
 * Add id to the set unless it is already there.  Small sets (the usual
 * case) are scanned; larger ones get a hash index, so that routing to
 * thousands of queues stays linear.
 */
void
mq_route_set_add(MqRouteSet *set, int32 id)
{
	if (mq_route_set_contains(set, id))
		return;

	if (set->n == set->cap)
	{
		set->cap *= 2;
		set->ids = repalloc(set->ids, sizeof(int32) * set->cap);
		if (set->nslots > 0)
			mq_route_set_rehash(set);
	}
	set->ids[set->n++] = id;

	if (set->nslots > 0)
		set->slots[mq_route_set_slot(set, id)] = set->n - 1;
	else if (set->n > MQ_ROUTE_SET_LINEAR_MAX)
		mq_route_set_rehash(set);
}

/* qsort comparator for int32 */
static int
mq_int32_cmp(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return (x > y) - (x < y);
}

/*
 * Sort the ids ascending, e.g. to lock destination queues in a fixed order.
 */
void
mq_route_set_sort(MqRouteSet *set)
{
	if (set->n > 1)
		qsort(set->ids, set->n, sizeof(int32), mq_int32_cmp);
	if (set->nslots > 0)
		mq_route_set_rehash(set);
}

/* ----------------------------------------------------------------
 *		Key checks
 * ----------------------------------------------------------------
 */

/*
 * Raise an error if key is longer than an AMQP shortstr (255 bytes).
 * "what" names the key in the message: "routing key" or "binding key".
 */
void
mq_routing_key_check(const char *key, const char *what)
{
	size_t		len = strlen(key);

	if (len > MQ_ROUTING_KEY_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is too long", what),
				 errdetail("The %s starting with \"%.*s\" is %zu bytes long, but at most %d bytes are allowed.",
						   what, pg_mbcliplen(key, (int) len, 32), key,
						   len, MQ_ROUTING_KEY_MAX_BYTES)));
}

/*
 * Check a topic binding key before a binding is created: at most 255 bytes
 * and at most MQ_TOPIC_MAX_HASH_WILDCARDS "#" words, as RabbitMQ's
 * rabbit_exchange_type_topic:validate_binding/2.  Bindings that already
 * exist are routed whatever their shape.
 */
void
mq_topic_validate_binding_key(const char *binding_key)
{
	MqWord	   *words;
	int			nwords;
	int			nhashes = 0;
	int			i;

	mq_routing_key_check(binding_key, "binding key");

	nwords = mq_split_words(binding_key, &words);
	for (i = 0; i < nwords; i++)
		if (mq_word_is(&words[i], '#'))
			nhashes++;
	if (words)
		pfree(words);

	if (nhashes > MQ_TOPIC_MAX_HASH_WILDCARDS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("topic binding key \"%s\" has too many \"#\" wildcards",
						binding_key),
				 errdetail("The key uses %d \"#\" wildcards, but at most %d are allowed.",
						   nhashes, MQ_TOPIC_MAX_HASH_WILDCARDS)));
}

/* ----------------------------------------------------------------
 *		Single-pair matcher
 * ----------------------------------------------------------------
 */

/*
 * Does binding_key match routing_key?
 *
 * Dynamic programming over word positions: m[j] is true when the binding
 * words seen so far match the first j routing words.  O(words^2) time and
 * no recursion, whatever the number of "#".
 */
bool
mq_topic_match(const char *binding_key, const char *routing_key)
{
	MqWord	   *bw;
	MqWord	   *rw;
	int			nb;
	int			nr;
	bool	   *m;
	bool	   *next;
	bool		result;
	int			i;
	int			j;

	nb = mq_split_words(binding_key, &bw);
	nr = mq_split_words(routing_key, &rw);

	m = palloc0(sizeof(bool) * (nr + 1));
	next = palloc(sizeof(bool) * (nr + 1));
	m[0] = true;

	for (i = 0; i < nb; i++)
	{
		if (mq_word_is(&bw[i], '#'))
		{
			/* "#" extends any match by zero or more words */
			next[0] = m[0];
			for (j = 1; j <= nr; j++)
				next[j] = m[j] || next[j - 1];
		}
		else
		{
			bool		star = mq_word_is(&bw[i], '*');

			next[0] = false;
			for (j = 1; j <= nr; j++)
				next[j] = m[j - 1] &&
					(star ||
					 (bw[i].len == rw[j - 1].len &&
					  memcmp(bw[i].str, rw[j - 1].str, bw[i].len) == 0));
		}
		memcpy(m, next, sizeof(bool) * (nr + 1));
	}
	result = m[nr];

	pfree(m);
	pfree(next);
	if (bw)
		pfree(bw);
	if (rw)
		pfree(rw);
	return result;
}

/* ----------------------------------------------------------------
 *		Trie
 * ----------------------------------------------------------------
 */

/*
 * Append a fresh node to the trie and return its number.
 */
static int32
mq_trie_new_node(MqTopicTrie *trie)
{
	MqTrieNode *node;

	if (trie->nnodes == trie->capnodes)
	{
		trie->capnodes *= 2;
		trie->nodes = repalloc(trie->nodes,
							   sizeof(MqTrieNode) * trie->capnodes);
	}
	node = &trie->nodes[trie->nnodes];
	node->star = -1;
	node->hash = -1;
	node->ndests = 0;
	node->capdests = 0;
	node->dests = NULL;
	return trie->nnodes++;
}

/*
 * Create an empty trie in memory context cxt.  Adding bindings allocates
 * there too; deleting the context frees the trie.
 */
MqTopicTrie *
mq_topic_trie_create(MemoryContext cxt)
{
	MqTopicTrie *trie;

	trie = MemoryContextAlloc(cxt, sizeof(MqTopicTrie));
	trie->cxt = cxt;
	trie->nnodes = 0;
	trie->capnodes = 16;
	trie->nodes = MemoryContextAlloc(cxt, sizeof(MqTrieNode) * trie->capnodes);
	trie->edges = mqedge_create(cxt, 64, NULL);
	(void) mq_trie_new_node(trie);	/* the root */
	return trie;
}

/*
 * Add a binding: dest_id receives messages whose routing key matches
 * binding_key.  The key is not validated (see
 * mq_topic_validate_binding_key); adding the same pair twice is harmless.
 */
void
mq_topic_trie_add(MqTopicTrie *trie, const char *binding_key, int32 dest_id)
{
	MemoryContext oldcxt;
	MqWord	   *words;
	int			nwords;
	int32		node = 0;
	MqTrieNode *n;
	int			i;

	oldcxt = MemoryContextSwitchTo(trie->cxt);
	nwords = mq_split_words(binding_key, &words);

	for (i = 0; i < nwords; i++)
	{
		int32		child;

		if (mq_word_is(&words[i], '*') || mq_word_is(&words[i], '#'))
		{
			bool		star = (words[i].str[0] == '*');

			child = star ? trie->nodes[node].star : trie->nodes[node].hash;
			if (child < 0)
			{
				child = mq_trie_new_node(trie);
				/* nodes may have moved: index again */
				if (star)
					trie->nodes[node].star = child;
				else
					trie->nodes[node].hash = child;
			}
		}
		else
		{
			MqTrieEdgeKey key;
			MqTrieEdge *edge;
			bool		found;

			key.parent = node;
			key.len = words[i].len;
			key.word = words[i].str;
			edge = mqedge_insert(trie->edges, key, &found);
			if (!found)
			{
				char	   *copy = palloc(words[i].len + 1);

				memcpy(copy, words[i].str, words[i].len);
				copy[words[i].len] = '\0';
				edge->key.word = copy;
				/* mq_trie_new_node does not touch the edge table */
				edge->child = mq_trie_new_node(trie);
			}
			child = edge->child;
		}
		node = child;
	}

	/*
	 * Duplicates are harmless (route sets drop them), so only the common
	 * case of the same destination added twice in a row is filtered here;
	 * a full scan would make thousands of bindings with one key quadratic.
	 */
	n = &trie->nodes[node];
	if (n->ndests == 0 || n->dests[n->ndests - 1] != dest_id)
	{
		if (n->ndests == n->capdests)
		{
			n->capdests = Max(4, n->capdests * 2);
			if (n->dests)
				n->dests = repalloc(n->dests, sizeof(int32) * n->capdests);
			else
				n->dests = palloc(sizeof(int32) * n->capdests);
		}
		n->dests[n->ndests++] = dest_id;
	}

	if (words)
		pfree(words);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Hash of a (node, word position) walk state.
 */
static inline uint32
mq_state_hash(uint64 key)
{
	return hash_combine(murmurhash32((uint32) (key >> 32)),
						murmurhash32((uint32) key));
}

/*
 * Remember that the walk reached (node, pos); return false if it had been
 * there already.  Open addressing over uint64 keys, kept at most half full.
 */
static bool
mq_trie_walk_visit(MqTrieWalk *walk, int32 node, int pos)
{
	uint64		key = ((uint64) (uint32) node << 32) | (uint32) pos;
	uint32		mask;
	uint32		i;

	if (walk->nseen * 2 >= walk->capseen)
	{
		int			oldcap = walk->capseen;
		uint64	   *old = walk->seen;
		int			k;

		walk->capseen = Max(256, oldcap * 2);
		walk->seen = palloc(sizeof(uint64) * walk->capseen);
		memset(walk->seen, 0xFF, sizeof(uint64) * walk->capseen);
		walk->nseen = 0;
		for (k = 0; k < oldcap; k++)
		{
			if (old[k] != PG_UINT64_MAX)
			{
				mask = walk->capseen - 1;
				i = mq_state_hash(old[k]) & mask;
				while (walk->seen[i] != PG_UINT64_MAX)
					i = (i + 1) & mask;
				walk->seen[i] = old[k];
				walk->nseen++;
			}
		}
		if (old)
			pfree(old);
	}

	mask = walk->capseen - 1;
	i = mq_state_hash(key) & mask;
	while (walk->seen[i] != PG_UINT64_MAX)
	{
		if (walk->seen[i] == key)
			return false;
		i = (i + 1) & mask;
	}
	walk->seen[i] = key;
	walk->nseen++;
	return true;
}

/*
 * Match the routing words from pos on against the subtrie at node.
 * hashes counts the "#" edges taken so far: below two, no state can be
 * reached twice and the bookkeeping is skipped (as in RabbitMQ).
 */
static void
mq_trie_walk(MqTrieWalk *walk, int32 node, int pos, int hashes)
{
	const MqTopicTrie *trie = walk->trie;
	const MqTrieNode *n = &trie->nodes[node];

	check_stack_depth();

	if (hashes >= 2 && !mq_trie_walk_visit(walk, node, pos))
		return;

	if (pos == walk->nwords)
	{
		int			i;

		for (i = 0; i < n->ndests; i++)
			mq_route_set_add(walk->out, n->dests[i]);
		/* a trailing "#" matches zero words */
		if (n->hash >= 0)
			mq_trie_walk(walk, n->hash, pos, hashes + 1);
		return;
	}

	/* the literal edge for this word */
	if (trie->edges->members > 0)
	{
		MqTrieEdgeKey key;
		MqTrieEdge *edge;

		key.parent = node;
		key.len = walk->words[pos].len;
		key.word = walk->words[pos].str;
		edge = mqedge_lookup(trie->edges, key);
		if (edge)
			mq_trie_walk(walk, edge->child, pos + 1, hashes);
	}

	/* "*" takes exactly this word */
	if (n->star >= 0)
		mq_trie_walk(walk, n->star, pos + 1, hashes);

	/* "#" takes zero or more words */
	if (n->hash >= 0)
		mq_trie_skip_any(walk, n->hash, pos, hashes + 1);
}

/*
 * Continue below a "#" node having let it swallow 0, 1, ... of the
 * remaining words.
 */
static void
mq_trie_skip_any(MqTrieWalk *walk, int32 node, int pos, int hashes)
{
	int			p;

	for (p = pos; p <= walk->nwords; p++)
		mq_trie_walk(walk, node, p, hashes);
}

/*
 * Add to out the destinations of every binding whose key matches
 * routing_key.  Temporary memory is taken from CurrentMemoryContext and
 * freed before returning.
 */
void
mq_topic_trie_match(const MqTopicTrie *trie, const char *routing_key,
					MqRouteSet *out)
{
	MqTrieWalk	walk;

	walk.trie = trie;
	walk.nwords = mq_split_words(routing_key, &walk.words);
	walk.out = out;
	walk.seen = NULL;
	walk.nseen = 0;
	walk.capseen = 0;

	mq_trie_walk(&walk, 0, 0, 0);

	if (walk.words)
		pfree(walk.words);
	if (walk.seen)
		pfree(walk.seen);
}

/* ----------------------------------------------------------------
 *		SQL-callable functions
 * ----------------------------------------------------------------
 */

PG_FUNCTION_INFO_V1(mq_topic_matches_sql);
PG_FUNCTION_INFO_V1(mq_topic_route_sql);

/*
 * mq.topic_matches(binding_key text, routing_key text) RETURNS boolean
 */
Datum
mq_topic_matches_sql(PG_FUNCTION_ARGS)
{
	char	   *binding_key;
	char	   *routing_key;

	MQ_CHECK_ARGS(fcinfo, "binding_key", "routing_key");
	binding_key = text_to_cstring(PG_GETARG_TEXT_PP(0));
	routing_key = text_to_cstring(PG_GETARG_TEXT_PP(1));
	PG_RETURN_BOOL(mq_topic_match(binding_key, routing_key));
}

/*
 * mq.topic_route(binding_keys text[], routing_key text) RETURNS int[]
 *
 * Builds a trie binding element i (1-based) of binding_keys to destination
 * i and returns the matching destinations in ascending order.  Mostly
 * for testing the trie against mq.topic_matches().
 */
Datum
mq_topic_route_sql(PG_FUNCTION_ARGS)
{
	char	   *routing_key;
	MemoryContext triecxt;
	MqTopicTrie *trie;
	MqRouteSet	set;
	Datum	   *elems;
	int			nelems;
	Datum	   *result;
	int			i;

	MQ_CHECK_ARGS(fcinfo, "binding_keys", "routing_key");
	elems = mq_array_arg(fcinfo, 0, TEXTOID, "binding_keys", &nelems);
	routing_key = text_to_cstring(PG_GETARG_TEXT_PP(1));

	triecxt = AllocSetContextCreate(CurrentMemoryContext, "mq topic trie",
									ALLOCSET_DEFAULT_SIZES);
	trie = mq_topic_trie_create(triecxt);
	for (i = 0; i < nelems; i++)
	{
		char	   *key = TextDatumGetCString(elems[i]);

		mq_topic_trie_add(trie, key, i + 1);
		pfree(key);
	}

	mq_route_set_init(&set);
	mq_topic_trie_match(trie, routing_key, &set);
	mq_route_set_sort(&set);
	MemoryContextDelete(triecxt);

	result = palloc(sizeof(Datum) * Max(set.n, 1));
	for (i = 0; i < set.n; i++)
		result[i] = Int32GetDatum(set.ids[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(result, set.n, INT4OID, sizeof(int32),
										  true, TYPALIGN_INT));
}
