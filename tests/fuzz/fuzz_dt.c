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

#include <dirent.h>
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
	const char *p, *end;

	*(size_t *)ctx += strlen(node->path);
	if (len <= 0)
		return 0;
	for (p = val, end = p + len; p < end;) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t slen = nul ? (size_t)(nul - p) : (size_t)(end - p);
		char name[LABELS_NAME_MAX + 1];
		ssize_t n = labels_dt_name(p, slen, name, sizeof(name));

		if (n > 0 && !labels_valid_name(name, (size_t)n))
			abort(); /* the sanitiser must only produce valid names */
		p += slen + 1;
	}
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
static int replay_file(const char *path, int *count)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	size_t n;

	if (!f) {
		printf("FAIL: fuzz/dt: %s (cannot open)\n", path);
		return 1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	++*count;
	return 0;
}

/* A crash or sanitizer report ends the process before the PASS line. */
int main(int argc, char **argv)
{
	int rc = 0, count = 0;

	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *de;
		char path[4096];

		if (!d) {
			rc |= replay_file(argv[i], &count);
			continue;
		}
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			rc |= replay_file(path, &count);
		}
		closedir(d);
	}
	if (count == 0)
		printf("FAIL: fuzz/dt: empty corpus\n");
	else if (rc == 0)
		printf("PASS: fuzz/dt: replayed %d inputs under the sanitizers\n", count);
	return rc || count == 0;
}
#endif
