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
	OPT_DUR,    /* long long * milliseconds: Go-style "90s", "1m30s", "500ms", "2h" */
	OPT_LIST,   /* struct opt_list *: comma-separated, repeatable; argv is split in place */
	OPT_STRS,   /* struct opt_list *: repeatable, each value kept whole */
};

#define OPT_LIST_MAX 32

struct opt_list {
	const char *v[OPT_LIST_MAX]; /* borrowed from argv */
	int n;
};

struct opt {
	const char *lo; /* long name or NULL */
	char so;        /* short letter or 0 */
	enum opt_kind kind;
	void *dst;
	long min, max;  /* OPT_INT range; OPT_DUR range in ms (max 0: unbounded) */
	const char *arg;  /* name of the value in --help, e.g. "PATH" */
	const char *help; /* one line for --help */
	int *seen;        /* optional: set to 1 when the option is given */
};

struct opt_spec {
	const char *name;  /* the applet's name, for messages */
	const char *usage; /* the applet's usage text: the only copy of its help */
	const struct opt *opts;
	size_t nopts;
};

enum {
	OPT_EXIT = 1, /* --help or --version was printed: the applet exits 0 */
};

/* Parses argv[1..]. Returns 0 and sets *first_arg to the index of the first
 * operand (argc when none), OPT_EXIT after --help/--version, -FB_EIO when
 * those could not be written to stdout, or -FB_EUSAGE after printing
 * "NAME: problem" and a hint to stderr. */
int opt_parse(const struct opt_spec *spec, int argc, char **argv, int *first_arg);

/* opt_parse for an applet that takes no operands: returns -1 when the
 * applet goes on, else the exit status it returns at once (0 after --help
 * or --version, 2 for a usage error or an operand, 1 when the help could
 * not be written), the message already printed. */
int opt_parse_only(const struct opt_spec *spec, int argc, char **argv);

/* Parses a Go-style duration into milliseconds. Returns 0 or -FB_EINVAL/-FB_ERANGE. */
int opt_parse_duration(const char *s, long long *ms);

/* Prints the usage text and the generated option list to stdout. */
void opt_help(const struct opt_spec *spec);

#endif
