/* nodelabels_record: the bookkeeping (upstream nfd-master's
 * feature-labels, feature-annotations, extended-resources and taints
 * annotations, read and written as upstream does) and the record label that
 * says which of them nfd-master wrote (issue 16; the rules are in
 * nodelabels.c). */
#include "nodelabels_int.h"

#include "buf.h"
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nl_names_init_(struct nl_names *nm, const char *instance)
{
	const char *i = instance ? instance : "", *dot = i[0] ? "." : "";

	snprintf(nm->labels, sizeof(nm->labels), "%s%s" NL_NFD_NS "/feature-labels", i, dot);
	snprintf(nm->annotations, sizeof(nm->annotations), "%s%s" NL_NFD_NS "/feature-annotations", i, dot);
	snprintf(nm->ers, sizeof(nm->ers), "%s%s" NL_NFD_NS "/extended-resources", i, dot);
	snprintf(nm->master, sizeof(nm->master), "%s%s" NL_NFD_NS "/master.version", i, dot);
	snprintf(nm->worker, sizeof(nm->worker), "%s%s" NL_NFD_NS "/worker.version", i, dot);
	snprintf(nm->prefix, sizeof(nm->prefix), "%s%s" NL_NFD_NS "/", i, dot);
	snprintf(nm->record, sizeof(nm->record), "%s%s" NL_RECORD_NAME, i, dot);
}

/* Adds the names listed in a bookkeeping annotation ("a,b,example.com/c")
 * with the default namespace put back in front of those without one, as
 * upstream's stringToNsNames; "/name" (ours: an unprefixed name written
 * with DisableAutoPrefix) is the name alone. Empty entries are skipped. */
