/* kubetool: a test driver for core/kube (not an applet, never installed).
 * It runs the client's code paths one at a time against tests/k8s so the
 * shell tests can assert what a user of the applets relies on:
 *
 *   kubetool [--kubeconfig K] [--timeout-ms N] [--attempts N] [--page N] request METHOD PATH [CTYPE BODY]
 *       prints "STATUS REASON" and the JSON body; exit 0 when the server
 *       answered, 1 with the error on stderr when it did not.
 *   kubetool ... list PATH
 *       prints "items N" and the item names, sorted.
 *   kubetool ... mirror PATH SECONDS
 *       lists, then watches for SECONDS, or until an object named "zz-stop"
 *       shows up (re-watching on stream ends, re-listing on 410 and
 *       failures), and prints the mirrored state:
 *       one "NAME LABELS-JSON" line per object, sorted, then counters
 *       ("relists N", "rewatches N") on stderr. Each watch event is
 *       written to stderr as it is applied ("event TYPE NAME"), for the
 *       tests to wait on.
 *   kubetool ... nl-apply NODE DESIRED.json|--prune [--instance I] [--enable-taints]
 *                [--no-overwrite] [--skip-removal] [--no-record]
 *       core/nodelabels: filters DESIRED ({"labels", "annotations",
 *       "extended_resources", "taints"}, no features for @ values) and applies
 *       it to NODE (or prunes it) with nfd-master's record label (without it
 *       with --no-record, as nfd-worker --standalone); prints
 *       "changed C requests R"; exit 1 with
 *       the error on stderr, 3 when the node does not exist. */
#include "../../core/json.h"
#include "../../core/kube.h"
#include "../../core/log.h"
#include "../../core/loop.h"
#include "../../core/nodelabels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mirror {
	struct kube *k;
	struct loop *l;
	struct kube_watch *w;
	struct json *state; /* name -> labels */
	const char *path;
	char rv[64];
	int relists, rewatches, stopping;
	struct kube_backoff bo;
};

static void stop(void *ctx)
{
	loop_stop(ctx, 0);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void print_sorted(const struct json *obj, int with_values)
{
	size_t n = json_count(obj), i = 0;
	const char **names = calloc(n + 1, sizeof(*names));

	for (const struct json *c = json_child(obj); c; c = json_next(c))
		names[i++] = json_key(c);
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		if (with_values) {
			char *v = json_print(json_get(obj, names[i]), NULL);

			printf("%s %s\n", names[i], v ? v : "?");
			free(v);
		} else {
			printf("%s\n", names[i]);
		}
	}
	free(names);
}

static void put_object(struct mirror *m, const struct json *o)
{
	const struct json *md = json_get(o, "metadata");
	const struct json *labels = json_get(md, "labels");
	const char *name = json_get_str(md, "name", NULL);

	if (name)
		json_set_take(m->state, name, labels ? json_dup(labels) : json_new_object());
	if (name && strcmp(name, "zz-stop") == 0 && !m->stopping) {
		m->stopping = 1;
		loop_timer(m->l, 300, stop, m->l);
	}
}

