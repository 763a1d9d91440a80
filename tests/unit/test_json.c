/* json: parsing with positions, the depth limit, getters, integers, builders
 * and ownership, equality, printing. */
#include "t.h"

#include "../../core/err.h"
#include "../../core/json.h"

#include <math.h>
#include <stdlib.h>

/* parse, print compact: what comes out */
static const struct {
	const char *in, *out;
} trips[] = {
	{ "{\"a\":1,\"b\":[true,false,null],\"c\":\"x\"}", "{\"a\":1,\"b\":[true,false,null],\"c\":\"x\"}" },
	{ " {\n \"a\" : [ 1 , 2 ] ,\t\"b\":{ } }\r\n", "{\"a\":[1,2],\"b\":{}}" },
	{ "[]", "[]" },
	{ "{}", "{}" },
	{ "\"str\\u00e9\"", "\"str\xc3\xa9\"" },
	{ "\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"" },
	{ "\"a\\\"b\\\\c\\n\\/\"", "\"a\\\"b\\\\c\\n/\"" },
	{ "\"\\u0001\"", "\"\\u0001\"" },
	{ "[1.5,-0.25,1e300,-0,0.1,100,1e17,2.5e-7]", "[1.5,-0.25,1e+300,0,0.1,100,1e+17,2.5e-07]" },
	{ "[9007199254740991,-2147483649]", "[9007199254740991,-2147483649]" },
	{ "[0.30000000000000004,1e-320,123456789012345678]",
	  "[0.30000000000000004,1e-320,1.2345678901234568e+17]" },
	{ "\"\\b\\f\\r\\t\\u001f\\u007f\"", "\"\\b\\f\\r\\t\\u001f\x7f\"" },
	{ "\xef\xbb\xbf{\"bom\":1}", "{\"bom\":1}" },
	{ "\"raw \xff\xfe bytes\"", "\"raw \xff\xfe bytes\"" },
	{ "true", "true" },
	{ "null", "null" },
	{ "-12", "-12" },
	{ "{\"a\":{\"b\":{\"c\":[[[\"deep\"]]]}}}", "{\"a\":{\"b\":{\"c\":[[[\"deep\"]]]}}}" },
};

/* malformed bodies: the code and the detail naming the position */
static const struct {
	const char *name, *in;
	size_t len; /* 0: strlen */
	int code;
	const char *detail;
} bad[] = {
	{ "empty input", "", 0, FB_EINVAL, "line 1 column 1: empty document" },
	{ "only white space", "  \n ", 0, FB_EINVAL, "line 2 column 2: empty document" },
	{ "unterminated string", "{\"a\": \"abc", 0, FB_EINVAL, "line 1 column 7: unterminated string" },
	{ "trailing garbage", "{\"a\":1} x", 0, FB_EINVAL,
	  "line 1 column 9: unexpected text after the value" },
	{ "second value", "[1]\n[2]", 0, FB_EINVAL, "line 2 column 1: unexpected text after the value" },
	{ "NUL in a string", "{\"a\":\n \"b\0c\"}", 13, FB_EINVAL,
	  "line 2 column 4: NUL byte in a string" },
	{ "NUL after the value", "{}\0", 3, FB_EINVAL, "line 1 column 3: NUL byte" },
	{ "truncated \\u escape", "{\"a\":\"\\u12", 0, FB_EINVAL, "line 1 column 6: unterminated string" },
	{ "truncated surrogate pair", "\"\\ud83d\\ude", 0, FB_EINVAL,
	  "line 1 column 1: unterminated string" },
	{ "truncated after a comma", "[1,", 0, FB_EINVAL, "line 1 column 4: unexpected end of input" },
	{ "missing colon", "{\"a\" 1}", 0, FB_EINVAL, "line 1 column 6: expected ':'" },
	{ "trailing comma in array", "[1,]", 0, FB_EINVAL, "line 1 column 4: expected a value" },
	{ "trailing comma in object", "{\"a\":1,}", 0, FB_EINVAL,
	  "line 1 column 8: expected a member name in double quotes" },
	{ "unquoted name", "{a:1}", 0, FB_EINVAL,
	  "line 1 column 2: expected a member name in double quotes" },
	{ "leading zero", "[01]", 0, FB_EINVAL, "line 1 column 3: expected ',' or ']'" },
	{ "bare decimal point", "[1.]", 0, FB_EINVAL, "line 1 column 2: invalid number" },
	{ "plus sign", "+1", 0, FB_EINVAL, "line 1 column 1: expected a value" },
	{ "bad literal", "[tru]", 0, FB_EINVAL, "line 1 column 2: invalid value" },
	{ "bad escape", "{\"a\":\"\\x\"}", 0, FB_EINVAL, "line 1 column 7: invalid escape in a string" },
	{ "bad \\u digits", "\"\\u12g4\"", 0, FB_EINVAL, "line 1 column 2: invalid \\u escape" },
	{ "lone low surrogate", "\"\\udc00\"", 0, FB_EINVAL,
	  "line 1 column 2: unpaired UTF-16 surrogate in \\u escape" },
	{ "high surrogate alone", "\"\\ud800x\"", 0, FB_EINVAL,
	  "line 1 column 2: unpaired UTF-16 surrogate in \\u escape" },
	{ "unclosed object", "{\"a\":1", 0, FB_EINVAL, "line 1 column 7: unexpected end of input" },
	{ "wrong closer", "{\"a\":1]", 0, FB_EINVAL, "line 1 column 7: expected ',' or '}'" },
	{ "error on line 3", "{\n  \"a\": 1,\n  \"b\": x\n}", 0, FB_EINVAL,
	  "line 3 column 8: expected a value" },
	{ "columns count characters", "[\"\xc3\xa9\xc3\xa9\" x]", 0, FB_EINVAL,
	  "line 1 column 7: expected ',' or ']'" },
	{ "CRLF lines", "{\r\n\"a\":\r\n?}", 0, FB_EINVAL, "line 3 column 1: expected a value" },
	{ "number out of range", "[1, -1e400]", 0, FB_EINVAL, "line 1 column 5: number out of range" },
	{ "number too long for cJSON",
	  "[0.1000000000000000000000000000000000000000000000000000000000000001]", 0, FB_EINVAL,
	  "line 1 column 2: number longer than 63 characters" },
};

/* json_int on a parsed number */
static const struct {
	const char *in;
	int rc;
	long long v;
} ints[] = {
	{ "0", 0, 0 },
	{ "-0", 0, 0 },
	{ "42", 0, 42 },
	{ "-17", 0, -17 },
	{ "1e2", 0, 100 },
	{ "1.0", 0, 1 },
	{ "2.5", -FB_EINVAL, 0 },
	{ "-1e-300", -FB_EINVAL, 0 },
	{ "1e300", -FB_EINVAL, 0 },
	{ "9007199254740991", 0, 9007199254740991LL },
	{ "-9007199254740991", 0, -9007199254740991LL },
	{ "9007199254740992", -FB_EINVAL, 0 },
	{ "9007199254740993", -FB_EINVAL, 0 },
	{ "-9007199254740993", -FB_EINVAL, 0 },
	{ "\"5\"", -FB_EINVAL, 0 },
	{ "true", -FB_EINVAL, 0 },
	{ "null", -FB_EINVAL, 0 },
};

/* json_equal, both ways round */
static const struct {
	const char *a, *b;
	int eq;
} eqs[] = {
	{ "{\"a\":1,\"b\":[1,2]}", "{\"b\":[1,2],\"a\":1}", 1 },
	{ "{\"a\":{\"x\":1,\"y\":2}}", "{\"a\":{\"y\":2,\"x\":1}}", 1 },
	{ "[1,2]", "[2,1]", 0 },
	{ "[1,2]", "[1,2,3]", 0 },
	{ "{\"a\":1}", "{\"a\":1,\"b\":2}", 0 },
	{ "{\"a\":1,\"a\":1}", "{\"a\":1,\"b\":1}", 0 },
	{ "{\"a\":1,\"b\":0,\"a\":2}", "{\"a\":1,\"a\":2,\"b\":0}", 1 },
	{ "{\"a\":1,\"a\":2}", "{\"a\":2,\"a\":1}", 0 },
	{ "{\"a\":1}", "{\"b\":1}", 0 },
	{ "{\"a\":null}", "{\"a\":false}", 0 },
	{ "null", "null", 1 },
	{ "true", "false", 0 },
	{ "\"x\"", "\"x\"", 1 },
	{ "\"x\"", "\"y\"", 0 },
	{ "1", "\"1\"", 0 },
	{ "0", "-0", 1 },
	{ "0.30000000000000004", "0.3", 0 },
	{ "0.3", "0.31", 0 },
	{ "[]", "{}", 0 },
};

static struct json *P(const char *s)
{
	struct fb_errinfo ei;
	struct json *j = json_parse(s, strlen(s), "test", &ei);

	if (!j)
		printf("# cannot parse %s: %s\n", s, ei.detail);
	return j;
}

static char *deep(int n, char open, char close)
{
	char *s = malloc((size_t)n * 2 + 1);

	memset(s, open, (size_t)n);
	memset(s + n, close, (size_t)n);
	s[2 * n] = '\0';
	return s;
}

static void test_round(void)
{
	char name[200];

	for (size_t i = 0; i < sizeof(trips) / sizeof(trips[0]); i++) {
		struct json *j = P(trips[i].in), *k;
		char *out = j ? json_print(j, NULL) : NULL;
		size_t len = 0;

		snprintf(name, sizeof(name), "round trip %zu", i);
		T_STR(name, out, trips[i].out);
		/* and what was printed parses back equal */
		k = out ? json_parse(out, strlen(out), "printed", NULL) : NULL;
		free(out);
		out = j ? json_print(j, &len) : NULL;
		snprintf(name, sizeof(name), "print reparses equal %zu", i);
		T_OK(name, k && json_equal(j, k) && out && len == strlen(out), "not equal");
		snprintf(name, sizeof(name), "json_print_len equals the printed length %zu", i);
		T_OK(name, !j || json_print_len(j) == len, "%zu != %zu", json_print_len(j), len);
		free(out);
		json_free(k);
		json_free(j);
	}
}

static void test_errors(void)
{
	char name[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fb_errinfo ei;
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].in);
		struct json *j;

		fb_errinfo_init(&ei);
		j = json_parse(bad[i].in, len, "body", &ei);
		snprintf(name, sizeof(name), "refused: %s", bad[i].name);
		T_OK(name, !j && ei.code == bad[i].code && strcmp(ei.detail, bad[i].detail) == 0 &&
				   strcmp(ei.what, "body") == 0,
		     "got %s code %d \"%s\", want code %d \"%s\"", j ? "a tree" : "NULL", ei.code,
		     ei.detail, bad[i].code, bad[i].detail);
		json_free(j);
	}
	{
		struct fb_errinfo ei;

		T_OK("NULL, 0 is an empty document", !json_parse(NULL, 0, "body", &ei) &&
				strcmp(ei.detail, "line 1 column 1: empty document") == 0, "%s", ei.detail);
	}
	/* the body is not NUL-terminated: a parse must not read past len */
	{
		char *buf = malloc(7);
		struct json *j;

		memcpy(buf, "[1,22]x", 7);
		j = json_parse(buf, 6, "body", NULL);
		T_OK("length-bounded body", j && json_count(j) == 2, "parse failed");
		json_free(j);
		j = json_parse(buf, 5, "body", NULL);
		T_OK("length-bounded body cut short", !j, "parsed");
		free(buf);
	}
}

