#include "app.h"

#include "err.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "opt.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <strings.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void probe(void *ctx, const char *method, const char *path, struct http_reply *r)
{
	const struct app_probes *p = ctx;

	(void)method;
	if (strcmp(path, "/healthz") == 0 || (p->livez && strcmp(path, "/livez") == 0)) {
		r->status = 200;
		http_reply_printf(r, "ok\n");
	} else if (p->ready && strcmp(path, "/readyz") == 0) {
		int ok = p->ready(p->ctx);

		r->status = ok ? 200 : 503;
		http_reply_printf(r, "%s", ok ? "ok\n" : p->waiting);
	} else if (strcmp(path, "/metrics") == 0) {
		metrics_reply(p->mx, r);
	}
}

void app_serve(struct http_server **srv, struct loop *l, const char *addr, const struct app_probes *p,
	       const struct fb_log *lg, const char *what, const char *where)
{
	struct fb_errinfo ei;
	char msg[1200];

	fb_errinfo_init(&ei);
	if (http_server_new(srv, l, addr, probe, (void *)p, &ei) < 0)
		LOG_E(lg, "serving %s: %s", what, fb_errinfo_str(&ei, msg, sizeof(msg)));
	else
		LOG_I(lg, "serving %s on port %d%s", what, http_server_port(*srv), where);
}

const char *app_node_name(const char *flag, char *buf, size_t size)
{
	const char *n = flag;

	if (!n || !*n)
		n = getenv("NODE_NAME");
	if (n && *n) {
		snprintf(buf, size, "%s", n);
		return buf;
	}
	if (gethostname(buf, size) < 0)
		buf[0] = '\0';
	buf[size - 1] = '\0';
	return buf;
}

/* ---- klog's flags -------------------------------------------------------- */

#define K(member) offsetof(struct app_klog, member)

#define SEEN(i) OPT_SEEN(struct app_klog, seen[i])
const struct opt app_klog_opts[APP_KLOG_NOPTS] = {
	{ .lo = "logtostderr", .kind = OPT_FLAG, .off = K(logtostderr), .seen = SEEN(0),
	  .help = "log to stderr instead of files (default true; =false: -log_file)" },
	{ .lo = "alsologtostderr", .seen = SEEN(1), .kind = OPT_FLAG, .off = K(alsologtostderr),
	  .help = "with -logtostderr=false: every line to stderr as well" },
	{ .lo = "log_dir", .seen = SEEN(2), .kind = OPT_STR, .off = K(log_dir), .arg = "DIR",
	  .help = "klog's per-severity files in DIR: not written (a warning; use -log_file)" },
	{ .lo = "log_file", .seen = SEEN(3), .kind = OPT_STR, .off = K(log_file), .arg = "FILE",
	  .help = "with -logtostderr=false: append the log to FILE" },
	{ .lo = "log_file_max_size", .kind = OPT_INT, .off = K(log_file_max_size),
	  .seen = SEEN(4), .min = 0, .max = 1L << 30, .arg = "MB",
	  .help = "accepted; files are not rotated (a warning with -log_file)" },
	{ .lo = "stderrthreshold", .seen = SEEN(5), .kind = OPT_STR, .off = K(stderrthreshold), .arg = "SEV",
	  .help = "with -logtostderr=false: lines of SEV (INFO, WARNING, ERROR) and above also to stderr" },
	{ .lo = "vmodule", .seen = SEEN(6), .kind = OPT_STR, .off = K(vmodule), .arg = "PAT=N,...",
	  .help = "verbosity per source file (globs on featurebox's file names)" },
	{ .lo = "add_dir_header", .seen = SEEN(7), .kind = OPT_FLAG, .off = K(add_dir_header),
	  .help = "the source file's directory in each line's header" },
	{ .lo = "skip_headers", .seen = SEEN(8), .kind = OPT_FLAG, .off = K(skip_headers), .help = "no header on log lines" },
	{ .lo = "skip_log_headers", .seen = SEEN(9), .kind = OPT_FLAG, .off = K(skip_log_headers),
	  .help = "no header in log files (featurebox writes none)" },
	{ .lo = "one_output", .seen = SEEN(10), .kind = OPT_FLAG, .off = K(one_output),
	  .help = "each line to its severity's file only (featurebox writes one file)" },
	{ .lo = "log_backtrace_at", .seen = SEEN(11), .kind = OPT_IGNORE, .off = K(ignored), .min = 0, .arg = "FILE:N",
	  .help = "Go stack traces at a log line; a C program has none to print" },
	{ .lo = "alsologtostderrthreshold", .seen = SEEN(12), .kind = OPT_STR, .off = K(alsologtostderrthreshold), .arg = "SEV",
	  .help = "with -alsologtostderr: only lines of SEV and above to stderr (default INFO)" },
	{ .lo = "legacy_stderr_threshold_behavior", .seen = SEEN(13), .kind = OPT_FLAG, .off = K(legacy_stderr_threshold_behavior),
	  .help = "true (the default): -stderrthreshold only with -logtostderr=false" },
	/* upstream v0.16-v0.17's flags that worker and master shared, gone since */
	{ .lo = "metrics", .kind = OPT_IGNORE, .off = K(ignored), .min = 1, .arg = "N",
	  .help = "v0.16-v0.17's metrics port: /metrics is served on --port" },
	{ .lo = "grpc-health", .kind = OPT_IGNORE, .off = K(ignored), .min = 2, .arg = "N",
	  .help = "v0.16-v0.17's gRPC health port: /healthz is served on --port" },
	{ .lo = "ca-file", .kind = OPT_IGNORE, .off = K(ignored), .min = 3, .arg = "PATH",
	  .help = "v0.16's gRPC TLS: NodeFeatures go through the API" },
	{ .lo = "cert-file", .kind = OPT_IGNORE, .off = K(ignored), .min = 4, .arg = "PATH",
	  .help = "v0.16's gRPC TLS: NodeFeatures go through the API" },
	{ .lo = "key-file", .kind = OPT_IGNORE, .off = K(ignored), .min = 5, .arg = "PATH",
	  .help = "v0.16's gRPC TLS: NodeFeatures go through the API" },
	{ .lo = "enable-nodefeature-api", .kind = OPT_IGNORE, .off = K(ignored), .min = 6,
	  .help = "v0.16's switch: the NodeFeature API is always used" },
};

