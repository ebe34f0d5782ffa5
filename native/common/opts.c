/* opts: getopt_long with strict spelling, and value parsers whose errors name the option. */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void opt_init(opt_parser *p, int argc, char **argv, const char *shortopts, const struct option *longopts)
{
    memset(p, 0, sizeof *p);
    p->argc = argc;
    p->argv = argv;
    p->longopts = longopts;
    /* '+': stop at the first non-option (reported, never permuted away); ':': a missing value
     * comes back as ':' so we word the message */
    snprintf(p->shortopts, sizeof p->shortopts, "+:%s", shortopts);
}

/* The option as written, up to any "=VALUE". */
static void set_name(opt_parser *p, const char *text)
{
    size_t n = strcspn(text, "=");
    if (n >= sizeof p->name)
        n = sizeof p->name - 1;
    memcpy(p->name, text, n);
    p->name[n] = '\0';
}

/* Index of the long option spelled name in full, or -1. */
static int find_long(const opt_parser *p, const char *name)
{
    for (int i = 0; p->longopts[i].name != NULL; i++)
        if (strcmp(p->longopts[i].name, name) == 0)
            return i;
    return -1;
}

int opt_next(opt_parser *p, char *err, size_t errlen)
{
    if (!p->started) {
        optind = 0; /* glibc: 0 re-initialises getopt's hidden state, so parsers can run twice */
        opterr = 0; /* our messages, not getopt's */
        p->started = 1;
    }
    p->arg = NULL;
    p->name[0] = '\0';
    int idx = -1;
    int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, &idx);
    if (c == -1) {
        if (optind < p->argc) {
            snprintf(err, errlen, "unexpected argument '%s'", p->argv[optind]);
            return -1;
        }
        return 0;
    }
    const char *text = p->argv[optind - 1];
    /* newlib's getopt_long (the device client on the Cortex-M0+) leaves optind on an unknown long
     * option, where glibc's moves past it: then the option is the argument at optind */
    if (c == '?' && (optind < 2 || text[0] != '-') && optind < p->argc)
        text = p->argv[optind];
    if (c == ':') {
        set_name(p, text);
        snprintf(err, errlen, "missing value for %s", p->name);
        return -1;
    }
    if (c == '?') {
        if (strncmp(text, "--", 2) == 0) {
            set_name(p, text);
            /* decided from the text, not optopt: newlib does not set optopt as glibc does */
            if (strchr(text, '=') != NULL && find_long(p, p->name + 2) >= 0)
                snprintf(err, errlen, "option %s takes no value", p->name);
            else
                snprintf(err, errlen, "unknown option '%s'", p->name);
        } else {
            char shortopt = (char)optopt;
            if (shortopt == 0 || shortopt == '?') {
                shortopt = '?';
                if (text[0] == '-' && text[1] != '\0')
                    shortopt = text[1];
            }
            snprintf(err, errlen, "unknown option '-%c'", shortopt);
        }
        return -1;
    }
    if (idx >= 0) {
        /* a separate value is the last argument read, the option the one before it */
        if (optarg && optind >= 2 && p->argv[optind - 1] == optarg)
            text = p->argv[optind - 2];
        set_name(p, text);
        /* getopt_long takes unique abbreviations; the interface is the full spelling only */
        if (strncmp(p->name, "--", 2) != 0 || strcmp(p->name + 2, p->longopts[idx].name) != 0) {
            snprintf(err, errlen, "unknown option '%s'", p->name);
            return -1;
        }
        /* glibc refuses "--flag=value" itself; newlib drops the value silently */
        if (p->longopts[idx].has_arg == no_argument && strchr(text, '=') != NULL) {
            snprintf(err, errlen, "option %s takes no value", p->name);
            return -1;
        }
    } else {
        snprintf(p->name, sizeof p->name, "-%c", c);
    }
    p->arg = optarg;
    return c;
}

