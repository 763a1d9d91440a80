/* opt: every option kind, one- and two-dash forms, clusters, operands, errors. */
#include "t.h"

#include "../../core/err.h"
#include "../../core/opt.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>

struct vals {
	int d, oneshot, ffseen;
	const char *name, *ff, *n;
	long v;
	long long dur;
	struct opt_list list, strs;
};

#define AT(m) offsetof(struct vals, m)

/* const, as in the applets: the table gives offsets into struct vals */
static const struct opt opts[] = {
	{ .so = 'd', .kind = OPT_FLAG, .off = AT(d), .help = "d" },
	{ .lo = "oneshot", .kind = OPT_FLAG, .off = AT(oneshot), .help = "o" },
	{ .lo = "name", .kind = OPT_STR, .off = AT(name), .arg = "S", .help = "s" },
	{ .lo = "ff", .so = 'f', .kind = OPT_OPTSTR, .off = AT(ff), .seen = OPT_SEEN(struct vals, ffseen),
	  .arg = "P", .help = "f" },
	{ .so = 'n', .kind = OPT_STR, .off = AT(n), .arg = "N", .help = "n" },
	{ .lo = "v", .so = 'v', .kind = OPT_INT, .off = AT(v), .min = 0, .max = 10, .help = "v" },
	{ .lo = "dur", .kind = OPT_DUR, .off = AT(dur), .min = 1000, .max = 3600000, .help = "t" },
	{ .lo = "list", .kind = OPT_LIST, .off = AT(list), .help = "l" },
	{ .lo = "strs", .so = 's', .kind = OPT_STRS, .off = AT(strs), .help = "s" },
};
static const struct opt_spec spec = { "t", "Usage: t\n", opts, sizeof(opts) / sizeof(opts[0]) };

static int run(const char *cmdline, struct vals *x, int *first, char ***argvp, int *argcp)
{
	static char buf[512];
	static char *argv[32];
	int argc = 0;

	memset(x, 0, sizeof(*x));
	snprintf(buf, sizeof(buf), "t %s", cmdline);
	for (char *p = strtok(buf, " "); p && argc < 31; p = strtok(NULL, " "))
		argv[argc++] = p;
	argv[argc] = NULL;
	*argvp = argv;
	*argcp = argc;
	return opt_parse(&spec, x, argc, argv, first);
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
	{ "--dur 1.5m", 0, .dur = 90000 },
	{ "--dur 1001999us", 0, .dur = 1001 },
	{ "--dur -1s", -FB_EUSAGE },
	{ "--dur 1d", -FB_EUSAGE },
	{ "--list a,b --list c", 0, .nlist = 3 },
	{ "--list ,a,,", 0, .nlist = 1 },
	{ "-n gpu pwm-fan", 0, .n = "gpu", .operand = "pwm-fan" },
	{ "-- -d", 0, .operand = "-d" },
	{ "- -d", 0, .operand = "-" },
	{ "-d x -v 3", 0, .d = 1, .operand = "x" },
	{ "--version", OPT_EXIT },
	{ "-help", OPT_EXIT },
};

#define NS 1LL
#define US (1000 * NS)
#define MS (1000 * US)
#define SEC (1000 * MS)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

/* The one duration parser. The first rows are the cases of Go's
 * parseDurationTests and parseDurationErrorTests (src/time/time_test.go):
 * what Go accepts with the value it gives, what Go refuses. */
