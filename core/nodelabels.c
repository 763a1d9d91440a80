/* nodelabels: NFD's share of a Node, mirroring upstream nfd-master
 * (pkg/nfd-master/nfd-master.go: filterFeatureLabels,
 * filterExtendedResources, filterFeatureAnnotations, filterTaints,
 * updateNodeObject, createPatches, createExtendedResourcePatches, setTaints,
 * getDynamicValue; pkg/apis/nfd/validate/validate.go), v0.17-v0.19.
 *
 * What upstream does and we do too: unprefixed label, annotation and
 * extended resource keys get feature.node.kubernetes.io/ (a prefixed
 * duplicate wins); "@d.f.e" values of labels and extended resources come from
 * attribute features; kubernetes.io and *.kubernetes.io are denied except
 * feature.node.kubernetes.io and profile.node.kubernetes.io and their
 * subdomains for labels, feature.node.kubernetes.io and its subdomains for
 * annotations, extended resources and taints; --deny-label-ns, its "*"
 * suffix wildcards, --extra-label-ns and the whitelist apply to labels only
 * (upstream's code, whatever older docs say); the bookkeeping annotations
 * [<instance>.]nfd.node.kubernetes.io/feature-labels, -annotations and
 * extended-resources are sorted comma lists with the default namespace
 * stripped, and only what they list (plus those three and the legacy
 * master.version/worker.version) is ever removed; the taint tracking
 * annotation nfd.node.kubernetes.io/taints is not instance-prefixed.
 *
 * Deliberate deviations (same final state as upstream where it works):
 * - Hostile nodes (issue 16). Upstream decides what to remove from the
 *   bookkeeping annotations, which the node itself may edit: a node that
 *   wrote an admin's taint or kubernetes.io/hostname there had them removed.
 *   Here the annotations are written exactly as upstream's (interop), and
 *   with p->record (nfd-master) the label [<instance>.]NL_RECORD_NAME goes
 *   in the same patch: "t-"/"n-" and 60 hex digits of SHA-256 over the
 *   Node's metadata.uid and the exact values of the feature-labels,
 *   -annotations, extended-resources and (with "t-") taints annotations as
 *   the patch leaves them. NodeRestriction forbids a node to set, change or
 *   remove labels in node-restriction.kubernetes.io, so the node can neither
 *   forge nor drop it; an edited annotation no longer matches, an older one
 *   cannot match the current digest, a recreated Node has a new uid. No
 *   secret is needed: what makes a match is that only the master wrote the
 *   label. Where the record matches, the annotations are trusted: what they
 *   list is NFD's, except keys in a namespace the policy refuses to write
 *   now (never removed; dropped from the list). Where it does not (a node
 *   edited them, upstream's master wrote them, nfd-worker --standalone which
 *   writes no record), they are hints: a key is NFD's only if the node could
 *   have removed it itself (nothing in node-restriction.kubernetes.io,
 *   nothing else in kubernetes.io/k8s.io but NFD's own subdomains) and the
 *   policy would write it (namespaces, whitelist). Taints are NFD's only on
 *   the record. Only what passes goes into the new annotations and record,
 *   so a forged entry is never laundered (with skip_removal too: the
 *   bookkeeping annotations are rewritten even then).
 * - Taints disabled: spec.taints and the taints annotation are not touched
 *   at all (upstream removes the taints NFD applied); the record keeps
 *   vouching for the annotation if it did. Prune the same.
 * - Taints: no strategic merge patch. When NFD's taints change, the metadata
 *   JSON Patch carries {"op":"test","path":"/metadata/resourceVersion"}
 *   followed by the whole new spec.taints list (foreign taints kept), next to
 *   the tracking annotation: one request instead of two, and a concurrent
 *   change fails the test (422), which nl_apply answers by reading the node
 *   again, as upstream's resourceVersion precondition (409) does.
 * - allowOverwrite false works as upstream documents it: a key on the node
 *   that NFD does not track is neither replaced nor taken over (not listed
 *   in the bookkeeping annotation); tracked keys are always updated.
 *   Upstream's createPatches has the test inverted (its docs note it).
 * - status.allocatable is replaced or removed only where it holds the
 *   resource: upstream removes it blindly, a 422 before the kubelet has
 *   copied capacity over, which blocks every later update of the node.
 * - Extended resource values are compared as quantities ("1k" == "1000");
 *   upstream compares AsInt64 with the string and repatches "1k" forever.
 *   Negative values, and fractional ones for real extended resources (no
 *   "kubernetes.io/" in the name), are rejected here because the API server
 *   rejects them, which upstream learns from a failing status PATCH that
 *   also holds back the node's labels.
 * - A label value is checked even when --extra-label-ns re-allowed its
 *   namespace (upstream skips the value check there; the API server then
 *   refuses the whole patch). Taint keys and values are checked as the API
 *   server does; of two taints with the same key and effect the last wins.
 * - With skip_removal the bookkeeping annotations keep listing the tracked
 *   keys that are still on the node, so nothing becomes unowned.
 * - Patch operations come in a fixed order (removes, then adds and replaces,
 *   each sorted by key) instead of Go's random map order.
 * - Prune removes the annotations with the prefix
 *   "[<instance>.]nfd.node.kubernetes.io/" (the taints one only with taints
 *   enabled) and the record label in the same JSON Patch as the rest, not
 *   through a second GET and a PUT of the whole node.
 * - Rejections are logged one by one up to NL_REJECTS_LOGGED per kind and
 *   call, then counted in one line: upstream logs every one, and one node's
 *   40,000 bad labels would be 40,000 lines on every update. */
#include "nodelabels.h"

#include "kube.h"
#include "labels.h"
#include "tls.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NL_PREFIX NL_DEFAULT_NS "/"
#define NL_PROFILE_NS "profile.node.kubernetes.io"
#define NL_RESTRICTED_NS "node-restriction.kubernetes.io"
#define NL_TAINTS_ANNOTATION NL_NFD_NS "/taints"
#define NL_ANNOTATION_VALUE_MAX 1024 /* FeatureAnnotationValueSizeLimit */
#define NL_ROUNDS 3
#define NL_REASON_MAX 512

