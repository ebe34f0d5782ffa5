/* profile: parser of the SECPERF_SE_PROFILE file, delay distributions. */
#include "profile.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const se_fn_names[SE_FN_COUNT] = {
#define SE_FN_NAME(name) #name,
    SE_FUNCTIONS(SE_FN_NAME)
#undef SE_FN_NAME
};

/* ---- delay distributions ------------------------------------------------------------- */

/* The delay sampler: the same definition as secperf.inputs.se_profiles (Dist.sample_ms, numpy),
 * stated in profile.h; tests/test_delay_sampler.py compares the two distributions. */

/* Uniform in the open interval (0, 1). */
static double uniform01(xoshiro256 *r)
{
    return xoshiro256_uniform_open(r);
}

/* Standard normal by Box-Muller (two uniforms per draw; the sine half is not kept so the
 * number of PRNG steps per call does not depend on earlier calls). */
static double std_normal(xoshiro256 *r)
{
    double u1 = uniform01(r), u2 = uniform01(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* One draw of a body or tail distribution, before the clamp. */
static double draw_ms(const se_dist *d, xoshiro256 *r)
{
    switch (d->kind) {
    case SE_DIST_FIXED:
        return d->a;
    case SE_DIST_NORMAL:
        if (d->b <= 0.0)
            return d->a;
        for (int i = 0; i < SE_REDRAW_LIMIT; i++) {
            double v = d->a + d->b * std_normal(r);
            if (v >= 0.0)
                return v;
        }
        return 0.0; /* unreachable in practice: mean >= 0 accepts half the draws */
    case SE_DIST_LOGNORMAL:
        if (d->b <= 0.0)
            return d->a;
        return d->a * exp(d->b * std_normal(r));
    case SE_DIST_EMPIRICAL: {
        /* Lemire's multiply-shift: uniform index in [0, n). */
        unsigned __int128 m = (unsigned __int128)xoshiro256_next(r) * (unsigned __int128)d->nsamples;
        return d->samples[(size_t)(m >> 64)];
    }
    default:
        return 0.0;
    }
}

double se_draw_delay_ms(const se_fn_profile *fp, xoshiro256 *r)
{
    const se_dist *d = &fp->body;
    if (fp->has_tail && uniform01(r) < fp->tail_p)
        d = &fp->tail;
    double ms = draw_ms(d, r);
    if (!(ms > 0.0)) /* also NaN */
        return 0.0;
    return ms > SE_DELAY_MAX_MS ? SE_DELAY_MAX_MS : ms;
}

int64_t se_draw_delay_ns(const se_fn_profile *fp, xoshiro256 *r)
{
    return (int64_t)llround(se_draw_delay_ms(fp, r) * 1e6);
}

/* ---- parser -------------------------------------------------------------------------- */

struct parse {
    const char *path;
    int line;
    char *err;
    size_t errlen;
    locale_t cloc;
};

static int fail(struct parse *ps, const char *fmt, ...)
{
    int n = snprintf(ps->err, ps->errlen, "%s:%d: ", ps->path, ps->line);
    if (n < 0)
        n = 0;
    if ((size_t)n < ps->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n' || *s == '\v' || *s == '\f')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n' ||
                     s[n - 1] == '\v' || s[n - 1] == '\f'))
        s[--n] = '\0';
    return s;
}

/* Splits s in place on blanks into *tok (grown as needed); returns the count, -1 when out of
 * memory. */
static int split(char *s, char ***tok, size_t *cap)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(s, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (n == *cap) {
            size_t ncap = *cap ? *cap * 2 : 16;
            if (ncap > (size_t)1 << 30)
                return -1;
            char **nt = realloc(*tok, ncap * sizeof(char *));
            if (!nt)
                return -1;
            *tok = nt;
            *cap = ncap;
        }
        (*tok)[n++] = t;
    }
    return (int)n;
}

/* A finite number in the C locale (whatever the client's locale is). */
static int any_number(struct parse *ps, const char *what, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod_l(s, &end, ps->cloc);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        return fail(ps, "%s: '%s' is not a number", what, s);
    *out = v;
    return 0;
}

