/* ids: pci.ids / usb.ids names, the pciutils way (lib/names-hash.c: load
 * the whole list once into a hash table, names kept in one block), with
 * three deviations from lib/names-parse.c, all because the file comes from
 * an image or a host we do not control and a name is never worth dying for:
 * - a malformed line (bad hex, a wrong indentation, an entry without its
 *   parent, a duplicate, a line over IDS_LINE_MAX) is skipped with a warning
 *   naming its line (the first few only) instead of refusing the file; the
 *   lines indented under a skipped line are skipped with it, silently, so
 *   they cannot attach to the wrong parent;
 * - a section tag is any run of capital letters followed by a space (pciutils
 *   knows single letters), so usb.ids' AT, HID, R, BIAS, PHY, HUT, L, HCC and
 *   VT sections are skipped whole, never read as vendors;
 * - two-tab lines under a USB device (interfaces) are skipped: the API has
 *   no lookup for them.
 * The PCI "S vvvv" section (subsystems of any device) is kept: ids_subsystem
 * falls back to it as pciutils does.
 *
 * The file is read once into a private buffer that the names point into,
 * NUL-terminated in place; the table holds 12-byte slots (two 32-bit id
 * words and the name's offset, with the entry kind in its top byte), which is
 * why the database is capped at 16 MiB. Not thread-safe: the first lookup
 * writes the table. */
#include "ids.h"

#include "sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IDS_FILE_MAX (16u << 20) /* offsets fit 24 bits */
#define IDS_LINE_MAX 1024        /* bytes before the line end; pciutils uses 1024 too */
#define IDS_WARN_MAX 5           /* malformed lines named one by one, then a count */

enum ids_cat {
	CAT_NONE,       /* an empty slot; before the first top-level line */
	CAT_VENDOR,     /* id12 = vendor */
	CAT_DEVICE,     /* id12 = vendor << 16 | device */
	CAT_SUBSYS,     /* id12 as a device, id34 = subvendor << 16 | subdevice */
	CAT_GEN_SUBSYS, /* S section: id12 = subvendor << 16 | subdevice */
	CAT_CLASS,      /* id12 = class */
	CAT_SUBCLASS,   /* id12 = class << 8 | subclass */
	CAT_PROGIF,     /* id12 = class << 16 | subclass << 8 | prog-if */
	CAT_GEN_HEAD,   /* state only: inside "S vvvv", before its first entry */
};

struct ids_slot {
	uint32_t id12, id34;
	uint32_t word; /* cat << 24 | offset of the name in buf; 0: empty */
};

struct ids {
	enum ids_kind kind;
	const struct fb_log *lg; /* borrowed; NULL: silent */
	char **paths;            /* owned, one block with the strings */
	size_t npaths;
	const char *path;        /* one of paths once loaded; NULL: none usable */
	int loaded;              /* the file was tried (or a buffer given) */
	char *buf;               /* owned: the file, lines NUL-terminated in place */
	struct ids_slot *tab;    /* owned; cap slots, a power of two */
	size_t cap, count;
	unsigned long lines;
	unsigned long bad;       /* malformed lines skipped */
};

/* The state of the parse: the ids of the entry each indentation level
 * belongs to, and from which level down lines are skipped. */
struct ids_parse {
	struct ids *db;
	const char *src;  /* for warnings */
	enum ids_cat cat; /* kind of the last accepted entry (or section) */
	unsigned v, d, sv, cls, sub; /* vendor, device, S vendor, class, subclass */
	int skip_below;   /* lines indented deeper than this are skipped; -1: none */
};

int ids_open(struct ids **out, enum ids_kind kind, const char *const *paths, size_t n,
	     const struct fb_log *lg)
{
	size_t size = n * sizeof(char *);
	struct ids *db;
	char *p;

	*out = NULL;
	for (size_t i = 0; i < n; i++)
		size += strlen(paths[i]) + 1;
	db = calloc(1, sizeof(*db));
	if (!db)
		return -FB_ENOMEM;
	db->paths = malloc(size ? size : 1);
	if (!db->paths) {
		free(db);
		return -FB_ENOMEM;
	}
	p = (char *)(db->paths + n);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(paths[i]) + 1;

		memcpy(p, paths[i], len);
		db->paths[i] = p;
		p += len;
	}
	db->npaths = n;
	db->kind = kind;
	db->lg = lg;
	*out = db;
	return 0;
}

