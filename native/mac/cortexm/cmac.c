/* cmac: see cmac.h. */
#include "cmac.h"

/* Doubling in GF(2^128), big-endian bit order as SP 800-38B specifies (Rb = 0x87). */
static void dbl(uint8_t out[16], const uint8_t in[16])
{
    uint8_t carry = in[0] >> 7;
    for (int i = 0; i < 15; i++)
        out[i] = (uint8_t)((in[i] << 1) | (in[i + 1] >> 7));
    out[15] = (uint8_t)((in[15] << 1) ^ (carry * 0x87));
}

void cmac_setup(cmac_key *k, const uint8_t key[16])
{
    uint8_t zero[16] = {0}, l[16];
    aes128_expand(&k->aes, key);
    aes128_encrypt(&k->aes, zero, l);
    dbl(k->k1, l);
    dbl(k->k2, k->k1);
}

void cmac_tag(const cmac_key *k, const uint8_t *msg, size_t len, uint8_t tag[16])
{
    uint8_t x[16] = {0}, last[16];
    size_t n = len == 0 ? 1 : (len + 15) / 16; /* blocks, the last one treated apart */
    for (size_t b = 0; b + 1 < n; b++) {
        for (int i = 0; i < 16; i++)
            x[i] ^= msg[16 * b + i];
        aes128_encrypt(&k->aes, x, x);
    }
    size_t rest = len - 16 * (n - 1);
    if (len > 0 && rest == 16) {
        for (int i = 0; i < 16; i++)
            last[i] = msg[16 * (n - 1) + i] ^ k->k1[i];
    } else {
        for (size_t i = 0; i < 16; i++) {
            uint8_t m = i < rest ? msg[16 * (n - 1) + i] : (i == rest ? 0x80 : 0x00);
            last[i] = m ^ k->k2[i];
        }
    }
    for (int i = 0; i < 16; i++)
        x[i] ^= last[i];
    aes128_encrypt(&k->aes, x, tag);
}
