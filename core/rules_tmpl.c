/* rules_tmpl: a rule's labelsTemplate and varsTemplate (upstream
 * pkg/apis/nfd/template) on top of core/tmpl (Go's text/template with
 * missingkey=error and the Sprig functions). The data a template sees is
 * upstream's matchedFeatures: a map of domain -> map of feature -> list of
 * matched elements, each element a map of strings ({Name} for a flag,
 * {Name, Value} for an attribute, an instance's attributes). */
#include "rules_int.h"

#include "err.h"
#include "tmpl.h"

#include <stdio.h>
#include <string.h>

#define DOM_TYPE "nodefeaturerule.domainMatchedFeatures"
#define LIST_TYPE "[]nodefeaturerule.MatchedElement"

struct tnode {
	struct tmpl *t;
};

int rules_tmpl_parse_(struct arena *ar, const char *src, const char *what, struct tnode **out, char *msg)
{
	char m[TMPL_MSG_SIZE];
	struct tnode *n = rules_zalloc_(ar, sizeof(*n));
	int rc;

	if (!n)
		return -FB_ENOMEM;
	if ((rc = tmpl_parse(ar, src, &n->t, m)) < 0)
		return rc == -FB_ENOMEM ? rc : rules_msgf_(msg, "%s: %s", what, m);
	*out = n;
	return 0;
}

/* The element as upstream's MatchedElement. */
static struct tval *element(struct arena *ar, const struct elem *e, const struct tval *empty)
{
	struct tval *m = tmpl_map(ar, "nodefeaturerule.MatchedElement", empty), *s;

	if (!m)
		return NULL;
	if (e->inst) {
		for (const struct json *c = json_child(e->inst); c; c = json_next(c)) {
			const char *v = json_str(c);

			if (!(s = tmpl_str(ar, v ? v : "")) || tmpl_map_put(ar, m, json_key(c), s) < 0)
				return NULL;
		}
		return m;
	}
	if (!e->name) /* an instance without attributes */
		return m;
	if (!(s = tmpl_str(ar, e->name)) || tmpl_map_put(ar, m, "Name", s) < 0)
		return NULL;
	if (e->value && (!(s = tmpl_str(ar, e->value)) || tmpl_map_put(ar, m, "Value", s) < 0))
		return NULL;
	return m;
}

static const struct tval *data(struct arena *ar, const struct md *md)
{
	/* the zero values index gives for a missing key, as Go's typed maps */
	struct tval *empty = tmpl_str(ar, ""), *nolist = tmpl_list(ar, LIST_TYPE);
	struct tval *nodom = tmpl_map(ar, DOM_TYPE, nolist);
	struct tval *root = empty && nolist && nodom ? tmpl_map(ar, "nodefeaturerule.matchedFeatures", nodom) : NULL;

	for (size_t k = 0; root && k < md->nl; k++) {
		const struct mlist *l = &md->l[k];
		struct tval *dom = NULL, *list = NULL, *e;

		if (!(dom = (struct tval *)tmpl_map_get(root, l->dom)) &&
		    (!(dom = tmpl_map(ar, DOM_TYPE, nolist)) ||
		     tmpl_map_put(ar, root, l->dom, dom) < 0))
			return NULL;
		if (!(list = (struct tval *)tmpl_map_get(dom, l->feat)) &&
		    (!(list = tmpl_list(ar, LIST_TYPE)) ||
		     tmpl_map_put(ar, dom, l->feat, list) < 0))
			return NULL;
		for (size_t i = 0; i < l->n; i++)
			if (!(e = element(ar, &md->e[l->first + i], empty)) || tmpl_list_push(ar, list, e) < 0)
				return NULL;
	}
	return root;
}

int rules_tmpl_exec_(const struct md *m, const struct tnode *t, const char *what, struct buf *out, char *msg)
{
	struct arena ar;
	const struct tval *d;
	char tm[TMPL_MSG_SIZE];
	size_t start = out->len;
	int rc = -FB_ENOMEM;

	arena_init(&ar);
	if ((d = data(&ar, m)))
		rc = tmpl_exec(t->t, d, out, tm);
	arena_free(&ar);
	/* the lines are C strings from here on: a NUL would cut one short */
	if (rc == 0 && out->p && memchr(out->p + start, 0, out->len - start))
		return rules_msgf_(msg, "%s: the output holds a NUL byte", what);
	if (rc == -FB_EINVAL)
		return rules_msgf_(msg, "%s: %s", what, tm);
	return rc;
}