static void drop_data(struct ids *db)
{
	free(db->buf);
	free(db->tab);
	db->buf = NULL;
	db->tab = NULL;
	db->cap = db->count = 0;
	db->lines = db->bad = 0;
	db->path = NULL;
}

void ids_free(struct ids *db)
{
	if (!db)
		return;
	drop_data(db);
	free(db->paths);
	free(db);
}

/* A 64-bit mix (splitmix64's finaliser) of the key: ids are dense and
 * sequential, so the low bits alone would cluster. */
static size_t slot_hash(enum ids_cat cat, uint32_t id12, uint32_t id34)
{
	uint64_t h = ((uint64_t)id12 << 32 | id34) ^ ((uint64_t)cat * 0x9e3779b97f4a7c15u);

	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9u;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebu;
	h ^= h >> 31;
	return (size_t)h;
}

static struct ids_slot *slot_find(const struct ids *db, enum ids_cat cat, uint32_t id12,
				  uint32_t id34)
{
	size_t mask = db->cap - 1, i;

	if (!db->cap)
		return NULL;
	for (i = slot_hash(cat, id12, id34) & mask;; i = (i + 1) & mask) {
		struct ids_slot *s = &db->tab[i];

		if (s->word == 0 || (s->word >> 24 == (uint32_t)cat && s->id12 == id12 &&
				     s->id34 == id34))
			return s;
	}
}

/* Doubles the table (the first one has 1024 slots), keeping the load under
 * 3/4 so probes stay short. Returns 0 or -FB_ENOMEM (the old table stays). */
static int tab_grow(struct ids *db)
{
	size_t ncap = db->cap ? db->cap * 2 : 1024;
	struct ids_slot *old = db->tab, *ntab = calloc(ncap, sizeof(*ntab));
	size_t ocap = db->cap;

	if (!ntab)
		return -FB_ENOMEM;
	db->tab = ntab;
	db->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].word)
			*slot_find(db, (enum ids_cat)(old[i].word >> 24), old[i].id12, old[i].id34) =
				old[i];
	free(old);
	return 0;
}

/* Returns 1 when added, 0 for a duplicate (the first name stays), or
 * -FB_ENOMEM. */
static int tab_add(struct ids *db, enum ids_cat cat, uint32_t id12, uint32_t id34,
		   const char *name)
{
	struct ids_slot *s;

	if ((db->count + 1) * 4 > db->cap * 3 && tab_grow(db) < 0)
		return -FB_ENOMEM;
	s = slot_find(db, cat, id12, id34);
	if (s->word)
		return 0;
	s->id12 = id12;
	s->id34 = id34;
	s->word = (uint32_t)cat << 24 | (uint32_t)(name - db->buf);
	db->count++;
	return 1;
}

static const char *tab_get(struct ids *db, enum ids_cat cat, uint32_t id12, uint32_t id34)
{
	const struct ids_slot *s = slot_find(db, cat, id12, id34);

	return s && s->word ? db->buf + (s->word & 0xffffffu) : NULL;
}

static int is_white(char c)
{
	return c == ' ' || c == '\t';
}

/* n hex digits at p (either case); -1 when one is not. */
static long hex_digits(const char *p, int n)
{
	long x = 0;

	for (int i = 0; i < n; i++) {
		char c = p[i];

		x <<= 4;
		if (c >= '0' && c <= '9')
			x |= c - '0';
		else if (c >= 'a' && c <= 'f')
			x |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			x |= c - 'A' + 10;
		else
			return -1;
	}
	return x;
}

