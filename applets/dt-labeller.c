/* dt-labeller: devicetree "compatible" strings as Kubernetes node labels.
 *
 * Mirrors adaptant-labs/k8s-dt-node-labeller
 * (https://github.com/adaptant-labs/k8s-dt-node-labeller): same flags (-d, -f,
 * -n NAME [NAME...]), same dry-run and NFD features-file output, same label
 * names and counts. Deliberate deviations, each fixing a defect of the original:
 * - The devicetree comes from --dtb FILE, else <host>/proc/device-tree, else
 *   <host>/sys/firmware/devicetree/base (both world-readable, so no privileged
 *   container), else the raw blob <host>/sys/firmware/fdt. No devicetree at
 *   all (x86) is a warning and zero labels, exit 0, not a panic.
 * - Every ',' becomes '-' (the original dropped all after a second comma);
 *   characters a label cannot hold become '_', leading/trailing
 *   non-alphanumerics are trimmed, names over 63 characters are skipped with a
 *   warning rather than truncated or sent to be rejected by the API server.
 * - Node names from -n/--nodes are matched literally, not as regular
 *   expressions; a node matching several names is counted once.
 * - Output is sorted by key and byte-stable; the features file is written
 *   atomically (dot-file, fsync, rename); errors are messages with exit codes
 *   (1 runtime, 2 usage), never a panic.
 * - Positional node names without -n are a usage error (exit 2, was 1), and
 *   so is an option after the node names (Go's flag package silently took it
 *   for a node name); -n may be repeated, each value adds a name.
 * - A compatible property without its final NUL (malformed) has its
 *   unterminated tail dropped with a warning, as the original dropped it.
 * - Controller mode (labelling the Node through the API server, the default
 *   when neither -d nor -f is given) is not in this build yet: it comes with
 *   the API client and exits 2 with a message until then.
 */
#include "applets.h"

#include "../core/dt.h"
#include "../core/err.h"
#include "../core/featfile.h"
#include "../core/hostfs.h"
#include "../core/labels.h"
#include "../core/log.h"
#include "../core/opt.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"Usage: dt-labeller [OPTIONS] [-n NODE [NODE...]]\n"
	"\n"
	"Label a Kubernetes node with the devicetree compatible strings of its root\n"
	"node and of the nodes named cpu and gpu (and those given with -n/--nodes):\n"
	"beta.devicetree.org/<vendor>-<model>=<count>.\n"
	"\n"
	"  -d                   print the labels and exit\n"
	"  -f                   write them to the NFD features file and exit\n"
	"  (neither)            label the Node through the API server (controller mode)\n";

#define DEFAULT_FEATURES_FILE "/etc/kubernetes/node-feature-discovery/features.d/devicetree-features"
#define MAX_NODE_NAMES (2 * OPT_LIST_MAX + 2)

/* One distinct label name and how often it occurred. */
struct name_count {
	char name[LABELS_NAME_MAX + 1];
	unsigned long count;
};

struct dtl {
	struct fb_log log;
	const char *nodes[MAX_NODE_NAMES]; /* borrowed from argv or literals */
	int nnodes;
	struct name_count *names;         /* sorted by name, distinct; owned */
	size_t nnames, cap;
	int err;                          /* visitor failure, negative fb_err */
	struct fb_errinfo ei;
};

/* "cpu" matches "cpu", "cpu@0" and "cpu12@3"; not "cpus" or "cpu-map". */
static int node_matches(const char *name, const char *want)
{
	size_t len = strlen(want);
	const char *p;

	if (strncmp(name, want, len) != 0)
		return 0;
	p = name + len;
	if (*p == '\0')
		return 1;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == '@';
}

/* Counts one occurrence. The table stays sorted and holds each name once,
 * so memory follows the distinct names, not the size of the tree. */
