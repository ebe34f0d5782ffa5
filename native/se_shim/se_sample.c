/* secperf-se-sample: draws delays from a secure-element profile with the shim's own sampler
 * (profile.c se_draw_delay_ms), without loading any PKCS#11 module, so the shim's distribution can
 * be compared with secperf.inputs.se_profiles' (tests/test_delay_sampler.py).
 *
 *   secperf-se-sample --profile FILE --function C_Sign --n 20000 [--seed N]
 *
 * FILE is a shim profile (README.md; its `module` is read but not loaded). Prints one delay per
 * line in milliseconds, from a generator seeded with --seed (default: the profile's seed).
 * Exit 2 with one line on stderr for a bad option or profile. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "opts.h"
#include "profile.h"
#include "rng.h"

enum { OPT_PROFILE = 256, OPT_FUNCTION, OPT_N, OPT_SEED };

static const struct option sample_options[] = {
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"function", required_argument, NULL, OPT_FUNCTION},
    {"n", required_argument, NULL, OPT_N},
    {"seed", required_argument, NULL, OPT_SEED},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int usage(FILE *f, int rc)
{
    fputs("usage: secperf-se-sample --profile FILE --function C_NAME --n N [--seed N]\n", f);
    return rc;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *fn_name = NULL;
    uint64_t n = 0, seed = 0;
    int have_seed = 0, rc = 0, opt;
    char err[512] = "";
    opt_parser p;
    opt_init(&p, argc, argv, "h", sample_options);
    while (rc == 0 && (opt = opt_next(&p, err, sizeof err)) != 0) {
        switch (opt) {
        case 'h': return usage(stdout, 0);
        case OPT_PROFILE: rc = opt_nonempty(p.name, p.arg, &path, err, sizeof err); break;
        case OPT_FUNCTION: rc = opt_nonempty(p.name, p.arg, &fn_name, err, sizeof err); break;
        case OPT_N: rc = opt_u64(p.name, p.arg, 1, 100000000, &n, err, sizeof err); break;
        case OPT_SEED:
            rc = opt_u64(p.name, p.arg, 0, UINT64_MAX, &seed, err, sizeof err);
            have_seed = 1;
            break;
        default: rc = -1; /* opt_next's message */
        }
    }
    if (rc == 0 && (path == NULL || fn_name == NULL || n == 0)) {
        snprintf(err, sizeof err, "--profile, --function and --n are required");
        rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "secperf-se-sample: %s\n", err);
        return usage(stderr, 2);
    }
    int fn = -1;
    for (int i = 0; i < SE_FN_COUNT; i++)
        if (strcmp(se_fn_names[i], fn_name) == 0)
            fn = i;
    if (fn < 0) {
        fprintf(stderr, "secperf-se-sample: unknown --function '%s' (a PKCS#11 2.40 name such as C_Sign)\n", fn_name);
        return 2;
    }
    se_profile prof;
    if (se_profile_load(path, &prof, err, sizeof err) != 0) {
        fprintf(stderr, "secperf-se-sample: %s\n", err);
        return 2;
    }
    xoshiro256 rng;
    xoshiro256_seed(&rng, have_seed ? seed : prof.seed);
    const se_fn_profile *fp = &prof.fn[fn];
    for (uint64_t i = 0; i < n; i++)
        printf("%.17g\n", fp->active ? se_draw_delay_ms(fp, &rng) : 0.0);
    se_profile_free(&prof);
    return fflush(stdout) == 0 ? 0 : 1;
}
