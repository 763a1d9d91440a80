/* lease: client-go leader election (tools/leaderelection, LeaseLock) on a
 * coordination.k8s.io/v1 Lease. What it keeps from client-go:
 *  - expiry by the local clock only: observed_ms is when this process last
 *    saw the Lease spec change; the lease is free once observed_ms +
 *    leaseDurationSeconds (the record's own value) has passed. The remote
 *    renewTime is written, never compared with our wall clock.
 *  - the leader's fast path: renew with a PUT of the object it last wrote;
 *    when that fails, fall back to GET, check, PUT.
 *  - candidates retry every retry period plus up to 1.2x jitter
 *    (wait.JitterUntil), the leader every retry period without jitter.
 *  - release on stop as ReleaseOnCancel: holderIdentity "", 1 s duration.
 * Deviations, each on the safe side: leaseDurationSeconds is the duration
 * rounded up, not truncated, to whole seconds; a record with no positive
 * leaseDurationSeconds counts as holding for our own duration, not as expired;
 * a leader that reads another holder in the Lease stops leading at once
 * instead of at its renew deadline (and, should it win the Lease back,
 * says so with a new callback). Each request is one attempt that times out
 * after half the renew deadline: the retry period is the retry policy. */
#include "lease.h"

#include "json.h"
#include "kube.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEASE_API "coordination.k8s.io/v1"
#define JITTER_PCT 120 /* client-go's JitterFactor 1.2 */

struct lease {
	struct kube *kube;         /* owned: a connection of our own, see lease_start */
	struct loop *l;
	const struct fb_log *lg;
	lease_fn fn;
	void *ctx;
	char *identity;            /* owned */
	char desc[320];            /* "ns/name", for log lines */
	char coll[384];            /* .../namespaces/ns/leases */
	char path[640];            /* .../namespaces/ns/leases/name */
	char ns[64];
	char name[254];
	long long duration_ms, renew_deadline_ms, retry_ms;
	long long duration_s;      /* what we write in leaseDurationSeconds */
	struct json *obj;          /* the Lease last read or written, owned; its
				    * resourceVersion makes our PUTs conditional */
	struct json *observed;     /* its spec when observed_ms was set, owned */
	long long observed_ms;     /* when the spec last changed, by our clock */
	long long renewed_ms;      /* start of our last successful write as holder */
	int leading;
	char *reported;            /* holder last logged, owned ("" none) */
	int tick_timer, deadline_timer;
	unsigned rng;
};

enum attempt { WON, HELD, FAILED };

static unsigned next_rand(struct lease *le)
{
	/* xorshift32: jitter only, no need for quality */
	le->rng ^= le->rng << 13;
	le->rng ^= le->rng >> 17;
	le->rng ^= le->rng << 5;
	return le->rng;
}

/* RFC 3339 with microseconds in UTC, as metav1.MicroTime marshals. */
static void micro_time(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
}

static const char *holder_of(const struct json *spec)
{
	return json_get_str(spec, "holderIdentity", "");
}

/* An int32 field of the spec, 0 when missing; clamped so that remote values
 * can overflow nothing (transitions + 1, seconds * 1000). */
static long long int_of(const struct json *spec, const char *key)
{
	long long v = 0;

	if (json_int(json_get(spec, key), &v) < 0 || v < 0)
		return 0;
	return v < INT32_MAX ? v : INT32_MAX - 1;
}

static int holder_is_us(const struct lease *le)
{
	return le->observed && strcmp(holder_of(le->observed), le->identity) == 0;
}

/* isLeaseValid: the observed record has not gone unchanged for its duration. */
static int observed_valid(const struct lease *le, long long now)
{
	long long d = int_of(le->observed, "leaseDurationSeconds");

	if (!le->observed)
		return 0;
	return le->observed_ms + (d > 0 ? d * 1000 : le->duration_ms) > now;
}

/* setObservedRecord: spec is taken; the clock restarts only on a change, so
 * a holder that stopped renewing expires even though we keep reading it. */
static void observe_take(struct lease *le, struct json *spec)
{
	if (le->observed && spec && json_equal(le->observed, spec)) {
		json_free(spec);
		return;
	}
	json_free(le->observed);
	le->observed = spec;
	le->observed_ms = loop_now_ms();
}

