/* The one version string; byte-stable builds, so no date or git hash here. */
#ifndef FB_VERSION_H
#define FB_VERSION_H
#define FB_VERSION "0.1.0"
#endif
