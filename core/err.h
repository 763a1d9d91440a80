/* err: the error codes every core module returns, negated, on the same channel
 * as its result (libfdt style). fb_strerror() is the one table of their texts. */
#ifndef FB_ERR_H
#define FB_ERR_H

#include <stddef.h>

enum fb_err {
	FB_OK = 0,
	FB_EIO,        /* a read/write/open failed; errno-level detail is logged by the caller */
	FB_ENOENT,     /* a file, directory, node or property does not exist */
	FB_E2BIG,      /* a value does not fit its buffer or exceeds a size cap */
	FB_EINVAL,     /* a value is malformed (parse error, bad syntax) */
	FB_ERANGE,     /* a number is outside its allowed range */
	FB_ENOMEM,     /* allocation failed */
	FB_EBADDT,     /* a devicetree blob failed validation */
	FB_EDEPTH,     /* a tree is nested deeper than we accept */
	FB_EUSAGE,     /* a command-line usage error */
	FB_EAGAIN,     /* a non-blocking operation would block: wait and call again */
	FB_ETLS,       /* TLS handshake, certificate verification or record failure */
	FB_ETIMEDOUT,  /* a deadline passed */
	FB_ECLOSED,    /* the peer closed the connection */
	FB_EPROTO,     /* the peer broke the protocol (bad HTTP, bad watch frame) */
	FB_ECANCELED,  /* stopped by a signal (SIGTERM) or by the caller */
	FB_EOUTSIDE,   /* a path or symlink leads out of the directory it must stay in */
	FB_ERR_COUNT
};

/* Returns a static description of code (positive or negative); never NULL. */
const char *fb_strerror(int code);

/* What went wrong and where, for messages that name the file and the problem.
 * Modules fill it next to returning -code; the applet decides what to print. */
struct fb_errinfo {
	int code;          /* enum fb_err, positive */
	int sys;           /* errno of the failing call, 0 if none */
	char what[1024];   /* the file, node or object concerned */
	char detail[160];  /* extra reason, e.g. libfdt's error name */
};

/* Cannot fail: no error recorded. */
void fb_errinfo_init(struct fb_errinfo *ei);

/* Records an error (ei may be NULL) and returns -code, so callers can write
 * "return fb_errinfo_set(ei, FB_EIO, errno, path, NULL);". detail may be NULL. */
int fb_errinfo_set(struct fb_errinfo *ei, int code, int sys, const char *what,
		   const char *detail);

/* Formats "what: detail: strerror(sys)" (parts that are empty are left out)
 * into buf and returns buf. */
const char *fb_errinfo_str(const struct fb_errinfo *ei, char *buf, size_t size);

#endif
