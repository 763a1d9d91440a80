/* metrics: the Prometheus text format a scraper parses. */
#include "t.h"

#include "../../core/metrics.h"

#include <stddef.h>
#include <stdio.h>

int main(void)
{
	static const double bounds[] = { 0.1, 1, 10 };
	struct metrics r;
	char buf[2048], small[16];
	int a, b, c, h;
	size_t n;

	t_suite = "metrics";
	metrics_init(&r);
	a = metrics_add(&r, METRIC_COUNTER, "fb_requests_total", "code=\"200\"", "API requests");
	b = metrics_add(&r, METRIC_COUNTER, "fb_requests_total", "code=\"429\"", "API requests");
	c = metrics_add(&r, METRIC_GAUGE, "fb_up", "", "1 when healthy");
	h = metrics_add_histogram(&r, "fb_latency_seconds", "", "request latency", bounds, 3);
	metrics_inc(&r, a, 3);
	metrics_inc(&r, b, 1);
	metrics_set(&r, c, 1);
	metrics_observe(&r, h, 0.05);
	metrics_observe(&r, h, 5);
	metrics_inc(&r, 99, 1); /* out of range: ignored */
	n = metrics_render(&r, buf, sizeof(buf));
	T_STR("rendered text", buf,
	      "# HELP fb_requests_total API requests\n"
	      "# TYPE fb_requests_total counter\n"
	      "fb_requests_total{code=\"200\"} 3\n"
	      "fb_requests_total{code=\"429\"} 1\n"
	      "# HELP fb_up 1 when healthy\n"
	      "# TYPE fb_up gauge\n"
	      "fb_up 1\n"
	      "# HELP fb_latency_seconds request latency\n"
	      "# TYPE fb_latency_seconds histogram\n"
	      "fb_latency_seconds_bucket{le=\"0.1\"} 1\n"
	      "fb_latency_seconds_bucket{le=\"1\"} 1\n"
	      "fb_latency_seconds_bucket{le=\"10\"} 2\n"
	      "fb_latency_seconds_bucket{le=\"+Inf\"} 2\n"
	      "fb_latency_seconds_sum 5.05\n"
	      "fb_latency_seconds_count 2\n");
	T_INT("length returned", n, strlen(buf));
	T_INT("cut output reports the length needed", metrics_render(&r, small, sizeof(small)), n);
	T_INT("cut output is terminated", strlen(small), sizeof(small) - 1);
	T_INT("histogram with too many bounds refused",
	      metrics_add_histogram(&r, "x", "", "x", bounds, METRICS_BUCKETS + 1), -1);
	while (r.n < METRICS_MAX)
		metrics_add(&r, METRIC_GAUGE, "filler", "", "f");
	T_INT("full registry refused", metrics_add(&r, METRIC_GAUGE, "one_more", "", "x"), -1);
	{
		struct ids { int a, h, z; } ids;
		static const struct metrics_def defs[] = {
			{ METRIC_GAUGE, "t_build_info", "version=\"1\"", "b", NULL, 0, offsetof(struct ids, a) },
			{ METRIC_HISTOGRAM, "t_seconds", "", "s", bounds, 3, offsetof(struct ids, h) },
			{ METRIC_HISTOGRAM, "t_big", "", "s", bounds, METRICS_BUCKETS + 1, offsetof(struct ids, z) },
		};

		metrics_init(&r);
		T_INT("table: a refused row is reported", metrics_add_table(&r, defs, 3, &ids), -1);
		T_OK("table: indexes in order, -1 for the refused", ids.a == 0 && ids.h == 1 && ids.z == -1,
		     "a=%d h=%d z=%d", ids.a, ids.h, ids.z);
		T_INT("table: all fit", metrics_add_table(&r, defs, 2, &ids), 0);
		T_OK("table: second registration", ids.a == 2 && ids.h == 3, "a=%d h=%d", ids.a, ids.h);
		metrics_set(&r, ids.a, 7);
		n = metrics_render(&r, buf, sizeof(buf));
		T_OK("table: rendered", strstr(buf, "t_build_info{version=\"1\"} 7\n") != NULL, "%s", buf);
	}
	{
		/* Go's strconv.FormatFloat(v, 'g', -1, 64), printed by go1.23 for
		 * the same values: what Prometheus' Go client writes. */
		static const struct { double v; const char *go; } fl[] = {
			{ 0.1, "0.1" }, { 5.05, "5.05" }, { 0.025, "0.025" }, { 1e6, "1e+06" },
			{ 1234567, "1.234567e+06" }, { 1e-5, "1e-05" }, { 0.0001, "0.0001" },
			{ 123456.7, "123456.7" }, { 2.5e-05, "2.5e-05" },
			{ 1.0 / 3, "0.3333333333333333" }, { -0.0, "-0" }, { 1e21, "1e+21" },
			{ 0.005, "0.005" }, { 60, "60" }, { -2.5, "-2.5" },
		};
		char want[64];

		for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
			metrics_init(&r);
			metrics_set(&r, metrics_add(&r, METRIC_GAUGE, "g", "", "g"), fl[i].v);
			metrics_render(&r, buf, sizeof(buf));
			snprintf(want, sizeof(want), "\ng %s\n", fl[i].go);
			T_OK("value as Go prints it", strstr(buf, want) != NULL, "want %s in %s", fl[i].go, buf);
		}
	}
	{
		char l[16];

		metrics_label(buf, sizeof(buf), "node", "a\"b\\c\nd");
		T_STR("label value escaped", buf, "node=\"a\\\"b\\\\c\\nd\"");
		metrics_label(l, sizeof(l), "node", "0123456789abcdef");
		T_STR("label value cut, still quoted", l, "node=\"0123456\"");
	}
	return t_done();
}
