/* algs: the table of algorithm and op names the probe knows, and the lookups over it. */
#include "algs.h"

#include <string.h>

#include "json.h"

#define B(op) (1u << (op))
#define SIG_OPS (B(OP_KEYGEN) | B(OP_SIGN) | B(OP_VERIFY))
#define NOCRT_OPS (B(OP_SIGN) | B(OP_VERIFY))
#define KEX_OPS (B(OP_KEYGEN) | B(OP_DERIVE))
#define AEAD_OPS (B(OP_ENCRYPT) | B(OP_DECRYPT))

/* designated-initializer rows: the arguments are string pieces glued to literals and initializers,
 * which parentheses would break */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define RSA_ROW(bits, suffix, ops_, v)                                                    \
    {.name = "rsa-" #bits suffix, .family = FAM_RSA, .ops = ops_, .ossl_name = "RSA",     \
     .key_file = "rsa-" #bits, .key_bits = bits, .variant = v}
#define RSA_ROWS(bits)                                                                    \
    RSA_ROW(bits, "", SIG_OPS, RSA_V15), RSA_ROW(bits, "-pss", SIG_OPS, RSA_PSS),         \
    RSA_ROW(bits, "-nocrt", NOCRT_OPS, RSA_NOCRT)
#define ECDSA_ROW(curve, group, bits)                                                     \
    {.name = "ecdsa-" curve, .family = FAM_ECDSA, .ops = SIG_OPS, .ossl_name = "EC",      \
     .param = group, .key_file = "ecdsa-" curve, .key_bits = bits}
#define EDDSA_ROW(name_, type, bits)                                                      \
    {.name = name_, .family = FAM_EDDSA, .ops = SIG_OPS, .ossl_name = type,               \
     .key_file = name_, .key_bits = bits}
#define KEX_ROW(name_, type, group, bits)                                                 \
    {.name = name_, .family = FAM_KEX, .ops = KEX_OPS, .ossl_name = type, .param = group, \
     .key_bits = bits}
#define AEAD_ROW(name_, cipher, max)                                                      \
    {.name = name_, .family = FAM_AEAD, .ops = AEAD_OPS, .ossl_name = cipher,             \
     .max_size = max}
#define MAC_ROW(name_, mac, param_, keylen)                                               \
    {.name = name_, .family = FAM_MAC, .ops = B(OP_MAC), .ossl_name = mac,                \
     .param = param_, .sym_key_len = keylen}
#define HASH_ROW(name_, md) \
    {.name = name_, .family = FAM_HASH, .ops = B(OP_HASH), .ossl_name = md}
/* NOLINTEND(bugprone-macro-parentheses) */

/* key_bits for curves is the field size (EVP_PKEY_get_bits would give the group order's). */
static const alg_info ALGS[] = {
    RSA_ROWS(1024), RSA_ROWS(2048), RSA_ROWS(3072), RSA_ROWS(4096), RSA_ROWS(7680),
    RSA_ROWS(15360),
    ECDSA_ROW("secp160r1", "secp160r1", 160),
    ECDSA_ROW("secp160k1", "secp160k1", 160),
    ECDSA_ROW("secp160r2", "secp160r2", 160),
    ECDSA_ROW("secp192r1", "prime192v1", 192),
    ECDSA_ROW("secp224r1", "secp224r1", 224),
    ECDSA_ROW("p256", "prime256v1", 256),
    ECDSA_ROW("p384", "secp384r1", 384),
    ECDSA_ROW("p521", "secp521r1", 521),
    ECDSA_ROW("secp256k1", "secp256k1", 256),
    ECDSA_ROW("brainpoolp256r1", "brainpoolP256r1", 256),
    EDDSA_ROW("ed25519", "ED25519", 255),
    EDDSA_ROW("ed448", "ED448", 448),
    KEX_ROW("x25519", "X25519", NULL, 255),
    KEX_ROW("x448", "X448", NULL, 448),
    KEX_ROW("ecdh-p256", "EC", "prime256v1", 256),
    KEX_ROW("ecdh-p384", "EC", "secp384r1", 384),
    KEX_ROW("ecdh-brainpoolp256r1", "EC", "brainpoolP256r1", 256),
    AEAD_ROW("aes-128-gcm", "AES-128-GCM", 0),
    AEAD_ROW("aes-256-gcm", "AES-256-GCM", 0),
    /* A 12-byte CCM nonce leaves 3 length bytes: messages up to 2^24 - 1 bytes. */
    AEAD_ROW("aes-128-ccm", "AES-128-CCM", 0xffffff),
    AEAD_ROW("chacha20-poly1305", "ChaCha20-Poly1305", 0),
    MAC_ROW("hmac-sha256", "HMAC", "SHA2-256", 32),
    MAC_ROW("aes-128-cmac", "CMAC", "AES-128-CBC", 16),
    MAC_ROW("poly1305", "POLY1305", NULL, 32),
    MAC_ROW("siphash", "SIPHASH", NULL, 16),
    /* secperf's own Chaskey (native/mac), not libcrypto: variant holds the rounds */
    {.name = "chaskey", .family = FAM_MAC, .ops = B(OP_MAC), .ossl_name = "CHASKEY",
     .sym_key_len = 16, .variant = 8},
    {.name = "chaskey-12", .family = FAM_MAC, .ops = B(OP_MAC), .ossl_name = "CHASKEY",
     .sym_key_len = 16, .variant = 12},
    HASH_ROW("sha256", "SHA2-256"),
    HASH_ROW("sha1", "SHA1"),
    HASH_ROW("sha3-256", "SHA3-256"),
};

#define N_ALGS (sizeof(ALGS) / sizeof(ALGS[0]))

static const char *const OP_NAMES[OP_COUNT] = {
    "keygen", "sign", "verify", "derive", "encrypt", "decrypt", "mac", "hash",
};

const alg_info *alg_find(const char *name)
{
    for (size_t i = 0; i < N_ALGS; i++)
        if (strcmp(ALGS[i].name, name) == 0)
            return &ALGS[i];
    return NULL;
}

/* Appends "s" to buf with a ", " separator, truncating safely. */
static void append_name(char *buf, size_t bufsz, const char *s)
{
    size_t used = strlen(buf);
    if (used + 1 >= bufsz)
        return;
    snprintf(buf + used, bufsz - used, "%s%s", used ? ", " : "", s);
}

void alg_names(char *buf, size_t bufsz)
{
    buf[0] = '\0';
    for (size_t i = 0; i < N_ALGS; i++)
        append_name(buf, bufsz, ALGS[i].name);
}

void alg_op_names(const alg_info *alg, char *buf, size_t bufsz)
{
    buf[0] = '\0';
    for (int op = 0; op < OP_COUNT; op++)
        if (alg_has_op(alg, (op_kind)op))
            append_name(buf, bufsz, OP_NAMES[op]);
}

int alg_has_op(const alg_info *alg, op_kind op)
{
    return op < OP_COUNT && (alg->ops & B(op)) != 0;
}

op_kind op_from_name(const char *name)
{
    for (int op = 0; op < OP_COUNT; op++)
        if (strcmp(OP_NAMES[op], name) == 0)
            return (op_kind)op;
    return OP_COUNT;
}

const char *op_name(op_kind op)
{
    return op < OP_COUNT ? OP_NAMES[op] : "?";
}

const char *family_name(alg_family fam)
{
    switch (fam) {
    case FAM_RSA: return "rsa";
    case FAM_ECDSA: return "ecdsa";
    case FAM_EDDSA: return "eddsa";
    case FAM_KEX: return "kex";
    case FAM_AEAD: return "aead";
    case FAM_MAC: return "mac";
    case FAM_HASH: return "hash";
    }
    return "?";
}

int family_is_bulk(alg_family fam)
{
    return fam == FAM_AEAD || fam == FAM_MAC || fam == FAM_HASH;
}

void alg_write_list(FILE *f)
{
    fputs("{\"type\":\"list\",\"algs\":[", f);
    for (size_t i = 0; i < N_ALGS; i++) {
        const alg_info *a = &ALGS[i];
        fputs(i ? ",{\"alg\":" : "{\"alg\":", f);
        json_str(f, a->name);
        fputs(",\"family\":", f);
        json_str(f, family_name(a->family));
        fputs(",\"ops\":[", f);
        int first = 1;
        for (int op = 0; op < OP_COUNT; op++) {
            if (!alg_has_op(a, (op_kind)op))
                continue;
            if (!first)
                fputc(',', f);
            json_str(f, OP_NAMES[op]);
            first = 0;
        }
        fprintf(f, "],\"bulk\":%s}", family_is_bulk(a->family) ? "true" : "false");
    }
    fputs("]", f);
    json_end_line(f);
}