/* n hex digits at p followed by a space or tab, within end; -1 otherwise. */
static long hex_field(const char *p, const char *end, int n)
{
	if (end - p <= n || !is_white(p[n]))
		return -1;
	return hex_digits(p, n);
}

static void warn_line(struct ids_parse *ps, const char *why)
{
	if (++ps->db->bad <= IDS_WARN_MAX && ps->db->lg)
		LOG_W(ps->db->lg, "%s: line %lu: %s (skipped)", ps->src, ps->db->lines, why);
}

/* The name after the id field(s): past the blanks, not empty. */
static const char *name_at(const char *p, const char *end)
{
	while (p < end && is_white(*p))
		p++;
	return p < end && *p ? p : NULL;
}

/* A top-level line (p..end, no tabs before it). Returns the entry to add in
 * cat, id12 and name (cat CAT_NONE for a section header that adds nothing), or a
 * reason when the line is malformed. */
static const char *parse_top(struct ids_parse *ps, const char *p, const char *end,
			     enum ids_cat *cat, uint32_t *id12, const char **name)
{
	const char *q = p;
	long x;

	*cat = CAT_NONE;
	if ((x = hex_field(p, end, 4)) >= 0) {
		ps->v = (unsigned)x;
		ps->cat = *cat = CAT_VENDOR;
		*id12 = (uint32_t)x;
		*name = name_at(p + 5, end);
		return *name ? NULL : "vendor without a name";
	}
	while (q < end && *q >= 'A' && *q <= 'Z')
		q++;
	if (q == p || q == end || *q != ' ')
		return "not a vendor, class or section line";
	if (q - p == 1 && *p == 'C') {
		if ((x = hex_field(p + 2, end, 2)) < 0)
			return "bad class id";
		ps->cls = (unsigned)x;
		ps->cat = *cat = CAT_CLASS;
		*id12 = (uint32_t)x;
		*name = name_at(p + 5, end);
		return *name ? NULL : "class without a name";
	}
	if (q - p == 1 && *p == 'S' && ps->db->kind == IDS_PCI) {
		/* "S vvvv" alone on its line: the vendor of the entries below */
		if (end - p != 6 || (x = hex_digits(p + 2, 4)) < 0)
			return "bad generic subsystem vendor";
		ps->sv = (unsigned)x;
		ps->cat = CAT_GEN_HEAD;
		return NULL;
	}
	/* a section this code does not know: skip it and what it holds */
	ps->cat = CAT_NONE;
	ps->skip_below = 0;
	return NULL;
}

/* One line, without its line end (trailing blanks and a CR already cut),
 * at p..end with *end writable. Adds its entry or skips it. Returns 0 or
 * -FB_ENOMEM. */
