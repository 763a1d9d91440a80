/* inflate: gzip members (RFC 1952) of DEFLATE blocks (RFC 1951) into one
 * capped buffer. Written for size, not speed: Huffman codes are decoded a bit
 * at a time from canonical counts (a kernel config of 100 KiB takes under
 * 2 ms), the CRC-32 uses a 16-entry table. Written here rather than taken
 * from zlib (issue 18): 4.5 KB of text against zlib's inflate, inftrees,
 * inffast, crc32, adler32 and zutil at 24-26 KB built the same way (-Os), and
 * one file to fuzz instead of a fourth third-party library. */
#include "inflate.h"

#include "buf.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAXBITS 15   /* longest code */
#define NLIT 288     /* literal/length symbols of the fixed code */
#define NDIST 32     /* distance symbols of the fixed code (30 and 31 unused) */
#define NLENS 19     /* code length symbols */

/* A canonical Huffman code: how many codes each length has, and the symbols
 * in code order. */
struct huff {
	uint16_t count[MAXBITS + 1];
	uint16_t sym[NLIT];
};

struct inf {
	const unsigned char *in;
	size_t len, pos;     /* input, and the next byte to read */
	uint32_t bits;       /* bits read but not used, lowest first */
	unsigned nbits;      /* how many (under 8 between calls) */
	struct buf out;
	size_t start;        /* where the current member's output begins */
	const char *why;     /* the problem, for the error */
	struct huff lit, dist;
	unsigned char lens[NLIT + NDIST];
};

static int fail(struct inf *s, const char *why)
{
	s->why = why;
	return -FB_EINVAL;
}

/* The next n (at most 16) bits of the input, lowest first, into *v. */
static int getbits(struct inf *s, unsigned n, unsigned *v)
{
	while (s->nbits < n) {
		if (s->pos == s->len)
			return fail(s, "unexpected end of data");
		s->bits |= (uint32_t)s->in[s->pos++] << s->nbits;
		s->nbits += 8;
	}
	*v = s->bits & ((1u << n) - 1);
	s->bits >>= n;
	s->nbits -= n;
	return 0;
}

/* Builds h from the code lengths of n symbols. An over-subscribed set is an
 * error, and so is an incomplete one unless it is a single code of length 1
 * (zlib writes those; Go accepts them too). No code at all is accepted: the
 * first decode then fails. */
static int huff_build(struct inf *s, struct huff *h, const unsigned char *len, unsigned n)
{
	uint16_t next[MAXBITS + 1];
	int left = 1;

	memset(h->count, 0, sizeof(h->count));
	for (unsigned i = 0; i < n; i++)
		h->count[len[i]]++;
	if (h->count[0] == n)
		return 0;
	for (unsigned l = 1; l <= MAXBITS; l++) {
		left = 2 * left - h->count[l];
		if (left < 0)
			return fail(s, "over-subscribed code lengths");
	}
	if (left > 0 && !(h->count[1] == 1 && n - h->count[0] == 1))
		return fail(s, "incomplete code lengths");
	next[1] = 0;
	for (unsigned l = 1; l < MAXBITS; l++)
		next[l + 1] = (uint16_t)(next[l] + h->count[l]);
	for (unsigned i = 0; i < n; i++)
		if (len[i])
			h->sym[next[len[i]]++] = (uint16_t)i;
	return 0;
}

/* The next symbol of code h. Codes are packed first bit first, so the value
 * grows a bit at a time and is compared with the first code of each length. */
static int huff_decode(struct inf *s, const struct huff *h, const char *what)
{
	int code = 0, first = 0, index = 0;

	for (unsigned l = 1; l <= MAXBITS; l++) {
		unsigned b;
		int rc = getbits(s, 1, &b);

		if (rc < 0)
			return rc;
		code |= (int)b;
		if (code - first < h->count[l])
			return h->sym[index + code - first];
		index += h->count[l];
		first = (first + h->count[l]) << 1;
		code <<= 1;
	}
	return fail(s, what);
}

/* Room for n more output bytes. The cap is checked here, as buf takes a max
 * of 0 for none. */
static int put_room(struct inf *s, size_t n)
{
	if (n > s->out.max - s->out.len)
		return -FB_E2BIG;
	return buf_reserve(&s->out, n);
}

static int stored(struct inf *s)
{
	const unsigned char *p = s->in + s->pos;
	unsigned n;
	int rc;

	s->bits = 0; /* the rest of the byte */
	s->nbits = 0;
	if (s->len - s->pos < 4)
		return fail(s, "unexpected end of data");
	n = p[0] | (unsigned)p[1] << 8;
	if ((p[2] | (unsigned)p[3] << 8) != (~n & 0xffff))
		return fail(s, "stored block length does not match its complement");
	s->pos += 4;
	if (s->len - s->pos < n)
		return fail(s, "unexpected end of data");
	if ((rc = put_room(s, n)) < 0)
		return rc;
	memcpy(s->out.p + s->out.len, s->in + s->pos, n);
	s->out.len += n;
	s->pos += n;
	return 0;
}

