/* fuzz_inflate: untrusted bytes through inflate_gzip three ways, with
 * property checks:
 * - as a gzip file under a 256 KiB cap: an error is -FB_EINVAL or -FB_E2BIG
 *   with no output and a message; a success is NUL-terminated, within the
 *   cap, and decodes again to the same bytes under a cap of exactly its
 *   length, and to -FB_E2BIG under one byte less;
 * - after a fixed 10-byte gzip header, so every input is DEFLATE blocks
 *   straight away (the trailer is whatever the last 8 bytes are): the same
 *   bounds;
 * - wrapped here in stored blocks with the right CRC-32 and ISIZE: the
 *   output is the input.
 *
 * Built two ways: with clang -fsanitize=fuzzer (make fuzz, local runs that
 * grow tests/fuzz/corpus/inflate), and as a plain program whose main()
 * replays every file named on the command line or found in the directories
 * named there, which is how `make test` runs the corpus under ASan+UBSan. */
#include "../../core/inflate.h"
#include "../unit/t_gzip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP (256u << 10)

static void check(const uint8_t *in, size_t len)
{
	struct fb_errinfo ei;
	char *out, *again;
	ssize_t r, r2;

	fb_errinfo_init(&ei);
	r = inflate_gzip(in, len, CAP, &out, "fuzz", &ei);
	if (r < 0) {
		if ((r != -FB_EINVAL && r != -FB_E2BIG) || out || !ei.detail[0])
			abort();
		return;
	}
	if (!out || (size_t)r > CAP || out[r] != '\0')
		abort();
	r2 = inflate_gzip(in, len, (size_t)r, &again, "fuzz", NULL);
	if (r2 != r || memcmp(again, out, (size_t)r) != 0)
		abort();
	free(again);
	if (r > 0) {
		if (inflate_gzip(in, len, (size_t)r - 1, &again, "fuzz", NULL) != -FB_E2BIG || again)
			abort();
	}
	free(out);
}

static void stored(const uint8_t *data, size_t size)
{
	size_t len;
	unsigned char *g = t_stored_gzip(data, size, &len);
	char *out;
	ssize_t r;

	if (!g)
		return;
	r = inflate_gzip(g, len, size, &out, "fuzz", NULL);
	if (r != (ssize_t)size || memcmp(out, data, size) != 0)
		abort();
	free(out);
	free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *raw = malloc(size + 10);

	check(data, size);
	if (raw) {
		memcpy(raw, "\x1f\x8b\x08\0\0\0\0\0\0\x03", 10);
		memcpy(raw + 10, data, size);
		check(raw, size + 10);
		free(raw);
	}
	stored(data, size);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
