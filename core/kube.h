/* kube: the Kubernetes API client. Configuration in client-go order
 * (--kubeconfig, KUBECONFIG, in-cluster service account, ~/.kube/config),
 * bearer tokens re-read from their file every minute and after a 401, client
 * certificates, a token-bucket rate limit and one retry policy for every
 * request, paged lists, and watches decoded incrementally inside core/loop.
 * Tokens never reach a log line or an error message. */
#ifndef FB_KUBE_H
#define FB_KUBE_H

#include "buf.h"
#include "err.h"
#include "json.h"
#include "log.h"
#include "loop.h"

#include <stddef.h>

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Where the configuration comes from; NULL fields mean "not given". */
struct kube_opts {
	const char *kubeconfig; /* --kubeconfig */
	const char *env_kubeconfig; /* $KUBECONFIG (first path of a ':' list) */
	const char *env_host, *env_port; /* $KUBERNETES_SERVICE_HOST/_PORT */
	const char *home;       /* $HOME */
	const char *sa_dir;     /* service account dir, default KUBE_SA_DIR */
	double qps;             /* token bucket rate, default 5 */
	int burst;              /* bucket size, default 10 */
	int timeout_ms;         /* one request, default 30000 */
	int max_attempts;       /* per request, default 5 */
	long long backoff_base_ms, backoff_max_ms; /* default 800 ms .. 30 s */
	int page_size;          /* list page limit, default 500 */
};

/* The resolved configuration (kubeconfig or in-cluster). */
struct kube_config {
	char source[512];      /* "kubeconfig /path (context ctx)" or "in-cluster" */
	char scheme[8];        /* "https" or "http" */
	char host[256];        /* DNS name or IP literal, no brackets */
	int port;
	char server_name[256]; /* name the certificate must carry */
	char *ca_pem;          /* owned, NUL-terminated; NULL: system roots are not used -> error unless insecure */
	size_t ca_len;
	char *cert_pem, *key_pem; /* client certificate and key, owned */
	size_t cert_len, key_len;
	char *token;           /* inline token, owned; never logged */
	char token_file[512];  /* re-read every minute and after 401 */
	int insecure;          /* insecure-skip-tls-verify: true */
	char namespace_[254];  /* in-cluster namespace file, else "default" */
};

/* Fills opts with the defaults and the process environment. */
void kube_opts_init(struct kube_opts *o);

/* Resolves the configuration. Errors name the file and line:column or field:
 * -FB_ENOENT (no configuration found anywhere), -FB_EINVAL (malformed or
 * unsupported: "users[0].user.exec: exec plugins are not supported"),
 * -FB_EIO, -FB_ENOMEM. cfg is owned by the caller (kube_config_free). */
int kube_config_load(struct kube_config *cfg, const struct kube_opts *o, struct fb_errinfo *ei);
void kube_config_free(struct kube_config *cfg);
/* The kubeconfig part of kube_config_load on text[0..n) read from path
 * (relative file references resolve against it). On an error cfg may hold
 * partial data: kube_config_free it either way. For the fuzz target. */
int kube_config_parse_(struct kube_config *cfg, const char *text, size_t n, const char *path,
		       struct fb_errinfo *ei);



/* Exponential backoff with jitter, client-go style: base, 2x per failure,
 * capped, plus up to 25% random on top so a fleet does not retry in step. */
struct kube_backoff {
	long long base_ms, max_ms, cur_ms;
	unsigned rng;
};
void kube_backoff_init(struct kube_backoff *b, long long base_ms, long long max_ms, unsigned seed);
/* The next wait; grows the next one. */
long long kube_backoff_next(struct kube_backoff *b);
void kube_backoff_reset(struct kube_backoff *b);

/* Token bucket: qps tokens a second, at most burst stored. */
struct kube_bucket {
	double qps, tokens;
	int burst;
	long long last_ms;
};
void kube_bucket_init(struct kube_bucket *t, double qps, int burst, long long now_ms);
/* Takes a token; returns 0 or how many ms to wait before trying again. */
long long kube_bucket_take(struct kube_bucket *t, long long now_ms);

