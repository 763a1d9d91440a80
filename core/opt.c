#include "opt.h"

#include "err.h"
#include "version.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

static int usage_err(const struct opt_spec *spec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int usage_err(const struct opt_spec *spec, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", spec->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", spec->name);
	return -FB_EUSAGE;
}

/* The applet's table, then the shared one; *off: where the option's
 * struct starts in the options struct (0 for the applet's own). */
static const struct opt *find_long(const struct opt_spec *spec, const char *name, size_t len, size_t *off)
{
	for (int t = 0; t < 2; t++) {
		const struct opt *v = t ? spec->more : spec->opts;
		size_t n = t ? spec->nmore : spec->nopts;

		for (size_t i = 0; v && i < n; i++) {
			const char *lo = v[i].lo;

			if (lo && strlen(lo) == len && memcmp(lo, name, len) == 0) {
				*off = t ? spec->more_off : 0;
				return &v[i];
			}
		}
	}
	return NULL;
}

static const struct opt *find_short(const struct opt_spec *spec, char c, size_t *off)
{
	for (int t = 0; t < 2; t++) {
		const struct opt *v = t ? spec->more : spec->opts;
		size_t n = t ? spec->nmore : spec->nopts;

		for (size_t i = 0; v && i < n; i++)
			if (v[i].so == c) {
				*off = t ? spec->more_off : 0;
				return &v[i];
			}
	}
	return NULL;
}

static int parse_bool(const char *s, int *out)
{
	static const char *const t[] = { "1", "t", "true" }, *const f[] = { "0", "f", "false" };

	for (size_t i = 0; i < 3; i++) {
		if (strcasecmp(s, t[i]) == 0)
			return *out = 1, 0;
		if (strcasecmp(s, f[i]) == 0)
			return *out = 0, 0;
	}
	return -FB_EINVAL;
}

/* Go's leadingInt: digits into *x; 1 when they pass 1<<63. */
static int lead_int(const char **s, unsigned long long *x)
{
	const unsigned long long lim = 1ULL << 63;

	for (*x = 0; **s >= '0' && **s <= '9'; (*s)++) {
		if (*x > lim / 10)
			return 1;
		*x = *x * 10 + (unsigned long long)(**s - '0');
		if (*x > lim)
			return 1;
	}
	return 0;
}

/* Go's leadingFraction: digits after the point into *x over *scale; digits
 * that would overflow are consumed and ignored. */
static void lead_fraction(const char **s, unsigned long long *x, double *scale)
{
	const unsigned long long lim = 1ULL << 63;
	int overflow = 0;

	for (*x = 0, *scale = 1; **s >= '0' && **s <= '9'; (*s)++) {
		unsigned long long y;

		if (overflow)
			continue;
		if (*x > (lim - 1) / 10) {
			overflow = 1;
			continue;
		}
		y = *x * 10 + (unsigned long long)(**s - '0');
		if (y > lim) {
			overflow = 1;
			continue;
		}
		*x = y;
		*scale *= 10;
	}
}

int opt_parse_duration(const char *s, long long *ns)
{
	static const struct { const char *u; unsigned long long mul; } units[] = {
		{ "ns", 1ULL }, { "us", 1000ULL }, { "\xC2\xB5s", 1000ULL }, { "\xCE\xBCs", 1000ULL },
		{ "ms", 1000000ULL }, { "s", 1000000000ULL }, { "m", 60000000000ULL },
		{ "h", 3600000000000ULL },
	};
	const unsigned long long lim = 1ULL << 63;
	unsigned long long d = 0;
	int neg = 0;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (strcmp(s, "0") == 0)
		return *ns = 0, 0;
	if (*s == '\0')
		return -FB_EINVAL;
	while (*s) {
		unsigned long long v, f = 0, mul;
		double scale = 1;
		const char *start = s, *u;
		int pre, post = 0;
		size_t ulen, i;

		if (*s != '.' && (*s < '0' || *s > '9'))
			return -FB_EINVAL;
		if (lead_int(&s, &v))
			return -FB_ERANGE;
		pre = s != start;
		if (*s == '.') {
			const char *p = ++s;

			lead_fraction(&s, &f, &scale);
			post = s != p;
		}
		if (!pre && !post)
			return -FB_EINVAL;
		for (u = s; *s && *s != '.' && (*s < '0' || *s > '9'); s++)
			;
		ulen = (size_t)(s - u);
		if (ulen == 0)
			return -FB_EINVAL; /* missing unit */
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strlen(units[i].u) == ulen && memcmp(units[i].u, u, ulen) == 0)
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -FB_EINVAL;
		mul = units[i].mul;
		if (v > lim / mul)
			return -FB_ERANGE;
		v *= mul;
		if (f > 0) {
			/* float64, as Go does: "0.3333333333333333333h" is 20m */
			v += (unsigned long long)((double)f * ((double)mul / scale));
			if (v > lim)
				return -FB_ERANGE;
		}
		d += v;
		if (d > lim)
			return -FB_ERANGE;
	}
	if (neg) {
		*ns = d == lim ? LLONG_MIN : -(long long)d;
		return 0;
	}
	if (d > lim - 1)
		return -FB_ERANGE;
	*ns = (long long)d;
	return 0;
}

