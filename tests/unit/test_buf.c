/* buf, arena, attr: the base layer. */
#include "t.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#include "../../core/arena.h"
#include "../../core/attr.h"
#include "../../core/buf.h"
#include "../../core/err.h"

static void test_buf(void)
{
	struct buf b;
	size_t n;
	char *s;
	int i;

	buf_init(&b, 0);
	s = buf_take(&b, &n);
	T_OK("buf: an empty buffer takes as \"\"", s && !*s && n == 0, "got %p", (void *)s);
	free(s);
	buf_puts(&b, "ab");
	buf_putc(&b, 'c');
	buf_printf(&b, "-%d-", 42);
	for (i = 0; i < 1000; i++)
		buf_put(&b, "x", 1);
	T_INT("buf: appends add up", b.len, 1007);
	T_INT("buf: NUL-terminated", b.p[b.len], 0);
	T_OK("buf: contents", memcmp(b.p, "abc-42-x", 8) == 0, "got %.8s", b.p);
	buf_truncate(&b, 3);
	T_STR("buf: truncate", b.p, "abc");
	buf_reset(&b);
	T_INT("buf: reset", b.len, 0);
	buf_free(&b);

	buf_init(&b, 8);
	buf_puts(&b, "12345678");
	T_INT("buf: up to max is fine", b.err, 0);
	buf_putc(&b, '9');
	T_INT("buf: past max: -FB_E2BIG", b.err, -FB_E2BIG);
	buf_puts(&b, "");
	T_INT("buf: the error is sticky", b.err, -FB_E2BIG);
	T_INT("buf: nothing appended after the error", b.len, 8);
	T_INT("buf: reserve reports it", buf_reserve(&b, 0), -FB_E2BIG);
	s = buf_take(&b, &n);
	T_OK("buf: take of a failed buffer is NULL", !s, "got %p", (void *)s);
	T_OK("buf: and frees it", !b.p && !b.len && !b.err, "p %p", (void *)b.p);
	buf_init(&b, 0);
	buf_reserve(&b, SIZE_MAX - 4);
	T_INT("buf: a size overflow is -FB_E2BIG", b.err, -FB_E2BIG);
	buf_free(&b);
}

static void test_array(void)
{
	int *a = NULL;
	size_t size = 0, i;

	T_INT("array: grow from empty", ARRAY_GROW(a, size, 1), 0);
	T_INT("array: first capacity", size, 8);
	for (i = 0; i < 100; i++) {
		if (ARRAY_GROW(a, size, i + 1) < 0)
			break;
		a[i] = (int)i;
	}
	T_INT("array: 100 elements", i, 100);
	T_INT("array: capacity doubled", size, 128);
	T_INT("array: values kept", a[99] + a[0] + a[50], 149);
	T_INT("array: enough already: unchanged", ARRAY_GROW(a, size, 10), 0);
	T_INT("array: overflow refused", ARRAY_GROW(a, size, SIZE_MAX / 2), -FB_ENOMEM);
	T_INT("array: the array survives a refusal", a[99], 99);
	free(a);
}

static void test_arena(void)
{
	struct arena a;
	char *s[2000];
	int i, ok = 1;
	void *big;

	arena_init(&a);
	for (i = 0; i < 2000; i++) {
		char tmp[16];

		snprintf(tmp, sizeof(tmp), "s%d", i);
		s[i] = arena_strdup(&a, tmp);
	}
	big = arena_alloc(&a, 100000);
	for (i = 0; i < 2000; i++) {
		char tmp[16];

		snprintf(tmp, sizeof(tmp), "s%d", i);
		ok &= s[i] && strcmp(s[i], tmp) == 0 && ((uintptr_t)s[i] % alignof(max_align_t)) == 0;
	}
	T_OK("arena: 2,000 strings kept and aligned", ok, "a string was lost");
	T_OK("arena: a big allocation", big != NULL, "NULL");
	memset(big, 1, 100000);
	T_STR("arena: strndup cuts", arena_strndup(&a, "abcdef", 3), "abc");
	T_OK("arena: strings after the big block still in a shared block",
	     arena_strdup(&a, "z") != NULL, "NULL");
	T_OK("arena: bytes counted", a.bytes >= 100000 + 2000 * 3, "bytes %zu", a.bytes);
	arena_free(&a);
	T_OK("arena: empty after free", !a.head && !a.bytes, "not empty");
	arena_free(&a);
}

