/* opt: table-driven command-line parsing shared by every applet.
 *
 * Long options take one or two dashes (NFD/Go style "-oneshot" as well as
 * "--oneshot"), with "=value" or a separate argument; short options may be
 * clustered ("-dv3"). Parsing stops at the first non-option argument or "--"
 * (Go's flag package does the same, and dt-labeller's "-n gpu pwm-fan" needs it).
 * --help and --version are handled here, once, for every applet. */
#ifndef FB_OPT_H
#define FB_OPT_H

#include <stddef.h>

enum opt_kind {
	OPT_FLAG,   /* int *: 1 when given; "--x=false" gives 0 */
	OPT_STR,    /* const char **: borrowed from argv */
	OPT_OPTSTR, /* const char **: "--x=VALUE" stores VALUE; plain "--x"/"-x" only marks it seen */
	OPT_INT,    /* long *: decimal, checked against min..max */
	OPT_DUR,    /* long long * milliseconds: a Go duration (opt_parse_duration), truncated */
	OPT_LIST,   /* struct opt_list *: comma-separated, repeatable; argv is split in place */
	OPT_STRS,   /* struct opt_list *: repeatable, each value kept whole */
	OPT_IGNORE, /* unsigned *: accepted, nothing stored but bit min of the mask set; takes a
		     * value when arg is set, else like a flag ("-x", "-x=false"); help says why
		     * (an upstream flag with no meaning here: core/app warns once) */
};

#define OPT_LIST_MAX 32

struct opt_list {
	const char *v[OPT_LIST_MAX]; /* borrowed from argv */
	int n;
};

/* One row of an applet's const option table. The values land in the
 * applet's options struct, whose defaults the applet fills in first:
 *   static const struct opt opts[] = {
 *   	{ .lo = "port", .kind = OPT_INT, .off = offsetof(struct x_opts, port), ... },
 *   };
 */
struct opt {
	const char *lo; /* long name or NULL */
	char so;        /* short letter or 0 */
	enum opt_kind kind;
	size_t off;     /* of the destination in the options struct; its type is the kind's */
	long min, max;  /* OPT_INT range; OPT_DUR range in ms (max 0: unbounded) */
	const char *arg;  /* name of the value in --help, e.g. "PATH" */
	const char *help; /* one line for --help */
	size_t seen;      /* 0, or OPT_SEEN(type, member): an int set to 1 when the option is given */
};

#define OPT_SEEN(type, member) (offsetof(type, member) + 1)

struct opt_spec {
	const char *name;  /* the applet's name, for messages */
	const char *usage; /* the applet's usage text: the only copy of its help */
	const struct opt *opts;
	size_t nopts;
	/* a shared table as well (klog's flags: core/app), or NULL: its
	 * offsets are within the struct at more_off in the options struct */
	const struct opt *more;
	size_t nmore, more_off;
	const char *more_title; /* its heading in --help */
};

enum {
	OPT_EXIT = 1, /* --help or --version was printed: the applet exits 0 */
};

/* Parses argv[1..] into the options struct opts (spec->opts give the
 * offsets; what is not given keeps its value). Returns 0 and sets *first_arg to the index of the first
 * operand (argc when none), OPT_EXIT after --help/--version, -FB_EIO when
 * those could not be written to stdout, or -FB_EUSAGE after printing
 * "NAME: problem" and a hint to stderr. */
int opt_parse(const struct opt_spec *spec, void *opts, int argc, char **argv, int *first_arg);

/* opt_parse for an applet that takes no operands: returns -1 when the
 * applet goes on, else the exit status it returns at once (0 after --help
 * or --version, 2 for a usage error or an operand, 1 when the help could
 * not be written), the message already printed. */
int opt_parse_only(const struct opt_spec *spec, void *opts, int argc, char **argv);

/* THE duration parser, for flags and config files alike: Go's
 * time.ParseDuration into nanoseconds. A possibly signed sequence of decimal
 * numbers, each with an optional fraction and a unit (ns, us, \u00b5s, \u03bcs,
 * ms, s, m, h): "300ms", "-1.5h", "1h15m30.918273645s", "10.5s4m"; "0" needs
 * no unit. Returns 0, -FB_EINVAL (syntax), or -FB_ERANGE past int64
 * nanoseconds (about 292 years). */
int opt_parse_duration(const char *s, long long *ns);

/* Sets option o (a row of one of spec's tables; base: the struct its
 * offsets are into) from value as "--NAME=value" would, shown naming the
 * value's origin in a message (a config key, say). value is borrowed by the
 * string kinds; the list kinds are refused (-FB_EINVAL). Returns 0 or
 * -FB_EUSAGE after printing "NAME: SHOWN: problem". */
int opt_set_value(const struct opt_spec *spec, void *base, const struct opt *o, const char *shown,
		  const char *value);

/* Prints the usage text and the generated option list to stdout. */
void opt_help(const struct opt_spec *spec);

#endif