/* A finite, non-negative number in the C locale. */
static int number(struct parse *ps, const char *what, const char *s, double *out)
{
    double v = 0.0;
    if (any_number(ps, what, s, &v) != 0)
        return -1;
    if (v < 0.0)
        return fail(ps, "%s: negative value %s", what, s);
    *out = v;
    return 0;
}

/* DIST PARAMS from tok[0..n). */
static int parse_dist(struct parse *ps, const char *key, char **tok, int n, se_dist *d)
{
    if (n < 1)
        return fail(ps, "%s: missing distribution (fixed, normal, lognormal or empirical)", key);
    const char *kind = tok[0];
    int want;
    if (strcmp(kind, "fixed") == 0) {
        d->kind = SE_DIST_FIXED;
        want = 1;
    } else if (strcmp(kind, "normal") == 0) {
        d->kind = SE_DIST_NORMAL;
        want = 2;
    } else if (strcmp(kind, "lognormal") == 0) {
        d->kind = SE_DIST_LOGNORMAL;
        want = 2;
    } else if (strcmp(kind, "empirical") == 0) {
        d->kind = SE_DIST_EMPIRICAL;
        want = -1;
    } else {
        return fail(ps, "%s: unknown distribution '%s' (expected fixed, normal, lognormal or empirical)",
                    key, kind);
    }
    char what[160];
    snprintf(what, sizeof what, "%s %s", key, kind);
    if (want < 0) {
        if (n < 2)
            return fail(ps, "%s: needs at least 1 value", what);
        d->nsamples = (size_t)(n - 1);
        d->samples = calloc(d->nsamples, sizeof(double));
        if (!d->samples)
            return fail(ps, "out of memory");
        for (int i = 1; i < n; i++)
            if (number(ps, what, tok[i], &d->samples[i - 1]) != 0)
                return -1;
        return 0;
    }
    if (n - 1 != want) {
        static const char *const usage[] = {"", "fixed V", "normal MEAN SD", "lognormal MEDIAN SIGMA"};
        return fail(ps, "%s: expected %d parameter%s (%s), got %d", what, want, want == 1 ? "" : "s",
                    usage[d->kind], n - 1);
    }
    if (number(ps, what, tok[1], &d->a) != 0)
        return -1;
    if (want == 2 && number(ps, what, tok[2], &d->b) != 0)
        return -1;
    return 0;
}

static int set_path(struct parse *ps, const char *key, char *val, char **dst, int *dst_line)
{
    if (*dst)
        return fail(ps, "'%s' is set twice (first on line %d)", key, *dst_line);
    if (*val == '\0')
        return fail(ps, "'%s' needs a path", key);
    *dst = strdup(val);
    if (!*dst)
        return fail(ps, "out of memory");
    *dst_line = ps->line;
    return 0;
}

static int find_fn(const char *name, size_t len)
{
    for (int i = 0; i < SE_FN_COUNT; i++)
        if (strlen(se_fn_names[i]) == len && strncmp(se_fn_names[i], name, len) == 0)
            return i;
    return -1;
}

