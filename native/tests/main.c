/* secperf-native-tests [SUITE...]: runs the C unit tests (every suite, or the named ones) and prints
 * one TAP-like line each ("ok - NAME" / "not ok - NAME: WHERE"); exit 1 when any failed.
 * tests/test_native_units.py runs it whole; ctest (`make test-asan`) runs it once per suite. */
#include "harness.h"

const char *harness_failed_at;
char harness_detail[512];

/* keep in step with the foreach() list of native/tests/CMakeLists.txt (one ctest test each) */
struct suite {
    const char *name; /* the ctest name: native/tests/CMakeLists.txt registers one test per suite */
    const test_case *cases;
};

static const struct suite suites[] = {
    {"opts", opts_tests}, {"probe_args", probe_args_tests}, {"profile", profile_tests},
    {"netem_args", netem_args_tests}, {"pktq", pktq_tests}, {"rng", rng_tests},
    {"loadgen_storm", loadgen_storm_tests}, {"loadgen_args", loadgen_args_tests}, {"timing", timing_tests},
    {"mac_op", mac_op_tests},
};

/* No argument: every suite; otherwise only the named suites. */
int main(int argc, char **argv)
{
    const size_t nsuites = sizeof suites / sizeof suites[0];
    for (int a = 1; a < argc; a++) {
        size_t s = 0;
        while (s < nsuites && strcmp(suites[s].name, argv[a]) != 0)
            s++;
        if (s == nsuites) {
            fprintf(stderr, "secperf-native-tests: unknown suite '%s'\n", argv[a]);
            return 2;
        }
    }
    int run = 0, failed = 0;
    for (size_t s = 0; s < nsuites; s++) {
        int chosen = argc < 2;
        for (int a = 1; a < argc && !chosen; a++)
            chosen = strcmp(suites[s].name, argv[a]) == 0;
        if (!chosen)
            continue;
        for (const test_case *t = suites[s].cases; t->name; t++) {
            harness_failed_at = NULL;
            harness_detail[0] = '\0';
            t->fn();
            run++;
            if (harness_failed_at) {
                failed++;
                printf("not ok - %s: %s\n", t->name, harness_detail);
            } else {
                printf("ok - %s\n", t->name);
            }
            fflush(stdout);
        }
    }
    printf("# %d run, %d failed\n", run, failed);
    return failed ? 1 : 0;
}
