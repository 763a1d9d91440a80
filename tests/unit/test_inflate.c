/* inflate: the gzip files of tests/unit/data/inflate (made by gen.py there:
 * gzip -1/-9, zlib's stored, fixed, Huffman-only, RLE and filtered
 * strategies, empty, multi-member, every header field, and corrupt or
 * hand-made streams) with the output or the error each must give; the output
 * cap at its edge (stored blocks built here); every truncation and every
 * one-byte change of a small file never crashes and never passes the cap.
 * Needs FB_TOP (tests/run exports it; "." otherwise). */
#include "t.h"
#include "t_gzip.h"

#include "../../core/inflate.h"

#include <stdint.h>

/* The plain text gen.py's kconfig_text(n) makes, in a static buffer. */
static const char *kconfig_text(int n, size_t *len)
{
	static char out[64 << 10];
	size_t off = (size_t)snprintf(out, sizeof(out),
				      "#\n# Automatically generated file; DO NOT EDIT.\n#\n");

	for (int i = 0; i < n && off < sizeof(out); i++) {
		size_t room = sizeof(out) - off;

		switch (i % 4) {
		case 0:
			off += (size_t)snprintf(out + off, room, "CONFIG_OPTION_%d=y\n", i);
			break;
		case 1:
			off += (size_t)snprintf(out + off, room, "CONFIG_OPTION_%d=m\n", i);
			break;
		case 2:
			off += (size_t)snprintf(out + off, room, "CONFIG_OPTION_%d=\"value %d\"\n", i,
						i * 7);
			break;
		default:
			off += (size_t)snprintf(out + off, room, "# CONFIG_OPTION_%d is not set\n", i);
		}
	}
	*len = off;
	return out;
}

/* data/inflate/NAME.hex as bytes, into a static buffer; exits 2 when it
 * cannot be read (a missing fixture is not a test result). */
static const unsigned char *vector(const char *name, size_t *len)
{
	static unsigned char out[16 << 10];
	const char *top = getenv("FB_TOP");
	char path[1024];
	FILE *f;
	int c, hi = -1;

	snprintf(path, sizeof(path), "%s/tests/unit/data/inflate/%s.hex", top ? top : ".", name);
	if (!(f = fopen(path, "r"))) {
		perror(path);
		exit(2);
	}
	*len = 0;
	while ((c = fgetc(f)) != EOF) {
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (v < 0)
			continue;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (*len == sizeof(out)) {
			fprintf(stderr, "%s: too big\n", path);
			exit(2);
		}
		out[(*len)++] = (unsigned char)(hi << 4 | v);
		hi = -1;
	}
	fclose(f);
	return out;
}

#define KC(n) (n), NULL
#define TXT(s) -1, (s)

