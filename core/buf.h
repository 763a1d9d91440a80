/* buf: the base layer every module builds on, in the manner of skalibs'
 * stralloc/genalloc. A growable byte buffer whose failures are sticky (append
 * freely, check once at the end), array growth for hand-grown arrays, and a
 * cap so a buffer fed by someone else cannot exhaust memory. */
#ifndef FB_BUF_H
#define FB_BUF_H

#include <stddef.h>

/* p is NUL-terminated whenever it is non-NULL; len excludes the NUL, size is
 * the capacity. err is 0, or -FB_ENOMEM / -FB_E2BIG from the first failed
 * append: later appends do nothing, so callers check it once. */
struct buf {
	char *p;
	size_t len, size;
	size_t max; /* the most len may become; 0 means no cap */
	int err;
};

/* Cannot fail; max as above. buf_free is safe after it. */
void buf_init(struct buf *b, size_t max);
void buf_free(struct buf *b);
/* len back to 0 and err cleared; the memory is kept for reuse. */
void buf_reset(struct buf *b);
/* Room for n more bytes and the NUL. Returns 0 or the (sticky) error. */
int buf_reserve(struct buf *b, size_t n);
void buf_put(struct buf *b, const void *s, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_putc(struct buf *b, char c);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Cuts len back to n (n <= len). */
void buf_truncate(struct buf *b, size_t n);
/* Hands the bytes (NUL-terminated, an empty string when nothing was put) to
 * the caller, who frees them; *len gets their length when len is non-NULL.
 * NULL when the buffer failed (it is freed then). The buffer is empty after. */
char *buf_take(struct buf *b, size_t *len);

/* Grows the array *p of elements elem bytes wide so it holds at least need
 * elements, doubling *size (the capacity, in elements) from 8. Leaves *p and
 * *size alone when they already suffice. Returns 0, or -FB_ENOMEM with *p
 * unchanged (still owned by the caller) or when need * elem overflows. */
int array_grow_(void *p, size_t *size, size_t need, size_t elem);
#define ARRAY_GROW(arr, size, need) array_grow_(&(arr), &(size), (need), sizeof *(arr))

#endif
