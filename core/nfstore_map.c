/* nfstore: the string map and the hashing of JSON. */
#include "nfstore_int.h"

#include "err.h"
#include "strhash.h"

#include <stdlib.h>
#include <string.h>

uint64_t fnv_(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ULL;
	return h;
}

static size_t smap_find(const struct nfstore_map *m, const char *key)
{
	size_t i = strhash(key) & (m->cap - 1);

	while (m->s[i].key && strcmp(m->s[i].key, key) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

void *smap_get_(const struct nfstore_map *m, const char *key)
{
	const struct nfstore_slot *sl = m->cap ? &m->s[smap_find(m, key)] : NULL;

	return sl && sl->key ? sl->val : NULL;
}

int smap_put_(struct nfstore_map *m, const char *key, void *val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct nfstore_map g = { calloc(cap, sizeof(struct nfstore_slot)), cap, 0 };

		if (!g.s)
			return -FB_ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->s[i].key)
				g.s[smap_find(&g, m->s[i].key)] = m->s[i];
		g.n = m->n;
		free(m->s);
		*m = g;
	}
	size_t i = smap_find(m, key);

	if (!m->s[i].key)
		m->n++;
	m->s[i].key = key;
	m->s[i].val = val;
	return 0;
}

/* Linear probing removal with backward shift: no tombstones. */
void smap_del_(struct nfstore_map *m, const char *key)
{
	size_t i, j;

	if (!m->cap || !m->s[i = smap_find(m, key)].key)
		return;
	m->s[i].key = NULL;
	m->s[i].val = NULL;
	m->n--;
	for (j = (i + 1) & (m->cap - 1); m->s[j].key; j = (j + 1) & (m->cap - 1)) {
		size_t want = strhash(m->s[j].key) & (m->cap - 1);

		/* move j back to i unless its home lies cyclically in (i, j] */
		if ((j > i && (want <= i || want > j)) || (j < i && want <= i && want > j)) {
			m->s[i] = m->s[j];
			m->s[j].key = NULL;
			m->s[j].val = NULL;
			i = j;
		}
	}
}

/* The table only: the values are the caller's. */
void smap_free_(struct nfstore_map *m)
{
	free(m->s);
	m->s = NULL;
	m->cap = m->n = 0;
}

/* The bytes string s takes in compact JSON, quotes included. */
static size_t json_str_size(const char *s)
{
	size_t n = 2;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		n += c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t' ? 2
			: c < 0x20 ? 6 : 1;
	}
	return n;
}

/* A 1 MB object is not printed to a 1 MB string to be hashed or measured. */
uint64_t nfstore_hash_walk(const struct json *j, uint64_t h, size_t *size)
{
	size_t n = 0;
	enum json_type t = json_type(j);

	if (t == JSON_OBJECT || t == JSON_ARRAY) {
		h = fnv_(t == JSON_OBJECT ? "{" : "[", 1, h);
		n = 2;
		for (const struct json *c = json_child(j); c; c = json_next(c)) {
			if (t == JSON_OBJECT) {
				h = fnv_(json_key(c), strlen(json_key(c)) + 1, h);
				n += json_key_print_len(c) + 1; /* a name cut at a \u0000 prints its mark */
			}
			n += c != json_child(j); /* the comma */
			h = nfstore_hash_walk(c, h, size);
		}
		h = fnv_(t == JSON_OBJECT ? "}" : "]", 1, h);
	} else if (t == JSON_STRING) {
		h = fnv_("s", 1, h);
		h = fnv_(json_str(j), strlen(json_str(j)) + 1, h);
		n = json_str_size(json_str(j));
	} else if (j) {
		char *p = json_print(j, &n); /* null, true, 1.5, a string that held \u0000 (json.h) */

		if (p)
			h = fnv_(p, n, h);
		free(p);
	}
	if (size)
		*size += n;
	return h;
}

uint64_t hash_json_(const struct json *j, uint64_t h)
{
	return fnv_("|", 1, nfstore_hash_walk(j, h, NULL));
}

uint64_t nfstore_hash_set(const struct nl_set *s)
{
	uint64_t h = FNV0;

	h = hash_json_(s->labels, h);
	h = hash_json_(s->annotations, h);
	h = hash_json_(s->extended_resources, h);
	return hash_json_(s->taints, h);
}