int nl_tracked_add_(struct strset *s, const char *list)
{
	const char *p = list;

	while (p && *p) {
		const char *end = strchrnul(p, ',');
		size_t len = (size_t)(end - p);
		int rc = 0;

		if (len > 1 && p[0] == '/' && !memchr(p + 1, '/', len - 1))
			rc = strset_add2(s, p + 1, len - 1, "", 0);
		else if (len && memchr(p, '/', len))
			rc = strset_add2(s, p, len, "", 0);
		else if (len)
			rc = strset_add2(s, NL_PREFIX, strlen(NL_PREFIX), p, len);
		if (rc < 0)
			return rc;
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* The bookkeeping annotation value of a set of full keys: sorted after the
 * default namespace is stripped (upstream sorts the stripped names), joined
 * with ","; an unprefixed key is listed "/key" (upstream would list it
 * "key", which reads back as feature.node.kubernetes.io/key: the
 * DisableAutoPrefix rules in nodelabels.c). Owned; "" for an empty set;
 * NULL on allocation failure. */
struct listed {
	const char *name; /* as listed, without the "/" of an unprefixed one */
	int bare;         /* unprefixed: listed "/name" */
};

static int listed_cmp(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;

	if (x->bare != y->bare) /* "/" sorts before any name's first character */
		return y->bare - x->bare;
	return strcmp(x->name, y->name);
}

char *nl_tracked_value_(const struct strset *s)
{
	struct listed *names = s->n ? malloc(s->n * sizeof(*names)) : NULL;
	size_t plen = strlen(NL_PREFIX);
	struct buf b;

	if (s->n && !names)
		return NULL;
	for (size_t i = 0; i < s->n; i++) {
		names[i].bare = !strchr(s->v[i], '/');
		names[i].name = strncmp(s->v[i], NL_PREFIX, plen) == 0 ? s->v[i] + plen : s->v[i];
	}
	if (s->n)
		qsort(names, s->n, sizeof(*names), listed_cmp);
	buf_init(&b, 0);
	for (size_t i = 0; i < s->n; i++) {
		if (i)
			buf_putc(&b, ',');
		if (names[i].bare)
			buf_putc(&b, '/');
		buf_puts(&b, names[i].name);
	}
	free(names);
	return buf_take(&b, NULL);
}

struct keep {
	const struct nl_policy *p;
	enum nl_kind k;
	int trusted;
};

static int keep_removable(void *ctx, const char *key)
{
	const struct keep *kp = ctx;

	return nl_removable_(kp->p, kp->k, key, kp->trusted);
}

void nl_tracked_keep_(const struct nl_policy *p, enum nl_kind k, struct strset *s, int trusted)
{
	struct keep kp = { p, k, trusted };

	strset_filter(s, keep_removable, &kp);
}

/* The tracking annotation's taints ("key=value:effect" or "key:effect",
 * comma-separated), as objects; malformed entries are skipped (they name
 * nothing NFD could remove), and so are keys in a namespace NFD refuses to
 * write. */
int nl_taints_parse_(const struct nl_policy *pol, const char *list, struct json **out)
{
	const char *p = list;

	if (!(*out = json_new_array()))
		return -FB_ENOMEM;
	while (p && *p) {
		const char *end = strchrnul(p, ','), *colon, *eq;
		char buf[600];

		snprintf(buf, sizeof(buf), "%.*s", (int)(end - p), p);
		p = *end ? end + 1 : end;
		colon = strrchr(buf, ':');
		if (!colon || colon == buf || !colon[1] || strchr(colon + 1, '='))
			continue;
		buf[colon - buf] = '\0';
		eq = strchr(buf, '=');
		if (eq)
			buf[eq - buf] = '\0';
		if (!nl_removable_(pol, NL_TAINT, buf, 1))
			continue;
		if (json_append_take(*out, nl_taint_new_(buf, eq ? eq + 1 : "", colon + 1)) < 0)
			return -FB_ENOMEM;
	}
	return 0;
}

int nl_taint_listed_(const struct json *list, const struct json *t)
{
	for (const struct json *c = json_child(list); c; c = json_next(c))
		if (nl_taint_same_slot_(c, t))
			return 1;
	return 0;
}

/* The tracking annotation value: wanted taints in order, then with
 * skip_removal the tracked ones still on the node. Owned, "" when none. */
char *nl_taints_value_(const struct json *want, const struct json *old, const struct json *cur,
		       int skip_removal)
{
	struct buf b;
	int first = 1;

	buf_init(&b, 0);
	for (int list = 0; list < 2; list++) {
		for (const struct json *t = json_child(list ? old : want); t; t = json_next(t)) {
			const char *k = json_get_str(t, "key", ""), *v = json_get_str(t, "value", ""),
				   *e = json_get_str(t, "effect", "");

			if (list && (!skip_removal || nl_taint_listed_(want, t) || !nl_taint_listed_(cur, t)))
				continue;
			buf_printf(&b, "%s%s%s%s:%s", first ? "" : ",", k, v[0] ? "=" : "", v, e);
			first = 0;
		}
	}
	return buf_take(&b, NULL);
}

/* ---- the record -------------------------------------------------------- */

#define NL_RECORD_HEX (NL_RECORD_SIZE - 4) /* "t-" + hex + NUL fits a label value */

/* Appends a length-prefixed field ("<len>:<bytes>"; NULL: "-") to the digest
 * input: no two sequences of fields give the same bytes. */
static void record_field(struct tls_part *parts, size_t *n, char lens[][24], const char *v)
{
	size_t i = *n / 2;

	snprintf(lens[i], sizeof(lens[i]), v ? "%zu:" : "-", v ? strlen(v) : (size_t)0);
	parts[(*n)++] = (struct tls_part){ lens[i], strlen(lens[i]) };
	parts[(*n)++] = (struct tls_part){ v ? v : "", v ? strlen(v) : 0 };
}

/* The record value for flag ('t': the taints annotation covered, 'n': not),
 * the node's uid and the values (NULL: absent) of the bookkeeping
 * annotations labels, annotations, extended resources and taints. */
int nl_record_make_(char flag, const char *uid, const char *const vals[4], char out[NL_RECORD_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	const char head[] = "featurebox nfd-master record 1", f[2] = { flag, '\0' };
	struct tls_part parts[14];
	char lens[7][24];
	unsigned char d[TLS_SHA256_SIZE];
	size_t n = 0;
	int rc;

	record_field(parts, &n, lens, head);
	record_field(parts, &n, lens, f);
	record_field(parts, &n, lens, uid);
	for (int i = 0; i < (flag == 't' ? 4 : 3); i++)
		record_field(parts, &n, lens, vals[i]);
	if ((rc = tls_sha256(parts, n, d)) < 0)
		return rc;
	out[0] = flag;
	out[1] = '-';
	for (int i = 0; i < NL_RECORD_HEX; i++)
		out[2 + i] = hex[(d[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	out[2 + NL_RECORD_HEX] = '\0';
	return 0;
}

/* The bookkeeping annotations' values in anns (NULL: absent). */
void nl_record_vals_(const struct nl_names *nm, const struct json *anns, const char *vals[4])
{
	vals[0] = json_get_str(anns, nm->labels, NULL);
	vals[1] = json_get_str(anns, nm->annotations, NULL);
	vals[2] = json_get_str(anns, nm->ers, NULL);
	vals[3] = json_get_str(anns, NL_TAINTS_ANNOTATION, NULL);
}

/* Whether the record label on the node vouches for its bookkeeping
 * annotations (*trusted), and for the taints annotation too (*taints). */
int nl_record_check_(const struct nl_names *nm, const struct json *md, const struct json *labels,
		     const struct json *anns, int *trusted, int *taints)
{
	const char *have = json_get_str(labels, nm->record, NULL), *vals[4];
	char want[NL_RECORD_SIZE];
	int rc;

	*trusted = *taints = 0;
	if (!have || strlen(have) != 2 + NL_RECORD_HEX || (have[0] != 't' && have[0] != 'n'))
		return 0;
	nl_record_vals_(nm, anns, vals);
	if ((rc = nl_record_make_(have[0], json_get_str(md, "uid", ""), vals, want)) < 0)
		return rc;
	*trusted = strcmp(have, want) == 0;
	*taints = *trusted && have[0] == 't';
	return 0;
}

int nl_record_value(const struct nl_policy *p, const struct json *node, char out[NL_RECORD_SIZE])
{
	const struct json *md = nl_object_or_null_(json_get(node, "metadata"));
	const char *vals[4];
	struct nl_names nm;

	if (!md)
		return -FB_EINVAL;
	nl_names_init_(&nm, p->instance);
	nl_record_vals_(&nm, nl_object_or_null_(json_get(md, "annotations")), vals);
	return nl_record_make_(p->enable_taints ? 't' : 'n', json_get_str(md, "uid", ""), vals, out);
}
