/* featfile: NFD feature files (features.d), both ways.
 *
 * Writing is atomic the way NFD's local source asks for: a dot-file in the
 * same directory (NFD ignores dot files), fsync, rename over the target, fsync
 * the directory.
 *
 * Reading mirrors upstream's local source (source/local/local.go, v0.19):
 * every non-hidden entry of the directory, sorted by name; entries that are
 * not regular files give nothing; a file over FEATFILE_MAX_SIZE bytes is
 * skipped with an error naming it. Per file, lines
 * are split on '\n' and trimmed of white space (Go's strings.TrimSpace, so
 * "\r", NBSP and the other Unicode spaces too); empty lines are skipped.
 * A line starting with '#' is a comment unless it starts with the exact
 * directive prefix "# +":
 *   # +expiry-time=<RFC 3339>  lines after it in this file are ignored once
 *                              that time is past, until the next expiry-time
 *                              directive; a bad time is logged and the
 *                              previous expiry kept (initially: never)
 *   # +no-label                the next key line goes to features only, and
 *                              removes the key from this file's labels
 *   # +no-feature              the next key line goes to labels only, and
 *                              removes the key from this file's features
 * Anything after "# +" up to an optional '=' must be one of those names
 * ("# +no-label=x" counts, "# + no-label" and "#+no-label" do not); an
 * unknown directive is logged and ignored. no-label/no-feature are spent by
 * the next key line that is not expired (an expired line leaves them armed,
 * as upstream). A key line is "key" (value "true") or "key=value", split at
 * the first '='; key and value are not trimmed further and the value may be
 * empty or hold more '='. A later file overrides an earlier one key by key.
 *
 * Deviations from upstream, all about input upstream mishandles: invalid
 * UTF-8 is replaced by U+FFFD when read (upstream does the same when it
 * marshals the NodeFeature); a key line holding a NUL byte is dropped with
 * an error; a key that is not a valid Kubernetes label key never enters the
 * label set (logged once per line, "ignoring label with invalid name", the
 * text upstream's worker logs when it drops it later); overrides between
 * files are logged at -v 2 instead of at every pass.
 *
 * Deviations for files other users write (features.d is shared with other
 * containers and tools on the node; upstream follows every symlink and
 * reads every file at once):
 * - a symlink is followed only while it stays inside the directory
 *   (hostfs_open_beneath: ConfigMap volumes' "..data" links work; a link to
 *   the service account token is skipped with a warning naming it);
 * - a key line whose key is no possible feature name (empty, longer than
 *   FEATFILE_KEY_MAX, or holding control characters) is dropped whole with
 *   an error; log lines show at most 80 bytes of a file's text, escaped;
 * - at most FEATFILE_MAX_FILES files are read (the first by name), with a
 *   warning giving the count;
 * - memory is bounded by the largest file, not the sum: each file is read,
 *   parsed and dropped before the next, keeping only its last word on each
 *   key, and the files together keep at most FEATFILE_MAX_KEPT bytes (a
 *   file that would pass it is skipped with an error). */
#ifndef FB_FEATFILE_H
#define FB_FEATFILE_H

#include "err.h"

#include <stddef.h>

struct fb_log;
struct json;

#define FEATFILE_MAX_SIZE 65536 /* upstream MaxFeatureFileSize: larger files are skipped */
/* The longest feature name: the longest label key (a 253-byte prefix, '/',
 * a 63-byte name). */
#define FEATFILE_KEY_MAX 317
/* Files read per pass. Deployments have one file per tool or ConfigMap key,
 * a handful; 1,024 is a hundred times that, and bounds a pass at 1,024 opens
 * and 64 MiB read, the name list at 2,048 names while listing. */
#define FEATFILE_MAX_FILES 1024
/* What the files together may keep after parsing (key and value bytes plus
 * about 40 bytes per entry): the API server refuses a NodeFeature over
 * 1.5 MiB, so more could never be published. */
#define FEATFILE_MAX_KEPT (2 * 1024 * 1024)

