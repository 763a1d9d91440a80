/* buf: growable buffers with a sticky error, and array growth. */
#include "buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

void buf_init(struct buf *b, size_t max)
{
	memset(b, 0, sizeof *b);
	b->max = max;
}

void buf_free(struct buf *b)
{
	free(b->p);
	buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	b->err = 0;
	if (b->p)
		b->p[0] = '\0';
}

int buf_reserve(struct buf *b, size_t n)
{
	size_t size;
	char *p;

	if (b->err)
		return b->err;
	if ((b->max && n > b->max - b->len) || n > SIZE_MAX / 2 - b->len - 1)
		return b->err = -FB_E2BIG;
	if (b->len + n + 1 <= b->size)
		return 0;
	size = b->size ? b->size : 64;
	while (size < b->len + n + 1)
		size *= 2;
	if (!(p = realloc(b->p, size)))
		return b->err = -FB_ENOMEM;
	b->p = p;
	b->size = size;
	b->p[b->len] = '\0';
	return 0;
}

void buf_put(struct buf *b, const void *s, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

void buf_putc(struct buf *b, char c)
{
	buf_put(b, &c, 1);
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = -FB_EINVAL;
		return;
	}
	if (buf_reserve(b, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_truncate(struct buf *b, size_t n)
{
	if (n < b->len) {
		b->len = n;
		b->p[n] = '\0';
	}
}

char *buf_take(struct buf *b, size_t *len)
{
	char *p;

	if (!b->err && !b->p)
		buf_reserve(b, 0);
	if (b->err) {
		buf_free(b);
		return NULL;
	}
	p = b->p;
	if (len)
		*len = b->len;
	buf_init(b, b->max);
	return p;
}

int array_grow_(void *pp, size_t *size, size_t need, size_t elem)
{
	void *p, *np;
	size_t n;

	if (need <= *size)
		return 0;
	n = *size ? *size : 8;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -FB_ENOMEM;
		n *= 2;
	}
	if (n > SIZE_MAX / elem)
		return -FB_ENOMEM;
	memcpy(&p, pp, sizeof p);
	if (!(np = realloc(p, n * elem)))
		return -FB_ENOMEM;
	memcpy(pp, &np, sizeof np);
	*size = n;
	return 0;
}
