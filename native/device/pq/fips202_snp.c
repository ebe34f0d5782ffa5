/* PQClean's FIPS 202 interface (common/fips202.h: SHAKE128/256, SHA3-256/384/512, incremental and
 * one-shot) over a Keccak-p[1600] in the "SnP" interface of the eXtended Keccak Code Package:
 * KeccakP1600_Initialize, _AddByte, _AddBytes, _Permute_24rounds, _ExtractBytes. Linked with XKCP's
 * ARMv7-M assembly (KeccakP-1600-inplace-32bi-armv7m-le-gcc.s, shipped in the xkcp-sys crate), this
 * is the build pqm4 benchmarks as "clean": PQClean's portable scheme code on an assembly Keccak whose
 * state stays in the permutation's own (bit-interleaved) representation between calls, the absorb
 * and extract steps converting bytes on the way in and out.
 *
 * The contexts keep PQClean's layout and sizes (a heap block of 25 state words, plus one position
 * word for the incremental ones), so the scheme code links unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fips202.h"

void KeccakP1600_Initialize(void *state);
void KeccakP1600_AddByte(void *state, unsigned char data, unsigned int offset);
void KeccakP1600_AddBytes(void *state, const unsigned char *data, unsigned int offset, unsigned int length);
void KeccakP1600_Permute_24rounds(void *state);
void KeccakP1600_ExtractBytes(const void *state, unsigned char *data, unsigned int offset, unsigned int length);

#define PAD_SHAKE 0x1F
#define PAD_SHA3 0x06

static uint64_t *ctx_new(size_t bytes)
{
    uint64_t *c = malloc(bytes);
    if (c == NULL)
        exit(111);   /* as PQClean's own fips202.c */
    return c;
}

/* absorb into the block at position *pos (bytes), permuting whenever a block is full */
static void absorb(uint64_t *s, uint64_t *pos, unsigned rate, const uint8_t *in, size_t inlen)
{
    while (inlen > 0) {
        size_t take = rate - (size_t)*pos;
        if (take > inlen)
            take = inlen;
        KeccakP1600_AddBytes(s, in, (unsigned)*pos, (unsigned)take);
        *pos += take;
        in += take;
        inlen -= take;
        if (*pos == rate) {
            KeccakP1600_Permute_24rounds(s);
            *pos = 0;
        }
    }
}

/* the domain byte and the final bit of the padding; afterwards *pos counts the bytes left to squeeze (none) */
static void pad(uint64_t *s, uint64_t *pos, unsigned rate, uint8_t domain)
{
    KeccakP1600_AddByte(s, domain, (unsigned)*pos);
    KeccakP1600_AddByte(s, 0x80, rate - 1);
    *pos = 0;
}

static void squeeze(uint8_t *out, size_t outlen, uint64_t *s, uint64_t *left, unsigned rate)
{
    while (outlen > 0) {
        if (*left == 0) {
            KeccakP1600_Permute_24rounds(s);
            *left = rate;
        }
        size_t take = (size_t)*left < outlen ? (size_t)*left : outlen;
        KeccakP1600_ExtractBytes(s, out, (unsigned)(rate - *left), (unsigned)take);
        out += take;
        outlen -= take;
        *left -= take;
    }
}

static void blocks(uint8_t *out, size_t nblocks, uint64_t *s, unsigned rate)
{
    for (size_t i = 0; i < nblocks; i++, out += rate) {
        KeccakP1600_Permute_24rounds(s);
        KeccakP1600_ExtractBytes(s, out, 0, rate);
    }
}

/* ---- incremental contexts: 25 state words and the position ---------------------------------- */

static uint64_t *inc_init(void)
{
    uint64_t *c = ctx_new(PQC_SHAKEINCCTX_BYTES);
    KeccakP1600_Initialize(c);
    c[25] = 0;
    return c;
}

static uint64_t *inc_clone(const uint64_t *src)
{
    uint64_t *c = ctx_new(PQC_SHAKEINCCTX_BYTES);
    memcpy(c, src, PQC_SHAKEINCCTX_BYTES);
    return c;
}

static uint64_t *oneshot_absorb(unsigned rate, const uint8_t *in, size_t inlen)
{
    uint64_t *c = ctx_new(PQC_SHAKECTX_BYTES);
    uint64_t pos = 0;
    KeccakP1600_Initialize(c);
    absorb(c, &pos, rate, in, inlen);
    pad(c, &pos, rate, PAD_SHAKE);
    return c;
}

static void digest(uint8_t *out, size_t outlen, unsigned rate, uint8_t domain, const uint8_t *in, size_t inlen)
{
    uint64_t s[25], pos = 0;
    KeccakP1600_Initialize(s);
    absorb(s, &pos, rate, in, inlen);
    pad(s, &pos, rate, domain);
    squeeze(out, outlen, s, &pos, rate);
}

static void inc_digest(uint8_t *out, size_t outlen, uint64_t *c, unsigned rate)
{
    pad(c, &c[25], rate, PAD_SHA3);
    squeeze(out, outlen, c, &c[25], rate);
    free(c);
}

void shake128_inc_init(shake128incctx *st) { st->ctx = inc_init(); }
void shake128_inc_absorb(shake128incctx *st, const uint8_t *in, size_t inlen) { absorb(st->ctx, &st->ctx[25], SHAKE128_RATE, in, inlen); }
void shake128_inc_finalize(shake128incctx *st) { pad(st->ctx, &st->ctx[25], SHAKE128_RATE, PAD_SHAKE); }
void shake128_inc_squeeze(uint8_t *out, size_t outlen, shake128incctx *st) { squeeze(out, outlen, st->ctx, &st->ctx[25], SHAKE128_RATE); }
void shake128_inc_ctx_clone(shake128incctx *dest, const shake128incctx *src) { dest->ctx = inc_clone(src->ctx); }
void shake128_inc_ctx_release(shake128incctx *st) { free(st->ctx); }