static void test_attr(void)
{
	char dir[] = "/tmp/fb-attr-XXXXXX", p[256], buf[8];
	int fd;
	ssize_t n;

	if (!mkdtemp(dir)) {
		T_OK("attr: temp dir", 0, "mkdtemp: %s", strerror(errno));
		return;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	snprintf(p, sizeof(p), "%s/a", dir);
	t_put(p, "0x10\n", 0644);
	snprintf(p, sizeof(p), "%s/full", dir);
	t_put(p, "1234567", 0644);
	snprintf(p, sizeof(p), "%s/d", dir);
	t_put(p, NULL, 0755);
	snprintf(p, sizeof(p), "%s/l", dir);
	if (symlink("a", p) != 0)
		T_OK("attr: symlink", 0, "%s", strerror(errno));
	snprintf(p, sizeof(p), "%s/fifo", dir);
	mkfifo(p, 0644);

	n = attr_read(fd, "a", buf, sizeof(buf), 0);
	T_INT("attr: value length, newline removed", n, 4);
	T_STR("attr: value", buf, "0x10");
	n = attr_read(fd, "a", buf, sizeof(buf), ATTR_RAW);
	T_INT("attr: raw keeps the newline", n, 5);
	T_INT("attr: a value that fills the buffer is -FB_E2BIG",
	      attr_read(fd, "full", buf, sizeof(buf), 0), -FB_E2BIG);
	T_INT("attr: missing: -FB_ENOENT", attr_read(fd, "nope", buf, sizeof(buf), 0), -FB_ENOENT);
	T_INT("attr: under a file: -FB_ENOENT", attr_read(fd, "a/x", buf, sizeof(buf), 0), -FB_ENOENT);
	T_INT("attr: a directory: -FB_EIO", attr_read(fd, "d", buf, sizeof(buf), 0), -FB_EIO);
	T_INT("attr: a FIFO reads as empty, never blocks", attr_read(fd, "fifo", buf, sizeof(buf), 0), 0);
	T_INT("attr: ATTR_REGULAR refuses a FIFO", attr_read(fd, "fifo", buf, sizeof(buf), ATTR_REGULAR), -FB_EINVAL);
	T_INT("attr: ATTR_REGULAR refuses a directory", attr_read(fd, "d", buf, sizeof(buf), ATTR_REGULAR), -FB_EINVAL);
	T_INT("attr: ATTR_REGULAR | ATTR_ALL reads a file", attr_read(fd, "a", buf, sizeof(buf), ATTR_REGULAR | ATTR_ALL), 4);
	T_INT("attr: size 0 is -FB_E2BIG", attr_read(fd, "a", buf, 0, 0), -FB_E2BIG);
	T_INT("attr: a symlink is followed", attr_read(fd, "l", buf, sizeof(buf), 0), 4);
	T_INT("attr: ATTR_NOFOLLOW refuses it", attr_read(fd, "l", buf, sizeof(buf), ATTR_NOFOLLOW),
	      -FB_EIO);
	T_INT("attr: /dev/zero fills: -FB_E2BIG", attr_read(AT_FDCWD, "/dev/zero", buf, sizeof(buf), 0),
	      -FB_E2BIG);
	close(fd);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (system(p) != 0)
		T_OK("attr: cleanup", 0, "rm failed");
}

int main(void)
{
	t_suite = "buf";
	test_buf();
	test_array();
	test_arena();
	test_attr();
	return t_done();
}
