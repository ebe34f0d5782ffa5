/* rng: the parts of the generator that are not on a hot path. */
#include "rng.h"

void splitmix64_fill(uint64_t *state, unsigned char *p, size_t n)
{
    while (n > 0) {
        uint64_t v = splitmix64_next(state);
        for (int i = 0; i < 8 && n > 0; i++, n--) {
            *p++ = (unsigned char)v;
            v >>= 8;
        }
    }
}

void xoshiro256_seed(xoshiro256 *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64_next(&x);
}
