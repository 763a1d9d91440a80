/* labels: Kubernetes label syntax (k8s.io/apimachinery pkg/util/validation)
 * and the devicetree compatible-string sanitiser of the dt-labeller spec. */
#ifndef FB_LABELS_H
#define FB_LABELS_H

#include <stddef.h>
#include <sys/types.h>

#define LABELS_NAME_MAX 63
#define LABELS_VALUE_MAX 63
#define LABELS_PREFIX_MAX 253

/* 1 when s[0..len) is a label name: 1..63 of [A-Za-z0-9._-], alphanumeric at
 * both ends; else 0. */
int labels_valid_name(const char *s, size_t len);

/* 1 when s[0..len) is a label value: empty, or the same rules as a name. */
int labels_valid_value(const char *s, size_t len);

/* 1 when s[0..len) is a key prefix: a DNS-1123 subdomain of at most 253
 * characters (lower-case alphanumerics, '-', '.', alphanumeric at the ends of
 * each dot-separated part). */
int labels_valid_prefix(const char *s, size_t len);

/* 1 when key is "[prefix/]name" with both parts valid. */
int labels_valid_key(const char *key);

/* Turns one devicetree compatible string (cs[0..len)) into a label name:
 * vendor "xlnx" (the text before the first ',') becomes "xilinx", every ','
 * becomes '-', anything outside [A-Za-z0-9._-] becomes '_', and leading and
 * trailing non-alphanumerics are trimmed. Writes a NUL-terminated name into
 * out. Returns its length, 0 when nothing is left (skip it), or -FB_E2BIG
 * when it is longer than 63 characters (skip it: truncation makes collisions)
 * or does not fit in size. */
ssize_t labels_dt_name(const char *cs, size_t len, char *out, size_t size);

#endif