void nl_policy_init(struct nl_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->instance = "";
	p->allow_overwrite = 1;
}

void nl_set_free(struct nl_set *s)
{
	json_free(s->labels);
	json_free(s->annotations);
	json_free(s->extended_resources);
	json_free(s->taints);
	memset(s, 0, sizeof(*s));
}

void nl_patches_free(struct nl_patches *pp)
{
	json_free(pp->status);
	json_free(pp->meta);
	pp->status = pp->meta = NULL;
}

/* ---- small helpers ----------------------------------------------------- */

static const struct json *object_or_null(const struct json *j)
{
	return json_type(j) == JSON_OBJECT ? j : NULL;
}

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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The member names of obj in byte order: an owned array of borrowed names
 * (NULL when there are none). Returns 0 or -FB_ENOMEM. */
static int sorted_keys(const struct json *obj, const char ***out, size_t *n)
{
	size_t i = 0;

	*out = NULL;
	*n = json_type(obj) == JSON_OBJECT ? json_count(obj) : 0;
	if (*n == 0)
		return 0;
	if (!(*out = malloc(*n * sizeof(**out))))
		return -FB_ENOMEM;
	for (const struct json *c = json_child(obj); c && i < *n; c = json_next(c))
		(*out)[i++] = json_key(c);
	*n = i;
	qsort(*out, *n, sizeof(**out), cmp_str);
	return 0;
}

/* Names hashed, for lookups in O(1): json_get walks an object's members
 * comparing every name, which with a few hundred labels sharing
 * "feature.node.kubernetes.io/" made the filter and the diff quadratic
 * (strcmp was most of nfd-master's own CPU time). A name maps to the first
 * thing added under it. Borrows the names and the things. */
struct nidx {
	struct nidx_slot {
		const char *name; /* NULL: empty */
		const void *val;
		uint32_t hash;
	} *slot;
	size_t mask; /* slots - 1 */
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Room for n names. Returns 0 or -FB_ENOMEM; nidx_free is safe either way. */
static int nidx_setup(struct nidx *x, size_t n)
{
	size_t size = 8;

	x->slot = NULL;
	x->mask = 0;
	if (n == 0)
		return 0;
	while (size < 2 * n) /* at most half full: probe runs stay short */
		size *= 2;
	if (!(x->slot = calloc(size, sizeof(*x->slot))))
		return -FB_ENOMEM;
	x->mask = size - 1;
	return 0;
}

static void nidx_free(struct nidx *x)
{
	free(x->slot);
	x->slot = NULL;
	x->mask = 0;
}

/* The slot holding name, or the empty one where it would go. */
static struct nidx_slot *nidx_slot(const struct nidx *x, const char *name, uint32_t hash)
{
	size_t i = hash & x->mask;

	while (x->slot[i].name && (x->slot[i].hash != hash || strcmp(x->slot[i].name, name) != 0))
		i = (i + 1) & x->mask;
	return &x->slot[i];
}

/* Adds name -> val, at most the n names of nidx_setup. Returns NULL, or
 * when name is there already what it maps to (left as it is). */
static const void *nidx_add(struct nidx *x, const char *name, const void *val)
{
	uint32_t hash = name_hash(name);
	struct nidx_slot *sl = nidx_slot(x, name, hash);

	if (sl->name)
		return sl->val;
	sl->name = name;
	sl->val = val;
	sl->hash = hash;
	return NULL;
}

static const void *nidx_get(const struct nidx *x, const char *name)
{
	const struct nidx_slot *sl;

	if (!x->slot)
		return NULL;
	sl = nidx_slot(x, name, name_hash(name));
	return sl->name ? sl->val : NULL;
}

/* Indexes the members of obj (anything but an object has none). Of members
 * with one name (parsed documents may repeat one) the first is found, as
 * json_get finds it. obj must not change while x is in use. Returns 0 or
 * -FB_ENOMEM. */
static int nidx_members(struct nidx *x, const struct json *obj)
{
	if (nidx_setup(x, json_type(obj) == JSON_OBJECT ? json_count(obj) : 0) < 0)
		return -FB_ENOMEM;
	for (const struct json *c = json_child(obj); x->slot && c; c = json_next(c))
		if (json_key(c))
			nidx_add(x, json_key(c), c);
	return 0;
}

/* The member of an nidx_members index named name, or NULL. Borrowed. */
static const struct json *member(const struct nidx *x, const char *name)
{
	return nidx_get(x, name);
}

/* A member to be: name and string value, both borrowed. */
struct kv {
	const char *key, *value;
	int dropped;
};

/* The object json_set_str would build from kv[0..n) one after the other,
 * without its walk over the members for each: a name given again keeps its
 * first place and takes the later value (kv is rewritten to say so). Owned,
 * or NULL on allocation failure. */
static struct json *object_of(struct kv *kv, size_t n)
{
	struct json *out = json_new_object();
	struct nidx x;

