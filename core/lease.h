/* lease: leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection package does it (tools/leaderelection/resourcelock/leaselock.go):
 * a candidate creates or takes over the Lease when it is free or expired
 * (renewTime + leaseDurationSeconds in the past, by its own clock: it
 * notes when it last saw the record change), renews it every retry period
 * while it holds it, and considers itself leader only while its last
 * successful renewal is younger than the renew deadline. All writes are
 * PUTs with the resourceVersion read (409 = someone else won). Runs on a
 * core/loop timer; the requests block the loop for at most one request,
 * which times out after half the renew deadline. */
#ifndef FB_LEASE_H
#define FB_LEASE_H

#include "err.h"
#include "log.h"
#include "loop.h"

struct kube;

struct lease_opts {
	const char *ns;             /* namespace of the Lease */
	const char *name;           /* "nfd-master.nfd.kubernetes.io" */
	const char *identity;       /* holderIdentity, e.g. "<node>_<random>" */
	long long duration_ms;      /* 15000; written rounded up to whole seconds */
	long long renew_deadline_ms; /* 10000 */
	long long retry_ms;         /* 2000 */
};

/* Called from the loop when leadership is gained (leading = 1) or lost
 * (leading = 0: not renewed within the renew deadline, or the Lease names
 * another holder). It must not lease_free the lease (loop_stop instead). */
typedef void (*lease_fn)(void *ctx, int leading);

struct lease;

/* Starts trying at once (first attempt from the loop). k borrowed for the
 * call: the lease opens its own connection with k's configuration, one
 * attempt per request and no cancel fd (so the release on lease_free still
 * goes out after SIGTERM). lg borrowed, must outlive the lease; o copied.
 * Returns 0, -FB_EINVAL (logged: a missing name, or not duration >
 * renew deadline > 1.2 x retry, as client-go requires), -FB_ENOMEM, or an
 * error of kube_new. */
int lease_start(struct lease **out, struct kube *k, struct loop *l, const struct lease_opts *o,
		const struct fb_log *lg, lease_fn fn, void *ctx);
/* 1 while leader: the last renewal is younger than the renew deadline
 * (checked against the clock now, not only when a timer fires). */
int lease_leading(const struct lease *le);
/* For a caller that keeps the loop busy (a long paged list): renews now
 * when a renewal is due, as the loop's timer would have. No-op otherwise,
 * and with NULL. */
void lease_poll(struct lease *le);
/* Stops; when the Lease last read names us, releases it (holderIdentity ""
 * and leaseDurationSeconds 1, as client-go's ReleaseOnCancel) so a successor
 * need not wait: one blocking PUT, also after SIGTERM. The callback is not
 * called. Safe with NULL. */
void lease_free(struct lease *le);

#endif
