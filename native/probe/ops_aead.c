/* ops_aead: AEAD encrypt/decrypt in the per-op sequence of `openssl speed -aead -evp` (3.0.16+). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "keys.h"
#include "ops.h"
#include "rng.h"

#define AEAD_IV_LEN 12
#define AEAD_AAD_LEN 13 /* TLS record header size, as openssl speed uses */
#define AEAD_TAG_LEN 16

typedef struct aead_state {
    EVP_CIPHER *cipher;
    EVP_CIPHER_CTX *ctx;
    int ccm;         /* CCM: total length must be announced before the AAD */
    int set_taglen;  /* every AEAD but GCM: tag length set per op, as openssl speed does */
    int decrypt;
    unsigned char key[EVP_MAX_KEY_LENGTH];
    unsigned char iv[AEAD_IV_LEN];
    unsigned char aad[AEAD_AAD_LEN];
    unsigned char tag[AEAD_TAG_LEN];
    unsigned char *buf; /* encrypt: plaintext, encrypted in place; decrypt: ciphertext */
    unsigned char *out; /* decrypt: plaintext output (keeps buf intact for the next op) */
    int len;
} aead_state;

/* The per-op preamble of openssl speed (3.0.16+, EVP_Update_loop_aead_enc/_dec): IV length,
 * tag length (not GCM), then key AND IV, so the key schedule is part of every op. */
static inline int aead_rekey(aead_state *s)
{
    return EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_SET_IVLEN, AEAD_IV_LEN, NULL) > 0
           && (!s->set_taglen
               || EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_SET_TAG, AEAD_TAG_LEN, NULL) > 0)
           && EVP_CipherInit_ex(s->ctx, NULL, NULL, s->key, s->iv, -1) == 1;
}

static int aead_encrypt(aead_state *s, uint64_t n, probe_err *err)
{
    int outl = 0, finl = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (!aead_rekey(s))
            return err_ossl(err, "setting IV length, tag length, key and IV failed");
        if (s->ccm && EVP_CipherUpdate(s->ctx, NULL, &outl, NULL, s->len) != 1)
            return err_ossl(err, "setting the CCM message length failed");
        if (EVP_CipherUpdate(s->ctx, NULL, &outl, s->aad, AEAD_AAD_LEN) != 1
            || EVP_CipherUpdate(s->ctx, s->buf, &outl, s->buf, s->len) != 1
            || EVP_CipherFinal_ex(s->ctx, s->buf + outl, &finl) != 1)
            return err_ossl(err, "encryption failed");
        /* The tag is computed by final; fetching it (EVP_CTRL_AEAD_GET_TAG) is left out of the
         * loop: openssl speed skips it and in 3.0 its OSSL_PARAM round trip alone costs ~10%
         * of a 1 KiB AES-GCM op. */
    }
    return 1;
}

static int aead_decrypt(aead_state *s, uint64_t n, probe_err *err)
{
    int outl = 0, finl = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (!aead_rekey(s))
            return err_ossl(err, "setting IV length, tag length, key and IV failed");
        /* openssl speed sets the IV a second time before decrypting; so do we, to match it. */
        if (EVP_CipherInit_ex(s->ctx, NULL, NULL, NULL, s->iv, -1) != 1)
            return err_ossl(err, "setting the IV failed");
        if (EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_SET_TAG, AEAD_TAG_LEN, s->tag) <= 0)
            return err_ossl(err, "setting the expected tag failed");
        if (s->ccm && EVP_CipherUpdate(s->ctx, NULL, &outl, NULL, s->len) != 1)
            return err_ossl(err, "setting the CCM message length failed");
        if (EVP_CipherUpdate(s->ctx, NULL, &outl, s->aad, AEAD_AAD_LEN) != 1)
            return err_ossl(err, "AAD failed");
        if (EVP_CipherUpdate(s->ctx, s->out, &outl, s->buf, s->len) != 1)
            return err_ossl(err, "decryption failed (tag mismatch?)");
        if (EVP_CipherFinal_ex(s->ctx, s->out + outl, &finl) != 1)
            return err_ossl(err, "EVP_CipherFinal_ex failed: tag mismatch");
    }
    return 1;
}

static int aead_run(void *state, uint64_t n, probe_err *err)
{
    aead_state *s = state;
    return s->decrypt ? aead_decrypt(s, n, err) : aead_encrypt(s, n, err);
}

