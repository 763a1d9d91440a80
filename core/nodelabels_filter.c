/* nodelabels_filter: what NFD may write on a Node (upstream nfd-master's
 * filterFeatureLabels, filterExtendedResources, filterFeatureAnnotations,
 * filterTaints and getDynamicValue, pkg/apis/nfd/validate): the namespace
 * policy, Kubernetes' key and value rules, quantities, "@d.f.e" values, and
 * which tracked keys NFD may remove. The rules and the deviations are in
 * nodelabels.c. */
#include "nodelabels_int.h"

#include "labels.h"
#include "re.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NL_PROFILE_NS "profile.node.kubernetes.io"
#define NL_RESTRICTED_NS "node-restriction.kubernetes.io"
#define NL_ANNOTATION_VALUE_MAX 1024 /* FeatureAnnotationValueSizeLimit */
#define NL_REASON_MAX 512

/* ---- namespaces -------------------------------------------------------- */

static int has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static int is_ns(const char *ns, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(ns, want, len) == 0;
}

/* ns is base or one of its subdomains */
static int ns_within(const char *ns, size_t len, const char *base)
{
	size_t n = strlen(base);

	return is_ns(ns, len, base) || (len > n && ns[len - n - 1] == '.' && has_suffix(ns, len, base));
}

static int ns_kubernetes(const char *ns, size_t len)
{
	return ns_within(ns, len, "kubernetes.io");
}

/* ---- quantities -------------------------------------------------------- */

/* A resource.Quantity reduced to sign * m * 10^e (m without trailing
 * zeros), exact when it has at most 19 significant digits. */
struct qty {
	int neg, exact, integral;
	unsigned long long m;
	long e;
};

/* 0 when s has the syntax of Kubernetes' resource.ParseQuantity:
 * [+-] digits[.digits] | [+-] [digits].digits, then nothing, one of
 * n u m k M G T P E, one of Ki Mi Gi Ti Pi Ei, or e/E and a signed integer
 * exponent. -1 otherwise. */
static int qty_parse(const char *s, struct qty *q)
{
	static const char dec[] = "numkMGTPE";
	static const int dec_exp[] = { -9, -6, -3, 3, 6, 9, 12, 15, 18 };
	const char *ip, *fp = "", *suf;
	size_t ilen, flen = 0, first, last, nd, total;
	long e = 0;
	int bin = 0;

	memset(q, 0, sizeof(*q));
	if (*s == '+' || *s == '-')
		q->neg = *s++ == '-';
	for (ip = s; *s >= '0' && *s <= '9'; s++)
		;
	ilen = (size_t)(s - ip);
	if (*s == '.') {
		for (fp = ++s; *s >= '0' && *s <= '9'; s++)
			;
		flen = (size_t)(s - fp);
	}
	if (ilen + flen == 0)
		return -1;
	suf = s;
	if (!*suf) {
		/* no suffix */
	} else if (!suf[1] && strchr(dec, suf[0])) {
		e = dec_exp[strchr(dec, suf[0]) - dec];
	} else if (suf[1] == 'i' && !suf[2] && suf[0] && strchr("KMGTPE", suf[0])) {
		bin = (int)(strchr("KMGTPE", suf[0]) - "KMGTPE") + 1;
	} else if ((suf[0] == 'e' || suf[0] == 'E') && suf[1]) {
		const char *x = suf + 1;
		int neg = 0, n = 0;

		if (*x == '+' || *x == '-')
			neg = *x++ == '-';
		for (; *x >= '0' && *x <= '9' && n < 10; x++, n++)
			e = e * 10 + (*x - '0');
		if (n == 0 || n >= 10 || *x)
			return -1;
		if (neg)
			e = -e;
	} else {
		return -1;
	}

	/* the digits are int part then fraction: skip leading and trailing zeros */
	total = ilen + flen;
#define QDIGIT(i) ((i) < ilen ? ip[(i)] : fp[(i) - ilen])
	for (first = 0; first < total && QDIGIT(first) == '0'; first++)
		;
	if (first == total) {
		q->neg = 0;
		q->exact = q->integral = 1;
		return 0;
	}
	for (last = total; QDIGIT(last - 1) == '0'; last--)
		;
	e += (long)(total - last) - (long)flen;
	nd = last - first;
	q->exact = nd <= 19;
	if (q->exact) {
		for (size_t i = first; i < last; i++)
			q->m = q->m * 10 + (unsigned long long)(QDIGIT(i) - '0');
		for (int i = 0; i < 10 * bin && q->exact; i++) {
			if (q->m > ~0ULL / 2)
				q->exact = 0;
			q->m *= 2;
		}
		while (q->exact && q->m % 10 == 0) {
			q->m /= 10;
			e++;
		}
	}
#undef QDIGIT
	q->e = e;
	q->integral = e >= 0;
	return 0;
}

