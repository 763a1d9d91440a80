/* app: the scaffold every applet's main stands on. The pieces that were
 * written once per applet: the probe and metrics server, the node name. */
#ifndef FB_APP_H
#define FB_APP_H

#include <stddef.h>

struct fb_log;
struct http_server;
struct loop;
struct metrics;

/* What the probe server answers: /healthz (and /livez when livez is set)
 * "ok"; /readyz when ready is set: 200 "ok" once ready(ctx) is true, else 503
 * and waiting; /metrics the registry. Anything else is 404. Borrowed by the
 * server: it must outlive it. */
struct app_probes {
	const struct metrics *mx;
	int (*ready)(void *ctx);
	void *ctx;
	const char *waiting; /* "...\n" */
	int livez;
};

/* Starts the probe server on addr ("HOST:PORT"). A daemon goes on without it
 * (the probes fail and say why), so failure is logged, not returned:
 * "serving WHAT: reason", else "serving WHAT on port N" and where (say
 * " of 10.0.0.1", or "" for nothing). *srv stays NULL on failure. */
void app_serve(struct http_server **srv, struct loop *l, const char *addr, const struct app_probes *p,
	       const struct fb_log *lg, const char *what, const char *where);

/* The node this runs on: flag when given and not empty, else $NODE_NAME,
 * else the host name ("" when that fails). Copied into buf (cut to size). */
const char *app_node_name(const char *flag, char *buf, size_t size);

#endif