void app_klog_init(struct app_klog *k)
{
	memset(k, 0, sizeof(*k));
	k->logtostderr = 1;
	k->log_file_max_size = 1800;
	k->legacy_stderr_threshold_behavior = 1;
}

/* "INFO".."FATAL" or "0".."3" into 'I', 'W', 'E'; 0 when it is neither. */
static char severity(const char *s)
{
	static const char *const sevs[][2] = { { "INFO", "0" }, { "WARNING", "1" }, { "ERROR", "2" }, { "FATAL", "3" } };

	for (size_t i = 0; i < 4; i++)
		if (strcasecmp(s, sevs[i][0]) == 0 || strcmp(s, sevs[i][1]) == 0)
			return i == 0 ? 'I' : i == 1 ? 'W' : 'E';
	return 0;
}

int app_klog_apply(const struct app_klog *k, struct fb_log *lg, const char *applet)
{
	const char *const names[2] = { "stderrthreshold", "alsologtostderrthreshold" };
	const char *const given[2] = { k->stderrthreshold, k->alsologtostderrthreshold };
	char sev[2] = { 'E', 'I' };
	int fd;

	if (lg->also_fd == STDERR_FILENO && lg->fd > STDERR_FILENO) { /* again, after the config */
		close(lg->fd);
		lg->fd = STDERR_FILENO;
		lg->also_fd = -1;
	}
	lg->skip_headers = (unsigned char)(k->skip_headers != 0);
	lg->dir_header = (unsigned char)(k->add_dir_header != 0);
	lg->vmodule = k->vmodule && *k->vmodule ? k->vmodule : NULL;
	for (int i = 0; i < 2; i++)
		if (given[i] && !(sev[i] = severity(given[i]))) {
			fprintf(stderr, "%s: -%s: '%s' is not INFO, WARNING, ERROR or FATAL\n", applet, names[i],
				given[i]);
			return -FB_EUSAGE;
		}
	if (!k->legacy_stderr_threshold_behavior)
		LOG_W(lg, "-legacy_stderr_threshold_behavior=false: every line still goes to stderr with "
			  "-logtostderr (featurebox keeps klog's legacy behaviour)");
	if (k->logtostderr)
		return 0; /* klog: the file flags do nothing then */
	if (!k->log_file || !*k->log_file) {
		/* (klog would write per-severity files under -log_dir, or the temp dir) */
		LOG_W(lg, "-logtostderr=false without -log_file: logging to stderr (featurebox writes no "
			  "per-severity files%s)", k->log_dir ? "; -log_dir is not used" : "");
		return 0;
	}
	fd = open(k->log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0) {
		LOG_E(lg, "-log_file %s: %s", k->log_file, strerror(errno));
		return -FB_EIO;
	}
	lg->fd = fd;
	lg->also_fd = STDERR_FILENO;
	/* klog: a line goes to stderr too at -stderrthreshold, or with
	 * -alsologtostderr at -alsologtostderrthreshold: the lower of the two */
	lg->also_min = sev[0];
	if (k->alsologtostderr && strchr("EWI", sev[1]) > strchr("EWI", sev[0]))
		lg->also_min = sev[1];
	if (k->seen[4] && k->log_file_max_size)
		LOG_W(lg, "-log_file_max_size: %s is not rotated by featurebox (rotate it outside)", k->log_file);
	return 0;
}

