/* arena: chained blocks of at least 4 KiB; a request bigger than a block gets
 * a block of its own. */
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK 4096

struct arena_blk {
	struct arena_blk *next;
	size_t used, size;
	alignas(max_align_t) unsigned char data[];
};

void arena_init(struct arena *a)
{
	a->head = NULL;
	a->bytes = 0;
}

void arena_free(struct arena *a)
{
	struct arena_blk *b = a->head, *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	arena_init(a);
}

void *arena_alloc(struct arena *a, size_t n)
{
	const size_t al = alignof(max_align_t);
	struct arena_blk *b = a->head;
	size_t need, size;

	if (n > SIZE_MAX - al - sizeof *b)
		return NULL;
	need = (n + al - 1) & ~(al - 1);
	if (!b || b->size - b->used < need) {
		size = need > ARENA_BLOCK ? need : ARENA_BLOCK;
		if (!(b = malloc(sizeof *b + size)))
			return NULL;
		b->used = 0;
		b->size = size;
		/* a block of its own goes behind the current one, which keeps its room */
		if (need > ARENA_BLOCK && a->head) {
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	b->used += need;
	a->bytes += n;
	return b->data + b->used - need;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);

	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}
