/* tls: the one door to mbedTLS 3.6 (see tls.h for the contract). What the
 * rest of the project may rely on, and why it is done this way:
 *
 *   - Server names. A DNS name goes to mbedtls_ssl_set_hostname(), which both
 *     sends it as SNI and checks it against the certificate. mbedTLS 3.6 would
 *     also send an IP literal as SNI, which RFC 6066 section 3 forbids (and
 *     which makes an SNI-routing server pick a certificate for a "host" that
 *     is not one), so for an IP we call mbedtls_ssl_set_hostname(NULL) (no
 *     SNI, no name check by mbedTLS) and check the IP SANs ourselves in a
 *     per-session verify callback. Like Go's crypto/tls, an IP matches only
 *     an IP SAN, never the CN.
 *   - Non-blocking. The transport callbacks note when the socket would block
 *     and in which direction; -FB_EAGAIN is returned only then. mbedTLS also
 *     returns WANT_READ without touching the socket (after a warning alert, a
 *     TLS 1.3 post-handshake message it ignored): those calls are repeated at
 *     once, or a caller polling for POLLIN could sleep on a socket that has
 *     nothing more to say.
 *   - A record handed to mbedtls_ssl_write() is encrypted before it is sent,
 *     so after -FB_EAGAIN from tls_write() its bytes are queued: the next call
 *     only flushes them and returns their count (mbedTLS's "call again with
 *     the same arguments", enforced here rather than trusted to the caller).
 *   - tls_read() returns 0 both for close_notify and for a TCP EOF without
 *     one. Telling them apart would only matter for truncation, which the HTTP
 *     framing (Content-Length, chunked) detects anyway.
 *   - TLS 1.3 NewSessionTickets are dropped by mbedTLS in our configuration
 *     (no MBEDTLS_SSL_SESSION_TICKETS); MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET
 *     is still retried should the configuration change.
 *   - Signature algorithms: RSA PKCS#1 v1.5 is offered before RSA-PSS, or a
 *     TLS 1.2-only server with an RSA key fails the handshake (sig_algs).
 *   - Error strings are compiled out of our mbedTLS (MBEDTLS_ERROR_STRERROR_DUMMY),
 *     so the words below are ours and carry the mbedTLS code in hex;
 *     certificate verification failures use mbedTLS's flag texts instead.
 */
#include "tls.h"

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/net_sockets.h> /* MBEDTLS_ERR_NET_* only: MBEDTLS_NET_C is off */
#include <mbedtls/pem.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#if defined(MBEDTLS_PSA_CRYPTO_C)
#include <psa/crypto.h>
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct tls_config {
	mbedtls_ssl_config conf;  /* points into the members below */
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_x509_crt ca;
	mbedtls_x509_crt cert;
	mbedtls_pk_context key;
	int insecure;
};

struct tls_conn {
	mbedtls_ssl_context ssl;
	int fd;                /* -1 over the seam */
	void *ctx;             /* the seam's */
	tls_send_fn send;
	tls_recv_fn recv;
	int err;               /* negative fb_err once the session failed; it stays failed */
	int err_sys;           /* and its errno */
	int io_err;            /* enum fb_err of the last transport failure */
	int io_sys;            /* and its errno, 0 over the seam */
	size_t wr_queued;      /* bytes of the last tls_write() encrypted but not yet sent */
	short want;            /* POLLIN / POLLOUT: where the transport last blocked */
	unsigned char blocked; /* the transport blocked during the current call */
	unsigned char closing; /* tls_conn_free(): sends must not block */
	unsigned char eof;     /* the peer closed: reads return 0 */
	unsigned char ip_len;  /* 4 or 16 when the server name is an IP literal */
	unsigned char ip[16];
	char name[256];        /* the server name, for messages and the IP check */
	char why[sizeof(((struct fb_errinfo *)0)->detail)]; /* err's detail, repeated on later calls */
};

/* mbedTLS calls are repeated at once this often at most without the
 * transport blocking; more means mbedTLS makes no progress (a bug). */
#define TLS_SPIN_MAX 1000

/* --- words for mbedTLS codes ----------------------------------------- */

struct tls_words {
	int code;
	const char *words;
};

/* Looks code up in a table ending with {0, NULL}; NULL if absent. */
static const char *words_for(const struct tls_words *t, int code)
{
	for (; t->words; t++)
		if (t->code == code)
			return t->words;
	return NULL;
}

/* mbedTLS composes a high-level and a low-level code by adding them: this is
 * the high-level (module) part, e.g. X509_INVALID_FORMAT of an ASN.1 error. */
static int high_part(int ret)
{
	return -(-ret & 0x7f80);
}

