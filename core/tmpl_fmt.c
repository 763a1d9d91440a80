/* tmpl_fmt: values printed as Go's fmt prints them: Fprint for {{ }}
 * output and print/println, and Sprintf for printf with the verbs %v %s %d
 * %q %t %x %X %o %b %c %e %f %g %T %%, flags, width and precision, and
 * fmt's texts for a wrong type (%!d(string=x)), a missing or an extra
 * argument. Another verb is an error naming it. */
#include "tmpl_int.h"

#include "err.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* strconv.FormatFloat(f, 'g', -1, 64): the shortest digits that read back. */
static void put_float(struct buf *o, double f)
{
	char s[64];
	int p, exp;

	if (isnan(f)) {
		buf_puts(o, "NaN");
		return;
	}
	if (isinf(f)) {
		buf_puts(o, f > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (p = 1; p < 17; p++) {
		snprintf(s, sizeof(s), "%.*e", p - 1, f);
		if (strtod(s, NULL) == f)
			break;
	}
	snprintf(s, sizeof(s), "%.*e", p - 1, f);
	exp = atoi(strchr(s, 'e') + 1);
	if (exp < -4 || exp >= 6) { /* shortest %g decides at precision 6 */
		buf_puts(o, s);
		return;
	}
	buf_printf(o, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 0, f);
}

void tmpl_print_(struct buf *o, const struct tval *v, int top)
{
	switch (v->k) {
	case VK_NIL:
		buf_puts(o, top ? "<no value>" : "<nil>");
		break;
	case VK_BOOL:
		buf_puts(o, v->i ? "true" : "false");
		break;
	case VK_INT:
		buf_printf(o, "%lld", v->i);
		break;
	case VK_FLOAT:
		put_float(o, v->f);
		break;
	case VK_STR:
		buf_put(o, v->s, v->len);
		break;
	case VK_LIST:
	case VK_MAP:
		buf_puts(o, v->k == VK_MAP ? "map[" : "[");
		for (size_t i = 0; i < v->n && !o->err; i++) {
			if (i)
				buf_putc(o, ' ');
			if (v->k == VK_MAP) {
				buf_puts(o, v->key[i]);
				buf_putc(o, ':');
			}
			tmpl_print_(o, v->v[i], 0);
		}
		buf_putc(o, ']');
		break;
	}
}

void tmpl_sprint_(struct buf *o, const struct tval **a, size_t n, int ln)
{
	for (size_t i = 0; i < n; i++) {
		if (i && (ln || (a[i]->k != VK_STR && a[i - 1]->k != VK_STR)))
			buf_putc(o, ' ');
		tmpl_print_(o, a[i], 0);
	}
	if (ln)
		buf_putc(o, '\n');
}

struct spec {
	int minus, plus, sharp, zero, space, width, prec;
	char verb;
};

static void pad(struct buf *o, const struct spec *sp, const char *s, size_t len, int numeric)
{
	size_t w = sp->width > 0 ? (size_t)sp->width : 0, chars = 0;

	for (size_t i = 0; i < len; i++)
		chars += ((unsigned char)s[i] & 0xc0) != 0x80;
	if (sp->minus || chars >= w) {
		buf_put(o, s, len);
		for (; !sp->minus ? 0 : chars < w; chars++)
			buf_putc(o, ' ');
		return;
	}
	if (sp->zero && numeric && (*s == '-' || *s == '+' || *s == ' ')) {
		buf_putc(o, *s++);
		len--;
	}
	for (; chars < w; chars++)
		buf_putc(o, sp->zero && numeric ? '0' : ' ');
	buf_put(o, s, len);
}

/* The rune of the UTF-8 sequence at s (len bytes left) and its length;
 * -1 for an invalid byte. */
long tmpl_rune_(const char *s, size_t len, size_t *n)
{
	unsigned char c = (unsigned char)s[0];
	size_t need = c < 0x80 ? 1 : c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
	long r = need == 1 ? c : need == 2 ? c & 0x1f : need == 3 ? c & 0x0f : c & 0x07;

	*n = 1;
	if (!need || need > len)
		return -1;
	for (size_t i = 1; i < need; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			return -1;
		r = r << 6 | ((unsigned char)s[i] & 0x3f);
	}
	if ((need == 3 && (r < 0x800 || (r >= 0xd800 && r < 0xe000))) || (need == 4 && (r < 0x10000 || r > 0x10ffff)))
		return -1;
	*n = need;
	return r;
}

/* unicode.IsPrint for the runes above ASCII, as far as labels meet them:
 * the C1 controls, the non-ASCII spaces, format and separator characters
 * are not printable. */
int tmpl_printable_(long r)
{
	if (r < 0x80)
		return r >= 0x20 && r < 0x7f;
	return !((r >= 0x80 && r <= 0xa0) || r == 0xad || r == 0x1680 || (r >= 0x2000 && r <= 0x200f) ||
		 (r >= 0x2028 && r <= 0x202f) || (r >= 0x205f && r <= 0x206f) || r == 0x3000 || r == 0xfeff ||
		 (r >= 0xfff9 && r <= 0xfffb) || (r >= 0xe000 && r <= 0xf8ff) || (r & 0xfffe) == 0xfffe);
}

/* strconv.Quote */
static void quote(struct buf *o, const char *s, size_t len)
{
	buf_putc(o, '"');
	for (size_t i = 0, n; i < len; i += n) {
		long r = tmpl_rune_(s + i, len - i, &n);
		const char *e = r > 0 && r < 0x80 ? strchr("\a\b\f\n\r\t\v\\\"", (int)r) : NULL;

		if (e)
			buf_printf(o, "\\%c", "abfnrtv\\\""[e - "\a\b\f\n\r\t\v\\\""]);
		else if (r < 0)
			buf_printf(o, "\\x%02x", (unsigned char)s[i]);
		else if (tmpl_printable_(r))
			buf_put(o, s + i, n);
		else if (r < 0x80)
			buf_printf(o, "\\x%02lx", r);
		else if (r < 0x10000)
			buf_printf(o, "\\u%04lx", r);
		else
			buf_printf(o, "\\U%08lx", r);
	}
	buf_putc(o, '"');
}

static void fmt_int(struct buf *o, const struct spec *sp, long long i)
{
	char digits[80], out[200], *d = digits + sizeof(digits);
	unsigned long long u = i < 0 ? 0 - (unsigned long long)i : (unsigned long long)i;
	int base = strchr("xX", sp->verb) ? 16 : sp->verb == 'o' ? 8 : sp->verb == 'b' ? 2 : 10;
	const char *dig = sp->verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
	size_t n;

	*--d = 0;
	do {
		*--d = dig[u % (unsigned)base];
		u /= (unsigned)base;
	} while (u);
	while (sp->prec >= 0 && (int)strlen(d) < sp->prec && d > digits + 2)
		*--d = '0';
	if (sp->prec == 0 && i == 0)
		*d = 0;
	n = (size_t)snprintf(out, sizeof(out), "%s%s%s", i < 0 ? "-" : sp->plus ? "+" : sp->space ? " " : "",
			     sp->sharp && base == 16 ? (sp->verb == 'X' ? "0X" : "0x") : sp->sharp && base == 8 ? "0" : "",
			     d);
	if (sp->prec >= 0) {
		struct spec s2 = *sp;

		s2.zero = 0;
		pad(o, &s2, out, n, 1);
	} else {
		pad(o, sp, out, n, 1);
	}
}

static void fmt_float(struct buf *o, const struct spec *sp, double f)
{
	char cf[32], out[400];
	struct buf b;
	int n;

	if (sp->verb == 'v' || ((sp->verb == 'g' || sp->verb == 'G') && sp->prec < 0)) {
		buf_init(&b, 0);
		if (sp->plus && f >= 0)
			buf_putc(&b, '+');
		else if (sp->space && f >= 0)
			buf_putc(&b, ' ');
		put_float(&b, f);
		for (size_t i = 0; sp->verb == 'G' && b.p && i < b.len; i++)
			if (b.p[i] == 'e')
				b.p[i] = 'E';
		if (b.p)
			pad(o, sp, b.p, b.len, 1);
		buf_free(&b);
		return;
	}
	snprintf(cf, sizeof(cf), "%%%s%s%s.*%c", sp->plus ? "+" : "", sp->space ? " " : "", sp->sharp ? "#" : "",
		 sp->verb);
	n = snprintf(out, sizeof(out), cf, sp->prec < 0 ? 6 : sp->prec, f);
	if (n > 0 && (size_t)n < sizeof(out))
		pad(o, sp, out, (size_t)n, 1);
}

static int is_int(const struct tval *v)
{
	return v->k == VK_INT;
}

static void bad_verb(struct buf *o, char verb, const struct tval *a)
{
	buf_printf(o, "%%!%c(", verb);
	if (a->k == VK_NIL) {
		buf_puts(o, "<nil>)");
		return;
	}
	buf_printf(o, "%s=", a->type);
	tmpl_print_(o, a, 0);
	buf_putc(o, ')');
}

/* One argument with one verb. */
static int fmt_one(struct tx *x, struct buf *o, const struct spec *sp, const struct tval *a)
{
	char v = sp->verb;

	if (v == 'T') {
		pad(o, sp, a->type, strlen(a->type), 0);
		return 0;
	}
	if (a->k == VK_NIL) {
		if (v == 'v')
			pad(o, sp, "<nil>", 5, 0);
		else
			bad_verb(o, v, a);
		return 0;
	}
	if (a->k == VK_LIST || a->k == VK_MAP) {
		if (v != 'v' && v != 's' && v != 'd' && v != 'q')
			return tmpl_bad_(x, "printf: %%%c of a %s is not supported", v, a->type);
		buf_puts(o, a->k == VK_MAP ? "map[" : "[");
		for (size_t i = 0; i < a->n; i++) {
			int rc;

			if (i)
				buf_putc(o, ' ');
			if (a->k == VK_MAP) {
				struct tval k = { .k = VK_STR, .type = "string", .s = a->key[i], .len = strlen(a->key[i]) };

				if ((rc = fmt_one(x, o, sp, &k)) < 0)
					return rc;
				buf_putc(o, ':');
			}
			if ((rc = fmt_one(x, o, sp, a->v[i])) < 0)
				return rc;
		}
		buf_putc(o, ']');
		return 0;
	}
	switch (v) {
	case 'v':
		if (a->k == VK_STR)
			pad(o, sp, a->s, a->len, 0);
		else if (a->k == VK_BOOL)
			pad(o, sp, a->i ? "true" : "false", a->i ? 4 : 5, 0);
		else if (a->k == VK_INT)
			fmt_int(o, sp, a->i);
		else
			fmt_float(o, sp, a->f);
		return 0;
	case 's':
	case 'q':
		if (a->k != VK_STR) {
			if (v == 'q' && is_int(a)) {
				char c[8] = { '\'', (char)a->i, '\'', 0 };

				if (a->i >= 0x20 && a->i < 0x7f) {
					pad(o, sp, c, 3, 0);
					return 0;
				}
			}
			bad_verb(o, v, a);
		} else if (v == 's') {
			size_t len = sp->prec >= 0 && (size_t)sp->prec < a->len ? (size_t)sp->prec : a->len;

			pad(o, sp, a->s, len, 0);
		} else {
			struct buf b;

			buf_init(&b, 0);
			quote(&b, a->s, a->len);
			if (b.p)
				pad(o, sp, b.p, b.len, 0);
			buf_free(&b);
		}
		return 0;
	case 't':
		if (a->k == VK_BOOL)
			pad(o, sp, a->i ? "true" : "false", a->i ? 4 : 5, 0);
		else
			bad_verb(o, v, a);
		return 0;
	case 'd':
	case 'o':
	case 'b':
	case 'c':
	case 'U':
		if (!is_int(a)) {
			bad_verb(o, v, a);
		} else if (v == 'U') {
			char u[32];

			snprintf(u, sizeof(u), "U+%04llX", (unsigned long long)a->i);
			if (a->i < 0)
				return tmpl_bad_(x, "printf: %%U of a negative number is not supported");
			pad(o, sp, u, strlen(u), 0);
		} else if (v == 'c') {
			char c[8];
			size_t n = a->i >= 0 && a->i < 0x80 ? 1 : 0;

			c[0] = (char)a->i;
			if (!n)
				return tmpl_bad_(x, "printf: %%c of a non-ASCII rune is not supported");
			pad(o, sp, c, n, 0);
		} else {
			fmt_int(o, sp, a->i);
		}
		return 0;
	case 'x':
	case 'X':
		if (is_int(a)) {
			fmt_int(o, sp, a->i);
		} else if (a->k == VK_STR) {
			struct buf b;

			buf_init(&b, 0);
			for (size_t i = 0; i < a->len; i++)
				buf_printf(&b, v == 'x' ? "%s%02x" : "%s%02X", i && sp->space ? " " : "", (unsigned char)a->s[i]);
			buf_putc(&b, 0);
			if (b.p)
				pad(o, sp, b.p, b.len - 1, 0);
			buf_free(&b);
		} else {
			bad_verb(o, v, a);
		}
		return 0;
	case 'e':
	case 'E':
	case 'f':
	case 'g':
	case 'G':
		if (a->k == VK_FLOAT)
			fmt_float(o, sp, a->f);
		else
			bad_verb(o, v, a);
		return 0;
	default:
		return tmpl_bad_(x, "printf: verb %%%c is not supported", v);
	}
}

int tmpl_sprintf_(struct tx *x, struct buf *o, const struct tval *f, const struct tval **a, size_t n)
{
	const char *p = f->s, *end = f->s + f->len;
	size_t ai = 0;
	int rc, reordered = 0;

	while (p < end) {
		const char *pct = memchr(p, '%', (size_t)(end - p));
		struct spec sp = { .prec = -1 };

		if (!pct)
			pct = end;
		buf_put(o, p, (size_t)(pct - p));
		if ((p = pct) == end)
			break;
		for (p++; p < end && strchr("-+ 0#", *p); p++) {
			sp.minus |= *p == '-';
			sp.plus |= *p == '+';
			sp.space |= *p == ' ';
			sp.zero |= *p == '0';
			sp.sharp |= *p == '#';
		}
		if (p < end && *p == '[') { /* %[n]d: the n-th argument next */
			size_t k = 0;

			for (p++; p < end && isdigit((unsigned char)*p) && k < 1000; p++)
				k = k * 10 + (size_t)(*p - '0');
			if (p == end || *p != ']' || k == 0 || k > n)
				return tmpl_bad_(x, "printf: a bad argument index is not supported");
			p++;
			ai = k - 1;
			reordered = 1;
		}
		if (p < end && *p == '*') { /* the width from an int argument */
			p++;
			if (ai >= n || !is_int(a[ai]) || a[ai]->i > 10000 || a[ai]->i < -10000)
				return tmpl_bad_(x, "printf: a bad * width is not supported");
			sp.width = (int)a[ai++]->i;
			if (sp.width < 0) {
				sp.minus = 1;
				sp.width = -sp.width;
			}
		}
		if (sp.minus)
			sp.zero = 0;
		for (; p < end && isdigit((unsigned char)*p) && sp.width < 10000; p++)
			sp.width = sp.width * 10 + (*p - '0');
		if (p < end && *p == '.')
			for (sp.prec = 0, p++; p < end && isdigit((unsigned char)*p) && sp.prec < 10000; p++)
				sp.prec = sp.prec * 10 + (*p - '0');
		if (p < end && (*p == '[' || *p == '*'))
			return tmpl_bad_(x, "printf: argument indexes and * after the width are not supported");
		if (p == end) {
			buf_puts(o, "%!(NOVERB)");
			break;
		}
		sp.verb = *p++;
		if (sp.verb == '%') {
			buf_putc(o, '%');
			continue;
		}
		if ((unsigned char)sp.verb >= 0x80 || !strchr("vsdqtxXobcUeEfgGT", sp.verb))
			return tmpl_bad_(x, "printf: verb %%%c is not supported", sp.verb);
		if (ai >= n) {
			buf_printf(o, "%%!%c(MISSING)", sp.verb);
			continue;
		}
		if ((rc = fmt_one(x, o, &sp, a[ai++])) < 0)
			return rc;
	}
	if (ai < n && !reordered) {
		buf_puts(o, "%!(EXTRA ");
		for (size_t i = ai; i < n; i++) {
			if (i > ai)
				buf_puts(o, ", ");
			if (a[i]->k == VK_NIL) {
				buf_puts(o, "<nil>");
				continue;
			}
			buf_printf(o, "%s=", a[i]->type);
			tmpl_print_(o, a[i], 0);
		}
		buf_putc(o, ')');
	}
	return 0;
}
