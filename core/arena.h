/* arena: many small allocations with one lifetime (pciutils' names-hash
 * way), freed together. Blocks are chained; nothing is freed singly. */
#ifndef FB_ARENA_H
#define FB_ARENA_H

#include <stddef.h>

struct arena_blk;
struct arena {
	struct arena_blk *head;
	size_t bytes; /* requested bytes handed out, for caps and metrics */
};

/* Cannot fail; arena_free is safe after it. */
void arena_init(struct arena *a);
/* Frees every block; the arena is empty (and usable) after. */
void arena_free(struct arena *a);
/* n bytes aligned for any object, owned by the arena; NULL when out of memory. */
void *arena_alloc(struct arena *a, size_t n);
/* A NUL-terminated copy of s[0..n) in the arena; NULL when out of memory. */
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_strdup(struct arena *a, const char *s);

#endif
