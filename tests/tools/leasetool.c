/* leasetool: a test driver for core/lease (not an applet, never installed).
 * One leader-election candidate against tests/k8s, for tests/k8s/lease.sh:
 *
 *   leasetool [--kubeconfig K] --id ID [--ns NS] [--name NAME] [--duration-ms N]
 *             [--renew-ms N] [--retry-ms N] [--run-ms N] [--block-ms N]
 *
 * prints "leading 1 MS" / "leading 0 MS" on every callback (MS: the machine's
 * monotonic clock, so candidates' lines can be put in order),
 * and with --block-ms, once it first leads, blocks the loop that long and
 * prints "blocked leading X MS" with lease_leading() right after (no timer
 * could run meanwhile). Runs until SIGTERM/SIGINT or --run-ms, then frees
 * the lease (releasing it) and prints "exit MS". Exit 0, or 1 when it could
 * not start. */
#include "../../core/kube.h"
#include "../../core/lease.h"
#include "../../core/log.h"
#include "../../core/loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tool {
	struct loop *l;
	struct lease *le;
	long long t0, block_ms;
	int blocked;
};

static void stop(void *ctx)
{
	loop_stop(ctx, 0);
}

static void block(void *ctx)
{
	struct tool *t = ctx;
	struct timespec ts = { t->block_ms / 1000, (t->block_ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
	printf("blocked leading %d %lld\n", lease_leading(t->le), loop_now_ms() - t->t0);
	fflush(stdout);
}

static void on_leading(void *ctx, int leading)
{
	struct tool *t = ctx;

	printf("leading %d %lld\n", leading, loop_now_ms());
	fflush(stdout);
	if (leading && t->block_ms > 0 && !t->blocked) {
		t->blocked = 1;
		loop_timer(t->l, 0, block, t);
	}
}

int main(int argc, char **argv)
{
	struct kube_opts o;
	struct kube_config cfg;
	struct fb_errinfo ei;
	struct fb_log lg;
	struct kube *k = NULL;
	struct tool t = { 0 };
	struct lease_opts lo = { .ns = "kube-system", .name = "test-lease", .duration_ms = 15000,
				 .renew_deadline_ms = 10000, .retry_ms = 2000 };
	long long run_ms = 0;
	char msg[2048];
	int rc;

	t.t0 = loop_now_ms();
	log_init(&lg);
	lg.v = 2;
	kube_opts_init(&o);
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "leasetool: %s needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "--kubeconfig"))
			o.kubeconfig = v;
		else if (!strcmp(a, "--id"))
			lo.identity = v;
		else if (!strcmp(a, "--ns"))
			lo.ns = v;
		else if (!strcmp(a, "--name"))
			lo.name = v;
		else if (!strcmp(a, "--duration-ms"))
			lo.duration_ms = atoll(v);
		else if (!strcmp(a, "--renew-ms"))
			lo.renew_deadline_ms = atoll(v);
		else if (!strcmp(a, "--retry-ms"))
			lo.retry_ms = atoll(v);
		else if (!strcmp(a, "--run-ms"))
			run_ms = atoll(v);
		else if (!strcmp(a, "--block-ms"))
			t.block_ms = atoll(v);
		else {
			fprintf(stderr, "leasetool: unknown option %s\n", a);
			return 2;
		}
	}
	fb_errinfo_init(&ei);
	if (loop_new(&t.l, &ei) < 0 || kube_config_load(&cfg, &o, &ei) < 0) {
		fprintf(stderr, "leasetool: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		loop_free(t.l);
		return 1;
	}
	rc = kube_new(&k, &cfg, &o, &lg, loop_cancel_fd(t.l), &ei);
	kube_config_free(&cfg);
	if (rc < 0) {
		fprintf(stderr, "leasetool: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		loop_free(t.l);
		return 1;
	}
	rc = lease_start(&t.le, k, t.l, &lo, &lg, on_leading, &t);
	if (rc < 0) {
		fprintf(stderr, "leasetool: lease_start: %s\n", fb_strerror(rc));
		kube_free(k);
		loop_free(t.l);
		return 1;
	}
	if (run_ms > 0)
		loop_timer(t.l, run_ms, stop, t.l);
	loop_run(t.l);
	lease_free(t.le);
	printf("exit %lld\n", loop_now_ms() - t.t0);
	kube_free(k);
	loop_free(t.l);
	return 0;
}
