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

/* The prefix in upstream's pod layout (the host's /sys at /host-sys ...). */
#define HOSTFS_POD_PREFIX "/host-"

/* Cannot fail: prefix "/". */
void hostfs_init(struct hostfs *h);

/* Sets the prefix. NULL picks the default: "/host-" when "/host-sys" is a
 * directory (the upstream image's layout), else "/". Returns 0 or -FB_E2BIG. */
int hostfs_setup(struct hostfs *h, const char *prefix);

/* For a file the running kernel serves in procfs (rel "proc/config.gz"):
 * under the pod prefix the container's own /proc shows the same kernel and
 * upstream reads that one, so buf gets "/" + rel and 1 is returned; else 0
 * (use the prefix as for any file). -FB_E2BIG when it does not fit. */
int hostfs_kernel_proc(const struct hostfs *h, const char *rel, char *buf, size_t size);

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

/* Opens rel beneath the directory dirfd, for directories that other users
 * or containers can write (features.d, custom.d, source.d): a symlink there
 * must not make us read (and publish) a file of ours such as the service
 * account token. Each component is looked at with readlinkat and opened
 * with O_NOFOLLOW, relative to the directory found so far, whose fd we
 * hold: a symlink is followed only when its target is relative, resolved
 * from the link's own directory, and every step of it stays beneath dirfd
 * ("..", in rel or in a target, climbs back only as far as dirfd, by
 * closing a held fd, never by opening ".."). So a ConfigMap volume's
 * "NAME -> ..data/NAME", "..data -> ..2024_01_01_..." links work, and
 * "/var/run/secrets/...", "../x" or "sub -> .." climbing out do not. An
 * entry swapped for a symlink while we walk fails the O_NOFOLLOW open
 * instead of being followed. Mount points inside are crossed, as the
 * kernel's RESOLVE_BENEATH does.
 *
 * Not openat2(RESOLVE_BENEATH): it needs Linux 5.6, and container seccomp
 * profiles of the Docker 19/20 era answer EPERM (not ENOSYS) for syscalls
 * they do not know, so the fallback would be the path some nodes take and
 * the one tests rarely do; one walk everywhere is simpler to trust.
 *
 * flags are open(2)'s for the last component (O_NOFOLLOW and O_CLOEXEC are
 * added; pass O_NONBLOCK so a FIFO cannot hang a read, O_PATH to only look).
 * When path is not NULL, the resolved name relative to dirfd (no symlinks,
 * no "..", "" for dirfd itself) is written there. Returns an fd, or
 * -FB_EOUTSIDE (an absolute target or a climb above dirfd), -FB_ENOENT,
 * -FB_EINVAL (more than 40 symlinks: a loop), -FB_EDEPTH (deeper than 32
 * directories), -FB_E2BIG (a name past PATH_MAX or path's size), -FB_EIO
 * (errno set). */
int hostfs_open_beneath(int dirfd, const char *rel, int flags, char *path, size_t size);

/* Lists the visible names (not starting with '.') of the directory open as
 * fd (not closed; O_RDONLY, not O_PATH), sorted by strcmp, the first max of
 * them; *total is how many there were. At most 2 * max names are held while
 * listing, however big the directory. Returns 0 with *names a new array of
 * *n new strings (hostfs_names_free), or -FB_ENOMEM, -FB_EIO (errno set). */
int hostfs_list(int fd, size_t max, char ***names, size_t *n, size_t *total);
void hostfs_names_free(char **names, size_t n);

/* Opens this process's own /proc (O_RDONLY | O_DIRECTORY), never the host
 * prefix's: for our own children (core/hooks), whose pids the host's view
 * does not show. Returns an fd or -1 (errno set). */
int hostfs_open_own_proc(void);

#endif