static const struct {
	const char *s;
	int rc;
	long long ns;
} durs[] = {
	/* simple */
	{ "0", 0, 0 }, { "5s", 0, 5 * SEC }, { "30s", 0, 30 * SEC }, { "1478s", 0, 1478 * SEC },
	/* sign */
	{ "-5s", 0, -5 * SEC }, { "+5s", 0, 5 * SEC }, { "-0", 0, 0 }, { "+0", 0, 0 },
	/* decimal */
	{ "5.0s", 0, 5 * SEC }, { "5.6s", 0, 5 * SEC + 600 * MS }, { "5.s", 0, 5 * SEC },
	{ ".5s", 0, 500 * MS }, { "1.0s", 0, SEC }, { "1.00s", 0, SEC }, { "1.004s", 0, SEC + 4 * MS },
	{ "1.0040s", 0, SEC + 4 * MS }, { "100.00100s", 0, 100 * SEC + MS },
	/* units */
	{ "10ns", 0, 10 * NS }, { "11us", 0, 11 * US }, { "12\xC2\xB5s", 0, 12 * US },
	{ "12\xCE\xBCs", 0, 12 * US }, { "13ms", 0, 13 * MS }, { "14s", 0, 14 * SEC },
	{ "15m", 0, 15 * MIN }, { "16h", 0, 16 * HOUR },
	/* composite */
	{ "3h30m", 0, 3 * HOUR + 30 * MIN }, { "10.5s4m", 0, 4 * MIN + 10 * SEC + 500 * MS },
	{ "-2m3.4s", 0, -(2 * MIN + 3 * SEC + 400 * MS) },
	{ "1h2m3s4ms5us6ns", 0, HOUR + 2 * MIN + 3 * SEC + 4 * MS + 5 * US + 6 * NS },
	{ "39h9m14.425s", 0, 39 * HOUR + 9 * MIN + 14 * SEC + 425 * MS },
	/* large values, more than 9 fraction digits, float64 precision */
	{ "52763797000ns", 0, 52763797000LL }, { "0.3333333333333333333h", 0, 20 * MIN },
	{ "9007199254740993ns", 0, 9007199254740993LL },
	{ "9223372036854775807ns", 0, LLONG_MAX }, { "9223372036854775.807us", 0, LLONG_MAX },
	{ "9223372036s854ms775us807ns", 0, LLONG_MAX },
	{ "-9223372036854775808ns", 0, LLONG_MIN }, { "-9223372036854775.808us", 0, LLONG_MIN },
	{ "-9223372036s854ms775us808ns", 0, LLONG_MIN }, { "-2562047h47m16.854775808s", 0, LLONG_MIN },
	{ "0.100000000000000000000h", 0, 6 * MIN },
	{ "0.830103483285477580700h", 0, 49 * MIN + 48 * SEC + 372539827 * NS },
	/* refused: syntax */
	{ "", -FB_EINVAL, 0 }, { "3", -FB_EINVAL, 0 }, { "-", -FB_EINVAL, 0 }, { "s", -FB_EINVAL, 0 },
	{ ".", -FB_EINVAL, 0 }, { "-.", -FB_EINVAL, 0 }, { ".s", -FB_EINVAL, 0 }, { "+.s", -FB_EINVAL, 0 },
	{ "1d", -FB_EINVAL, 0 }, { "\x85\x85", -FB_EINVAL, 0 }, { "\xff" "ff", -FB_EINVAL, 0 },
	{ "hello \xff" "ff world", -FB_EINVAL, 0 }, { "\xef\xbf\xbd", -FB_EINVAL, 0 },
	{ "\xef\xbf\xbd hello \xef\xbf\xbd world", -FB_EINVAL, 0 },
	/* refused: overflow */
	{ "9223372036854775810ns", -FB_ERANGE, 0 }, { "9223372036854775808ns", -FB_ERANGE, 0 },
	{ "-9223372036854775809ns", -FB_ERANGE, 0 }, { "9223372036854776us", -FB_ERANGE, 0 },
	{ "3000000h", -FB_ERANGE, 0 }, { "9223372036854775.808us", -FB_ERANGE, 0 },
	{ "9223372036854ms775us808ns", -FB_ERANGE, 0 },
	/* ours: the examples of the issue, and more refusals */
	{ "1.5m", 0, 90 * SEC }, { "300ms", 0, 300 * MS }, { "-1.5h", 0, -(90 * MIN) },
	{ "1h15m30.918273645s", 0, HOUR + 15 * MIN + 30 * SEC + 918273645 * NS },
	{ "1.5h", 0, 90 * MIN }, { "2562047h", 0, 9223369200000000000LL }, { "2562048h", -FB_ERANGE, 0 },
	{ "99999999999999999999s", -FB_ERANGE, 0 }, { "1h1", -FB_EINVAL, 0 }, { "1 s", -FB_EINVAL, 0 },
	{ "1S", -FB_EINVAL, 0 }, { "--1s", -FB_EINVAL, 0 }, { "1.2.3s", -FB_EINVAL, 0 },
	{ " 1s", -FB_EINVAL, 0 }, { "1s ", -FB_EINVAL, 0 },
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
		long long ns = -42;
		int rc = opt_parse_duration(durs[i].s, &ns);

		snprintf(name, sizeof(name), "duration \"%s\"", durs[i].s);
		T_OK(name, rc == durs[i].rc && (rc < 0 || ns == durs[i].ns), "rc=%d ns=%lld", rc, ns);
	}
	return t_done();
}
