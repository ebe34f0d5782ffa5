/* argv: building a writable argv from string literals (getopt may write to it). */
#ifndef SECPERF_TESTS_ARGV_H
#define SECPERF_TESTS_ARGV_H

#define ARGV_MAX 32

typedef struct test_argv {
    int argc;
    char *argv[ARGV_MAX + 1];
    char buf[2048];
} test_argv;

/* Fills a from the NULL-terminated list of strings. */
void test_argv_set(test_argv *a, const char *const *args);

#define ARGS(a, ...) test_argv_set((a), (const char *const[]){__VA_ARGS__, NULL})

#endif
