/* fuzz_kubeconfig: untrusted kubeconfig text through the YAML subset and the
 * kubeconfig resolver (contexts, clusters, users, server URL, base64 data).
 * File references resolve under a directory that does not exist, so inputs
 * never read real files. Replay main as in fuzz_dt.c. */
#include "../../core/kube.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_config cfg;
	struct fb_errinfo ei;

	memset(&cfg, 0, sizeof(cfg));
	fb_errinfo_init(&ei);
	if (kube_config_parse_(&cfg, (const char *)data, size, "/nonexistent-fuzz/kubeconfig", &ei) == 0 &&
	    (cfg.port < 1 || cfg.port > 65535 || !cfg.host[0]))
		abort(); /* a config that loads must name a usable endpoint */
	kube_config_free(&cfg);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
