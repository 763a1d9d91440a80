/* sysfs: bounded reads, parsers, link basenames, refusal of non-regular files. */
#include "t.h"

#include "../../core/err.h"
#include "../../core/attr.h"
#include "../../core/sysfs.h"

#define DT_FLAGS (ATTR_RAW | ATTR_NOFOLLOW | ATTR_REGULAR | ATTR_ALL)

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void put_n(int dfd, const char *name, const char *data, size_t len)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
		perror(name);
		exit(2);
	}
	close(fd);
}

static void put(int dfd, const char *name, const char *data)
{
	put_n(dfd, name, data, strlen(data));
}

static const struct {
	const char *s;
	int rc;
	unsigned long v;
} hex[] = {
	{ "0x10de", 0, 0x10de }, { "10DE", 0, 0x10de }, { "  0x1f \n", 0, 0x1f }, { "0", 0, 0 },
	{ "0x", -FB_EINVAL }, { "", -FB_EINVAL }, { "0x0x1", -FB_EINVAL }, { "zz", -FB_EINVAL },
	{ "0x10de junk", -FB_EINVAL }, { "-1", -FB_EINVAL }, { "0x-1", -FB_EINVAL }, { "0x a0", -FB_EINVAL },
	{ "0xffffffffffffffffffff", -FB_ERANGE },
}, dec[] = {
	{ "42", 0, 42 }, { " 7\n", 0, 7 }, { "-1", -FB_EINVAL }, { "4a", -FB_EINVAL },
	{ "", -FB_EINVAL }, { "0x10", -FB_EINVAL }, { "99999999999999999999999", -FB_ERANGE },
};

int main(void)
{
	char tmpl[] = "/tmp/fb-sysfs-XXXXXX", buf[64], name[120];
	char *dir = mkdtemp(tmpl);
	unsigned long v;
	int dfd;
	ssize_t n;

	t_suite = "sysfs";
	if (!dir || (dfd = open(dir, O_RDONLY | O_DIRECTORY)) < 0)
		return perror("mkdtemp"), 2;
	put(dfd, "vendor", "0x10de\n");
	put(dfd, "numa_node", "1\n");
	put(dfd, "empty", "");
	put(dfd, "four", "abcd");
	put_n(dfd, "raw", "a\0b\0", 4);
	mkfifoat(dfd, "fifo", 0644);
	mkdirat(dfd, "subdir", 0755);
	symlinkat("../../bus/pci/drivers/nvidia", dfd, "driver");
	symlinkat("vendor", dfd, "vendor_link");
	symlinkat("nowhere", dfd, "dangling");

	n = sysfs_read(dfd, "vendor", buf, sizeof(buf));
	T_OK("text read strips one newline", n == 6 && !strcmp(buf, "0x10de"), "n=%zd buf=%s", n, buf);
	T_INT("empty attribute", sysfs_read(dfd, "empty", buf, sizeof(buf)), 0);
	T_INT("value filling the buffer is an error", sysfs_read(dfd, "four", buf, 5), -FB_E2BIG);
	T_INT("value with room to spare", sysfs_read(dfd, "four", buf, 6), 4);
	T_INT("buffer of one byte", sysfs_read(dfd, "four", buf, 1), -FB_E2BIG);
	T_INT("missing attribute", sysfs_read(dfd, "nope", buf, sizeof(buf)), -FB_ENOENT);
	T_INT("FIFO is refused without blocking", sysfs_read(dfd, "fifo", buf, sizeof(buf)), -FB_EINVAL);
	T_INT("directory is refused", sysfs_read(dfd, "subdir", buf, sizeof(buf)), -FB_EINVAL);
	T_INT("text read follows a symlink", sysfs_read(dfd, "vendor_link", buf, sizeof(buf)), 6);
	/* devicetree properties: core/dt reads them this way */
	n = attr_read(dfd, "raw", buf, sizeof(buf), DT_FLAGS);
	T_OK("raw read keeps NULs", n == 4 && !memcmp(buf, "a\0b\0", 4), "n=%zd", n);
	T_INT("raw read does not follow symlinks", attr_read(dfd, "vendor_link", buf, sizeof(buf), DT_FLAGS), -FB_EIO);
	T_INT("raw read of exactly the buffer size but the NUL", attr_read(dfd, "four", buf, 5, DT_FLAGS), -FB_E2BIG);
	T_INT("raw read with room", attr_read(dfd, "four", buf, 6, DT_FLAGS), 4);
	T_INT("raw read of a FIFO is refused", attr_read(dfd, "fifo", buf, sizeof(buf), DT_FLAGS), -FB_EINVAL);
	T_OK("read_hex", sysfs_read_hex(dfd, "vendor", &v) == 0 && v == 0x10de, "v=%lx", v);
	T_OK("read_dec", sysfs_read_dec(dfd, "numa_node", &v) == 0 && v == 1, "v=%lu", v);
	T_INT("read_dec of hex text", sysfs_read_dec(dfd, "vendor", &v), -FB_EINVAL);
	T_INT("read_hex of missing", sysfs_read_hex(dfd, "nope", &v), -FB_ENOENT);
	n = sysfs_link_base(dfd, "driver", buf, sizeof(buf));
	T_OK("link basename", n == 6 && !strcmp(buf, "nvidia"), "n=%zd buf=%s", n, buf);
	T_INT("link basename of missing", sysfs_link_base(dfd, "nolink", buf, sizeof(buf)), -FB_ENOENT);
	T_INT("link basename too long for buffer", sysfs_link_base(dfd, "driver", buf, 6), -FB_E2BIG);
	T_INT("link basename of dangling link", sysfs_link_base(dfd, "dangling", buf, sizeof(buf)), 7);
	for (size_t i = 0; i < sizeof(hex) / sizeof(hex[0]); i++) {
		unsigned long x = 0;
		int rc = sysfs_parse_hex(hex[i].s, &x);

		snprintf(name, sizeof(name), "parse_hex '%s'", hex[i].s);
		T_OK(name, rc == hex[i].rc && (rc < 0 || x == hex[i].v), "rc=%d v=%lx", rc, x);
	}
	for (size_t i = 0; i < sizeof(dec) / sizeof(dec[0]); i++) {
		unsigned long x = 0;
		int rc = sysfs_parse_dec(dec[i].s, &x);

		snprintf(name, sizeof(name), "parse_dec '%s'", dec[i].s);
		T_OK(name, rc == dec[i].rc && (rc < 0 || x == dec[i].v), "rc=%d v=%lu", rc, x);
	}
	close(dfd);
	snprintf(name, sizeof(name), "rm -rf '%s'", dir);
	if (system(name) != 0)
		return 2;
	return t_done();
}