	if (!out || nidx_setup(&x, n) < 0) {
		json_free(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct kv *first = nidx_add(&x, kv[i].key, &kv[i]);

		if (first) {
			kv[first - kv].value = kv[i].value;
			kv[i].dropped = 1;
		}
	}
	nidx_free(&x);
	for (size_t i = 0; i < n; i++) {
		if (!kv[i].dropped && json_add_take(out, kv[i].key, json_new_string(kv[i].value)) < 0) {
			json_free(out);
			return NULL;
		}
	}
	return out;
}

/* A set of owned strings: added in any order, then ss_sort makes it sorted
 * and unique, which ss_has (binary search) needs. */
struct strset {
	char **v;
	size_t n, size;
};

static void ss_free(struct strset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* Adds a[0..alen) followed by b[0..blen). */
static int ss_add2(struct strset *s, const char *a, size_t alen, const char *b, size_t blen)
{
	char *d;

	if (s->n == s->size) {
		size_t size = s->size ? 2 * s->size : 16;
		char **v = realloc(s->v, size * sizeof(*v));

		if (!v)
			return -FB_ENOMEM;
		s->v = v;
		s->size = size;
	}
	if (!(d = malloc(alen + blen + 1)))
		return -FB_ENOMEM;
	memcpy(d, a, alen);
	memcpy(d + alen, b, blen);
	d[alen + blen] = '\0';
	s->v[s->n++] = d;
	return 0;
}

static int ss_add(struct strset *s, const char *str)
{
	return ss_add2(s, str, strlen(str), "", 0);
}

static void ss_sort(struct strset *s)
{
	size_t j = 0;

	if (s->n == 0)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_str);
	for (size_t i = 1; i < s->n; i++) {
		if (strcmp(s->v[i], s->v[j]) == 0)
			free(s->v[i]);
		else
			s->v[++j] = s->v[i];
	}
	s->n = j + 1;
}

static int ss_has(const struct strset *s, const char *str)
{
	return s->n && bsearch(&str, s->v, s->n, sizeof(*s->v), cmp_str) != NULL;
}

/* Adds the names listed in a bookkeeping annotation ("a,b,example.com/c")
 * with the default namespace put back in front of those without one, as
 * upstream's stringToNsNames. Empty entries are skipped. */
static int ss_add_tracked(struct strset *s, const char *list)
{
	const char *p = list;

	while (p && *p) {
		const char *end = strchrnul(p, ',');
		size_t len = (size_t)(end - p);
		int rc = 0;

		if (len && memchr(p, '/', len))
			rc = ss_add2(s, p, len, "", 0);
		else if (len)
			rc = ss_add2(s, NL_PREFIX, strlen(NL_PREFIX), p, len);
		if (rc < 0)
			return rc;
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* The bookkeeping annotation value of a set of full keys: sorted after the
 * default namespace is stripped (upstream sorts the stripped names), joined
 * with ",". Owned; "" for an empty set; NULL on allocation failure. */
static char *tracked_value(const struct strset *s)
{
	const char **names = s->n ? malloc(s->n * sizeof(*names)) : NULL;
	size_t len = 1, off = 0, plen = strlen(NL_PREFIX);
	char *out;

	if (s->n && !names)
		return NULL;
	for (size_t i = 0; i < s->n; i++) {
		names[i] = strncmp(s->v[i], NL_PREFIX, plen) == 0 ? s->v[i] + plen : s->v[i];
		len += strlen(names[i]) + 1;
	}
	if (s->n)
		qsort(names, s->n, sizeof(*names), cmp_str);
	if ((out = malloc(len))) {
		out[0] = '\0';
		for (size_t i = 0; i < s->n; i++) {
			size_t n = strlen(names[i]);

			if (i)
				out[off++] = ',';
			memcpy(out + off, names[i], n + 1);
			off += n;
		}
	}
	free(names);
	return out;
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
static int qty_same(const char *a, const char *b)
{
	struct qty x, y;

	if (strcmp(a, b) == 0)
		return 1;
	if (qty_parse(a, &x) < 0 || qty_parse(b, &y) < 0 || !x.exact || !y.exact)
		return 0;
	return x.neg == y.neg && x.m == y.m && (x.m == 0 || x.e == y.e);
}

/* ---- filtering --------------------------------------------------------- */

enum nl_kind { NL_LABEL, NL_ANNOTATION, NL_ER, NL_TAINT };
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
static int removable(const struct nl_policy *p, enum nl_kind k, const char *key, int trusted)
{
	const char *slash = strchr(key, '/');
	size_t nslen = slash ? (size_t)(slash - key) : 0;

	if (!slash || !labels_valid_key(key) || ns_refused(p, k, key, nslen))
		return 0;
	if (trusted)
		return 1;
	if (ns_within(key, nslen, NL_RESTRICTED_NS))
		return 0;
	if ((ns_kubernetes(key, nslen) || ns_within(key, nslen, "k8s.io")) && !ns_within(key, nslen, NL_DEFAULT_NS) &&
	    !(k == NL_LABEL && ns_within(key, nslen, NL_PROFILE_NS)))
		return 0;
	return k != NL_LABEL || !p->label_whitelist || regexec(p->label_whitelist, slash + 1, 0, NULL, 0) == 0;
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

	if (!slash)
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
		if (p->label_whitelist && regexec(p->label_whitelist, slash + 1, 0, NULL, 0) != 0)
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
		if (!q.integral && !strstr(key, "kubernetes.io/"))
			return "extended resources must be integers (the API server refuses fractions)";
	}
	return NULL;
}

#define NL_REJECTS_LOGGED 20

/* Filters one map of s in place. */
static int filter_map(const struct nl_policy *p, struct json **mapp, enum nl_kind k,
		      const struct features *feat, const struct fb_log *lg, unsigned long *rej)
{
	struct json *in = *mapp, *out = NULL;
	size_t n = json_count(in), nkv = 0, nfull = 0, nrej = 0;
	struct kv *kv = n ? calloc(n, sizeof(*kv)) : NULL;
	char **full = n ? malloc(n * sizeof(*full)) : NULL; /* owned prefixed keys */
	char why[NL_REASON_MAX];
	struct nidx ix;
	int rc = -FB_ENOMEM;

	if (nidx_members(&ix, in) < 0 || (n && (!kv || !full)))
		goto out;
	for (const struct json *c = json_child(in); c; c = json_next(c)) {
		const char *key = json_key(c), *value = json_str(c), *bad = NULL;

		if (key && !strchr(key, '/')) {
			char *f = malloc(strlen(NL_PREFIX) + strlen(key) + 1);

			if (!f)
				goto out;
			strcpy(stpcpy(f, NL_PREFIX), key);
			if (member(&ix, f)) { /* the prefixed one wins */
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
			(*rej)++;
		} else {
			kv[nkv].key = key;
			kv[nkv++].value = value;
		}
	}
	if (lg && nrej > NL_REJECTS_LOGGED)
		LOG_W(lg, "ignoring %zu more %ss (only the first %d are logged)", nrej - NL_REJECTS_LOGGED,
		      kind_name[k], NL_REJECTS_LOGGED);
	if (in && !(out = object_of(kv, nkv)))
		goto out;
	json_free(in);
	*mapp = out;
	rc = 0;
out:
	while (nfull)
		free(full[--nfull]);
	free(full);
	free(kv);
	nidx_free(&ix);
	return rc;
}

static int taint_same_slot(const struct json *a, const struct json *b)
{
	return strcmp(json_get_str(a, "key", ""), json_get_str(b, "key", "")) == 0 &&
	       strcmp(json_get_str(a, "effect", ""), json_get_str(b, "effect", "")) == 0;
}

/* {"key","value" (only when not empty),"effect"}, owned. */
static struct json *taint_new(const char *key, const char *value, const char *effect)
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
			 unsigned long *rej)
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
			(*rej)++;
		} else if (json_append_take(ok, taint_new(key, value, effect)) < 0) {
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

		while (later && !taint_same_slot(t, later))
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
	if ((rc = filter_map(p, &s->labels, NL_LABEL, feat, lg, &rej->labels)) < 0 ||
	    (rc = filter_map(p, &s->annotations, NL_ANNOTATION, feat, lg, &rej->annotations)) < 0 ||
	    (rc = filter_map(p, &s->extended_resources, NL_ER, feat, lg, &rej->extended_resources)) < 0 ||
	    (rc = filter_taints(p, &s->taints, lg, &rej->taints)) < 0)
		return rc;
	return 0;
}

/* ---- diff -------------------------------------------------------------- */

/* Appends {"op","path": base["/" key escaped],"value"} to ops; value (may be
 * NULL) is taken. */
static int op_take(struct json *ops, const char *op, const char *base, const char *key, struct json *value)
{
	size_t blen = strlen(base), klen = key ? strlen(key) : 0;
	char *path = malloc(blen + 2 * klen + 3);
	struct json *o = json_new_object();

	if (!path || !o || json_set_str(o, "op", op) < 0)
		goto nomem;
	memcpy(path, base, blen + 1);
	if (key) {
		path[blen] = '/';
		kube_json_pointer_escape(key, path + blen + 1, 2 * klen + 2);
	}
	if (json_set_str(o, "path", path) < 0)
		goto nomem;
	free(path);
	path = NULL;
	if (value && json_set_take(o, "value", value) < 0) {
		value = NULL;
		goto nomem;
	}
	return json_append_take(ops, o);
nomem:
	free(path);
	json_free(o);
	json_free(value);
	return -FB_ENOMEM;
}

static int op_str(struct json *ops, const char *op, const char *base, const char *key, const char *value)
{
	struct json *v = json_new_string(value);

	return v ? op_take(ops, op, base, key, v) : -FB_ENOMEM;
}

/* The members of desired that NFD may write, owned: with allow_overwrite
 * off, a key on the node (in have) that NFD does not track is left to its
 * owner. Returns 0 or -FB_ENOMEM. */
static int writable(const struct json *desired, const struct nidx *have, const struct strset *tracked,
		    int allow_overwrite, struct json **out)
{
	size_t n = json_count(desired), nkv = 0;
	struct kv *kv = n ? calloc(n, sizeof(*kv)) : NULL;

	*out = NULL;
	if (n && !kv)
		return -FB_ENOMEM;
	for (const struct json *c = json_child(desired); c; c = json_next(c)) {
		if (!json_str(c) || !json_key(c))
			continue;
		if (!allow_overwrite && member(have, json_key(c)) && !ss_has(tracked, json_key(c)))
			continue;
		kv[nkv].key = json_key(c);
		kv[nkv++].value = json_str(c);
	}
	*out = object_of(kv, nkv);
	free(kv);
	return *out ? 0 : -FB_ENOMEM;
}

/* What the new bookkeeping annotation lists: the keys written, and with
 * skip_removal also the tracked keys still on the node (not removed now, so
 * still NFD's to remove later). */
static int new_tracked(struct strset *out, const struct json *want, const struct strset *old,
		       const struct nidx *have, int skip_removal)
{
	for (const struct json *c = json_child(want); c; c = json_next(c))
		if (ss_add(out, json_key(c)) < 0)
			return -FB_ENOMEM;
	for (size_t i = 0; skip_removal && i < old->n; i++)
		if (member(have, old->v[i]) && ss_add(out, old->v[i]) < 0)
			return -FB_ENOMEM;
	ss_sort(out);
	return 0;
}

/* Ops that make the string map at base (have: the node's, NULL when it
 * has none; hx its index) hold want: remove keys in rm that are there and
 * not wanted, add the missing, replace the different, in key order. A
 * missing map is added whole: adding below a missing parent fails. */
static int map_ops(struct json *ops, const char *base, const struct json *have, const struct nidx *hx,
		   const struct json *want, const struct strset *rm, int skip_removal)
{
	const char **keys = NULL;
	struct nidx wx;
	size_t n;
	int rc = 0;

	if (!have) {
		struct json *all;

		if (json_count(want) == 0)
			return 0;
		if (!(all = json_dup(want)))
			return -FB_ENOMEM;
		json_sort_keys(all);
		return op_take(ops, "add", base, NULL, all);
	}
	if (nidx_members(&wx, want) < 0 || sorted_keys(want, &keys, &n) < 0) {
		nidx_free(&wx);
		return -FB_ENOMEM;
	}
	for (size_t i = 0; !skip_removal && i < rm->n && rc == 0; i++)
		if (member(hx, rm->v[i]) && !member(&wx, rm->v[i]))
			rc = op_take(ops, "remove", base, rm->v[i], NULL);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *w = json_str(member(&wx, keys[i]));
		const struct json *h = member(hx, keys[i]);

		if (!w)
			w = "";
		if (!h)
			rc = op_str(ops, "add", base, keys[i], w);
		else if (!json_str(h) || strcmp(json_str(h), w) != 0)
			rc = op_str(ops, "replace", base, keys[i], w);
	}
	free(keys);
	nidx_free(&wx);
	return rc;
}

/* The extended resource ops for the status subresource (cx, ax: the
 * indexes of cap and alloc). */
static int er_ops(struct json *ops, const struct json *status, const struct json *cap,
		  const struct nidx *cx, const struct nidx *ax, const struct json *want,
		  const struct strset *old, int skip_removal)
{
	struct json *adds = NULL;
	const char **keys = NULL;
	struct nidx wx;
	size_t n;
	int rc = 0;

	if (nidx_members(&wx, want) < 0 || sorted_keys(want, &keys, &n) < 0) {
		nidx_free(&wx);
		return -FB_ENOMEM;
	}
	for (size_t i = 0; !skip_removal && i < old->n && rc == 0; i++) {
		if (!member(cx, old->v[i]) || member(&wx, old->v[i]))
			continue;
		if ((rc = op_take(ops, "remove", "/status/capacity", old->v[i], NULL)) == 0 &&
		    member(ax, old->v[i]))
			rc = op_take(ops, "remove", "/status/allocatable", old->v[i], NULL);
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *w = json_str(member(&wx, keys[i]));
		const struct json *h = member(cx, keys[i]);

		if (!w)
			w = "";
		if (h) {
			if (json_str(h) && qty_same(json_str(h), w))
				continue;
			rc = op_str(ops, "replace", "/status/capacity", keys[i], w);
			/* the kubelet copies capacity to allocatable; where it has, keep them equal */
			if (rc == 0 && member(ax, keys[i]))
				rc = op_str(ops, "replace", "/status/allocatable", keys[i], w);
		} else if (cap) {
			rc = op_str(ops, "add", "/status/capacity", keys[i], w);
		} else if (!adds && !(adds = json_new_object())) {
			rc = -FB_ENOMEM;
		} else {
			/* want's names are distinct (writable made it) */
			rc = json_add_take(adds, keys[i], json_new_string(w));
		}
	}
	free(keys);
	nidx_free(&wx);
	if (rc == 0 && adds) {
		if (status) {
			rc = op_take(ops, "add", "/status/capacity", NULL, adds);
		} else {
			struct json *st = json_new_object();

			if (!st || json_set_take(st, "capacity", adds) < 0) {
				json_free(st);
				return -FB_ENOMEM;
			}
			rc = op_take(ops, "add", "/status", NULL, st);
		}
		adds = NULL;
	}
	json_free(adds);
	return rc;
}

/* The tracking annotation's taints ("key=value:effect" or "key:effect",
 * comma-separated), as objects; malformed entries are skipped (they name
 * nothing NFD could remove), and so are keys in a namespace NFD refuses to
 * write. */
static int parse_taints(const struct nl_policy *pol, const char *list, struct json **out)
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
		if (!removable(pol, NL_TAINT, buf, 1))
			continue;
		if (json_append_take(*out, taint_new(buf, eq ? eq + 1 : "", colon + 1)) < 0)
			return -FB_ENOMEM;
	}
	return 0;
}

