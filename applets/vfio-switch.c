/* vfio-switch: move a PCI device (and the functions of its IOMMU group)
 * between its driver and vfio-pci, safely, with rollback.
 *
 * The one-shot privileged Job of the Deckhouse gpu module
 * (vfio-switch-<node>-<pci>), with the care of NVIDIA's vfio-manager and of
 * driverctl. The work is core/vfio's: a snapshot of sysfs, a pure plan, an
 * apply that rolls back. This file is the command line, the result and the
 * optional PhysicalGPU update.
 *
 * Where we differ from those tools (all written in README.md too):
 * - The whole IOMMU group moves (--group auto), not only the GPU and its
 *   consumer:pci: device link as vfio-manager does; bridges stay; a group
 *   that holds bound devices of another card and class is refused.
 * - driver_override is left set to the target after a switch (as driverctl
 *   set-override and vfio-manager's bind), so a rescan or reboot-less
 *   re-probe keeps the device where it was put. --to default clears it and
 *   lets the kernel choose (driverctl unset-override). With --to a host
 *   driver, the other functions of the group that sit on a VFIO driver go
 *   back to their default driver, not to the named one (nvidia does not
 *   drive the GPU's HDA function).
 * - --to default is "already there" when no override is set, whatever is
 *   bound.
 * - No persistence across reboots (driverctl's /etc/driverctl.d): the Job
 *   is re-run by the controller.
 * - Extra refusals: a function without an IOMMU group when moving to a VFIO
 *   driver (vfio-pci cannot bind it), one with SR-IOV VFs enabled, a bridge
 *   as the device, a group over 32 functions, and a group another run holds
 *   (flock on its iommu_group directory).
 * - SIGTERM/SIGINT/SIGHUP are held once the group is locked; one arriving
 *   during apply stops it and rolls back (exit 5) with the result printed.
 * - A function leaving VFIO beside the device that finds no host driver in
 *   3 s is left without one (warning), not rolled back.
 * - Busy devices are refused, not waited for (NVIDIA's DRA driver waits for
 *   /dev/nvidiaN to have no users): while a process holds a moving
 *   function's DRM node, /dev/nvidiaN or, on a VFIO driver, its
 *   /dev/vfio/N or /dev/vfio/devices/vfioN (found through <host>/proc/PID/fd by
 *   st_rdev), exit 4 naming each holder; a scan that could not look at every
 *   process, or no <host>/proc at all, is a warning only. Open files only:
 *   mappings and kernel users are not seen. On nvidia, NVIDIA's unbindLock
 *   is taken first; not granted: exit 4.
 * - --to vfio: per function, the VFIO variant of fewest wildcards in the
 *   host's modules.alias (libvirt's rule), else vfio-pci; the result says
 *   which and why.
 * - "BB:DD.F" is accepted for domain 0000, as lspci prints it.
 * - Exit 1 when sysfs cannot be read at all (not in the spec's list).
 * - --update-physicalgpu records nothing for a device that is not there
 *   (exit 3) or a refusal before the snapshot (group locked by another run,
 *   over 32 functions): there is no driver state to write.
 */
#include "applets.h"

#include "../core/err.h"
#include "../core/hostfs.h"
#include "../core/json.h"
#include "../core/kube.h"
#include "../core/log.h"
#include "../core/opt.h"
#include "../core/pgpu.h"
#include "../core/vfio.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"Usage: vfio-switch --pci ADDRESS --to DRIVER [OPTIONS]\n"
	"\n"
	"Move a PCI device between its driver and vfio-pci (or any driver): the\n"
	"functions of its IOMMU group move with it, nothing is left without a driver\n"
	"on failure (rollback). DRIVER is a driver name, \"default\" (clear the\n"
	"override, let the kernel choose) or \"vfio\" (the best VFIO variant driver).\n"
	"Refused while a process holds the device's DRM or /dev/nvidiaN node open, or\n"
	"while NVIDIA's unbindLock cannot be taken.\n"
	"Exit: 0 switched or already there, 2 usage, 3 device not found, 4 refused by\n"
	"a safety check, 5 failed and rolled back, 6 rollback failed, 1 sysfs unreadable.\n";

struct run {
	struct fb_log log;
	struct hostfs h;
	struct vfio_snap s;
	struct vfio_plan p;
	struct vfio_result r;
	const char *result;   /* the overall result word */
	char error[2048];
	int applied, dry_run;
	const char *target;
};

static struct json *str_or_null(const char *s)
{
	return s && *s ? json_new_string(s) : json_new_null();
}

