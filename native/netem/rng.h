/* rng: seeded xoshiro256** per direction (seeded through splitmix64), uniform, normal and Pareto
 * draws. Deterministic for a given seed, so an emulated run can be repeated exactly. */
#ifndef SECPERF_NETEM_RNG_H
#define SECPERF_NETEM_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct rng {
    uint64_t s[4];
    int have_spare;
    double spare;
} rng;

static inline uint64_t rng_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = rng_splitmix(&seed);
    r->have_spare = 0;
}

static inline uint64_t rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rng_rotl(s[3], 45);
    return out;
}

/* uniform in [0, 1) with 53 random bits */
static inline double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

static inline int rng_chance(rng *r, double p) { return p > 0 && rng_uniform(r) < p; }

/* standard normal (Box-Muller, the second value kept for the next call) */
static inline double rng_normal(rng *r)
{
    if (r->have_spare) {
        r->have_spare = 0;
        return r->spare;
    }
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    double m = sqrt(-2.0 * log(u1));
    r->spare = m * sin(2 * M_PI * u2);
    r->have_spare = 1;
    return m * cos(2 * M_PI * u2);
}

/* Pareto with shape 3 shifted to mean 0 and scaled to standard deviation 1: a heavy right tail
 * (occasional long delays) and a short left one. Pareto(xm, a=3): mean 1.5 xm, sd sqrt(3)/2 xm. */
static inline double rng_pareto0(rng *r)
{
    double u = 1.0 - rng_uniform(r); /* (0, 1] */
    double x = pow(u, -1.0 / 3.0);    /* Pareto(xm=1, a=3) >= 1 */
    return (x - 1.5) / (sqrt(3.0) / 2.0);
}

#endif
