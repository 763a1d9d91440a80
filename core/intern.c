/* intern: shared reference-counted strings named by ids (intern.h). The
 * table holds ids, 4 bytes a slot, hashed by their string: half a pointer
 * map's slot, and the id is what callers store. */
#include "intern.h"

#include "buf.h"
#include "err.h"
#include "strhash.h"

#include <stdlib.h>
#include <string.h>

struct intern_ent {
	char *str;     /* owned; NULL: free */
	uint32_t refs; /* free: the next free id + 1 */
	uint32_t hash;
};

/* keyed (strhash.h): a hostile node cannot aim its names at one slot */
static uint32_t str_hash(const char *s)
{
	return (uint32_t)strhash(s);
}

void intern_init(struct intern *t)
{
	memset(t, 0, sizeof(*t));
}

void intern_free(struct intern *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].str);
	free(t->e);
	free(t->slot);
	intern_init(t);
}

/* The slot holding str (hash h), or the empty slot where it would go. */
static size_t find_slot(const struct intern *t, const char *str, uint32_t h)
{
	size_t i = h & (t->cap - 1);

	while (t->slot[i]) {
		const struct intern_ent *e = &t->e[t->slot[i] - 1];

		if (e->hash == h && strcmp(e->str, str) == 0)
			break;
		i = (i + 1) & (t->cap - 1);
	}
	return i;
}

long intern_find(const struct intern *t, const char *str)
{
	size_t i;

	if (!t->cap)
		return -1;
	i = find_slot(t, str, str_hash(str));
	return t->slot[i] ? (long)t->slot[i] - 1 : -1;
}

static int grow_slots(struct intern *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	uint32_t *s = calloc(cap, sizeof(*s));

	if (!s)
		return -FB_ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slot[i])
			continue;
		size_t j = t->e[t->slot[i] - 1].hash & (cap - 1);

		while (s[j])
			j = (j + 1) & (cap - 1);
		s[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = s;
	t->cap = cap;
	return 0;
}

long intern_add(struct intern *t, const char *str)
{
	uint32_t h = str_hash(str), id;
	size_t i, len;
	char *copy;

	if (t->cap && t->slot[i = find_slot(t, str, h)]) {
		struct intern_ent *e = &t->e[t->slot[i] - 1];

		if (e->refs == UINT32_MAX)
			return -FB_ENOMEM; /* never wraps: a held string stays held */
		e->refs++;
		return (long)t->slot[i] - 1;
	}
	if ((t->live + 1) * 2 > t->cap && grow_slots(t) < 0)
		return -FB_ENOMEM;
	if (!t->free_head && (t->n >= UINT32_MAX - 1 || ARRAY_GROW(t->e, t->size, t->n + 1) < 0))
		return -FB_ENOMEM;
	len = strlen(str) + 1;
	if (!(copy = malloc(len)))
		return -FB_ENOMEM;
	memcpy(copy, str, len);
	if (t->free_head) {
		id = t->free_head - 1;
		t->free_head = t->e[id].refs;
	} else {
		id = (uint32_t)t->n++;
	}
	t->e[id] = (struct intern_ent){ copy, 1, h };
	t->slot[find_slot(t, str, h)] = id + 1;
	t->live++;
	t->bytes += len;
	return id;
}

/* Removal with backward shift (linear probing, no tombstones). */
static void del_slot(struct intern *t, size_t i)
{
	size_t j = i;

	t->slot[i] = 0;
	for (;;) {
		j = (j + 1) & (t->cap - 1);
		if (!t->slot[j])
			return;
		size_t home = t->e[t->slot[j] - 1].hash & (t->cap - 1);

		/* slot j's entry may move to i when i lies cyclically in [home, j) */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			t->slot[i] = t->slot[j];
			t->slot[j] = 0;
			i = j;
		}
	}
}

void intern_put(struct intern *t, uint32_t id)
{
	struct intern_ent *e = id < t->n ? &t->e[id] : NULL;

	if (!e || !e->str || --e->refs)
		return;
	del_slot(t, find_slot(t, e->str, e->hash));
	t->bytes -= strlen(e->str) + 1;
	free(e->str);
	e->str = NULL;
	e->refs = t->free_head;
	t->free_head = id + 1;
	t->live--;
}

const char *intern_str(const struct intern *t, uint32_t id)
{
	return id < t->n ? t->e[id].str : NULL;
}
