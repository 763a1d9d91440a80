/* opt: every option kind, one- and two-dash forms, clusters, operands, errors. */
#include "t.h"

#include "../../core/err.h"
#include "../../core/opt.h"

#include <stdlib.h>

struct vals {
	int d, oneshot, ffseen;
	const char *name, *ff, *n;
	long v;
	long long dur;
	struct opt_list list, strs;
};

static int run(const char *cmdline, struct vals *x, int *first, char ***argvp, int *argcp)
{
	static char buf[512];
	static char *argv[32];
	int argc = 0;
	const struct opt opts[] = {
		{ .so = 'd', .kind = OPT_FLAG, .dst = &x->d, .help = "d" },
		{ .lo = "oneshot", .kind = OPT_FLAG, .dst = &x->oneshot, .help = "o" },
		{ .lo = "name", .kind = OPT_STR, .dst = &x->name, .arg = "S", .help = "s" },
		{ .lo = "ff", .so = 'f', .kind = OPT_OPTSTR, .dst = &x->ff, .seen = &x->ffseen,
		  .arg = "P", .help = "f" },
		{ .so = 'n', .kind = OPT_STR, .dst = &x->n, .arg = "N", .help = "n" },
		{ .lo = "v", .so = 'v', .kind = OPT_INT, .dst = &x->v, .min = 0, .max = 10, .help = "v" },
		{ .lo = "dur", .kind = OPT_DUR, .dst = &x->dur, .min = 1000, .max = 3600000, .help = "t" },
		{ .lo = "list", .kind = OPT_LIST, .dst = &x->list, .help = "l" },
		{ .lo = "strs", .so = 's', .kind = OPT_STRS, .dst = &x->strs, .help = "s" },
	};
	const struct opt_spec spec = { "t", "Usage: t\n", opts, sizeof(opts) / sizeof(opts[0]) };

	memset(x, 0, sizeof(*x));
	snprintf(buf, sizeof(buf), "t %s", cmdline);
	for (char *p = strtok(buf, " "); p && argc < 31; p = strtok(NULL, " "))
		argv[argc++] = p;
	argv[argc] = NULL;
	*argvp = argv;
	*argcp = argc;
	return opt_parse(&spec, argc, argv, first);
}

static const struct {
	const char *cmd;
	int rc; /* 0, OPT_EXIT or -FB_EUSAGE */
	int d, oneshot, ffseen;
	const char *name, *ff, *n;
	long v;
	long long dur;
	int nlist;
	const char *operand; /* argv[first] or NULL */
} cases[] = {
	{ "", 0 },
	{ "-d", 0, .d = 1 },
	{ "--oneshot", 0, .oneshot = 1 },
	{ "-oneshot", 0, .oneshot = 1 },
	{ "--oneshot=false", 0, .oneshot = 0 },
	{ "-oneshot=true", 0, .oneshot = 1 },
	{ "--oneshot=maybe", -FB_EUSAGE },
	{ "--name x", 0, .name = "x" },
	{ "-name=x", 0, .name = "x" },
	{ "--name=", 0, .name = "" },
	{ "--name", -FB_EUSAGE },
	{ "-v 3", 0, .v = 3 },
	{ "-v3", 0, .v = 3 },
	{ "--v=3", 0, .v = 3 },
	{ "-v=3", 0, .v = 3 },
	{ "-v 11", -FB_EUSAGE },
	{ "-v -1", -FB_EUSAGE },
	{ "-v x", -FB_EUSAGE },
	{ "-dv 2", 0, .d = 1, .v = 2 },
	{ "-x", -FB_EUSAGE },
	{ "--nope", -FB_EUSAGE },
	{ "--ff", 0, .ffseen = 1 },
	{ "--ff=/x", 0, .ffseen = 1, .ff = "/x" },
	{ "-f", 0, .ffseen = 1 },
	{ "-f /x", 0, .ffseen = 1, .operand = "/x" },
	{ "--ff=/x -f", 0, .ffseen = 1, .ff = "/x" },
	{ "-f=/x", 0, .ffseen = 1, .ff = "/x" },
	{ "-d=true", 0, .d = 1 },
	{ "-d=false", 0, .d = 0 },
	{ "-d=maybe", -FB_EUSAGE },
	{ "--dur 1m30s", 0, .dur = 90000 },
	{ "--dur 10", -FB_EUSAGE },
	{ "--dur 500ms", -FB_EUSAGE },
	{ "--dur 2h", -FB_EUSAGE },
	{ "--list a,b --list c", 0, .nlist = 3 },
	{ "--list ,a,,", 0, .nlist = 1 },
	{ "-n gpu pwm-fan", 0, .n = "gpu", .operand = "pwm-fan" },
	{ "-- -d", 0, .operand = "-d" },
	{ "- -d", 0, .operand = "-" },
	{ "-d x -v 3", 0, .d = 1, .operand = "x" },
	{ "--version", OPT_EXIT },
	{ "-help", OPT_EXIT },
};