static void test_depth(void)
{
	struct fb_errinfo ei;
	char *s = deep(JSON_MAX_DEPTH, '[', ']');
	struct json *j = json_parse(s, strlen(s), "deep", &ei);

	T_OK("64 levels of arrays parse", j, "%s", ei.detail);
	json_free(j);
	free(s);
	s = deep(JSON_MAX_DEPTH + 1, '[', ']');
	fb_errinfo_init(&ei);
	j = json_parse(s, strlen(s), "deep", &ei);
	T_OK("65 levels of arrays refused", !j && ei.code == FB_EDEPTH &&
			strcmp(ei.detail, "line 1 column 65: nested deeper than 64 levels") == 0,
	     "code %d \"%s\"", ei.code, ei.detail);
	json_free(j);
	free(s);
	/* far past cJSON's own limit of 1000: refused by the scan, no recursion */
	s = deep(100000, '[', ']');
	j = json_parse(s, strlen(s), "deep", &ei);
	T_OK("100000 levels refused", !j && ei.code == FB_EDEPTH, "code %d", ei.code);
	free(s);
	{
		char obj[JSON_MAX_DEPTH * 6 + 16] = "";
		int n = 0;

		for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
			n += snprintf(obj + n, sizeof(obj) - (size_t)n, "{\"a\":");
		snprintf(obj + n, sizeof(obj) - (size_t)n, "1");
		j = json_parse(obj, strlen(obj), "deep", &ei);
		T_OK("65 levels of objects refused", !j && ei.code == FB_EDEPTH &&
				strcmp(ei.detail, "line 1 column 321: nested deeper than 64 levels") == 0,
		     "code %d \"%s\"", ei.code, ei.detail);
	}
}

