/* tmpl: templates against Go's own output. tests/unit/data/tmpl/cases.txt
 * holds each case's template, its data (upstream's matchedFeatures as
 * JSON: domain -> feature -> list of elements) and what Go 1.23's
 * text/template (missingkey=error, with Sprig's functions as documented)
 * printed, or that it failed; the output must be equal byte for byte, and a
 * failure must be one here too. Then the bounds. Needs FB_TOP ("." else). */
#include "t.h"

#include "../../core/arena.h"
#include "../../core/buf.h"
#include "../../core/err.h"
#include "../../core/json.h"
#include "../../core/tmpl.h"

struct tcase {
	char *name, *tmpl, *data, *want; /* want NULL: Go failed */
};

/* The data JSON as the rules module builds it (core/rules_tmpl.c). */
static struct tval *data_of(struct arena *ar, const char *text)
{
	struct json *j = json_parse(text, strlen(text), "data", NULL);
	struct tval *empty = tmpl_str(ar, ""), *nolist = tmpl_list(ar, "[]nodefeaturerule.MatchedElement");
	struct tval *nodom = tmpl_map(ar, "nodefeaturerule.domainMatchedFeatures", nolist);
	struct tval *root = tmpl_map(ar, "nodefeaturerule.matchedFeatures", nodom);

	for (const struct json *d = json_child(j); d && root; d = json_next(d)) {
		struct tval *dom = tmpl_map(ar, "nodefeaturerule.domainMatchedFeatures", nolist);

		if (!dom || tmpl_map_put(ar, root, json_key(d), dom) < 0)
			root = NULL;
		for (const struct json *f = json_child(d); f && root; f = json_next(f)) {
			struct tval *l = tmpl_list(ar, "[]nodefeaturerule.MatchedElement");

			if (!l || tmpl_map_put(ar, dom, json_key(f), l) < 0)
				root = NULL;
			for (const struct json *e = json_child(f); e && root; e = json_next(e)) {
				struct tval *m = tmpl_map(ar, "nodefeaturerule.MatchedElement", empty);

				if (!m || tmpl_list_push(ar, l, m) < 0)
					root = NULL;
				for (const struct json *a = json_child(e); a && root; a = json_next(a))
					if (tmpl_map_put(ar, m, json_key(a), tmpl_str(ar, json_str(a))) < 0)
						root = NULL;
			}
		}
	}
	json_free(j);
	return root;
}

/* Runs src over data; the output (owned) or NULL with msg set. */
static char *run(const char *src, const char *data, char *msg)
{
	struct arena ar;
	struct tmpl *t;
	struct tval *d;
	struct buf out;
	char *res = NULL;

	arena_init(&ar);
	buf_init(&out, 0);
	buf_put(&out, "", 0);
	if (tmpl_parse(&ar, src, &t, msg) == 0) {
		if (!(d = data_of(&ar, data)))
			snprintf(msg, TMPL_MSG_SIZE, "bad data");
		else if (tmpl_exec(t, d, &out, msg) == 0)
			res = buf_take(&out, NULL);
	}
	buf_free(&out);
	arena_free(&ar);
	return res;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	struct buf b;
	char chunk[4096];
	size_t n;

	if (!f)
		return NULL;
	buf_init(&b, 0);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_put(&b, chunk, n);
	fclose(f);
	return buf_take(&b, NULL);
}

/* Splits the case file in place: sections end at the newline before the
 * next "=== " or "--- " line. */
static size_t load(char *text, struct tcase *c, size_t max)
{
	size_t n = 0, len = strlen(text);
	char **sect = NULL;

	if (len && text[len - 1] == '\n')
		text[len - 1] = 0; /* the last section ends there */

	for (char *p = text; *p && n <= max;) {
		char *nl = strchr(p, '\n'), *next = nl ? nl + 1 : p + strlen(p);
		int delim = strncmp(p, "=== ", 4) == 0 || strncmp(p, "--- ", 4) == 0;

		if (delim) {
			if (p > text)
				p[-1] = 0; /* ends the section before */
			if (nl)
				*nl = 0;
			if (p[0] == '=') {
				if (n == max)
					break;
				memset(&c[n], 0, sizeof(c[n]));
				c[n++].name = p + 4;
				sect = NULL;
			} else {
				struct tcase *k = &c[n - 1];

				sect = strcmp(p, "--- template") == 0 ? &k->tmpl
				       : strcmp(p, "--- data") == 0   ? &k->data
				       : strcmp(p, "--- want") == 0   ? &k->want
								      : NULL;
				if (strcmp(p, "--- error") == 0)
					k->want = NULL;
			}
			if (sect)
				*sect = next;
			if (!nl)
				break;
		}
		p = next;
	}
	return n;
}

