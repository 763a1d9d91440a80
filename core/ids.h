/* ids: the PCI and USB ID databases (pci.ids, usb.ids: the format of
 * pciutils' lib/names-parse.c and usbutils), loaded lazily: opening one
 * reads nothing; the first name lookup reads the file once into a hash table
 * and an arena, and later lookups are a hash probe. Lines are bounded (a
 * longer one is skipped with a warning), bytes that are not UTF-8 are kept
 * as they are, and sections this code does not know (a new letter) are
 * skipped. */
#ifndef FB_IDS_H
#define FB_IDS_H

#include "err.h"
#include "log.h"

#include <stddef.h>

enum ids_kind { IDS_PCI, IDS_USB };

struct ids;

/* Uses the first of paths[0..n) that can be opened (a regular file of at
 * most 16 MiB); none: the database has no names (every lookup gives NULL)
 * and one warning is logged on lg (may be NULL) at the first lookup.
 * Returns 0 or -FB_ENOMEM. Nothing is read here. */
int ids_open(struct ids **out, enum ids_kind kind, const char *const *paths, size_t n,
	     const struct fb_log *lg);
void ids_free(struct ids *db);

/* The file in use, NULL when none was found (known after the first lookup). */
const char *ids_path(struct ids *db);

/* Names, NULL when unknown. Borrowed until ids_free. Loads the file on the
 * first call. Class: code is 0xCC (class), 0xCCSS (subclass) or 0xCCSSPP
 * (programming interface), with digits the number of hex digits: 2, 4 or 6.
 * For USB, "class" is the C section (interface classes) the same way. */
const char *ids_vendor(struct ids *db, unsigned vendor);
const char *ids_device(struct ids *db, unsigned vendor, unsigned device);
const char *ids_subsystem(struct ids *db, unsigned vendor, unsigned device, unsigned subvendor,
			  unsigned subdevice);
const char *ids_class(struct ids *db, unsigned code, int digits);

/* Lines of the file parsed so far: 0 until a name is asked for. */
unsigned long ids_lines_parsed(const struct ids *db);

/* Parses text[0..len) as the database (for tests and the fuzz target: no
 * file). Returns 0 or -FB_ENOMEM. */
int ids_load_buffer(struct ids *db, const char *text, size_t len);

#endif
