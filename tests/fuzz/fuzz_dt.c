/* fuzz_dt: a devicetree blob from untrusted bytes, through everything
 * dt-labeller does with it: validation, the walk, property lookup and the
 * label-name sanitiser.
 *
 * Built two ways: with clang -fsanitize=fuzzer (make fuzz, local runs that grow
 * tests/fuzz/corpus/dt), and as a plain program whose main() replays every
 * file named on the command line or found in the directories named there,
 * which is how `make test` runs the corpus under ASan+UBSan. */
#include "../../core/dt.h"
#include "../../core/labels.h"
#include "dtnames.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int visit(void *ctx, struct dt *dt, const struct dt_node *node)
{
	struct fb_errinfo ei;
	const void *val;
	ssize_t len = dt_getprop(dt, node, "compatible", &val, &ei);

	*(size_t *)ctx += strlen(node->path);
	if (len <= 0)
		return 0;
	check_compatible_names(val, (size_t)len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fb_errinfo ei;
	struct dt *dt;
	size_t sum = 0;

	if (dt_open_blob_mem(&dt, data, size, "fuzz", &ei) == 0) {
		dt_walk(dt, visit, &sum, &ei);
		dt_free(dt);
	}
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
