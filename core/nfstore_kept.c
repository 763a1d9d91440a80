/* nfstore: the kept part of a NodeFeature, stored compactly. The tree is
 * written as a byte string of varints whose every name and string value is
 * an id in the store's intern table (s->strs): thousands of nodes repeat the
 * same label names and values and feature elements, which are then kept once.
 *
 * The grammar (each item a LEB128 varint):
 *   value  = STR id | OBJ { (name id + 1) value } 0 | ARR { value } END
 *          | RAW id
 * RAW is a number, bool or null, kept as its compact JSON text (an id too) and
 * parsed back, so that it reads back exactly as printing and parsing the whole
 * kept part did. Each id written holds one reference to its string: releasing
 * the part walks it and drops them. A part cut short by a failed write holds
 * exactly the ids written, so the same walk, which stops at the end, releases
 * it. */
#include "nfstore_int.h"

#include "buf.h"
#include "err.h"

#include <stdlib.h>
#include <string.h>

enum { K_END, K_STR, K_OBJ, K_ARR, K_RAW };

static void put_varint(struct buf *b, uint64_t v)
{
	unsigned char c[10];
	size_t n = 0;

	do {
		c[n] = v & 0x7f;
		v >>= 7;
		if (v)
			c[n] |= 0x80;
		n++;
	} while (v);
	buf_put(b, c, n);
}

/* Reads a varint at *p (below end). 0 when the bytes ran out. */
static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	*v = 0;
	for (int sh = 0; *p < end && sh < 64; sh += 7) {
		unsigned char c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << sh;
		if (!(c & 0x80))
			return 1;
	}
	return 0;
}

/* Interns str and writes its id (+ add): nothing written when interning
 * fails, and the reference is never taken without the id written. */
static int put_str(struct nfstore *s, struct buf *b, const char *str, uint64_t add)
{
	long id;

	if (buf_reserve(b, 10) < 0)
		return -FB_ENOMEM;
	if ((id = intern_add(&s->strs, str)) < 0)
		return (int)id;
	put_varint(b, (uint64_t)id + add);
	return 0;
}

static int put_value(struct nfstore *s, struct buf *b, const struct json *j)
{
	int rc = 0;

	switch (json_type(j)) {
	case JSON_STRING:
		put_varint(b, K_STR);
		return b->err ? b->err : put_str(s, b, json_str(j), 0);
	case JSON_OBJECT:
	case JSON_ARRAY: {
		int obj = json_type(j) == JSON_OBJECT;

		put_varint(b, obj ? K_OBJ : K_ARR);
		for (const struct json *c = json_child(j); c && !b->err && rc == 0; c = json_next(c))
			if (!obj || (rc = put_str(s, b, json_key(c), 1)) == 0)
				rc = put_value(s, b, c);
		put_varint(b, K_END);
		return rc < 0 ? rc : b->err;
	}
	default: {
		char *text = json_print(j, NULL);

		put_varint(b, K_RAW);
		rc = !text ? -FB_ENOMEM : b->err ? b->err : put_str(s, b, text, 0);
		free(text);
		return rc;
	}
	}
}

/* Drops the references of a value whose tag was read; its items follow at
 * *p. Stops at end. */
static void put_back(struct nfstore *s, const unsigned char **p, const unsigned char *end, uint64_t tag)
{
	uint64_t v;

	if (tag == K_STR || tag == K_RAW) {
		if (get_varint(p, end, &v))
			intern_put(&s->strs, (uint32_t)v);
		return;
	}
	while (get_varint(p, end, &v) && v != K_END) {
		if (tag == K_OBJ) {
			intern_put(&s->strs, (uint32_t)(v - 1));
			if (!get_varint(p, end, &v))
				return;
		}
		put_back(s, p, end, v);
	}
}

/* The tree of a value whose tag was read. Owned, NULL on ENOMEM. */
static struct json *get_value(const struct nfstore *s, const unsigned char **p, const unsigned char *end,
			      uint64_t tag, const char *what)
{
	struct json *j, *c;
	struct fb_errinfo ei;
	uint64_t v;

	if (tag == K_STR || tag == K_RAW) {
		const char *str = get_varint(p, end, &v) ? intern_str(&s->strs, (uint32_t)v) : NULL;

		if (!str)
			return NULL;
		return tag == K_STR ? json_new_string(str) : json_parse(str, strlen(str), what, &ei);
	}
	if (!(j = tag == K_OBJ ? json_new_object() : json_new_array()))
		return NULL;
	for (;;) {
		const char *key = NULL;

		if (!get_varint(p, end, &v))
			break;
		if (v == K_END)
			return j;
		if (tag == K_OBJ && (!(key = intern_str(&s->strs, (uint32_t)(v - 1))) || !get_varint(p, end, &v)))
			break;
		if (!(c = get_value(s, p, end, v, what)) ||
		    (tag == K_OBJ ? json_add_take(j, key, c) : json_append_take(j, c)) < 0)
			break;
	}
	json_free(j);
	return NULL;
}

int kept_set_(struct nfstore *s, struct nfstore_nf *o, const struct json *keep)
{
	struct buf b;
	int rc;

	buf_init(&b, 0);
	rc = put_value(s, &b, keep);
	if (rc == 0 && b.err == 0) {
		size_t len;
		/* the new part before the old goes: strings in both stay put */
		char *p = buf_take(&b, &len), *q;

		kept_drop_(s, o);
		if (!p)
			return -FB_ENOMEM;
		q = realloc(p, len + 1); /* the buffer's spare capacity back */
		o->data = (unsigned char *)(q ? q : p);
		o->data_len = len;
		return 0;
	}
	{
		const unsigned char *p = (const unsigned char *)b.p, *end = p + b.len;
		uint64_t tag;

		if (p && get_varint(&p, end, &tag))
			put_back(s, &p, end, tag);
	}
	buf_free(&b);
	return -FB_ENOMEM;
}

void kept_drop_(struct nfstore *s, struct nfstore_nf *o)
{
	const unsigned char *p = o->data, *end = p + o->data_len;
	uint64_t tag;

	if (p && get_varint(&p, end, &tag))
		put_back(s, &p, end, tag);
	free(o->data);
	o->data = NULL;
	o->data_len = 0;
}

struct json *nfstore_nf_kept(const struct nfstore *s, const struct nfstore_nf *o)
{
	const unsigned char *p = o->data, *end = p + o->data_len;
	uint64_t tag;

	if (!p || !get_varint(&p, end, &tag))
		return NULL;
	return get_value(s, &p, end, tag, o->key);
}