/* Length and distance bases and extra bits, symbols 257.. and 0.. */
static const uint16_t len_base[29] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
	35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
static const uint8_t len_extra[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
	3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
static const uint16_t dist_base[30] = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129,
	193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577 };
static const uint8_t dist_extra[30] = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
	6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };

/* The data of a Huffman block, up to and with its end-of-block code. */
static int codes(struct inf *s)
{
	for (;;) {
		int sym = huff_decode(s, &s->lit, "invalid literal/length code"), rc;
		unsigned extra, len, dist;
		char *o;

		if (sym < 0)
			return sym;
		if (sym < 256) {
			if ((rc = put_room(s, 1)) < 0)
				return rc;
			s->out.p[s->out.len++] = (char)sym;
			continue;
		}
		if (sym == 256)
			return 0;
		if ((sym -= 257) >= 29)
			return fail(s, "invalid literal/length code");
		if ((rc = getbits(s, len_extra[sym], &extra)) < 0)
			return rc;
		len = len_base[sym] + extra;
		if ((sym = huff_decode(s, &s->dist, "invalid distance code")) < 0)
			return sym;
		if (sym >= 30)
			return fail(s, "invalid distance code");
		if ((rc = getbits(s, dist_extra[sym], &extra)) < 0)
			return rc;
		dist = dist_base[sym] + extra;
		if (dist > s->out.len - s->start)
			return fail(s, "invalid distance too far back");
		if ((rc = put_room(s, len)) < 0)
			return rc;
		/* byte by byte: the source may overlap what is being written */
		o = s->out.p + s->out.len;
		for (unsigned i = 0; i < len; i++)
			o[i] = o[(ptrdiff_t)i - (ptrdiff_t)dist];
		s->out.len += len;
	}
}

static int fixed(struct inf *s)
{
	unsigned i = 0;
	int rc;

	for (; i < 144; i++)
		s->lens[i] = 8;
	for (; i < 256; i++)
		s->lens[i] = 9;
	for (; i < 280; i++)
		s->lens[i] = 7;
	for (; i < NLIT; i++)
		s->lens[i] = 8;
	memset(s->lens + NLIT, 5, NDIST);
	if ((rc = huff_build(s, &s->lit, s->lens, NLIT)) < 0 ||
	    (rc = huff_build(s, &s->dist, s->lens + NLIT, NDIST)) < 0)
		return rc;
	return codes(s);
}

static int dynamic(struct inf *s)
{
	static const uint8_t order[NLENS] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2,
		14, 1, 15 };
	unsigned nlit, ndist, ncode, v, i;
	int rc;

	if ((rc = getbits(s, 5, &nlit)) < 0 || (rc = getbits(s, 5, &ndist)) < 0 ||
	    (rc = getbits(s, 4, &ncode)) < 0)
		return rc;
	nlit += 257;
	ndist += 1;
	ncode += 4;
	if (nlit > 286 || ndist > 30)
		return fail(s, "too many length or distance symbols");
	memset(s->lens, 0, NLENS);
	for (i = 0; i < ncode; i++) {
		if ((rc = getbits(s, 3, &v)) < 0)
			return rc;
		s->lens[order[i]] = (unsigned char)v;
	}
	/* the code lengths code lives in lit until the real one is built */
	if ((rc = huff_build(s, &s->lit, s->lens, NLENS)) < 0)
		return rc;
	for (i = 0; i < nlit + ndist;) {
		int sym = huff_decode(s, &s->lit, "invalid code lengths code");
		unsigned rep, fill = 0;

		if (sym < 0)
			return sym;
		if (sym < 16) {
			s->lens[i++] = (unsigned char)sym;
			continue;
		}
		if (sym == 16) {
			if (i == 0)
				return fail(s, "repeat of no previous code length");
			fill = s->lens[i - 1];
			rc = getbits(s, 2, &rep);
			rep += 3;
		} else if (sym == 17) {
			rc = getbits(s, 3, &rep);
			rep += 3;
		} else {
			rc = getbits(s, 7, &rep);
			rep += 11;
		}
		if (rc < 0)
			return rc;
		if (rep > nlit + ndist - i)
			return fail(s, "code length repeat past the last symbol");
		memset(s->lens + i, (int)fill, rep);
		i += rep;
	}
	if (s->lens[256] == 0)
		return fail(s, "no end-of-block code");
	if ((rc = huff_build(s, &s->lit, s->lens, nlit)) < 0 ||
	    (rc = huff_build(s, &s->dist, s->lens + nlit, ndist)) < 0)
		return rc;
	return codes(s);
}

