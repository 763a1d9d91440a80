/* features: the NodeFeature spec.features tree, built on the json.h builders.
 *
 * Maps are json objects and keep insertion order while they are built (cJSON
 * has no keyed index); features_sort puts them in Go's order once, at the
 * end, by printing the tree sorted and parsing it back, which costs
 * O(n log n) where re-inserting member by member through json_set_take
 * (a linear lookup per member) would cost O(n^2) on kernel.config's
 * thousands of keys. */
#include "features.h"

#include "buf.h"
#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_key[] = {
	[FEATURES_FLAGS] = "flags",
	[FEATURES_ATTRIBUTES] = "attributes",
	[FEATURES_INSTANCES] = "instances",
};

int features_init(struct features *f)
{
	struct json *root = json_new_object();

	f->root = NULL;
	if (!root)
		return -FB_ENOMEM;
	for (size_t i = 0; i < sizeof(kind_key) / sizeof(kind_key[0]); i++) {
		if (json_set_take(root, kind_key[i], json_new_object()) < 0) {
			json_free(root);
			return -FB_ENOMEM;
		}
	}
	f->root = root;
	return 0;
}

void features_free(struct features *f)
{
	json_free(f->root);
	f->root = NULL;
}

/* The feature's "elements" node, created (empty) when missing. Borrowed. */
static struct json *elements(struct features *f, enum features_kind kind, const char *feature)
{
	struct json *map = json_get(f->root, kind_key[kind]), *set, *el;

	if (!map)
		return NULL;
	if ((set = json_get(map, feature)))
		return json_get(set, "elements");
	set = json_new_object();
	el = kind == FEATURES_INSTANCES ? json_new_array() : json_new_object();
	if (!set || !el || json_set_take(set, "elements", el) < 0) {
		json_free(set);
		if (!set)
			json_free(el);
		return NULL;
	}
	if (json_set_take(map, feature, set) < 0)
		return NULL;
	return json_get(set, "elements");
}

int features_ensure(struct features *f, enum features_kind kind, const char *feature)
{
	return elements(f, kind, feature) ? 0 : -FB_ENOMEM;
}

int features_flag(struct features *f, const char *feature, const char *name)
{
	struct json *el = elements(f, FEATURES_FLAGS, feature);

	if (!el)
		return -FB_ENOMEM;
	if (json_get(el, name))
		return 0;
	return json_set_take(el, name, json_new_object());
}

int features_attr(struct features *f, const char *feature, const char *name, const char *value)
{
	struct json *el = elements(f, FEATURES_ATTRIBUTES, feature);

	if (!el)
		return -FB_ENOMEM;
	return json_set_str(el, name, value);
}

struct json *features_instance(struct features *f, const char *feature)
{
	struct json *el = elements(f, FEATURES_INSTANCES, feature), *inst;

	if (!el || !(inst = json_new_object()))
		return NULL;
	if (json_set_take(inst, "attributes", json_new_object()) < 0) {
		json_free(inst);
		return NULL;
	}
	if (json_append_take(el, inst) < 0)
		return NULL;
	/* inst is now the array's last element; finding it again by index
	 * walked the list twice per instance: quadratic at 5,000 devices */
	return json_get(inst, "attributes");
}

int features_inst_attr(struct json *inst, const char *name, const char *value)
{
	return json_set_str(inst, name, value);
}

static const struct json *lookup(const struct features *f, enum features_kind kind,
				 const char *feature)
{
	return json_get(json_get(json_get(f->root, kind_key[kind]), feature), "elements");
}

const struct json *features_flags(const struct features *f, const char *feature)
{
	return lookup(f, FEATURES_FLAGS, feature);
}

const struct json *features_attrs(const struct features *f, const char *feature)
{
	return lookup(f, FEATURES_ATTRIBUTES, feature);
}

const struct json *features_instances(const struct features *f, const char *feature)
{
	return lookup(f, FEATURES_INSTANCES, feature);
}

static int pattern_match(const char *pattern, const char *key)
{
	size_t n = strlen(pattern);

	if (n && pattern[n - 1] == '*')
		return strncmp(key, pattern, n - 1) == 0;
	return strcmp(key, pattern) == 0;
}

