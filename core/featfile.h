/* featfile: NFD feature files (features.d). Writing is atomic the way NFD's
 * local source asks for: a dot-file in the same directory (NFD ignores dot
 * files), fsync, rename over the target, fsync the directory. */
#ifndef FB_FEATFILE_H
#define FB_FEATFILE_H

#include "err.h"

#include <stddef.h>

/* Writes data[0..len) to path, creating missing parent directories (0755).
 * The file gets mode 0644. A reader sees the old or the new contents, never a
 * mix; on failure the temporary file is removed and the old file is intact.
 * Returns 0, or -FB_EIO / -FB_E2BIG / -FB_EINVAL with ei naming the file and
 * the step that failed. */
int featfile_write(const char *path, const void *data, size_t len, struct fb_errinfo *ei);

#endif
