/* tls: the client against Debian's `openssl s_server` with a PKI made per run
 * by tests/tls/mkpki.sh: verification (CA, DNS and IP SANs, expiry), SNI
 * (sent for names, never for IPs), TLS 1.2 and 1.3, client certificates,
 * blocking and poll-driven non-blocking sockets, the transport seam, and
 * peers that hang up or talk nonsense. Skips when openssl is missing. */
#include "t.h"

#include "../../core/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LONG_LINES 16384 /* 64-byte lines for the full-buffer test: 1 MiB */

struct srv {
	pid_t pid;
	int port;
	char opts[256]; /* what it was started with, to reuse it */
	char log[300];
};

static char pki[200]; /* the PKI directory, also s_server's working directory */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The contents of pki/name, NUL-terminated (the length excludes the NUL);
 * exits when it cannot be read, as nothing else could work then. */
static char *slurp(const char *name, size_t *len)
{
	char path[300];
	struct stat st;
	char *p;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", pki, name);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0 || !(p = malloc((size_t)st.st_size + 1)) ||
	    read(fd, p, (size_t)st.st_size) != st.st_size) {
		perror(path);
		exit(2);
	}
	close(fd);
	p[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return p;
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void srv_stop(struct srv *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL); /* SIGTERM may be blocked in it (see srv_start) */
		waitpid(s->pid, NULL, 0);
	}
	s->pid = 0;
	s->opts[0] = '\0';
}

/* Starts `openssl s_server -accept 127.0.0.1:PORT OPTS` in pki (unless the
 * running one has the same OPTS) and waits for its "ACCEPT". It dies with
 * us (PR_SET_PDEATHSIG), so a crashing test leaves no server behind. */
static int srv_start(struct srv *s, const char *opts)
{
	char cmd[600], buf[4096];
	int attempt;

	if (s->pid > 0 && strcmp(s->opts, opts) == 0)
		return 0;
	srv_stop(s);
	for (attempt = 0; attempt < 3; attempt++) {
		long long t0 = now_ms();

		s->port = free_port();
		/* a fresh name: the previous server's log says ACCEPT too */
		snprintf(s->log, sizeof(s->log), "%s/s_server.%d.log", pki, s->port);
		unlink(s->log);
		snprintf(cmd, sizeof(cmd), "cd '%s' && exec openssl s_server -accept 127.0.0.1:%d %s",
			 pki, s->port, opts);
		fflush(stdout);
		s->pid = fork();
		if (s->pid == 0) {
			int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			int nul = open("/dev/null", O_RDONLY);

			sigset_t none;

			/* the signal mask survives exec: a caller that blocked
			 * SIGTERM for a signalfd would leave s_server deaf to it */
			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			dup2(nul, 0);
			dup2(fd, 1);
			dup2(fd, 2);
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
		if (s->pid < 0)
			return -1;
		while (now_ms() - t0 < 5000) {
			int fd = open(s->log, O_RDONLY);
			ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof(buf) - 1);

			if (fd >= 0)
				close(fd);
			buf[n > 0 ? n : 0] = '\0';
			if (strstr(buf, "ACCEPT")) {
				snprintf(s->opts, sizeof(s->opts), "%s", opts);
				return 0;
			}
			if (waitpid(s->pid, NULL, WNOHANG) == s->pid) /* port taken, most likely */
				break;
			usleep(5000);
		}
		fprintf(stderr, "s_server %s: %s\n", opts, buf);
		srv_stop(s);
	}
	return -1;
}

/* A connected TCP socket to 127.0.0.1:port; blocking ones time out after
 * 5 s (SO_RCVTIMEO: tls then returns -FB_EAGAIN) so no check can hang. */