static int parse_line(struct parse *ps, char *line, se_profile *p, int *seen_line, int *tail_line,
                      int *seed_line, int *wait_line, char ***tokp, size_t *tokcap)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *s = trim(line);
    if (*s == '\0')
        return 0;
    char *eq = strchr(s, '=');
    if (!eq)
        return fail(ps, "expected KEY = VALUE, got '%s'", s);
    *eq = '\0';
    char *key = trim(s);
    char *val = trim(eq + 1);
    if (*key == '\0')
        return fail(ps, "missing setting name before '='");

    if (strcmp(key, "module") == 0)
        return set_path(ps, key, val, &p->module, &p->module_line);
    if (strcmp(key, "log") == 0)
        return set_path(ps, key, val, &p->log, &p->log_line);
    if (strcmp(key, "seed") == 0) {
        if (*seed_line)
            return fail(ps, "'seed' is set twice (first on line %d)", *seed_line);
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(val, &end, 10);
        if (*val < '0' || *val > '9' || end == val || *end != '\0' || errno == ERANGE)
            return fail(ps, "seed: '%s' is not an unsigned 64-bit integer", val);
        p->seed = (uint64_t)v;
        *seed_line = ps->line;
        return 0;
    }
    if (strcmp(key, "wait") == 0) {
        if (*wait_line)
            return fail(ps, "'wait' is set twice (first on line %d)", *wait_line);
        if (strcmp(val, "sleep") == 0)
            p->busy = 0;
        else if (strcmp(val, "busy") == 0)
            p->busy = 1;
        else
            return fail(ps, "wait: '%s' is neither sleep nor busy", val);
        *wait_line = ps->line;
        return 0;
    }
    if (strncmp(key, "C_", 2) != 0)
        return fail(ps, "unknown setting '%s' (expected module, log, seed, wait or a PKCS#11 "
                        "function name such as C_Sign)", key);

    const char *dot = strchr(key, '.');
    size_t nlen = dot ? (size_t)(dot - key) : strlen(key);
    int tail = 0;
    if (dot) {
        if (strcmp(dot, ".tail") != 0)
            return fail(ps, "unknown suffix '%s' in '%s' (only .tail)", dot, key);
        tail = 1;
    }
    int fn = find_fn(key, nlen);
    if (fn < 0)
        return fail(ps, "unknown PKCS#11 function '%.*s'", (int)nlen, key);
    if (fn == SE_FN_C_GetFunctionList)
        return fail(ps, "C_GetFunctionList is answered by the shim itself and cannot be delayed");

    int n = split(val, tokp, tokcap);
    if (n < 0)
        return fail(ps, "out of memory");
    char **tok = *tokp;
    se_fn_profile *fp = &p->fn[fn];
    if (!tail) {
        if (seen_line[fn])
            return fail(ps, "'%s' is set twice (first on line %d)", key, seen_line[fn]);
        seen_line[fn] = ps->line;
        if (parse_dist(ps, key, tok, n, &fp->body) != 0)
            return -1;
    } else {
        if (tail_line[fn])
            return fail(ps, "'%s' is set twice (first on line %d)", key, tail_line[fn]);
        tail_line[fn] = ps->line;
        if (n < 1)
            return fail(ps, "%s: expected PROBABILITY DIST PARAMS", key);
        double prob = 0.0;
        char what[160];
        snprintf(what, sizeof what, "%s probability", key);
        if (any_number(ps, what, tok[0], &prob) != 0)
            return -1;
        if (!(prob >= 0.0 && prob <= 1.0))
            return fail(ps, "%s: probability %s is outside [0, 1]", key, tok[0]);
        fp->tail_p = prob;
        fp->has_tail = 1;
        if (parse_dist(ps, key, tok + 1, n - 1, &fp->tail) != 0)
            return -1;
    }
    fp->active = 1;
    return 0;
}

int se_profile_load(const char *path, se_profile *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->seed = 1;
    struct parse ps = {.path = path, .line = 0, .err = err, .errlen = errlen};
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open profile: %s", path, strerror(errno));
        return -1;
    }
    ps.cloc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    char **tok = NULL;
    size_t tokcap = 0;
    if (!ps.cloc) {
        snprintf(err, errlen, "%s: out of memory", path);
        fclose(f);
        return -1;
    }
    int seen_line[SE_FN_COUNT] = {0}, tail_line[SE_FN_COUNT] = {0};
    int seed_line = 0, wait_line = 0;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (getline(&line, &cap, f) >= 0) {
        ps.line++;
        if (parse_line(&ps, line, out, seen_line, tail_line, &seed_line, &wait_line, &tok, &tokcap) != 0) {
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && !out->module) {
        ps.line++;
        fail(&ps, "missing required setting 'module' (the real PKCS#11 module to forward to)");
        rc = -1;
    }
    free(line);
    free(tok);
    freelocale(ps.cloc);
    fclose(f);
    if (rc != 0)
        se_profile_free(out);
    return rc;
}

void se_profile_free(se_profile *p)
{
    free(p->module);
    free(p->log);
    for (int i = 0; i < SE_FN_COUNT; i++) {
        free(p->fn[i].body.samples);
        free(p->fn[i].tail.samples);
    }
    memset(p, 0, sizeof *p);
}
