/* featfile: atomic write, directory creation, and failures that leave the old
 * file intact and no temporary behind. */
#include "t.h"

#include "../../core/featfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int contents_are(const char *path, const char *want)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return strcmp(buf, want) == 0;
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static char ro_path[512];

/* 0 when writing into a read-only directory fails as it should. */
static int write_ro(void *arg)
{
	struct fb_errinfo ei;
	int rc = featfile_write(ro_path, "z\n", 2, &ei);

	(void)arg;
	return !(rc == -FB_EIO && ei.sys == EACCES && strstr(ei.what, "/ro/.f.tmp"));
}

int main(void)
{
	char tmpl[] = "/tmp/fb-featfile-XXXXXX", p[512], q[512], t[512];
	char *dir = mkdtemp(tmpl);
	struct fb_errinfo ei;
	struct stat st1, st2;
	int rc;

	t_suite = "featfile";
	snprintf(p, sizeof(p), "%s/a/b/features.d/devicetree-features", dir);
	snprintf(t, sizeof(t), "%s/a/b/features.d/.devicetree-features.tmp", dir);
	rc = featfile_write(p, "x=1\n", 4, &ei);
	T_INT("write creates missing directories", rc, 0);
	T_OK("contents written", contents_are(p, "x=1\n"), "wrong contents");
	T_OK("no temporary left", !exists(t), "%s exists", t);
	stat(p, &st1);
	T_INT("mode 0644", st1.st_mode & 07777, 0644);
	rc = featfile_write(p, "y=2\n", 4, &ei);
	stat(p, &st2);
	T_OK("overwrite replaces the file (rename)", rc == 0 && contents_are(p, "y=2\n") &&
		 st1.st_ino != st2.st_ino, "rc=%d", rc);
	T_INT("empty contents", featfile_write(p, "", 0, &ei), 0);
	T_OK("empty file written", contents_are(p, ""), "not empty");

	/* target is a directory: rename fails, nothing left behind */
	snprintf(q, sizeof(q), "%s/isdir", dir);
	mkdir(q, 0755);
	rc = featfile_write(q, "z\n", 2, &ei);
	T_OK("target that is a directory", rc == -FB_EIO && ei.sys == EISDIR && !strcmp(ei.what, q),
	     "rc=%d sys=%d what=%s", rc, ei.sys, ei.what);
	snprintf(t, sizeof(t), "%s/.isdir.tmp", dir);
	T_OK("temporary removed after failure", !exists(t), "%s exists", t);

	/* a parent that is a regular file */
	snprintf(q, sizeof(q), "%s/a/b/features.d/devicetree-features/x", dir);
	rc = featfile_write(q, "z\n", 2, &ei);
	T_OK("parent is a file", rc == -FB_EIO && ei.sys == ENOTDIR && strstr(ei.what, "devicetree-features"),
	     "rc=%d sys=%d what=%s", rc, ei.sys, ei.what);
	T_OK("existing file untouched", contents_are(p, ""), "changed");

	/* a planted symlink at the temporary name is not followed */
	snprintf(q, sizeof(q), "%s/victim", dir);
	featfile_write(q, "keep\n", 5, &ei);
	snprintf(p, sizeof(p), "%s/out", dir);
	snprintf(t, sizeof(t), "%s/.out.tmp", dir);
	symlink(q, t);
	rc = featfile_write(p, "new\n", 4, &ei);
	T_OK("a symlink planted at the temporary name is replaced, not followed",
	     rc == 0 && contents_are(q, "keep\n") && contents_are(p, "new\n"), "rc=%d", rc);
	T_OK("and nothing is left at the temporary name", !exists(t), "%s exists", t);

	/* a stale temporary with odd permissions does not leak its mode */
	{
		int sfd = open(t, O_WRONLY | O_CREAT, 0600);

		if (sfd >= 0)
			close(sfd);
		chmod(t, 0600);
		umask(077);
		rc = featfile_write(p, "m\n", 2, &ei);
		umask(022);
		stat(p, &st1);
		T_OK("mode is 0644 whatever the umask and stale temporary", rc == 0 &&
			 (st1.st_mode & 07777) == 0644, "rc=%d mode=%o", rc, st1.st_mode & 07777);
	}

	/* concurrent writers: every reader sees one whole version */
	{
		static const char *const ver[2] = { "aaaa=1\nbbbb=2\ncccc=3\n", "x=9\n" };
		int bad = 0;

		for (int round = 0; round < 50 && !bad; round++) {
			pid_t kids[2];

			for (int k = 0; k < 2; k++)
				if ((kids[k] = fork()) == 0)
					_exit(featfile_write(p, ver[k], strlen(ver[k]), NULL) == 0 ? 0 : 1);
			for (int k = 0; k < 2; k++) {
				int wst;

				waitpid(kids[k], &wst, 0);
				bad |= !WIFEXITED(wst) || WEXITSTATUS(wst) != 0;
			}
			bad |= !contents_are(p, ver[0]) && !contents_are(p, ver[1]);
		}
		T_OK("two concurrent writers: both succeed, file is one whole version", !bad, "mixed or failed");
	}

	T_INT("name that is not a file", featfile_write("/tmp/", "", 0, &ei), -FB_EINVAL);
	T_INT("relative path in the current directory", (chdir(dir), featfile_write("rel", "r\n", 2, &ei)), 0);
	T_OK("relative file written", contents_are("rel", "r\n"), "missing");

	/* permissions only bind an unprivileged user: drop to nobody when root */
	chmod(dir, 0755);
	snprintf(q, sizeof(q), "%s/ro", dir);
	mkdir(q, 0555);
	snprintf(ro_path, sizeof(ro_path), "%s/ro/f", dir);
	rc = t_unprivileged(write_ro, NULL);
	T_INT("read-only directory is an error naming the temporary file (EACCES)", rc, 0);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (chdir("/") != 0 || system(p) != 0)
		return 2;
	return t_done();
}
