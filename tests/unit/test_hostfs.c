/* hostfs: the prefix is concatenated as upstream NFD does, and opens go
 * through it. */
#include "t.h"

#include "../../core/err.h"
#include "../../core/hostfs.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	const char *prefix, *rel, *want;
} paths[] = {
	{ "/", "sys/bus/pci/devices", "/sys/bus/pci/devices" },
	{ "/host-", "sys", "/host-sys" },
	{ "/host-", "proc/device-tree", "/host-proc/device-tree" },
	{ "tests/fixtures/rpi4/", "sys/firmware/fdt", "tests/fixtures/rpi4/sys/firmware/fdt" },
	{ "", "etc/os-release", "etc/os-release" },
};

int main(void)
{
	char tmpl[] = "/tmp/fb-hostfs-XXXXXX", buf[600], name[1400], big[HOSTFS_PREFIX_MAX + 8];
	char *dir = mkdtemp(tmpl);
	struct hostfs h;
	struct stat st;
	int fd;

	t_suite = "hostfs";
	hostfs_init(&h);
	T_STR("init gives /", h.prefix, "/");
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		snprintf(name, sizeof(name), "'%s' + '%s'", paths[i].prefix, paths[i].rel);
		hostfs_setup(&h, paths[i].prefix);
		T_OK(name, hostfs_path(&h, paths[i].rel, buf, sizeof(buf)) == (int)strlen(paths[i].want) &&
			   strcmp(buf, paths[i].want) == 0, "got %s", buf);
	}
	hostfs_setup(&h, NULL);
	T_STR("default prefix follows /host-sys",
	      h.prefix, stat("/host-sys", &st) == 0 && S_ISDIR(st.st_mode) ? "/host-" : "/");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	T_INT("over-long prefix", hostfs_setup(&h, big), -FB_E2BIG);
	hostfs_setup(&h, "/host-");
	T_INT("path that does not fit", hostfs_path(&h, "sys", buf, 8), -FB_E2BIG);

	snprintf(buf, sizeof(buf), "%s/sys/class", dir);
	snprintf(name, sizeof(name), "mkdir -p '%s' && echo hi >'%s/sys/class/x'", buf, dir);
	if (system(name) != 0)
		return 2;
	snprintf(buf, sizeof(buf), "%s/", dir);
	hostfs_setup(&h, buf);
	fd = hostfs_open(&h, "sys/class/x", O_RDONLY);
	T_OK("open through the prefix", fd >= 0, "fd=%d", fd);
	if (fd >= 0)
		close(fd);
	T_INT("open of a missing file", hostfs_open(&h, "sys/class/nope", O_RDONLY), -FB_ENOENT);
	T_INT("open below a file", hostfs_open(&h, "sys/class/x/y", O_RDONLY), -FB_ENOENT);
	/* symlinks resolve inside the prefix, never into our own root */
	snprintf(name, sizeof(name),
		 "cd '%s' && mkdir -p proc sys/firmware/devicetree/base a/b && "
		 "ln -s /sys/firmware/devicetree/base proc/device-tree && "
		 "ln -s ../sys/firmware/devicetree/base proc/rel && "
		 "ln -s ../../../sys a/b/up && ln -s loop1 loop2 && ln -s loop2 loop1 && "
		 "ln -s /proc/device-tree proc/chain", dir);
	if (system(name) != 0)
		return 2;
	{
		static const struct {
			const char *rel, *want;
		} res[] = {
			{ "proc/device-tree", "sys/firmware/devicetree/base" },
			{ "proc/device-tree/cpus", "sys/firmware/devicetree/base/cpus" },
			{ "proc/rel", "sys/firmware/devicetree/base" },
			{ "proc/chain", "sys/firmware/devicetree/base" },
			{ "a/b/up/firmware", "sys/firmware" },
			{ "a/../../../sys", "sys" },
			{ "./sys//firmware/", "sys/firmware" },
			{ "proc/missing/x", "proc/missing/x" },
		};
		char want[700];

		for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++) {
			snprintf(want, sizeof(want), "%s/%s", dir, res[i].want);
			snprintf(name, sizeof(name), "resolve '%s'", res[i].rel);
			T_OK(name, hostfs_resolve(&h, res[i].rel, buf, sizeof(buf)) > 0 && !strcmp(buf, want),
			     "got %s, want %s", buf, want);
		}
		T_INT("symlink loop", hostfs_resolve(&h, "loop1", buf, sizeof(buf)), -FB_EINVAL);
	}
	snprintf(name, sizeof(name), "rm -rf '%s'", dir);
	if (system(name) != 0)
		return 2;
	return t_done();
}