static int parse_line(struct ids_parse *ps, char *p, char *end)
{
	enum ids_cat cat = CAT_NONE;
	uint32_t id12 = 0, id34 = 0;
	const char *name = NULL, *why = NULL, *s = p;
	int nest = 0, rc;
	long x, y;

	while (s < end && is_white(*s))
		s++;
	if (s == end || *s == '#')
		return 0;
	while (p < end && *p == '\t')
		p++, nest++;
	if (ps->skip_below >= 0 && nest > ps->skip_below)
		return 0;
	ps->skip_below = -1;
	if (nest == 0) {
		why = parse_top(ps, p, end, &cat, &id12, &name);
	} else if (nest == 1) {
		switch (ps->cat) {
		case CAT_VENDOR:
		case CAT_DEVICE:
		case CAT_SUBSYS:
			if ((x = hex_field(p, end, 4)) < 0) {
				why = "bad device id";
				break;
			}
			ps->d = (unsigned)x;
			ps->cat = cat = CAT_DEVICE;
			id12 = ps->v << 16 | ps->d;
			name = name_at(p + 5, end);
			break;
		case CAT_CLASS:
		case CAT_SUBCLASS:
		case CAT_PROGIF:
			if ((x = hex_field(p, end, 2)) < 0) {
				why = "bad subclass id";
				break;
			}
			ps->sub = (unsigned)x;
			ps->cat = cat = CAT_SUBCLASS;
			id12 = ps->cls << 8 | ps->sub;
			name = name_at(p + 3, end);
			break;
		case CAT_GEN_HEAD:
		case CAT_GEN_SUBSYS:
			if ((x = hex_field(p, end, 4)) < 0) {
				why = "bad generic subsystem id";
				break;
			}
			ps->cat = cat = CAT_GEN_SUBSYS;
			id12 = ps->sv << 16 | (uint32_t)x;
			name = name_at(p + 5, end);
			break;
		default:
			why = "indented line before any vendor or class";
		}
	} else if (nest == 2) {
		switch (ps->cat) {
		case CAT_DEVICE:
		case CAT_SUBSYS:
			if (ps->db->kind == IDS_USB)
				return 0; /* an interface: nothing looks these up */
			if ((x = hex_field(p, end, 4)) < 0 || (y = hex_field(p + 5, end, 4)) < 0) {
				why = "bad subsystem ids";
				break;
			}
			ps->cat = cat = CAT_SUBSYS;
			id12 = ps->v << 16 | ps->d;
			id34 = (uint32_t)x << 16 | (uint32_t)y;
			name = name_at(p + 10, end);
			break;
		case CAT_SUBCLASS:
		case CAT_PROGIF:
			if ((x = hex_field(p, end, 2)) < 0) {
				why = "bad programming interface id";
				break;
			}
			ps->cat = cat = CAT_PROGIF;
			id12 = ps->cls << 16 | ps->sub << 8 | (uint32_t)x;
			name = name_at(p + 3, end);
			break;
		default:
			why = "two tabs without a device or subclass above";
		}
	} else {
		why = "indented more than two tabs";
	}
	if (!why && cat != CAT_NONE && !name)
		why = "entry without a name";
	if (why) {
		warn_line(ps, why);
		ps->skip_below = nest;
		return 0;
	}
	if (cat == CAT_NONE)
		return 0;
	*end = '\0';
	rc = tab_add(ps->db, cat, id12, id34, name);
	if (rc == 0)
		warn_line(ps, "duplicate entry (the first one is kept)");
	return rc < 0 ? rc : 0;
}

/* Parses db->buf[0..len) (len < IDS_FILE_MAX, buf[len] writable). Returns
 * 0 or -FB_ENOMEM (what was parsed so far stays usable). */
static int parse_buf(struct ids *db, size_t len, const char *src)
{
	struct ids_parse ps = { .db = db, .src = src, .cat = CAT_NONE, .skip_below = -1 };
	char *p = db->buf, *stop = db->buf + len;
	int rc = 0;

	while (p < stop && rc == 0) {
		char *nl = memchr(p, '\n', (size_t)(stop - p)), *end = nl ? nl : stop;
		char *next = nl ? nl + 1 : stop;

		db->lines++;
		if (end > p && end[-1] == '\r')
			end--; /* part of a CRLF line end, not of the line */
		if (end - p > IDS_LINE_MAX) {
			warn_line(&ps, "longer than 1024 bytes");
			/* what was indented under it cannot be placed either */
			ps.skip_below = 0;
			while (p + ps.skip_below < end && p[ps.skip_below] == '\t')
				ps.skip_below++;
			p = next;
			continue;
		}
		while (end > p && (end[-1] == '\r' || is_white(end[-1])))
			end--;
		rc = parse_line(&ps, p, end);
		p = next;
	}
	if (db->bad > IDS_WARN_MAX && db->lg)
		LOG_W(db->lg, "%s: %lu malformed lines skipped in all", src, db->bad);
	return rc;
}

/* Reads the regular file at path (fewer than IDS_FILE_MAX bytes) into a new
 * NUL-terminated buffer. Returns 0, or -FB_ENOENT, -FB_EINVAL (not a
 * regular file), -FB_E2BIG, -FB_EIO, -FB_ENOMEM. */