static void test_table(void)
{
	static struct tcase c[400];
	const char *top = getenv("FB_TOP");
	char path[512], msg[TMPL_MSG_SIZE], name[300], *text;
	size_t n;

	snprintf(path, sizeof(path), "%s/tests/unit/data/tmpl/cases.txt", top ? top : ".");
	if (!(text = slurp(path))) {
		T_OK("cases.txt", 0, "cannot read %s", path);
		return;
	}
	n = load(text, c, sizeof(c) / sizeof(c[0]));
	T_OK("cases.txt: over 100 cases", n > 100, "%zu", n);
	for (size_t i = 0; i < n; i++) {
		char *got = run(c[i].tmpl ? c[i].tmpl : "", c[i].data ? c[i].data : "{}", msg);

		snprintf(name, sizeof(name), "go: %s", c[i].name);
		if (!c[i].want)
			T_OK(name, !got, "Go fails, we printed \"%s\"", got);
		else
			T_OK(name, got && strcmp(got, c[i].want) == 0, "got \"%s\" (%s), want \"%s\"", got ? got : "",
			     got ? "ok" : msg, c[i].want);
		free(got);
	}
	free(text);
}

/* a template src built by repeating unit n times between head and tail */
static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
	struct buf b;

	buf_init(&b, 0);
	buf_puts(&b, head);
	for (size_t i = 0; i < n; i++)
		buf_puts(&b, unit);
	buf_puts(&b, tail);
	return buf_take(&b, NULL);
}

static void expect_error(const char *name, const char *src, const char *want)
{
	char msg[TMPL_MSG_SIZE], *got = run(src, "{}", msg);

	T_OK(name, !got && strstr(msg, want), "got \"%.40s\", msg \"%s\"", got ? got : "", got ? "" : msg);
	free(got);
}

static void test_bounds(void)
{
	char *s;

	s = repeat("", "{{if 1}}", 200, "");
	expect_error("parse nesting capped", s, "nested too deeply");
	free(s);
	s = repeat("", "x", TMPL_SRC_MAX + 1, "");
	expect_error("source over 64 KiB", s, "longer than 64 KiB");
	free(s);
	expect_error("output over 1 MiB", "{{range $i, $_ := repeat 2000 \"x\" | splitList \"\"}}"
					   "{{repeat 1000 \"y\"}}{{end}}",
		     "output longer than 1 MiB");
	expect_error("function result over 1 MiB", "{{repeat 1048577 \"x\"}}", "larger than");
	expect_error("template recursion capped", "{{define \"r\"}}{{template \"r\" .}}{{end}}{{template \"r\" .}}",
		     "maximum template depth");
	/* 1000^3 iterations that print nothing: stopped, not hung */
	expect_error("steps capped",
		     "{{$l := repeat 999 \"x\" | splitList \"\"}}{{range $l}}{{range $l}}{{range $l}}{{end}}{{end}}{{end}}",
		     "evaluation steps");
	expect_error("unsupported function named", "{{ toYaml . }}", "function \"toYaml\" not defined");
	expect_error("env refused", "{{ env \"HOME\" }}", "function \"env\" not defined");
	/* where we refuse what Go takes: never a silently different result */
	expect_error("deviation: complex literal", "{{ 1i }}", "complex number 1i is not supported");
	expect_error("deviation: regexMatch of a bad pattern", "{{ regexMatch \"(\" \"x\" }}", "error calling regexMatch");
	expect_error("deviation: regexMatch of \\b", "{{ regexMatch \"\\\\bx\" \"x\" }}", "error calling regexMatch");
}

int main(void)
{
	t_suite = "tmpl";
	test_table();
	test_bounds();
	return t_done();
}