static const struct tls_words parse_words[] = {
	{ MBEDTLS_ERR_PEM_INVALID_DATA, "bad PEM data (base64)" },
	{ MBEDTLS_ERR_PEM_PASSWORD_REQUIRED, "encrypted keys are not supported (decrypt it first)" },
	{ MBEDTLS_ERR_PEM_UNKNOWN_ENC_ALG, "encrypted keys are not supported (decrypt it first)" },
	{ MBEDTLS_ERR_PK_PASSWORD_REQUIRED, "encrypted keys are not supported (decrypt it first)" },
	{ MBEDTLS_ERR_PK_KEY_INVALID_FORMAT, "not a PEM or DER private key (PKCS#8, PKCS#1 or SEC1)" },
	{ MBEDTLS_ERR_PK_KEY_INVALID_VERSION, "unsupported private key version" },
	{ MBEDTLS_ERR_PK_UNKNOWN_PK_ALG, "unsupported key type (RSA and EC keys are supported)" },
	{ MBEDTLS_ERR_PK_UNKNOWN_NAMED_CURVE, "unsupported curve (P-256 and P-384 are supported)" },
	{ MBEDTLS_ERR_PK_FEATURE_UNAVAILABLE, "unsupported key type or curve" },
	{ MBEDTLS_ERR_X509_UNKNOWN_SIG_ALG, "unsupported signature algorithm" },
	{ MBEDTLS_ERR_X509_FEATURE_UNAVAILABLE, "uses a feature this build does not support" },
	{ MBEDTLS_ERR_X509_INVALID_DATE, "bad validity dates" },
	{ MBEDTLS_ERR_X509_INVALID_EXTENSIONS, "bad certificate extensions" },
	{ 0, NULL },
};

/* Fills ei for a PEM/DER input (what: "CA bundle", ...) that did not parse;
 * returns -FB_EINVAL or -FB_ENOMEM. */
static int parse_fail(struct fb_errinfo *ei, const char *what, int ret, const char *dflt)
{
	char d[sizeof(ei->detail)];
	const char *w = words_for(parse_words, ret);

	if (high_part(ret) == MBEDTLS_ERR_X509_ALLOC_FAILED || ret == MBEDTLS_ERR_PK_ALLOC_FAILED ||
	    ret == MBEDTLS_ERR_PEM_ALLOC_FAILED)
		return fb_errinfo_set(ei, FB_ENOMEM, 0, what, NULL);
	if (!w)
		w = words_for(parse_words, high_part(ret));
	snprintf(d, sizeof(d), "%s (-0x%04x)", w ? w : dflt, (unsigned)-ret);
	return fb_errinfo_set(ei, FB_EINVAL, 0, what, d);
}

/* Alerts a server sends when it turns us down, in words that point at the fix. */
static const struct tls_words alert_words[] = {
	{ MBEDTLS_SSL_ALERT_MSG_HANDSHAKE_FAILURE, "handshake failure: no common parameters, or a client certificate is required" },
	{ MBEDTLS_SSL_ALERT_MSG_BAD_CERT, "bad certificate: our client certificate was rejected" },
	{ MBEDTLS_SSL_ALERT_MSG_UNSUPPORTED_CERT, "unsupported certificate" },
	{ MBEDTLS_SSL_ALERT_MSG_CERT_REVOKED, "certificate revoked" },
	{ MBEDTLS_SSL_ALERT_MSG_CERT_EXPIRED, "certificate expired: our client certificate" },
	{ MBEDTLS_SSL_ALERT_MSG_CERT_UNKNOWN, "certificate unknown" },
	{ MBEDTLS_SSL_ALERT_MSG_ILLEGAL_PARAMETER, "illegal parameter" },
	{ MBEDTLS_SSL_ALERT_MSG_UNKNOWN_CA, "unknown CA: the server does not trust our client certificate" },
	{ MBEDTLS_SSL_ALERT_MSG_ACCESS_DENIED, "access denied" },
	{ MBEDTLS_SSL_ALERT_MSG_DECODE_ERROR, "decode error" },
	{ MBEDTLS_SSL_ALERT_MSG_DECRYPT_ERROR, "decrypt error: a signature did not verify" },
	{ MBEDTLS_SSL_ALERT_MSG_PROTOCOL_VERSION, "protocol version: the server wants neither TLS 1.2 nor 1.3" },
	{ MBEDTLS_SSL_ALERT_MSG_INSUFFICIENT_SECURITY, "insufficient security" },
	{ MBEDTLS_SSL_ALERT_MSG_INTERNAL_ERROR, "internal error" },
	{ MBEDTLS_SSL_ALERT_MSG_MISSING_EXTENSION, "missing extension" },
	{ MBEDTLS_SSL_ALERT_MSG_UNSUPPORTED_EXT, "unsupported extension" },
	{ MBEDTLS_SSL_ALERT_MSG_UNRECOGNIZED_NAME, "unrecognized name: the server does not know the SNI name" },
	{ MBEDTLS_SSL_ALERT_MSG_CERT_REQUIRED, "certificate required: the server wants a client certificate" },
	{ 0, NULL },
};

