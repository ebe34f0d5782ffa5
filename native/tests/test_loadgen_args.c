/* The load generator's command line (loadgen/lg_args.c): the DTLS mode's options and the
 * combinations it refuses (bad input names the option and what to do). */
#include <string.h>

#include "argv.h"
#include "harness.h"
#include "lg_args.h"

static int parse(test_argv *t, lg_args *a, char *err, size_t n)
{
    return lg_args_parse(t->argc, t->argv, a, err, n);
}

static void dtls_flag_is_parsed(void)
{
    test_argv t;
    lg_args a;
    char err[300];
    ARGS(&t, "secperf-loadgen", "--port", "5684", "--dtls", "--concurrency", "8");
    CHECK(parse(&t, &a, err, sizeof(err)) == 1);
    CHECK(a.dtls == 1 && a.concurrency == 8 && a.app == LG_APP_NONE);
    ARGS(&t, "secperf-loadgen", "--port", "5684");
    CHECK(parse(&t, &a, err, sizeof(err)) == 1 && a.dtls == 0);
}

static void dtls_refuses_what_it_cannot_do(void)
{
    test_argv t;
    lg_args a;
    char err[300];
    ARGS(&t, "secperf-loadgen", "--port", "5684", "--dtls", "--app", "http");
    CHECK(parse(&t, &a, err, sizeof(err)) == 0 && strstr(err, "--app none") != NULL);
    ARGS(&t, "secperf-loadgen", "--port", "5684", "--dtls", "--tls", "1.3");
    CHECK(parse(&t, &a, err, sizeof(err)) == 0 && strstr(err, "DTLS 1.2") != NULL);
    ARGS(&t, "secperf-loadgen", "--port", "5684", "--dtls", "--storm", "10");
    CHECK(parse(&t, &a, err, sizeof(err)) == 0 && strstr(err, "--storm") != NULL);
    ARGS(&t, "secperf-loadgen", "--port", "5684", "--dtls", "--tls", "1.2", "--rate", "100");
    CHECK(parse(&t, &a, err, sizeof(err)) == 1 && a.dtls && a.rate == 100);
}

const test_case loadgen_args_tests[] = {
    {"loadgen args: --dtls is parsed", dtls_flag_is_parsed},
    {"loadgen args: --dtls refuses app steps, TLS 1.3 and storms", dtls_refuses_what_it_cannot_do},
    {NULL, NULL},
};
