/* replay.h: the corpus replay main() shared by the fuzz targets, for builds
 * without libFuzzer (make test runs it under ASan+UBSan). Include it at the
 * end of a target, after LLVMFuzzerTestOneInput. It prints one line:
 * "PASS: fuzz/NAME: replayed N inputs under the sanitizers"; a crash or
 * sanitizer report ends the process before that line. */
#ifndef FB_FUZZ_REPLAY_H
#define FB_FUZZ_REPLAY_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int replay_file(const char *path, int *count)
{
	static uint8_t buf[1 << 20];
	FILE *f = fopen(path, "rb");
	uint8_t *exact;
	size_t n;

	if (!f) {
		printf("FAIL: fuzz: %s (cannot open)\n", path);
		return 1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	/* a copy of exactly n bytes, so ASan sees any read past the end (the
	 * parsers take a length, not a NUL-terminated string) */
	exact = malloc(n ? n : 1);
	if (!exact) {
		printf("FAIL: fuzz: %s (out of memory)\n", path);
		return 1;
	}
	memcpy(exact, buf, n);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	++*count;
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '_');
	int rc = 0, count = 0;

	name = name ? name + 1 : argv[0];
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
		printf("FAIL: fuzz/%s: empty corpus\n", name);
	else if (rc == 0)
		printf("PASS: fuzz/%s: replayed %d inputs under the sanitizers\n", name, count);
	return rc || count == 0;
}

#endif
