/* strhash: the hash of a string for the slots of a hash table whose keys
 * come from untrusted objects (nfd-master's interned strings and its maps
 * of names). FNV-1a keyed by a per-process secret (the kernel's AT_RANDOM
 * bytes), then a full avalanche, so the low bits that pick a slot depend on
 * every bit: a node cannot choose names that pile onto one slot without
 * knowing the key. Not for hashes that must be the same across processes. */
#ifndef FB_STRHASH_H
#define FB_STRHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t strhash(const char *s);
/* The same with the key given (tests: a zero key is what an attacker could
 * compute). */
uint64_t strhash_key_(const char *s, const uint64_t key[2]);

#endif