/* A context for direction enc with the cipher fetched once; key and IV come per op. */
static int new_ctx(aead_state *s, int enc, EVP_CIPHER_CTX **out, probe_err *err)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    /* Padding off as openssl speed sets it: every later EVP_CipherInit_ex then re-sends the
     * flag to the provider, a cost its per-op key/IV setup includes. */
    if (ctx == NULL || EVP_CipherInit_ex2(ctx, s->cipher, NULL, NULL, enc, NULL) != 1
        || EVP_CIPHER_CTX_set_padding(ctx, 0) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        return err_ossl(err, "preparing the cipher context failed");
    }
    *out = ctx;
    return 1;
}

static void aead_destroy(void *state)
{
    aead_state *s = state;
    EVP_CIPHER_CTX_free(s->ctx);
    EVP_CIPHER_free(s->cipher);
    free(s->buf);
    free(s->out);
    free(s);
}

int aead_op_setup(const op_request *req, bench_op *op, probe_err *err)
{
    const alg_info *alg = req->alg;
    if (req->size > INT_MAX - 64)
        return err_input(err, "--size %zu too large for %s", req->size, alg->name);
    aead_state *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return err_fail(err, "out of memory");
    s->decrypt = req->op == OP_DECRYPT;
    s->len = (int)req->size;
    s->cipher = EVP_CIPHER_fetch(NULL, alg->ossl_name, NULL);
    if (s->cipher == NULL) {
        aead_destroy(s);
        return err_ossl(err, "EVP_CIPHER_fetch(%s) failed", alg->ossl_name);
    }
    s->ccm = EVP_CIPHER_get_mode(s->cipher) == EVP_CIPH_CCM_MODE;
    s->set_taglen = EVP_CIPHER_get_mode(s->cipher) != EVP_CIPH_GCM_MODE;
    int key_len = EVP_CIPHER_get_key_length(s->cipher);
    s->buf = malloc(req->size + 32);
    s->out = malloc(req->size + 32);
    if (s->buf == NULL || s->out == NULL || key_len <= 0 || key_len > EVP_MAX_KEY_LENGTH) {
        aead_destroy(s);
        return err_fail(err, "cannot set up buffers for %s", alg->name);
    }
    uint64_t r = req->seed;
    splitmix64_fill(&r, s->key, (size_t)key_len);
    splitmix64_fill(&r, s->iv, sizeof(s->iv));
    splitmix64_fill(&r, s->aad, sizeof(s->aad));
    splitmix64_fill(&r, s->buf, req->size);

    if (s->decrypt) {
        /* Encrypt once with the same sequence so the loop decrypts a real ciphertext and tag. */
        if (!new_ctx(s, 1, &s->ctx, err)) {
            aead_destroy(s);
            return 0;
        }
        int ok = aead_encrypt(s, 1, err);
        if (ok && EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_GET_TAG, AEAD_TAG_LEN, s->tag) <= 0)
            ok = err_ossl(err, "getting the tag failed");
        EVP_CIPHER_CTX_free(s->ctx);
        s->ctx = NULL;
        if (!ok) {
            aead_destroy(s);
            return 0;
        }
    }
    if (!new_ctx(s, !s->decrypt, &s->ctx, err)) {
        aead_destroy(s);
        return 0;
    }
    op->run = aead_run;
    op->destroy = aead_destroy;
    op->state = s;
    op->key_bits = 0;
    op->key_source = key_source_name(KEY_GENERATED);
    op->size_bytes = (long long)req->size;
    const char *pre = s->set_taglen ? "set IV length + tag length + key + 12-byte IV"
                                    : "set IV length + key + 12-byte IV";
    if (s->decrypt)
        snprintf(op->detail, sizeof(op->detail), "%s decrypt: %s + IV again + expected 16-byte "
                 "tag%s + 13-byte AAD + decrypt %zu bytes + final (tag checked); the openssl "
                 "speed -aead -decrypt sequence (3.0.16+)", alg->ossl_name, pre,
                 s->ccm ? " + CCM length" : "", req->size);
    else
        snprintf(op->detail, sizeof(op->detail), "%s encrypt: %s%s + 13-byte AAD + encrypt %zu "
                 "bytes in place + final (computes the 16-byte tag; not fetched), the openssl "
                 "speed -aead sequence (3.0.16+): key schedule every op, fixed IV (benchmark only)",
                 alg->ossl_name, pre, s->ccm ? " + CCM length" : "", req->size);
    return 1;
}
