/* be_p256m: P-256 primitives of p256-m, the minimal P-256 ECDH/ECDSA implementation shipped with
 * Mbed TLS 3.6 (3rdparty/p256-m, its optional PSA driver; sources from the mbedtls-rs-sys crate):
 * key generation, ECDH, ECDSA signing and verification, each repetition between OP_BEGIN and
 * OP_END markers with its stack painted. Its author published the time of each of these functions
 * on a Cortex-M0, a Cortex-M4 and a Cortex-A7 board, which makes it the one code base here with
 * published figures on three cores. Crypto mode only: this build has no TLS.
 *
 * Randomness (p256-m's p256_generate_random, through psa_generate_random) comes from a fixed-seed generator, so a process's counts repeat;
 * after each repetition the result is checked outside the markers (both ECDH sides agree, a
 * signature verifies) and the outcome is reported in the crypto line's "check". */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "crypto_only.h"
#include "marker.h"
#include "stackpaint.h"

#include "p256-m.h"

#ifndef SP_P256M_VERSION
#define SP_P256M_VERSION "Mbed TLS 3.6 3rdparty/p256-m"
#endif

/* Mbed TLS's copy of p256-m draws its randomness through PSA and wipes secrets with Mbed TLS's
 * zeroize: these two are all of Mbed TLS it needs here (the rest of the library is not linked). */
int32_t psa_generate_random(uint8_t *output, size_t output_size);
void mbedtls_platform_zeroize(void *buf, size_t len);

void mbedtls_platform_zeroize(void *buf, size_t len)
{
    volatile uint8_t *p = buf;
    while (len--)
        *p++ = 0;
}

int32_t psa_generate_random(uint8_t *output, size_t output_size)
{
    sp_fixed_random(output, output_size);
    return 0; /* PSA_SUCCESS */
}

static const char *const OPS[] = {"p256-keygen", "p256-derive", "ecdsa-p256-sign", "ecdsa-p256-verify"};
#define N_OPS (sizeof OPS / sizeof OPS[0])
static char check[96];

const char *sp_only_ops(void)
{
    return "[\"p256-keygen\",\"p256-derive\",\"ecdsa-p256-sign\",\"ecdsa-p256-verify\"]";
}

int sp_only_op(void *st, const char *op, int reps, char *err, size_t errlen)
{
    (void)st;
    unsigned id = 0;
    while (id < N_OPS && strcmp(OPS[id], op) != 0)
        id++;
    if (id == N_OPS) {
        snprintf(err, errlen, "unknown operation %s", op);
        return 2;
    }
    sp_fixed_rng = 0x256aull;
    static uint8_t priv_a[32], pub_a[64], priv_b[32], pub_b[64], s1[32], s2[32], sig[64], hash[32];
    memset(hash, 0x33, sizeof hash);
    int rc = p256_gen_keypair(priv_a, pub_a) | p256_gen_keypair(priv_b, pub_b);
    rc |= p256_ecdsa_sign(sig, priv_a, hash, sizeof hash);
    int good = 0;
    for (int r = 0; r < reps && rc == 0; r++) {
        SP_OP_STACK_BEGIN();
        sp_mark(SP_MARK_OP_BEGIN, 400u + id);
        switch (id) {
        case 0: rc = p256_gen_keypair(priv_b, pub_b); break;
        case 1: rc = p256_ecdh_shared_secret(s1, priv_a, pub_b); break;
        case 2: rc = p256_ecdsa_sign(sig, priv_a, hash, sizeof hash); break;
        case 3: rc = p256_ecdsa_verify(sig, pub_a, hash, sizeof hash); break;
        }
        sp_mark(SP_MARK_OP_END, 400u + id);
        SP_OP_STACK_END();
        /* outside the markers: the other side of the exchange, or a verification of the signature */
        if (rc == 0 && id <= 1)
            good += p256_ecdh_shared_secret(s1, priv_a, pub_b) == 0 && p256_ecdh_shared_secret(s2, priv_b, pub_a) == 0
                    && memcmp(s1, s2, sizeof s1) == 0;
        else if (rc == 0 && id == 2)
            good += p256_ecdsa_verify(sig, pub_a, hash, sizeof hash) == 0;
        else if (rc == 0)
            good++;
    }
    snprintf(check, sizeof check, "%s: %d of %d results checked (ECDH sides agree, signatures verify)", op, good, reps);
    sp_crypto_check = check;
    if (rc != 0 || good != reps) {
        snprintf(err, errlen, "%s failed (%d; %d of %d checked)", op, rc, good, reps);
        return 1;
    }
    return 0;
}

/* --- no TLS in this build: crypto_only.c's backend ------------------------------------------- */
const char sp_only_name[] = "p256m", sp_only_display[] = "p256-m";
const char *sp_only_library(void) { return "p256-m (" SP_P256M_VERSION ")"; }
