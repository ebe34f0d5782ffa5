/* secperf-native-tests: runs every C unit test and prints one TAP-like line each
 * ("ok - NAME" / "not ok - NAME: WHERE"); exit 1 when any failed. tests/test_native_units.py runs it. */
#include "harness.h"

const char *harness_failed_at;
char harness_detail[512];

int main(void)
{
    const test_case *const suites[] = {opts_tests, probe_args_tests, profile_tests, netem_args_tests,
                                        pktq_tests, rng_tests, loadgen_storm_tests,
                                        loadgen_args_tests, timing_tests};
    int run = 0, failed = 0;
    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
        for (const test_case *t = suites[s]; t->name; t++) {
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