/* One DEFLATE stream, up to the end of its last block. */
static int deflate_stream(struct inf *s)
{
	unsigned last, type;
	int rc;

	s->bits = 0;
	s->nbits = 0;
	do {
		if ((rc = getbits(s, 1, &last)) < 0 || (rc = getbits(s, 2, &type)) < 0)
			return rc;
		if (type == 0)
			rc = stored(s);
		else if (type == 1)
			rc = fixed(s);
		else if (type == 2)
			rc = dynamic(s);
		else
			rc = fail(s, "invalid block type");
		if (rc < 0)
			return rc;
	} while (!last);
	return 0; /* the bits left in the last byte are padding */
}

/* CRC-32 (IEEE, reflected), four bits at a time. */
static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
	static const uint32_t t[16] = {
		0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4,
		0x4db26158, 0x5005713c, 0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
		0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
	};

	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		crc = (crc >> 4) ^ t[crc & 15];
		crc = (crc >> 4) ^ t[crc & 15];
	}
	return ~crc;
}

static uint32_t le32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Skips a NUL-terminated header string of at most 511 bytes (Go's bound). */
static int skip_string(struct inf *s, const char *toolong)
{
	const unsigned char *nul = memchr(s->in + s->pos, 0, s->len - s->pos);

	if (nul && nul - (s->in + s->pos) > 511)
		return fail(s, toolong);
	if (!nul)
		return fail(s, s->len - s->pos > 511 ? toolong : "truncated gzip header");
	s->pos = (size_t)(nul - s->in) + 1;
	return 0;
}

enum { FHCRC = 2, FEXTRA = 4, FNAME = 8, FCOMMENT = 16 };

static int member_header(struct inf *s, int first)
{
	const unsigned char *h = s->in + s->pos;
	size_t start = s->pos;
	unsigned flg;
	int rc;

	if (h[0] != 0x1f || (s->len - s->pos > 1 && h[1] != 0x8b))
		return fail(s, first ? "not in gzip format (bad magic)"
				     : "data after the last member that is not a gzip member");
	if (s->len - s->pos < 10)
		return fail(s, first ? "truncated gzip header" : "truncated gzip header after a member");
	if (h[2] != 8)
		return fail(s, "unknown compression method (not deflate)");
	flg = h[3];
	s->pos += 10;
	if (flg & FEXTRA) {
		size_t xlen;

		if (s->len - s->pos < 2)
			return fail(s, "truncated gzip header");
		xlen = s->in[s->pos] | (size_t)s->in[s->pos + 1] << 8;
		if (s->len - s->pos - 2 < xlen)
			return fail(s, "truncated gzip header");
		s->pos += 2 + xlen;
	}
	if ((flg & FNAME) && (rc = skip_string(s, "file name in the gzip header too long")) < 0)
		return rc;
	if ((flg & FCOMMENT) && (rc = skip_string(s, "comment in the gzip header too long")) < 0)
		return rc;
	if (flg & FHCRC) {
		uint32_t crc = crc32_update(0, s->in + start, s->pos - start);

		if (s->len - s->pos < 2)
			return fail(s, "truncated gzip header");
		if ((crc & 0xffff) != (s->in[s->pos] | (unsigned)s->in[s->pos + 1] << 8))
			return fail(s, "gzip header CRC mismatch");
		s->pos += 2;
	}
	return 0;
}

static int member(struct inf *s, int first)
{
	uint32_t crc;
	size_t n;
	int rc;

	if ((rc = member_header(s, first)) < 0)
		return rc;
	s->start = s->out.len;
	if ((rc = deflate_stream(s)) < 0)
		return rc;
	if (s->len - s->pos < 8)
		return fail(s, "truncated gzip trailer");
	n = s->out.len - s->start;
	/* no output may mean no buffer yet, and NULL + 0 is undefined */
	crc = n ? crc32_update(0, (const unsigned char *)s->out.p + s->start, n) : 0;
	if (le32(s->in + s->pos) != crc)
		return fail(s, "CRC-32 mismatch");
	if (le32(s->in + s->pos + 4) != (uint32_t)n)
		return fail(s, "length (ISIZE) mismatch");
	s->pos += 8;
	return 0;
}

ssize_t inflate_gzip(const void *in, size_t len, size_t max, char **out, const char *name,
		     struct fb_errinfo *ei)
{
	struct inf s;
	char why[80];
	int rc = 0;

	*out = NULL;
	memset(&s, 0, sizeof(s));
	s.in = in;
	s.len = len;
	buf_init(&s.out, max);
	if (len == 0)
		rc = fail(&s, "empty file");
	for (int first = 1; rc == 0 && (first || s.pos < s.len); first = 0)
		rc = member(&s, first);
	if (rc == 0 && (rc = buf_reserve(&s.out, 0)) == 0) {
		s.out.p[s.out.len] = '\0';
		*out = buf_take(&s.out, &len);
		return (ssize_t)len;
	}
	buf_free(&s.out);
	if (rc == -FB_E2BIG) {
		snprintf(why, sizeof(why), "output larger than %zu bytes", max);
		s.why = why;
	} else if (rc == -FB_ENOMEM) {
		s.why = NULL;
	}
	return fb_errinfo_set(ei, rc, 0, name, s.why);
}
