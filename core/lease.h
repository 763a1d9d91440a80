/* lease: leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection package does it (tools/leaderelection/resourcelock/leaselock.go):
 * a candidate creates or takes over the Lease when it is free or expired
 * (renewTime + leaseDurationSeconds in the past, by its own clock: it
 * notes when it last saw the record change), renews it every retry period
 * while it holds it, and considers itself leader only while its last
 * successful renewal is younger than the renew deadline. All writes are
 * PUTs with the resourceVersion read (409 = someone else won). Runs on a
 * core/loop timer; the requests block the loop for at most one request. */
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
	long long duration_ms;      /* 15000 */
	long long renew_deadline_ms; /* 10000 */
	long long retry_ms;         /* 2000 */
};

/* Called when leadership is gained (leading = 1) or lost (leading = 0). */
typedef void (*lease_fn)(void *ctx, int leading);

struct lease;

/* Starts trying at once (first attempt from the loop). k, lg borrowed and
 * must outlive the lease. Returns 0 or -FB_ENOMEM. */
int lease_start(struct lease **out, struct kube *k, struct loop *l, const struct lease_opts *o,
		const struct fb_log *lg, lease_fn fn, void *ctx);
/* 1 while leader: the last renewal is younger than the renew deadline
 * (checked against the clock now, not only when a timer fires). */
int lease_leading(const struct lease *le);
/* Stops; when leading, releases the lease (holderIdentity "" and
 * leaseDurationSeconds 1, as client-go's ReleaseOnCancel) so a successor
 * need not wait. Safe with NULL. */
void lease_free(struct lease *le);

#endif
