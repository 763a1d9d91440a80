/* rules against upstream's own rule-engine test tables: the inputs and the
 * expected results of node-feature-discovery's
 * pkg/apis/nfd/nodefeaturerule/expression_test.go and expression-api_test.go
 * (MatchMulti, MatchNamesMulti) and rule_test.go (TestTemplating),
 * transcribed as facts into
 * tests/unit/data/rules-upstream/<file>.jsonl, one case a line:
 *
 *   src, name   upstream's test file and function, and the case's name
 *   keys        flag names of the feature "t.f" (absent: no flags)
 *   values      its attributes (absent: none)
 *   instances   its instances' attributes (absent: none)
 *   expr        a matchExpressions set, or nexpr: a matchName expression
 *   match, err  upstream's result, and whether it is an error
 *   out         upstream's matched elements (a list of string maps), in order
 *   xfail       (optional) why featurebox cannot express or agree yet
 *
 * or, for rule_test.go, a whole rule: features (a NodeFeature's
 * spec.features), rule, and the expected labels and vars, or err.
 *
 * Each case is one rule on one feature set run through core/rules. The match
 * is a static label; the matched elements are read back by templates: one
 * prints every element's value of every key upstream's elements have
 * (index, "" when missing), and for each such key one template reads it as a
 * field, (index .t.f N).Key for each element N, which fails, as Go's
 * missingkey=error, exactly when that element lacks it: so a flag's {Name}
 * and an absent attribute's {Name, Value: ""} are told apart. While the
 * template engine has no fields of a pipeline, .Key is read over the whole
 * list instead ({{range .t.f}}{{.Key}}{{end}} fails when any element lacks
 * it) and the count says so. The last lines count the passes per
 * upstream test function. Needs FB_TOP (tests/run exports it; "." else). */
#include "t.h"

#include "../../core/features.h"
#include "../../core/json.h"
#include "../../core/rules.h"

#define LINE_MAX_ 8192
#define FUNCS_MAX 16

struct tally {
	char src[96];
	int pass, fail, xfail, per_list;
};

static struct tally tallies[FUNCS_MAX];
static size_t ntallies;

static struct tally *tally_of(const char *src)
{
	for (size_t i = 0; i < ntallies; i++)
		if (strcmp(tallies[i].src, src) == 0)
			return &tallies[i];
	if (ntallies == FUNCS_MAX) {
		fprintf(stderr, "too many upstream test functions\n");
		exit(2);
	}
	snprintf(tallies[ntallies].src, sizeof(tallies[ntallies].src), "%s", src);
	return &tallies[ntallies++];
}

static void count_err(void *ctx, const char *what, const char *rule, const char *msg)
{
	(void)what;
	(void)rule;
	(void)msg;
	(*(int *)ctx)++;
}

/* The case's feature set: flags, attributes and instances of "t.f". */
static struct json *features_of(const struct json *c)
{
	struct json *root = json_new_object(), *fl = json_new_object(), *at = json_new_object(),
		    *in = json_new_object();
	const struct json *keys = json_get(c, "keys"), *values = json_get(c, "values"),
			  *insts = json_get(c, "instances");

	if (keys) {
		struct json *el = json_new_object(), *set = json_new_object();

		for (const struct json *k = json_child(keys); k; k = json_next(k))
			json_set_take(el, json_str(k), json_new_object());
		json_set_take(set, "elements", el);
		json_set_take(fl, "t.f", set);
	}
	if (values) {
		struct json *set = json_new_object();

		json_set_take(set, "elements", json_dup(values));
		json_set_take(at, "t.f", set);
	}
	if (insts) {
		struct json *el = json_new_array(), *set = json_new_object();

		for (const struct json *i = json_child(insts); i; i = json_next(i)) {
			struct json *o = json_new_object();

			json_set_take(o, "attributes", json_dup(i));
			json_append_take(el, o);
		}
		json_set_take(set, "elements", el);
		json_set_take(in, "t.f", set);
	}
	json_set_take(root, "flags", fl);
	json_set_take(root, "attributes", at);
	json_set_take(root, "instances", in);
	return root;
}

/* Runs the case's rule, with labelsTemplate tmpl when not NULL. Returns 2
 * when the rule does not compile, 1 when it failed running, 0 else;
 * *labels gets its labels (owned). */