/* Watch stream framing: newline-delimited JSON events {"type","object"},
 * fed with de-chunked body bytes in any slices. */
struct kube_framer {
	struct buf line; /* a partial event; its max is the largest event accepted */
};
typedef int (*kube_event_fn)(void *ctx, const char *type, struct json *object);
void kube_framer_init(struct kube_framer *f, size_t max_event);
void kube_framer_free(struct kube_framer *f);
/* Calls fn for every complete event (object borrowed for the call). Returns
 * 0, fn's non-zero value, or -FB_E2BIG (an event over max), -FB_EPROTO (a
 * line that is not an event object: what + detail in ei), -FB_ENOMEM. */
int kube_framer_feed(struct kube_framer *f, const char *data, size_t len, kube_event_fn fn,
		     void *ctx, struct fb_errinfo *ei);

/* ---- the client -------------------------------------------------------- */

struct kube;

/* An API answer: the status and the decoded JSON body (owned, may be NULL
 * when the body was empty or not JSON); for errors the Status object's reason
 * and message. */
struct kube_result {
	int status;
	struct json *body;
	char reason[64];
	char message[512];
};
void kube_result_free(struct kube_result *r);

/* A client for cfg (copied: the caller may free cfg afterwards). log is
 * borrowed; cancel_fd (-1 or loop_cancel_fd()) aborts any wait or request.
 * Warns once when TLS verification is off. Errors: those of tls_config_new
 * (a bad CA or key, naming it), -FB_ENOMEM. */
int kube_new(struct kube **out, const struct kube_config *cfg, const struct kube_opts *o,
	     const struct fb_log *log, int cancel_fd, struct fb_errinfo *ei);
void kube_free(struct kube *k);
/* kube_config_load and kube_new in one step, the configuration freed
 * after: the client an applet works with, logging where it came from at
 * -v 1, and (ns not NULL) the namespace this process works in
 * (kube_own_namespace). Errors as those two. */
int kube_connect(struct kube **out, const struct kube_opts *o, const struct fb_log *log, int cancel_fd,
		 char *ns, size_t ns_size, struct fb_errinfo *ei);
const struct kube_config *kube_config_of(const struct kube *k);

/* One request under the retry policy: the token bucket; retries with
 * exponential backoff and jitter on connection errors, 429 and 5xx, waiting
 * at least Retry-After; a 401 re-reads the token file and tries again once;
 * at most opts.max_attempts attempts. A POST whose body reached the server is
 * not resent after a lost connection (it may have been applied). Returns 0
 * when the server answered (any status, res filled: the caller decides what a
 * 404 or 409 means), -FB_ECANCELED (SIGTERM), or the last transport error
 * (-FB_ETIMEDOUT, -FB_ECLOSED, -FB_EIO, -FB_ETLS...) with ei saying what. */
int kube_request(struct kube *k, const char *method, const char *path, const char *content_type,
		 const char *body, size_t body_len, struct kube_result *res, struct fb_errinfo *ei);

/* Paged list of a collection path (query allowed): follows "continue" with
 * limit=opts.page_size and restarts once from scratch when a continue token expired
 * (410). Returns 0 and *items (owned JSON array) and the list's
 * resourceVersion, or an error as kube_request; a non-2xx answer is -FB_EIO
 * with the Status message in ei. */
int kube_list(struct kube *k, const char *path, struct json **items, char *rv, size_t rv_size,
	      struct fb_errinfo *ei);

/* Called with each page's items (borrowed for the call); first is 1 for the
 * first page and again when the list restarted from scratch (then forget
 * what earlier pages gave). A negative return (-FB_*) stops the list. */
typedef int (*kube_page_fn)(void *ctx, const struct json *items, int first);
/* kube_list one page at a time, so a large collection is never whole in
 * memory. A page over the body cap (HTTP_BODY_MAX_DEFAULT: a few dozen
 * objects near the API's 1.5 MiB) is asked for again with half the limit,
 * down to one item, and the rest of the list goes on with that limit. rv gets the list's resourceVersion. Errors as kube_list, or the
 * callback's. */
