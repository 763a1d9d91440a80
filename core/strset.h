/* strset: a set of owned strings. Strings are added in any order (repeats
 * allowed); strset_sort then makes the set sorted in byte order and unique,
 * after which strset_has is a binary search. Before it, strset_has scans.
 * For sets of names: tracked keys (nodelabels), CPU flags. */
#ifndef FB_STRSET_H
#define FB_STRSET_H

#include <stddef.h>

struct strset {
	char **v;       /* the strings, owned; v[0..n) */
	size_t n, size; /* size: the capacity of v */
	int sorted;     /* strset_sort ran and nothing was added since */
};

/* Cannot fail; strset_free is safe after it (and after a zeroed struct). */
void strset_init(struct strset *s);
void strset_free(struct strset *s);
/* Adds a copy of str. Returns 0 or -FB_ENOMEM (s unchanged). */
int strset_add(struct strset *s, const char *str);
/* Adds a copy of a[0..alen) followed by b[0..blen). Returns 0 or
 * -FB_ENOMEM (s unchanged). */
int strset_add2(struct strset *s, const char *a, size_t alen, const char *b, size_t blen);
/* Sorts (strcmp order) and drops repeats. */
void strset_sort(struct strset *s);
/* 1 when str is in s, else 0. */
int strset_has(const struct strset *s, const char *str);
/* Removes every copy of str; the order of the others is kept. */
void strset_del(struct strset *s, const char *str);
/* Keeps the strings keep(ctx, str) says 1 to, in their order; frees the rest. */
void strset_filter(struct strset *s, int (*keep)(void *ctx, const char *str), void *ctx);
/* strcmp for qsort and bsearch over arrays of string pointers (char * or
 * const char *), as strset_sort uses it. */
int strset_cmp(const void *a, const void *b);

#endif