/* Stores val (NULL: the option was given without a value) into o's destination in base. */
static int opt_set(const struct opt_spec *spec, char *base, const struct opt *o, const char *shown, char *val)
{
	void *dst = base + o->off;

	switch (o->kind) {
	case OPT_IGNORE:
		if (!o->arg && val && parse_bool(val, &(int){ 0 }) < 0)
			return usage_err(spec, "%s: '%s' is not a boolean (true/false)", shown, val);
		*(unsigned *)dst |= 1u << o->min;
		break;
	case OPT_FLAG:
		if (!val)
			*(int *)dst = 1;
		else if (parse_bool(val, dst) < 0)
			return usage_err(spec, "%s: '%s' is not a boolean (true/false)", shown, val);
		break;
	case OPT_STR:
		*(const char **)dst = val;
		break;
	case OPT_OPTSTR:
		/* a later bare "-f" must not undo an earlier "--features-file=X" */
		if (val)
			*(const char **)dst = val;
		break;
	case OPT_STRS: {
		struct opt_list *l = dst;

		if (l->n == OPT_LIST_MAX)
			return usage_err(spec, "%s: given more than %d times", shown, OPT_LIST_MAX);
		l->v[l->n++] = val;
		break;
	}
	case OPT_INT: {
		char *end;
		long n;

		errno = 0;
		n = strtol(val, &end, 10);
		if (*val == '\0' || *end != '\0')
			return usage_err(spec, "%s: '%s' is not an integer", shown, val);
		if (errno == ERANGE || n < o->min || n > o->max)
			return usage_err(spec, "%s: %s is out of range %ld..%ld", shown, val,
					 o->min, o->max);
		*(long *)dst = n;
		break;
	}
	case OPT_DUR: {
		long long ns = 0, ms;
		int rc = opt_parse_duration(val, &ns);

		ms = ns / 1000000; /* toward zero: "1500us" is 1 ms */
		if (rc < 0)
			return usage_err(spec, "%s: '%s' is not a duration (like 90s, 1m30s, 500ms)",
					 shown, val);
		if (ms < o->min || (o->max && ms > o->max))
			return usage_err(spec, "%s: %s is out of range", shown, val);
		*(long long *)dst = ms;
		break;
	}
	case OPT_LIST: {
		struct opt_list *l = dst;

		for (char *p = val, *next; p; p = next) {
			next = strchr(p, ',');
			if (next)
				*next++ = '\0';
			if (*p == '\0')
				continue;
			if (l->n == OPT_LIST_MAX)
				return usage_err(spec, "%s: more than %d values", shown, OPT_LIST_MAX);
			l->v[l->n++] = p;
		}
		break;
	}
	}
	if (o->seen)
		*(int *)(base + o->seen - 1) = 1;
	return 0;
}

int opt_set_value(const struct opt_spec *spec, void *base, const struct opt *o, const char *shown,
		  const char *value)
{
	if (o->kind == OPT_LIST || o->kind == OPT_STRS)
		return -FB_EINVAL;
	/* the string kinds only borrow it; the others read it */
	return opt_set(spec, base, o, shown, (char *)(uintptr_t)value);
}

static int takes_value(const struct opt *o)
{
	return o->kind != OPT_FLAG && o->kind != OPT_OPTSTR && (o->kind != OPT_IGNORE || o->arg);
}

/* Handles a long option "name[=value]" at argv[*i]. */
static int parse_long(const struct opt_spec *spec, char *base, const struct opt *o, const char *dashes,
		      char *eq, int argc, char **argv, int *i)
{
	char shown[96];

	snprintf(shown, sizeof(shown), "%s%s", dashes, o->lo);
	if (eq)
		return opt_set(spec, base, o, shown, eq + 1);
	if (!takes_value(o))
		return opt_set(spec, base, o, shown, NULL);
	if (*i + 1 >= argc)
		return usage_err(spec, "%s needs a value", shown);
	return opt_set(spec, base, o, shown, argv[++*i]);
}

