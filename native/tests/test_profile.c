/* The shim's profile parser and delay draws (se_shim/profile.c). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "profile.h"

/* Writes text to a fresh temporary file; its path goes into path (free with unlink). */
static int write_profile(const char *text, char *path, size_t len)
{
    snprintf(path, len, "/tmp/secperf-profile-test-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return 0;
}

static int load(const char *text, se_profile *p, char *err, size_t errlen)
{
    char path[64];
    if (write_profile(text, path, sizeof path) != 0)
        return -2;
    int rc = se_profile_load(path, p, err, errlen);
    unlink(path);
    return rc;
}

static void reads_module_seed_wait_and_distributions(void)
{
    se_profile p;
    char err[512];
    CHECK(load("module = /lib/x.so # the real one\nseed = 42\nwait = busy\n"
               "C_Sign = lognormal 20 0.1\nC_Sign.tail = 0.05 fixed 300\nC_Login = empirical 1 2 3\n",
               &p, err, sizeof err) == 0);
    CHECK(strcmp(p.module, "/lib/x.so") == 0 && p.seed == 42 && p.busy == 1);
    const se_fn_profile *s = &p.fn[SE_FN_C_Sign];
    CHECK(s->active && s->body.kind == SE_DIST_LOGNORMAL && s->body.a == 20 && s->body.b == 0.1);
    CHECK(s->has_tail && s->tail_p == 0.05 && s->tail.kind == SE_DIST_FIXED && s->tail.a == 300);
    CHECK(p.fn[SE_FN_C_Login].body.nsamples == 3 && !p.fn[SE_FN_C_Verify].active);
    se_profile_free(&p);
}

static void errors_carry_the_line_number(void)
{
    se_profile p;
    char err[512];
    CHECK(load("module = /lib/x.so\n\nC_Sign = gamma 1\n", &p, err, sizeof err) == -1);
    CHECK_HAS(err, ":3: C_Sign: unknown distribution 'gamma'");
}

static void rejects_unknown_functions_and_wrong_parameter_counts(void)
{
    se_profile p;
    char err[512];
    CHECK(load("module = m\nC_Signn = fixed 1\n", &p, err, sizeof err) == -1);
    CHECK_HAS(err, "unknown PKCS#11 function 'C_Signn'");
    CHECK(load("module = m\nC_Sign = normal 1\n", &p, err, sizeof err) == -1);
    CHECK_HAS(err, "expected 2 parameters (normal MEAN SD), got 1");
}

static void rejects_negative_delays_and_bad_probabilities(void)
{
    se_profile p;
    char err[512];
    CHECK(load("module = m\nC_Sign = fixed -1\n", &p, err, sizeof err) == -1);
    CHECK_HAS(err, "negative value -1");
    CHECK(load("module = m\nC_Sign.tail = 1.5 fixed 1\n", &p, err, sizeof err) == -1);
    CHECK_HAS(err, "probability 1.5 is outside [0, 1]");
}

static void requires_a_module_and_refuses_duplicates(void)
{
    se_profile p;
    char err[512];
    CHECK(load("C_Sign = fixed 1\n", &p, err, sizeof err) == -1);
    CHECK_HAS(err, "missing required setting 'module'");
    CHECK(load("module = a\nmodule = b\n", &p, err, sizeof err) == -1);
    CHECK_HAS(err, "'module' is set twice (first on line 1)");
    CHECK(load("module = a\nC_GetFunctionList = fixed 1\n", &p, err, sizeof err) == -1);
    CHECK_HAS(err, "cannot be delayed");
}

static void fixed_delays_are_drawn_exactly_and_seeded_draws_repeat(void)
{
    se_profile p;
    char err[512];
    CHECK(load("module = m\nC_Sign = fixed 2.5\nC_Login = lognormal 10 0.3\n", &p, err, sizeof err) == 0);
    xoshiro256 r1, r2;
    xoshiro256_seed(&r1, p.seed);
    xoshiro256_seed(&r2, p.seed);
    CHECK(se_draw_delay_ns(&p.fn[SE_FN_C_Sign], &r1) == 2500000);
    int64_t a = se_draw_delay_ns(&p.fn[SE_FN_C_Login], &r1);
    (void)se_draw_delay_ns(&p.fn[SE_FN_C_Sign], &r2);
    CHECK(a > 0 && a == se_draw_delay_ns(&p.fn[SE_FN_C_Login], &r2));
    se_profile_free(&p);
}

static void delays_are_clamped_to_one_hour_and_truncated_normals_never_negative(void)
{
    se_profile p;
    char err[512];
    CHECK(load("module = m\nC_Sign = fixed 9e9\nC_Login = normal 0 10\nC_Logout = lognormal 1000 8\n", &p, err,
               sizeof err) == 0);
    xoshiro256 r;
    xoshiro256_seed(&r, 3);
    CHECK(se_draw_delay_ms(&p.fn[SE_FN_C_Sign], &r) == SE_DELAY_MAX_MS);
    CHECK(se_draw_delay_ns(&p.fn[SE_FN_C_Sign], &r) == (int64_t)(SE_DELAY_MAX_MS * 1e6));
    int at_ceiling = 0;
    for (int i = 0; i < 10000; i++) {
        double v = se_draw_delay_ms(&p.fn[SE_FN_C_Login], &r);
        CHECK(v > 0.0 && v < 100.0); /* redrawn while negative, no mass at 0 */
        double w = se_draw_delay_ms(&p.fn[SE_FN_C_Logout], &r);
        CHECK(w >= 0.0 && w <= SE_DELAY_MAX_MS);
        at_ceiling += w == SE_DELAY_MAX_MS;
    }
    CHECK(at_ceiling > 1000 && at_ceiling < 2000); /* P(1000 e^(8z) > 3.6e6) = P(z > 1.02) = 0.15 */
    se_profile_free(&p);
}

const test_case profile_tests[] = {
    {"shim profile: delays are clamped to one hour and truncated normals are never negative",
     delays_are_clamped_to_one_hour_and_truncated_normals_never_negative},
    {"shim profile: reads module, seed, wait and each distribution", reads_module_seed_wait_and_distributions},
    {"shim profile: errors carry the file's line number", errors_carry_the_line_number},
    {"shim profile: rejects unknown functions and wrong parameter counts",
     rejects_unknown_functions_and_wrong_parameter_counts},
    {"shim profile: rejects negative delays and probabilities outside [0, 1]",
     rejects_negative_delays_and_bad_probabilities},
    {"shim profile: requires a module and refuses duplicate settings", requires_a_module_and_refuses_duplicates},
    {"shim profile: fixed delays are exact and seeded draws repeat",
     fixed_delays_are_drawn_exactly_and_seeded_draws_repeat},
    {NULL, NULL},
};
