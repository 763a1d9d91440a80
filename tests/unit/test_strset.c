/* strset: adds in any order, sort makes it sorted and unique, has before
 * and after the sort, del and filter keep the order, concatenated adds,
 * and the comparator. */
#include "t.h"

#include "../../core/strset.h"

/* The set joined with ",", for comparing with a table. */
static const char *joined(const struct strset *s)
{
	static char out[512];
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < s->n && off < sizeof(out); i++)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%s", i ? "," : "", s->v[i]);
	return out;
}

static int not_b(void *ctx, const char *str)
{
	(void)ctx;
	return str[0] != 'b';
}

static const struct {
	const char *name;
	const char *add[8]; /* NULL-terminated */
	const char *sorted;
	const char *has, *hasnt;
} cases[] = {
	{ "empty", { NULL }, "", NULL, "a" },
	{ "one", { "a", NULL }, "a", "a", "" },
	{ "repeats go", { "b", "a", "b", "a", "b", NULL }, "a,b", "b", "c" },
	{ "byte order", { "b", "B", "a/x", "a", "", NULL }, ",B,a,a/x,b", "", "A" },
	{ "prefixes", { "feature.node.kubernetes.io/z", "feature.node.kubernetes.io/a",
			"example.com/a", NULL },
	  "example.com/a,feature.node.kubernetes.io/a,feature.node.kubernetes.io/z",
	  "feature.node.kubernetes.io/a", "feature.node.kubernetes.io/" },
};

int main(void)
{
	t_suite = "strset";
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct strset s;
		char name[160];
		int rc = 0;

		strset_init(&s);
		for (size_t i = 0; cases[c].add[i]; i++)
			rc |= strset_add(&s, cases[c].add[i]);
		snprintf(name, sizeof(name), "%s: adds", cases[c].name);
		T_INT(name, rc, 0);
		if (cases[c].has) {
			snprintf(name, sizeof(name), "%s: has before the sort", cases[c].name);
			T_INT(name, strset_has(&s, cases[c].has), 1);
		}
		snprintf(name, sizeof(name), "%s: hasn't before the sort", cases[c].name);
		T_INT(name, strset_has(&s, cases[c].hasnt), 0);
		strset_sort(&s);
		snprintf(name, sizeof(name), "%s: sorted and unique", cases[c].name);
		T_STR(name, joined(&s), cases[c].sorted);
		if (cases[c].has) {
			snprintf(name, sizeof(name), "%s: has after the sort", cases[c].name);
			T_INT(name, strset_has(&s, cases[c].has), 1);
		}
		snprintf(name, sizeof(name), "%s: hasn't after the sort", cases[c].name);
		T_INT(name, strset_has(&s, cases[c].hasnt), 0);
		strset_free(&s);
	}

	{
		struct strset s = { 0 };
		const char *ns = "feature.node.kubernetes.io/";

		T_INT("add2: concatenates", strset_add2(&s, ns, strlen(ns), "gpu,x", 3), 0);
		T_INT("add2: an empty part", strset_add2(&s, "", 0, "b1", 2), 0);
		strset_add(&s, "c");
		strset_add(&s, "b2");
		strset_add(&s, "c");
		T_STR("add2: in insertion order", joined(&s), "feature.node.kubernetes.io/gpu,b1,c,b2,c");
		strset_del(&s, "c");
		T_STR("del: every copy, order kept", joined(&s), "feature.node.kubernetes.io/gpu,b1,b2");
		strset_del(&s, "nothing");
		T_INT("del: of a missing one is nothing", s.n, 3);
		strset_filter(&s, not_b, NULL);
		T_STR("filter: keeps the rest in order", joined(&s), "feature.node.kubernetes.io/gpu");
		strset_add(&s, "a");
		strset_sort(&s);
		T_INT("has: sorted again after an add", strset_has(&s, "a"), 1);
		strset_add(&s, "0");
		T_INT("has: an add since the sort is found (scan)", strset_has(&s, "0"), 1);
		strset_free(&s);
		T_INT("free: empty after", s.n + s.size + (s.v != NULL), 0);
		strset_free(&s);
		T_INT("free: twice is safe", s.n, 0);
	}
	{
		struct strset s;

		strset_init(&s);
		for (int i = 0; i < 1000; i++) {
			char k[16];

			snprintf(k, sizeof(k), "k%03d", (i * 7) % 500);
			if (strset_add(&s, k) < 0)
				break;
		}
		strset_sort(&s);
		T_INT("grows: 1000 adds, 500 distinct", s.n, 500);
		T_STR("grows: first", s.v[0], "k000");
		T_STR("grows: last", s.v[499], "k499");
		T_INT("grows: binary search", strset_has(&s, "k250") && !strset_has(&s, "k500"), 1);
		strset_free(&s);
	}
	{
		const char *names[] = { "b", "a,b", "", "a" };

		qsort(names, 4, sizeof(*names), strset_cmp);
		T_OK("cmp: sorts an array of names", !strcmp(names[0], "") && !strcmp(names[1], "a") &&
			     !strcmp(names[2], "a,b") && !strcmp(names[3], "b"),
		     "got %s|%s|%s|%s", names[0], names[1], names[2], names[3]);
	}
	return t_done();
}
