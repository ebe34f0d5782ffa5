/* chaskey: the Chaskey MAC (Mouha et al., SAC 2014) and Chaskey-12 (ISO/IEC 29192-6), written from
 * the specification. 128-bit key, subkeys K1 = 2K and K2 = 4K in GF(2^128) (reduction constant
 * 0x87), Even-Mansour permutation in a CBC-MAC-like mode, tags of 8..16 bytes.
 *
 * Incremental: chaskey_init, chaskey_update (any split), chaskey_final. No allocation, no libc
 * beyond <stddef.h>/<stdint.h>, so the same file builds for the host and for Cortex-M. */
#ifndef SECPERF_CHASKEY_H
#define SECPERF_CHASKEY_H

#include <stddef.h>
#include <stdint.h>

#define CHASKEY_KEY_BYTES 16
#define CHASKEY_BLOCK_BYTES 16
#define CHASKEY_TAG_MIN 8
#define CHASKEY_TAG_MAX 16

typedef struct chaskey_ctx {
    uint32_t k1[4], k2[4]; /* subkeys 2K and 4K */
    uint32_t v[4];         /* chaining state, starts at K */
    uint8_t buf[CHASKEY_BLOCK_BYTES];
    unsigned buf_len;      /* bytes held back: the last block is treated apart, so a full block
                              waits here until more input shows it was not the last */
    unsigned rounds;       /* 8 (Chaskey) or 12 (Chaskey-12) */
} chaskey_ctx;

/* 0 on success, -1 when rounds is neither 8 nor 12. key: 16 bytes, four little-endian words. */
int chaskey_init(chaskey_ctx *c, const uint8_t key[CHASKEY_KEY_BYTES], unsigned rounds);
void chaskey_update(chaskey_ctx *c, const uint8_t *msg, size_t len);
/* Writes the first tag_len bytes of the 128-bit tag; 0, or -1 when tag_len is outside 8..16.
 * The context is wiped either way. */
int chaskey_final(chaskey_ctx *c, uint8_t *tag, size_t tag_len);
/* One-shot: init + update + final. */
int chaskey_mac(uint8_t *tag, size_t tag_len, const uint8_t *msg, size_t len,
                const uint8_t key[CHASKEY_KEY_BYTES], unsigned rounds);

#endif
