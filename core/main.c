/* main: multicall dispatch, busybox style.
 *
 * The applet is basename(argv[0]) (a link named after it), or the first
 * argument when the binary is called as featurebox*:
 *   featurebox APPLET [ARGS...]   run APPLET
 *   featurebox --list             applet names, one per line
 *   featurebox --install [-s] DIR one hard link (symbolic with -s) per applet
 *   featurebox --help | --version
 * An unknown applet name is reported on stderr with exit status 127. */
#include "version.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../applets/applets.h"

struct applet {
	const char *name;
	int (*main)(int argc, char **argv);
};

static const struct applet applets[] = {
#define APPLET(name, id) { #name, id##_main },
#include "../applets/applets.def"
#undef APPLET
};

#define NAPPLETS (sizeof(applets) / sizeof(applets[0]))

static const struct applet *find_applet(const char *name)
{
	for (size_t i = 0; i < NAPPLETS; i++)
		if (strcmp(applets[i].name, name) == 0)
			return &applets[i];
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "featurebox %s: node feature discovery and device tools in one binary\n\n"
		"Usage: featurebox APPLET [ARGS...]   (or a link named APPLET)\n"
		"       featurebox --list\n"
		"       featurebox --install [-s] DIR\n"
		"       featurebox --help | --version\n\n"
		"Applets:", FB_VERSION);
	for (size_t i = 0; i < NAPPLETS; i++)
		fprintf(f, " %s", applets[i].name);
	fputs("\nRun 'featurebox APPLET --help' for an applet's options.\n", f);
}

/* Same file already there (a hard link to us, or a symlink to exe)? */
static int already_linked(const char *path, const char *exe, int sym)
{
	struct stat a, b;
	char target[PATH_MAX];
	ssize_t n;

	if (sym) {
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = '\0';
		return strcmp(target, exe) == 0;
	}
	return lstat(path, &a) == 0 && stat(exe, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

static int install(int argc, char **argv)
{
	char exe[PATH_MAX], path[PATH_MAX];
	int sym = 0, rc = 0;
	const char *dir;
	ssize_t n;

	if (argc > 0 && strcmp(argv[0], "-s") == 0) {
		sym = 1;
		argc--, argv++;
	}
	if (argc != 1) {
		fputs("featurebox: usage: featurebox --install [-s] DIR\n", stderr);
		return 2;
	}
	dir = argv[0];
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0) {
		fprintf(stderr, "featurebox: cannot find own binary (/proc/self/exe): %s\n",
			strerror(errno));
		return 1;
	}
	exe[n] = '\0';
	for (size_t i = 0; i < NAPPLETS; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, applets[i].name) >= (int)sizeof(path)) {
			fprintf(stderr, "featurebox: %s: path too long\n", dir);
			return 1;
		}
		if ((sym ? symlink(exe, path) : link(exe, path)) == 0)
			continue;
		if (errno == EEXIST && already_linked(path, exe, sym))
			continue;
		fprintf(stderr, "featurebox: %s: %s\n", path,
			errno == EEXIST ? "exists and is not a link to this binary, left alone"
					: strerror(errno));
		rc = 1;
	}
	return rc;
}

/* 0, or 1 with a message when stdout could not be written (a full disk,
 * a closed pipe): musl forgets the error by the time of fflush, so ask ferror. */
static int flush_stdout(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	fputs("featurebox: writing to standard output failed\n", stderr);
	return 1;
}

int main(int argc, char **argv)
{
	const char *base = argc > 0 ? strrchr(argv[0], '/') : NULL;
	const struct applet *a;

	base = base ? base + 1 : argc > 0 ? argv[0] : "featurebox";
	if (strncmp(base, "featurebox", 10) == 0) {
		if (argc < 2) {
			usage(stderr);
			return 2;
		}
		if (strcmp(argv[1], "--list") == 0) {
			for (size_t i = 0; i < NAPPLETS; i++)
				puts(applets[i].name);
			return flush_stdout();
		}
		if (strcmp(argv[1], "--install") == 0)
			return install(argc - 2, argv + 2);
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			usage(stdout);
			return flush_stdout();
		}
		if (strcmp(argv[1], "--version") == 0) {
			printf("featurebox %s\n", FB_VERSION);
			return flush_stdout();
		}
		argc--, argv++;
		base = argv[0];
	}
	a = find_applet(base);
	if (!a) {
		fprintf(stderr, "featurebox: applet not found: %s\n", base);
		return 127;
	}
	argv[0] = (char *)a->name;
	return a->main(argc, argv);
}