static int parse_shorts(const struct opt_spec *spec, char *opts, int argc, char **argv, int *i)
{
	for (char *p = argv[*i] + 1; *p; p++) {
		size_t off = 0;
		const struct opt *o = find_short(spec, *p, &off);
		char shown[3] = { '-', *p, '\0' }, *base = opts + off;

		if (!o)
			return usage_err(spec, "unknown option -%c", *p);
		if (p[1] == '=') /* Go style "-d=true", "-v=3" */
			return opt_set(spec, base, o, shown, p + 2);
		if (!takes_value(o)) {
			int rc = opt_set(spec, base, o, shown, NULL);

			if (rc < 0)
				return rc;
			continue;
		}
		if (p[1])
			return opt_set(spec, base, o, shown, p + 1);
		if (*i + 1 >= argc)
			return usage_err(spec, "%s needs a value", shown);
		return opt_set(spec, base, o, shown, argv[++*i]);
	}
	return 0;
}

/* OPT_EXIT after --help/--version went out, -FB_EIO when stdout failed. */
static int flushed(const struct opt_spec *spec)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return OPT_EXIT;
	fprintf(stderr, "%s: writing to standard output failed\n", spec->name);
	return -FB_EIO;
}

int opt_parse(const struct opt_spec *spec, void *opts, int argc, char **argv, int *first_arg)
{
	char *base = opts;
	int i, rc;

	for (i = 1; i < argc; i++) {
		char *a = argv[i], *name, *eq;
		const char *dashes;
		const struct opt *o;
		size_t len, off = 0;

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;
		dashes = a[1] == '-' ? "--" : "-";
		name = a + strlen(dashes);
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		o = find_long(spec, name, len, &off);
		if (!o && (len == 4 && memcmp(name, "help", 4) == 0)) {
			opt_help(spec);
			return flushed(spec);
		}
		if (!o && (len == 7 && memcmp(name, "version", 7) == 0)) {
			printf("%s (featurebox) %s\n", spec->name, FB_VERSION);
			return flushed(spec);
		}
		if (o && (dashes[1] == '-' || len > 1 || eq)) {
			rc = parse_long(spec, base + off, o, dashes, eq, argc, argv, &i);
		} else if (dashes[1] == '-') {
			return usage_err(spec, "unknown option --%.*s", (int)len, name);
		} else if (strcmp(a, "-h") == 0 && !find_short(spec, 'h', &off)) {
			opt_help(spec);
			return flushed(spec);
		} else {
			rc = parse_shorts(spec, base, argc, argv, &i);
		}
		if (rc < 0)
			return rc;
	}
	*first_arg = i;
	return 0;
}

static void help_table(const struct opt *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct opt *o = &v[i];
		char left[96], sh[8] = "";

		if (o->so)
			snprintf(sh, sizeof(sh), "-%c%s", o->so, o->lo ? ", " : "");
		snprintf(left, sizeof(left), "  %s%s%s%s%s%s", sh, o->lo ? "--" : "", o->lo ? o->lo : "",
			 !o->arg ? "" : o->kind == OPT_OPTSTR && o->lo ? "[=" : " ",
			 o->arg ? o->arg : "", o->arg && o->kind == OPT_OPTSTR && o->lo ? "]" : "");
		if (strlen(left) < 28)
			printf("%-28s %s\n", left, o->help);
		else
			printf("%s\n%-28s %s\n", left, "", o->help);
	}
}

void opt_help(const struct opt_spec *spec)
{
	fputs(spec->usage, stdout);
	fputs("\nOptions:\n", stdout);
	help_table(spec->opts, spec->nopts);
	printf("%-28s %s\n%-28s %s\n", "  --help", "print this help and exit",
	       "  --version", "print the version and exit");
	if (spec->more && spec->nmore) {
		printf("\n%s:\n", spec->more_title ? spec->more_title : "Also");
		help_table(spec->more, spec->nmore);
	}
}

int opt_parse_only(const struct opt_spec *spec, void *opts, int argc, char **argv)
{
	int first, rc = opt_parse(spec, opts, argc, argv, &first);

	if (rc == OPT_EXIT)
		return 0;
	if (rc < 0)
		return rc == -FB_EUSAGE ? 2 : 1;
	if (first < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\nTry '%s --help' for more information.\n", spec->name,
			argv[first], spec->name);
		return 2;
	}
	return -1;
}