/* Writes data[0..len) to path, creating missing parent directories (0755).
 * The file gets mode 0644. A reader sees the old or the new contents, never a
 * mix; on failure the temporary file is removed and the old file is intact.
 * Returns 0, or -FB_EIO / -FB_E2BIG / -FB_EINVAL with ei naming the file and
 * the step that failed. */
int featfile_write(const char *path, const void *data, size_t len, struct fb_errinfo *ei);

/* A point in time: seconds since the epoch (UTC) and nanoseconds 0..999999999. */
struct featfile_time {
	long long sec;
	long nsec;
};

/* Parses s[0..len) the way Go's time.Parse(time.RFC3339, s) does:
 * "YYYY-MM-DDTHH:MM:SS" (year 0000-9999, day checked against the month,
 * second 00-59, upper-case T), an optional fraction ('.' or ',' then digits;
 * digits past the ninth are ignored), then "Z" or "+HH:MM"/"-HH:MM" (hour
 * 00-23). Returns 0 with *t in UTC, or -FB_EINVAL. */
int featfile_parse_rfc3339(const char *s, size_t len, struct featfile_time *t);

/* Parses one feature file's contents buf[0..len) (need not be NUL-terminated)
 * as of now (NULL: the current time). name is used in log lines only.
 * Returns 0 with two new objects owned by the caller, *labels (the
 * "local.label" elements: key -> value) and *features ("local.feature"),
 * or -FB_ENOMEM with both NULL. Problems in the text are logged on lg,
 * never returned. */
int featfile_parse(const char *buf, size_t len, const char *name, const struct featfile_time *now,
		   const struct fb_log *lg, struct json **labels, struct json **features);

/* Reads every feature file of dir (a plain path: features.d is not under
 * the host prefix, as upstream; the admin names it, so it may itself be a
 * symlink; what is inside is opened with hostfs_open_beneath) as of now
 * (NULL: the current time) and merges them, later names overriding earlier
 * ones. Returns 0 with two new objects
 * as featfile_parse, or a negative code with both NULL: -FB_ENOENT (no such
 * directory: upstream treats that as "no local features"), -FB_EIO (cannot
 * list it; errno in ei), -FB_ENOMEM. A file that cannot be read or is too
 * big is logged with its name and skipped, never returned. */
int featfile_read_dir(const char *dir, const struct featfile_time *now, const struct fb_log *lg,
		      struct json **labels, struct json **features, struct fb_errinfo *ei);

/* Watching features.d (upstream v0.19 re-reads it on fsnotify events).
 *
 * featfile_watch_open returns a non-blocking inotify fd (close it with
 * close()) watching dir for files created, written and closed, deleted,
 * renamed in or out, and attribute changes, or -FB_ENOENT when dir does not
 * exist (yet), -FB_EINVAL when it is not a directory, -FB_EIO (errno in ei:
 * no inotify, watch limit). A missing directory is not watched through its
 * parent: the caller tries again later (the worker on each discovery pass),
 * which is simpler than tracking a parent and costs at most one sleep
 * interval of delay; upstream gives up for good. Read the directory again
 * after a successful open: changes before it are not reported.
 *
 * featfile_watch_drain reads every pending event without blocking and
 * returns a combination of the flags below (0: nothing that matters), or
 * -FB_EIO. A hidden name matters only when something is renamed onto it
 * (a ConfigMap volume swaps its "..data" symlink that way, changing what the
 * visible names point to); creating, writing or deleting a hidden file (our
 * writer's ".NAME.tmp") does not, but the rename of that temporary file over
 * NAME does, through the visible name. A lost-events overflow counts as a
 * change. */
enum {
	FEATFILE_WATCH_CHANGED = 1, /* read the directory again */
	FEATFILE_WATCH_GONE = 2,    /* the directory itself was removed, moved or
				     * unmounted: close the fd and open again later */
};
int featfile_watch_open(const char *dir, struct fb_errinfo *ei);
int featfile_watch_drain(int fd);

#endif
