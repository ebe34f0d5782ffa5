/* scaled_sum: a function with the argument kinds a crypto or DSP routine takes — a buffer, a 64-bit
 * length, a double and a struct by value — that checks the harness passed each one right.
 *
 * Returns the sum of the first `len` bytes, times `scale`, plus p.bias, as a 64-bit value; or, when
 * an argument is not the one scaled_sum.toml gives, 0xdead0000 + its number (the harness's `ret`
 * tells which one arrived wrong). */
#include <stdint.h>

struct params {
    uint64_t bias;   /* 8-byte member: the struct is 8-byte aligned, 16 bytes with its padding */
    uint32_t rounds;
};

uint64_t scaled_sum(const uint8_t *in, uint64_t len, double scale, struct params p)
{
    if (len != 64)
        return 0xdead0002u;
    if (scale != 0.5)
        return 0xdead0003u;
    if (p.bias != 0x100000000ULL || p.rounds != 3)
        return 0xdead0004u;
    uint64_t sum = 0;
    for (uint32_t r = 0; r < p.rounds; r++)
        for (uint64_t i = 0; i < len; i++)
            sum += in[i];
    return (uint64_t)((double)sum * scale) + p.bias;
}
