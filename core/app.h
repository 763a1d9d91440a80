/* app: the scaffold every applet's main stands on. The pieces that were
 * written once per applet: the probe and metrics server, the node name. */
#ifndef FB_APP_H
#define FB_APP_H

#include <stddef.h>

#include "opt.h"

struct fb_log;
struct http_server;
struct loop;
struct metrics;

/* What the probe server answers: /healthz (and /livez when livez is set)
 * "ok"; /readyz when ready is set: 200 "ok" once ready(ctx) is true, else 503
 * and waiting; /metrics the registry. Anything else is 404. Borrowed by the
 * server: it must outlive it. */
struct app_probes {
	const struct metrics *mx;
	int (*ready)(void *ctx);
	void *ctx;
	const char *waiting; /* "...\n" */
	int livez;
};

/* Starts the probe server on addr ("HOST:PORT"). A daemon goes on without it
 * (the probes fail and say why), so failure is logged, not returned:
 * "serving WHAT: reason", else "serving WHAT on port N" and where (say
 * " of 10.0.0.1", or "" for nothing). *srv stays NULL on failure. */
void app_serve(struct http_server **srv, struct loop *l, const char *addr, const struct app_probes *p,
	       const struct fb_log *lg, const char *what, const char *where);

/* klog's command-line flags, as upstream's Go daemons take them (klog/v2's
 * InitFlags, less -v, which each applet has in its own table), and the
 * v0.16-v0.17 flags nfd-worker and nfd-master shared (accepted, ignored,
 * warned about by app_warn_ignored). An options
 * struct holds one of these; its spec points at app_klog_opts:
 *   .more = app_klog_opts, .nmore = APP_KLOG_NOPTS,
 *   .more_off = offsetof(struct x_opts, klog), .more_title = APP_KLOG_TITLE */
#define APP_KLOG_NOPTS 20
#define APP_KLOG_NKLOG 14 /* the first rows of app_klog_opts: klog's own flags */

struct app_klog {
	int logtostderr, alsologtostderr, add_dir_header, skip_headers, skip_log_headers, one_output;
	const char *log_dir, *log_file, *vmodule, *stderrthreshold, *alsologtostderrthreshold;
	long log_file_max_size;
	int legacy_stderr_threshold_behavior;
	int seen[APP_KLOG_NKLOG]; /* row i of app_klog_opts was given (flag, or config) */
	unsigned ignored; /* OPT_IGNORE bits: -log_backtrace_at, v0.16's -metrics ... */
};

extern const struct opt app_klog_opts[];
#define APP_KLOG_TITLE "upstream's common flags: klog's, and v0.16's (see the README)"

/* klog's defaults: -logtostderr=true, -stderrthreshold=ERROR,
 * -log_file_max_size=1800, -legacy_stderr_threshold_behavior=true. */
void app_klog_init(struct app_klog *k);

/* Puts the flags into effect on lg as klog would: with -logtostderr (the
 * default) everything goes to stderr and the file flags do nothing; with
 * -logtostderr=false, -log_file gets the lines (and stderr those at
 * -stderrthreshold and above, or all with -alsologtostderr). -skip_headers,
 * -add_dir_header and -vmodule apply as in klog (vmodule's patterns match
 * featurebox's source file names). What cannot be honoured (-log_dir
 * without -log_file, -log_file_max_size) is said once, as a warning.
 * Returns 0, -FB_EUSAGE (a bad -stderrthreshold) or -FB_EIO (-log_file
 * cannot be opened), the reason printed. */
int app_klog_apply(const struct app_klog *k, struct fb_log *lg, const char *applet);

/* Upstream's core.klog (worker) / klog (master) config keys: each klog
 * flag by its camelCase name (logFile for -log_file), applied where the
 * command line did not give that flag (it wins, as upstream's
 * MergeKlogConfiguration), and then put into effect on lg (app_klog_apply
 * again) when any was. cfg maps names to strings (NULL: none); "v" is left
 * to the caller. prefix names the keys in messages ("core.klog"). Returns
 * app_klog_apply's results; -FB_EUSAGE also for a value that is no value of
 * its flag, printed with the key's name. */
struct json;
int app_klog_config(struct app_klog *k, const struct json *cfg, struct fb_log *lg, const char *applet,
		    const char *prefix);

/* Warns once for each OPT_IGNORE option of spec (both tables) whose bit is
 * set in the mask it writes to: "-NAME is accepted and ignored: HELP". */
void app_warn_ignored(const struct opt_spec *spec, const void *opts, const struct fb_log *lg);

/* upstream's -feature-gates, as many times as given (later settings win):
 * "Name=bool,...". Known gates: NodeFeatureAPI (locked to true),
 * DisableAutoPrefix, NodeFeatureGroupAPI. Unknown names, bad values and
 * NodeFeatureAPI=false are usage errors worded as Go's flag package words
 * them. Returns 0, or -FB_EUSAGE after printing why; *disable_auto_prefix and
 * *group_api (may be NULL) get the gates' values. */
int app_feature_gates(const char *applet, const struct opt_list *gates, int *disable_auto_prefix, int *group_api);

/* The node this runs on: flag when given and not empty, else $NODE_NAME,
 * else the host name ("" when that fails). Copied into buf (cut to size). */
const char *app_node_name(const char *flag, char *buf, size_t size);

#endif