/* The functions in scope: the device and whatever the plan moves or
 * considered moving. */
static int in_scope(const struct run *u, size_t i)
{
	return i == u->s.dev || u->p.fn_target[i][0];
}

static const char *fn_result(const struct run *u, size_t i)
{
	if (u->applied)
		return vfio_fn_result_str(u->r.fn[i]);
	if (!u->p.fn_moves[i])
		return "unchanged";
	return strcmp(u->result, "refused") == 0 ? "refused" : "planned";
}

static const char *fn_to(const struct run *u, size_t i)
{
	if (u->applied)
		return u->r.final[i];
	if (!u->p.fn_moves[i])
		return u->s.fn[i].driver;
	return u->p.fn_target[i];
}

/* "complete", or "partial: WHY" / "not done: WHY" written into buf. */
static const char *busy_check(const struct run *u, char *buf, size_t size)
{
	static const char *const word[] = { "complete", "partial", "not done" };

	if (u->s.scan == VFIO_SCAN_DONE)
		return word[0];
	snprintf(buf, size, "%s: %s", word[u->s.scan], u->s.scan_why);
	return buf;
}

static struct json *result_json(const struct run *u, const char *addr)
{
	struct json *o = json_new_object(), *fns = json_new_array(), *plan = json_new_array();
	int found = u->s.n > 0;
	char bc[VFIO_WHY_MAX + 16];

	if (!o || !fns || !plan) {
		json_free(o);
		json_free(fns);
		json_free(plan);
		return NULL;
	}
	json_set_str(o, "device", addr);
	json_set_take(o, "from", found ? str_or_null(u->s.fn[u->s.dev].driver) : json_new_null());
	json_set_str(o, "to", u->target);
	json_set_take(o, "iommuGroup", str_or_null(u->s.group));
	for (size_t i = 0; i < u->s.n; i++) {
		struct json *f;

		if (!in_scope(u, i) || !(f = json_new_object()))
			continue;
		json_set_str(f, "address", u->s.fn[i].addr);
		json_set_take(f, "from", str_or_null(u->s.fn[i].driver));
		json_set_take(f, "to", str_or_null(fn_to(u, i)));
		json_set_str(f, "result", fn_result(u, i));
		if (u->s.fn[i].want[0] && u->p.fn_moves[i])
			json_set_str(f, "driverChoice", u->s.fn[i].want_why);
		json_append_take(fns, f);
	}
	json_set_take(o, "functions", fns);
	if (found && u->s.fn[u->s.dev].want[0]) {
		json_set_str(o, "driver", u->s.fn[u->s.dev].want);
		json_set_str(o, "driverChoice", u->s.fn[u->s.dev].want_why);
	}
	if (found) {
		struct json *hs = json_new_array();

		for (size_t k = 0; hs && k < u->s.nholders; k++) {
			const struct vfio_holder *hd = &u->s.holder[k];
			struct json *h = json_new_object();

			if (!h)
				continue;
			json_set_take(h, "pid", json_new_number(hd->pid));
			json_set_str(h, "command", hd->comm);
			json_set_str(h, "node", hd->node);
			json_set_str(h, "address", u->s.fn[hd->fn].addr);
			json_append_take(hs, h);
		}
		json_set_take(o, "holders", hs);
		if (u->s.holders > u->s.nholders)
			json_set_take(o, "holdersNotListed", json_new_number((double)(u->s.holders - u->s.nholders)));
		json_set_str(o, "busyCheck", busy_check(u, bc, sizeof(bc)));
	}
	for (size_t k = 0; k < u->p.n; k++) {
		char line[256];

		vfio_step_str(&u->s, &u->p.step[k], u->h.prefix, line,
			      sizeof(line));
		json_append_take(plan, json_new_string(line));
	}
	if (u->p.n && (u->dry_run || u->applied))
		json_set_take(o, "plan", plan);
	else
		json_free(plan);
	json_set_str(o, "result", u->result);
	if (u->p.warn[0])
		json_set_str(o, "warning", u->p.warn);
	if (u->error[0])
		json_set_str(o, "error", u->error);
	if (u->applied && u->r.exit == 6) {
		struct json *st = json_new_array();

		for (size_t i = 0; st && i < u->s.n; i++)
			if (u->r.fn[i] == VFIO_FN_STUCK)
				json_append_take(st, json_new_string(u->s.fn[i].addr));
		json_set_take(o, "stuck", st);
	}
	return o;
}