void shake256_inc_init(shake256incctx *st) { st->ctx = inc_init(); }
void shake256_inc_absorb(shake256incctx *st, const uint8_t *in, size_t inlen) { absorb(st->ctx, &st->ctx[25], SHAKE256_RATE, in, inlen); }
void shake256_inc_finalize(shake256incctx *st) { pad(st->ctx, &st->ctx[25], SHAKE256_RATE, PAD_SHAKE); }
void shake256_inc_squeeze(uint8_t *out, size_t outlen, shake256incctx *st) { squeeze(out, outlen, st->ctx, &st->ctx[25], SHAKE256_RATE); }
void shake256_inc_ctx_clone(shake256incctx *dest, const shake256incctx *src) { dest->ctx = inc_clone(src->ctx); }
void shake256_inc_ctx_release(shake256incctx *st) { free(st->ctx); }

void shake128_absorb(shake128ctx *st, const uint8_t *in, size_t inlen) { st->ctx = oneshot_absorb(SHAKE128_RATE, in, inlen); }
void shake128_squeezeblocks(uint8_t *out, size_t nblocks, shake128ctx *st) { blocks(out, nblocks, st->ctx, SHAKE128_RATE); }
void shake128_ctx_clone(shake128ctx *dest, const shake128ctx *src)
{
    dest->ctx = ctx_new(PQC_SHAKECTX_BYTES);
    memcpy(dest->ctx, src->ctx, PQC_SHAKECTX_BYTES);
}
void shake128_ctx_release(shake128ctx *st) { free(st->ctx); }

void shake256_absorb(shake256ctx *st, const uint8_t *in, size_t inlen) { st->ctx = oneshot_absorb(SHAKE256_RATE, in, inlen); }
void shake256_squeezeblocks(uint8_t *out, size_t nblocks, shake256ctx *st) { blocks(out, nblocks, st->ctx, SHAKE256_RATE); }
void shake256_ctx_clone(shake256ctx *dest, const shake256ctx *src)
{
    dest->ctx = ctx_new(PQC_SHAKECTX_BYTES);
    memcpy(dest->ctx, src->ctx, PQC_SHAKECTX_BYTES);
}
void shake256_ctx_release(shake256ctx *st) { free(st->ctx); }

void shake128(uint8_t *out, size_t outlen, const uint8_t *in, size_t inlen) { digest(out, outlen, SHAKE128_RATE, PAD_SHAKE, in, inlen); }
void shake256(uint8_t *out, size_t outlen, const uint8_t *in, size_t inlen) { digest(out, outlen, SHAKE256_RATE, PAD_SHAKE, in, inlen); }

void sha3_256_inc_init(sha3_256incctx *st) { st->ctx = inc_init(); }
void sha3_256_inc_absorb(sha3_256incctx *st, const uint8_t *in, size_t inlen) { absorb(st->ctx, &st->ctx[25], SHA3_256_RATE, in, inlen); }
void sha3_256_inc_finalize(uint8_t *out, sha3_256incctx *st) { inc_digest(out, 32, st->ctx, SHA3_256_RATE); }
void sha3_256_inc_ctx_clone(sha3_256incctx *dest, const sha3_256incctx *src) { dest->ctx = inc_clone(src->ctx); }
void sha3_256_inc_ctx_release(sha3_256incctx *st) { free(st->ctx); }
void sha3_256(uint8_t *out, const uint8_t *in, size_t inlen) { digest(out, 32, SHA3_256_RATE, PAD_SHA3, in, inlen); }

void sha3_384_inc_init(sha3_384incctx *st) { st->ctx = inc_init(); }
void sha3_384_inc_absorb(sha3_384incctx *st, const uint8_t *in, size_t inlen) { absorb(st->ctx, &st->ctx[25], SHA3_384_RATE, in, inlen); }
void sha3_384_inc_finalize(uint8_t *out, sha3_384incctx *st) { inc_digest(out, 48, st->ctx, SHA3_384_RATE); }
void sha3_384_inc_ctx_clone(sha3_384incctx *dest, const sha3_384incctx *src) { dest->ctx = inc_clone(src->ctx); }
void sha3_384_inc_ctx_release(sha3_384incctx *st) { free(st->ctx); }
void sha3_384(uint8_t *out, const uint8_t *in, size_t inlen) { digest(out, 48, SHA3_384_RATE, PAD_SHA3, in, inlen); }

void sha3_512_inc_init(sha3_512incctx *st) { st->ctx = inc_init(); }
void sha3_512_inc_absorb(sha3_512incctx *st, const uint8_t *in, size_t inlen) { absorb(st->ctx, &st->ctx[25], SHA3_512_RATE, in, inlen); }
void sha3_512_inc_finalize(uint8_t *out, sha3_512incctx *st) { inc_digest(out, 64, st->ctx, SHA3_512_RATE); }
void sha3_512_inc_ctx_clone(sha3_512incctx *dest, const sha3_512incctx *src) { dest->ctx = inc_clone(src->ctx); }
void sha3_512_inc_ctx_release(sha3_512incctx *st) { free(st->ctx); }
void sha3_512(uint8_t *out, const uint8_t *in, size_t inlen) { digest(out, 64, SHA3_512_RATE, PAD_SHA3, in, inlen); }