static int relist(struct mirror *m)
{
	struct json *items;
	struct fb_errinfo ei;
	char msg[1024];

	if (kube_list(m->k, m->path, &items, m->rv, sizeof(m->rv), &ei) < 0) {
		fprintf(stderr, "kubetool: list: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return -1;
	}
	json_free(m->state);
	m->state = json_new_object();
	for (const struct json *it = json_child(items); it; it = json_next(it))
		put_object(m, it);
	json_free(items);
	return 0;
}

static void start(void *ctx);

static void on_event(void *ctx, const char *type, const struct json *o)
{
	struct mirror *m = ctx;

	fprintf(stderr, "event %s %s\n", type, json_get_str(json_get(o, "metadata"), "name", ""));
	if (strcmp(type, "DELETED") == 0)
		json_remove(m->state, json_get_str(json_get(o, "metadata"), "name", ""));
	else
		put_object(m, o);
}

static void on_end(void *ctx, enum kube_watch_end why, const struct fb_errinfo *ei)
{
	struct mirror *m = ctx;
	char msg[1024];

	snprintf(m->rv, sizeof(m->rv), "%s", kube_watch_rv(m->w));
	kube_watch_free(m->w);
	m->w = NULL;
	if (why == KUBE_WATCH_CLOSED) {
		m->rewatches++;
		loop_timer(m->l, 0, start, m);
		return;
	}
	if (why == KUBE_WATCH_FAILED && ei)
		fprintf(stderr, "kubetool: watch failed: %s\n", fb_errinfo_str(ei, msg, sizeof(msg)));
	m->rv[0] = '\0'; /* EXPIRED or FAILED: list again */
	loop_timer(m->l, why == KUBE_WATCH_FAILED ? kube_backoff_next(&m->bo) : 0, start, m);
}

static void start(void *ctx)
{
	struct mirror *m = ctx;
	struct fb_errinfo ei;
	char msg[1024];

	if (!m->rv[0]) {
		m->relists++;
		if (relist(m) < 0) {
			loop_timer(m->l, kube_backoff_next(&m->bo), start, m);
			return;
		}
	}
	if (kube_watch_start(&m->w, m->k, m->l, m->path, m->rv, on_event, on_end, m, &ei) < 0) {
		fprintf(stderr, "kubetool: watch: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		m->rv[0] = '\0';
		loop_timer(m->l, kube_backoff_next(&m->bo), start, m);
	}
}

static int nl_apply_cmd(struct kube *k, struct fb_log *lg, int argc, char **argv)
{
	const char *node = argv[0];
	struct nl_policy p;
	struct nl_set s = { 0 };
	struct nl_result res;
	struct fb_errinfo ei;
	int prune = 0, skip = 0, rc;
	char msg[2048];

	nl_policy_init(&p);
	p.record = 1; /* as nfd-master; --no-record as nfd-worker --standalone */
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--instance") && i + 1 < argc)
			p.instance = argv[++i];
		else if (!strcmp(argv[i], "--enable-taints"))
			p.enable_taints = 1;
		else if (!strcmp(argv[i], "--no-overwrite"))
			p.allow_overwrite = 0;
		else if (!strcmp(argv[i], "--no-record"))
			p.record = 0;
		else if (!strcmp(argv[i], "--skip-removal"))
			skip = 1;
	}
	if (!strcmp(argv[1], "--prune")) {
		prune = 1;
	} else {
		static char buf[1 << 20];
		FILE *f = fopen(argv[1], "r");
		size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
		struct json *d;

		if (f)
			fclose(f);
		if (!(d = json_parse(buf, n, argv[1], &ei))) {
			fprintf(stderr, "kubetool: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
			return 1;
		}
		s.labels = json_dup(json_get(d, "labels"));
		s.annotations = json_dup(json_get(d, "annotations"));
		s.extended_resources = json_dup(json_get(d, "extended_resources"));
		s.taints = json_dup(json_get(d, "taints"));
		json_free(d);
		nl_filter(&p, &s, NULL, lg, NULL);
	}
	fb_errinfo_init(&ei);
	rc = nl_apply(k, node, &p, prune ? NULL : &s, skip, lg, &res, &ei);
	nl_set_free(&s);
	printf("changed %d requests %d\n", res.changed, res.requests);
	if (rc < 0) {
		fprintf(stderr, "kubetool: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return rc == -FB_ENOENT ? 3 : 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct kube_opts o;
	struct kube_config cfg;
	struct fb_errinfo ei;
	struct fb_log lg;
	struct mirror m = { 0 };
	char msg[2048];
	int i = 1, rc = 1;

	log_init(&lg);
	lg.v = 2;
	kube_opts_init(&o);
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "--kubeconfig"))
			o.kubeconfig = argv[i + 1];
		else if (!strcmp(argv[i], "--timeout-ms"))
			o.timeout_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--attempts"))
			o.max_attempts = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--page"))
			o.page_size = atoi(argv[i + 1]);
		else
			break;
	}
	if (i + 1 >= argc) {
		fputs("usage: kubetool [--kubeconfig K] [--timeout-ms N] [--attempts N] request|list|mirror|nl-apply ...\n", stderr);
		return 2;
	}
	if (loop_new(&m.l, &ei) < 0 || kube_config_load(&cfg, &o, &ei) < 0) {
		fprintf(stderr, "kubetool: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		loop_free(m.l);
		return 1;
	}
	rc = kube_new(&m.k, &cfg, &o, &lg, loop_cancel_fd(m.l), &ei);
	kube_config_free(&cfg);
	if (rc < 0) {
		fprintf(stderr, "kubetool: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		loop_free(m.l);
		return 1;
	}
	rc = 1;
	if (!strcmp(argv[i], "request") && i + 2 < argc) {
		struct kube_result res;
		const char *ct = i + 4 < argc ? argv[i + 3] : NULL, *body = i + 4 < argc ? argv[i + 4] : NULL;

		if (kube_request(m.k, argv[i + 1], argv[i + 2], ct, body, body ? strlen(body) : 0, &res, &ei) < 0) {
			fprintf(stderr, "kubetool: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		} else {
			char *b = res.body ? json_print(res.body, NULL) : NULL;

			printf("%d %s\n%s\n", res.status, res.reason, b ? b : "");
			free(b);
			kube_result_free(&res);
			rc = 0;
		}
	} else if (!strcmp(argv[i], "list")) {
		m.path = argv[i + 1];
		if (relist(&m) == 0) {
			printf("items %zu\n", json_count(m.state));
			print_sorted(m.state, 0);
			rc = 0;
		}
	} else if (!strcmp(argv[i], "mirror") && i + 2 < argc) {
		m.path = argv[i + 1];
		kube_backoff_init(&m.bo, 200, 2000, 7);
		loop_timer(m.l, 0, start, &m);
		loop_timer(m.l, atoi(argv[i + 2]) * 1000LL, stop, m.l);
		loop_run(m.l);
		print_sorted(m.state, 1);
		fprintf(stderr, "relists %d\nrewatches %d\n", m.relists, m.rewatches);
		rc = 0;
	} else if (!strcmp(argv[i], "nl-apply") && i + 2 < argc) {
		rc = nl_apply_cmd(m.k, &lg, argc - i - 1, argv + i + 1);
	} else {
		fputs("kubetool: unknown command\n", stderr);
		rc = 2;
	}
	kube_watch_free(m.w);
	json_free(m.state);
	kube_free(m.k);
	loop_free(m.l);
	return rc;
}
