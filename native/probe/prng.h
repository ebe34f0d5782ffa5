/* prng: deterministic filler for messages and symmetric keys (splitmix64), seeded by --seed. */
#ifndef SECPERF_PROBE_PRNG_H
#define SECPERF_PROBE_PRNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct prng {
    uint64_t state;
} prng;

static inline uint64_t prng_next(prng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void prng_fill(prng *r, unsigned char *p, size_t n)
{
    while (n > 0) {
        uint64_t v = prng_next(r);
        for (int i = 0; i < 8 && n > 0; i++, n--) {
            *p++ = (unsigned char)v;
            v >>= 8;
        }
    }
}

#endif
