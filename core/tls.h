/* tls: the one door to mbedTLS. A TLS 1.2/1.3 client with certificate and
 * host-name/IP verification always on unless the caller explicitly asks for
 * insecure mode, client certificates, and a transport seam (send/recv
 * callbacks) so tests can drive it without sockets. Works on blocking and
 * non-blocking sockets: on a non-blocking one every call may return
 * -FB_EAGAIN, and tls_want() says whether to wait for POLLIN or POLLOUT. */
#ifndef FB_TLS_H
#define FB_TLS_H

#include "err.h"

#include <stddef.h>
#include <sys/types.h>

struct tls_config;
struct tls_conn;

struct tls_opts {
	const char *ca_pem;   /* CA bundle, PEM (one or more certificates); may be NULL only when insecure */
	size_t ca_len;
	const char *cert_pem; /* client certificate (chain), PEM; NULL: none */
	size_t cert_len;
	const char *key_pem;  /* its private key (PKCS#8, PKCS#1 or SEC1 PEM); NULL: none */
	size_t key_len;
	int insecure;         /* skip server certificate verification (kubeconfig's insecure-skip-tls-verify) */
};

/* Builds a configuration shared by any number of connections; the PEM buffers
 * are copied. Errors: -FB_EINVAL with ei naming which input does not parse
 * ("CA bundle", "client certificate", "client key", "client key does not match
 * the certificate"), -FB_ENOMEM, -FB_ETLS (RNG seeding). */
int tls_config_new(struct tls_config **out, const struct tls_opts *o, struct fb_errinfo *ei);
/* Safe with NULL; only after every connection using it is freed. */
void tls_config_free(struct tls_config *cfg);

/* Transport seam: send/recv like send(2)/recv(2) on ctx; return bytes moved,
 * 0 on EOF (recv), -FB_EAGAIN when they would block, or another negative
 * fb_err. */
typedef ssize_t (*tls_send_fn)(void *ctx, const void *buf, size_t len);
typedef ssize_t (*tls_recv_fn)(void *ctx, void *buf, size_t len);

/* A client session over a connected socket fd (not owned, not closed).
 * server_name: the name to verify — a DNS name (also sent as SNI) or an IPv4/
 * IPv6 literal (checked against the certificate's IP SANs, no SNI).
 * Errors: -FB_ENOMEM, -FB_ETLS. */
int tls_conn_new(struct tls_conn **out, struct tls_config *cfg, int fd, const char *server_name,
		 struct fb_errinfo *ei);
/* The same over the seam. */
int tls_conn_new_bio(struct tls_conn **out, struct tls_config *cfg, void *ctx, tls_send_fn send,
		     tls_recv_fn recv, const char *server_name, struct fb_errinfo *ei);
/* Sends close_notify (best effort, never blocks) and frees. Safe with NULL. */
void tls_conn_free(struct tls_conn *c);

/* Drives the handshake. Returns 0 when done, -FB_EAGAIN (see tls_want), or
 * -FB_ETLS with ei->detail saying why in words a user can act on, e.g.
 * "certificate verification failed: The certificate is not correctly signed
 * by the trusted CA" or "...: The certificate Common Name (CN) does not match
 * with the expected CN" or "...: The certificate validity has expired",
 * -FB_ECLOSED if the peer hung up, -FB_EIO if the socket failed (ei->sys).
 * A failed session stays failed: later calls return the same error. */
int tls_handshake(struct tls_conn *c, struct fb_errinfo *ei);

/* Reads up to len bytes (handshaking first if needed). Returns the count, 0
 * when the peer closed the session (close_notify or EOF), -FB_EAGAIN, or
 * -FB_ETLS / -FB_EIO, -FB_ECLOSED for a reset connection. */
ssize_t tls_read(struct tls_conn *c, void *buf, size_t len, struct fb_errinfo *ei);
/* Writes len bytes, possibly partially: returns the count written, -FB_EAGAIN
 * or an error. After -FB_EAGAIN call it again with the same data: its first
 * bytes are already encrypted and queued, and that call returns their count. */
ssize_t tls_write(struct tls_conn *c, const void *buf, size_t len, struct fb_errinfo *ei);

/* Bytes already decrypted and buffered: readable without waiting for the
 * socket (a poll loop must check this before sleeping). 1 also stands for a
 * record read from the socket but not yet decrypted. */
size_t tls_pending(const struct tls_conn *c);
/* After -FB_EAGAIN: POLLIN or POLLOUT, what the socket must become. */
short tls_want(const struct tls_conn *c);
/* "TLSv1.3" / "TLSv1.2", and the cipher suite name, for logs. */
const char *tls_version(const struct tls_conn *c);
const char *tls_cipher(const struct tls_conn *c);

/* SHA-256 (FIPS 180-4) of the concatenation of n byte strings, into out.
 * For digests that need no secret (nodelabels' record); here because this
 * module is the one door to mbedTLS. Returns 0 or -FB_ETLS. */
struct tls_part {
	const void *data;
	size_t len;
};
#define TLS_SHA256_SIZE 32
int tls_sha256(const struct tls_part *parts, size_t n, unsigned char out[TLS_SHA256_SIZE]);

#endif
