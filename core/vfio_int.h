/* vfio_int.h: what core/vfio.c, vfio_busy.c and vfio_alias.c share. */
#ifndef FB_VFIO_INT_H
#define FB_VFIO_INT_H

#include "vfio.h"

/* Finds the device nodes of every function of s (fills node, nnodes,
 * nv_lock), then the processes holding any of them open, by looking at
 * every <host>/proc/PID/fd/N: a link whose target is under /dev/ is
 * stat(2)ed through (the kernel's link reaches the open file itself, in
 * whatever mount namespace it was opened) and matched by st_rdev against
 * the nodes' major:minor; a link naming a fake node's path matches too (a
 * test tree cannot mknod). Only /dev/ targets are stat'ed: a file on a
 * dead network mount could block stat. Processes that vanish are skipped;
 * ones we may not look at (EACCES), and those past VFIO_SCAN_PIDS or
 * VFIO_SCAN_FDS, make the scan PARTIAL, named in scan_why. Never fails. */
void vfio_busy_scan_(const struct hostfs *h, struct vfio_snap *s);

#endif