static int taint_listed(const struct json *list, const struct json *t)
{
	for (const struct json *c = json_child(list); c; c = json_next(c))
		if (taint_same_slot(c, t))
			return 1;
	return 0;
}

/* Whether the node's taint t is exactly NFD's w (no timeAdded or other
 * field that would make upstream's DeepEqual differ). */
static int taint_equal(const struct json *t, const struct json *w)
{
	if (!taint_same_slot(t, w) || strcmp(json_get_str(t, "value", ""), json_get_str(w, "value", "")) != 0)
		return 0;
	for (const struct json *c = json_child(t); c; c = json_next(c)) {
		const char *k = json_key(c);

		if (strcmp(k, "key") && strcmp(k, "value") && strcmp(k, "effect") && json_type(c) != JSON_NULL)
			return 0;
	}
	return 1;
}

/* The node's new spec.taints (owned; *changed when it differs from cur):
 * cur minus the tracked taints no longer wanted, wanted ones updated in
 * place or appended, as upstream's DeleteTaint/AddOrUpdateTaint do. */
static int taints_result(const struct json *cur, const struct json *old, const struct json *want,
			 int skip_removal, struct json **out, int *changed)
{
	*changed = 0;
	if (!(*out = json_new_array()))
		return -FB_ENOMEM;
	for (const struct json *c = json_child(cur); c; c = json_next(c)) {
		const struct json *w = json_child(want);

		while (w && !taint_same_slot(c, w))
			w = json_next(w);
		if (!w && !skip_removal && taint_listed(old, c)) {
			*changed = 1;
			continue;
		}
		if (w && !taint_equal(c, w))
			*changed = 1;
		if (json_append_take(*out, json_dup(w && !taint_equal(c, w) ? w : c)) < 0)
			return -FB_ENOMEM;
	}
	for (const struct json *w = json_child(want); w; w = json_next(w)) {
		if (taint_listed(cur, w))
			continue;
		*changed = 1;
		if (json_append_take(*out, json_dup(w)) < 0)
			return -FB_ENOMEM;
	}
	return 0;
}