void features_drop(struct features *f, const char *pattern)
{
	for (size_t i = 0; i < sizeof(kind_key) / sizeof(kind_key[0]); i++) {
		struct json *map = json_get(f->root, kind_key[i]), *c;

		/* json_remove frees the member, so the scan starts over after each
		 * one; these maps hold a few dozen features */
		do {
			for (c = json_child(map); c && !pattern_match(pattern, json_key(c));)
				c = json_next(c);
			if (c) {
				/* the name dies with the member: json_remove
				 * needs its own copy */
				char *key = strdup(json_key(c));

				if (!key)
					return;
				json_remove(map, key);
				free(key);
			}
		} while (c);
	}
}

/* ---- sorting ---------------------------------------------------------- */

/* JSON string syntax: quotes, backslashes and control bytes escaped, the
 * rest (UTF-8 or not) as it is, which json_parse takes back unchanged. */
static void put_str(struct buf *b, const char *s)
{
	const char *run = s;

	buf_putc(b, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		buf_put(b, run, (size_t)(s - run));
		run = s + 1;
		snprintf(esc, sizeof(esc), "\\u%04x", c);
		buf_put(b, esc, 6);
	}
	buf_put(b, run, (size_t)(s - run));
	buf_putc(b, '"');
}

int features_sort(struct features *f)
{
	if (!f->root)
		return -FB_ENOMEM;
	/* the root keeps Go's struct order (flags, attributes, instances, as
	 * features_init made it); every map below it is sorted by key, in place */
	for (size_t i = 0; i < sizeof(kind_key) / sizeof(kind_key[0]); i++)
		json_sort_keys(json_get(f->root, kind_key[i]));
	return 0;
}

/* ---- bulk attributes -------------------------------------------------- */

struct pair {
	const char *name, *value;
	size_t seq;
};