static const struct {
	const char *s;
	int rc;
	long long ms;
} durs[] = {
	{ "0", 0, 0 }, { "1h", 0, 3600000 }, { "1m30s", 0, 90000 }, { "500ms", 0, 500 },
	{ "2h45m", 0, 9900000 }, { "1500us", 0, 1 }, { "", -FB_EINVAL }, { "s", -FB_EINVAL },
	{ "5x", -FB_EINVAL }, { "10", -FB_EINVAL }, { "1.5h", -FB_EINVAL }, { "-1s", -FB_EINVAL },
	{ "99999999999999999999h", -FB_ERANGE }, { "9223372036854775h", -FB_ERANGE },
};

int main(void)
{
	char name[160];

	t_suite = "opt";
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vals x;
		char **argv;
		int argc, first = -1;
		int rc = run(cases[i].cmd, &x, &first, &argv, &argc);

		snprintf(name, sizeof(name), "'%s' rc", cases[i].cmd);
		T_INT(name, rc, cases[i].rc);
		if (rc != 0 || cases[i].rc != 0)
			continue;
		snprintf(name, sizeof(name), "'%s' values", cases[i].cmd);
		T_OK(name, x.d == cases[i].d && x.oneshot == cases[i].oneshot &&
			   x.ffseen == cases[i].ffseen && x.v == cases[i].v &&
			   x.dur == cases[i].dur && x.list.n == cases[i].nlist,
		     "d=%d oneshot=%d ffseen=%d v=%ld dur=%lld nlist=%d", x.d, x.oneshot, x.ffseen,
		     x.v, x.dur, x.list.n);
		snprintf(name, sizeof(name), "'%s' strings", cases[i].cmd);
		T_OK(name, !x.name == !cases[i].name && (!x.name || !strcmp(x.name, cases[i].name)) &&
			   !x.ff == !cases[i].ff && (!x.ff || !strcmp(x.ff, cases[i].ff)) &&
			   !x.n == !cases[i].n && (!x.n || !strcmp(x.n, cases[i].n)),
		     "name=%s ff=%s n=%s", x.name ? x.name : "-", x.ff ? x.ff : "-", x.n ? x.n : "-");
		snprintf(name, sizeof(name), "'%s' operand", cases[i].cmd);
		T_OK(name, cases[i].operand ? first < argc && !strcmp(argv[first], cases[i].operand)
					    : first == argc,
		     "first=%d argc=%d", first, argc);
	}
	{
		struct vals x;
		char **argv;
		int argc, first;

		run("-s a,b --strs c -s=d", &x, &first, &argv, &argc);
		T_OK("repeated string values kept whole", x.strs.n == 3 && !strcmp(x.strs.v[0], "a,b") &&
			 !strcmp(x.strs.v[1], "c") && !strcmp(x.strs.v[2], "d"), "n=%d", x.strs.n);
		run("--list a,b --list c", &x, &first, &argv, &argc);
		T_OK("list items in order", x.list.n == 3 && !strcmp(x.list.v[0], "a") &&
			 !strcmp(x.list.v[1], "b") && !strcmp(x.list.v[2], "c"), "n=%d", x.list.n);
	}
	for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		long long ms = -1;
		int rc = opt_parse_duration(durs[i].s, &ms);

		snprintf(name, sizeof(name), "duration '%s'", durs[i].s);
		T_OK(name, rc == durs[i].rc && (rc < 0 || ms == durs[i].ms), "rc=%d ms=%lld", rc, ms);
	}
	return t_done();
}