static const struct {
	const char *name;
	int options;       /* the output is kconfig_text(options), or when -1: */
	const char *plain; /* this string (NULL: no output expected) */
	int rc;            /* 0, or the negative code */
	const char *detail;
} cases[] = {
	{ "gzip-1", KC(1500), 0, NULL },
	{ "gzip-9", KC(1500), 0, NULL },
	{ "stored", KC(40), 0, NULL },
	{ "fixed", KC(40), 0, NULL },
	{ "huffman-only", KC(40), 0, NULL },
	{ "rle", KC(40), 0, NULL },
	{ "filtered", KC(40), 0, NULL },
	{ "empty", TXT(""), 0, NULL },
	{ "empty-fixed", TXT(""), 0, NULL },
	{ "header-fields", KC(40), 0, NULL },
	{ "name-511", KC(40), 0, NULL },
	{ "reserved-flags", KC(40), 0, NULL }, /* as Go: ignored */
	{ "one-distance", TXT(NULL), 0, NULL },
	{ "lone-distance-code", TXT("aaaab"), 0, NULL },
	{ "empty-distance-code", TXT("abcab"), 0, NULL },
	{ "bad-magic", TXT(NULL), -FB_EINVAL, "not in gzip format (bad magic)" },
	{ "not-gzip", TXT(NULL), -FB_EINVAL, "not in gzip format (bad magic)" },
	{ "bad-method", TXT(NULL), -FB_EINVAL, "unknown compression method (not deflate)" },
	{ "bad-crc", TXT(NULL), -FB_EINVAL, "CRC-32 mismatch" },
	{ "bad-isize", TXT(NULL), -FB_EINVAL, "length (ISIZE) mismatch" },
	{ "bad-header-crc", TXT(NULL), -FB_EINVAL, "gzip header CRC mismatch" },
	{ "truncated-header", TXT(NULL), -FB_EINVAL, "truncated gzip header" },
	{ "truncated-data", TXT(NULL), -FB_EINVAL, "unexpected end of data" },
	{ "truncated-trailer", TXT(NULL), -FB_EINVAL, "truncated gzip trailer" },
	{ "trailing-garbage", TXT(NULL), -FB_EINVAL,
	  "data after the last member that is not a gzip member" },
	{ "trailing-short", TXT(NULL), -FB_EINVAL, "truncated gzip header after a member" },
	{ "name-too-long", TXT(NULL), -FB_EINVAL, "file name in the gzip header too long" },
	{ "name-unterminated", TXT(NULL), -FB_EINVAL, "truncated gzip header" },
	{ "stored-nlen", TXT(NULL), -FB_EINVAL, "stored block length does not match its complement" },
	{ "block-type-3", TXT(NULL), -FB_EINVAL, "invalid block type" },
	{ "distance-too-far", TXT(NULL), -FB_EINVAL, "invalid distance too far back" },
	{ "distance-into-previous-member", TXT(NULL), -FB_EINVAL, "invalid distance too far back" },
	{ "distance-code-30", TXT(NULL), -FB_EINVAL, "invalid distance code" },
	{ "literal-286", TXT(NULL), -FB_EINVAL, "invalid literal/length code" },
	{ "too-many-lengths", TXT(NULL), -FB_EINVAL, "too many length or distance symbols" },
	{ "oversubscribed-code-length-code", TXT(NULL), -FB_EINVAL, "over-subscribed code lengths" },
	{ "incomplete-code-length-code", TXT(NULL), -FB_EINVAL, "incomplete code lengths" },
	{ "oversubscribed-literal-code", TXT(NULL), -FB_EINVAL, "over-subscribed code lengths" },
	{ "incomplete-literal-code", TXT(NULL), -FB_EINVAL, "incomplete code lengths" },
	{ "incomplete-distance-code", TXT(NULL), -FB_EINVAL, "incomplete code lengths" },
	{ "repeat-first", TXT(NULL), -FB_EINVAL, "repeat of no previous code length" },
	{ "repeat-past-end", TXT(NULL), -FB_EINVAL, "code length repeat past the last symbol" },
	{ "no-end-of-block", TXT(NULL), -FB_EINVAL, "no end-of-block code" },
	{ "empty-distance-code-used", TXT(NULL), -FB_EINVAL, "invalid distance code" },
};

static void vectors(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fb_errinfo ei;
		size_t len, want_len = 0;
		const unsigned char *in = vector(cases[i].name, &len);
		const char *want = cases[i].options >= 0 ? kconfig_text(cases[i].options, &want_len)
							 : cases[i].plain;
		char *out, name[160], msg[512];
		ssize_t n;

		if (cases[i].options < 0 && want)
			want_len = strlen(want);
		fb_errinfo_init(&ei);
		n = inflate_gzip(in, len, 1 << 20, &out, "config.gz", &ei);
		snprintf(name, sizeof(name), "%s: result", cases[i].name);
		T_OK(name, cases[i].rc ? n == cases[i].rc : n >= 0, "got %zd (%s), want %d", n,
		     n < 0 ? fb_errinfo_str(&ei, msg, sizeof(msg)) : "ok", cases[i].rc);
		if (cases[i].rc) {
			snprintf(name, sizeof(name), "%s: message", cases[i].name);
			snprintf(msg, sizeof(msg), "config.gz: %s", cases[i].detail);
			T_STR(name, fb_errinfo_str(&ei, msg + 256, 256), msg);
			T_OK(name, out == NULL, "output set on an error");
		} else if (n >= 0 && want) {
			snprintf(name, sizeof(name), "%s: output", cases[i].name);
			T_OK(name, (size_t)n == want_len && memcmp(out, want, want_len) == 0 &&
					   out[n] == '\0',
			     "%zd bytes, want %zu", n, want_len);
		}
		free(out);
	}
}