static int by_name_seq(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

int features_attr_many(struct features *f, const char *feature, const char *const *names,
		       const char *const *values, size_t n)
{
	struct json *el = elements(f, FEATURES_ATTRIBUTES, feature), *set, *built;
	struct buf b;
	struct pair *p;
	size_t w = 0;
	int rc;

	buf_init(&b, 0);
	if (!el)
		return -FB_ENOMEM;
	if (json_count(el)) {
		/* merging into a filled set: the plain way */
		for (size_t i = 0; i < n; i++)
			if ((rc = features_attr(f, feature, names[i], values[i])) < 0)
				return rc;
		return 0;
	}
	if (!n)
		return 0;
	if (!(p = malloc(n * sizeof(*p))))
		return -FB_ENOMEM;
	for (size_t i = 0; i < n; i++)
		p[i] = (struct pair){ names[i], values[i], i };
	qsort(p, n, sizeof(*p), by_name_seq);
	for (size_t i = 0; i < n; i++)
		if (i + 1 == n || strcmp(p[i].name, p[i + 1].name) != 0)
			p[w++] = p[i];
	/* built as text and parsed once: json_set_take would look every
	 * name up again */
	buf_putc(&b, '{');
	for (size_t i = 0; i < w; i++) {
		if (i)
			buf_putc(&b, ',');
		put_str(&b, p[i].name);
		buf_putc(&b, ':');
		put_str(&b, p[i].value);
	}
	buf_putc(&b, '}');
	free(p);
	if (b.err) {
		buf_free(&b);
		return -FB_ENOMEM;
	}
	built = json_parse(b.p, b.len, feature, NULL);
	buf_free(&b);
	set = json_get(json_get(f->root, kind_key[FEATURES_ATTRIBUTES]), feature);
	if (!built)
		return -FB_ENOMEM;
	return json_set_take(set, "elements", built);
}

/* ---- the size cap ----------------------------------------------------- */

/* How many members of an array or object to keep, from the first, so that
 * it prints in at most target bytes. A member costs its value, its comma,
 * and in an object its name ("name":); names are counted unescaped, so the
 * result can be a little generous: callers measure again. */
static size_t keep_for(const struct json *c, size_t target)
{
	int obj = json_type(c) == JSON_OBJECT;
	size_t len = 2, k = 0; /* [] or {} */

	for (const struct json *e = json_child(c); e; e = json_next(e), k++) {
		len += json_print_len(e) + (k ? 1 : 0) + (obj ? strlen(json_key(e)) + 3 : 0);
		if (len > target)
			break;
	}
	return k;
}

/* Cuts the labels, in key order, to fit max bytes. Returns 1 when it cut. */
static int cap_labels(struct json *labels, size_t max, const struct fb_log *lg, const char *what)
{
	size_t len = json_print_len(labels), n = json_count(labels), k;

	if (len <= max && n <= FEATURES_MAX_LABELS)
		return 0;
	json_sort_keys(labels); /* the same labels survive every pass */
	if (n > FEATURES_MAX_LABELS) {
		json_truncate(labels, FEATURES_MAX_LABELS);
		if (json_print_len(labels) <= max) {
			LOG_W(lg, "%s: more than %d labels: %d of %zu labels published, the rest dropped", what,
			      FEATURES_MAX_LABELS, FEATURES_MAX_LABELS, n);
			return 1;
		}
	}
	k = keep_for(labels, max);
	while (k && (json_truncate(labels, k), json_print_len(labels) > max))
		k--;
	if (!k)
		json_truncate(labels, 0);
	LOG_W(lg, "%s: labels over %zu bytes: %zu of %zu labels published, the rest dropped", what, max, k, n);
	return 1;
}

/* The biggest (printed) set of a kind, with at least one element; NULL when
 * none. Borrowed. */
static struct json *biggest(struct json *spec, enum features_kind kind, size_t *len)
{
	struct json *best = NULL;

	*len = 0;
	for (struct json *s = json_child(json_getv(spec, "features", kind_key[kind], NULL)); s; s = json_next(s)) {
		size_t l = json_print_len(s);

		if (json_count(json_get(s, "elements")) && l > *len) {
			best = s;
			*len = l;
		}
	}
	return best;
}

int features_cap(struct json *spec, size_t max, size_t labels_max, const struct fb_log *lg, const char *what)
{
	struct json *labels = json_get(spec, "labels"), *s;
	size_t len, slen;
	int cuts = cap_labels(labels, labels_max, lg, what);

	/* instance lists grow with the devices: the longest loses its tail
	 * first (devices are listed in address order, so it is the same tail
	 * every pass), then the next */
	while ((len = json_print_len(spec)) > max && (s = biggest(spec, FEATURES_INSTANCES, &slen))) {
		struct json *el = json_get(s, "elements");
		size_t n = json_count(el), ellen = json_print_len(el), excess = len - max;
		size_t k = keep_for(el, ellen > excess ? ellen - excess : 0);

		json_truncate(el, k);
		LOG_W(lg, "%s: over %zu bytes: %s: %zu of %zu instances published, the rest dropped",
		      what, max, json_key(s), k, n);
		cuts++;
	}
	/* then whole flag and attribute sets, the biggest first (half a set
	 * would be a lie about the node) */
	while ((len = json_print_len(spec)) > max) {
		size_t fl, al;
		struct json *f = biggest(spec, FEATURES_FLAGS, &fl), *a = biggest(spec, FEATURES_ATTRIBUTES, &al);
		struct json *map;
		char *key;

		if (!f && !a)
			break;
		s = fl > al ? f : a;
		map = json_getv(spec, "features", kind_key[fl > al ? FEATURES_FLAGS : FEATURES_ATTRIBUTES], NULL);
		if (!(key = strdup(json_key(s))))
			return -FB_ENOMEM;
		LOG_W(lg, "%s: over %zu bytes: %s (%zu elements) not published", what, max, key,
		      json_count(json_get(s, "elements")));
		json_remove(map, key);
		free(key);
		cuts++;
	}
	/* last, the labels */
	if (len > max) {
		size_t llen = json_print_len(labels);

		cuts += cap_labels(labels, llen > len - max ? llen - (len - max) : 2, lg, what);
	}
	return json_print_len(spec) > max ? -FB_E2BIG : cuts;
}