/* Whether two quantity strings hold the same value (the API server stores
 * its canonical form: "1000" comes back as "1k"). */
int nl_qty_same_(const char *a, const char *b)
{
	struct qty x, y;

	if (strcmp(a, b) == 0)
		return 1;
	if (qty_parse(a, &x) < 0 || qty_parse(b, &y) < 0 || !x.exact || !y.exact)
		return 0;
	return x.neg == y.neg && x.m == y.m && (x.m == 0 || x.e == y.e);
}

/* ---- filtering --------------------------------------------------------- */

static const char *const kind_name[] = { "label", "annotation", "extended resource", "taint" };

static void reject(const struct fb_log *lg, enum nl_kind k, const char *key, const char *value,
		   const char *why)
{
	char raw[1024], esc[1024];

	if (!lg)
		return;
	snprintf(raw, sizeof(raw), "%s=%s: %s", key ? key : "(no key)", value ? value : "", why);
	LOG_W(lg, "ignoring %s %s", kind_name[k], log_escape(raw, strlen(raw), esc, sizeof(esc)));
}

/* Label namespace policy (validate.Label + filterFeatureLabel): denied when
 * kubernetes.io-owned but not NFD's or when in deny_ns; extra_ns re-allows. */
static int label_ns_denied(const struct nl_policy *p, const char *ns, size_t len)
{
	int denied = ns_kubernetes(ns, len) && !ns_within(ns, len, NL_DEFAULT_NS) &&
		     !ns_within(ns, len, NL_PROFILE_NS);

	for (size_t i = 0; !denied && i < p->n_deny; i++) {
		const char *d = p->deny_ns[i];

		if (d[0] == '*') {
			while (*d == '*')
				d++;
			denied = has_suffix(ns, len, d);
		} else {
			denied = is_ns(ns, len, d);
		}
	}
	for (size_t i = 0; denied && i < p->n_extra; i++)
		if (is_ns(ns, len, p->extra_ns[i]))
			denied = 0;
	return denied;
}

/* Whether the namespace ns (nslen bytes of key) is one NFD refuses to write
 * a k in: kubernetes.io and its subdomains except NFD's own, and for labels
 * the deny/extra lists. */
static int ns_refused(const struct nl_policy *p, enum nl_kind k, const char *ns, size_t nslen)
{
	if (k == NL_LABEL)
		return label_ns_denied(p, ns, nslen);
	return ns_kubernetes(ns, nslen) && !ns_within(ns, nslen, NL_DEFAULT_NS);
}

/* Whether NFD may remove the k key named in a bookkeeping annotation.
 * Never in a namespace it refuses to write now. With trusted (the record
 * vouches for the annotation: this master wrote it) that is all. Otherwise
 * the annotation is a hint a node may have written, and the key must also
 * be one the node could remove itself (Kubernetes' NodeRestriction: nothing
 * in node-restriction.kubernetes.io, nothing else in kubernetes.io or k8s.io
 * but NFD's own subdomains) and pass the whitelist, as a new write would. */
int nl_removable_(const struct nl_policy *p, enum nl_kind k, const char *key, int trusted)
{
	const char *slash = strchr(key, '/');
	size_t nslen = slash ? (size_t)(slash - key) : 0;

	/* an unprefixed name (listed "/name", DisableAutoPrefix) only on the
	 * record: upstream's own lists never name one (a bare name there is in
	 * the default namespace), so only a node could have written it */
	if (!slash)
		return trusted && k != NL_TAINT && labels_valid_name(key, strlen(key)) &&
		       !ns_refused(p, k, key, 0);
	if (!labels_valid_key(key) || ns_refused(p, k, key, nslen))
		return 0;
	if (trusted)
		return 1;
	if (ns_within(key, nslen, NL_RESTRICTED_NS))
		return 0;
	if ((ns_kubernetes(key, nslen) || ns_within(key, nslen, "k8s.io")) && !ns_within(key, nslen, NL_DEFAULT_NS) &&
	    !(k == NL_LABEL && ns_within(key, nslen, NL_PROFILE_NS)))
		return 0;
	return k != NL_LABEL || !p->label_whitelist || re_matches(p->label_whitelist, slash + 1) > 0;
}

/* "@<domain>.<feature>.<element>" from the attribute features (borrowed), or
 * NULL with why filled. */
