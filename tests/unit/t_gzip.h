/* t_gzip.h: an independent gzip writer for the tests of core/inflate (its
 * unit test and its fuzz target): the data as stored blocks, with a bitwise
 * CRC-32, so the decoder is checked against code that shares nothing with it. */
#ifndef FB_T_GZIP_H
#define FB_T_GZIP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline uint32_t t_crc32(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffff;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c >> 1 ^ (0xedb88320 & (0u - (c & 1)));
	}
	return ~c;
}

/* plain as a gzip file of stored blocks of at most 65535 bytes, in a new
 * buffer of *len bytes; NULL when out of memory. */
static inline unsigned char *t_stored_gzip(const unsigned char *plain, size_t n, size_t *len)
{
	unsigned char *g = malloc(n + (n / 65535 + 1) * 5 + 18), *p = g;
	uint32_t crc = t_crc32(plain, n);
	size_t off = 0;

	if (!g)
		return NULL;
	memcpy(p, "\x1f\x8b\x08\0\0\0\0\0\0\x03", 10);
	p += 10;
	do {
		size_t k = n - off > 65535 ? 65535 : n - off;

		*p++ = off + k == n;
		*p++ = (unsigned char)k;
		*p++ = (unsigned char)(k >> 8);
		*p++ = (unsigned char)~k;
		*p++ = (unsigned char)(~k >> 8);
		if (k)
			memcpy(p, plain + off, k);
		p += k;
		off += k;
	} while (off < n);
	for (int k = 0; k < 4; k++)
		*p++ = (unsigned char)(crc >> 8 * k);
	for (int k = 0; k < 4; k++)
		*p++ = (unsigned char)(n >> 8 * k);
	*len = (size_t)(p - g);
	return g;
}

#endif