static const struct tls_words ssl_words[] = {
	{ MBEDTLS_ERR_SSL_HANDSHAKE_FAILURE, "handshake failure: no cipher suite, group or signature algorithm in common with the server" },
	{ MBEDTLS_ERR_SSL_BAD_PROTOCOL_VERSION, "the server speaks neither TLS 1.2 nor TLS 1.3" },
	{ MBEDTLS_ERR_SSL_BAD_CERTIFICATE, "the server's certificate is unusable" },
	{ MBEDTLS_ERR_SSL_INVALID_RECORD, "the server sent something that is not TLS (plain HTTP?)" },
	{ MBEDTLS_ERR_SSL_INVALID_MAC, "a record failed its integrity check" },
	{ MBEDTLS_ERR_SSL_DECODE_ERROR, "the server sent a malformed message" },
	{ MBEDTLS_ERR_SSL_UNEXPECTED_MESSAGE, "the server sent an unexpected message" },
	{ MBEDTLS_ERR_SSL_UNEXPECTED_RECORD, "the server sent an unexpected record" },
	{ MBEDTLS_ERR_SSL_ILLEGAL_PARAMETER, "the server sent an illegal parameter" },
	{ MBEDTLS_ERR_SSL_UNSUPPORTED_EXTENSION, "the server sent an unsupported extension" },
	{ MBEDTLS_ERR_SSL_UNRECOGNIZED_NAME, "the server does not know the name" },
	{ MBEDTLS_ERR_SSL_TIMEOUT, "timed out" },
	{ MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY, "the server closed the TLS session" },
	{ MBEDTLS_ERR_SSL_CONN_EOF, "the server closed the connection during the handshake" },
	{ MBEDTLS_ERR_SSL_CERTIFICATE_VERIFICATION_WITHOUT_HOSTNAME, "no server name to verify the certificate against" },
	{ MBEDTLS_ERR_SSL_PK_TYPE_MISMATCH, "the certificate's key does not fit the cipher suite" },
	{ MBEDTLS_ERR_ECP_VERIFY_FAILED, "the server's handshake signature does not verify" },
	{ MBEDTLS_ERR_RSA_VERIFY_FAILED, "the server's handshake signature does not verify" },
	{ MBEDTLS_ERR_NET_SEND_FAILED, "sending failed" },
	{ MBEDTLS_ERR_NET_RECV_FAILED, "receiving failed" },
	{ 0, NULL },
};

/* "certificate verification failed: A; B", the most useful reasons first
 * (the detail buffer is short). */
static void verify_words(uint32_t flags, char *out, size_t size)
{
	static const uint32_t order[] = {
		MBEDTLS_X509_BADCERT_NOT_TRUSTED, MBEDTLS_X509_BADCERT_EXPIRED,
		MBEDTLS_X509_BADCERT_FUTURE, MBEDTLS_X509_BADCERT_CN_MISMATCH,
		~(uint32_t)0, /* the rest */
	};
	char all[1024];
	const char *r;
	char *w;
	size_t i, n = 0;
	int len;

	all[0] = '\0';
	for (i = 0; i < sizeof(order) / sizeof(order[0]) && flags; i++) {
		uint32_t f = order[i] & flags;

		if (!f)
			continue;
		flags &= ~f;
		/* "; reason\n" for each reason */
		len = mbedtls_x509_crt_verify_info(all + n, sizeof(all) - n, "; ", f);
		if (len > 0)
			n += (size_t)len;
	}
	/* into out without the newlines and the first "; ", cut to fit */
	len = snprintf(out, size, "certificate verification failed: ");
	w = out + (len > 0 && (size_t)len < size ? (size_t)len : size - 1);
	for (r = all[0] ? all + 2 : all; *r && w + 1 < out + size; r++)
		if (*r != '\n')
			*w++ = *r;
	*w = '\0';
}

/* Records why the session failed (it stays failed: mbedTLS contexts are not
 * usable after an error) and returns the negative fb_err. */
