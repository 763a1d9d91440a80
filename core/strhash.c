#include "strhash.h"

#include <string.h>
#include <sys/auxv.h>

/* The key: read once from AT_RANDOM (16 bytes the kernel put on the
 * initial stack for this exec; no syscall). Written before any use and
 * never changed: a second thread that races the first read writes the same
 * value. */
static uint64_t key[2];
static int keyed;

uint64_t strhash(const char *s)
{
	if (!keyed) {
		const void *r = (const void *)getauxval(AT_RANDOM);

		if (r)
			memcpy(key, r, sizeof(key));
		keyed = 1;
	}
	return strhash_key_(s, key);
}

uint64_t strhash_key_(const char *s, const uint64_t k[2])
{
	uint64_t h = 0xcbf29ce484222325ULL ^ k[0];

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	/* the finaliser of MurmurHash3 (fmix64), keyed again */
	h ^= k[1];
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}