/* LeaderElectionRecordToLeaseSpec. acquire borrowed (NULL: now). */
static struct json *make_spec(const char *holder, long long duration_s, const struct json *acquire,
			      long long transitions)
{
	struct json *s = json_new_object();
	char now[80]; /* room for any int year, as the compiler checks */

	micro_time(now, sizeof(now));
	if (!s || json_set_str(s, "holderIdentity", holder) < 0 ||
	    json_set_take(s, "leaseDurationSeconds", json_new_number((double)duration_s)) < 0 ||
	    json_set_take(s, "acquireTime", acquire ? json_dup(acquire) : json_new_string(now)) < 0 ||
	    json_set_str(s, "renewTime", now) < 0 ||
	    json_set_take(s, "leaseTransitions", json_new_number((double)transitions)) < 0) {
		json_free(s);
		return NULL;
	}
	return s;
}

/* One request; logs what went wrong. Returns the HTTP status, 0 for no
 * answer. On 200/201 *out (may be NULL) takes the answered object. */
static int call(struct lease *le, const char *method, const char *path, const struct json *body,
		struct json **out)
{
	struct kube_result res;
	struct fb_errinfo ei;
	char *text = NULL, msg[1024];
	size_t len = 0;
	int rc;

	fb_errinfo_init(&ei);
	if (body && !(text = json_print(body, &len))) {
		LOG_E(le->lg, "lease %s: out of memory", le->desc);
		return 0;
	}
	rc = kube_request(le->kube, method, path, body ? "application/json" : NULL, text, len, &res, &ei);
	free(text);
	if (rc < 0) {
		LOG_W(le->lg, "lease %s: %s", le->desc, fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 0;
	}
	rc = res.status;
	if ((rc == 200 || rc == 201) && out) {
		*out = res.body;
		res.body = NULL;
	} else if (rc == 409) {
		/* someone else wrote first: an ordinary lost race */
		LOG_V(le->lg, 2, "lease %s: %s %s: conflict: %s", le->desc, method, path, res.message);
	} else if (rc != 200 && rc != 201 && rc != 404) {
		LOG_W(le->lg, "lease %s: %s %s: HTTP %d %s: %s", le->desc, method, path, rc, res.reason,
		      res.message);
	}
	kube_result_free(&res);
	return rc;
}

/* Lock.Update: PUT of the last object read with spec replaced (spec taken).
 * *t0 gets the time the request started. */
static enum attempt put_spec(struct lease *le, struct json *spec, long long *t0)
{
	struct json *body, *mine, *got = NULL;
	int st;

	if (!spec)
		goto oom;
	if (!le->obj || !(body = json_dup(le->obj))) {
		json_free(spec);
		goto oom;
	}
	if (!(mine = json_dup(spec)) || json_set_take(body, "spec", spec) < 0 ||
	    json_set_str(body, "apiVersion", LEASE_API) < 0 || json_set_str(body, "kind", "Lease") < 0) {
		json_free(mine);
		json_free(body);
		goto oom;
	}
	*t0 = loop_now_ms();
	st = call(le, "PUT", le->path, body, &got);
	json_free(body);
	if (st != 200 || !got) {
		json_free(got);
		json_free(mine);
		return FAILED;
	}
	json_free(le->obj);
	le->obj = got;
	observe_take(le, mine);
	return WON;
oom:
	LOG_E(le->lg, "lease %s: out of memory", le->desc);
	return FAILED;
}

/* Lock.Create, for a Lease that does not exist yet. */
static enum attempt create(struct lease *le, long long *t0)
{
	struct json *body = json_new_object(), *md = json_new_object(), *got = NULL;
	struct json *spec = make_spec(le->identity, le->duration_s, NULL, 0);
	int st;

	if (!md || !body || !spec || json_set_str(md, "name", le->name) < 0 ||
	    json_set_str(md, "namespace", le->ns) < 0) {
		json_free(md);
		goto oom;
	}
	if (json_set_take(body, "metadata", md) < 0 || json_set_str(body, "apiVersion", LEASE_API) < 0 ||
	    json_set_str(body, "kind", "Lease") < 0 || json_set_take(body, "spec", json_dup(spec)) < 0)
		goto oom;
	*t0 = loop_now_ms();
	st = call(le, "POST", le->coll, body, &got);
	json_free(body);
	if ((st != 200 && st != 201) || !got) {
		json_free(got);
		json_free(spec);
		return FAILED;
	}
	json_free(le->obj);
	le->obj = got;
	observe_take(le, spec);
	return WON;
oom:
	json_free(body);
	json_free(spec);
	LOG_E(le->lg, "lease %s: out of memory", le->desc);
	return FAILED;
}

/* tryAcquireOrRenew. *t0: start of the write that won; *other: the Lease
 * read named someone else (or no one). */
static enum attempt try_acquire_or_renew(struct lease *le, long long *t0, int *other)
{
	struct json *got = NULL;
	const struct json *old;
	int st;

