/* vfio_alias: the best VFIO variant driver for a device, from the host's
 * modules.alias, by libvirt's rule (virPCIDeviceFindBestVFIOVariant, used
 * the same way by NVIDIA's vfio-manage): of the "alias vfio_pci:..." lines
 * that match the device's modalias, the one with the fewest wildcard
 * fields.
 *
 * Facts: a PCI modalias is "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X";
 * modpost writes a driver's id table into modules.alias with each field
 * either in that form or "*" (any), a "*" after the last field, and the
 * module name (underscores, never dashes) after a space; VFIO variant
 * drivers (PCI_DRIVER_OVERRIDE_DEVICE_VFIO) get the prefix "vfio_pci:"
 * instead of "pci:". */
#include "vfio.h"

#include "pci.h"
#include "sysfs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define LINE_MAX_ 512
#define FILE_CAP (64u << 20)
#define NFIELDS 7

/* The fields in order, their prefixes and widths in hex digits. */
static const struct {
	const char *pfx;
	size_t w;
} fields[NFIELDS] = { { "v", 8 }, { "d", 8 }, { "sv", 8 }, { "sd", 8 }, { "bc", 2 }, { "sc", 2 }, { "i", 2 } };

/* Splits "v...d...sv...sd...bc..sc..i.." (after the "pci:"/"vfio_pci:"
 * prefix) into f[k] pointing at the value ("*" or hex) and len[k]. A
 * trailing "*" is allowed with wild. Returns 0 or -1. */
static int split(const char *s, int wild, const char *f[NFIELDS], size_t len[NFIELDS])
{
	for (size_t k = 0; k < NFIELDS; k++) {
		size_t pl = strlen(fields[k].pfx);

		if (strncmp(s, fields[k].pfx, pl) != 0)
			return -1;
		s += pl;
		f[k] = s;
		if (wild && *s == '*') {
			len[k] = 1;
			s++;
			continue;
		}
		for (size_t j = 0; j < fields[k].w; j++)
			if (!isxdigit((unsigned char)s[j]))
				return -1;
		len[k] = fields[k].w;
		s += fields[k].w;
	}
	if (wild && *s == '*')
		s++;
	return *s ? -1 : 0;
}

/* Matches alias pattern pat against the device's fields. Returns the
 * number of "*" fields, or -1 for no match. */
static int match(const char *pat, const char *const dev[NFIELDS])
{
	const char *f[NFIELDS];
	size_t len[NFIELDS];
	int stars = 0;

	if (split(pat, 1, f, len) < 0)
		return -1;
	for (size_t k = 0; k < NFIELDS; k++) {
		if (len[k] == 1 && f[k][0] == '*') {
			stars++;
			continue;
		}
		if (strncasecmp(f[k], dev[k], len[k]) != 0)
			return -1;
	}
	return stars;
}

struct best {
	const char *dev[NFIELDS];
	int stars;             /* of the best so far, -1 none */
	char line[LINE_MAX_];
	char mod[VFIO_DRV_MAX];
	size_t aliases, bad;   /* vfio_pci lines seen, of them unreadable */
};

/* One line of modules.alias (NUL-terminated, no '\n'). */
static void one_line(struct best *b, const char *line)
{
	static const char pfx[] = "alias vfio_pci:";
	const char *pat = line + sizeof(pfx) - 1, *sp;
	char p[LINE_MAX_];
	int stars;

	if (strncmp(line, pfx, sizeof(pfx) - 1) != 0)
		return;
	b->aliases++;
	sp = strchr(pat, ' ');
	if (!sp || (size_t)(sp - pat) >= sizeof(p) || !vfio_valid_driver(sp + 1) || strlen(sp + 1) >= VFIO_DRV_MAX) {
		b->bad++;
		return;
	}
	/* vfio_pci's own catch-all (v*d*sv*sd*bc*sc*i*, Linux 5.16 on) is no
	 * variant: it is the fallback, and its module name no driver name */
	if (strcmp(sp + 1, "vfio_pci") == 0)
		return;
	memcpy(p, pat, (size_t)(sp - pat));
	p[sp - pat] = '\0';
	stars = match(p, b->dev);
	if (stars < 0 || (b->stars >= 0 && stars >= b->stars))
		return; /* the first of equals stays */
	b->stars = stars;
	snprintf(b->line, sizeof(b->line), "%s", line);
	snprintf(b->mod, sizeof(b->mod), "%s", sp + 1);
}

