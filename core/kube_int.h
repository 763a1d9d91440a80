/* kube_int: what the files of core/kube (kube_config.c, kube_request.c,
 * kube_watch.c) share; no other module includes it. */
#ifndef FB_KUBE_INT_H
#define FB_KUBE_INT_H

#include "kube.h"

#include "http.h"
#include "tls.h"

#define TOKEN_MAX (64u << 10) /* the bearer token file */

struct kube {
	struct kube_config cfg;  /* owned copy */
	struct kube_opts opts;
	const struct fb_log *log;
	int cancel_fd;
	struct tls_config *tls;
	struct http_conn *conn;
	struct kube_bucket bucket;
	struct kube_backoff backoff;
	char *token;             /* current bearer token, owned, never logged */
	long long token_read_ms;
	char endpoint[300];      /* "https://host:port", for messages */
};

/* Re-reads the token file when due (or force). Returns 0 or an error (ei). */
int kube_token_refresh_(struct kube *k, int force, struct fb_errinfo *ei);
/* Sleeps ms, or returns -FB_ECANCELED as soon as the cancel fd is readable. */
int kube_wait_ms_(struct kube *k, long long ms);
/* Fills reason/message from a Status body. */
void kube_decode_status_(struct kube_result *res);
/* Header lines for one request; the Authorization line is built in auth[]. */
void kube_make_headers_(struct kube *k, const char *content_type, char *auth, size_t auth_size,
			char *ctype, size_t ctype_size, const char *hdr[6]);
/* Turns a non-2xx answer into an error that names the request and the
 * server's own words. */
int kube_status_error_(const char *method, const char *path, const struct kube_result *res,
		       struct fb_errinfo *ei);

#endif
