/* aes128: plain byte-oriented C AES-128 encryption (FIPS 197), table S-box, no T-tables: the
 * kind of AES a small microcontroller runs without hardware support. */
#ifndef SECPERF_AES128_H
#define SECPERF_AES128_H

#include <stdint.h>

typedef struct aes128_key {
    uint8_t rk[176]; /* 11 round keys */
} aes128_key;

void aes128_expand(aes128_key *k, const uint8_t key[16]);
void aes128_encrypt(const aes128_key *k, const uint8_t in[16], uint8_t out[16]);

#endif
