/* The load generator's storm back-off (loadgen/lg_storm.c): each policy's delay stays inside its
 * bounds for the model's parameters (model/fleet.py _delay_spread). */
#include "harness.h"
#include "lg_args.h"
#include "lg_storm.h"

static lg_args policy(lg_backoff b)
{
    lg_args a = {0};
    a.backoff = b;
    a.backoff_base_ms = 500;
    a.backoff_cap_ms = 8000;
    return a;
}

static void none_and_fixed_are_constant(void)
{
    lg_args n = policy(LG_BACKOFF_NONE), f = policy(LG_BACKOFF_FIXED);
    CHECK(lg_backoff_ns(&n, 3, 0, 0.7) == 0);
    CHECK(lg_backoff_ns(&f, 1, 0, 0.1) == 500000000ull && lg_backoff_ns(&f, 9, 0, 0.9) == 500000000ull);
}

static void exponential_full_jitter_is_uniform_below_the_capped_doubling(void)
{
    lg_args e = policy(LG_BACKOFF_EXPONENTIAL);
    CHECK(lg_backoff_ns(&e, 1, 0, 0.0) == 0);
    CHECK(lg_backoff_ns(&e, 1, 0, 0.5) == 250000000ull);   /* half of base */
    CHECK(lg_backoff_ns(&e, 3, 0, 0.5) == 1000000000ull);  /* half of 4 x base */
    CHECK(lg_backoff_ns(&e, 10, 0, 0.5) == 4000000000ull); /* half of the cap */
    CHECK(lg_backoff_ns(&e, 200, 0, 0.999) <= 8000000000ull);
}

static void decorrelated_stays_between_base_and_cap(void)
{
    lg_args d = policy(LG_BACKOFF_DECORRELATED);
    CHECK(lg_backoff_ns(&d, 1, 0, 0.0) == 500000000ull);
    CHECK(lg_backoff_ns(&d, 2, 1000000000ull, 1.0) == 3000000000ull); /* 3 x previous */
    CHECK(lg_backoff_ns(&d, 5, 7000000000ull, 0.9) == 8000000000ull); /* capped */
}

const test_case loadgen_storm_tests[] = {
    {"loadgen storm: none and fixed back-off are constant", none_and_fixed_are_constant},
    {"loadgen storm: exponential full jitter is uniform below the capped doubling",
     exponential_full_jitter_is_uniform_below_the_capped_doubling},
    {"loadgen storm: decorrelated jitter stays between base and cap", decorrelated_stays_between_base_and_cap},
    {NULL, NULL},
};
