/* rules_match: matchFeatures evaluated against a feature set (upstream
 * pkg/apis/nfd/nodefeaturerule expression.go and rule.go's matchers), and the
 * numbers and versions the comparison operators read. See rules.c. */
#include "rules_int.h"

#include "err.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char *const rules_op_names_[OP_COUNT] = { "", "In", "NotIn", "InRegexp", "Exists", "DoesNotExist",
						"Gt", "Ge", "Lt", "Le", "GtLt", "GeLe", "IsTrue", "IsFalse" };

/* ---- numbers and versions ----------------------------------------------- */

/* strconv.Atoi: optional sign, decimal digits, 64-bit range. */
int rules_parse_int_(const char *s, long long *out)
{
	unsigned long long v = 0, lim;
	int neg = *s == '-';

	s += *s == '-' || *s == '+';
	lim = neg ? (unsigned long long)1 << 63 : ((unsigned long long)1 << 63) - 1;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) || v > (lim - (unsigned)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
	}
	*out = neg ? (long long)(0 - v) : (long long)v;
	return 0;
}

/* Masterminds semver's loose form: [v]N[.N[.N]][-pre][+build]; the
 * pre-release and build parts are ignored in comparisons, as upstream. */
int rules_parse_version_(const char *s, struct num *n)
{
	memset(n, 0, sizeof(*n));
	s += *s == 'v';
	for (int i = 0; i < 3; i++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		for (; isdigit((unsigned char)*s); s++) {
			if (n->v[i] > (0x7fffffffffffffffLL - 9) / 10)
				return -1;
			n->v[i] = n->v[i] * 10 + (*s - '0');
		}
		if (*s != '.')
			break;
		if (i == 2)
			return -1;
		s++;
	}
	for (int part = 0; *s && part < 2; part++) {
		if (*s != (part ? '+' : '-'))
			continue;
		if (!isalnum((unsigned char)s[1]) && s[1] != '-' && s[1] != '.')
			return -1;
		for (s++; isalnum((unsigned char)*s) || *s == '-' || *s == '.'; s++)
			;
	}
	return *s ? -1 : 0;
}

int rules_num_cmp_(const struct num *a, const struct num *b)
{
	for (int i = 0; i < 3; i++)
		if (a->v[i] != b->v[i])
			return a->v[i] < b->v[i] ? -1 : 1;
	return 0;
}

/* ---- matching ------------------------------------------------------------ */

static void md_add(struct md *m, const char *name, const char *value, const struct json *inst)
{
	if (ARRAY_GROW(m->e, m->esize, m->ne + 1) < 0) {
		m->oom = 1;
		return;
	}
	m->e[m->ne++] = (struct elem){ name, value, inst };
}

static int elem_cmp(const void *a, const void *b)
{
	const struct elem *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->value != NULL) - (y->value != NULL);
}

/* 1 when e holds for an element that exists (valid) with value (NULL for a
 * flag), 0 when not, < 0 (message in msg) for a value Gt... cannot compare. */
static int eval(const struct expr *e, int valid, const char *value, char *msg)
{
	struct num n;
	int c0, c1;

	switch (e->op) {
	case OP_ANY:
		return 1;
	case OP_EXISTS:
		return valid;
	case OP_DNE:
		return !valid;
	}
	if (!valid || !value)
		return 0;
	switch (e->op) {
	case OP_IN:
	case OP_NOTIN:
		for (size_t i = 0; i < e->n; i++)
			if (strcmp(value, e->val[i]) == 0)
				return e->op == OP_IN;
		return e->op == OP_NOTIN;
	case OP_INREGEXP:
		for (size_t i = 0; i < e->n; i++)
			if (re_matches(e->re[i], value) > 0)
				return 1;
		return 0;
	case OP_ISTRUE:
		return strcmp(value, "true") == 0;
	case OP_ISFALSE:
		return strcmp(value, "false") == 0;
	}
	memset(&n, 0, sizeof(n));
	if (e->version ? rules_parse_version_(value, &n) < 0 : rules_parse_int_(value, &n.v[0]) < 0)
		return rules_msgf_(msg, "%s %s: value \"%.40s\" of %s is not %s",
				  e->key ? "matchExpressions" : "matchName", rules_op_names_[e->op], value,
				  e->key ? e->key : "a name", e->version ? "a version" : "an integer");
	c0 = rules_num_cmp_(&n, &e->num[0]);
	c1 = rules_num_cmp_(&n, &e->num[1]);
	switch (e->op) {
	case OP_GT:
		return c0 > 0;
	case OP_GE:
		return c0 >= 0;
	case OP_LT:
		return c0 < 0;
	case OP_LE:
		return c0 <= 0;
	case OP_GTLT:
		return c0 > 0 && c1 < 0;
	default:
		return c0 >= 0 && c1 <= 0;
	}
}

/* The instance's attributes object (NULL when it has none). */
static const struct json *inst_attrs(const struct json *inst)
{
	const struct json *a = json_get(inst, "attributes");

	return json_type(a) == JSON_OBJECT ? a : NULL;
}

/* upstream MatchMulti: flags and attributes as a union (DoesNotExist must
 * hold in both), then instances, each against the whole set. */