static void test_getters(void)
{
	struct json *j = P("{\"metadata\":{\"labels\":{\"a\":\"b\"},\"n\":3},\"arr\":[1,\"x\",true],"
			   "\"s\":\"str\",\"t\":true,\"f\":false,\"z\":null}");
	struct json *arr = json_get(j, "arr"), *c;
	long long v = -1;
	size_t n = 0;

	T_STR("json_getv path", json_str(json_getv(j, "metadata", "labels", "a", NULL)), "b");
	T_OK("json_getv missing member", !json_getv(j, "metadata", "nope", "a", NULL), "found");
	T_OK("json_getv through a string", !json_getv(j, "s", "x", NULL), "found");
	T_OK("json_getv through an array", !json_getv(j, "arr", "0", NULL), "found");
	T_OK("json_getv empty path", json_getv(j, NULL) == j, "not the root");
	T_OK("json_getv on NULL", !json_getv(NULL, "a", NULL), "found");
	T_OK("json_get on NULL", !json_get(NULL, "a"), "found");
	T_OK("json_get on an array", !json_get(arr, "a"), "found");
	T_OK("json_get is case-sensitive", !json_get(j, "Metadata"), "found");
	T_OK("json_get NULL key", !json_get(j, NULL), "found");
	T_OK("json_str of a number", !json_str(json_at(arr, 0)), "not NULL");
	T_OK("json_str of NULL", !json_str(NULL), "not NULL");
	T_STR("json_get_str", json_get_str(j, "s", "def"), "str");
	T_STR("json_get_str missing", json_get_str(j, "nope", "def"), "def");
	T_STR("json_get_str not a string", json_get_str(j, "t", "def"), "def");
	T_OK("json_get_str on NULL", json_get_str(NULL, "s", NULL) == NULL, "not NULL");
	T_INT("json_bool true", json_bool(json_get(j, "t")), 1);
	T_INT("json_bool false", json_bool(json_get(j, "f")), 0);
	T_INT("json_bool of null", json_bool(json_get(j, "z")), -FB_EINVAL);
	T_INT("json_bool of a string", json_bool(json_get(j, "s")), -FB_EINVAL);
	T_INT("json_bool of NULL", json_bool(NULL), -FB_EINVAL);
	T_INT("json_int of a string", json_int(json_get(j, "s"), &v), -FB_EINVAL);
	T_INT("json_int of NULL", json_int(NULL, &v), -FB_EINVAL);
	T_INT("json_int untouched on error", v, -1);
	T_INT("json_int member", json_int(json_getv(j, "metadata", "n", NULL), &v), 0);
	T_INT("json_int member value", v, 3);
	T_INT("json_type object", json_type(j), JSON_OBJECT);
	T_INT("json_type array", json_type(arr), JSON_ARRAY);
	T_INT("json_type string", json_type(json_get(j, "s")), JSON_STRING);
	T_INT("json_type number", json_type(json_at(arr, 0)), JSON_NUMBER);
	T_INT("json_type bool", json_type(json_get(j, "f")), JSON_BOOL);
	T_INT("json_type null", json_type(json_get(j, "z")), JSON_NULL);
	T_INT("json_type of NULL", json_type(NULL), JSON_INVALID);
	T_INT("json_count array", json_count(arr), 3);
	T_INT("json_count object", json_count(j), 6);
	T_INT("json_count string", json_count(json_get(j, "s")), 0);
	T_INT("json_count NULL", json_count(NULL), 0);
	T_STR("json_at 1", json_str(json_at(arr, 1)), "x");
	T_OK("json_at past the end", !json_at(arr, 3), "found");
	T_OK("json_at on an object", json_at(j, 0) == json_get(j, "metadata"), "not the first");
	T_OK("json_at on NULL", !json_at(NULL, 0), "found");
	T_OK("json_child of a string", !json_child(json_get(j, "s")), "found");
	T_OK("json_child of NULL", !json_child(NULL), "found");
	T_OK("json_next of NULL", !json_next(NULL), "found");
	T_OK("json_key in an array", !json_key(json_at(arr, 0)), "has a name");
	T_OK("json_key of the root", !json_key(j), "has a name");
	T_OK("json_key of NULL", !json_key(NULL), "has a name");
	for (c = json_child(j); c; c = json_next(c))
		n += json_get(j, json_key(c)) == c;
	T_INT("iteration names every member", n, 6);
	json_free(j);
	json_free(NULL);
}