int app_klog_config(struct app_klog *k, const struct json *cfg, struct fb_log *lg, const char *applet,
		    const char *prefix)
{
	const struct opt_spec spec = { .name = applet, .opts = app_klog_opts, .nopts = APP_KLOG_NKLOG };
	int n = 0;

	for (int i = 0; i < APP_KLOG_NKLOG; i++) {
		const struct opt *o = &app_klog_opts[i];
		char camel[48], shown[80];
		const char *v;
		size_t c = 0;

		/* upstream's klogConfigOptName: log_file_max_size -> logFileMaxSize */
		for (const char *p = o->lo; *p && c + 1 < sizeof(camel); p++)
			camel[c++] = p[0] == '_' && p[1] ? (char)toupper((unsigned char)*++p) : *p;
		camel[c] = '\0';
		if (k->seen[i] || !(v = json_str(json_get(cfg, camel))))
			continue;
		snprintf(shown, sizeof(shown), "%s.%s", prefix, camel);
		if (opt_set_value(&spec, k, o, shown, v) < 0)
			return -FB_EUSAGE;
		n++;
	}
	return n ? app_klog_apply(k, lg, applet) : 0;
}

void app_warn_ignored(const struct opt_spec *spec, const void *opts, const struct fb_log *lg)
{
	for (int t = 0; t < 2; t++) {
		const struct opt *v = t ? spec->more : spec->opts;
		size_t n = t ? spec->nmore : spec->nopts, base = t ? spec->more_off : 0;

		for (size_t i = 0; v && i < n; i++)
			if (v[i].kind == OPT_IGNORE &&
			    (*(const unsigned *)((const char *)opts + base + v[i].off) & (1u << v[i].min)))
				LOG_W(lg, "-%s is accepted and ignored: %s", v[i].lo, v[i].help);
	}
}

/* ---- -feature-gates -------------------------------------------------------- */

static int gate_err(const char *applet, const char *given, const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "%s: invalid value \"%s\" for flag -feature-gates: ", applet, given);
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", applet);
	return -FB_EUSAGE;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t'); e--)
		e[-1] = '\0';
	return s;
}

int app_feature_gates(const char *applet, const struct opt_list *gates, int *disable_auto_prefix, int *group_api)
{
	/* Go's strconv.ParseBool */
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };

	for (int g = 0; gates && g < gates->n; g++) {
		char buf[512], *save = NULL;

		if (snprintf(buf, sizeof(buf), "%s", gates->v[g]) >= (int)sizeof(buf))
			return gate_err(applet, "...", "%s%s", "too long", "");
		for (char *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(it, '='), *k, *v;
			int on = -1;

			if (!eq)
				return gate_err(applet, gates->v[g], "missing bool value for %.100s%s", trim(it), "");
			*eq = '\0';
			k = trim(it);
			v = trim(eq + 1);
			for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
				if (strcmp(v, yes[i]) == 0)
					on = 1;
				if (strcmp(v, no[i]) == 0)
					on = 0;
			}
			if (on < 0)
				return gate_err(applet, gates->v[g], "invalid value of %.100s=%.100s", k, v);
			if (strcmp(k, "NodeFeatureAPI") == 0) {
				if (!on)
					return gate_err(applet, gates->v[g],
							"cannot set feature gate %.100s to %.10s, feature is locked to true", k,
							v);
			} else if (strcmp(k, "DisableAutoPrefix") == 0) {
				if (disable_auto_prefix)
					*disable_auto_prefix = on;
			} else if (strcmp(k, "NodeFeatureGroupAPI") == 0) {
				if (group_api)
					*group_api = on;
			} else {
				return gate_err(applet, gates->v[g], "unrecognized feature gate: %.100s%s", k, "");
			}
		}
	}
	return 0;
}