static int tcp_connect(int port, int nonblock, int small_buffers)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
	int small = 4096;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (small_buffers) {
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct tls_config *config(const char *ca, const char *cert, const char *key, int insecure)
{
	struct tls_opts o = { .insecure = insecure };
	struct tls_config *cfg = NULL;
	struct fb_errinfo ei;
	char *ca_pem = ca ? slurp(ca, &o.ca_len) : NULL;
	char *cert_pem = cert ? slurp(cert, &o.cert_len) : NULL;
	char *key_pem = key ? slurp(key, &o.key_len) : NULL;
	char msg[1300];

	o.ca_pem = ca_pem;
	o.cert_pem = cert_pem;
	o.key_pem = key_pem;
	if (tls_config_new(&cfg, &o, &ei) < 0)
		fprintf(stderr, "tls_config_new: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
	free(ca_pem);
	free(cert_pem);
	free(key_pem);
	return cfg;
}

/* Sends "hello\n" to an `s_server -rev` and expects "olleh\n" back; 0 or the
 * first tls error. */
static int echo(struct tls_conn *c, struct fb_errinfo *ei)
{
	char buf[64];
	size_t got = 0;
	ssize_t n = tls_write(c, "hello\n", 6, ei);

	if (n != 6)
		return n < 0 ? (int)n : -FB_EIO;
	while (got < 6) {
		n = tls_read(c, buf + got, sizeof(buf) - got, ei);
		if (n <= 0)
			return n < 0 ? (int)n : -FB_ECLOSED;
		got += (size_t)n;
	}
	return got == 6 && memcmp(buf, "olleh\n", 6) == 0 ? 0 : -FB_EPROTO;
}

/* --- verification and versions: one table ------------------------------ */

static const struct vcase {
	const char *name;
	const char *srv;      /* s_server options */
	const char *ca;       /* our CA bundle */
	const char *sname;    /* server_name */
	int insecure;
	int rc;               /* of tls_handshake */
	const char *detail;   /* substring of ei.detail when rc < 0 */
	const char *version;  /* tls_version when rc == 0 */
} vcases[] = {
	{ "RSA cert, IP SAN, TLS 1.3 preferred", "-rev -cert srv-rsa.pem -key srv-rsa.key",
	  "ca.pem", "127.0.0.1", 0, 0, NULL, "TLSv1.3" },
	{ "RSA cert, DNS SAN, TLS 1.3 preferred", "-rev -cert srv-rsa.pem -key srv-rsa.key",
	  "ca.pem", "localhost", 0, 0, NULL, "TLSv1.3" },
	{ "RSA cert, name not in the certificate", "-rev -cert srv-rsa.pem -key srv-rsa.key",
	  "ca.pem", "kubernetes.default.svc", 0, -FB_ETLS, "Common Name (CN) does not match", NULL },
	{ "RSA cert, other IP than the SAN's", "-rev -cert srv-rsa.pem -key srv-rsa.key",
	  "ca.pem", "127.0.0.2", 0, -FB_ETLS, "Common Name (CN) does not match", NULL },
	{ "RSA cert, IPv6 literal not in the SANs", "-rev -cert srv-rsa.pem -key srv-rsa.key",
	  "ca.pem", "[::1]", 0, -FB_ETLS, "Common Name (CN) does not match", NULL },
	{ "RSA cert, TLS 1.2, IP SAN", "-rev -tls1_2 -cert srv-rsa.pem -key srv-rsa.key",
	  "ca.pem", "127.0.0.1", 0, 0, NULL, "TLSv1.2" },
	{ "RSA cert, TLS 1.2, DNS SAN", "-rev -tls1_2 -cert srv-rsa.pem -key srv-rsa.key",
	  "ca.pem", "localhost", 0, 0, NULL, "TLSv1.2" },
	{ "RSA cert, TLS 1.2, wrong CA", "-rev -tls1_2 -cert srv-rsa.pem -key srv-rsa.key",
	  "ca2.pem", "localhost", 0, -FB_ETLS, "not correctly signed by the trusted CA", NULL },
	{ "ECDSA cert, TLS 1.3, IP SAN", "-rev -tls1_3 -cert srv-ec.pem -key srv-ec.key",
	  "ca.pem", "127.0.0.1", 0, 0, NULL, "TLSv1.3" },
	{ "ECDSA cert, TLS 1.3, DNS SAN", "-rev -tls1_3 -cert srv-ec.pem -key srv-ec.key",
	  "ca.pem", "localhost", 0, 0, NULL, "TLSv1.3" },
	{ "ECDSA cert, TLS 1.3, wrong CA", "-rev -tls1_3 -cert srv-ec.pem -key srv-ec.key",
	  "ca2.pem", "127.0.0.1", 0, -FB_ETLS, "not correctly signed by the trusted CA", NULL },
	{ "ECDSA cert, TLS 1.3, wrong CA, insecure", "-rev -tls1_3 -cert srv-ec.pem -key srv-ec.key",
	  "ca2.pem", "127.0.0.1", 1, 0, NULL, "TLSv1.3" },
	{ "ECDSA cert, TLS 1.2, IP SAN", "-rev -tls1_2 -cert srv-ec.pem -key srv-ec.key",
	  "ca.pem", "127.0.0.1", 0, 0, NULL, "TLSv1.2" },
	{ "ECDSA cert, TLS 1.2, DNS SAN", "-rev -tls1_2 -cert srv-ec.pem -key srv-ec.key",
	  "ca.pem", "localhost", 0, 0, NULL, "TLSv1.2" },
	{ "expired cert", "-rev -cert expired.pem -key expired.key",
	  "ca.pem", "127.0.0.1", 0, -FB_ETLS, "validity has expired", NULL },
	{ "expired cert, TLS 1.2", "-rev -tls1_2 -cert expired.pem -key expired.key",
	  "ca.pem", "localhost", 0, -FB_ETLS, "validity has expired", NULL },
	{ "cert for wrong.example only, via 127.0.0.1", "-rev -cert wrongname.pem -key wrongname.key",
	  "ca.pem", "127.0.0.1", 0, -FB_ETLS, "Common Name (CN) does not match", NULL },
	{ "cert for wrong.example only, via localhost", "-rev -cert wrongname.pem -key wrongname.key",
	  "ca.pem", "localhost", 0, -FB_ETLS, "Common Name (CN) does not match", NULL },
	{ "cert for wrong.example, as wrong.example", "-rev -cert wrongname.pem -key wrongname.key",
	  "ca.pem", "wrong.example", 0, 0, NULL, "TLSv1.3" },
	{ "wrong name and wrong CA, insecure without a CA", "-rev -cert wrongname.pem -key wrongname.key",
	  NULL, "localhost", 1, 0, NULL, "TLSv1.3" },
	/* SNI: the server answers a name other than localhost with a fatal alert */
	{ "SNI: not sent for an IP literal", "-rev -cert srv-ec.pem -key srv-ec.key -cert2 srv-rsa.pem "
	  "-key2 srv-rsa.key -servername localhost -servername_fatal", "ca.pem", "127.0.0.1", 0, 0, NULL, "TLSv1.3" },
	{ "SNI: sent for a DNS name", "-rev -cert srv-ec.pem -key srv-ec.key -cert2 srv-rsa.pem "
	  "-key2 srv-rsa.key -servername localhost -servername_fatal", "ca.pem", "localhost", 0, 0, NULL, "TLSv1.3" },
	{ "SNI: a name the server does not know is answered with alert 112",
	  "-rev -cert srv-ec.pem -key srv-ec.key -cert2 srv-rsa.pem -key2 srv-rsa.key "
	  "-servername kubernetes.default.svc -servername_fatal",
	  "ca.pem", "localhost", 0, -FB_ETLS, "fatal alert: unrecognized name", NULL },
};

static void verify_cases(struct srv *s)
{
	char name[200], msg[1300];
	size_t i;

	for (i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++) {
		const struct vcase *v = &vcases[i];
		struct tls_config *cfg = config(v->ca, NULL, NULL, v->insecure);
		struct tls_conn *c = NULL;
		struct fb_errinfo ei;
		int fd = -1, rc = -1, data = -1;

		fb_errinfo_init(&ei);
		if (cfg && srv_start(s, v->srv) == 0 && (fd = tcp_connect(s->port, 0, 0)) >= 0 &&
		    tls_conn_new(&c, cfg, fd, v->sname, &ei) == 0) {
			rc = tls_handshake(c, &ei);
			if (rc == 0)
				data = echo(c, &ei);
		}
		fb_errinfo_str(&ei, msg, sizeof(msg));
		snprintf(name, sizeof(name), "%s: handshake", v->name);
		if (v->rc == 0) {
			T_OK(name, rc == 0 && data == 0 && !strcmp(tls_version(c), v->version),
			     "rc=%d data=%d version=%s: %s", rc, data, c ? tls_version(c) : "-", msg);
		} else {
			T_OK(name, rc == v->rc && strstr(ei.detail, v->detail),
			     "rc=%d, want %d with \"%s\": %s", rc, v->rc, v->detail, msg);
		}
		tls_conn_free(c);
		if (fd >= 0)
			close(fd);
		tls_config_free(cfg);
	}
	srv_stop(s);
}

/* --- configuration errors ---------------------------------------------- */

static void config_cases(void)
{
	static const char garbage_pem[] = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA=!*\n"
					  "-----END CERTIFICATE-----\n";
	size_t ca_len, k_len, c_len, rk_len;
	char *ca = slurp("ca.pem", &ca_len), *ec_key = slurp("cli-ec.key", &k_len);
	char *ec_crt = slurp("cli-ec.pem", &c_len), *rsa_key = slurp("cli-rsa.key", &rk_len);
	char *mixed = malloc(ca_len + sizeof(garbage_pem) + 40);
	struct tls_config *cfg = NULL;
	struct fb_errinfo ei;
	struct tls_opts o;
	char msg[1300];
	int rc;

	o = (struct tls_opts){ .ca_pem = garbage_pem, .ca_len = strlen(garbage_pem) };
	rc = tls_config_new(&cfg, &o, &ei);
	T_OK("garbage PEM CA: -FB_EINVAL naming the CA bundle", rc == -FB_EINVAL && !cfg &&
	     !strcmp(ei.what, "CA bundle"), "rc=%d: %s", rc, fb_errinfo_str(&ei, msg, sizeof(msg)));
	o = (struct tls_opts){ .ca_pem = "hello", .ca_len = 5 };
	rc = tls_config_new(&cfg, &o, &ei);
	T_OK("CA that is not PEM at all: -FB_EINVAL naming the CA bundle", rc == -FB_EINVAL &&
	     !strcmp(ei.what, "CA bundle"), "rc=%d: %s", rc, fb_errinfo_str(&ei, msg, sizeof(msg)));
	o = (struct tls_opts){ .ca_pem = NULL };
	rc = tls_config_new(&cfg, &o, &ei);
	T_OK("no CA and not insecure: -FB_EINVAL naming the CA bundle", rc == -FB_EINVAL &&
	     !strcmp(ei.what, "CA bundle"), "rc=%d: %s", rc, fb_errinfo_str(&ei, msg, sizeof(msg)));

	/* one good certificate and one broken block: the good one is used */
	snprintf(mixed, ca_len + sizeof(garbage_pem) + 40, "%s%s", garbage_pem, ca);
	o = (struct tls_opts){ .ca_pem = mixed, .ca_len = strlen(mixed) };
	rc = tls_config_new(&cfg, &o, &ei);
	T_OK("CA bundle with a broken block and a good certificate is accepted", rc == 0 && cfg,
	     "rc=%d: %s", rc, fb_errinfo_str(&ei, msg, sizeof(msg)));
	tls_config_free(cfg);
	cfg = NULL;
	/* the length may count a trailing NUL or not */
	o = (struct tls_opts){ .ca_pem = ca, .ca_len = ca_len + 1 };
	rc = tls_config_new(&cfg, &o, &ei);
	T_INT("CA whose length counts the NUL", rc, 0);
	tls_config_free(cfg);
	cfg = NULL;

	o = (struct tls_opts){ .ca_pem = ca, .ca_len = ca_len, .cert_pem = ec_crt, .cert_len = c_len,
			       .key_pem = rsa_key, .key_len = rk_len };
	rc = tls_config_new(&cfg, &o, &ei);
	T_OK("client key of another certificate: -FB_EINVAL saying so", rc == -FB_EINVAL && !cfg &&
	     !strcmp(ei.what, "client key does not match the certificate"), "rc=%d: %s", rc,
	     fb_errinfo_str(&ei, msg, sizeof(msg)));
	o.key_pem = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n";
	o.key_len = strlen(o.key_pem);
	rc = tls_config_new(&cfg, &o, &ei);
	T_OK("garbage client key: -FB_EINVAL naming the client key", rc == -FB_EINVAL &&
	     !strcmp(ei.what, "client key"), "rc=%d: %s", rc, fb_errinfo_str(&ei, msg, sizeof(msg)));
	o.key_pem = NULL;
	rc = tls_config_new(&cfg, &o, &ei);
	T_OK("client certificate without a key: -FB_EINVAL naming the client key", rc == -FB_EINVAL &&
	     !strcmp(ei.what, "client key"), "rc=%d: %s", rc, fb_errinfo_str(&ei, msg, sizeof(msg)));
	o.key_pem = ec_key;
	o.key_len = k_len;
	o.cert_pem = garbage_pem;
	o.cert_len = strlen(garbage_pem);
	rc = tls_config_new(&cfg, &o, &ei);
	T_OK("garbage client certificate: -FB_EINVAL naming it", rc == -FB_EINVAL &&
	     !strcmp(ei.what, "client certificate"), "rc=%d: %s", rc, fb_errinfo_str(&ei, msg, sizeof(msg)));
	o.cert_pem = ec_crt;
	o.cert_len = c_len;
	rc = tls_config_new(&cfg, &o, &ei);
	T_OK("EC client certificate with its SEC1 key", rc == 0 && cfg, "rc=%d: %s", rc,
	     fb_errinfo_str(&ei, msg, sizeof(msg)));
	tls_config_free(cfg);
	tls_config_free(NULL);
	free(mixed);
	free(ca);
	free(ec_key);
	free(ec_crt);
	free(rsa_key);
}

/* --- client certificates ----------------------------------------------- */

static void client_cert_cases(struct srv *s)
{
	static const struct {
		const char *name, *srv, *cert, *key;
		int ok;
	} cc[] = {
		{ "client cert required: EC client cert, TLS 1.3", "-rev -tls1_3", "cli-ec.pem", "cli-ec.key", 1 },
		{ "client cert required: RSA (PKCS#1) client cert, TLS 1.3", "-rev -tls1_3", "cli-rsa.pem",
		  "cli-rsa.key", 1 },
		{ "client cert required: RSA (PKCS#1) client cert, TLS 1.2", "-rev -tls1_2", "cli-rsa.pem",
		  "cli-rsa.key", 1 },
		{ "client cert required: EC client cert, TLS 1.2", "-rev -tls1_2", "cli-ec.pem", "cli-ec.key", 1 },
		{ "client cert required, none given, TLS 1.3", "-rev -tls1_3", NULL, NULL, 0 },
		{ "client cert required, none given, TLS 1.2", "-rev -tls1_2", NULL, NULL, 0 },
	};
	char opts[256], msg[1300];
	size_t i;

	for (i = 0; i < sizeof(cc) / sizeof(cc[0]); i++) {
		struct tls_config *cfg = config("ca.pem", cc[i].cert, cc[i].key, 0);
		struct tls_conn *c = NULL;
		struct fb_errinfo ei;
		int fd = -1, rc = -1;

		fb_errinfo_init(&ei);
		snprintf(opts, sizeof(opts), "%s -cert srv-ec.pem -key srv-ec.key -CAfile ca.pem -Verify 1",
			 cc[i].srv);
		if (cfg && srv_start(s, opts) == 0 && (fd = tcp_connect(s->port, 0, 0)) >= 0 &&
		    tls_conn_new(&c, cfg, fd, "localhost", &ei) == 0) {
			/* In TLS 1.3 the server judges our certificate after our
			 * Finished: its refusal arrives with the first read. */
			rc = tls_handshake(c, &ei);
			if (rc == 0)
				rc = echo(c, &ei);
		}
		fb_errinfo_str(&ei, msg, sizeof(msg));
		if (cc[i].ok)
			T_OK(cc[i].name, rc == 0, "rc=%d: %s", rc, msg);
		else
			T_OK(cc[i].name, rc == -FB_ETLS && strstr(ei.detail, "the server sent a fatal alert"),
			     "rc=%d: %s", rc, msg);
		if (!cc[i].ok && rc == -FB_ETLS)
			T_OK("  ... and the alert says what it wants",
			     strstr(ei.detail, "certificate required") || strstr(ei.detail, "handshake failure"),
			     "%s", msg);
		tls_conn_free(c);
		if (fd >= 0)
			close(fd);
		tls_config_free(cfg);
	}
	srv_stop(s);
}

/* --- non-blocking sockets ---------------------------------------------- */

/* Waits for what tls_want() says unless tls_pending() has data; 0 on time. */
static int wait_for(struct tls_conn *c, int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	if (tls_pending(c) > 0)
		return 0;
	return poll(&p, 1, 5000) == 1 ? 0 : -1;
}

/* HTTP GET against `s_server -www` on a non-blocking socket, every step
 * waited for with poll on tls_want(). */
static void nonblocking_www(struct srv *s, struct tls_config *cfg, const char *opts, const char *version)
{
	static const char req[] = "GET / HTTP/1.0\r\n\r\n";
	char name[160], msg[1300], buf[700];
	struct tls_conn *c = NULL;
	struct fb_errinfo ei;
	size_t wrote = 0, total = 0;
	int fd = -1, rc = -1, eagain = 0, ok200 = 0, done = 0;
	ssize_t n;

	fb_errinfo_init(&ei);
	if (srv_start(s, opts) == 0 && (fd = tcp_connect(s->port, 1, 0)) >= 0 &&
	    tls_conn_new(&c, cfg, fd, "127.0.0.1", &ei) == 0) {
		while ((rc = tls_handshake(c, &ei)) == -FB_EAGAIN && wait_for(c, fd, tls_want(c)) == 0)
			eagain++;
		while (rc == 0 && wrote < sizeof(req) - 1) {
			n = tls_write(c, req + wrote, sizeof(req) - 1 - wrote, &ei);
			if (n > 0)
				wrote += (size_t)n;
			else if (n != -FB_EAGAIN || wait_for(c, fd, tls_want(c)) != 0)
				rc = n < 0 ? (int)n : -FB_EIO;
		}
		while (rc == 0 && !done) {
			n = tls_read(c, buf, sizeof(buf) - 1, &ei);
			if (n > 0) {
				buf[n] = '\0';
				if (total == 0)
					ok200 = !strncmp(buf, "HTTP/1.0 200 ok", 15);
				total += (size_t)n;
			} else if (n == 0) {
				done = 1;
			} else if (n == -FB_EAGAIN) {
				eagain++;
				if (wait_for(c, fd, tls_want(c)) != 0)
					rc = -FB_ETIMEDOUT;
			} else {
				rc = (int)n;
			}
		}
	}
	snprintf(name, sizeof(name), "non-blocking %s: handshake, GET, whole response until close", version);
	T_OK(name, rc == 0 && ok200 && total > 1000 && c && !strcmp(tls_version(c), version) && eagain > 0,
	     "rc=%d 200=%d bytes=%zu eagain=%d version=%s: %s", rc, ok200, total, eagain,
	     c ? tls_version(c) : "-", fb_errinfo_str(&ei, msg, sizeof(msg)));
	tls_conn_free(c);
	if (fd >= 0)
		close(fd);
}

/* Writes 1 MiB of lines to `s_server -rev` without reading first, over tiny
 * socket buffers: tls_write must block (POLLOUT), its queued record must go
 * out exactly once, and every reversed line must come back in order. */
static void nonblocking_full_buffers(struct srv *s, struct tls_config *cfg, const char *opts,
				     const char *label)
{
	size_t len = (size_t)LONG_LINES * 64, wrote = 0, got = 0, i;
	char *out = malloc(len), *want = malloc(len), *in = malloc(len);
	char name[160], msg[1300];
	struct tls_conn *c = NULL;
	struct fb_errinfo ei;
	int fd = -1, rc = -1, write_blocks = 0, read_blocks = 0, bad_want = 0;
	ssize_t n;

	for (i = 0; i < len; i++) {
		size_t col = i % 64;

		out[i] = col == 63 ? '\n' : (char)('a' + (i / 64 + col) % 26);
		want[i] = col == 63 ? '\n' : (char)('a' + (i / 64 + 62 - col) % 26);
	}
	fb_errinfo_init(&ei);
	if (srv_start(s, opts) == 0 && (fd = tcp_connect(s->port, 1, 1)) >= 0 &&
	    tls_conn_new(&c, cfg, fd, "localhost", &ei) == 0) {
		while ((rc = tls_handshake(c, &ei)) == -FB_EAGAIN && wait_for(c, fd, tls_want(c)) == 0)
			;
		while (rc == 0 && got < len) {
			short ev = 0;
			int progress = 0;

			if (wrote < len) {
				n = tls_write(c, out + wrote, len - wrote, &ei);
				if (n > 0) {
					wrote += (size_t)n;
					progress = 1;
				} else if (n == -FB_EAGAIN) {
					ev |= tls_want(c);
					write_blocks++;
					bad_want |= tls_want(c) != POLLOUT;
				} else {
					rc = n < 0 ? (int)n : -FB_EIO;
					break;
				}
			}
			n = tls_read(c, in + got, len - got, &ei);
			if (n > 0) {
				got += (size_t)n;
				progress = 1;
			} else if (n == -FB_EAGAIN) {
				ev |= tls_want(c);
				read_blocks++;
				bad_want |= tls_want(c) != POLLIN;
			} else {
				rc = n < 0 ? (int)n : -FB_ECLOSED;
				break;
			}
			if (!progress && wait_for(c, fd, ev) != 0)
				rc = -FB_ETIMEDOUT;
		}
	}
	snprintf(name, sizeof(name), "non-blocking %s: 1 MiB both ways through full buffers", label);
	T_OK(name, rc == 0 && wrote == len && got == len && !memcmp(in, want, len),
	     "rc=%d wrote=%zu got=%zu same=%d: %s", rc, wrote, got, got == len && !memcmp(in, want, len),
	     fb_errinfo_str(&ei, msg, sizeof(msg)));
	snprintf(name, sizeof(name), "non-blocking %s: writes blocked, and tls_want said POLLOUT for "
		 "them and POLLIN for blocked reads", label);
	T_OK(name, write_blocks > 0 && !bad_want, "write EAGAINs=%d read EAGAINs=%d wrong want=%d",
	     write_blocks, read_blocks, bad_want);
	tls_conn_free(c);
	if (fd >= 0)
		close(fd);
	free(out);
	free(want);
	free(in);
}

/* --- the transport seam ------------------------------------------------ */

struct seam {
	int fd;
	unsigned calls;
	int eagains;
	short last_block; /* POLLIN / POLLOUT: the direction we refused last */
	int mode;         /* 0 dribble over fd, 1 HTTP text, 2 random bytes, 3 EOF, 4 -FB_EIO */
	unsigned rnd;
};

static ssize_t seam_send(void *ctx, const void *buf, size_t len)
{
	struct seam *s = ctx;

	if (s->mode != 0)
		return (ssize_t)len; /* swallowed */
	if (++s->calls % 2) {
		s->eagains++;
		s->last_block = POLLOUT;
		return -FB_EAGAIN;
	}
	return send(s->fd, buf, len < 7 ? len : 7, MSG_NOSIGNAL);
}

static ssize_t seam_recv(void *ctx, void *buf, size_t len)
{
	static const char http[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
	struct seam *s = ctx;
	unsigned char *b = buf;
	size_t i;

	switch (s->mode) {
	case 0:
		if (++s->calls % 2) {
			s->eagains++;
			s->last_block = POLLIN;
			return -FB_EAGAIN;
		}
		return recv(s->fd, buf, len < 5 ? len : 5, 0);
	case 1:
		for (i = 0; i < len; i++)
			b[i] = (unsigned char)http[(s->calls++) % (sizeof(http) - 1)];
		return (ssize_t)len;
	case 2:
		for (i = 0; i < len; i++) {
			s->rnd = s->rnd * 1103515245u + 12345u;
			b[i] = (unsigned char)(s->rnd >> 16);
		}
		return (ssize_t)len;
	case 3:
		return 0;
	default:
		return -FB_EIO;
	}
}

static void seam_cases(struct srv *s, struct tls_config *cfg)
{
	static const struct {
		const char *name;
		int mode, rc;
		const char *detail;
	} bad[] = {
		{ "seam: a peer talking HTTP fails the handshake cleanly", 1, -FB_ETLS, "not TLS" },
		{ "seam: random bytes fail the handshake cleanly", 2, -FB_ETLS, "(-0x" },
		{ "seam: EOF during the handshake is -FB_ECLOSED", 3, -FB_ECLOSED, "closed the connection" },
		{ "seam: the callback's own error comes back", 4, -FB_EIO, "receiving failed: I/O error" },
	};
	struct seam sm = { .fd = -1 };
	struct tls_conn *c = NULL;
	struct fb_errinfo ei;
	char msg[1300], buf[16];
	int rc = -1, want_ok = 1;
	size_t i, got = 0;
	ssize_t n;

	/* every call of each callback alternates -FB_EAGAIN and a few bytes */
	fb_errinfo_init(&ei);
	if (srv_start(s, "-rev -cert srv-ec.pem -key srv-ec.key") == 0 &&
	    (sm.fd = tcp_connect(s->port, 0, 0)) >= 0 &&
	    tls_conn_new_bio(&c, cfg, &sm, seam_send, seam_recv, "127.0.0.1", &ei) == 0) {
		while ((rc = tls_handshake(c, &ei)) == -FB_EAGAIN)
			want_ok &= tls_want(c) == sm.last_block;
		while (rc == 0 && (n = tls_write(c, "hello\n", 6, &ei)) != 6) {
			want_ok &= n == -FB_EAGAIN && tls_want(c) == sm.last_block;
			if (n != -FB_EAGAIN)
				rc = (int)n;
		}
		while (rc == 0 && got < 6) {
			n = tls_read(c, buf + got, sizeof(buf) - got, &ei);
			if (n > 0)
				got += (size_t)n;
			else if (n == -FB_EAGAIN)
				want_ok &= tls_want(c) == sm.last_block;
			else
				rc = n < 0 ? (int)n : -FB_ECLOSED;
		}
	}
	T_OK("seam: handshake and echo through callbacks moving 5-7 bytes, half the calls -FB_EAGAIN",
	     rc == 0 && got == 6 && !memcmp(buf, "olleh\n", 6) && sm.eagains > 10, "rc=%d got=%zu eagains=%d: %s",
	     rc, got, sm.eagains, fb_errinfo_str(&ei, msg, sizeof(msg)));
	T_OK("seam: tls_want() names the direction the callback refused", want_ok, "mismatch");
	tls_conn_free(c);
	if (sm.fd >= 0)
		close(sm.fd);
	T_OK("no server name and not insecure: refused",
	     tls_conn_new_bio(&c, cfg, &sm, seam_send, seam_recv, NULL, &ei) == -FB_ETLS && !c,
	     "accepted");

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct seam g = { .fd = -1, .mode = bad[i].mode, .rnd = 42 };

		c = NULL;
		rc = tls_conn_new_bio(&c, cfg, &g, seam_send, seam_recv, "localhost", &ei);
		if (rc == 0)
			rc = tls_handshake(c, &ei);
		T_OK(bad[i].name, rc == bad[i].rc && strstr(ei.detail, bad[i].detail), "rc=%d: %s", rc,
		     fb_errinfo_str(&ei, msg, sizeof(msg)));
		if (c && rc < 0) {
			int again = tls_handshake(c, &ei);

			T_OK("  ... and the session stays failed", again == bad[i].rc && (tls_read(c, buf, 1, &ei) ==
			     bad[i].rc), "again=%d", again);
		}
		tls_conn_free(c);
	}
}

/* --- hang-ups ---------------------------------------------------------- */

/* Our own listener reads the ClientHello, then closes. */
static void peer_closes_mid_handshake(struct tls_config *cfg)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fd = -1, sfd = -1, rc = -1;
	struct tls_conn *c = NULL;
	struct fb_errinfo ei;
	char buf[4096], msg[1300];

	fb_errinfo_init(&ei);
	if (lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(lfd, 1) == 0 &&
	    getsockname(lfd, (struct sockaddr *)&a, &alen) == 0 &&
	    (fd = tcp_connect(ntohs(a.sin_port), 1, 0)) >= 0 && (sfd = accept(lfd, NULL, NULL)) >= 0 &&
	    tls_conn_new(&c, cfg, fd, "localhost", &ei) == 0) {
		while ((rc = tls_handshake(c, &ei)) == -FB_EAGAIN && tls_want(c) == POLLOUT)
			wait_for(c, fd, POLLOUT);
		/* the ClientHello is out; the server takes it and hangs up */
		if (rc == -FB_EAGAIN && recv(sfd, buf, sizeof(buf), 0) > 0) {
			close(sfd);
			sfd = -1;
			while ((rc = tls_handshake(c, &ei)) == -FB_EAGAIN && wait_for(c, fd, tls_want(c)) == 0)
				;
		}
	}
	T_OK("peer closes mid-handshake: -FB_ECLOSED", rc == -FB_ECLOSED, "rc=%d: %s", rc,
	     fb_errinfo_str(&ei, msg, sizeof(msg)));
	tls_conn_free(c);
	if (sfd >= 0)
		close(sfd);
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
}

static void hangups(struct srv *s, struct tls_config *cfg)
{
	struct tls_conn *c = NULL;
	struct fb_errinfo ei;
	char buf[64], msg[1300];
	int fd = -1, rc = -1, i;
	ssize_t n = -1, n2 = -1;

	/* close_notify: `s_server -rev` closes its session on "CLOSE" */
	fb_errinfo_init(&ei);
	if (srv_start(s, "-rev -cert srv-ec.pem -key srv-ec.key") == 0 &&
	    (fd = tcp_connect(s->port, 0, 0)) >= 0 && tls_conn_new(&c, cfg, fd, "127.0.0.1", &ei) == 0 &&
	    (rc = echo(c, &ei)) == 0 && tls_write(c, "CLOSE\n", 6, &ei) == 6) {
		n = tls_read(c, buf, sizeof(buf), &ei);
		n2 = tls_read(c, buf, sizeof(buf), &ei);
	}
	T_OK("close_notify from the server: tls_read returns 0, and again", rc == 0 && n == 0 && n2 == 0,
	     "rc=%d n=%zd n2=%zd: %s", rc, n, n2, fb_errinfo_str(&ei, msg, sizeof(msg)));
	tls_conn_free(c);
	c = NULL;
	if (fd >= 0)
		close(fd);

	/* TCP EOF without close_notify: the server process is gone */
	n = n2 = -1;
	if ((fd = tcp_connect(s->port, 0, 0)) >= 0 && tls_conn_new(&c, cfg, fd, "127.0.0.1", &ei) == 0 &&
	    (rc = echo(c, &ei)) == 0) {
		srv_stop(s); /* SIGKILL: no close_notify */
		n = tls_read(c, buf, sizeof(buf), &ei);
		n2 = tls_read(c, buf, sizeof(buf), &ei);
	}
	T_OK("reading after s_server died: tls_read returns 0, and again", rc == 0 && n == 0 && n2 == 0,
	     "rc=%d n=%zd n2=%zd: %s", rc, n, n2, fb_errinfo_str(&ei, msg, sizeof(msg)));
	/* writing to it: an error, not SIGPIPE (MSG_NOSIGNAL) */
	for (i = 0, n = 0; c && i < 20 && n >= 0; i++) {
		n = tls_write(c, "x\n", 2, &ei);
		usleep(10000);
	}
	T_OK("writing after s_server died: -FB_ECLOSED, no SIGPIPE", n == -FB_ECLOSED, "n=%zd: %s", n,
	     fb_errinfo_str(&ei, msg, sizeof(msg)));
	tls_conn_free(c);
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	const char *top = getenv("FB_TOP");
	char tmpl[] = "/tmp/fb-tls-XXXXXX", cmd[600];
	struct srv s = { 0 };
	struct tls_config *cfg;
	long long t0 = now_ms();
	char *dir;

	t_suite = "tls";
	if (system("command -v openssl >/dev/null 2>&1") != 0) {
		printf("SKIP: tls: all (no openssl CLI)\n");
		return 0;
	}
	dir = mkdtemp(tmpl);
	if (!dir)
		return perror("mkdtemp"), 2;
	snprintf(pki, sizeof(pki), "%s", dir);
	snprintf(cmd, sizeof(cmd), "'%s/tests/tls/mkpki.sh' '%s'", top ? top : ".", pki);
	T_OK("per-run PKI made by tests/tls/mkpki.sh", system(cmd) == 0, "%s failed", cmd);
	alarm(120); /* a hang is a failure, not a stuck CI job; s_server dies with us */

	config_cases();
	verify_cases(&s);
	client_cert_cases(&s);

	cfg = config("ca.pem", NULL, NULL, 0);
	if (cfg) {
		nonblocking_www(&s, cfg, "-www -tls1_3 -cert srv-rsa.pem -key srv-rsa.key", "TLSv1.3");
		nonblocking_www(&s, cfg, "-www -tls1_2 -cert srv-ec.pem -key srv-ec.key", "TLSv1.2");
		nonblocking_full_buffers(&s, cfg, "-rev -tls1_3 -cert srv-ec.pem -key srv-ec.key", "TLS 1.3");
		nonblocking_full_buffers(&s, cfg, "-rev -tls1_2 -cert srv-rsa.pem -key srv-rsa.key", "TLS 1.2");
		seam_cases(&s, cfg);
		peer_closes_mid_handshake(cfg);
		hangups(&s, cfg);
	}
	T_OK("tls_config_new for the data tests", cfg != NULL, "failed");
	tls_config_free(cfg);
	srv_stop(&s);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", pki);
	if (system(cmd) != 0)
		return 2;
	fprintf(stderr, "test_tls: %lld ms\n", now_ms() - t0);
	return t_done();
}
