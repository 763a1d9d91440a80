/* fuzz_ids: untrusted bytes as a pci.ids and as a usb.ids, through
 * ids_load_buffer and lookups whose ids come from the input, with property
 * checks:
 * - loading never fails (the input is far under the 16 MiB cap);
 * - every line is counted: the '\n' bytes, plus one for a last line
 *   without one;
 * - a name found is not empty, starts with neither a space nor a tab, ends
 *   with none of space, tab or CR (unless a NUL byte cut it), and holds no
 *   '\n';
 * - a first line "hhhh<blank>name" that fits the line bound always gives a
 *   vendor name (a top-level line is never skipped for what came before).
 *
 * Built two ways: with clang -fsanitize=fuzzer (make fuzz, local runs that
 * grow tests/fuzz/corpus/ids), and as a plain program whose main() replays
 * every file named on the command line or found in the directories named
 * there, which is how `make test` runs the corpus under ASan+UBSan. */
#include "../../core/ids.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL byte in the input cuts a name short, maybe just after a blank:
 * the end is checked only for inputs without one. */
static int has_nul;

static void check_name(const char *s)
{
	size_t n;

	if (!s)
		return;
	n = strlen(s);
	if (n == 0 || s[0] == ' ' || s[0] == '\t' || strchr(s, '\n'))
		abort();
	if (!has_nul && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		abort();
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The vendor id of a first line that must give a name, or -1. */
static long first_vendor(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t end = nl ? (size_t)(nl - data) : size, i;
	long v = 0;

	if (end > 0 && data[end - 1] == '\r')
		end--;
	if (end > 1024 || end < 6 || (data[4] != ' ' && data[4] != '\t'))
		return -1;
	for (i = 0; i < 4; i++) {
		if (hexval(data[i]) < 0)
			return -1;
		v = v << 4 | hexval(data[i]);
	}
	while (end > 5 && (data[end - 1] == ' ' || data[end - 1] == '\t' || data[end - 1] == '\r'))
		end--;
	for (i = 5; i < end && (data[i] == ' ' || data[i] == '\t'); i++)
		;
	return i < end && data[i] != '\0' ? v : -1;
}

static unsigned u16_at(const uint8_t *data, size_t size, size_t i)
{
	return i + 1 < size ? (unsigned)data[i] << 8 | data[i + 1] : 0x10de;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fb_log lg = { .v = 2, .fd = -1 };
	unsigned long lines = 0;
	long v = first_vendor(data, size);

	has_nul = memchr(data, '\0', size) != NULL;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (size && data[size - 1] != '\n')
		lines++;
	for (int kind = IDS_PCI; kind <= IDS_USB; kind++) {
		struct ids *db;

		if (ids_open(&db, (enum ids_kind)kind, NULL, 0, &lg) < 0)
			abort();
		if (ids_load_buffer(db, (const char *)data, size) != 0)
			abort();
		if (ids_lines_parsed(db) != lines)
			abort();
		if (v >= 0 && !ids_vendor(db, (unsigned)v))
			abort();
		check_name(ids_vendor(db, (unsigned)(v >= 0 ? v : 0)));
		/* ids from the input: the bytes at a few places, read as numbers */
		for (size_t k = 0; k < 4; k++) {
			unsigned a = u16_at(data, size, 8 * k), b = u16_at(data, size, 8 * k + 2);
			unsigned c = u16_at(data, size, 8 * k + 4), d = u16_at(data, size, 8 * k + 6);

			check_name(ids_vendor(db, a));
			check_name(ids_device(db, a, b));
			check_name(ids_subsystem(db, a, b, c, d));
			check_name(ids_class(db, a >> 8, 2));
			check_name(ids_class(db, a, 4));
			check_name(ids_class(db, a << 8 | (b >> 8), 6));
		}
		/* and the ids of the first lines' fields, read as hex */
		for (size_t i = 0, n = 0; i + 4 < size && n < 16; i++) {
			if (i > 0 && data[i - 1] != '\t' && data[i - 1] != '\n' && data[i - 1] != ' ')
				continue;
			if (hexval(data[i]) < 0 || hexval(data[i + 1]) < 0)
				continue;
			unsigned x2 = (unsigned)(hexval(data[i]) << 4 | hexval(data[i + 1]));
			unsigned x4 = x2;

			if (hexval(data[i + 2]) >= 0 && hexval(data[i + 3]) >= 0)
				x4 = x2 << 8 | (unsigned)(hexval(data[i + 2]) << 4 | hexval(data[i + 3]));
			check_name(ids_vendor(db, x4));
			check_name(ids_device(db, v >= 0 ? (unsigned)v : x4, x4));
			check_name(ids_subsystem(db, x4, x4, x4, x4));
			check_name(ids_class(db, x2, 2));
			check_name(ids_class(db, x2 << 8 | x2, 4));
			check_name(ids_class(db, x4 << 8 | x2, 6));
			n++;
		}
		ids_free(db);
	}
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
