/* Known-answer check of the FIPS 202 layer the clean-asm-keccak build links (fips202_snp.c over a
 * Keccak-p[1600] in the SnP interface): prints, for messages of every length that crosses a rate
 * boundary, SHA3-256, SHA3-512, SHAKE128 (one-shot and block-wise), SHAKE256 (one-shot and
 * incremental in two pieces, squeezed in two pieces) as hex, one line each, for a test to compare with
 * another implementation (Python's hashlib). */
#include <stdio.h>

#include "fips202.h"

static void hex(const char *what, size_t len, const uint8_t *p, size_t n)
{
    printf("%s %zu ", what, len);
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
    printf("\n");
}

int main(void)
{
    static const size_t LENS[] = {0, 1, 71, 72, 73, 135, 136, 137, 167, 168, 169, 300};
    uint8_t in[300], out[2 * SHAKE128_RATE];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i * 7 + 3);
    for (size_t k = 0; k < sizeof LENS / sizeof LENS[0]; k++) {
        size_t n = LENS[k];
        sha3_256(out, in, n);
        hex("sha3_256", n, out, 32);
        sha3_512(out, in, n);
        hex("sha3_512", n, out, 64);
        shake128(out, 200, in, n);
        hex("shake128", n, out, 200);
        shake128ctx c;
        shake128_absorb(&c, in, n);
        shake128_squeezeblocks(out, 2, &c);
        shake128_ctx_release(&c);
        hex("shake128_blocks", n, out, (size_t)2 * SHAKE128_RATE);
        shake256(out, 150, in, n);
        hex("shake256", n, out, 150);
        shake256incctx s;
        shake256_inc_init(&s);
        shake256_inc_absorb(&s, in, n / 2);
        shake256_inc_absorb(&s, in + n / 2, n - n / 2);
        shake256_inc_finalize(&s);
        shake256_inc_squeeze(out, 10, &s);
        shake256_inc_squeeze(out + 10, 140, &s);
        shake256_inc_ctx_release(&s);
        hex("shake256_inc", n, out, 150);
    }
    return 0;
}
