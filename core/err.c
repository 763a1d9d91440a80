#include "err.h"

#include <stdio.h>
#include <string.h>

static const char *const fb_errtab[FB_ERR_COUNT] = {
	[FB_OK] = "success",
	[FB_EIO] = "I/O error",
	[FB_ENOENT] = "not found",
	[FB_E2BIG] = "value too large",
	[FB_EINVAL] = "invalid value",
	[FB_ERANGE] = "value out of range",
	[FB_ENOMEM] = "out of memory",
	[FB_EBADDT] = "invalid devicetree blob",
	[FB_EDEPTH] = "tree nested too deep",
	[FB_EUSAGE] = "usage error",
	[FB_EAGAIN] = "operation would block",
	[FB_ETLS] = "TLS failure",
	[FB_ETIMEDOUT] = "timed out",
	[FB_ECLOSED] = "connection closed by peer",
	[FB_EPROTO] = "protocol error",
	[FB_ECANCELED] = "canceled",
	[FB_EOUTSIDE] = "symlink leads outside the directory",
};

const char *fb_strerror(int code)
{
	if (code < 0)
		code = -code;
	if (code >= FB_ERR_COUNT)
		return "unknown error";
	return fb_errtab[code];
}

void fb_errinfo_init(struct fb_errinfo *ei)
{
	ei->code = FB_OK;
	ei->sys = 0;
	ei->what[0] = '\0';
	ei->detail[0] = '\0';
}

int fb_errinfo_set(struct fb_errinfo *ei, int code, int sys, const char *what,
		   const char *detail)
{
	if (code < 0)
		code = -code;
	if (ei) {
		ei->code = code;
		ei->sys = sys;
		snprintf(ei->what, sizeof(ei->what), "%s", what ? what : "");
		snprintf(ei->detail, sizeof(ei->detail), "%s", detail ? detail : "");
	}
	return -code;
}

const char *fb_errinfo_str(const struct fb_errinfo *ei, char *buf, size_t size)
{
	const char *reason = ei->sys ? strerror(ei->sys) : fb_strerror(ei->code);

	if (!ei->what[0])
		snprintf(buf, size, "%s%s%s", ei->detail, ei->detail[0] ? ": " : "", reason);
	else if (ei->detail[0] && ei->sys)
		snprintf(buf, size, "%s: %s: %s", ei->what, ei->detail, reason);
	else if (ei->detail[0])
		snprintf(buf, size, "%s: %s", ei->what, ei->detail);
	else
		snprintf(buf, size, "%s: %s", ei->what, reason);
	return buf;
}
