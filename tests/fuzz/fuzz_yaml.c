/* fuzz_yaml: untrusted bytes as a YAML config or kubeconfig, and as a JSON
 * body, with property checks past "does not crash":
 * - a YAML document that parses prints as JSON that json_parse accepts and
 *   that equals the tree (depth limits, escapes and numbers agree);
 * - yaml_locate finds the first member or item of what parsed;
 * - a refusal is EINVAL or EDEPTH with a "line L column C: " detail;
 * - the same bytes as a JSON body: json_parse never fails with ENOMEM (its
 *   own check and cJSON agree on what is JSON), and what parses prints and
 *   parses back equal.
 *
 * Built two ways: with clang -fsanitize=fuzzer (make fuzz, local runs that grow
 * tests/fuzz/corpus/yaml), and as a plain program whose main() replays every
 * file named on the command line or found in the directories named there,
 * which is how `make test` runs the corpus under ASan+UBSan. */
#include "../../core/json.h"
#include "../../core/yaml.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_detail(const struct fb_errinfo *ei)
{
	int line, col;

	if (ei->code != FB_EINVAL && ei->code != FB_EDEPTH)
		abort();
	if (sscanf(ei->detail, "line %d column %d: ", &line, &col) != 2 || line < 1 || col < 1)
		abort();
}

/* print, parse back, compare: the tree must survive the trip */
static void check_reprint(const struct json *j)
{
	struct fb_errinfo ei;
	size_t len = 0;
	char *s = json_print(j, &len);
	struct json *back;

	if (!s || len != strlen(s))
		abort();
	back = json_parse(s, len, "printed", &ei);
	if (!back || !json_equal(j, back) || !json_equal(back, j))
		abort();
	json_free(back);
	free(s);
}

static void check_locate(const char *buf, size_t size, const struct json *j)
{
	struct json *first = json_child(j);
	int line, col, rc;

	if (!first)
		return;
	if (json_type(j) == JSON_OBJECT)
		rc = yaml_locate(buf, size, &line, &col, json_key(first), NULL);
	else
		rc = yaml_locate(buf, size, &line, &col, "0", NULL);
	if (rc != 0 || line < 1 || col < 1)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct fb_errinfo ei;
	struct json *j;

	fb_errinfo_init(&ei);
	j = yaml_parse(buf, size, "fuzz.yaml", &ei);
	if (j) {
		check_reprint(j);
		check_locate(buf, size, j);
		json_free(j);
	} else {
		check_detail(&ei);
	}

	fb_errinfo_init(&ei);
	j = json_parse(buf, size, "fuzz.json", &ei);
	if (j) {
		check_reprint(j);
		json_free(j);
	} else {
		check_detail(&ei);
	}
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