/* The tracking annotation value: wanted taints in order, then with
 * skip_removal the tracked ones still on the node. Owned, "" when none. */
static char *taints_value(const struct json *want, const struct json *old, const struct json *cur,
			  int skip_removal)
{
	size_t len = 1, off = 0;
	char *out;
	int pass;

	for (pass = 0, out = NULL; pass < 2; pass++) {
		int first = 1;

		if (pass == 1 && !(out = malloc(len)))
			return NULL;
		for (int list = 0; list < 2; list++) {
			for (const struct json *t = json_child(list ? old : want); t; t = json_next(t)) {
				const char *k = json_get_str(t, "key", ""), *v = json_get_str(t, "value", ""),
					   *e = json_get_str(t, "effect", "");

				if (list && (!skip_removal || taint_listed(want, t) || !taint_listed(cur, t)))
					continue;
				if (pass == 0) {
					len += strlen(k) + strlen(v) + strlen(e) + 3;
					continue;
				}
				off += (size_t)sprintf(out + off, "%s%s%s%s:%s", first ? "" : ",", k, v[0] ? "=" : "", v, e);
				first = 0;
			}
		}
	}
	out[off] = '\0';
	return out;
}

struct nl_names {
	char labels[512], annotations[512], ers[512], master[512], worker[512], prefix[512], record[512];
};

