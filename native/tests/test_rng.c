/* The common generator (common/rng.h) against sequences recorded from the three copies it
 * replaced (netem/rng.h, probe/prng.h, se_shim/profile.c): seeded runs must not change. */
#include "draw.h"
#include "harness.h"
#include "rng.h"

static void xoshiro_sequence_is_unchanged(void)
{
    static const uint64_t want[] = {0x15780b2e0c2ec716ULL, 0x6104d9866d113a7eULL, 0xae17533239e499a1ULL,
                                    0xecb8ad4703b360a1ULL};
    xoshiro256 r;
    xoshiro256_seed(&r, 42);
    for (int i = 0; i < 4; i++)
        CHECK(xoshiro256_next(&r) == want[i]);
}

static void netem_normal_and_pareto_draws_are_unchanged(void)
{
    rng r;
    rng_seed(&r, 7);
    double n1 = rng_normal(&r), n2 = rng_normal(&r), p3 = rng_pareto0(&r);
    CHECK(n1 == -0.15157274547711355 && n2 == 0.82989708796925699 && p3 == 0.39327753628940965);
}

static void probe_filler_bytes_are_unchanged(void)
{
    static const unsigned char want[11] = {0xc1, 0x5c, 0x02, 0x89, 0xec, 0x2d, 0x0a, 0x91, 0x67, 0xec, 0x8e};
    unsigned char got[11];
    uint64_t state = 1;
    splitmix64_fill(&state, got, sizeof got);
    CHECK(memcmp(got, want, sizeof want) == 0);
}

static void open_uniform_never_reaches_zero_or_one(void)
{
    xoshiro256 r = {{0, 0, 0, 0}}; /* an all-zero state outputs 0 forever: the worst case */
    double u = xoshiro256_uniform_open(&r);
    CHECK(u > 0.0 && u < 1.0);
}

const test_case rng_tests[] = {
    {"rng: xoshiro256** sequence for seed 42 is unchanged", xoshiro_sequence_is_unchanged},
    {"rng: netem's normal and Pareto draws for seed 7 are unchanged", netem_normal_and_pareto_draws_are_unchanged},
    {"rng: the probe's splitmix64 filler bytes for seed 1 are unchanged", probe_filler_bytes_are_unchanged},
    {"rng: the shim's open uniform stays inside (0, 1)", open_uniform_never_reaches_zero_or_one},
    {NULL, NULL},
};
