/* algs: the table of algorithm and op names the probe knows, and the lookups over it. */
#ifndef SECPERF_PROBE_ALGS_H
#define SECPERF_PROBE_ALGS_H

#include <stddef.h>
#include <stdio.h>

typedef enum alg_family {
    FAM_RSA,
    FAM_ECDSA,
    FAM_EDDSA,
    FAM_KEX,
    FAM_AEAD,
    FAM_MAC,
    FAM_HASH
} alg_family;

typedef enum op_kind {
    OP_KEYGEN,
    OP_SIGN,
    OP_VERIFY,
    OP_DERIVE,
    OP_ENCRYPT,
    OP_DECRYPT,
    OP_MAC,
    OP_HASH,
    OP_COUNT
} op_kind;

typedef enum rsa_variant {
    RSA_V15,   /* PKCS#1 v1.5 with the CRT key */
    RSA_PSS,   /* RSA-PSS, salt = digest length, MGF1 with the same hash */
    RSA_NOCRT  /* PKCS#1 v1.5 with an n,e,d-only key */
} rsa_variant;

typedef struct alg_info {
    const char *name;      /* command-line name, e.g. "rsa-2048-pss" */
    alg_family family;
    unsigned ops;          /* bit mask of 1u << op_kind */
    const char *ossl_name; /* key type ("RSA", "EC", "ED25519"), cipher, MAC or digest name */
    const char *param;     /* EC group name, HMAC digest or CMAC cipher; NULL otherwise */
    const char *key_file;  /* key cache base name (signatures only), e.g. "rsa-2048" */
    int key_bits;          /* RSA modulus bits, EC/ECX field bits, 0 for symmetric */
    int variant;           /* rsa_variant for FAM_RSA, 0 otherwise */
    size_t sym_key_len;    /* MAC key bytes; 0 otherwise (AEAD asks the cipher) */
    size_t max_size;       /* largest --size the algorithm takes; 0: no limit of its own */
} alg_info;

const alg_info *alg_find(const char *name);
/* Fills buf with "a, b, c" of every alg name (for the unknown --alg message). */
void alg_names(char *buf, size_t bufsz);
/* Fills buf with the ops of alg, "sign, verify". */
void alg_op_names(const alg_info *alg, char *buf, size_t bufsz);
int alg_has_op(const alg_info *alg, op_kind op);
/* Returns OP_COUNT when the name is no op at all. */
op_kind op_from_name(const char *name);
const char *op_name(op_kind op);
const char *family_name(alg_family fam);
int family_is_bulk(alg_family fam);
/* Writes the {"type":"list",...} line. */
void alg_write_list(FILE *f);

#endif