static void test_ints(void)
{
	char name[200];

	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		struct json *j = P(ints[i].in);
		long long v = 0;
		int rc = json_int(j, &v);

		snprintf(name, sizeof(name), "json_int %s", ints[i].in);
		T_OK(name, rc == ints[i].rc && (rc < 0 || v == ints[i].v), "rc %d value %lld", rc, v);
		json_free(j);
	}
	{
		struct json *n = json_new_number(-0.0);
		long long v = 5;

		char *p;

		T_OK("json_int of built -0.0", json_int(n, &v) == 0 && v == 0, "value %lld", v);
		json_free(n);
		n = json_new_number(INFINITY);
		T_INT("json_int of built infinity", json_int(n, &v), -FB_EINVAL);
		p = json_print(n, NULL);
		T_STR("built infinity prints as null", p, "null");
		free(p);
		json_free(n);
	}
}

static void test_build(void)
{
	struct json *o = json_new_object(), *a = json_new_array(), *d, *m;
	char *s;

	T_INT("set_str", json_set_str(o, "a", "x"), 0);
	T_INT("set_take number", json_set_take(o, "b", json_new_number(1)), 0);
	T_INT("set_take replaces", json_set_take(o, "a", json_new_bool(1)), 0);
	T_INT("set_take null", json_set_take(o, "c", json_new_null()), 0);
	T_INT("append string", json_append_take(a, json_new_string("s")), 0);
	T_INT("append number", json_append_take(a, json_new_number(2.5)), 0);
	T_INT("append object", json_append_take(a, json_new_object()), 0);
	T_INT("set_take array", json_set_take(o, "list", a), 0);
	s = json_print(o, NULL);
	T_STR("built document", s, "{\"a\":true,\"b\":1,\"c\":null,\"list\":[\"s\",2.5,{}]}");
	free(s);
	T_INT("replaced, not added", json_count(o), 4);
	/* failures free what they were given (ASan's leak check holds us to it) */
	T_INT("set_take on an array", json_set_take(json_get(o, "list"), "k", json_new_null()),
	      -FB_EINVAL);
	T_INT("set_take on NULL", json_set_take(NULL, "k", json_new_null()), -FB_EINVAL);
	T_INT("set_take NULL key", json_set_take(o, NULL, json_new_null()), -FB_EINVAL);
	T_INT("set_take NULL value", json_set_take(o, "k", NULL), -FB_ENOMEM);
	T_INT("set_str NULL string", json_set_str(o, "k", NULL), -FB_EINVAL);
	T_INT("append to an object", json_append_take(o, json_new_null()), -FB_EINVAL);
	T_INT("append NULL", json_append_take(json_get(o, "list"), NULL), -FB_ENOMEM);
	{
		struct json *e = json_new_object();

		T_INT("add_take appends", json_add_take(e, "x", json_new_string("1")), 0);
		T_INT("add_take keeps a second x", json_add_take(e, "x", json_new_string("2")), 0);
		s = json_print(e, NULL);
		T_STR("add_take: both, in order", s, "{\"x\":\"1\",\"x\":\"2\"}");
		free(s);
		T_STR("add_take: get finds the first", json_get_str(e, "x", ""), "1");
		T_INT("add_take on an array", json_add_take(json_get(o, "list"), "k", json_new_null()), -FB_EINVAL);
		json_free(e);
	}
	T_OK("new_string NULL", !json_new_string(NULL), "not NULL");
	/* a copied member is a root: no name; moved into an array it has none */
	d = json_dup(json_get(o, "b"));
	T_OK("dup of a member has no name", d && !json_key(d), "name %s", json_key(d));
	T_INT("dup appended", json_append_take(json_get(o, "list"), d), 0);
	T_OK("appended copy has no name", !json_key(json_at(json_get(o, "list"), 3)), "has one");
	m = json_dup(o);
	T_OK("dup is equal", json_equal(m, o), "not equal");
	json_remove(m, "a");
	T_OK("remove", !json_get(m, "a") && json_count(m) == 3, "still there");
	json_remove(m, "nope");
	T_INT("remove absent is a no-op", json_count(m), 3);
	json_remove(NULL, "a");
	json_remove(json_get(m, "list"), "a");
	T_OK("dup is deep", !json_equal(m, o) && json_get(o, "a"), "shared");
	json_free(m);
	T_OK("dup NULL", !json_dup(NULL), "not NULL");
	T_STR("key of a set member", json_key(json_get(o, "list")), "list");
	json_free(o);
	{
		struct json *p = P("{\"a\":1,\"a\":2,\"b\":3}");

		json_remove(p, "a");
		T_OK("remove drops a repeated name", p && json_count(p) == 1, "left %zu",
		     json_count(p));
		json_free(p);
	}
	{
		char *n = json_print(NULL, NULL);

		T_OK("print NULL", !n, "not NULL");
	}
}

