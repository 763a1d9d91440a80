/* hooks: the executable half of NFD's local source (source.d). Upstream
 * deprecated hooks in v0.12, disabled them by default in v0.14
 * (sources.local.hooksEnabled) and removed them in v0.17 as a security risk;
 * we keep them behind hooksEnabled (off by default) for the deployments that
 * still ship hooks.
 *
 * As upstream (source/local/local.go, v0.14-v0.16): every non-hidden entry
 * of the directory, sorted by name, is run directly (no shell, no
 * arguments); its stdout is parsed as a feature file (featfile_parse: the
 * same lines, comments and directives count) and merged, a later hook
 * overriding an earlier one key by key; its stderr is logged line by line,
 * "hook NAME: stderr: LINE"; a hook that fails gives nothing and is logged,
 * never fatal. Deviations, all bounds upstream lacks: a hook gets
 * timeout_ms (then SIGKILL, upstream waits forever), 64 KiB of stdout
 * (FEATFILE_MAX_SIZE, more kills it and skips it), the first
 * HOOKS_STDERR_MAX bytes of stderr are logged; only executable regular
 * files are run (upstream tries the others and logs the exec error).
 *
 * Hooks run as children of the applet's loop: their pipes are loop fds and a
 * 10 ms timer watches their exit and deadline, so the loop (probes,
 * publishing) goes on while a hook runs. Nothing a hook starts outlives it:
 * the worker is a child subreaper (prctl PR_SET_CHILD_SUBREAPER, allowed
 * without privileges), so a descendant that left the hook's session
 * (setsid, double fork) is reparented to us when its parent dies; when the
 * hook ends, its process group is SIGKILLed and every child of ours that
 * started no earlier than the hook is SIGKILLed and reaped, again and again
 * until none is left (a killed daemon's own children come to us next).
 * Children are found in our own /proc, not the host's (hostfs): they are
 * our processes, numbered in our PID namespace. As a container's PID 1 we
 * also inherit other orphans; those that started before the hook are only
 * reaped when they exit, as init does. Where the prctl fails (qemu-user
 * does not implement it) hooks_new warns and only the hook's process group
 * and children are killed. */
#ifndef FB_HOOKS_H
#define FB_HOOKS_H

struct fb_log;
struct json;
struct loop;

#define HOOKS_TIMEOUT_MS 10000
#define HOOKS_OLDER_MAX 64 /* a PID 1's own children told apart from a hook's */
#define HOOKS_MAX_FILES 1024 /* files of source.d looked at, the first by name (as features.d) */
#define HOOKS_STDERR_MAX 4096 /* stderr bytes logged per hook run; the rest is counted */

struct hooks;

/* Called once per hooks_start, from a loop callback, when the last hook has
 * ended and nothing of it is left: labels and features (key -> value) are
 * the merged output, owned by the callee; ran is how many hooks succeeded. */
typedef void (*hooks_done_fn)(void *ctx, struct json *labels, struct json *features, int ran);

/* Makes the runner for loop l (borrowed, must outlive it) and makes the
 * process a child subreaper. Returns 0 or -FB_ENOMEM. */
int hooks_new(struct hooks **out, struct loop *l, int timeout_ms, const struct fb_log *lg);
/* Stops a run without calling done: SIGKILLs the hook and every descendant
 * and reaps them (blocking, at most about a second). Safe with NULL. */
void hooks_free(struct hooks *h);

/* Starts running dir's hooks one after another (executable regular files,
 * sorted by name, hidden ones skipped; a symlink only when it stays inside
 * dir, see hostfs_open_beneath, else skipped with a warning); done comes
 * later, from the loop (a missing or empty dir too). Returns 0, -FB_EAGAIN while a run is
 * in progress, -FB_ENOMEM, or -FB_E2BIG when the loop has no timer left. */
int hooks_start(struct hooks *h, const char *dir, hooks_done_fn done, void *ctx);
/* 1 while a run is in progress. */
int hooks_busy(const struct hooks *h);

/* For one-shot callers outside loop_run: runs dir's hooks to the end,
 * running the loop. Returns how many hooks succeeded with *labels and
 * *features new objects owned by the caller, or an error of hooks_start, or
 * -FB_ECANCELED after SIGTERM/SIGINT (the hooks killed), both NULL. */
int hooks_run(struct hooks *h, const char *dir, struct json **labels, struct json **features);

#endif
