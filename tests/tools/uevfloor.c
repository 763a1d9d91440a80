/* uevfloor: the syscall floor of "read each device once", for scripts/bench.
 *
 *   uevfloor DIR pci|usb
 *
 * Lists DIR/sys/bus/<bus>/devices and, for every entry, opens, reads and
 * closes <entry>/uevent (one read: a device's uevent fits in 4 KiB), the
 * least a discovery pass can do that looks at each device at all. For USB
 * the interfaces are entries too: their uevent holds the interface class,
 * which nfd-worker needs for a class 00 device. Prints "ENTRIES entries,
 * BYTES bytes"; exit 1 when the directory or a uevent cannot be read. No
 * featurebox code: libc only, so its start-up is the floor's as well. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[4096], buf[4096];
	unsigned long entries = 0, bytes = 0;
	struct dirent *de;
	DIR *dir;
	int dfd, n;

	if (argc != 3 || (strcmp(argv[2], "pci") && strcmp(argv[2], "usb"))) {
		fprintf(stderr, "usage: uevfloor DIR pci|usb\n");
		return 2;
	}
	n = snprintf(path, sizeof(path), "%s/sys/bus/%s/devices", argv[1], argv[2]);
	if (n < 0 || (size_t)n >= sizeof(path) || !(dir = opendir(path))) {
		perror(path);
		return 1;
	}
	dfd = dirfd(dir);
	while ((de = readdir(dir))) {
		ssize_t got;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		n = snprintf(path, sizeof(path), "%s/uevent", de->d_name);
		if (n < 0 || (size_t)n >= sizeof(path))
			return 1;
		/* relative to the bus directory, as core/pci and core/usb do */
		fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			perror(de->d_name);
			return 1;
		}
		got = read(fd, buf, sizeof(buf));
		close(fd);
		if (got < 0) {
			perror(de->d_name);
			return 1;
		}
		entries++;
		bytes += (unsigned long)got;
	}
	closedir(dir);
	printf("%lu entries, %lu bytes\n", entries, bytes);
	return 0;
}
