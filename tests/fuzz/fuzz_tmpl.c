/* fuzz_tmpl: untrusted bytes as a labelsTemplate (core/tmpl.h), parsed and
 * run over a small matchedFeatures data set (domains, lists of flag,
 * attribute and instance elements). Property checks:
 * - parsing gives 0 or -FB_EINVAL with a message (never anything else);
 * - running gives 0, or -FB_EINVAL with a message; the output stays within
 *   TMPL_OUT_MAX (plus the last append);
 * - a second run gives the same output.
 * The corpus (tests/fuzz/corpus/tmpl) starts from the templates of
 * tests/unit/data/tmpl/cases.txt. Built as fuzz_rules is. */
#include "../../core/arena.h"
#include "../../core/buf.h"
#include "../../core/err.h"
#include "../../core/tmpl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tval *elem(struct arena *ar, const struct tval *empty, const char *const *kv)
{
	struct tval *m = tmpl_map(ar, "nodefeaturerule.MatchedElement", empty);

	for (; m && kv[0]; kv += 2)
		if (tmpl_map_put(ar, m, kv[0], tmpl_str(ar, kv[1])) < 0)
			abort();
	return m;
}

static const struct tval *dataset(struct arena *ar)
{
	static const char *const e1[] = { "Name", "AVX", NULL }, *const e2[] = { "Name", "family", "Value", "6", NULL };
	static const char *const e3[] = { "class", "0300", "vendor", "10de", "device", "20b0", NULL };
	static const char *const e4[] = { "class", "0200", "vendor", "8086", NULL };
	struct tval *empty = tmpl_str(ar, ""), *nolist = tmpl_list(ar, "[]nodefeaturerule.MatchedElement");
	struct tval *nodom = tmpl_map(ar, "nodefeaturerule.domainMatchedFeatures", nolist);
	struct tval *root = tmpl_map(ar, "nodefeaturerule.matchedFeatures", nodom);
	struct tval *cpu = tmpl_map(ar, "nodefeaturerule.domainMatchedFeatures", nolist);
	struct tval *pci = tmpl_map(ar, "nodefeaturerule.domainMatchedFeatures", nolist);
	struct tval *cpuid = tmpl_list(ar, "[]nodefeaturerule.MatchedElement");
	struct tval *model = tmpl_list(ar, "[]nodefeaturerule.MatchedElement");
	struct tval *dev = tmpl_list(ar, "[]nodefeaturerule.MatchedElement");

	if (!root || !cpu || !pci || !cpuid || !model || !dev || tmpl_map_put(ar, root, "cpu", cpu) < 0 ||
	    tmpl_map_put(ar, root, "pci", pci) < 0 || tmpl_map_put(ar, cpu, "cpuid", cpuid) < 0 ||
	    tmpl_map_put(ar, cpu, "model", model) < 0 || tmpl_map_put(ar, pci, "device", dev) < 0 ||
	    tmpl_list_push(ar, cpuid, elem(ar, empty, e1)) < 0 || tmpl_list_push(ar, model, elem(ar, empty, e2)) < 0 ||
	    tmpl_list_push(ar, dev, elem(ar, empty, e3)) < 0 || tmpl_list_push(ar, dev, elem(ar, empty, e4)) < 0)
		abort();
	return root;
}

static char *run(const struct tmpl *t, const struct tval *d, int *rc)
{
	char msg[TMPL_MSG_SIZE] = "";
	struct buf out;

	buf_init(&out, 0);
	buf_put(&out, "", 0);
	*rc = tmpl_exec(t, d, &out, msg);
	if ((*rc != 0 && *rc != -FB_EINVAL && *rc != -FB_ENOMEM) || (*rc == -FB_EINVAL && !msg[0]) ||
	    out.len > 2 * TMPL_OUT_MAX)
		abort();
	return buf_take(&out, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[TMPL_MSG_SIZE] = "", *src = malloc(size + 1), *a, *b;
	struct arena ar;
	struct tmpl *t;
	int rc, rc2;

	if (!src)
		return 0;
	memcpy(src, data, size);
	src[size] = 0;
	arena_init(&ar);
	rc = tmpl_parse(&ar, src, &t, msg);
	if (rc != 0 && (rc != -FB_EINVAL || !msg[0]) && rc != -FB_ENOMEM)
		abort();
	if (rc == 0) {
		const struct tval *d = dataset(&ar);

		a = run(t, d, &rc);
		b = run(t, d, &rc2);
		if (rc != rc2 || (a && b && strcmp(a, b) != 0))
			abort();
		free(a);
		free(b);
	}
	arena_free(&ar);
	free(src);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
