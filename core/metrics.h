/* metrics: counters, gauges and histograms rendered in the Prometheus text
 * exposition format (version 0.0.4). A registry is a fixed table owned by the
 * applet's state struct; metric names and label sets are set up once at
 * start, so the hot path is an array index and an add. */
#ifndef FB_METRICS_H
#define FB_METRICS_H

#include <stddef.h>

struct http_reply;

#define METRICS_MAX 48
#define METRICS_BUCKETS 12

enum metric_kind { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

struct metric {
	const char *name;   /* e.g. "nfd_node_update_requests_total"; borrowed */
	const char *help;   /* one line; borrowed */
	const char *labels; /* "" or a rendered label set without braces: code="200"; borrowed */
	enum metric_kind kind;
	double value;       /* counter/gauge value; histogram sum */
	unsigned long long count; /* histogram observations */
	const double *bounds;     /* histogram upper bounds, ascending; borrowed */
	size_t nbounds;
	unsigned long long buckets[METRICS_BUCKETS];
};

struct metrics {
	struct metric m[METRICS_MAX];
	size_t n;
};

/* Cannot fail: an empty registry. */
void metrics_init(struct metrics *r);
/* name="value" for a series' labels, the value escaped as the text format
 * wants (backslash, double quote, newline); cut to fit size. */
void metrics_label(char *out, size_t size, const char *name, const char *value);

/* Registers a metric and returns its index, or -1 when the table is full or
 * a histogram has more than METRICS_BUCKETS bounds (a programming error the
 * caller's tests catch). Metrics with the same name and different labels
 * share one HELP/TYPE header when rendered consecutively. */
int metrics_add(struct metrics *r, enum metric_kind kind, const char *name, const char *labels,
		const char *help);
int metrics_add_histogram(struct metrics *r, const char *name, const char *labels, const char *help,
			  const double *bounds, size_t nbounds);

/* One row of an applet's const metric table: the index metrics_add gives
 * is stored as an int at id_off in the applet's state struct. bounds: a
 * histogram's (kind METRIC_HISTOGRAM). */
struct metrics_def {
	enum metric_kind kind;
	const char *name, *labels, *help;
	const double *bounds;
	size_t nbounds;
	size_t id_off;
};

/* Registers defs[0..n) in order, storing each index into base + id_off.
 * Returns 0, or -1 when one was refused (its index is then -1, which the
 * update functions ignore). */
int metrics_add_table(struct metrics *r, const struct metrics_def *defs, size_t n, void *base);

void metrics_inc(struct metrics *r, int idx, double by);
void metrics_set(struct metrics *r, int idx, double v);
void metrics_observe(struct metrics *r, int idx, double v);

/* Renders the registry into buf; returns the length needed (like snprintf:
 * when it is >= size the output was cut and the caller should retry bigger). */
size_t metrics_render(const struct metrics *r, char *buf, size_t size);

/* Answers a /metrics request with the registry (200, the Prometheus text
 * content type); on allocation failure the reply is empty. */
void metrics_reply(const struct metrics *r, struct http_reply *rep);

#endif
