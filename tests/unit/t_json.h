/* t_json.h: JSON written in C strings with ' for ", for the unit tests of
 * core/rules (test_rules, test_rules_explain). */
#ifndef FB_T_JSON_H
#define FB_T_JSON_H

#include "../../core/err.h"
#include "../../core/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s with every ' turned into ", owned by the caller */
static inline char *q(const char *s)
{
	char *d = strdup(s);

	for (char *p = d; p && *p; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

/* s (with ' for ") parsed; a test that cannot parse its own data exits 2 */
static inline struct json *pj(const char *s)
{
	char *t = q(s);
	struct fb_errinfo ei;
	struct json *j = t ? json_parse(t, strlen(t), "test", &ei) : NULL;

	if (!j) {
		fprintf(stderr, "bad test JSON: %s: %s\n", t ? ei.detail : "out of memory", t ? t : "");
		exit(2);
	}
	free(t);
	return j;
}

#endif
