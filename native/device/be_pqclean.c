/* be_pqclean: post-quantum primitives of PQClean's portable "clean" C implementations (the C sources
 * bundled in the pqcrypto-mlkem and pqcrypto-mldsa crates; the code pqm4 benchmarks as "clean" on a
 * Cortex-M4): ML-KEM-512/768/1024 key generation, encapsulation and decapsulation, ML-DSA-44/65 key
 * generation, signing and verification. Crypto mode only: this build has no TLS.
 *
 * Each repetition is one operation between OP_BEGIN and OP_END markers, its stack painted around it;
 * keys, ciphertexts and signatures it needs are made outside the markers. The randomness the schemes
 * ask for (PQCLEAN_randombytes) comes from a fixed-seed generator, so a process's counts repeat
 * exactly; it costs a few instructions per byte (the schemes ask for 32 or 64 bytes per operation).
 * After each repetition the result is checked outside the markers (decapsulation gives the
 * encapsulated secret, a signature verifies) and the outcome is reported in the crypto line's
 * "check". */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "crypto_only.h"
#include "marker.h"
#include "stackpaint.h"

#include "crypto_kem/ml-kem-512/clean/api.h"
#include "crypto_kem/ml-kem-768/clean/api.h"
#include "crypto_kem/ml-kem-1024/clean/api.h"
#include "crypto_sign/ml-dsa-44/clean/api.h"
#include "crypto_sign/ml-dsa-65/clean/api.h"

#ifndef SP_PQCLEAN_VERSION
#define SP_PQCLEAN_VERSION "pqcrypto-mlkem, pqcrypto-mldsa crates"
#endif

/* --- deterministic randomness (crypto_only.c's fixed-seed generator) ------------------------- */
int PQCLEAN_randombytes(uint8_t *out, size_t n);
int PQCLEAN_randombytes(uint8_t *out, size_t n)
{
    sp_fixed_random(out, n);
    return 0;
}

/* --- the schemes ----------------------------------------------------------------------------- */
typedef int (*kem_keypair_fn)(uint8_t *, uint8_t *);
typedef int (*kem_enc_fn)(uint8_t *, uint8_t *, const uint8_t *);
typedef int (*kem_dec_fn)(uint8_t *, const uint8_t *, const uint8_t *);
typedef int (*sig_sign_fn)(uint8_t *, size_t *, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *);
typedef int (*sig_verify_fn)(const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *, size_t,
                             const uint8_t *);

struct kem {
    const char *name;
    kem_keypair_fn keypair;
    kem_enc_fn enc;
    kem_dec_fn dec;
};
struct sig {
    const char *name;
    kem_keypair_fn keypair;
    sig_sign_fn sign;
    sig_verify_fn verify;
    size_t sig_bytes;
};

static const struct kem KEMS[] = {
    {"ml-kem-512", PQCLEAN_MLKEM512_CLEAN_crypto_kem_keypair, PQCLEAN_MLKEM512_CLEAN_crypto_kem_enc,
     PQCLEAN_MLKEM512_CLEAN_crypto_kem_dec},
    {"ml-kem-768", PQCLEAN_MLKEM768_CLEAN_crypto_kem_keypair, PQCLEAN_MLKEM768_CLEAN_crypto_kem_enc,
     PQCLEAN_MLKEM768_CLEAN_crypto_kem_dec},
    {"ml-kem-1024", PQCLEAN_MLKEM1024_CLEAN_crypto_kem_keypair, PQCLEAN_MLKEM1024_CLEAN_crypto_kem_enc,
     PQCLEAN_MLKEM1024_CLEAN_crypto_kem_dec},
};
static const struct sig SIGS[] = {
    {"ml-dsa-44", PQCLEAN_MLDSA44_CLEAN_crypto_sign_keypair, PQCLEAN_MLDSA44_CLEAN_crypto_sign_signature_ctx,
     PQCLEAN_MLDSA44_CLEAN_crypto_sign_verify_ctx, PQCLEAN_MLDSA44_CLEAN_CRYPTO_BYTES},
    {"ml-dsa-65", PQCLEAN_MLDSA65_CLEAN_crypto_sign_keypair, PQCLEAN_MLDSA65_CLEAN_crypto_sign_signature_ctx,
     PQCLEAN_MLDSA65_CLEAN_crypto_sign_verify_ctx, PQCLEAN_MLDSA65_CLEAN_CRYPTO_BYTES},
};
#define N_KEMS (sizeof KEMS / sizeof KEMS[0])
#define N_SIGS (sizeof SIGS / sizeof SIGS[0])

/* the largest of the parameter sets (ML-KEM-1024, ML-DSA-65) */
static uint8_t pk[PQCLEAN_MLDSA65_CLEAN_CRYPTO_PUBLICKEYBYTES], sk[PQCLEAN_MLDSA65_CLEAN_CRYPTO_SECRETKEYBYTES];
static uint8_t ct[PQCLEAN_MLKEM1024_CLEAN_CRYPTO_CIPHERTEXTBYTES], ss1[32], ss2[32];
static uint8_t sig[PQCLEAN_MLDSA65_CLEAN_CRYPTO_BYTES];
/* the message signed: 59 bytes, as pqm4's speed test (crypto_sign/speed.c, MLEN 59); empty context */
#define MLEN 59
static uint8_t msg[MLEN];
static char check[160];

