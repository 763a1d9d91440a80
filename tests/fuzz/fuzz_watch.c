/* fuzz_watch: watch stream framing. The input is fed whole and in slices cut
 * at positions taken from its first bytes; both must deliver the same events
 * (type and re-printed object) in the same order. Replay main as in fuzz_dt.c. */
#include "../../core/kube.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct trace {
	char buf[4096];
	size_t len;
};

static int record(void *ctx, const char *type, struct json *obj)
{
	struct trace *t = ctx;
	char *p = json_print(obj, NULL);
	int n = snprintf(t->buf + t->len, sizeof(t->buf) - t->len, "%s:%.64s;", type, p ? p : "");

	free(p);
	if (n > 0 && t->len + (size_t)n < sizeof(t->buf))
		t->len += (size_t)n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_framer f;
	struct fb_errinfo ei;
	struct trace whole = { .len = 0 }, sliced = { .len = 0 };
	int r1, r2 = 0;
	size_t pos = 0, step = size ? (size_t)(data[0] % 7) + 1 : 1;

	kube_framer_init(&f, 1024);
	r1 = kube_framer_feed(&f, (const char *)data, size, record, &whole, &ei);
	kube_framer_free(&f);
	kube_framer_init(&f, 1024);
	while (pos < size && r2 == 0) {
		size_t n = size - pos < step ? size - pos : step;

		r2 = kube_framer_feed(&f, (const char *)data + pos, n, record, &sliced, &ei);
		pos += n;
	}
	kube_framer_free(&f);
	/* same events up to the first error, and the same verdict */
	if (r1 != r2 || whole.len != sliced.len || memcmp(whole.buf, sliced.buf, whole.len) != 0)
		abort();
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
