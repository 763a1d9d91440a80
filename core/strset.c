/* strset: owned strings in a grown array; sorted on demand. */
#include "strset.h"

#include "buf.h"
#include "err.h"

#include <stdlib.h>
#include <string.h>

void strset_init(struct strset *s)
{
	memset(s, 0, sizeof(*s));
}

void strset_free(struct strset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	strset_init(s);
}

int strset_add2(struct strset *s, const char *a, size_t alen, const char *b, size_t blen)
{
	char *d;

	if (ARRAY_GROW(s->v, s->size, s->n + 1) < 0 || !(d = malloc(alen + blen + 1)))
		return -FB_ENOMEM;
	memcpy(d, a, alen);
	memcpy(d + alen, b, blen);
	d[alen + blen] = '\0';
	s->v[s->n++] = d;
	s->sorted = 0;
	return 0;
}

int strset_add(struct strset *s, const char *str)
{
	return strset_add2(s, str, strlen(str), "", 0);
}

int strset_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void strset_sort(struct strset *s)
{
	size_t j = 0;

	s->sorted = 1;
	if (s->n == 0)
		return;
	qsort(s->v, s->n, sizeof(*s->v), strset_cmp);
	for (size_t i = 1; i < s->n; i++) {
		if (strcmp(s->v[i], s->v[j]) == 0)
			free(s->v[i]);
		else
			s->v[++j] = s->v[i];
	}
	s->n = j + 1;
}

int strset_has(const struct strset *s, const char *str)
{
	if (s->sorted)
		return s->n && bsearch(&str, s->v, s->n, sizeof(*s->v), strset_cmp) != NULL;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], str) == 0)
			return 1;
	return 0;
}

void strset_del(struct strset *s, const char *str)
{
	size_t j = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->v[i], str) != 0)
			s->v[j++] = s->v[i];
		else
			free(s->v[i]);
	}
	s->n = j;
}

void strset_filter(struct strset *s, int (*keep)(void *ctx, const char *str), void *ctx)
{
	size_t j = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (keep(ctx, s->v[i]))
			s->v[j++] = s->v[i];
		else
			free(s->v[i]);
	}
	s->n = j;
}
