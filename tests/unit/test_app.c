/* app: the probe server every daemon applet starts, and the node name. */
#include "t.h"
#include "t_net.h"

#include "../../core/app.h"
#include "../../core/err.h"
#include "../../core/http.h"
#include "../../core/log.h"
#include "../../core/loop.h"
#include "../../core/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

struct ctx {
	struct loop *l;
	int stop[2], ready;
};

static int ready_cb(void *c)
{
	return ((struct ctx *)c)->ready;
}

static void on_stop(void *c, int fd, short revents)
{
	(void)fd;
	(void)revents;
	loop_stop(((struct ctx *)c)->l, 0);
}

static void *loop_main(void *c)
{
	loop_run(((struct ctx *)c)->l);
	return NULL;
}

/* GET path over a fresh connection; the whole answer into out. */
static void get(int port, const char *path, char *out, size_t size)
{
	char req[256];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);

	t_exchange(port, req, (size_t)n, out, size);
}

static void test_serve(void)
{
	static const struct {
		const char *path;
		int livez, with_ready, ready;
		const char *status, *body;
	} cases[] = {
		{ "/healthz", 0, 0, 0, "HTTP/1.1 200", "\r\n\r\nok\n" },
		{ "/livez", 0, 0, 0, "HTTP/1.1 404", NULL },
		{ "/livez", 1, 0, 0, "HTTP/1.1 200", "\r\n\r\nok\n" },
		{ "/readyz", 0, 0, 0, "HTTP/1.1 404", NULL },
		{ "/readyz", 0, 1, 0, "HTTP/1.1 503", "\r\n\r\nwaiting\n" },
		{ "/readyz", 0, 1, 1, "HTTP/1.1 200", "\r\n\r\nok\n" },
		{ "/metrics", 0, 0, 0, "HTTP/1.1 200", "t_up 1\n" },
		{ "/other", 0, 0, 0, "HTTP/1.1 404", NULL },
	};
	struct ctx x = { 0 };
	struct metrics mx;
	struct app_probes p;
	struct http_server *srv = NULL;
	struct fb_errinfo ei;
	struct fb_log lg;
	pthread_t th;
	sigset_t set;
	char out[4096], name[96];
	int port;

	log_init(&lg);
	lg.fd = -1;
	metrics_init(&mx);
	metrics_set(&mx, metrics_add(&mx, METRIC_GAUGE, "t_up", "", "up"), 1);
	if (loop_new(&x.l, &ei) < 0 || pipe(x.stop) < 0)
		exit(2);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	app_serve(&srv, x.l, "nonsense", &p, &lg, "/healthz", "");
	T_OK("a bad address: no server", srv == NULL, "a server");
	p = (struct app_probes){ .mx = &mx, .ctx = &x, .waiting = "waiting\n" };
	app_serve(&srv, x.l, "127.0.0.1:0", &p, &lg, "/healthz", "");
	T_OK("serves on an ephemeral port", srv && http_server_port(srv) > 0, "no server");
	if (!srv)
		return;
	port = http_server_port(srv);
	loop_watch(x.l, x.stop[0], POLLIN, on_stop, &x);
	pthread_create(&th, NULL, loop_main, &x);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* the loop thread reads p only while answering: set between requests */
		p.livez = cases[i].livez;
		p.ready = cases[i].with_ready ? ready_cb : NULL;
		x.ready = cases[i].ready;
		get(port, cases[i].path, out, sizeof(out));
		snprintf(name, sizeof(name), "%s (livez %d, readyz %d/%d)", cases[i].path, cases[i].livez,
			 cases[i].with_ready, cases[i].ready);
		T_OK(name, strncmp(out, cases[i].status, strlen(cases[i].status)) == 0 &&
			   (!cases[i].body || strstr(out, cases[i].body)), "got \"%.200s\"", out);
	}
	if (write(x.stop[1], "x", 1) != 1)
		exit(2);
	pthread_join(th, NULL);
	http_server_free(srv);
	loop_free(x.l);
	close(x.stop[0]);
	close(x.stop[1]);
}

static void test_node_name(void)
{
	char buf[256], host[256];

	setenv("NODE_NAME", "from-env", 1);
	T_STR("the flag first", app_node_name("from-flag", buf, sizeof(buf)), "from-flag");
	T_STR("an empty flag: $NODE_NAME", app_node_name("", buf, sizeof(buf)), "from-env");
	T_STR("no flag: $NODE_NAME", app_node_name(NULL, buf, sizeof(buf)), "from-env");
	T_STR("cut to the buffer", app_node_name("abcdef", buf, 4), "abc");
	setenv("NODE_NAME", "", 1);
	if (gethostname(host, sizeof(host)) < 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	T_STR("empty $NODE_NAME: the host name", app_node_name(NULL, buf, sizeof(buf)), host);
	unsetenv("NODE_NAME");
	T_STR("no $NODE_NAME: the host name", app_node_name("", buf, sizeof(buf)), host);
}

/* log_rfc3339: UTC to the second, as metav1.Time and NFD's +expiry-time */
static void test_rfc3339(void)
{
	static const struct {
		long long t;
		const char *want;
	} c[] = {
		{ 0, "1970-01-01T00:00:00Z" },
		{ 1700000000, "2023-11-14T22:13:20Z" },
		{ 951782400, "2000-02-29T00:00:00Z" },
		{ 2147483648LL, "2038-01-19T03:14:08Z" }, /* past 32 bits: musl's time_t is 64-bit everywhere */
		{ 4102444799LL, "2099-12-31T23:59:59Z" },
	};
	char buf[32], small[11];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		T_STR(c[i].want, log_rfc3339((time_t)c[i].t, buf, sizeof(buf)), c[i].want);
	T_STR("cut to fit a small buffer", log_rfc3339(0, small, sizeof(small)), "1970-01-01");
}

int main(void)
{
	t_suite = "app";
	test_rfc3339();
	test_node_name();
	test_serve();
	return t_done();
}
