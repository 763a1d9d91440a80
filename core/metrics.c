#include "metrics.h"

#include "http.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void metrics_init(struct metrics *r)
{
	r->n = 0;
}

int metrics_add(struct metrics *r, enum metric_kind kind, const char *name, const char *labels,
		const char *help)
{
	struct metric *m;

	if (r->n == METRICS_MAX)
		return -1;
	m = &r->m[r->n];
	memset(m, 0, sizeof(*m));
	m->name = name;
	m->labels = labels ? labels : "";
	m->help = help;
	m->kind = kind;
	return (int)r->n++;
}

int metrics_add_histogram(struct metrics *r, const char *name, const char *labels, const char *help,
			  const double *bounds, size_t nbounds)
{
	int idx;

	if (nbounds > METRICS_BUCKETS)
		return -1;
	idx = metrics_add(r, METRIC_HISTOGRAM, name, labels, help);
	if (idx >= 0) {
		r->m[idx].bounds = bounds;
		r->m[idx].nbounds = nbounds;
	}
	return idx;
}

int metrics_add_table(struct metrics *r, const struct metrics_def *defs, size_t n, void *base)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		const struct metrics_def *d = &defs[i];
		int idx = d->kind == METRIC_HISTOGRAM ?
			metrics_add_histogram(r, d->name, d->labels, d->help, d->bounds, d->nbounds) :
			metrics_add(r, d->kind, d->name, d->labels, d->help);

		*(int *)((char *)base + d->id_off) = idx;
		if (idx < 0)
			rc = -1;
	}
	return rc;
}

void metrics_inc(struct metrics *r, int idx, double by)
{
	if (idx >= 0 && (size_t)idx < r->n)
		r->m[idx].value += by;
}

void metrics_set(struct metrics *r, int idx, double v)
{
	if (idx >= 0 && (size_t)idx < r->n)
		r->m[idx].value = v;
}

void metrics_observe(struct metrics *r, int idx, double v)
{
	struct metric *m;

	if (idx < 0 || (size_t)idx >= r->n)
		return;
	m = &r->m[idx];
	m->value += v;
	m->count++;
	for (size_t i = 0; i < m->nbounds; i++)
		if (v <= m->bounds[i])
			m->buckets[i]++;
}

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->len < o->size ? o->buf + o->len : NULL,
		      o->len < o->size ? o->size - o->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

/* "name{labels,extra}" with the braces only when there is something inside. */
static void series(struct out *o, const char *name, const char *suffix, const char *labels,
		   const char *extra)
{
	const char *sep = labels[0] && extra[0] ? "," : "";

	if (labels[0] || extra[0])
		put(o, "%s%s{%s%s%s} ", name, suffix, labels, sep, extra);
	else
		put(o, "%s%s ", name, suffix);
}

void metrics_label(char *out, size_t size, const char *name, const char *value)
{
	int n = snprintf(out, size, "%s=\"", name);
	size_t o = n > 0 ? (size_t)n : 0;

	if (o + 2 > size) {
		if (size)
			out[0] = '\0';
		return;
	}
	for (; *value && o + 4 <= size; value++) {
		if (*value == '\\' || *value == '"' || *value == '\n')
			out[o++] = '\\';
		out[o++] = *value == '\n' ? 'n' : *value;
	}
	out[o++] = '"';
	out[o] = '\0';
}

/* A float64 as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it, which is
 * what Prometheus' Go client prints: the fewest digits that read back as v,
 * in exponent form when the exponent is below -4 or at least 6 ("0.025",
 * "1e+06", "+Inf"). */
static const char *go_float(char *out, size_t size, double v)
{
	int p, exp;

	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	if (v == 0)
		return signbit(v) ? "-0" : "0";
	for (p = 1; p < 17; p++) {
		snprintf(out, size, "%.*e", p - 1, v);
		if (strtod(out, NULL) == v)
			break;
	}
	snprintf(out, size, "%.*e", p - 1, v);
	exp = atoi(strchr(out, 'e') + 1);
	if (exp < -4 || exp >= 6)
		return out;
	snprintf(out, size, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 0, v);
	return out;
}

size_t metrics_render(const struct metrics *r, char *buf, size_t size)
{
	static const char *const types[] = { "counter", "gauge", "histogram" };
	struct out o = { buf, size, 0 };

	for (size_t i = 0; i < r->n; i++) {
		const struct metric *m = &r->m[i];
		char le[48], num[40];

		if (i == 0 || strcmp(r->m[i - 1].name, m->name) != 0)
			put(&o, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, types[m->kind]);
		if (m->kind != METRIC_HISTOGRAM) {
			series(&o, m->name, "", m->labels, "");
			put(&o, "%s\n", go_float(num, sizeof(num), m->value));
			continue;
		}
		for (size_t b = 0; b < m->nbounds; b++) {
			snprintf(le, sizeof(le), "le=\"%s\"", go_float(num, sizeof(num), m->bounds[b]));
			series(&o, m->name, "_bucket", m->labels, le);
			put(&o, "%llu\n", m->buckets[b]);
		}
		series(&o, m->name, "_bucket", m->labels, "le=\"+Inf\"");
		put(&o, "%llu\n", m->count);
		series(&o, m->name, "_sum", m->labels, "");
		put(&o, "%s\n", go_float(num, sizeof(num), m->value));
		series(&o, m->name, "_count", m->labels, "");
		put(&o, "%llu\n", m->count);
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len;
}

void metrics_reply(const struct metrics *r, struct http_reply *rep)
{
	size_t need = metrics_render(r, NULL, 0) + 1;
	char *room = http_reply_room(rep, need);

	if (room) {
		metrics_render(r, room, need);
		http_reply_commit(rep, need - 1);
	}
	rep->status = 200;
	rep->content_type = "text/plain; version=0.0.4";
}
