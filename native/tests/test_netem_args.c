/* netem's command lines (netem/args.c) and link specs (netem/link.c). */
#include "netem_args.h"
#include "argv.h"
#include "harness.h"
#include "link.h"

static void relay_defaults_match_the_usage(void)
{
    test_argv a;
    ARGS(&a, "relay", "--dev-netns", "/d", "--srv-netns", "/s", "--spin-us", "1e+09");
    relay_args ra;
    char err[256];
    CHECK(relay_args_parse(a.argc, a.argv, &ra, err, sizeof err) == 0);
    CHECK(strcmp(ra.ifname, "sp0") == 0 && ra.seed == 1 && ra.pool == 16384 && ra.spin_us == 1e9);
    CHECK(strcmp(ra.tundev, "/dev/net/tun") == 0 && ra.userns == NULL && strcmp(ra.up, "") == 0);
}

static void relay_requires_both_namespaces(void)
{
    test_argv a;
    ARGS(&a, "relay", "--dev-netns", "/d");
    relay_args ra;
    char err[256];
    CHECK(relay_args_parse(a.argc, a.argv, &ra, err, sizeof err) == -1);
    CHECK_HAS(err, "missing --srv-netns");
}

static void relay_rejects_bad_numbers_naming_the_option(void)
{
    test_argv a;
    relay_args ra;
    char err[256];
    ARGS(&a, "relay", "--dev-netns", "/d", "--srv-netns", "/s", "--seed", "-1");
    CHECK(relay_args_parse(a.argc, a.argv, &ra, err, sizeof err) == -1);
    CHECK_HAS(err, "--seed");
    ARGS(&a, "relay", "--dev-netns", "/d", "--srv-netns", "/s", "--pool", "8");
    CHECK(relay_args_parse(a.argc, a.argv, &ra, err, sizeof err) == -1);
    CHECK_HAS(err, "--pool '8' out of range");
    ARGS(&a, "relay", "--dev-netns", "/d", "--srv-netns", "/s", "--ifname", "a-name-longer-than-15");
    CHECK(relay_args_parse(a.argc, a.argv, &ra, err, sizeof err) == -1);
    CHECK_HAS(err, "--ifname");
}

static void flood_checks_port_and_count(void)
{
    test_argv a;
    flood_args fa;
    char err[256];
    ARGS(&a, "flood", "--dst", "10.0.0.2", "--count", "5", "--pps", "100", "--size", "18", "--port", "9");
    CHECK(flood_args_parse(a.argc, a.argv, &fa, err, sizeof err) == 0);
    CHECK(fa.count == 5 && fa.pps == 100 && fa.size == 18 && fa.port == 9 && fa.max_s == 30);
    ARGS(&a, "flood", "--dst", "10.0.0.2", "--count", "0");
    CHECK(flood_args_parse(a.argc, a.argv, &fa, err, sizeof err) == -1);
    CHECK_HAS(err, "--count");
    ARGS(&a, "flood", "--count", "5");
    CHECK(flood_args_parse(a.argc, a.argv, &fa, err, sizeof err) == -1);
    CHECK_HAS(err, "missing --dst");
}

static void link_spec_reads_every_field(void)
{
    link_cfg c;
    char err[256];
    CHECK(link_parse(&c, "delay_ns=50000000,jitter_ns=1000,jitter_dist=pareto,loss=0.01,dup=0.5,"
                         "reorder=0.1,rate_bps=1e6,queue=20,mtu=1280,ge_p=0.1,ge_r=0.2,ge_bad_loss=0.9,"
                         "ge_good_loss=0",
                     err, sizeof err) == 0);
    CHECK(c.delay_ns == 50000000 && c.jitter_ns == 1000 && c.jitter_dist == JITTER_PARETO);
    CHECK(c.loss == 0.01 && c.dup == 0.5 && c.reorder == 0.1 && c.rate_bps == 1e6);
    CHECK(c.queue == 20 && c.mtu == 1280 && c.ge_p == 0.1 && c.ge_r == 0.2 && c.ge_bad_loss == 0.9);
}

static void link_spec_defaults_to_an_ideal_link(void)
{
    link_cfg c;
    char err[256];
    CHECK(link_parse(&c, "", err, sizeof err) == 0);
    CHECK(c.delay_ns == 0 && c.loss == 0 && c.queue == 1000 && c.mtu == 1500 && c.ge_bad_loss == 1.0);
}

static void link_spec_names_the_bad_field(void)
{
    link_cfg c;
    char err[256];
    CHECK(link_parse(&c, "loss=1.5", err, sizeof err) == -1);
    CHECK_HAS(err, "field loss: bad value 1.5");
    CHECK(link_parse(&c, "los=0.1", err, sizeof err) == -1);
    CHECK_HAS(err, "unknown field los");
    CHECK(link_parse(&c, "mtu=20", err, sizeof err) == -1);
    CHECK_HAS(err, "field mtu");
    CHECK(link_parse(&c, "delay_ns", err, sizeof err) == -1);
    CHECK_HAS(err, "expected key=value");
}

const test_case netem_args_tests[] = {
    {"netem relay: defaults match the usage (and --spin-us 1e+09 as Python writes it)",
     relay_defaults_match_the_usage},
    {"netem relay: requires both namespaces", relay_requires_both_namespaces},
    {"netem relay: rejects bad numbers naming the option", relay_rejects_bad_numbers_naming_the_option},
    {"netem flood: checks --count and needs --dst", flood_checks_port_and_count},
    {"netem link spec: reads every field", link_spec_reads_every_field},
    {"netem link spec: empty means an ideal link", link_spec_defaults_to_an_ideal_link},
    {"netem link spec: errors name the bad field", link_spec_names_the_bad_field},
    {NULL, NULL},
};