static int run(const struct json *c, const char *tmpl, struct json **labels)
{
	struct json *rule = json_new_object(), *lab = json_new_object(), *term = json_new_object(),
		    *mf = json_new_array(), *list = json_new_array();
	struct features f = { .root = features_of(c) };
	struct rules_out o;
	struct rules *r = NULL;
	int errs = 0, n;

	json_set_str(rule, "name", "r");
	json_set_str(lab, "m", "1");
	json_set_take(rule, "labels", lab);
	json_set_str(term, "feature", "t.f");
	if (json_get(c, "nexpr"))
		json_set_take(term, "matchName", json_dup(json_get(c, "nexpr")));
	else
		json_set_take(term, "matchExpressions", json_dup(json_get(c, "expr")));
	json_append_take(mf, term);
	json_set_take(rule, "matchFeatures", mf);
	if (tmpl)
		json_set_str(rule, "labelsTemplate", tmpl);
	json_append_take(list, rule);
	*labels = NULL;
	if (rules_compile(&r, list, RULES_NFR, "upstream") < 0 || rules_out_init(&o) < 0) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	n = rules_error(r, 0) ? 2 : rules_run(r, &f, &o, count_err, &errs);
	*labels = json_dup(o.labels);
	rules_out_free(&o);
	rules_free(r);
	json_free(list);
	features_free(&f);
	return n == 2 ? 2 : n != 0 || errs != 0;
}

/* The sorted names of every key the expected elements have. */
static size_t out_keys(const struct json *out, const char **k, size_t max)
{
	size_t n = 0;

	for (const struct json *e = json_child(out); e; e = json_next(e))
		for (const struct json *m = json_child(e); m; m = json_next(m)) {
			size_t i = 0;

			while (i < n && strcmp(k[i], json_key(m)) < 0)
				i++;
			if ((i < n && strcmp(k[i], json_key(m)) == 0) || n == max)
				continue;
			memmove(k + i + 1, k + i, (n - i) * sizeof(*k));
			k[i] = json_key(m);
			n++;
		}
	return n;
}

/* One case: 1 when featurebox agrees with upstream, else 0 with why set. */
static int check(const struct json *c, char *why, size_t size, int *per_list)
{
	const struct json *out = json_get(c, "out");
	int want_match = json_bool(json_get(c, "match")) == 1, want_err = json_bool(json_get(c, "err")) == 1;
	struct json *labels;
	const char *k[32];
	char tmpl[1024], want[1024];
	int err = run(c, NULL, &labels) != 0, match = json_get(labels, "m") != NULL;
	size_t nk, tl, wl;

	json_free(labels);
	if (err != want_err || (!want_err && match != want_match)) {
		snprintf(why, size, "match %d error %d, upstream: match %d error %d", match, err, want_match,
			 want_err);
		return 0;
	}
	if (!out || !want_match || want_err)
		return 1;
	/* the elements: every expected key's value, element by element */
	nk = out_keys(out, k, 32);
	tl = (size_t)snprintf(tmpl, sizeof(tmpl), "d={{range .t.f}}<");
	for (size_t i = 0; i < nk; i++)
		tl += (size_t)snprintf(tmpl + tl, sizeof(tmpl) - tl, "{{index . \"%s\"}}|", k[i]);
	snprintf(tmpl + tl, sizeof(tmpl) - tl, ">{{end}}");
	wl = 0;
	for (const struct json *e = json_child(out); e; e = json_next(e)) {
		wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "<");
		for (size_t i = 0; i < nk; i++)
			wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%s|", json_get_str(e, k[i], ""));
		wl += (size_t)snprintf(want + wl, sizeof(want) - wl, ">");
	}
	want[wl] = '\0';
	err = run(c, tmpl, &labels) != 0;
	if (err || strcmp(json_get_str(labels, "d", "(none)"), want) != 0) {
		snprintf(why, size, "elements %.250s (error %d), upstream %.250s", json_get_str(labels, "d", "(none)"),
			 err, want);
		json_free(labels);
		return 0;
	}
	json_free(labels);
	/* which elements have which keys: .Key fails where one lacks it; element
	 * by element with (index .t.f N).Key, else (a template engine without
	 * fields of a pipeline) over the whole list */
	for (size_t i = 0; i < nk; i++) {
		int lacks = 0;
		size_t n = 0;

		for (const struct json *e = json_child(out); e; e = json_next(e), n++) {
			snprintf(tmpl, sizeof(tmpl), "p={{(index .t.f %zu).%s}}", n, k[i]);
			err = run(c, tmpl, &labels);
			json_free(labels);
			if (err == 2)
				break;
			if (err != !json_get(e, k[i])) {
				snprintf(why, size, "element %zu: key %s %s, upstream: %s", n, k[i],
					 err ? "missing" : "present", err ? "present" : "missing");
				return 0;
			}
			lacks |= !json_get(e, k[i]);
		}
		if (err != 2)
			continue;
		(*per_list)++;
		for (const struct json *e = json_child(out); e; e = json_next(e))
			lacks |= !json_get(e, k[i]);
		snprintf(tmpl, sizeof(tmpl), "p={{range .t.f}}{{.%s}}{{end}}", k[i]);
		err = run(c, tmpl, &labels);
		json_free(labels);
		if (err != lacks) {
			snprintf(why, size, "key %s: %s, upstream: %s", k[i],
				 err ? "an element lacks it" : "every element has it",
				 lacks ? "an element lacks it" : "every element has it");
			return 0;
		}
	}
	return 1;
}

