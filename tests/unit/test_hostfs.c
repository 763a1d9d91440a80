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
	/* opening beneath a directory others write (features.d): symlinks
	 * only while they stay inside, a ConfigMap volume's layout works */
	snprintf(name, sizeof(name),
		 "cd '%s' && mkdir -p fd/..2024_01_01/sub fd/real out && echo secret >out/token && "
		 "echo cm >fd/..2024_01_01/labels && echo nested >fd/..2024_01_01/sub/more && "
		 "ln -s ..2024_01_01 fd/..data && ln -s ..data/labels fd/labels && "
		 "ln -s ./..data/sub/../sub/more fd/more && ln -s '%s/out/token' fd/abs && "
		 "ln -s ../out/token fd/rel && ln -s .. fd/up && ln -s up/out/token fd/via-up && "
		 "ln -s real/../../out/token fd/climb && ln -s sub-loop fd/sub-loop && "
		 "ln -s real fd/real-link && echo x >fd/real/x && ln -s ../labels fd/real/back && "
		 "ln -s nothing fd/dangling && mkfifo fd/fifo", dir, dir);
	if (system(name) != 0)
		return 2;
	{
		static const struct {
			const char *rel, *want; /* want NULL: fails with code */
			int code;
		} ben[] = {
			{ "labels", "..2024_01_01/labels", 0 },
			{ "more", "..2024_01_01/sub/more", 0 },
			{ "..data/sub/more", "..2024_01_01/sub/more", 0 },
			{ "real-link/x", "real/x", 0 },
			{ "real/back", "..2024_01_01/labels", 0 },
			{ "real/./x", "real/x", 0 },
			{ "real/../labels", "..2024_01_01/labels", 0 },
			{ "abs", NULL, -FB_EOUTSIDE },
			{ "rel", NULL, -FB_EOUTSIDE },
			{ "up", NULL, -FB_EOUTSIDE },
			{ "via-up", NULL, -FB_EOUTSIDE },
			{ "climb", NULL, -FB_EOUTSIDE },
			{ "../out/token", NULL, -FB_EOUTSIDE },
			{ "/etc/passwd", NULL, -FB_EOUTSIDE },
			{ "sub-loop", NULL, -FB_EINVAL },
			{ "dangling", NULL, -FB_ENOENT },
			{ "missing", NULL, -FB_ENOENT },
			{ "real/x/y", NULL, -FB_ENOENT },
		};
		char got[600];
		int dfd;

		snprintf(buf, sizeof(buf), "%s/fd", dir);
		dfd = open(buf, O_RDONLY | O_DIRECTORY);
		for (size_t i = 0; i < sizeof(ben) / sizeof(ben[0]); i++) {
			snprintf(name, sizeof(name), "beneath '%s'", ben[i].rel);
			got[0] = '\0';
			fd = hostfs_open_beneath(dfd, ben[i].rel, O_RDONLY | O_NONBLOCK, got, sizeof(got));
			if (ben[i].want)
				T_OK(name, fd >= 0 && strcmp(got, ben[i].want) == 0, "fd %d, got '%s', want '%s'", fd,
				     got, ben[i].want);
			else
				T_INT(name, fd, ben[i].code);
			if (fd >= 0)
				close(fd);
		}
		/* "real/back" is "../labels" from real/, itself a link: it reads "cm" */
		fd = hostfs_open_beneath(dfd, "real/back", O_RDONLY, NULL, 0);
		{
			char c[8] = "";
			ssize_t r = fd >= 0 ? read(fd, c, sizeof(c) - 1) : -1;

			T_OK("beneath: a link back up to a link reads its target", r == 3 && !memcmp(c, "cm\n", 3),
			     "read %zd", r);
		}
		if (fd >= 0)
			close(fd);
		fd = hostfs_open_beneath(dfd, "fifo", O_RDONLY | O_NONBLOCK, NULL, 0);
		T_OK("beneath: a FIFO opens without blocking (the caller checks the type)", fd >= 0, "fd %d", fd);
		if (fd >= 0)
			close(fd);
		fd = hostfs_open_beneath(dfd, "", O_RDONLY | O_DIRECTORY, got, sizeof(got));
		T_OK("beneath: \"\" is the directory itself", fd >= 0 && got[0] == '\0', "fd %d", fd);
		if (fd >= 0)
			close(fd);
		T_INT("beneath: a resolved name that does not fit",
		      hostfs_open_beneath(dfd, "more", O_RDONLY, got, 4), -FB_E2BIG);
		{
			char **names = NULL;
			size_t n = 0, total = 0;

			T_INT("list: every visible name", hostfs_list(dfd, 100, &names, &n, &total), 0);
			T_OK("list: sorted, hidden ones left out", n == 12 && total == 12 && !strcmp(names[0], "abs") &&
			     !strcmp(names[11], "via-up"), "n %zu total %zu first %s", n, total, n ? names[0] : "-");
			hostfs_names_free(names, n);
			T_INT("list: capped", hostfs_list(dfd, 3, &names, &n, &total), 0);
			T_OK("list: the first ones by name, the count of all", n == 3 && total == 12 &&
			     !strcmp(names[0], "abs") && !strcmp(names[1], "climb") && !strcmp(names[2], "dangling"),
			     "n %zu total %zu", n, total);
			hostfs_names_free(names, n);
			T_INT("list: again from the start (the fd's offset is shared)",
			      hostfs_list(dfd, 100, &names, &n, &total), 0);
			T_OK("list: again all", n == 12, "n %zu", n);
			hostfs_names_free(names, n);
		}
		close(dfd);
	}
	snprintf(name, sizeof(name), "rm -rf '%s'", dir);
	if (system(name) != 0)
		return 2;
	return t_done();
}
