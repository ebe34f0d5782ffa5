/* harness: the C unit tests' smallest possible framework. A test is a function named after the
 * behaviour it pins down; CHECK stops the test at the first failure and records where. */
#ifndef SECPERF_TESTS_HARNESS_H
#define SECPERF_TESTS_HARNESS_H

#include <stdio.h>
#include <string.h>

typedef struct test_case {
    const char *name; /* the behaviour, as a sentence */
    void (*fn)(void);
} test_case;

/* Set by CHECK; read and reset by the runner after each test. */
extern const char *harness_failed_at;
extern char harness_detail[512];

#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            harness_failed_at = __FILE__;                                                        \
            snprintf(harness_detail, sizeof harness_detail, "%s:%d: CHECK(%s)", __FILE__, __LINE__, \
                     #cond);                                                                     \
            return;                                                                              \
        }                                                                                        \
    } while (0)

/* s contains needle (error messages must name the option). */
#define CHECK_HAS(s, needle)                                                                     \
    do {                                                                                         \
        if (strstr((s), (needle)) == NULL) {                                                     \
            harness_failed_at = __FILE__;                                                        \
            snprintf(harness_detail, sizeof harness_detail, "%s:%d: %.200s does not contain %.100s",  \
                     __FILE__, __LINE__, (s), (needle));                                         \
            return;                                                                              \
        }                                                                                        \
    } while (0)

/* Each test file's table; the runner lists them. */
extern const test_case opts_tests[], probe_args_tests[], profile_tests[], netem_args_tests[],
    pktq_tests[], rng_tests[], loadgen_storm_tests[], loadgen_args_tests[], timing_tests[],
    mac_op_tests[];

#endif