int kube_list_pages(struct kube *k, const char *path, kube_page_fn fn, void *ctx, char *rv,
		    size_t rv_size, struct fb_errinfo *ei);

/* The namespace this process works in: its service account's namespace
 * file, else $KUBERNETES_NAMESPACE, else the kubeconfig context's (cfg may be
 * NULL), else "default". */
void kube_own_namespace(const struct kube_config *cfg, char *out, size_t size);

/* Why a watch ended. */
enum kube_watch_end {
	KUBE_WATCH_CLOSED,  /* the server ended the stream (timeoutSeconds): re-watch from kube_watch_rv */
	KUBE_WATCH_EXPIRED, /* 410: the resourceVersion is too old: list again, then watch */
	KUBE_WATCH_FAILED,  /* any other error (ei says what): back off, list again, watch */
};
struct kube_watch;
/* type is "ADDED", "MODIFIED" or "DELETED"; object borrowed for the call. */
typedef void (*kube_watch_event_fn)(void *ctx, const char *type, const struct json *object);
/* The watch's last call; the owner may kube_watch_free it from here. */
typedef void (*kube_watch_end_fn)(void *ctx, enum kube_watch_end why, const struct fb_errinfo *ei);

/* Starts watching path (a collection, query such as a fieldSelector allowed)
 * from resourceVersion rv, with bookmarks and a random 5-10 minute
 * timeoutSeconds, inside loop l. Blocks only until the response headers are
 * in. A non-200 answer is reported through end (410 as EXPIRED) from the loop
 * after this returned 0; a stream still open 30 s past its timeoutSeconds is
 * ended as FAILED. Events are handled for at most 20 ms at a time, the rest
 * after the loop has run (probes must not wait on a stream of 1 MB events).
 * The event callback must not free the watch (end may).
 * Errors: transport errors of the open, -FB_ENOMEM. */
int kube_watch_start(struct kube_watch **out, struct kube *k, struct loop *l, const char *path,
		     const char *rv, kube_watch_event_fn event, kube_watch_end_fn end, void *ctx,
		     struct fb_errinfo *ei);
/* The newest resourceVersion seen (events and bookmarks). Borrowed. */
const char *kube_watch_rv(const struct kube_watch *w);
/* loop_now_ms() of the last event or bookmark (or of the open). */
long long kube_watch_last_ms(const struct kube_watch *w);
/* Stops (if running) and frees; safe with NULL. */
void kube_watch_free(struct kube_watch *w);

/* A metav1.LabelSelector (sel, parsed; member names matched ignoring case,
 * as encoding/json does) as a labelSelector query value, percent-encoded,
 * into out: "" when it selects everything (NULL, null or {}). Checked as
 * apimachinery's LabelSelectorAsSelector does: keys must be label keys and
 * values label values; In and NotIn need values, Exists and DoesNotExist
 * take none; any other member or operator is an error, never skipped.
 * Returns the length, -FB_EINVAL (ei: what names the member, detail the
 * problem) or -FB_E2BIG (longer than size - 1). */
int kube_label_selector(const struct json *sel, char *out, size_t size, struct fb_errinfo *ei);

/* Escapes a label key for a JSON Pointer ("/" -> "~1", "~" -> "~0"). */
void kube_json_pointer_escape(const char *in, char *out, size_t size);

/* ---- JSON requests (core/kubejson.c) --------------------------------------- */

/* kube_request with body (NULL: none) printed as JSON. Returns
 * kube_request's result, or -FB_ENOMEM (ei set) when the body could not be
 * printed. res is cleared first and safe to kube_result_free either way. */
int kube_request_json(struct kube *k, const char *method, const char *path, const char *content_type,
		      const struct json *body, struct kube_result *res, struct fb_errinfo *ei);

/* kube_request_json for a request that must answer 2xx. Returns 0 with the
 * decoded reply in res, or -1 after logging "WHAT: transport error" or
 * "WHAT: HTTP STATUS MESSAGE" as a warning on lg (what NULL: "METHOD PATH"). */
int kube_call_json(struct kube *k, const struct fb_log *lg, const char *what, const char *method, const char *path,
		   const char *content_type, const struct json *body, struct kube_result *res);

#endif