static void names_init(struct nl_names *nm, const char *instance)
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

/* Drops from s the keys NFD may not remove (removable()). */
static void tracked_keep(const struct nl_policy *p, enum nl_kind k, struct strset *s, int trusted)
{
	size_t j = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (removable(p, k, s->v[i], trusted))
			s->v[j++] = s->v[i];
		else
			free(s->v[i]);
	}
	s->n = j;
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
static int record_make(char flag, const char *uid, const char *const vals[4], char out[NL_RECORD_SIZE])
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
static void record_vals(const struct nl_names *nm, const struct json *anns, const char *vals[4])
{
	vals[0] = json_get_str(anns, nm->labels, NULL);
	vals[1] = json_get_str(anns, nm->annotations, NULL);
	vals[2] = json_get_str(anns, nm->ers, NULL);
	vals[3] = json_get_str(anns, NL_TAINTS_ANNOTATION, NULL);
}

/* Whether the record label on the node vouches for its bookkeeping
 * annotations (*trusted), and for the taints annotation too (*taints). */
static int record_check(const struct nl_names *nm, const struct json *md, const struct json *labels,
			const struct json *anns, int *trusted, int *taints)
{
	const char *have = json_get_str(labels, nm->record, NULL), *vals[4];
	char want[NL_RECORD_SIZE];
	int rc;

	*trusted = *taints = 0;
	if (!have || strlen(have) != 2 + NL_RECORD_HEX || (have[0] != 't' && have[0] != 'n'))
		return 0;
	record_vals(nm, anns, vals);
	if ((rc = record_make(have[0], json_get_str(md, "uid", ""), vals, want)) < 0)
		return rc;
	*trusted = strcmp(have, want) == 0;
	*taints = *trusted && have[0] == 't';
	return 0;
}

int nl_record_value(const struct nl_policy *p, const struct json *node, char out[NL_RECORD_SIZE])
{
	const struct json *md = object_or_null(json_get(node, "metadata"));
	const char *vals[4];
	struct nl_names nm;

	if (!md)
		return -FB_EINVAL;
	names_init(&nm, p->instance);
	record_vals(&nm, object_or_null(json_get(md, "annotations")), vals);
	return record_make(p->enable_taints ? 't' : 'n', json_get_str(md, "uid", ""), vals, out);
}

/* Ops that set the record label at base (the node's labels: have, NULL when
 * there are none, and none will be added) to value, or remove it (NULL). */
static int record_ops(struct json *ops, const struct json *have, int labels_added, const char *name,
		      const char *value)
{
	const char *cur = json_get_str(have, name, NULL);
	struct json *all;

	if (!value)
		return cur ? op_take(ops, "remove", "/metadata/labels", name, NULL) : 0;
	if (cur && strcmp(cur, value) == 0)
		return 0;
	if (have || labels_added)
		return op_str(ops, cur ? "replace" : "add", "/metadata/labels", name, value);
	if (!(all = json_new_object()) || json_set_str(all, name, value) < 0) {
		json_free(all);
		return -FB_ENOMEM;
	}
	return op_take(ops, "add", "/metadata/labels", NULL, all);
}

/* Sets annotation key to value in obj unless value is empty (then the
 * annotation is omitted, as upstream does). value is freed. */
static int set_nonempty(struct json *obj, const char *key, char *value)
{
	int rc = 0;

	if (!value)
		return -FB_ENOMEM;
	if (value[0])
		rc = json_set_str(obj, key, value);
	free(value);
	return rc;
}

