/* The shared option parsing (common/opts.c). */
#include <stdint.h>

#include "argv.h"
#include "harness.h"
#include "opts.h"

enum { O_N = 256, O_FLAG };
static const struct option longopts[] = {
    {"n", required_argument, NULL, O_N},
    {"flag", no_argument, NULL, O_FLAG},
    {NULL, 0, NULL, 0},
};

static void reads_separate_and_attached_values(void)
{
    test_argv a;
    ARGS(&a, "prog", "--n", "5", "--n=7", "--flag");
    opt_parser p;
    char err[256];
    opt_init(&p, a.argc, a.argv, "h", longopts);
    CHECK(opt_next(&p, err, sizeof err) == O_N);
    CHECK(strcmp(p.arg, "5") == 0 && strcmp(p.name, "--n") == 0);
    CHECK(opt_next(&p, err, sizeof err) == O_N);
    CHECK(strcmp(p.arg, "7") == 0 && strcmp(p.name, "--n") == 0);
    CHECK(opt_next(&p, err, sizeof err) == O_FLAG && p.arg == NULL);
    CHECK(opt_next(&p, err, sizeof err) == 0);
}

static void rejects_abbreviated_options(void)
{
    test_argv a;
    ARGS(&a, "prog", "--fl");
    opt_parser p;
    char err[256];
    opt_init(&p, a.argc, a.argv, "", longopts);
    CHECK(opt_next(&p, err, sizeof err) == -1);
    CHECK_HAS(err, "unknown option '--fl'");
}

static void names_the_option_missing_its_value(void)
{
    test_argv a;
    ARGS(&a, "prog", "--n");
    opt_parser p;
    char err[256];
    opt_init(&p, a.argc, a.argv, "", longopts);
    CHECK(opt_next(&p, err, sizeof err) == -1);
    CHECK_HAS(err, "missing value for --n");
}

static void rejects_a_value_given_to_a_flag(void)
{
    test_argv a;
    ARGS(&a, "prog", "--flag=1");
    opt_parser p;
    char err[256];
    opt_init(&p, a.argc, a.argv, "", longopts);
    CHECK(opt_next(&p, err, sizeof err) == -1);
    CHECK_HAS(err, "--flag takes no value");
}

static void rejects_stray_arguments(void)
{
    test_argv a;
    ARGS(&a, "prog", "--flag", "stray", "--n", "1");
    opt_parser p;
    char err[256];
    opt_init(&p, a.argc, a.argv, "", longopts);
    CHECK(opt_next(&p, err, sizeof err) == O_FLAG);
    CHECK(opt_next(&p, err, sizeof err) == -1);
    CHECK_HAS(err, "unexpected argument 'stray'");
}

static void parses_twice_in_one_process(void)
{
    test_argv a;
    ARGS(&a, "prog", "--n", "1");
    for (int i = 0; i < 2; i++) {
        opt_parser p;
        char err[256];
        opt_init(&p, a.argc, a.argv, "", longopts);
        CHECK(opt_next(&p, err, sizeof err) == O_N);
        CHECK(opt_next(&p, err, sizeof err) == 0);
    }
}

static void whole_numbers_are_range_checked_with_the_option_named(void)
{
    uint64_t v = 0;
    char err[256];
    CHECK(opt_u64("--port", "65535", 1, 65535, &v, err, sizeof err) == 0 && v == 65535);
    CHECK(opt_u64("--port", "65536", 1, 65535, &v, err, sizeof err) == -1);
    CHECK_HAS(err, "--port '65536' out of range (1..65535)");
    CHECK(opt_u64("--n", "0", 1, UINT64_MAX, &v, err, sizeof err) == -1);
    CHECK_HAS(err, "--n must be at least 1");
    CHECK(opt_u64("--n", "12x", 1, UINT64_MAX, &v, err, sizeof err) == -1);
    CHECK_HAS(err, "malformed --n '12x'");
    CHECK(opt_u64("--n", "99999999999999999999", 1, UINT64_MAX, &v, err, sizeof err) == -1);
    CHECK_HAS(err, "malformed --n");
    CHECK(opt_u64("--n", " 5", 1, UINT64_MAX, &v, err, sizeof err) == -1);
}

