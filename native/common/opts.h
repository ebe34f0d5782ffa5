/* opts: the one way the native tools read their command lines: getopt_long, strict (options
 * spelled in full, no stray arguments), and value parsers with range checks whose one-line
 * errors name the option. Errors go into a caller's buffer; nothing here prints or exits. */
#ifndef SECPERF_COMMON_OPTS_H
#define SECPERF_COMMON_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

typedef struct opt_parser {
    int argc;
    char **argv;
    const struct option *longopts;
    char shortopts[32];
    int started;
    char name[64];   /* the option just returned as the user wrote it ("--n", "-h"), for messages */
    const char *arg; /* its value, NULL for a flag */
} opt_parser;

/* argv[0] is the program or subcommand name; options start at argv[1]. shortopts as getopt's
 * (e.g. "h"); long options' val must be > 0 and unlike any short option character. */
void opt_init(opt_parser *p, int argc, char **argv, const char *shortopts, const struct option *longopts);

/* The next option's val; 0 when all arguments are read; -1 with a one-line message in err for
 * an unknown or abbreviated option, a missing or unexpected value, or a non-option argument. */
int opt_next(opt_parser *p, char *err, size_t errlen);

/* Value parsers: 0 and *out set, or -1 with a message naming opt in err. */

/* A whole decimal number (no sign, blanks or trailing text) in [min, max]. */
int opt_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen);
/* opt_u64 for the narrower types most options fill. */
int opt_uint(const char *opt, const char *s, unsigned min, unsigned max, unsigned *out, char *err, size_t errlen);
int opt_size(const char *opt, const char *s, size_t min, size_t max, size_t *out, char *err, size_t errlen);
/* A finite number in [min, max]; min_open excludes min itself (e.g. "> 0"). */
int opt_double(const char *opt, const char *s, double min, int min_open, double max, double *out, char *err,
               size_t errlen);
/* A non-empty string. */
int opt_nonempty(const char *opt, const char *s, const char **out, char *err, size_t errlen);
/* "on" -> 1, "off" -> 0. */
int opt_on_off(const char *opt, const char *s, int *out, char *err, size_t errlen);
/* Index of s in names (NULL-terminated), or -1 with "unknown OPT 'S'; known: a, b, c". */
int opt_choice(const char *opt, const char *s, const char *const *names, char *err, size_t errlen);

/* One option's value into a tool's settings: 1 taken, 0 with a message in err. */
typedef int (*opt_apply_fn)(void *settings, int opt, const char *name, const char *val, char *err, size_t errlen);
/* Reads the rest of the command line through apply. 'h' or help_val sets *help and stops there.
 * 1: all read (or help asked); 0: a message in err. */
int opt_read_all(opt_parser *p, int help_val, opt_apply_fn apply, void *settings, int *help, char *err,
                 size_t errlen);

/* Value of one hex digit, or -1. */
int hex_digit(char c);
/* Decodes an even number of hex digits into out (room for strlen(s) / 2 bytes). Returns the
 * number of bytes, -1 for an odd length, or -2 - i when the pair at offset i is not hex. */
long hex_decode(const char *s, unsigned char *out);

#endif