const char *sp_only_ops(void)
{
    return "[\"ml-kem-512-keygen\",\"ml-kem-512-encaps\",\"ml-kem-512-decaps\","
           "\"ml-kem-768-keygen\",\"ml-kem-768-encaps\",\"ml-kem-768-decaps\","
           "\"ml-kem-1024-keygen\",\"ml-kem-1024-encaps\",\"ml-kem-1024-decaps\","
           "\"ml-dsa-44-keygen\",\"ml-dsa-44-sign\",\"ml-dsa-44-verify\","
           "\"ml-dsa-65-keygen\",\"ml-dsa-65-sign\",\"ml-dsa-65-verify\"]";
}

#define COUNTED(id, call)                   \
    do {                                    \
        SP_OP_STACK_BEGIN();                \
        sp_mark(SP_MARK_OP_BEGIN, (id));    \
        rc = (call);                        \
        sp_mark(SP_MARK_OP_END, (id));      \
        SP_OP_STACK_END();                  \
    } while (0)

/* kind: 0 keygen, 1 encaps, 2 decaps. Every repetition's secrets are compared outside the markers. */
static int run_kem(const struct kem *k, unsigned id, int kind, int reps, char *err, size_t errlen)
{
    int rc = 0, same = 0;
    if (kind != 0)
        rc = k->keypair(pk, sk);
    for (int r = 0; r < reps && rc == 0; r++) {
        if (kind == 0)
            COUNTED(id, k->keypair(pk, sk));
        if (rc == 0 && kind != 1)
            rc = k->enc(ct, ss1, pk);
        else if (rc == 0)
            COUNTED(id, k->enc(ct, ss1, pk));
        memset(ss2, 0, sizeof ss2);
        if (rc == 0 && kind == 2)
            COUNTED(id, k->dec(ss2, ct, sk));
        else if (rc == 0)
            rc = k->dec(ss2, ct, sk);
        if (rc == 0 && memcmp(ss1, ss2, sizeof ss1) == 0)
            same++;
    }
    snprintf(check, sizeof check, "%s: shared secrets equal in %d of %d round trips", k->name, same, reps);
    if (rc != 0 || same != reps) {
        snprintf(err, errlen, "%s failed (%d); %s", k->name, rc, check);
        return 1;
    }
    return 0;
}

/* kind: 0 keygen, 1 sign, 2 verify. Every signature made is verified outside the markers. */
static int run_sig(const struct sig *s, unsigned id, int kind, int reps, char *err, size_t errlen)
{
    int rc = 0, good = 0;
    size_t siglen = 0;
    for (size_t i = 0; i < MLEN; i++)
        msg[i] = (uint8_t)(0x5a ^ i);
    if (kind != 0)
        rc = s->keypair(pk, sk);
    if (rc == 0 && kind == 2)
        rc = s->sign(sig, &siglen, msg, MLEN, NULL, 0, sk);
    for (int r = 0; r < reps && rc == 0; r++) {
        if (kind == 0)
            COUNTED(id, s->keypair(pk, sk));
        if (rc == 0 && kind == 0)
            rc = s->sign(sig, &siglen, msg, MLEN, NULL, 0, sk);
        if (rc == 0 && kind == 1)
            COUNTED(id, s->sign(sig, &siglen, msg, MLEN, NULL, 0, sk));
        if (rc == 0 && kind == 2)
            COUNTED(id, s->verify(sig, siglen, msg, MLEN, NULL, 0, pk));
        else if (rc == 0)
            rc = s->verify(sig, siglen, msg, MLEN, NULL, 0, pk);
        if (rc == 0 && siglen == s->sig_bytes)
            good++;
    }
    snprintf(check, sizeof check, "%s: signatures verify in %d of %d", s->name, good, reps);
    if (rc != 0 || good != reps) {
        snprintf(err, errlen, "%s failed (%d); %s", s->name, rc, check);
        return 1;
    }
    return 0;
}

int sp_only_op(void *st, const char *op, int reps, char *err, size_t errlen)
{
    (void)st;
    static const char *const KEM_KINDS[] = {"-keygen", "-encaps", "-decaps"};
    static const char *const SIG_KINDS[] = {"-keygen", "-sign", "-verify"};
    sp_fixed_rng = 0x5ec9e4f2025ull;   /* fixed: every process draws the same keys and coins */
    sp_crypto_check = check;
    for (unsigned i = 0; i < N_KEMS; i++) {
        size_t n = strlen(KEMS[i].name);
        for (int kind = 0; kind < 3; kind++)
            if (strncmp(op, KEMS[i].name, n) == 0 && strcmp(op + n, KEM_KINDS[kind]) == 0)
                return run_kem(&KEMS[i], 300u + 3u * i + (unsigned)kind, kind, reps, err, errlen);
    }
    for (unsigned i = 0; i < N_SIGS; i++) {
        size_t n = strlen(SIGS[i].name);
        for (int kind = 0; kind < 3; kind++)
            if (strncmp(op, SIGS[i].name, n) == 0 && strcmp(op + n, SIG_KINDS[kind]) == 0)
                return run_sig(&SIGS[i], 320u + 3u * i + (unsigned)kind, kind, reps, err, errlen);
    }
    sp_crypto_check = NULL;
    snprintf(err, errlen, "unknown operation %s", op);
    return 2;
}

/* --- no TLS in this build: crypto_only.c's backend ------------------------------------------- */
const char sp_only_name[] = "pqclean", sp_only_display[] = "PQClean";
const char *sp_only_library(void) { return "PQClean clean (" SP_PQCLEAN_VERSION ")"; }
