/* hostfs: the injected host root. Every path to host state (sys, proc, etc,
 * boot, usr, lib) is the prefix plus the relative name, by plain concatenation
 * as upstream NFD does: prefix "/host-" gives "/host-sys", prefix "/" gives
 * "/sys", a fixture prefix "tests/fixtures/rpi4/" gives "tests/fixtures/rpi4/sys". */
#ifndef FB_HOSTFS_H
#define FB_HOSTFS_H

#include <stddef.h>

#define HOSTFS_PREFIX_MAX 512

struct hostfs {
	char prefix[HOSTFS_PREFIX_MAX];
};

/* Cannot fail: prefix "/". */
void hostfs_init(struct hostfs *h);

/* Sets the prefix. NULL picks the default: "/host-" when "/host-sys" is a
 * directory (the upstream image's layout), else "/". Returns 0 or -FB_E2BIG. */
int hostfs_setup(struct hostfs *h, const char *prefix);

/* Writes prefix+rel into buf. Returns its length or -FB_E2BIG. */
int hostfs_path(const struct hostfs *h, const char *rel, char *buf, size_t size);

/* Like hostfs_path, but resolves symlinks as if the prefix were the root:
 * an absolute target ("/sys/firmware/devicetree/base", which is what the
 * kernel's /proc/device-tree points at) is re-rooted at the prefix instead of
 * escaping into the container's own filesystem; a relative one is joined;
 * ".." stops at the prefix. Components that do not exist are kept as they are
 * (the open that follows reports it). Returns the length, -FB_E2BIG, or
 * -FB_EINVAL after 40 symlinks (a loop). */
int hostfs_resolve(const struct hostfs *h, const char *rel, char *buf, size_t size);

/* open(2) of the hostfs_resolve'd path with O_CLOEXEC added. Returns an fd, or a negative
 * fb_err (-FB_ENOENT, -FB_E2BIG, -FB_EIO) with errno left as open(2) set it. */
int hostfs_open(const struct hostfs *h, const char *rel, int flags);

#endif
