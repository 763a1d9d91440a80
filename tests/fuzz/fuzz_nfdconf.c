/* fuzz_nfdconf: untrusted bytes as nfd-worker.conf (or --options), through
 * the YAML subset and the config walk, with property checks:
 * - a refusal is EINVAL or EDEPTH with a "line L column C: " detail, and
 *   leaves the config exactly as it was;
 * - what is accepted leaves a config whose ownerRefs pass their own check,
 *   and applying the same text again changes nothing (it is idempotent);
 * - the first line, as a Go duration, either is refused or gives a number of
 *   nanoseconds that, written as "<n>ns", parses back to the same value.
 *
 * Built two ways: with clang -fsanitize=fuzzer (make fuzz, local runs that grow
 * tests/fuzz/corpus/nfdconf), and as a plain program whose main() replays
 * every file named on the command line or found in the directories named
 * there, which is how `make test` runs the corpus under ASan+UBSan. */
#include "../../core/json.h"
#include "../../core/log.h"
#include "../../core/nfdconf.h"
#include "../../core/opt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A config as text, to compare two of them. Owned by the caller. */
static char *dump(const struct nfd_worker_config *c)
{
	const struct nfd_strlist *lists[] = {
		&c->core.feature_sources, &c->core.label_sources, &c->core.no_publish_features,
		&c->core.owner_refs, &c->pci.device_class_whitelist, &c->pci.device_label_fields,
		&c->usb.device_class_whitelist, &c->usb.device_label_fields, &c->cpuid.attribute_blacklist,
		&c->cpuid.attribute_whitelist, &c->kernel.config_opts,
	};
	char *custom = c->custom ? json_print(c->custom, NULL) : NULL, *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);

	if (!f)
		abort();
	fprintf(f, "%lld|%s|%d|%d|%s|%d|%s|", c->core.sleep_interval_ms, c->core.label_whitelist,
		c->core.no_publish, c->core.klog_v, c->kernel.kconfig_file, c->local_hooks_enabled,
		custom ? custom : "-");
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		for (size_t k = 0; k < lists[i]->n; k++)
			fprintf(f, "%s\x1f", lists[i]->v[k]);
		fputc('|', f);
	}
	if (fclose(f) != 0 || !out)
		abort();
	free(custom);
	return out;
}

static void check_duration(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	size_t len = nl ? (size_t)(nl - (const char *)data) : size;
	char s[64], back[32];
	long long ns, ns2;

	if (len >= sizeof(s) || memchr(data, '\0', len))
		return;
	memcpy(s, data, len);
	s[len] = '\0';
	if (opt_parse_duration(s, &ns) < 0)
		return;
	snprintf(back, sizeof(back), "%lldns", ns);
	if (opt_parse_duration(back, &ns2) < 0 || ns2 != ns)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fb_log lg = { .v = 2, .fd = -1 };
	struct nfd_worker_config c;
	struct fb_errinfo ei;
	char *before, *after;
	int rc, line, col;

	nfdconf_init(&c);
	before = dump(&c);
	rc = nfdconf_apply_yaml(&c, (const char *)data, size, "fuzz", &lg, &ei);
	after = dump(&c);
	if (rc < 0) {
		if (rc != -FB_EINVAL && rc != -FB_EDEPTH)
			abort();
		if (sscanf(ei.detail, "line %d column %d: ", &line, &col) != 2 || line < 1 || col < 1)
			abort();
		if (strcmp(before, after) != 0)
			abort(); /* a refused text changes nothing */
	} else {
		char *again;

		if (nfdconf_owner_refs(&c.core.owner_refs, &ei) < 0)
			abort();
		if (nfdconf_apply_yaml(&c, (const char *)data, size, "fuzz", &lg, &ei) != 0)
			abort();
		again = dump(&c);
		if (strcmp(after, again) != 0)
			abort();
		free(again);
	}
	free(before);
	free(after);
	nfdconf_free(&c);
	check_duration(data, size);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
