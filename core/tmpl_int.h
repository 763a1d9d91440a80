/* tmpl_int: what the files of the tmpl module share (tmpl.c parses,
 * tmpl_exec.c runs, tmpl_fn.c holds the functions, tmpl_fmt.c prints
 * values as Go's fmt); nothing outside them includes it. */
#ifndef FB_TMPL_INT_H
#define FB_TMPL_INT_H

#include "tmpl.h"

#include <stddef.h>

#define TMPL_DEPTH 100
#define TMPL_ARGS 32
#define TMPL_MEM_MAX (64 << 20) /* the values one run may make */

/* ---- values ------------------------------------------------------------ */

enum { VK_NIL, VK_BOOL, VK_INT, VK_FLOAT, VK_STR, VK_LIST, VK_MAP };

struct tval {
	unsigned char k;
	const char *type;     /* Go's type name */
	long long i;          /* VK_BOOL, VK_INT */
	double f;             /* VK_FLOAT */
	const char *s;        /* VK_STR (len bytes, NUL-terminated) */
	size_t len;
	struct tval **v;      /* VK_LIST items, VK_MAP values */
	const char **key;     /* VK_MAP keys, sorted */
	size_t n, size;
	const struct tval *zero; /* VK_MAP: what index gives for a missing key (NULL: nil) */
};

extern const struct tval tmpl_nil_;

/* ---- the parse tree ---------------------------------------------------- */

enum { N_TEXT, N_ACTION, N_IF, N_RANGE, N_WITH, N_TEMPLATE, N_BREAK, N_CONTINUE };
enum { A_FN, A_DOT, A_FIELD, A_VAR, A_STR, A_INT, A_FLOAT, A_BOOL, A_NIL, A_PIPE };

struct tpipe;
struct tfn;

/* an operand: a term (function, ., field chain on dot, variable, literal,
 * parenthesized pipeline) and the fields after it */
struct targ {
	unsigned char kind;
	const struct tfn *fn; /* A_FN */
	const char *s;        /* A_STR text, A_VAR name; the source for messages */
	size_t len;
	long long i;          /* A_INT, A_BOOL */
	double f;             /* A_FLOAT */
	struct tpipe *pipe;   /* A_PIPE */
	struct tval *lit;     /* A_STR A_INT A_FLOAT A_BOOL: the value */
	const char **chain;   /* field names after the term (A_FIELD: all of them) */
	size_t nchain;
	const char *src;      /* the operand's source text, for "at <...>" */
	size_t srclen;
};

struct tcmd {
	struct tcmd *next;
	struct targ *a;
	size_t na;
};

struct tpipe {
	struct tcmd *cmd;
	const char *decl[2];  /* variables declared (or assigned) */
	int ndecl, assign;
	const char *src;
	size_t srclen;
};

struct tnode {
	struct tnode *next, *body, *alt;
	unsigned char kind;
	const char *s;        /* N_TEXT text, N_TEMPLATE name */
	size_t len;
	struct tpipe *pipe;
	int line;
};

struct tdef {
	struct tdef *next;
	const char *name;
	struct tnode *body;
};

struct tmpl {
	struct tnode *root;
	struct tdef *defs;
};

/* ---- functions (tmpl_fn.c) -------------------------------------------- */

struct tx;

/* sig: one letter per parameter: s string, i int, b bool, a any
 * (interface{}), v any (reflect.Value: nil refused), m map; a final '*'
 * makes the last one variadic. */
struct tfn {
	const char *name;
	const char *sig;
	int (*call)(struct tx *x, const struct tval **a, size_t n, const struct tval **res);
};

/* NULL-terminated tables (tmpl_fn.c, tmpl_sprig.c); and and or have no
 * call: tmpl_exec.c evaluates their arguments lazily. */
extern const struct tfn tmpl_builtins_[], tmpl_sprig_[];
/* The function named name[0..len), or NULL. */
const struct tfn *tmpl_fn_find_(const char *name, size_t len);
/* strconv.ParseInt(s, 0, 64): 0, -1 for bad syntax, -2 out of range. */
int tmpl_parse_int_(const char *s, size_t len, long long *out);
/* A string result from b (freed here): 0, -FB_ENOMEM, or -FB_EINVAL past
 * TMPL_OUT_MAX. */
int tmpl_take_(struct tx *x, struct buf *b, const struct tval **res);
int tmpl_set_int_(struct tx *x, long long i, const char *type, const struct tval **res);
int tmpl_set_bool_(struct tx *x, int b, const struct tval **res);

/* ---- running (tmpl_exec.c) --------------------------------------------- */

struct tx {
	const struct tmpl *t;
	struct arena ar;      /* every value made while running */
	struct buf *out;
	char *msg;
	long steps;
	int depth;
};

int tmpl_bad_(struct tx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* NULL when out of memory (tx_bad is then set). */
struct tval *tmpl_new_(struct tx *x, unsigned char k, const char *type);
const struct tval *tmpl_strn_(struct tx *x, const char *s, size_t len);
const struct tval *tmpl_int_(struct tx *x, long long i, const char *type);
const struct tval *tmpl_bool_(struct tx *x, int b);
/* Go's truth (template.IsTrue). */
int tmpl_truth_(const struct tval *v);

/* ---- printing (tmpl_fmt.c) --------------------------------------------- */

/* The rune of the UTF-8 sequence at s (len > 0 bytes) with its length in
 * *n; -1 (and *n 1) for a byte that does not start a valid one. */
long tmpl_rune_(const char *s, size_t len, size_t *n);
/* unicode.IsPrint, approximated above ASCII (see tmpl_fmt.c) */
int tmpl_printable_(long r);
/* fmt.Fprint of one value (top: "<no value>" for nil, else "<nil>") */
void tmpl_print_(struct buf *o, const struct tval *v, int top);
/* fmt.Sprint / Sprintln of args (Sprint puts spaces only between operands
 * when neither is a string). */
void tmpl_sprint_(struct buf *o, const struct tval **a, size_t n, int ln);
/* fmt.Sprintf; -FB_EINVAL with a message for a verb it does not know. */
int tmpl_sprintf_(struct tx *x, struct buf *o, const struct tval *f, const struct tval **a, size_t n);

#endif