static int conn_fail(struct tls_conn *c, int ret, struct fb_errinfo *ei)
{
	char d[sizeof(c->why)];
	const char *w;
	int code = FB_ETLS, sys = 0;
	uint32_t flags;

	if (ret == MBEDTLS_ERR_NET_SEND_FAILED || ret == MBEDTLS_ERR_NET_RECV_FAILED) {
		code = c->io_err;
		sys = c->io_sys;
		w = words_for(ssl_words, ret);
		if (sys)
			snprintf(d, sizeof(d), "%s", w);
		else /* over the seam: say what the callback returned */
			snprintf(d, sizeof(d), "%s: %s", w, fb_strerror(code));
	} else if (ret == MBEDTLS_ERR_SSL_ALLOC_FAILED || high_part(ret) == MBEDTLS_ERR_X509_ALLOC_FAILED ||
		   ret == MBEDTLS_ERR_PK_ALLOC_FAILED) {
		code = FB_ENOMEM;
		snprintf(d, sizeof(d), "out of memory (-0x%04x)", (unsigned)-ret);
	} else if ((ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED || ret == MBEDTLS_ERR_SSL_BAD_CERTIFICATE) &&
		   (flags = mbedtls_ssl_get_verify_result(&c->ssl)) != 0 && flags != (uint32_t)-1) {
		verify_words(flags, d, sizeof(d));
	} else if (ret == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE) {
		/* mbedTLS 3.6 has no getter for the alert received; the record it
		 * came in is still in the input buffer (type, then level and
		 * description). */
		int a = c->ssl.MBEDTLS_PRIVATE(in_msgtype) == MBEDTLS_SSL_MSG_ALERT && c->ssl.MBEDTLS_PRIVATE(in_msg)
			? c->ssl.MBEDTLS_PRIVATE(in_msg)[1] : -1;

		w = a >= 0 ? words_for(alert_words, a) : NULL;
		if (a >= 0)
			snprintf(d, sizeof(d), "the server sent a fatal alert: %s (alert %d, -0x%04x)",
				 w ? w : "unlisted", a, (unsigned)-ret);
		else
			snprintf(d, sizeof(d), "the server sent a fatal alert (-0x%04x)", (unsigned)-ret);
	} else {
		if (ret == MBEDTLS_ERR_SSL_CONN_EOF || ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
			code = FB_ECLOSED;
		w = words_for(ssl_words, ret);
		if (!w && high_part(ret) <= -0x2000 && high_part(ret) > -0x3000)
			w = "the server's certificate does not parse";
		snprintf(d, sizeof(d), "%s (-0x%04x)", w ? w : "TLS failure", (unsigned)-ret);
	}
	c->err = -code;
	c->err_sys = sys;
	memcpy(c->why, d, sizeof(c->why));
	return fb_errinfo_set(ei, code, sys, c->name, d);
}

/* The error of a session that already failed, again. */
static int conn_failed(const struct tls_conn *c, struct fb_errinfo *ei)
{
	return fb_errinfo_set(ei, -c->err, c->err_sys, c->name, c->why);
}

/* After ret from an mbedTLS call: 1 if the call should be repeated at once
 * (see the header comment), 0 if ret is for the caller. */
static int again(const struct tls_conn *c, int ret, int *spins)
{
	if (ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
		return ++*spins < TLS_SPIN_MAX;
	if ((ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) && !c->blocked)
		return ++*spins < TLS_SPIN_MAX;
	return 0;
}

/* Turns what mbedTLS returned after the retries into the caller's answer. */
static int conn_result(struct tls_conn *c, int ret, struct fb_errinfo *ei)
{
	if ((ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) && c->blocked)
		return fb_errinfo_set(ei, FB_EAGAIN, 0, c->name, NULL);
	if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE)
		ret = MBEDTLS_ERR_SSL_INTERNAL_ERROR; /* no progress without blocking */
	return conn_fail(c, ret, ei);
}

/* --- transport ------------------------------------------------------- */

static int io_block(struct tls_conn *c, short want, int ret)
{
	c->want = want;
	c->blocked = 1;
	return ret;
}

static int io_fail(struct tls_conn *c, int code, int sys, int ret)
{
	/* a seam callback may return something that is no fb_err */
	c->io_err = code > 0 && code < FB_ERR_COUNT && code != FB_EAGAIN ? code : FB_EIO;
	c->io_sys = sys;
	return ret;
}

/* A reset or a broken pipe is the peer closing, not our I/O failing. */
static int errno_code(int e)
{
	return e == ECONNRESET || e == EPIPE || e == ENOTCONN ? FB_ECLOSED : FB_EIO;
}

static int bio_send(void *p, const unsigned char *buf, size_t len)
{
	struct tls_conn *c = p;
	ssize_t n;

	if (c->send) {
		n = c->send(c->ctx, buf, len);
		if (n == -FB_EAGAIN)
			return io_block(c, POLLOUT, MBEDTLS_ERR_SSL_WANT_WRITE);
		/* 0 would read as "flushed" to mbedTLS with bytes still queued */
		if (n <= 0 || (size_t)n > len)
			return io_fail(c, n < 0 ? (int)-n : FB_EIO, 0, MBEDTLS_ERR_NET_SEND_FAILED);
		return (int)n;
	}
	do
		n = send(c->fd, buf, len, MSG_NOSIGNAL | (c->closing ? MSG_DONTWAIT : 0));
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return (int)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return io_block(c, POLLOUT, MBEDTLS_ERR_SSL_WANT_WRITE);
	return io_fail(c, errno_code(errno), errno, MBEDTLS_ERR_NET_SEND_FAILED);
}

static int bio_recv(void *p, unsigned char *buf, size_t len)
{
	struct tls_conn *c = p;
	ssize_t n;

	if (c->recv) {
		n = c->recv(c->ctx, buf, len);
		if (n == -FB_EAGAIN)
			return io_block(c, POLLIN, MBEDTLS_ERR_SSL_WANT_READ);
		if (n < 0 || (size_t)n > len)
			return io_fail(c, n < 0 ? (int)-n : FB_EIO, 0, MBEDTLS_ERR_NET_RECV_FAILED);
		return (int)n;
	}
	do
		n = recv(c->fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return (int)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return io_block(c, POLLIN, MBEDTLS_ERR_SSL_WANT_READ);
	return io_fail(c, errno_code(errno), errno, MBEDTLS_ERR_NET_RECV_FAILED);
}

/* Server names that are IP literals are checked here, against IP SANs only
 * (mbedTLS was given no name; see the header comment). */
static int verify_ip(void *p, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
	const struct tls_conn *c = p;
	const mbedtls_x509_sequence *san;

	if (depth != 0)
		return 0;
	/* without the extension the list is one zeroed entry, which never matches */
	for (san = &crt->subject_alt_names; san; san = san->next)
		if ((san->buf.tag & MBEDTLS_ASN1_TAG_VALUE_MASK) == MBEDTLS_X509_SAN_IP_ADDRESS &&
		    san->buf.len == c->ip_len && memcmp(san->buf.p, c->ip, c->ip_len) == 0)
			return 0;
	*flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
	return 0;
}

/* --- configuration --------------------------------------------------- */

/* A NUL-terminated copy of a PEM or DER input, with the length mbedTLS
 * expects: PEM counts the NUL, DER does not. NULL when out of memory. */
static unsigned char *pem_dup(const char *buf, size_t len, size_t *outlen)
{
	unsigned char *p;

	while (len && buf[len - 1] == '\0') /* callers may have counted it already */
		len--;
	p = malloc(len + 1);
	if (!p)
		return NULL;
	memcpy(p, buf, len);
	p[len] = '\0';
	*outlen = memmem(p, len, "-----BEGIN", 10) ? len + 1 : len;
	return p;
}

/* Parses certificates into chain. all: every block must parse (a client
 * chain); otherwise blocks that do not are skipped as long as one does (a CA
 * bundle, like Go's AppendCertsFromPEM). */
static int parse_certs(mbedtls_x509_crt *chain, const char *pem, size_t len, int all,
		       const char *what, struct fb_errinfo *ei)
{
	size_t n;
	unsigned char *p = pem_dup(pem, len, &n);
	int ret;

	if (!p)
		return fb_errinfo_set(ei, FB_ENOMEM, 0, what, NULL);
	ret = mbedtls_x509_crt_parse(chain, p, n);
	free(p);
	if (ret < 0)
		return parse_fail(ei, what, ret, "no certificate in it parses (PEM or DER expected)");
	if (ret > 0 && all) {
		char d[64];

		snprintf(d, sizeof(d), "%d certificate(s) in it do not parse", ret);
		return fb_errinfo_set(ei, FB_EINVAL, 0, what, d);
	}
	return 0;
}

static int parse_key(struct tls_config *cfg, const char *pem, size_t len, struct fb_errinfo *ei)
{
	size_t n;
	unsigned char *p = pem_dup(pem, len, &n);
	int ret;

	if (!p)
		return fb_errinfo_set(ei, FB_ENOMEM, 0, "client key", NULL);
	ret = mbedtls_pk_parse_key(&cfg->key, p, n, NULL, 0, mbedtls_ctr_drbg_random, &cfg->drbg);
	mbedtls_platform_zeroize(p, len);
	free(p);
	if (ret != 0)
		return parse_fail(ei, "client key", ret, "not a PEM or DER private key");
	return 0;
}

/* mbedTLS's default list, with RSA PKCS#1 v1.5 ahead of RSA-PSS for each
 * hash. mbedTLS 3.6.6 offers rsa_pss_rsae_* in its ClientHello but rejects
 * them in a TLS 1.2 ServerKeyExchange (illegal_parameter; Mbed-TLS/mbedtls
 * #10668, fixed for 3.6 by #10674). Servers choosing in the client's order
 * (OpenSSL, Go) then sign TLS 1.2 with PKCS#1 v1.5, which TLS 1.3 forbids,
 * so TLS 1.3 still gets PSS. */
static const uint16_t sig_algs[] = {
	MBEDTLS_TLS1_3_SIG_ECDSA_SECP256R1_SHA256,
	MBEDTLS_TLS1_3_SIG_ECDSA_SECP384R1_SHA384,
	MBEDTLS_TLS1_3_SIG_RSA_PKCS1_SHA256,
	MBEDTLS_TLS1_3_SIG_RSA_PSS_RSAE_SHA256,
	MBEDTLS_TLS1_3_SIG_RSA_PKCS1_SHA384,
	MBEDTLS_TLS1_3_SIG_RSA_PSS_RSAE_SHA384,
	MBEDTLS_TLS1_3_SIG_RSA_PKCS1_SHA512,
	MBEDTLS_TLS1_3_SIG_RSA_PSS_RSAE_SHA512,
	MBEDTLS_TLS1_3_SIG_NONE,
};

int tls_config_new(struct tls_config **out, const struct tls_opts *o, struct fb_errinfo *ei)
{
	static const char pers[] = "featurebox tls";
	struct tls_config *cfg;
	char d[64];
	int rc = 0, ret;

	*out = NULL;
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return fb_errinfo_set(ei, FB_ENOMEM, 0, "TLS configuration", NULL);
	mbedtls_ssl_config_init(&cfg->conf);
	mbedtls_entropy_init(&cfg->entropy);
	mbedtls_ctr_drbg_init(&cfg->drbg);
	mbedtls_x509_crt_init(&cfg->ca);
	mbedtls_x509_crt_init(&cfg->cert);
	mbedtls_pk_init(&cfg->key);
	cfg->insecure = o->insecure;

#if defined(MBEDTLS_PSA_CRYPTO_C)
	/* TLS 1.3 runs on PSA, whose state is global by mbedTLS's design; a
	 * second call is a no-op. Never freed: other configs may be using it. */
	if (psa_crypto_init() != PSA_SUCCESS) {
		rc = fb_errinfo_set(ei, FB_ETLS, 0, "TLS configuration", "PSA crypto initialisation failed");
		goto out;
	}
#endif
	ret = mbedtls_ctr_drbg_seed(&cfg->drbg, mbedtls_entropy_func, &cfg->entropy,
				    (const unsigned char *)pers, sizeof(pers) - 1);
	if (ret != 0) {
		snprintf(d, sizeof(d), "seeding the RNG failed (-0x%04x)", (unsigned)-ret);
		rc = fb_errinfo_set(ei, FB_ETLS, 0, "TLS configuration", d);
		goto out;
	}
	ret = mbedtls_ssl_config_defaults(&cfg->conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
					  MBEDTLS_SSL_PRESET_DEFAULT);
	if (ret != 0) {
		rc = fb_errinfo_set(ei, ret == MBEDTLS_ERR_SSL_ALLOC_FAILED ? FB_ENOMEM : FB_ETLS, 0,
				    "TLS configuration", NULL);
		goto out;
	}
	mbedtls_ssl_conf_min_tls_version(&cfg->conf, MBEDTLS_SSL_VERSION_TLS1_2);
#if defined(MBEDTLS_SSL_PROTO_TLS1_3)
	mbedtls_ssl_conf_max_tls_version(&cfg->conf, MBEDTLS_SSL_VERSION_TLS1_3);
#else
	mbedtls_ssl_conf_max_tls_version(&cfg->conf, MBEDTLS_SSL_VERSION_TLS1_2);
#endif
	mbedtls_ssl_conf_rng(&cfg->conf, mbedtls_ctr_drbg_random, &cfg->drbg);
	mbedtls_ssl_conf_sig_algs(&cfg->conf, sig_algs);
	mbedtls_ssl_conf_authmode(&cfg->conf, o->insecure ? MBEDTLS_SSL_VERIFY_NONE : MBEDTLS_SSL_VERIFY_REQUIRED);

	if (o->ca_pem) {
		rc = parse_certs(&cfg->ca, o->ca_pem, o->ca_len, 0, "CA bundle", ei);
		if (rc < 0)
			goto out;
		mbedtls_ssl_conf_ca_chain(&cfg->conf, &cfg->ca, NULL);
	} else if (!o->insecure) {
		rc = fb_errinfo_set(ei, FB_EINVAL, 0, "CA bundle", "missing (needed unless insecure)");
		goto out;
	}

	if (!o->cert_pem != !o->key_pem) {
		rc = fb_errinfo_set(ei, FB_EINVAL, 0, o->cert_pem ? "client key" : "client certificate",
				    "missing (a client certificate needs its key and vice versa)");
		goto out;
	}
	if (o->cert_pem) {
		rc = parse_certs(&cfg->cert, o->cert_pem, o->cert_len, 1, "client certificate", ei);
		if (rc < 0)
			goto out;
		rc = parse_key(cfg, o->key_pem, o->key_len, ei);
		if (rc < 0)
			goto out;
		ret = mbedtls_pk_check_pair(&cfg->cert.pk, &cfg->key, mbedtls_ctr_drbg_random, &cfg->drbg);
		if (ret != 0) {
			snprintf(d, sizeof(d), "(-0x%04x)", (unsigned)-ret);
			rc = fb_errinfo_set(ei, FB_EINVAL, 0, "client key does not match the certificate", d);
			goto out;
		}
		ret = mbedtls_ssl_conf_own_cert(&cfg->conf, &cfg->cert, &cfg->key);
		if (ret != 0) {
			rc = fb_errinfo_set(ei, FB_ENOMEM, 0, "client certificate", NULL);
			goto out;
		}
	}
	*out = cfg;
	return 0;
out:
	tls_config_free(cfg);
	return rc;
}

void tls_config_free(struct tls_config *cfg)
{
	if (!cfg)
		return;
	mbedtls_ssl_config_free(&cfg->conf);
	mbedtls_pk_free(&cfg->key);
	mbedtls_x509_crt_free(&cfg->cert);
	mbedtls_x509_crt_free(&cfg->ca);
	mbedtls_ctr_drbg_free(&cfg->drbg);
	mbedtls_entropy_free(&cfg->entropy);
	free(cfg);
}

/* --- connections ----------------------------------------------------- */

static int conn_new(struct tls_conn **out, struct tls_config *cfg, int fd, void *ctx, tls_send_fn send_fn,
		    tls_recv_fn recv_fn, const char *server_name, struct fb_errinfo *ei)
{
	struct tls_conn *c;
	const char *name = server_name ? server_name : "";
	size_t len = strlen(name);
	int ret, rc;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return fb_errinfo_set(ei, FB_ENOMEM, 0, name, NULL);
	mbedtls_ssl_init(&c->ssl);
	c->fd = fd;
	c->ctx = ctx;
	c->send = send_fn;
	c->recv = recv_fn;
	c->want = POLLIN;
	/* "[::1]" as URLs write it */
	if (len >= 2 && name[0] == '[' && name[len - 1] == ']') {
		name++;
		len -= 2;
	}
	if (len >= sizeof(c->name)) {
		rc = fb_errinfo_set(ei, FB_ETLS, 0, "server name", "longer than 255 bytes");
		goto out;
	}
	memcpy(c->name, name, len);
	c->name[len] = '\0';

	ret = mbedtls_ssl_setup(&c->ssl, &cfg->conf);
	if (ret != 0) {
		rc = fb_errinfo_set(ei, ret == MBEDTLS_ERR_SSL_ALLOC_FAILED ? FB_ENOMEM : FB_ETLS, 0, c->name, NULL);
		goto out;
	}
	if (inet_pton(AF_INET, c->name, c->ip) == 1)
		c->ip_len = 4;
	else if (inet_pton(AF_INET6, c->name, c->ip) == 1)
		c->ip_len = 16;
	if (!c->name[0] && !cfg->insecure) {
		rc = fb_errinfo_set(ei, FB_ETLS, 0, "server name", "missing (needed to verify the certificate)");
		goto out;
	}
	/* NULL: no SNI and no name check by mbedTLS (IP literals, insecure
	 * mode without a name); the explicit call keeps 3.6 from refusing. */
	ret = mbedtls_ssl_set_hostname(&c->ssl, c->name[0] && !c->ip_len ? c->name : NULL);
	if (ret != 0) {
		rc = fb_errinfo_set(ei, ret == MBEDTLS_ERR_SSL_ALLOC_FAILED ? FB_ENOMEM : FB_ETLS, 0, c->name, NULL);
		goto out;
	}
	if (c->ip_len)
		mbedtls_ssl_set_verify(&c->ssl, verify_ip, c);
	mbedtls_ssl_set_bio(&c->ssl, c, bio_send, bio_recv, NULL);
	*out = c;
	return 0;
out:
	mbedtls_ssl_free(&c->ssl);
	free(c);
	return rc;
}

int tls_conn_new(struct tls_conn **out, struct tls_config *cfg, int fd, const char *server_name,
		 struct fb_errinfo *ei)
{
	return conn_new(out, cfg, fd, NULL, NULL, NULL, server_name, ei);
}

int tls_conn_new_bio(struct tls_conn **out, struct tls_config *cfg, void *ctx, tls_send_fn send,
		     tls_recv_fn recv, const char *server_name, struct fb_errinfo *ei)
{
	return conn_new(out, cfg, -1, ctx, send, recv, server_name, ei);
}

void tls_conn_free(struct tls_conn *c)
{
	if (!c)
		return;
	if (!c->err && mbedtls_ssl_is_handshake_over(&c->ssl)) {
		c->closing = 1; /* MSG_DONTWAIT: a full socket buffer drops it */
		(void)mbedtls_ssl_close_notify(&c->ssl);
	}
	mbedtls_ssl_free(&c->ssl);
	free(c);
}

int tls_handshake(struct tls_conn *c, struct fb_errinfo *ei)
{
	int ret, spins = 0;

	if (c->err)
		return conn_failed(c, ei);
	if (mbedtls_ssl_is_handshake_over(&c->ssl))
		return 0;
	do {
		c->blocked = 0;
		ret = mbedtls_ssl_handshake(&c->ssl);
		if (ret == 0)
			return 0;
	} while (again(c, ret, &spins));
	return conn_result(c, ret, ei);
}

ssize_t tls_read(struct tls_conn *c, void *buf, size_t len, struct fb_errinfo *ei)
{
	int ret, spins = 0;

	if (c->err)
		return conn_failed(c, ei);
	if (c->eof || len == 0)
		return 0;
	if (!mbedtls_ssl_is_handshake_over(&c->ssl)) {
		ret = tls_handshake(c, ei);
		if (ret < 0)
			return ret;
	}
	if (len > INT_MAX)
		len = INT_MAX;
	do {
		c->blocked = 0;
		ret = mbedtls_ssl_read(&c->ssl, buf, len);
		if (ret > 0)
			return ret;
		if (ret == 0 || ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) {
			c->eof = 1;
			return 0;
		}
	} while (again(c, ret, &spins));
	return conn_result(c, ret, ei);
}

ssize_t tls_write(struct tls_conn *c, const void *buf, size_t len, struct fb_errinfo *ei)
{
	int ret, max, spins = 0;
	size_t n;

	if (c->err)
		return conn_failed(c, ei);
	if (!mbedtls_ssl_is_handshake_over(&c->ssl)) {
		ret = tls_handshake(c, ei);
		if (ret < 0)
			return ret;
	}
	n = c->wr_queued ? c->wr_queued : len;
	if (n == 0)
		return 0;
	/* mbedTLS sends one record per call; knowing its size tells what
	 * WANT_WRITE left queued */
	max = mbedtls_ssl_get_max_out_record_payload(&c->ssl);
	if (max > 0 && n > (size_t)max)
		n = (size_t)max;
	do {
		c->blocked = 0;
		ret = mbedtls_ssl_write(&c->ssl, buf, n);
		if (ret >= 0) {
			c->wr_queued = 0;
			return ret;
		}
	} while (again(c, ret, &spins));
	if (ret == MBEDTLS_ERR_SSL_WANT_WRITE && c->blocked)
		c->wr_queued = n;
	return conn_result(c, ret, ei);
}

size_t tls_pending(const struct tls_conn *c)
{
	size_t n = mbedtls_ssl_get_bytes_avail(&c->ssl);

	/* A record (or the rest of one holding several handshake messages, such
	 * as TLS 1.3 tickets) already read from the socket but not decrypted:
	 * the socket will not wake a poll for it, so report it as readable. */
	if (n == 0 && !c->err && mbedtls_ssl_check_pending(&c->ssl))
		return 1;
	return n;
}

short tls_want(const struct tls_conn *c)
{
	return c->want;
}

const char *tls_version(const struct tls_conn *c)
{
	return mbedtls_ssl_get_version(&c->ssl);
}

const char *tls_cipher(const struct tls_conn *c)
{
	const char *s = mbedtls_ssl_get_ciphersuite(&c->ssl);

	return s ? s : "none";
}

int tls_sha256(const struct tls_part *parts, size_t n, unsigned char out[TLS_SHA256_SIZE])
{
	mbedtls_sha256_context ctx;
	int ret;

	mbedtls_sha256_init(&ctx);
	ret = mbedtls_sha256_starts(&ctx, 0);
	for (size_t i = 0; ret == 0 && i < n; i++)
		ret = mbedtls_sha256_update(&ctx, parts[i].data, parts[i].len);
	if (ret == 0)
		ret = mbedtls_sha256_finish(&ctx, out);
	mbedtls_sha256_free(&ctx);
	return ret == 0 ? 0 : -FB_ETLS;
}
