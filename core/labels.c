#include "labels.h"

#include "err.h"

#include <string.h>

static int is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int is_name_char(char c)
{
	return is_alnum(c) || c == '-' || c == '_' || c == '.';
}

int labels_valid_name(const char *s, size_t len)
{
	if (len == 0 || len > LABELS_NAME_MAX || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!is_name_char(s[i]))
			return 0;
	return 1;
}

int labels_valid_value(const char *s, size_t len)
{
	return len == 0 || labels_valid_name(s, len);
}

static int is_dns_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int labels_valid_prefix(const char *s, size_t len)
{
	size_t start = 0;

	if (len == 0 || len > LABELS_PREFIX_MAX)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.') {
			if (!is_dns_char(s[i]) && s[i] != '-')
				return 0;
			continue;
		}
		/* a dot-separated part s[start..i) */
		if (i == start || !is_dns_char(s[start]) || !is_dns_char(s[i - 1]))
			return 0;
		start = i + 1;
	}
	return 1;
}

int labels_valid_key(const char *key)
{
	const char *slash = strchr(key, '/');

	if (!slash)
		return labels_valid_name(key, strlen(key));
	return labels_valid_prefix(key, (size_t)(slash - key)) &&
	       labels_valid_name(slash + 1, strlen(slash + 1));
}

ssize_t labels_dt_name(const char *cs, size_t len, char *out, size_t size)
{
	const char *comma = memchr(cs, ',', len);
	size_t n = 0, end = 0, i = 0;

	if (size == 0)
		return -FB_E2BIG;
	if (comma && comma - cs == 4 && memcmp(cs, "xlnx", 4) == 0) {
		if (size <= 6)
			return -FB_E2BIG;
		memcpy(out, "xilinx", 6);
		n = end = 6;
		i = 4;
	}
	for (; i < len; i++) {
		char c = cs[i] == ',' ? '-' : is_name_char(cs[i]) ? cs[i] : '_';

		if (n == 0 && !is_alnum(c))
			continue; /* leading trim */
		if (n + 1 < size)
			out[n] = c;
		n++; /* past size: only counted, the result is too long anyway */
		if (is_alnum(c))
			end = n;
	}
	if (end >= size || end > LABELS_NAME_MAX) {
		out[0] = '\0';
		return -FB_E2BIG;
	}
	out[end] = '\0'; /* trailing trim */
	return (ssize_t)end;
}
