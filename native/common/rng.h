/* rng: the one deterministic generator of the native tools: splitmix64 (probe message and key
 * filler; seeding) and xoshiro256** seeded through splitmix64 (netem's link draws, the shim's
 * delays). Same seed, same sequence on every run and every tool, so runs can be repeated. */
#ifndef SECPERF_COMMON_RNG_H
#define SECPERF_COMMON_RNG_H

#include <stddef.h>
#include <stdint.h>

/* One splitmix64 step: advances *state and returns the next output. */
static inline uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Fills p with n bytes of splitmix64 output, each word little end first. */
void splitmix64_fill(uint64_t *state, unsigned char *p, size_t n);

typedef struct xoshiro256 {
    uint64_t s[4];
} xoshiro256;

/* The four state words are the first four splitmix64 outputs from seed. */
void xoshiro256_seed(xoshiro256 *r, uint64_t seed);

static inline uint64_t xoshiro256_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** (Blackman and Vigna). Inline: netem draws several per packet. */
static inline uint64_t xoshiro256_next(xoshiro256 *r)
{
    uint64_t *s = r->s;
    uint64_t out = xoshiro256_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = xoshiro256_rotl(s[3], 45);
    return out;
}

/* Uniform in [0, 1) from the top 53 bits. */
static inline double xoshiro256_uniform(xoshiro256 *r) { return (double)(xoshiro256_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in the open interval (0, 1): the [0, 1) grid moved by half a step, so log() of it is
 * always finite (the shim's Box-Muller; secperf.inputs.se_profiles mirrors it). */
static inline double xoshiro256_uniform_open(xoshiro256 *r)
{
    return ((double)(xoshiro256_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

#endif
