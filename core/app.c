#include "app.h"

#include "err.h"
#include "http.h"
#include "log.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void probe(void *ctx, const char *method, const char *path, struct http_reply *r)
{
	const struct app_probes *p = ctx;

	(void)method;
	if (strcmp(path, "/healthz") == 0 || (p->livez && strcmp(path, "/livez") == 0)) {
		r->status = 200;
		http_reply_printf(r, "ok\n");
	} else if (p->ready && strcmp(path, "/readyz") == 0) {
		int ok = p->ready(p->ctx);

		r->status = ok ? 200 : 503;
		http_reply_printf(r, "%s", ok ? "ok\n" : p->waiting);
	} else if (strcmp(path, "/metrics") == 0) {
		metrics_reply(p->mx, r);
	}
}

void app_serve(struct http_server **srv, struct loop *l, const char *addr, const struct app_probes *p,
	       const struct fb_log *lg, const char *what, const char *where)
{
	struct fb_errinfo ei;
	char msg[1200];

	fb_errinfo_init(&ei);
	if (http_server_new(srv, l, addr, probe, (void *)p, &ei) < 0)
		LOG_E(lg, "serving %s: %s", what, fb_errinfo_str(&ei, msg, sizeof(msg)));
	else
		LOG_I(lg, "serving %s on port %d%s", what, http_server_port(*srv), where);
}

const char *app_node_name(const char *flag, char *buf, size_t size)
{
	const char *n = flag;

	if (!n || !*n)
		n = getenv("NODE_NAME");
	if (n && *n) {
		snprintf(buf, size, "%s", n);
		return buf;
	}
	if (gethostname(buf, size) < 0)
		buf[0] = '\0';
	buf[size - 1] = '\0';
	return buf;
}