static int add_name(struct dtl *s, const char *name)
{
	size_t lo = 0, hi = s->nnames;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->names[mid].name, name);

		if (c == 0) {
			s->names[mid].count++;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->nnames == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		struct name_count *n = realloc(s->names, cap * sizeof(*n));

		if (!n)
			return -FB_ENOMEM;
		s->names = n;
		s->cap = cap;
	}
	memmove(&s->names[lo + 1], &s->names[lo], (s->nnames - lo) * sizeof(s->names[0]));
	strcpy(s->names[lo].name, name);
	s->names[lo].count = 1;
	s->nnames++;
	return 0;
}

static int visit(void *ctx, struct dt *dt, const struct dt_node *node)
{
	struct dtl *s = ctx;
	char epath[256], ecompat[256];
	const void *val;
	const char *p, *end;
	ssize_t len;
	int i;

	if (node->depth > 0) {
		for (i = 0; i < s->nnodes; i++)
			if (node_matches(node->name, s->nodes[i]))
				break;
		if (i == s->nnodes)
			return 0;
	}
	len = dt_getprop(dt, node, "compatible", &val, &s->ei);
	if (len == -FB_ENOENT)
		return 0;
	if (len < 0)
		return s->err = (int)len;
	/* names and strings come from the tree: escaped before they reach a log */
	log_escape(node->path, strlen(node->path), epath, sizeof(epath));
	LOG_V(&s->log, 2, "node %s: compatible of %zd bytes", epath, len);
	/* a NUL-separated string list */
	for (p = val, end = p + len; p < end; p += strlen(p) + 1) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t slen = nul ? (size_t)(nul - p) : (size_t)(end - p);
		char name[LABELS_NAME_MAX + 1];
		ssize_t n;

		log_escape(p, slen, ecompat, sizeof(ecompat));
		if (!nul) {
			LOG_W(&s->log, "node %s: compatible ends without a NUL; \"%s\" dropped", epath, ecompat);
			break;
		}
		n = labels_dt_name(p, slen, name, sizeof(name));
		if (n == -FB_E2BIG)
			LOG_W(&s->log, "node %s: compatible \"%s\" gives a label name over %d characters, skipped",
			      epath, ecompat, LABELS_NAME_MAX);
		else if (n == 0 && slen > 0)
			LOG_V(&s->log, 1, "node %s: compatible \"%s\" gives an empty label name, skipped",
			      epath, ecompat);
		else if (n > 0 && add_name(s, name) < 0)
			return s->err = -FB_ENOMEM;
	}
	return 0;
}

/* Opens the devicetree: --dtb, else the first host source that exists.
 * Returns 0 with *out NULL when the host has none. */
static int open_tree(struct dtl *s, const struct hostfs *h, const char *dtb, struct dt **out)
{
	static const char *const dirs[] = { "proc/device-tree", "sys/firmware/devicetree/base" };
	char path[PATH_MAX], fdt[PATH_MAX];
	int rc;

	if (dtb)
		return dt_open_blob(out, dtb, &s->ei);
	for (size_t i = 0; i < 2; i++) {
		/* the kernel's /proc/device-tree is an absolute symlink into /sys:
		 * resolve it inside the host prefix, not in our own root */
		if (hostfs_resolve(h, dirs[i], path, sizeof(path)) < 0)
			return fb_errinfo_set(&s->ei, FB_E2BIG, 0, dirs[i], "host path too long or a symlink loop");
		rc = dt_open_dir(out, path, &s->ei);
		if (rc != -FB_ENOENT)
			return rc;
		LOG_V(&s->log, 1, "no devicetree directory at %s%s", h->prefix, dirs[i]);
	}
	if (hostfs_resolve(h, "sys/firmware/fdt", fdt, sizeof(fdt)) < 0)
		return fb_errinfo_set(&s->ei, FB_E2BIG, 0, "sys/firmware/fdt", "host path too long or a symlink loop");
	rc = dt_open_blob(out, fdt, &s->ei);
	if (rc == -FB_ENOENT) {
		LOG_W(&s->log, "no devicetree found (looked at %sproc/device-tree, %ssys/firmware/devicetree/base, %s): no labels",
		      h->prefix, h->prefix, fdt);
		return 0;
	}
	return rc;
}

