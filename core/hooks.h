/* hooks: the executable half of NFD's local source (source.d). Upstream
 * disabled hooks in v0.14 and removed them in v0.17 as a security risk; we
 * keep them behind sources.local.hooksEnabled (off by default) for the
 * deployments that still ship hooks. */
#ifndef FB_HOOKS_H
#define FB_HOOKS_H

struct fb_log;
struct json;

#define HOOKS_TIMEOUT_MS 10000

/* Runs every executable regular file of dir (sorted by name, hidden files
 * skipped; a symlink only when it stays inside dir, see hostfs_open_beneath,
 * else skipped with a warning) directly, without a shell, one at a time, with an empty signal
 * mask and default dispositions, stdin from /dev/null. A hook gets
 * timeout_ms (then SIGKILL); its stdout, at most 64 KiB, is parsed as a
 * feature file (featfile_parse) and merged into labels and features, later
 * hooks overriding earlier ones; its stderr is logged. A hook that fails
 * (exit status, signal, timeout, too much output) is logged and skipped,
 * never fatal. Each hook runs in its own process group, killed as a whole
 * when it is done or its time is up; cancel_fd (-1 or the loop's) readable
 * stops the running hook at once. A missing dir is no hooks. Returns how many hooks ran
 * successfully, or -FB_ENOMEM. */
int hooks_run_dir(const char *dir, int timeout_ms, int cancel_fd, const struct fb_log *lg,
		  struct json *labels, struct json *features);

#endif