static void numbers_reject_nan_and_bounds(void)
{
    double d = 0;
    char err[256];
    CHECK(opt_double("--pps", "1e3", 0, 0, 1e9, &d, err, sizeof err) == 0 && d == 1000.0);
    CHECK(opt_double("--pps", "nan", 0, 0, 1e9, &d, err, sizeof err) == -1);
    CHECK_HAS(err, "malformed --pps 'nan'");
    CHECK(opt_double("--max-seconds", "0", 0, 1, 1e6, &d, err, sizeof err) == -1);
    CHECK_HAS(err, "--max-seconds must be > 0");
    CHECK(opt_double("--spin-us", "-1", 0, 0, 1e12, &d, err, sizeof err) == -1);
    CHECK_HAS(err, "--spin-us must be >= 0");
}

static void choices_list_the_known_values(void)
{
    static const char *const names[] = {"tls", "dtls", NULL};
    char err[256];
    CHECK(opt_choice("--proto", "dtls", names, err, sizeof err) == 1);
    CHECK(opt_choice("--proto", "quic", names, err, sizeof err) == -1);
    CHECK_HAS(err, "unknown --proto 'quic'; known: tls, dtls");
}

static void hex_decoding_reports_odd_length_and_the_bad_pair(void)
{
    unsigned char out[8];
    CHECK(hex_decode("00ff7A", out) == 3 && out[1] == 0xff && out[2] == 0x7a);
    CHECK(hex_decode("abc", out) == -1);
    CHECK(hex_decode("00zz", out) == -2 - 2);
}

static void narrow_numbers_keep_the_range_check(void)
{
    unsigned u = 7;
    size_t z = 7;
    char err[256];
    CHECK(opt_uint("--clients", "4000000000", 1, 1000000, &u, err, sizeof err) == -1 && u == 7);
    CHECK_HAS(err, "--clients '4000000000' out of range (1..1000000)");
    CHECK(opt_uint("--clients", "250", 1, 1000000, &u, err, sizeof err) == 0 && u == 250);
    CHECK(opt_size("--payload", "1025", 0, 1024, &z, err, sizeof err) == -1 && z == 7);
    CHECK(opt_size("--payload", "0", 0, 1024, &z, err, sizeof err) == 0 && z == 0);
}

typedef struct seen {
    int n, flag;
} seen;

static int take(void *settings, int opt, const char *name, const char *val, char *err, size_t errlen)
{
    seen *s = settings;
    if (opt == O_FLAG) {
        s->flag = 1;
        return 1;
    }
    unsigned v;
    if (opt_uint(name, val, 1, 9, &v, err, errlen) != 0)
        return 0;
    s->n = (int)v;
    return 1;
}

static void reading_all_options_stops_at_help_and_at_the_first_error(void)
{
    char err[256];
    opt_parser p;
    seen s = {0, 0};
    int help = 0;
    test_argv a;
    ARGS(&a, "prog", "--n", "3", "--flag");
    opt_init(&p, a.argc, a.argv, "h", longopts);
    CHECK(opt_read_all(&p, 0, take, &s, &help, err, sizeof err) == 1 && s.n == 3 && s.flag == 1 && help == 0);
    test_argv b;
    ARGS(&b, "prog", "-h", "--n", "4");
    s.n = 0;
    opt_init(&p, b.argc, b.argv, "h", longopts);
    CHECK(opt_read_all(&p, 0, take, &s, &help, err, sizeof err) == 1 && help == 1 && s.n == 0);
    test_argv c;
    ARGS(&c, "prog", "--n", "10", "--flag");
    s.flag = 0;
    help = 0;
    opt_init(&p, c.argc, c.argv, "h", longopts);
    CHECK(opt_read_all(&p, 0, take, &s, &help, err, sizeof err) == 0 && s.flag == 0 && help == 0);
    CHECK_HAS(err, "--n '10' out of range (1..9)");
}

const test_case opts_tests[] = {
    {"options read --name VALUE and --name=VALUE", reads_separate_and_attached_values},
    {"options reject abbreviations (the interface is the full spelling)", rejects_abbreviated_options},
    {"a missing value names the option", names_the_option_missing_its_value},
    {"a flag given a value is rejected by name", rejects_a_value_given_to_a_flag},
    {"stray arguments are rejected, not skipped", rejects_stray_arguments},
    {"a second parse in one process starts afresh", parses_twice_in_one_process},
    {"whole numbers are range-checked with the option named", whole_numbers_are_range_checked_with_the_option_named},
    {"numbers reject NaN and out-of-bound values by name", numbers_reject_nan_and_bounds},
    {"choices list the known values", choices_list_the_known_values},
    {"hex decoding reports odd length and the bad pair", hex_decoding_reports_odd_length_and_the_bad_pair},
    {"unsigned and size values keep the range check", narrow_numbers_keep_the_range_check},
    {"reading all options stops at help and at the first error", reading_all_options_stops_at_help_and_at_the_first_error},
    {NULL, NULL},
};
