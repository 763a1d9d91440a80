/* intern: a table of shared strings, each distinct string kept once and
 * named by a small id; reference counted, so a string nobody holds any more
 * is freed and its id reused: the strings of a table fed by untrusted
 * objects are what is held, not what was ever seen (the id and slot arrays,
 * about 24 bytes an id, stay at their peak: they do not shrink). Slots are
 * picked by a keyed hash (strhash.h). For many objects that repeat
 * the same names and values: nfd-master keeps each NodeFeature's kept part as
 * ids into one such table (nfstore), thousands of nodes sharing their label
 * and feature names and values.
 *
 * Ids are small (the lowest free one is not promised, but ids are reused) so
 * that a caller can store them as varints. */
#ifndef FB_INTERN_H
#define FB_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct intern_ent;
struct intern {
	struct intern_ent *e;   /* by id; a free entry has str NULL */
	size_t n, size;         /* e[0..n) used or free; size: capacity */
	uint32_t *slot;         /* hash table of id + 1 (0: empty), linear probing */
	size_t cap, live;       /* slot capacity (a power of two); strings held */
	uint32_t free_head;     /* first free id + 1 (0: none), chained through refs */
	size_t bytes;           /* the strings' bytes, NULs included */
};

/* Cannot fail; intern_free is safe after it (and after a zeroed struct). */
void intern_init(struct intern *t);
void intern_free(struct intern *t);
/* The id of str, taking one reference to it (a copy is made when it is
 * new). Returns the id (>= 0) or -FB_ENOMEM (t unchanged). */
long intern_add(struct intern *t, const char *str);
/* Drops one reference taken by intern_add; the string is freed with its
 * last. An id not held is ignored. */
void intern_put(struct intern *t, uint32_t id);
/* The string of id, borrowed until its last reference goes; NULL when id
 * is not held. */
const char *intern_str(const struct intern *t, uint32_t id);
/* The id of str without taking a reference, or -1 when it is not held. */
long intern_find(const struct intern *t, const char *str);

#endif