/* Renders "PREFIX/NAME<sep>COUNT\n" lines, sorted by name, into a new buffer
 * (owned by the caller), or returns NULL when out of memory. */
static char *render(const struct dtl *s, const char *prefix, const char *sep, size_t *lenp)
{
	size_t cap = 1, len = 0;
	char *buf;

	for (size_t i = 0; i < s->nnames; i++)
		cap += strlen(prefix) + 1 + strlen(s->names[i].name) + strlen(sep) + 24;
	buf = malloc(cap);
	if (!buf)
		return NULL;
	buf[0] = '\0';
	for (size_t i = 0; i < s->nnames; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s/%s%s%lu\n", prefix,
					s->names[i].name, sep, s->names[i].count);
	*lenp = len;
	return buf;
}

/* Reads the devicetree and fills s->names. Returns 0 or a negative fb_err
 * with s->ei filled. No devicetree at all is 0 with no names. */
static int compute_labels(struct dtl *s, const struct hostfs *h, const char *dtb)
{
	struct dt *dt = NULL;
	int rc;

	s->nnames = 0;
	rc = open_tree(s, h, dtb, &dt);
	if (rc < 0 || !dt)
		return rc;
	LOG_V(&s->log, 1, "reading devicetree from %s", dt_source(dt));
	rc = dt_walk(dt, visit, s, &s->ei);
	if (rc > 0)
		rc = s->err;
	dt_free(dt);
	return rc;
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("dt-labeller: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\nTry 'dt-labeller --help' for more information.\n", stderr);
	return 2;
}