/* A rule_test.go case: the rule on the features, the labels and vars. */
static int check_rule(const struct json *c, char *why, size_t size)
{
	struct json *list = json_new_array();
	struct features f = { .root = json_dup(json_get(c, "features")) };
	struct rules_out o;
	struct rules *r = NULL;
	int errs = 0, n, want_err = json_bool(json_get(c, "err")) == 1, ok;
	char *l, *v;

	json_append_take(list, json_dup(json_get(c, "rule")));
	if (rules_compile(&r, list, RULES_NFR, "upstream") < 0 || rules_out_init(&o) < 0) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	n = rules_run(r, &f, &o, count_err, &errs);
	l = json_print(o.labels, NULL);
	v = json_print(o.vars, NULL);
	if ((n != 0 || errs != 0) != want_err)
		ok = 0;
	else
		ok = want_err || (json_equal(o.labels, json_get(c, "labels")) && json_equal(o.vars, json_get(c, "vars")));
	if (!ok)
		snprintf(why, size, "error %d labels %.200s vars %.100s%s", n != 0 || errs != 0, l, v,
			 rules_error(r, 0) ? rules_error(r, 0) : "");
	free(l);
	free(v);
	rules_out_free(&o);
	rules_free(r);
	json_free(list);
	features_free(&f);
	return ok;
}

static void run_file(const char *file)
{
	const char *top = getenv("FB_TOP");
	char path[512], line[LINE_MAX_], name[300], why[600];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/tests/unit/data/rules-upstream/%s", top ? top : ".", file);
	if (!(fp = fopen(path, "r"))) {
		T_OK(file, 0, "cannot open %s", path);
		return;
	}
	while (fgets(line, sizeof(line), fp)) {
		struct fb_errinfo ei;
		struct json *c;
		struct tally *t;
		const char *xfail;
		int ok, per_list = 0;

		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (!(c = json_parse(line, strlen(line), file, &ei))) {
			T_OK(file, 0, "bad line: %s: %s", ei.detail, line);
			continue;
		}
		t = tally_of(json_get_str(c, "src", "?"));
		xfail = json_get_str(c, "xfail", NULL);
		why[0] = '\0';
		ok = json_get(c, "rule") ? check_rule(c, why, sizeof(why)) : check(c, why, sizeof(why), &per_list);
		snprintf(name, sizeof(name), "%s: %s", t->src, json_get_str(c, "name", "?"));
		if (xfail && !ok) {
			t->xfail++;
			printf("XFAIL: %s: %s (%s; %s)\n", t_suite, name, xfail, why);
		} else {
			T_OK(name, ok && !xfail, "%s", xfail ? "marked xfail but agrees: drop the mark" : why);
			if (ok && !xfail)
				t->pass++;
			else
				t->fail++;
			if (ok && per_list)
				t->per_list++;
		}
		json_free(c);
	}
	fclose(fp);
}

int main(void)
{
	t_suite = "rules-upstream";
	run_file("expression.jsonl");
	run_file("expression-api.jsonl");
	run_file("rule.jsonl");
	for (size_t i = 0; i < ntallies; i++)
		printf("COUNT: %s: %s: %d of %d agree (%d with the element keys checked per list, not per "
		       "element), %d cannot be expressed yet, %d differ\n", t_suite, tallies[i].src, tallies[i].pass,
		       tallies[i].pass + tallies[i].fail + tallies[i].xfail, tallies[i].per_list, tallies[i].xfail,
		       tallies[i].fail);
	return t_done();
}