static int match_multi(const struct term *t, const struct json *fl, const struct json *at,
		       const struct json *in, struct md *m, char *msg)
{
	size_t mark = m ? m->ne : 0;
	int kv = fl || at, im = 0;

	for (size_t i = 0; kv && i < t->nex; i++) {
		const struct expr *e = &t->ex[i];
		const struct json *v;
		int mk = 0, mv = 0;

		if (fl) {
			if ((mk = eval(e, json_get(fl, e->key) != NULL, NULL, msg)) < 0)
				return mk;
			if (mk && m)
				md_add(m, e->key, NULL, NULL);
			else if (!mk && e->op == OP_DNE)
				kv = 0;
		}
		if (at && kv) {
			v = json_get(at, e->key);
			if ((mv = eval(e, v != NULL, json_str(v), msg)) < 0)
				return mv;
			if (mv && m)
				md_add(m, e->key, json_str(v) ? json_str(v) : "", NULL); /* upstream: values[n] */
			else if (!mv && e->op == OP_DNE)
				kv = 0;
		}
		kv = kv && (mk || mv);
	}
	if (m && !kv)
		m->ne = mark;
	else if (m && m->ne > mark)
		qsort(m->e + mark, m->ne - mark, sizeof(*m->e), elem_cmp);
	if (kv && !m && !t->fallible)
		return 1;
	for (const struct json *ins = json_child(in); ins; ins = json_next(ins)) {
		const struct json *a = inst_attrs(ins);
		int all = 1;

		for (size_t i = 0; all && i < t->nex; i++) {
			const struct json *v = json_get(a, t->ex[i].key);

			if ((all = eval(&t->ex[i], v != NULL, json_str(v), msg)) < 0)
				return all;
		}
		if (all && !m && !t->fallible)
			return 1;
		if (all && m)
			md_add(m, NULL, NULL, a);
		im |= all;
	}
	return kv || im;
}

/* upstream MatchNamesMulti: the one expression against element names. */
static int match_names(const struct expr *e, const struct json *fl, const struct json *at,
		       const struct json *in, struct md *m, char *msg)
{
	size_t mark = m ? m->ne : 0;
	int any = 0, r, fallible = e->op >= OP_GT && e->op <= OP_GELE;

	for (int pass = 0; pass < 2; pass++) {
		for (const struct json *c = json_child(pass ? at : fl); c; c = json_next(c)) {
			if ((r = eval(e, 1, json_key(c), msg)) < 0)
				return r;
			if (r && !m && !fallible)
				return 1;
			if (r && m)
				md_add(m, json_key(c), pass ? json_str(c) : NULL, NULL);
			any |= r;
		}
	}
	if (m && m->ne > mark)
		qsort(m->e + mark, m->ne - mark, sizeof(*m->e), elem_cmp);
	for (const struct json *ins = json_child(in); ins; ins = json_next(ins)) {
		const struct json *a = inst_attrs(ins);
		int hit = 0;

		for (const struct json *c = json_child(a); c && (!hit || fallible); c = json_next(c)) {
			if ((r = eval(e, 1, json_key(c), msg)) < 0)
				return r;
			hit |= r;
		}
		if (hit && !m && !fallible)
			return 1;
		if (hit && m)
			md_add(m, NULL, NULL, a);
		any |= hit;
	}
	return any;
}

/* The elements of a feature of one kind, NULL when absent; *exists is set
 * when the feature is there at all. */
static const struct json *elements(const struct features *f, const char *kind, const char *feature,
				   enum json_type want, int *exists)
{
	const struct json *set = json_get(json_get(f->root, kind), feature), *el;

	if (!set)
		return NULL;
	*exists = 1;
	el = json_get(set, "elements");
	return json_type(el) == want ? el : NULL;
}

static int match_term(const struct term *t, const struct features *f, struct md *m, char *msg)
{
	int exists = 0, r = 1;
	const struct json *fl = elements(f, "flags", t->feature, JSON_OBJECT, &exists);
	const struct json *at = elements(f, "attributes", t->feature, JSON_OBJECT, &exists);
	const struct json *in = elements(f, "instances", t->feature, JSON_ARRAY, &exists);

	if (!exists)
		return 0;
	if (m) {
		if (ARRAY_GROW(m->l, m->lsize, m->nl + 1) < 0)
			return -FB_ENOMEM;
		m->l[m->nl] = (struct mlist){ t->dom, t->name, m->ne, 0 };
	}
	if (t->has_ex)
		r = match_multi(t, fl, at, in, m, msg);
	if (r > 0 && t->mname)
		r = match_names(t->mname, fl, at, in, m, msg);
	if (m && m->oom)
		return -FB_ENOMEM;
	if (m && r > 0) {
		m->l[m->nl].n = m->ne - m->l[m->nl].first;
		m->nl++;
	}
	return r;
}

int rules_match_all_(const struct matcher *mt, const struct features *f, struct md *m, char *msg)
{
	int r = 1;

	if (m)
		m->ne = m->nl = 0;
	for (size_t i = 0; r > 0 && i < mt->n; i++)
		r = match_term(&mt->t[i], f, m, msg);
	return r;
}