static void test_equal(void)
{
	char name[200];

	for (size_t i = 0; i < sizeof(eqs) / sizeof(eqs[0]); i++) {
		struct json *a = P(eqs[i].a), *b = P(eqs[i].b);

		snprintf(name, sizeof(name), "equal %s %s", eqs[i].a, eqs[i].b);
		T_INT(name, json_equal(a, b), eqs[i].eq);
		snprintf(name, sizeof(name), "equal %s %s", eqs[i].b, eqs[i].a);
		T_INT(name, json_equal(b, a), eqs[i].eq);
		json_free(a);
		json_free(b);
	}
	T_INT("equal NULL NULL", json_equal(NULL, NULL), 0);
}

/* json_truncate keeps the first n members, arrays and objects alike, and
 * leaves a list that can still grow (cJSON keeps the tail in head->prev). */
static void test_truncate(void)
{
	static const struct { const char *in; size_t n; const char *out; } cases[] = {
		{ "[1,2,3,4]", 2, "[1,2,\"x\"]" },
		{ "[1,2,3,4]", 0, "[\"x\"]" },
		{ "[1,2]", 5, "[1,2,\"x\"]" },
		{ "[]", 0, "[\"x\"]" },
		{ "{\"a\":1,\"b\":2,\"c\":3}", 1, "{\"a\":1,\"z\":\"x\"}" },
		{ "{\"a\":1}", 0, "{\"z\":\"x\"}" },
	};
	char name[200];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json *j = P(cases[i].in);
		char *out;

		json_truncate(j, cases[i].n);
		if (json_type(j) == JSON_ARRAY)
			json_append_take(j, json_new_string("x"));
		else
			json_set_str(j, "z", "x");
		out = json_print(j, NULL);
		snprintf(name, sizeof(name), "truncate %s to %zu, then add", cases[i].in, cases[i].n);
		T_STR(name, out, cases[i].out);
		free(out);
		json_free(j);
	}
	json_truncate(NULL, 0);
	T_OK("truncate NULL: no-op", 1, "%s", "");
}

