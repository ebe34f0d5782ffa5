/* cmac: AES-128-CMAC (NIST SP 800-38B, RFC 4493) over aes128.c, one-shot with a prepared key. */
#ifndef SECPERF_CMAC_H
#define SECPERF_CMAC_H

#include <stddef.h>
#include <stdint.h>

#include "aes128.h"

typedef struct cmac_key {
    aes128_key aes;
    uint8_t k1[16], k2[16];
} cmac_key;

void cmac_setup(cmac_key *k, const uint8_t key[16]);
void cmac_tag(const cmac_key *k, const uint8_t *msg, size_t len, uint8_t tag[16]);

#endif