static int print_result(const struct run *u, const char *addr, int text)
{
	int rc;

	if (text) {
		for (size_t i = 0; i < u->s.n; i++) {
			const char *to = fn_to(u, i);

			if (in_scope(u, i))
				printf("%s  %s -> %s  %s\n", u->s.fn[i].addr,
				       u->s.fn[i].driver[0] ? u->s.fn[i].driver : "(none)", *to ? to : "(none)",
				       fn_result(u, i));
		}
		for (size_t i = 0; i < u->s.n; i++)
			if (u->s.fn[i].want[0] && (u->p.fn_moves[i] || i == u->s.dev))
				printf("  driver for %s: %s: %s\n", u->s.fn[i].addr, u->s.fn[i].want, u->s.fn[i].want_why);
		for (size_t k = 0; k < u->s.nholders; k++)
			printf("  held: pid %d (%s) has %s of %s open\n", u->s.holder[k].pid, u->s.holder[k].comm,
			       u->s.holder[k].node, u->s.fn[u->s.holder[k].fn].addr);
		if (u->s.n && u->s.scan != VFIO_SCAN_DONE) {
			char bc[VFIO_WHY_MAX + 16];

			printf("  busy check %s\n", busy_check(u, bc, sizeof(bc)));
		}
		if (u->dry_run || u->applied)
			for (size_t k = 0; k < u->p.n; k++) {
				char line[256];

				vfio_step_str(&u->s, &u->p.step[k], u->h.prefix,
					      line, sizeof(line));
				printf("  %s\n", line);
			}
		printf("%s%s%s\n", u->result, u->error[0] ? ": " : "", u->error);
	} else {
		struct json *o = result_json(u, addr);
		char *s = o ? json_print(o, NULL) : NULL;

		json_free(o);
		if (!s)
			return -1;
		printf("%s\n", s);
		free(s);
	}
	rc = fflush(stdout);
	return rc == 0 ? 0 : -1;
}

/* ---- PhysicalGPU status and Event -------------------------------------- */

/* One JSON request that must answer 2xx; the reply body into *out when
 * given. Returns 0 or -1 (logged). */
static int request(struct kube *k, const struct fb_log *lg, const char *method, const char *path,
		   const char *ctype, const struct json *body, struct json **out)
{
	struct kube_result res;
	int rc = kube_call_json(k, lg, NULL, method, path, ctype, body, &res);

	if (rc == 0 && out) {
		*out = res.body;
		res.body = NULL;
	}
	kube_result_free(&res);
	return rc;
}

/* Patches status.currentState of the device's PhysicalGPU and records an
 * Event on it. Failures are logged only: they never change the exit code. */