static const char *dynamic_value(const char *v, const struct features *feat, char *why, size_t size)
{
	const char *d1 = strchr(v + 1, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	const struct json *elems;
	const char *val;
	char feature[256];

	if (!d2) {
		snprintf(why, size, "value is not in the form of '@domain.feature.element'");
		return NULL;
	}
	snprintf(feature, sizeof(feature), "%.*s", (int)(d2 - v - 1), v + 1);
	elems = feat && (size_t)(d2 - v - 1) < sizeof(feature) ? features_attrs(feat, feature) : NULL;
	if (!elems) {
		snprintf(why, size, "feature %.*s not found", (int)(d2 - v - 1), v + 1);
		return NULL;
	}
	if (!(val = json_get_str(elems, d2 + 1, NULL))) {
		snprintf(why, size, "element %s not found on feature %s", d2 + 1, feature);
		return NULL;
	}
	return val;
}

/* Why key=value is not acceptable as a k (NULL: it is). */
static const char *check(const struct nl_policy *p, enum nl_kind k, const char *key, const char *value,
			 char *why, size_t size)
{
	const char *slash = strchr(key, '/');
	size_t nslen = slash ? (size_t)(slash - key) : 0;
	struct qty q;

	if (!slash && (k == NL_TAINT || p->unprefixed != NL_KEEP_UNPREFIXED))
		return "unprefixed keys are not allowed";
	if (!labels_valid_key(key))
		return "invalid key: a prefix (DNS subdomain) and a name of 1-63 characters "
		       "[A-Za-z0-9._-], alphanumeric at both ends";
	if (ns_refused(p, k, key, nslen)) {
		snprintf(why, size, "namespace %.*s is not allowed", (int)nslen, key);
		return why;
	}
	if (k == NL_LABEL && ns_within(key, nslen, NL_RESTRICTED_NS) && strcmp(slash + 1, "nfd-record") == 0)
		return "reserved for nfd-master's record";
	if (k == NL_LABEL) {
		if (!labels_valid_value(value, strlen(value)))
			return "invalid value: at most 63 characters [A-Za-z0-9._-], alphanumeric at both ends";
		if (p->label_whitelist && re_matches(p->label_whitelist, slash ? slash + 1 : key) <= 0)
			return "name does not match the label whitelist";
		return NULL;
	}
	if (k == NL_ANNOTATION && strlen(value) > NL_ANNOTATION_VALUE_MAX)
		return "value longer than 1024 bytes";
	if (k == NL_ER) {
		if (qty_parse(value, &q) < 0)
			return "value is not a quantity";
		if (q.neg)
			return "negative quantity (the API server refuses it)";
		if (!q.integral && slash && !strstr(key, "kubernetes.io/"))
			return "extended resources must be integers (the API server refuses fractions)";
	}
	return NULL;
}

#define NL_REJECTS_LOGGED 20

/* Filters one map of s in place. */
static int filter_map(const struct nl_policy *p, struct json **mapp, enum nl_kind k,
		      const struct features *feat, const struct fb_log *lg, struct nl_rejects *rj,
		      unsigned long *rej)
{
	struct json *in = *mapp, *out = NULL;
	size_t n = json_count(in), nkv = 0, nfull = 0, nrej = 0;
	struct kv *kv = n ? calloc(n, sizeof(*kv)) : NULL;
	char **full = n ? malloc(n * sizeof(*full)) : NULL; /* owned prefixed keys */
	char why[NL_REASON_MAX];
	struct nidx ix;
	int rc = -FB_ENOMEM;

	if (nl_nidx_members_(&ix, in) < 0 || (n && (!kv || !full)))
		goto out;
	for (const struct json *c = json_child(in); c; c = json_next(c)) {
		const char *key = json_key(c), *value = json_str(c), *bad = NULL;

		if (key && !strchr(key, '/') && p->unprefixed == NL_AUTO_PREFIX) {
			char *f = malloc(strlen(NL_PREFIX) + strlen(key) + 1);

			if (!f)
				goto out;
			strcpy(stpcpy(f, NL_PREFIX), key);
			if (nl_member_(&ix, f)) { /* the prefixed one wins */
				free(f);
				continue;
			}
			key = full[nfull++] = f;
		}
		if (!key)
			bad = "not a member of an object";
		else if (!value)
			bad = "value is not a string";
		else if (k != NL_ANNOTATION && value[0] == '@' &&
			 !(value = dynamic_value(json_str(c), feat, why, sizeof(why))))
			bad = why;
		if (!bad)
			bad = check(p, k, key, value, why, sizeof(why));
		if (bad) {
			if (nrej++ < NL_REJECTS_LOGGED)
				reject(lg, k, key, json_str(c), bad);
			if (rj->why)
				rj->why(rj->ctx, bad);
			(*rej)++;
		} else {
			kv[nkv].key = key;
			kv[nkv++].value = value;
		}
	}
	if (lg && nrej > NL_REJECTS_LOGGED)
		LOG_W(lg, "ignoring %zu more %ss (only the first %d are logged)", nrej - NL_REJECTS_LOGGED,
		      kind_name[k], NL_REJECTS_LOGGED);
	if (in && !(out = nl_object_of_(kv, nkv)))
		goto out;
	json_free(in);
	*mapp = out;
	rc = 0;
out:
	while (nfull)
		free(full[--nfull]);
	free(full);
	free(kv);
	nl_nidx_free_(&ix);
	return rc;
}

int nl_taint_same_slot_(const struct json *a, const struct json *b)
{
	return strcmp(json_get_str(a, "key", ""), json_get_str(b, "key", "")) == 0 &&
	       strcmp(json_get_str(a, "effect", ""), json_get_str(b, "effect", "")) == 0;
}

/* {"key","value" (only when not empty),"effect"}, owned. */
struct json *nl_taint_new_(const char *key, const char *value, const char *effect)
{
	struct json *t = json_new_object();

	if (!t || json_set_str(t, "key", key) < 0 || (value[0] && json_set_str(t, "value", value) < 0) ||
	    json_set_str(t, "effect", effect) < 0) {
		json_free(t);
		return NULL;
	}
	return t;
}

static int filter_taints(const struct nl_policy *p, struct json **tp, const struct fb_log *lg,
			 struct nl_rejects *rj)
{
	struct json *in = *tp, *ok, *out;
	char why[NL_REASON_MAX];

	if (!in)
		return 0;
	if (!p->enable_taints) {
		if (json_count(in) && lg)
			LOG_V(lg, 2, "%zu taint(s) ignored: taints are not enabled", json_count(in));
		json_free(in);
		*tp = NULL;
		return 0;
	}
	if (!(ok = json_new_array()))
		return -FB_ENOMEM;
	for (const struct json *t = json_child(in); t; t = json_next(t)) {
		const char *key = json_get_str(t, "key", NULL), *value = json_get_str(t, "value", ""),
			   *effect = json_get_str(t, "effect", ""), *bad;

		if (!key)
			bad = "no key";
		else if (!(bad = check(p, NL_TAINT, key, value, why, sizeof(why)))) {
			if (!labels_valid_value(value, strlen(value)))
				bad = "invalid value: at most 63 characters [A-Za-z0-9._-], alphanumeric at both ends";
			else if (!effect[0])
				bad = "empty taint effect";
			else if (strcmp(effect, "NoSchedule") && strcmp(effect, "PreferNoSchedule") &&
				 strcmp(effect, "NoExecute"))
				bad = "invalid taint effect: NoSchedule, PreferNoSchedule or NoExecute";
		}
		if (bad) {
			char kv[600];

			snprintf(kv, sizeof(kv), "%s:%s", value, effect);
			reject(lg, NL_TAINT, key, kv, bad);
			if (rj->why)
				rj->why(rj->ctx, bad);
			rj->taints++;
		} else if (json_append_take(ok, nl_taint_new_(key, value, effect)) < 0) {
			json_free(ok);
			return -FB_ENOMEM;
		}
	}
	/* one taint per key and effect, as the API server requires: the last wins */
	if (!(out = json_new_array())) {
		json_free(ok);
		return -FB_ENOMEM;
	}
	for (const struct json *t = json_child(ok); t; t = json_next(t)) {
		const struct json *later = json_next(t);

		while (later && !nl_taint_same_slot_(t, later))
			later = json_next(later);
		if (!later && json_append_take(out, json_dup(t)) < 0) {
			json_free(ok);
			json_free(out);
			return -FB_ENOMEM;
		}
	}
	json_free(ok);
	json_free(in);
	*tp = out;
	return 0;
}

int nl_filter(const struct nl_policy *p, struct nl_set *s, const struct features *feat,
	      const struct fb_log *lg, struct nl_rejects *rej)
{
	struct nl_rejects dummy = { 0 };
	int rc;

	if (!rej)
		rej = &dummy;
	if ((rc = filter_map(p, &s->labels, NL_LABEL, feat, lg, rej, &rej->labels)) < 0 ||
	    (rc = filter_map(p, &s->annotations, NL_ANNOTATION, feat, lg, rej, &rej->annotations)) < 0 ||
	    (rc = filter_map(p, &s->extended_resources, NL_ER, feat, lg, rej, &rej->extended_resources)) < 0 ||
	    (rc = filter_taints(p, &s->taints, lg, rej)) < 0)
		return rc;
	return 0;
}