int dt_labeller_main(int argc, char **argv)
{
	struct dtl s = { .nnodes = 0 };
	const char *dtb = NULL, *features = NULL, *prefix = "beta.devicetree.org";
	const char *host = NULL;
	struct opt_list nodes = { .n = 0 }, nflags = { .n = 0 };
	int dry = 0, fflag = 0, oneshot = 0, first, rc, ret = 1;
	long verbosity = 0;
	struct hostfs h;
	char *out = NULL, msg[2048], emsg[2048], pfx[LABELS_PREFIX_MAX + 2];
	size_t outlen, plen;
	const struct opt opts[] = {
		{ .so = 'd', .kind = OPT_FLAG, .dst = &dry,
		  .help = "display the detected devicetree labels and exit (wins over -f)" },
		{ .lo = "features-file", .so = 'f', .kind = OPT_OPTSTR, .dst = &features,
		  .seen = &fflag, .arg = "PATH",
		  .help = "write the labels to an NFD features file (default " DEFAULT_FEATURES_FILE ")" },
		{ .so = 'n', .kind = OPT_STRS, .dst = &nflags, .arg = "NODE",
		  .help = "also scan nodes named NODE (repeatable); operands after it are node names too" },
		{ .lo = "nodes", .kind = OPT_LIST, .dst = &nodes, .arg = "A,B",
		  .help = "also scan these node names (comma-separated, repeatable)" },
		{ .lo = "dtb", .kind = OPT_STR, .dst = &dtb, .arg = "FILE",
		  .help = "read this flattened devicetree blob instead of the host's" },
		{ .lo = "oneshot", .kind = OPT_FLAG, .dst = &oneshot,
		  .help = "with -f: write once and exit (initContainer)" },
		{ .lo = "prefix", .kind = OPT_STR, .dst = &prefix, .arg = "DOMAIN",
		  .help = "label key prefix (default beta.devicetree.org)" },
		{ .lo = "host-prefix", .kind = OPT_STR, .dst = &host, .arg = "P",
		  .help = "read host sys/proc at P+\"sys\"... (default /host- if /host-sys exists, else /)" },
		{ .lo = "v", .so = 'v', .kind = OPT_INT, .dst = &verbosity, .min = 0, .max = 10,
		  .arg = "N", .help = "log verbosity" },
	};
	const struct opt_spec spec = { "dt-labeller", usage, opts, sizeof(opts) / sizeof(opts[0]) };

	log_init(&s.log);
	fb_errinfo_init(&s.ei);
	rc = opt_parse(&spec, argc, argv, &first);
	if (rc == OPT_EXIT)
		return 0;
	if (rc < 0)
		return rc == -FB_EUSAGE ? 2 : 1;
	s.log.v = (int)verbosity;
	if (first < argc && nflags.n == 0)
		return usage_error("unexpected argument '%s' (node names go after -n)", argv[first]);
	for (int i = first; i < argc; i++)
		if (argv[i][0] == '-') /* devicetree node names start with a letter */
			return usage_error("option '%s' after the node names: put options before -n", argv[i]);
	plen = strlen(prefix);
	while (plen > 0 && prefix[plen - 1] == '/')
		plen--;
	if (!labels_valid_prefix(prefix, plen))
		return usage_error("--prefix '%s' is not a DNS subdomain (like beta.devicetree.org)", prefix);
	memcpy(pfx, prefix, plen);
	pfx[plen] = '\0';
	if (features && (!*features || features[strlen(features) - 1] == '/'))
		return usage_error("--features-file '%s' does not name a file", features);
	if (!dry && !fflag) {
		fprintf(stderr, "dt-labeller: controller mode (labelling the Node through the API server) "
			"is not available in this build; use -d or -f\n");
		return 2;
	}
	(void)oneshot; /* -d and -f are one-shot already; it matters for controller mode */

	/* node list: the root is always scanned; then cpu, gpu and the extra names */
	s.nodes[s.nnodes++] = "cpu";
	s.nodes[s.nnodes++] = "gpu";
	if (nflags.n + nodes.n + (argc - first) > MAX_NODE_NAMES - 2)
		return usage_error("more than %s node names", "64");
	for (int i = 0; i < nflags.n; i++)
		s.nodes[s.nnodes++] = nflags.v[i];
	for (int i = first; i < argc; i++)
		s.nodes[s.nnodes++] = argv[i];
	for (int i = 0; i < nodes.n; i++)
		s.nodes[s.nnodes++] = nodes.v[i];
	for (int i = 0; i < s.nnodes; i++)
		if (s.nodes[i][0] == '\0')
			return usage_error("empty node name%s", "");

	hostfs_init(&h);
	if (hostfs_setup(&h, host) < 0)
		return usage_error("--host-prefix is too long%s", "");
	rc = compute_labels(&s, &h, dtb);
	if (rc < 0)
		goto fail;
	out = render(&s, pfx, dry ? ": " : "=", &outlen);
	if (!out) {
		rc = fb_errinfo_set(&s.ei, FB_ENOMEM, 0, "labels", NULL);
		goto fail;
	}
	if (dry) {
		printf("Discovered the following devicetree properties:\n\n%s", out);
		/* musl forgets a failed buffered write by the time of fflush */
		if (fflush(stdout) != 0 || ferror(stdout)) {
			LOG_E(&s.log, "writing to standard output failed");
			goto done;
		}
		ret = 0;
		goto done;
	}
	if (!features)
		features = DEFAULT_FEATURES_FILE;
	printf("Writing out discovered features to %s\n", features);
	fflush(stdout);
	rc = featfile_write(features, out, outlen, &s.ei);
	if (rc < 0) {
		fb_errinfo_str(&s.ei, msg, sizeof(msg));
		LOG_E(&s.log, "failed to write feature labels: %s", log_escape(msg, strlen(msg), emsg, sizeof(emsg)));
		goto done;
	}
	ret = 0;
	goto done;
fail:
	fb_errinfo_str(&s.ei, msg, sizeof(msg));
	LOG_E(&s.log, "%s", log_escape(msg, strlen(msg), emsg, sizeof(emsg)));
done:
	free(out);
	free(s.names);
	return ret;
}