static void update_pgpu(struct run *u, const char *node, const char *kubeconfig, int exit_code)
{
	const char *drv = u->s.n ? (u->applied ? u->r.final[u->s.dev] : u->s.fn[u->s.dev].driver) : "";
	struct kube_opts ko;
	struct kube *k = NULL;
	struct fb_errinfo ei;
	struct json *patch = NULL, *obj = NULL, *ev = NULL;
	char name[PGPU_NAME_MAX + 1], path[512], msg[1400], now[32], gen[PGPU_NAME_MAX + 2];
	const char *reason, *type = "Normal";

	if (strcmp(drv, "?") == 0)
		drv = "";
	pgpu_name(node, u->s.addr, name);
	fb_errinfo_init(&ei);
	kube_opts_init(&ko);
	ko.kubeconfig = kubeconfig;
	ko.max_attempts = 3;
	ko.timeout_ms = 10000;
	if (kube_connect(&k, &ko, &u->log, -1, NULL, 0, &ei) < 0) {
		LOG_W(&u->log, "--update-physicalgpu: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return;
	}

	/* {"status":{"currentState":{"driver":D|null,"driverType":T}}}, built
	 * inside out: each _take owns (and on failure frees) what it is given */
	{
		struct json *cs = json_new_object(), *st = json_new_object();

		patch = json_new_object();
		if (!cs || !st || !patch || json_set_take(cs, "driver", str_or_null(drv)) < 0 ||
		    json_set_str(cs, "driverType", pgpu_driver_type(drv)) < 0) {
			json_free(cs);
			json_free(st);
			goto out;
		}
		if (json_set_take(st, "currentState", cs) < 0) {
			json_free(st);
			goto out;
		}
		if (json_set_take(patch, "status", st) < 0)
			goto out;
	}
	snprintf(path, sizeof(path), PGPU_PATH "/%s/status", name);
	if (request(k, &u->log, "PATCH", path, "application/merge-patch+json", patch, &obj) < 0)
		goto out;
	LOG_I(&u->log, "PhysicalGPU %s: status.currentState.driver = %s", name, *drv ? drv : "(none)");

	if (strcmp(u->result, "switched") == 0) {
		reason = "DriverSwitched";
		snprintf(msg, sizeof(msg), "%s moved from %s to %s", u->s.addr,
			 u->s.fn[u->s.dev].driver[0] ? u->s.fn[u->s.dev].driver : "no driver", *drv ? drv : "no driver");
	} else if (strcmp(u->result, "unchanged") == 0) {
		goto out; /* nothing happened: no event */
	} else {
		type = "Warning";
		reason = exit_code == 4 ? "DriverSwitchRefused" : "DriverSwitchFailed";
		snprintf(msg, sizeof(msg), "%s to %s: %s: %.1200s", u->s.addr, u->target, u->result, u->error);
	}
	log_rfc3339(time(NULL), now, sizeof(now));
	snprintf(gen, sizeof(gen), "%.*s.", PGPU_NAME_MAX - 6, name);
	ev = json_new_object();
	{
		struct json *md = json_new_object(), *io = json_new_object(), *src = json_new_object();

		if (!ev || !md || !io || !src) {
			json_free(md);
			json_free(io);
			json_free(src);
			goto out;
		}
		json_set_str(md, "generateName", gen);
		json_set_str(md, "namespace", "default");
		json_set_str(io, "apiVersion", PGPU_API);
		json_set_str(io, "kind", "PhysicalGPU");
		json_set_str(io, "name", name);
		json_set_str(io, "uid", json_get_str(json_get(obj, "metadata"), "uid", ""));
		json_set_str(io, "resourceVersion", json_get_str(json_get(obj, "metadata"), "resourceVersion", ""));
		json_set_str(src, "component", "vfio-switch");
		json_set_str(src, "host", node);
		json_set_str(ev, "apiVersion", "v1");
		json_set_str(ev, "kind", "Event");
		json_set_take(ev, "metadata", md);
		json_set_take(ev, "involvedObject", io);
		json_set_str(ev, "reason", reason);
		json_set_str(ev, "message", msg);
		json_set_str(ev, "type", type);
		json_set_take(ev, "source", src);
		json_set_str(ev, "reportingComponent", "vfio-switch");
		json_set_str(ev, "reportingInstance", node);
		json_set_str(ev, "firstTimestamp", now);
		json_set_str(ev, "lastTimestamp", now);
		json_set_take(ev, "count", json_new_number(1));
	}
	if (request(k, &u->log, "POST", "/api/v1/namespaces/default/events", "application/json", ev, NULL) == 0)
		LOG_I(&u->log, "PhysicalGPU %s: event %s", name, reason);
out:
	json_free(patch);
	json_free(obj);
	json_free(ev);
	kube_free(k);
}

/* ---- main --------------------------------------------------------------- */

struct vs_opts {
	const char *pci, *to, *group, *output, *node, *host, *kubeconfig;
	int dry_run, force, update;
	long verbosity;
	long long timeout_ms;
};

#define VO(member) offsetof(struct vs_opts, member)

static const struct opt vs_optv[] = {
	{ .lo = "pci", .kind = OPT_STR, .off = VO(pci), .arg = "ADDRESS",
	  .help = "the device, DDDD:BB:DD.F (domain may be longer) or BB:DD.F" },
	{ .lo = "to", .kind = OPT_STR, .off = VO(to), .arg = "DRIVER",
	  .help = "vfio-pci, nvidia, any driver name, default (clear the override), or vfio (the best VFIO "
		  "variant driver of each function from the host's modules.alias, else vfio-pci)" },
	{ .lo = "group", .kind = OPT_STR, .off = VO(group), .arg = "auto|device",
	  .help = "auto: the device's IOMMU group moves with it (default); device: only the device" },
	{ .lo = "dry-run", .kind = OPT_FLAG, .off = VO(dry_run), .help = "print the plan, change nothing" },
	{ .lo = "force", .kind = OPT_FLAG, .off = VO(force), .help = "go past the safety refusals" },
	{ .lo = "timeout", .kind = OPT_DUR, .off = VO(timeout_ms), .min = 1, .arg = "DUR",
	  .help = "wait this long for each function to bind (default 30s)" },
	{ .lo = "node", .kind = OPT_STR, .off = VO(node), .arg = "NAME",
	  .help = "this node's name, for the PhysicalGPU (default $NODE_NAME)" },
	{ .lo = "update-physicalgpu", .kind = OPT_FLAG, .off = VO(update),
	  .help = "patch the device's PhysicalGPU status.currentState and record an Event" },
	{ .lo = "kubeconfig", .kind = OPT_STR, .off = VO(kubeconfig), .arg = "PATH",
	  .help = "kubeconfig for --update-physicalgpu (default $KUBECONFIG, in-cluster)" },
	{ .lo = "output", .so = 'o', .kind = OPT_STR, .off = VO(output), .arg = "json|text",
	  .help = "result on stdout as JSON (default) or text" },
	{ .lo = "host-prefix", .kind = OPT_STR, .off = VO(host), .arg = "P",
	  .help = "host sysfs at P+\"sys\" (default /host- if /host-sys exists, else /); "
		  "P ending in / is also the root modprobe runs in" },
	{ .lo = "v", .so = 'v', .kind = OPT_INT, .off = VO(verbosity), .min = 0, .max = 10, .arg = "N",
	  .help = "log verbosity (1: every sysfs write)" },
};

static const struct opt_spec vs_spec = { .name = "vfio-switch", .usage = usage, .opts = vs_optv,
					.nopts = sizeof(vs_optv) / sizeof(vs_optv[0]) };

/* Checks the flags into addr and req. Returns -1 to go on, else the exit
 * status (the message printed). */
static int vs_check(struct vs_opts *o, char *addr, struct vfio_req *req)
{
	if (!o->pci || !o->to) {
		fprintf(stderr, "vfio-switch: --pci and --to are required (see --help)\n");
		return 2;
	}
	if (vfio_parse_addr(o->pci, addr) < 0) {
		fprintf(stderr, "vfio-switch: --pci \"%s\": not a PCI address (DDDD:BB:DD.F, device <= 1f, function <= 7)\n",
			o->pci);
		return 2;
	}
	if (!vfio_valid_driver(o->to) || strcmp(o->to, "none") == 0) {
		fprintf(stderr, "vfio-switch: --to \"%s\": not a driver name%s\n", o->to,
			strcmp(o->to, "none") == 0 ? " (\"none\" would leave the device without a driver)" : "");
		return 2;
	}
	if (strcmp(o->group, "auto") == 0)
		req->group = VFIO_GROUP_AUTO;
	else if (strcmp(o->group, "device") == 0)
		req->group = VFIO_GROUP_DEVICE;
	else {
		fprintf(stderr, "vfio-switch: --group \"%s\": must be auto or device\n", o->group);
		return 2;
	}
	if (strcmp(o->output, "json") != 0 && strcmp(o->output, "text") != 0) {
		fprintf(stderr, "vfio-switch: --output \"%s\": must be json or text\n", o->output);
		return 2;
	}
	if (!o->node || !*o->node)
		o->node = getenv("NODE_NAME");
	if (o->update && (!o->node || !*o->node)) {
		fprintf(stderr, "vfio-switch: --update-physicalgpu needs --node or $NODE_NAME\n");
		return 2;
	}
	req->force = o->force;
	return -1;
}

/* Applies the plan (the result already in u). Returns the exit status. */
static int vs_apply(struct run *u, const struct vs_opts *o, sigset_t *stop)
{
	struct vfio_ops ops;
	struct vfio_real real = { .h = &u->h, .root = NULL, .log = &u->log, .stop = stop };
	char root[HOSTFS_PREFIX_MAX];
	size_t n = strlen(u->h.prefix);
	int exit_code;

	/* a prefix that is a directory ("/host/") is the host's root for modprobe */
	if (n > 1 && u->h.prefix[n - 1] == '/') {
		snprintf(root, sizeof(root), "%.*s", (int)n - 1, u->h.prefix);
		real.root = root;
	}
	vfio_ops_real(&ops, &real);
	for (size_t i = 0; i < u->s.n; i++)
		if (u->p.fn_moves[i])
			LOG_I(&u->log, "%s: %s -> %s", u->s.fn[i].addr,
			      u->s.fn[i].driver[0] ? u->s.fn[i].driver : "(none)", u->p.fn_target[i]);
	exit_code = vfio_apply(&u->s, &u->p, &ops, o->timeout_ms, &u->log, &u->r);
	u->applied = exit_code != 4;
	snprintf(u->error, sizeof(u->error), "%s", u->r.why);
	u->result = exit_code == 0 ? "switched" : exit_code == 4 ? "refused" : exit_code == 5 ? "rolled-back"
									     : "rollback-failed";
	return exit_code;
}

/* Snapshot, plan, apply. Returns the exit status, or -1 when not even a
 * snapshot was taken (nothing to report). *early: refused before a plan
 * (no device, the lock timed out): the result is printed, nothing recorded. */
static int vs_switch(struct run *u, const struct vs_opts *o, const char *addr, const struct vfio_req *req,
		     sigset_t *stop, int *lockfd, int *early)
{
	struct fb_errinfo ei;
	char msg[1200];
	int rc;

	fb_errinfo_init(&ei);
	/* one run per IOMMU group at a time; then no signal may cut a switch
	 * in half: SIGTERM (Job deleted, deadline) is held and makes apply
	 * stop and roll back */
	sigemptyset(stop);
	sigaddset(stop, SIGTERM);
	sigaddset(stop, SIGINT);
	sigaddset(stop, SIGHUP);
	rc = o->dry_run ? 0 : (*lockfd = vfio_lock(&u->h, addr, o->timeout_ms, &ei));
	if (rc >= 0) {
		sigprocmask(SIG_BLOCK, stop, NULL);
		rc = vfio_snapshot(&u->h, addr, o->to, &u->s, &ei);
	}
	if (rc == -FB_ENOENT) {
		snprintf(u->error, sizeof(u->error), "no PCI device %s (%s)", addr, fb_errinfo_str(&ei, msg, sizeof(msg)));
		LOG_E(&u->log, "%s", u->error);
		u->s.n = 0;
		u->result = "not-found";
		*early = 1;
		return 3;
	}
	if (rc == -FB_ETIMEDOUT || rc == -FB_E2BIG) {
		snprintf(u->error, sizeof(u->error), "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		LOG_E(&u->log, "refused: %s", u->error);
		u->s.n = 0;
		u->result = "refused";
		*early = 1;
		return 4;
	}
	if (rc < 0) {
		LOG_E(&u->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return -1;
	}
	vfio_plan(&u->s, req, &u->p);
	if (u->p.warn[0])
		LOG_W(&u->log, "%s", u->p.warn);
	if (u->p.verdict == VFIO_PLAN_REFUSED) {
		snprintf(u->error, sizeof(u->error), "%s", u->p.why);
		LOG_E(&u->log, "refused: %s", u->error);
		u->result = "refused";
		return 4;
	}
	if (u->p.verdict == VFIO_PLAN_NOTHING) {
		LOG_I(&u->log, "%s: already %s", addr, strcmp(o->to, VFIO_DEFAULT) == 0 ? "without an override" : "bound");
		u->result = "unchanged";
		return 0;
	}
	if (o->dry_run) {
		u->result = "dry-run";
		return 0;
	}
	return vs_apply(u, o, stop);
}

int vfio_switch_main(int argc, char **argv)
{
	struct vs_opts o = { .group = "auto", .output = "json", .timeout_ms = 30000 };
	int rc, exit_code, lockfd = -1, early = 0;
	sigset_t stop;
	char addr[VFIO_ADDR_MAX];
	struct vfio_req req = { 0 };
	struct run *u;

	if ((rc = opt_parse_only(&vs_spec, &o, argc, argv)) >= 0)
		return rc;
	if ((rc = vs_check(&o, addr, &req)) >= 0)
		return rc;
	if (!(u = calloc(1, sizeof(*u)))) {
		fprintf(stderr, "vfio-switch: out of memory\n");
		return 1;
	}
	log_init(&u->log);
	u->log.v = (int)o.verbosity;
	u->dry_run = o.dry_run;
	u->target = o.to;
	hostfs_init(&u->h);
	if (hostfs_setup(&u->h, o.host) < 0) {
		fprintf(stderr, "vfio-switch: --host-prefix is too long\n");
		free(u);
		return 2;
	}
	exit_code = vs_switch(u, &o, addr, &req, &stop, &lockfd, &early);
	if (exit_code < 0) {
		exit_code = 1;
		goto out;
	}
	if (early) {
		print_result(u, addr, o.output[0] == 't');
		goto out;
	}
	if (print_result(u, addr, o.output[0] == 't') < 0) {
		LOG_E(&u->log, "cannot write the result to stdout");
		if (!exit_code)
			exit_code = 1;
	}
	if (o.update && !o.dry_run)
		update_pgpu(u, o.node, o.kubeconfig, exit_code);
out:
	if (lockfd >= 0)
		close(lockfd);
	free(u);
	return exit_code;
}