/* The cap: exactly max bytes pass, one more is -FB_E2BIG with a message,
 * for stored data (several blocks) and for 1 MiB of zeros (a bomb of 1 KiB). */
static void cap(void)
{
	size_t n = 70000, len, zlen;
	unsigned char *plain = malloc(n), *g;
	const unsigned char *z;
	struct fb_errinfo ei;
	char *out, msg[256];
	ssize_t r;

	for (size_t i = 0; i < n; i++)
		plain[i] = (unsigned char)(i * 2654435761u >> 13);
	g = t_stored_gzip(plain, n, &len);
	r = inflate_gzip(g, len, n, &out, "x", NULL);
	T_OK("cap: stored, exactly max", r == (ssize_t)n && memcmp(out, plain, n) == 0, "got %zd", r);
	free(out);
	fb_errinfo_init(&ei);
	r = inflate_gzip(g, len, n - 1, &out, "x", &ei);
	T_INT("cap: stored, one over", r, -FB_E2BIG);
	T_STR("cap: stored, message", fb_errinfo_str(&ei, msg, sizeof(msg)),
	      "x: output larger than 69999 bytes");
	T_OK("cap: stored, no output", out == NULL, "output set");
	free(g);
	free(plain);

	g = t_stored_gzip((const unsigned char *)"", 0, &len);
	r = inflate_gzip(g, len, 0, &out, "x", NULL);
	T_OK("cap: 0 bytes under a cap of 0", r == 0 && out && out[0] == '\0', "got %zd", r);
	free(out);
	free(g);

	z = vector("zeros-1mib", &zlen);
	r = inflate_gzip(z, zlen, 1 << 20, &out, "x", NULL);
	T_INT("cap: 1 MiB of zeros", r, 1 << 20);
	free(out);
	r = inflate_gzip(z, zlen, 4096, &out, "x", NULL);
	T_INT("cap: 1 MiB of zeros over a cap of 4096", r, -FB_E2BIG);
	free(out);
	r = inflate_gzip(z, 0, 1 << 20, &out, "x", &ei);
	T_OK("empty file", r == -FB_EINVAL && strcmp(ei.detail, "empty file") == 0, "got %zd", r);
}

/* Every proper prefix of a file is an error; every one-byte change either
 * passes the checks (a byte the format ignores) or is an error, and never
 * gives more than the cap. Run under the sanitizers in the check flavour. */
static void mangled(void)
{
	const char *names[] = { "fixed", "header-fields", "multi-member" };

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		size_t len, bad_prefix = 0, over = 0;
		const unsigned char *v = vector(names[k], &len);
		unsigned char *in = malloc(len);
		char name[128], *out;

		memcpy(in, v, len);
		for (size_t n = 0; n < len; n++) {
			unsigned char *exact = malloc(n ? n : 1);
			ssize_t r;

			memcpy(exact, in, n);
			r = inflate_gzip(exact, n, 4096, &out, "x", NULL);
			bad_prefix += r != -FB_EINVAL;
			free(out);
			free(exact);
		}
		/* but one: the end of the first member is a whole file */
		snprintf(name, sizeof(name), "%s: every truncation is an error", names[k]);
		T_INT(name, bad_prefix, strcmp(names[k], "multi-member") == 0);
		for (size_t i = 0; i < len; i++)
			for (int bit = 0; bit < 8; bit++) {
				ssize_t r;

				in[i] ^= (unsigned char)(1 << bit);
				r = inflate_gzip(in, len, 2048, &out, "x", NULL);
				over += r > 2048 || (r >= 0 && (!out || out[r] != '\0')) ||
					(r < 0 && r != -FB_EINVAL && r != -FB_E2BIG);
				free(out);
				in[i] ^= (unsigned char)(1 << bit);
			}
		snprintf(name, sizeof(name), "%s: every bit flip is bounded", names[k]);
		T_INT(name, over, 0);
		free(in);
	}
}

int main(void)
{
	t_suite = "inflate";
	vectors();
	cap();
	mangled();
	return t_done();
}