static int diff(const struct nl_policy *p, const struct json *node, const struct nl_set *s,
		int skip_removal, int prune, struct nl_patches *out)
{
	const struct json *md = object_or_null(json_get(node, "metadata"));
	const struct json *labels = object_or_null(json_get(md, "labels"));
	const struct json *anns = object_or_null(json_get(md, "annotations"));
	const struct json *status = object_or_null(json_get(node, "status"));
	const struct json *cap = object_or_null(json_get(status, "capacity"));
	const struct json *alloc = object_or_null(json_get(status, "allocatable"));
	const struct json *spec = object_or_null(json_get(node, "spec"));
	const struct json *cur_taints = json_get(spec, "taints");
	const char *rv = json_get_str(md, "resourceVersion", NULL);
	struct strset old_labels = { 0 }, old_fanns = { 0 }, old_ers = { 0 }, rm_anns = { 0 };
	struct strset new_labels = { 0 }, new_fanns = { 0 }, new_ers = { 0 };
	struct json *want_labels = NULL, *want_fanns = NULL, *want_ers = NULL, *want_anns = NULL;
	struct json *old_taints = NULL, *taints = NULL, *meta = NULL, *st = NULL;
	const struct json *want_taints = s && p->enable_taints ? s->taints : NULL;
	struct nidx labels_ix = { 0 }, anns_ix = { 0 }, cap_ix = { 0 }, alloc_ix = { 0 };
	struct nl_names nm;
	const char *vals[4];
	char record[NL_RECORD_SIZE];
	int rc = -FB_ENOMEM, taints_changed = 0, trusted = 0, taints_trusted = 0, labels_added;

	out->status = out->meta = NULL;
	if (!md)
		return -FB_EINVAL;
	if (nidx_members(&labels_ix, labels) < 0 || nidx_members(&anns_ix, anns) < 0 ||
	    nidx_members(&cap_ix, cap) < 0 || nidx_members(&alloc_ix, alloc) < 0)
		goto out;
	if (json_type(cur_taints) != JSON_ARRAY)
		cur_taints = NULL;
	names_init(&nm, p->instance);
	if (p->record && (rc = record_check(&nm, md, labels, anns, &trusted, &taints_trusted)) < 0)
		goto out;
	rc = -FB_ENOMEM;

	/* what NFD owns now: what the annotations name and NFD may remove
	 * (removable(); taints only by the record, and only when enabled) */
	if (ss_add_tracked(&old_labels, json_get_str(anns, nm.labels, NULL)) < 0 ||
	    ss_add_tracked(&old_fanns, json_get_str(anns, nm.annotations, NULL)) < 0 ||
	    ss_add_tracked(&old_ers, json_get_str(anns, nm.ers, NULL)) < 0 ||
	    parse_taints(p, p->enable_taints && taints_trusted ? json_get_str(anns, NL_TAINTS_ANNOTATION, NULL) : NULL,
			 &old_taints) < 0)
		goto out;
	tracked_keep(p, NL_LABEL, &old_labels, trusted);
	tracked_keep(p, NL_ANNOTATION, &old_fanns, trusted);
	tracked_keep(p, NL_ER, &old_ers, trusted);
	/* the annotations removed when not wanted: the bookkeeping itself, always
	 * (with skip_removal too: it must say what the record vouches for), and
	 * the tracked feature annotations */
	for (size_t i = 0; !skip_removal && i < old_fanns.n; i++)
		if (ss_add(&rm_anns, old_fanns.v[i]) < 0)
			goto out;
	if (ss_add(&rm_anns, nm.labels) < 0 || ss_add(&rm_anns, nm.annotations) < 0 ||
	    ss_add(&rm_anns, nm.ers) < 0 || ss_add(&rm_anns, nm.master) < 0 || ss_add(&rm_anns, nm.worker) < 0 ||
	    (p->enable_taints && ss_add(&rm_anns, NL_TAINTS_ANNOTATION) < 0))
		goto out;
	for (const struct json *a = json_child(anns); prune && a; a = json_next(a))
		if (strncmp(json_key(a), nm.prefix, strlen(nm.prefix)) == 0 &&
		    (p->enable_taints || strcmp(json_key(a), NL_TAINTS_ANNOTATION) != 0) &&
		    ss_add(&rm_anns, json_key(a)) < 0)
			goto out;
	ss_sort(&old_labels);
	ss_sort(&old_fanns);
	ss_sort(&old_ers);
	ss_sort(&rm_anns);

	/* what it will own */
	if (writable(s ? s->labels : NULL, &labels_ix, &old_labels, p->allow_overwrite, &want_labels) < 0 ||
	    writable(s ? s->annotations : NULL, &anns_ix, &old_fanns, p->allow_overwrite, &want_fanns) < 0 ||
	    writable(s ? s->extended_resources : NULL, &cap_ix, &old_ers, p->allow_overwrite, &want_ers) < 0 ||
	    new_tracked(&new_labels, want_labels, &old_labels, &labels_ix, skip_removal) < 0 ||
	    new_tracked(&new_fanns, want_fanns, &old_fanns, &anns_ix, skip_removal) < 0 ||
	    new_tracked(&new_ers, want_ers, &old_ers, &cap_ix, skip_removal) < 0 ||
	    !(want_anns = json_dup(want_fanns)) ||
	    set_nonempty(want_anns, nm.labels, tracked_value(&new_labels)) < 0 ||
	    set_nonempty(want_anns, nm.ers, tracked_value(&new_ers)) < 0 ||
	    set_nonempty(want_anns, nm.annotations, tracked_value(&new_fanns)) < 0)
		goto out;
	if (p->enable_taints &&
	    (set_nonempty(want_anns, NL_TAINTS_ANNOTATION,
			  taints_value(want_taints, old_taints, cur_taints, skip_removal)) < 0 ||
	     taints_result(cur_taints, old_taints, want_taints, skip_removal, &taints, &taints_changed) < 0))
		goto out;
	/* the record of the bookkeeping annotations as they will be: each is
	 * in want_anns or removed (rm_anns); the taints one when enabled, and
	 * while disabled (left as it is) only if the record vouched for it */
	record_vals(&nm, want_anns, vals);
	if (!p->enable_taints)
		vals[3] = json_get_str(anns, NL_TAINTS_ANNOTATION, NULL);
	if (p->record && !prune &&
	    (rc = record_make(p->enable_taints || taints_trusted ? 't' : 'n', json_get_str(md, "uid", ""), vals,
			      record)) < 0)
		goto out;
	rc = -FB_ENOMEM;

	if (!(meta = json_new_array()) || !(st = json_new_array()))
		goto out;
	if (taints_changed && rv && op_str(meta, "test", "/metadata/resourceVersion", NULL, rv) < 0)
		goto out;
	labels_added = !labels && json_count(want_labels) > 0;
	if ((rc = map_ops(meta, "/metadata/labels", labels, &labels_ix, want_labels, &old_labels,
			  skip_removal)) < 0 ||
	    (p->record && (rc = record_ops(meta, labels, labels_added, nm.record, prune ? NULL : record)) < 0) ||
	    (rc = map_ops(meta, "/metadata/annotations", anns, &anns_ix, want_anns, &rm_anns, 0)) < 0 ||
	    (rc = er_ops(st, status, cap, &cap_ix, &alloc_ix, want_ers, &old_ers, skip_removal)) < 0)
		goto out;
	rc = -FB_ENOMEM;
	if (taints_changed) {
		struct json *t = taints;

		taints = NULL;
		if (!spec) {
			struct json *sp = json_new_object();

			if (!sp || json_set_take(sp, "taints", t) < 0) {
				json_free(sp);
				goto out;
			}
			if (op_take(meta, "add", "/spec", NULL, sp) < 0)
				goto out;
		} else if (!cur_taints) {
			if (op_take(meta, "add", "/spec/taints", NULL, t) < 0)
				goto out;
		} else if (json_count(t) == 0) {
			json_free(t);
			if (op_take(meta, "remove", "/spec/taints", NULL, NULL) < 0)
				goto out;
		} else if (op_take(meta, "replace", "/spec/taints", NULL, t) < 0) {
			goto out;
		}
	}
	if (json_count(meta)) {
		out->meta = meta;
		meta = NULL;
	}
	if (json_count(st)) {
		out->status = st;
		st = NULL;
	}
	rc = 0;
out:
	nidx_free(&labels_ix);
	nidx_free(&anns_ix);
	nidx_free(&cap_ix);
	nidx_free(&alloc_ix);
	ss_free(&old_labels);
	ss_free(&old_fanns);
	ss_free(&old_ers);
	ss_free(&rm_anns);
	ss_free(&new_labels);
	ss_free(&new_fanns);
	ss_free(&new_ers);
	json_free(want_labels);
	json_free(want_fanns);
	json_free(want_ers);
	json_free(want_anns);
	json_free(old_taints);
	json_free(taints);
	json_free(meta);
	json_free(st);
	return rc;
}