void vfio_alias_best_fd(int fd, const char *where, const char *modalias, char *drv, char *why)
{
	struct best b = { .stars = -1 };
	char buf[16384], line[LINE_MAX_];
	size_t len[NFIELDS], ll = 0, total = 0, longs = 0;
	int skipping = 0, big = 0;
	const char *f[NFIELDS];
	struct stat st;
	ssize_t n;

	snprintf(drv, VFIO_DRV_MAX, "vfio-pci");
	if (strncmp(modalias, "pci:", 4) != 0 || strlen(modalias) > 96 ||
	    split(modalias + 4, 0, f, len) < 0) {
		snprintf(why, VFIO_WHY_MAX, "the device's modalias \"%.60s\" is not a PCI one; vfio-pci", modalias);
		return;
	}
	for (size_t k = 0; k < NFIELDS; k++)
		b.dev[k] = f[k];
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, VFIO_WHY_MAX, "%.150s is not a regular file; vfio-pci", where);
		return;
	}
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(why, VFIO_WHY_MAX, "%.150s: %s; vfio-pci", where, strerror(errno));
			return;
		}
		for (ssize_t i = 0; i < n; i++) {
			char c = buf[i];

			if (c == '\n') {
				line[ll] = '\0';
				if (!skipping)
					one_line(&b, line);
				ll = 0;
				skipping = 0;
			} else if (skipping) {
				continue;
			} else if (ll + 1 >= sizeof(line) || c == '\0') {
				skipping = 1; /* too long (or binary): not a line we know */
				longs++;
			} else {
				line[ll++] = c;
			}
		}
		total += (size_t)n;
		if (total >= FILE_CAP) {
			big = 1;
			break;
		}
	}
	if (ll && !skipping && !big) { /* a last line without '\n' */
		line[ll] = '\0';
		one_line(&b, line);
	}
	if (b.stars >= 0) {
		snprintf(drv, VFIO_DRV_MAX, "%s", b.mod);
		snprintf(why, VFIO_WHY_MAX, "%.180s (%d wildcard field%s)", b.line, b.stars, b.stars == 1 ? "" : "s");
		return;
	}
	snprintf(why, VFIO_WHY_MAX, "no variant matched (%zu vfio_pci aliases in %.100s%s%s); vfio-pci", b.aliases, where,
		 big ? ", read up to its 64 MiB cap" : "", longs || b.bad ? ", some lines unreadable" : "");
}

void vfio_alias_best(const struct hostfs *h, const char *modalias, char *drv, char *why)
{
	static const char *const dirs[] = { "lib/modules", "usr/lib/modules" };
	char rel[VFIO_WHY_MAX], rl[128] = "", where[VFIO_WHY_MAX];
	struct utsname u;
	int fd = -1, pfd, e = 0;

	if ((pfd = hostfs_open(h, "proc/sys/kernel", O_RDONLY | O_DIRECTORY)) >= 0) {
		if (sysfs_read(pfd, "osrelease", rl, sizeof(rl)) < 0)
			rl[0] = '\0';
		close(pfd);
	}
	if (!rl[0] && uname(&u) == 0)
		snprintf(rl, sizeof(rl), "%s", u.release);
	if (!rl[0] || strchr(rl, '/') || !strcmp(rl, "..") || !strcmp(rl, ".")) {
		snprintf(drv, VFIO_DRV_MAX, "vfio-pci");
		snprintf(why, VFIO_WHY_MAX, "the kernel release is unknown; vfio-pci");
		return;
	}
	/* merged-/usr hosts without the /lib link have it only in usr/lib */
	for (size_t i = 0; fd < 0 && i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(rel, sizeof(rel), "%s/%.100s/modules.alias", dirs[i], rl);
		if ((fd = hostfs_open(h, rel, O_RDONLY | O_NONBLOCK)) < 0 && i == 0) {
			e = errno;
			snprintf(where, sizeof(where), "%.100s%.120s", h->prefix, rel);
		}
	}
	if (fd < 0) {
		snprintf(drv, VFIO_DRV_MAX, "vfio-pci");
		snprintf(why, VFIO_WHY_MAX, "no modules.alias (%.160s: %s); vfio-pci", where, strerror(e));
		return;
	}
	snprintf(where, sizeof(where), "%.100s%.120s", h->prefix, rel);
	vfio_alias_best_fd(fd, where, modalias, drv, why);
	close(fd);
}