int opt_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
    if (s[0] == '-' && s[1] >= '0' && s[1] <= '9' && max == UINT64_MAX) {
        snprintf(err, errlen, "%s must be at least %llu (got '%s')", opt, (unsigned long long)min, s);
        return -1;
    }
    if (s[0] < '0' || s[0] > '9') {
        snprintf(err, errlen, "malformed %s '%s' (expected a whole number)", opt, s);
        return -1;
    }
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0') {
        snprintf(err, errlen, "malformed %s '%s' (expected a whole number)", opt, s);
        return -1;
    }
    if (v < min || v > max) {
        if (max == UINT64_MAX)
            snprintf(err, errlen, "%s must be at least %llu (got '%s')", opt, (unsigned long long)min, s);
        else
            snprintf(err, errlen, "%s '%s' out of range (%llu..%llu)", opt, s, (unsigned long long)min,
                     (unsigned long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

int opt_double(const char *opt, const char *s, double min, int min_open, double max, double *out, char *err,
               size_t errlen)
{
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (s[0] == '\0' || end == s || errno != 0 || *end != '\0' || !isfinite(v)) {
        snprintf(err, errlen, "malformed %s '%s' (expected a number)", opt, s);
        return -1;
    }
    if (v < min || (min_open && v == min)) {
        snprintf(err, errlen, "%s must be %s %g (got '%s')", opt, min_open ? ">" : ">=", min, s);
        return -1;
    }
    if (v > max) {
        snprintf(err, errlen, "%s must be <= %g (got '%s')", opt, max, s);
        return -1;
    }
    *out = v;
    return 0;
}

int opt_nonempty(const char *opt, const char *s, const char **out, char *err, size_t errlen)
{
    if (s[0] == '\0') {
        snprintf(err, errlen, "%s must not be empty", opt);
        return -1;
    }
    *out = s;
    return 0;
}

int opt_on_off(const char *opt, const char *s, int *out, char *err, size_t errlen)
{
    if (strcmp(s, "on") == 0)
        *out = 1;
    else if (strcmp(s, "off") == 0)
        *out = 0;
    else {
        snprintf(err, errlen, "%s takes on or off, not '%s'", opt, s);
        return -1;
    }
    return 0;
}

int opt_choice(const char *opt, const char *s, const char *const *names, char *err, size_t errlen)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    int n = snprintf(err, errlen, "unknown %s '%s'; known: ", opt, s);
    for (int i = 0; names[i] && n >= 0 && (size_t)n < errlen; i++)
        n += snprintf(err + n, errlen - (size_t)n, "%s%s", i ? ", " : "", names[i]);
    return -1;
}

int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long hex_decode(const char *s, unsigned char *out)
{
    size_t len = strlen(s);
    if (len % 2 != 0)
        return -1;
    for (size_t i = 0; i < len; i += 2) {
        int hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);
        if (hi < 0 || lo < 0)
            return -2 - (long)i;
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    return (long)(len / 2);
}

int opt_uint(const char *opt, const char *s, unsigned min, unsigned max, unsigned *out, char *err, size_t errlen)
{
    uint64_t u;
    if (opt_u64(opt, s, min, max, &u, err, errlen) != 0)
        return -1;
    *out = (unsigned)u;
    return 0;
}

int opt_size(const char *opt, const char *s, size_t min, size_t max, size_t *out, char *err, size_t errlen)
{
    uint64_t u;
    if (opt_u64(opt, s, min, max, &u, err, errlen) != 0)
        return -1;
    *out = (size_t)u;
    return 0;
}

int opt_read_all(opt_parser *p, int help_val, opt_apply_fn apply, void *settings, int *help, char *err,
                 size_t errlen)
{
    int opt;
    while ((opt = opt_next(p, err, errlen)) != 0) {
        if (opt < 0)
            return 0;
        if (opt == 'h' || opt == help_val) {
            *help = 1;
            return 1;
        }
        if (!apply(settings, opt, p->name, p->arg, err, errlen))
            return 0;
    }
    return 1;
}