int nl_diff(const struct nl_policy *p, const struct json *node, const struct nl_set *s,
	    int skip_removal, struct nl_patches *out)
{
	return diff(p, node, s, skip_removal, 0, out);
}

int nl_prune_diff(const struct nl_policy *p, const struct json *node, struct nl_patches *out)
{
	return diff(p, node, NULL, 0, 1, out);
}

/* ---- apply ------------------------------------------------------------- */

static int api_error(const char *node, const char *method, const char *path, const struct kube_result *r,
		     struct fb_errinfo *ei)
{
	char what[700], detail[256];

	snprintf(what, sizeof(what), "node %s: %s %s", node, method, path);
	snprintf(detail, sizeof(detail), "HTTP %d %s%s%.120s", r->status, r->reason,
		 r->message[0] ? ": " : "", r->message);
	return fb_errinfo_set(ei, FB_EIO, 0, what, detail);
}

/* PATCHes one JSON Patch; r gets the answer. */
static int send_patch(struct kube *k, const char *path, const struct json *ops, const struct fb_log *lg,
		      const char *node, struct kube_result *r, struct fb_errinfo *ei)
{
	size_t len;
	char *body = json_print(ops, &len);
	int rc;

	if (!body)
		return fb_errinfo_set(ei, FB_ENOMEM, 0, node, NULL);
	if (lg)
		LOG_V(lg, 3, "node %s: PATCH %s %s", node, path, body);
	kube_result_free(r);
	rc = kube_request(k, "PATCH", path, "application/json-patch+json", body, len, r, ei);
	free(body);
	return rc;
}

int nl_apply(struct kube *k, const char *node, const struct nl_policy *p, const struct nl_set *s,
	     int skip_removal, const struct fb_log *lg, struct nl_result *res, struct fb_errinfo *ei)
{
	struct kube_result r = { 0 };
	struct nl_patches pp = { 0 };
	char path[300], spath[310], last[200] = "";
	int rc = 0;

	res->changed = res->requests = 0;
	if (!labels_valid_prefix(node, strlen(node)))
		return fb_errinfo_set(ei, FB_EINVAL, 0, node, "not a node name");
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	snprintf(spath, sizeof(spath), "%s/status", path);
	for (int round = 0; round < NL_ROUNDS; round++) {
		const char *target = NULL;
		const struct json *ops = NULL;

		kube_result_free(&r);
		res->requests++;
		if ((rc = kube_request(k, "GET", path, NULL, NULL, 0, &r, ei)) < 0)
			goto out;
		if (r.status == 404) {
			rc = fb_errinfo_set(ei, FB_ENOENT, 0, node, "no such node");
			goto out;
		}
		if (r.status / 100 != 2) {
			rc = api_error(node, "GET", path, &r, ei);
			goto out;
		}
		nl_patches_free(&pp);
		rc = s ? nl_diff(p, r.body, s, skip_removal, &pp) : nl_prune_diff(p, r.body, &pp);
		if (rc < 0) {
			rc = fb_errinfo_set(ei, -rc, 0, node, rc == -FB_EINVAL ? "not a Node object" : NULL);
			goto out;
		}
		for (int i = 0; i < 2; i++) {
			target = i == 0 ? spath : path;
			ops = i == 0 ? pp.status : pp.meta;
			if (!ops)
				continue;
			if (p->may_write && !p->may_write(p->may_write_ctx)) {
				rc = fb_errinfo_set(ei, FB_EAGAIN, 0, node, "not allowed to write now");
				goto out;
			}
			res->requests++;
			if ((rc = send_patch(k, target, ops, lg, node, &r, ei)) < 0)
				goto out;
			if (r.status == 409 || r.status == 422)
				break;
			if (r.status / 100 != 2) {
				rc = api_error(node, "PATCH", target, &r, ei);
				goto out;
			}
			res->changed = 1;
			ops = NULL;
			if (i == 0 && pp.meta && json_get(r.body, "metadata")) {
				/* the status PATCH gave the node a new resourceVersion,
				 * which the taints' test must carry: diff the node it
				 * answered with (ignoring status, done) rather than patch
				 * the old test value, which could hide a concurrent change */
				nl_patches_free(&pp);
				rc = s ? nl_diff(p, r.body, s, skip_removal, &pp) : nl_prune_diff(p, r.body, &pp);
				if (rc < 0) {
					rc = fb_errinfo_set(ei, -rc, 0, node, NULL);
					goto out;
				}
			}
		}
		if (!ops)
			goto out; /* everything sent, or nothing to send */
		/* changed under us (a conflict, or a failed resourceVersion test or
		 * a path that went away): read the node again */
		snprintf(last, sizeof(last), "HTTP %d %s%s%.120s", r.status, r.reason, r.message[0] ? ": " : "",
			 r.message);
		if (lg)
			LOG_V(lg, 1, "node %s: PATCH %s: %s; reading the node again", node, target, last);
	}
	{
		char what[400];

		snprintf(what, sizeof(what), "node %s: changed under us %d times", node, NL_ROUNDS);
		rc = fb_errinfo_set(ei, FB_EIO, 0, what, last);
	}
out:
	kube_result_free(&r);
	nl_patches_free(&pp);
	return rc;
}