/* A \u0000 escape: never a string cut short at the NUL. The value is
 * marked (no string, json_nul_path names it), the rest of the document is
 * as usual, and print + parse keeps the mark. */
static void test_nul(void)
{
	static const char doc[] = "{\"items\":[{\"name\":\"ok\",\"v\":\"plain\"},"
				  "{\"name\":\"bad\",\"spec\":{\"a\":\"x\",\"note\":\"abc\\u0000def\"}},"
				  "{\"name\":\"key\",\"m\":{\"k\\u0000y\":\"v\"}}],\"pair\":\"\\ud83d\\ude00\\u0001\"}";
	struct json *j = P(doc), *k, *d;
	const struct json *items = json_get(j, "items");
	char path[64], small[8];
	char *out, *s_all;

	T_OK("a string with \\u0000 parses", j != NULL, "refused");
	T_STR("the other members are as usual", json_get_str(json_at(items, 0), "v", NULL), "plain");
	T_STR("the same object's other members too",
	      json_get_str(json_getv(json_at(items, 1), "spec", NULL), "a", NULL), "x");
	T_OK("the value with the NUL is no string",
	     !json_str(json_getv(json_at(items, 1), "spec", "note", NULL)), "got \"%s\"",
	     json_str(json_getv(json_at(items, 1), "spec", "note", NULL)));
	T_INT("nor of any type", json_type(json_getv(json_at(items, 1), "spec", "note", NULL)), JSON_INVALID);
	T_INT("json_get_str falls back", json_get_str(json_getv(json_at(items, 1), "spec", NULL), "note", NULL) == NULL, 1);
	T_INT("found in the document", json_nul_path(j, path, sizeof(path)), 1);
	T_STR("named by its path", path, "items[1].spec.note");
	T_INT("not in a clean item", json_nul_path(json_at(items, 0), path, sizeof(path)), 0);
	T_STR("clean: empty path", path, "");
	T_INT("a member name with one", json_nul_path(json_at(items, 2), path, sizeof(path)), 1);
	T_STR("the name's path (up to the NUL)", path, "m.k");
	T_INT("NULL path buffer", json_nul_path(j, NULL, 0), 1);
	T_INT("cut path", json_nul_path(j, small, sizeof(small)), 1);
	T_STR("cut path text", small, "items[1");
	T_INT("of NULL", json_nul_path(NULL, path, sizeof(path)), 0);
	T_STR("a surrogate pair and \\u0001 are no NUL", json_get_str(j, "pair", NULL), "\xf0\x9f\x98\x80\x01");
	out = json_print(json_at(items, 1), NULL);
	T_STR("printed: the text up to the NUL and the mark", out,
	      "{\"name\":\"bad\",\"spec\":{\"a\":\"x\",\"note\":\"abc\\u0000\"}}");
	k = out ? json_parse(out, strlen(out), "printed", NULL) : NULL;
	T_INT("reparsed: still marked", json_nul_path(k, path, sizeof(path)), 1);
	T_STR("reparsed: same path", path, "spec.note");
	T_INT("equal to the original", json_equal(k, json_at(items, 1)), 1);
	free(out);
	out = json_print(json_at(items, 2), NULL);
	T_STR("a name printed with its mark", out, "{\"name\":\"key\",\"m\":{\"k\\u0000\":\"v\"}}");
	T_INT("json_key_print_len counts the mark",
	      json_key_print_len(json_child(json_getv(json_at(items, 2), "m", NULL))), 9);
	T_INT("json_key_print_len of a plain name", json_key_print_len(json_child(json_at(items, 2))), 6);
	T_INT("json_key_print_len of NULL", json_key_print_len(NULL), 0);
	T_INT("json_print_len agrees with the print", json_print_len(j), strlen(s_all = json_print(j, NULL)));
	free(s_all);
	free(out);
	d = json_dup(json_at(items, 1));
	T_INT("a copy keeps the mark", json_nul_path(d, NULL, 0), 1);
	json_free(d);
	/* a marked member moved under a new name loses the name's mark */
	d = json_dup(json_get(json_getv(json_at(items, 2), "m", NULL), "k"));
	T_INT("a copy of a member is no member", json_nul_path(d, NULL, 0), 0);
	json_free(d);
	json_free(k);
	json_free(j);
	j = P("\"\\u0000\"");
	T_INT("a lone NUL string is marked", json_nul_path(j, path, sizeof(path)), 1);
	T_STR("its path is the root", path, "");
	json_free(j);
}

int main(void)
{
	t_suite = "json";
	test_round();
	test_errors();
	test_depth();
	test_getters();
	test_ints();
	test_build();
	test_equal();
	test_truncate();
	test_nul();
	return t_done();
}