static int read_file(const char *path, char **out, size_t *outlen)
{
	ssize_t n = sysfs_read_alloc(AT_FDCWD, path, IDS_FILE_MAX, out);

	if (n < 0)
		return (int)n;
	*outlen = (size_t)n;
	return 0;
}

/* The first lookup: the first usable path, parsed whole. Failures leave an
 * empty database (every lookup NULL) and are not retried. */
static void load(struct ids *db)
{
	const char *what = db->kind == IDS_PCI ? "pci.ids" : "usb.ids";
	size_t len = 0;
	int rc = -FB_ENOENT;

	db->loaded = 1;
	for (size_t i = 0; i < db->npaths; i++) {
		rc = read_file(db->paths[i], &db->buf, &len);
		if (rc == 0) {
			db->path = db->paths[i];
			break;
		}
		if (rc != -FB_ENOENT && db->lg)
			LOG_V(db->lg, 1, "%s: not used as %s: %s", db->paths[i], what,
			      fb_strerror(rc));
		if (rc == -FB_ENOMEM)
			break;
	}
	if (!db->path) {
		if (db->lg)
			LOG_W(db->lg, "no usable %s among %zu paths%s%s: device names are unknown",
			      what, db->npaths, db->npaths ? ", first " : "",
			      db->npaths ? db->paths[0] : "");
		return;
	}
	if (parse_buf(db, len, db->path) < 0 && db->lg)
		LOG_W(db->lg, "%s: out of memory at line %lu: later names are unknown", db->path,
		      db->lines);
}

static struct ids *ready(struct ids *db)
{
	if (db && !db->loaded)
		load(db);
	return db && db->cap ? db : NULL;
}

/* A second call replaces what an earlier one (or the file) gave: names
 * returned before are then invalid. Over IDS_FILE_MAX: -FB_E2BIG, like a
 * file. */
int ids_load_buffer(struct ids *db, const char *text, size_t len)
{
	if (len >= IDS_FILE_MAX)
		return -FB_E2BIG;
	drop_data(db);
	db->loaded = 1;
	db->buf = malloc(len + 1);
	if (!db->buf)
		return -FB_ENOMEM;
	memcpy(db->buf, text, len);
	db->buf[len] = '\0';
	return parse_buf(db, len, "(buffer)");
}

const char *ids_path(struct ids *db)
{
	return db ? db->path : NULL;
}

unsigned long ids_lines_parsed(const struct ids *db)
{
	return db ? db->lines : 0;
}

const char *ids_vendor(struct ids *db, unsigned vendor)
{
	db = ready(db);
	if (!db || vendor > 0xffff)
		return NULL;
	return tab_get(db, CAT_VENDOR, vendor, 0);
}

const char *ids_device(struct ids *db, unsigned vendor, unsigned device)
{
	db = ready(db);
	if (!db || vendor > 0xffff || device > 0xffff)
		return NULL;
	return tab_get(db, CAT_DEVICE, vendor << 16 | device, 0);
}

const char *ids_subsystem(struct ids *db, unsigned vendor, unsigned device, unsigned subvendor,
			  unsigned subdevice)
{
	const char *name;

	db = ready(db);
	if (!db || vendor > 0xffff || device > 0xffff || subvendor > 0xffff || subdevice > 0xffff)
		return NULL;
	name = tab_get(db, CAT_SUBSYS, vendor << 16 | device, subvendor << 16 | subdevice);
	return name ? name : tab_get(db, CAT_GEN_SUBSYS, subvendor << 16 | subdevice, 0);
}

const char *ids_class(struct ids *db, unsigned code, int digits)
{
	db = ready(db);
	if (!db)
		return NULL;
	switch (digits) {
	case 2:
		return code <= 0xff ? tab_get(db, CAT_CLASS, code, 0) : NULL;
	case 4:
		return code <= 0xffff ? tab_get(db, CAT_SUBCLASS, code, 0) : NULL;
	case 6:
		return code <= 0xffffff ? tab_get(db, CAT_PROGIF, code, 0) : NULL;
	default:
		return NULL;
	}
}
