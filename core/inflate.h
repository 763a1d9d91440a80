/* inflate: gzip files (RFC 1952) of DEFLATE data (RFC 1951), decoded whole in
 * memory under a hard cap on the output. The kernel source reads
 * /proc/config.gz with it, as upstream does with Go's compress/gzip.
 *
 * What is accepted is what Go's reader accepts: one member or several, their
 * outputs concatenated (gzip's own behaviour); anything after the last member
 * is an error, as is an empty file; reserved header flags are ignored; FEXTRA
 * is skipped; FNAME and FCOMMENT may hold at most 511 bytes before their NUL;
 * FHCRC covers the whole header; CRC-32 and ISIZE of every member are checked;
 * an incomplete Huffman code is refused except a lone code of length 1, and an
 * empty one fails only when used. Bounded: no recursion, a few KiB of stack
 * and the output buffer, which never grows past max + 1 bytes. */
#ifndef FB_INFLATE_H
#define FB_INFLATE_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* Decodes the gzip file in[0..len) into a new buffer *out (the caller frees
 * it) holding the output and a NUL, and returns the output's length. *out is
 * NULL on error. Output longer than max bytes: -FB_E2BIG (never a truncated
 * result). Malformed input: -FB_EINVAL. -FB_ENOMEM. On an error, ei (may be
 * NULL) gets name as its what and the problem as its detail, e.g. "invalid
 * distance too far back". max must be under SSIZE_MAX. */
ssize_t inflate_gzip(const void *in, size_t len, size_t max, char **out, const char *name,
		     struct fb_errinfo *ei);

#endif
