/* draw: netem's random draws per direction (Bernoulli chance, normal, shifted Pareto) over the
 * common xoshiro256** generator (common/rng.h). Deterministic for a given seed, so an emulated
 * run can be repeated exactly. */
#ifndef SECPERF_NETEM_DRAW_H
#define SECPERF_NETEM_DRAW_H

#include <math.h>
#include <stdint.h>

#include "rng.h"

typedef struct rng {
    xoshiro256 x;
    int have_spare; /* Box-Muller's second value, kept for the next normal draw */
    double spare;
} rng;

static inline void rng_seed(rng *r, uint64_t seed)
{
    xoshiro256_seed(&r->x, seed);
    r->have_spare = 0;
}

/* uniform in [0, 1) with 53 random bits */
static inline double rng_uniform(rng *r) { return xoshiro256_uniform(&r->x); }

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