	/* 1. the leader's fast path: our last write is probably still current */
	if (le->obj && holder_is_us(le) && observed_valid(le, loop_now_ms())) {
		old = le->observed;
		if (put_spec(le, make_spec(le->identity, le->duration_s, json_get(old, "acquireTime"),
					   int_of(old, "leaseTransitions")), t0) == WON)
			return WON;
	}
	/* 2. read it, or create it */
	st = call(le, "GET", le->path, NULL, &got);
	if (st == 404)
		return create(le, t0);
	if (st != 200 || !got) {
		json_free(got);
		return FAILED;
	}
	json_free(le->obj);
	le->obj = got;
	old = json_get(got, "spec");
	observe_take(le, old ? json_dup(old) : json_new_object());
	if (!le->observed) {
		LOG_E(le->lg, "lease %s: out of memory", le->desc);
		return FAILED;
	}
	/* 3. someone else holds it and we have not seen it expire */
	old = le->observed;
	*other = !holder_is_us(le);
	if (*other && *holder_of(old) && observed_valid(le, loop_now_ms()))
		return HELD;
	/* 4. renew it (the same term) or take it over (a new term) */
	if (!*other)
		return put_spec(le, make_spec(le->identity, le->duration_s, json_get(old, "acquireTime"),
					      int_of(old, "leaseTransitions")), t0);
	return put_spec(le, make_spec(le->identity, le->duration_s, NULL, int_of(old, "leaseTransitions") + 1),
			t0);
}

/* OnNewLeader: once per change of the holder we read. */
static void report_holder(struct lease *le)
{
	const char *h = le->observed ? holder_of(le->observed) : "";
	char esc[320];
	char *dup;

	if (le->reported && strcmp(le->reported, h) == 0)
		return;
	if (!(dup = strdup(h)))
		return;
	free(le->reported);
	le->reported = dup;
	if (!*h)
		LOG_V(le->lg, 2, "lease %s: released by its holder", le->desc);
	else if (strcmp(h, le->identity) != 0)
		LOG_I(le->lg, "lease %s: new leader is %s", le->desc, log_escape(h, strlen(h), esc, sizeof(esc)));
}

static void lose(struct lease *le, const char *why)
{
	le->leading = 0;
	loop_timer_cancel(le->l, le->deadline_timer);
	le->deadline_timer = 0;
	LOG_I(le->lg, "lease %s: lost leadership: %s", le->desc, why);
	le->fn(le->ctx, 0);
}

static void deadline(void *ctx);

/* Stops leading once the renew deadline has passed; else makes sure a timer
 * will look again when it does. */
static void check_deadline(struct lease *le)
{
	long long left;
	char why[96];

	if (!le->leading)
		return;
	left = le->renewed_ms + le->renew_deadline_ms - loop_now_ms();
	if (left <= 0) {
		snprintf(why, sizeof(why), "not renewed for %lld ms", le->renew_deadline_ms);
		lose(le, why);
		return;
	}
	loop_timer_cancel(le->l, le->deadline_timer);
	le->deadline_timer = loop_timer(le->l, left, deadline, le);
	if (le->deadline_timer < 0)
		le->deadline_timer = 0; /* the next tick checks it too */
}

static void deadline(void *ctx)
{
	struct lease *le = ctx;

	le->deadline_timer = 0;
	check_deadline(le);
}

static void tick(void *ctx)
{
	struct lease *le = ctx;
	long long t0 = 0, delay;
	int other = 0;
	enum attempt a;

	le->tick_timer = 0;
	/* a loop blocked past the deadline: report the loss before renewing,
	 * so the callbacks follow what lease_leading() said meanwhile */
	check_deadline(le);
	a = try_acquire_or_renew(le, &t0, &other);
	report_holder(le);
	if (le->leading && other)
		lose(le, "the lease names another holder");
	if (a == WON && loop_now_ms() - t0 < le->renew_deadline_ms) {
		/* (a write that took longer than the deadline does not count:
		 * others may have seen the lease expire meanwhile) */
		le->renewed_ms = t0;
		if (!le->leading) {
			le->leading = 1;
			LOG_I(le->lg, "lease %s: became leader as %s", le->desc, le->identity);
			le->fn(le->ctx, 1);
		}
	}
	check_deadline(le);
	delay = le->retry_ms;
	if (!le->leading)
		delay += (long long)(next_rand(le) % 1000u) * le->retry_ms * JITTER_PCT / 100000;
	le->tick_timer = loop_timer(le->l, delay, tick, le);
	if (le->tick_timer < 0) {
		LOG_E(le->lg, "lease %s: no timer left: %s", le->desc, fb_strerror(le->tick_timer));
		le->tick_timer = 0;
	}
}

int lease_start(struct lease **out, struct kube *k, struct loop *l, const struct lease_opts *o,
		const struct fb_log *lg, lease_fn fn, void *ctx)
{
	struct lease *le;
	struct kube_opts ko;
	struct fb_errinfo ei;
	char msg[1024];
	int rc;

	*out = NULL;
	/* client-go's NewLeaderElector checks, so a leader cannot outlive its lease */
	if (!o->ns || !*o->ns || strlen(o->ns) > 63 || !o->name || !*o->name || strlen(o->name) > 253 ||
	    !o->identity || !*o->identity || o->retry_ms <= 0 ||
	    o->renew_deadline_ms * 100 <= o->retry_ms * JITTER_PCT ||
	    o->duration_ms <= o->renew_deadline_ms) {
		LOG_E(lg, "lease: needs a namespace, a name, an identity and duration > renew deadline > 1.2 x retry period");
		return -FB_EINVAL;
	}
	if (!(le = calloc(1, sizeof(*le))) || !(le->identity = strdup(o->identity))) {
		free(le);
		return -FB_ENOMEM;
	}
	le->l = l;
	le->lg = lg;
	le->fn = fn;
	le->ctx = ctx;
	snprintf(le->ns, sizeof(le->ns), "%s", o->ns);
	snprintf(le->name, sizeof(le->name), "%s", o->name);
	snprintf(le->desc, sizeof(le->desc), "%s/%s", o->ns, o->name);
	snprintf(le->coll, sizeof(le->coll), "/apis/" LEASE_API "/namespaces/%s/leases", o->ns);
	snprintf(le->path, sizeof(le->path), "%s/%s", le->coll, o->name);
	le->duration_ms = o->duration_ms;
	le->renew_deadline_ms = o->renew_deadline_ms;
	le->retry_ms = o->retry_ms;
	le->duration_s = (o->duration_ms + 999) / 1000;
	le->rng = (unsigned)loop_now_ms() ^ ((unsigned)getpid() << 16) ^ 0x9e3779b9u;
	for (const char *p = o->identity; *p; p++)
		le->rng = le->rng * 31 + (unsigned char)*p;
	if (!le->rng)
		le->rng = 1;
	/* Our own connection to k's server: one try per request, bounded well
	 * inside the renew deadline (the retry period is our retry policy), and
	 * no cancel fd, so the release still goes out after SIGTERM. */
	kube_opts_init(&ko);
	ko.max_attempts = 1;
	ko.timeout_ms = (int)(o->renew_deadline_ms / 2 > 30000 ? 30000 : o->renew_deadline_ms / 2);
	fb_errinfo_init(&ei);
	rc = kube_new(&le->kube, kube_config_of(k), &ko, lg, -1, &ei);
	if (rc < 0) {
		LOG_E(lg, "lease %s: %s", le->desc, fb_errinfo_str(&ei, msg, sizeof(msg)));
		lease_free(le);
		return rc;
	}
	le->tick_timer = loop_timer(l, 0, tick, le);
	if (le->tick_timer < 0) {
		rc = le->tick_timer;
		le->tick_timer = 0;
		lease_free(le);
		return rc;
	}
	LOG_V(lg, 2, "lease %s: candidate %s", le->desc, le->identity);
	*out = le;
	return 0;
}

void lease_poll(struct lease *le)
{
	if (!le || !le->leading || loop_now_ms() - le->renewed_ms < le->retry_ms)
		return;
	loop_timer_cancel(le->l, le->tick_timer);
	tick(le);
}

int lease_leading(const struct lease *le)
{
	return le && le->leading && loop_now_ms() - le->renewed_ms < le->renew_deadline_ms;
}

/* release: only while the record we last saw names us; a stale
 * resourceVersion just gets a 409 and changes nothing. */
static void release(struct lease *le)
{
	struct json *spec;
	long long t0;

	if (!le->kube || !le->obj || !holder_is_us(le))
		return;
	spec = make_spec("", 1, NULL, int_of(le->observed, "leaseTransitions"));
	if (put_spec(le, spec, &t0) == WON)
		LOG_I(le->lg, "lease %s: released", le->desc);
	else
		LOG_W(le->lg, "lease %s: could not release; the next leader waits for it to expire", le->desc);
}

void lease_free(struct lease *le)
{
	if (!le)
		return;
	loop_timer_cancel(le->l, le->tick_timer);
	loop_timer_cancel(le->l, le->deadline_timer);
	release(le);
	kube_free(le->kube);
	json_free(le->obj);
	json_free(le->observed);
	free(le->reported);
	free(le->identity);
	free(le);
}
