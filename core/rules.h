/* rules: the NodeFeatureRule engine (upstream pkg/apis/nfd/nodefeaturerule
 * and pkg/apis/nfd/template), shared by nfd-master (NodeFeatureRule objects)
 * and the worker's custom source (sources.custom and custom.d files).
 *
 * A rule list is compiled once (expressions checked, regular expressions
 * compiled, templates parsed) and then run against many feature sets. A rule
 * that does not compile is kept, marked broken with its message, and skipped
 * by rules_run, so one bad rule never hides the others. */
#ifndef FB_RULES_H
#define FB_RULES_H

#include "features.h"
#include "json.h"

#include <stddef.h>

/* Which syntax a rule list is in. */
enum rules_dialect {
	RULES_NFR,    /* NodeFeatureRule spec.rules: full expression maps, all ops, type */
	RULES_CUSTOM, /* worker custom source: also the shorthands (list of "name" /
		       * "name=value", bare values), no Ge/Le/GeLe/type, only
		       * labels/labelsTemplate/vars/varsTemplate honoured */
	RULES_NFG,    /* NodeFeatureGroup spec.featureGroupRules: as RULES_NFR, but
		       * only name, vars, varsTemplate, matchFeatures and matchAny
		       * (what the CRD keeps) are read */
};

struct rules;

/* Compiles the JSON array of rules (borrowed; what it needs is copied).
 * The template and regexp subsets are described in rules.c and re.h.
 * what names the list in messages ("NodeFeatureRule my-rules",
 * "custom.d/gpu.yaml"). Never fails for a bad rule (see rules_error); a
 * value that is not an array is one broken pseudo-rule. Returns 0 or
 * -FB_ENOMEM (*out is then NULL). */
int rules_compile(struct rules **out, const struct json *rules, enum rules_dialect d, const char *what);
void rules_free(struct rules *r);

size_t rules_count(const struct rules *r);
/* The i-th rule's name ("" when it has none) and its compile error (NULL when
 * it compiled). Borrowed. */
const char *rules_name(const struct rules *r, size_t i);
const char *rules_error(const struct rules *r, size_t i);

/* Outputs accumulated over rules_run calls (later rules overwrite the same
 * key). Every member is an owned object of string values, except taints: an
 * array of {"key","value","effect"} objects ("value" omitted when empty).
 * Keys are as the rules wrote them (prefixing is the caller's business). */
struct rules_out {
	struct json *labels, *annotations, *extended_resources, *taints, *vars;
	size_t matched; /* rules that matched and produced their outputs */
};
/* Makes the five empty containers. Returns 0 or -FB_ENOMEM (then every
 * member is NULL and rules_out_free is still safe). */
int rules_out_init(struct rules_out *o);
void rules_out_free(struct rules_out *o);

/* Called for every rule that is broken or fails while running (a feature
 * value that is not an integer for Gt, a template error...): rule is its
 * name, msg says what and where. */
typedef void (*rules_error_fn)(void *ctx, const char *what, const char *rule, const char *msg);

/* Runs every rule in order against f. After each rule that matched, its
 * labels and vars (as written, before any prefixing) are merged into the
 * attribute feature "rule.matched" of f, which later rules (of this list and
 * of lists run after it on the same f) can match: so f is modified. As
 * upstream, a rule that ran without matching still creates an empty
 * "rule.matched", so "DoesNotExist" on it can hold. A broken or failing rule
 * produces no output, is reported through err (may be NULL) and the next
 * rule runs. Returns the number of rules that failed (>= 0), -FB_ENOMEM, or
 * -FB_EINVAL when f->root is not an object. */
int rules_run(const struct rules *r, struct features *f, struct rules_out *out, rules_error_fn err,
	      void *ctx);

/* Calls fn for every feature key ("<domain>.<feature>") the compiled rules
 * match on, possibly more than once; "rule.matched" included. element is
 * the element (flag, attribute, or instance attribute) the rule looks at, or
 * NULL when it may look at every element of the feature (matchName,
 * templates, an empty expression set). A caller that keeps only these
 * elements of a NodeFeature (every instance, with only the named
 * attributes) loses nothing the rules see. */
void rules_refs(const struct rules *r, void (*fn)(void *ctx, const char *feature, const char *element),
		void *ctx);

/* ---- rules_explain.c (kubectl-nfd --explain) ------------------------------ */

/* Why rule i of r matches f or not, as a new JSON object (owned by the
 * caller):
 *   {"name", "matched": bool, "error"?: compile error,
 *    "matchAny"?: [M...], "matchFeatures"?: M}
 *   M = {"matched", "error"?, "terms": [T...]}   (the matcher, as rules_run
 *       evaluates it)
 *   T = {"feature", "present", "matched", "error"?, "elements"?: [E...],
 *        "expressions"?: [X...], "matchName"?: X}   (the term alone)
 *   X = {"key"?, "op", "values", "type"?, "matched", "error"?,
 *        "elements"?: [E...] (held for these), "seen"?: [S...] (failed: what
 *        f has under key)}   (the expression alone)
 *   E = {"name", "value"?} | {"instance": index}
 *   S = {"kind": "flag", "present"} | {"kind": "attribute", "value"?} |
 *       {"kind": "instance", "index", "value"?} | {"kind": "more", "count"}
 * "matched" of the rule is its matchers' verdict; a template that fails
 * while running is rules_run's to report. f is not changed. Returns 0,
 * -FB_EINVAL (no rule i) or -FB_ENOMEM. */
int rules_explain(const struct rules *r, size_t i, const struct features *f, struct json **out);

#endif
