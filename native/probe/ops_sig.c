/* ops_sig: RSA, ECDSA and EdDSA sign/verify, shared by the speed loop and the sign subcommand. */
#include "ops_sig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rsa.h>

#include "ops.h"
#include "rng.h"

static const char *md_name(const char *hash)
{
    return strcmp(hash, "sha1") == 0 ? "SHA1" : "SHA2-256";
}

static const char *md_label(const char *hash)
{
    return strcmp(hash, "sha1") == 0 ? "SHA-1" : "SHA-256";
}

static int is_eddsa(const sig_state *s)
{
    return s->alg->family == FAM_EDDSA;
}

/* The per-op digest of the message, on the reused context with the prefetched MD. */
static inline int digest_msg(sig_state *s)
{
    unsigned int len = 0;
    if (EVP_DigestInit_ex2(s->md_ctx, s->md, NULL) != 1
        || EVP_DigestUpdate(s->md_ctx, s->msg, s->msg_len) != 1
        || EVP_DigestFinal_ex(s->md_ctx, s->dgst, &len) != 1)
        return 0;
    s->dgst_len = len;
    return 1;
}

/* Sign or verify context with padding and digest set once, as openssl speed prepares it. */
static int prepare_pkey_ctx(sig_state *s, int verify, EVP_PKEY_CTX **out, probe_err *err)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, s->pkey, NULL);
    if (ctx == NULL)
        return err_ossl(err, "EVP_PKEY_CTX_new_from_pkey failed");
    int ok = verify ? EVP_PKEY_verify_init(ctx) > 0 : EVP_PKEY_sign_init(ctx) > 0;
    if (!ok) {
        EVP_PKEY_CTX_free(ctx);
        return err_ossl(err, "EVP_PKEY_%s_init failed", verify ? "verify" : "sign");
    }
    if (s->alg->family == FAM_RSA) {
        int pss = s->alg->variant == RSA_PSS;
        if (EVP_PKEY_CTX_set_rsa_padding(ctx, pss ? RSA_PKCS1_PSS_PADDING : RSA_PKCS1_PADDING) <= 0
            || (pss && EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, RSA_PSS_SALTLEN_DIGEST) <= 0)
            || (pss && EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, s->md) <= 0)) {
            EVP_PKEY_CTX_free(ctx);
            return err_ossl(err, "setting RSA padding failed");
        }
    }
    if (EVP_PKEY_CTX_set_signature_md(ctx, s->md) <= 0) {
        EVP_PKEY_CTX_free(ctx);
        return err_ossl(err, "EVP_PKEY_CTX_set_signature_md failed");
    }
    *out = ctx;
    return 1;
}

static int prepare_ed_ctx(sig_state *s, int verify, EVP_MD_CTX **out, probe_err *err)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL)
        return err_ossl(err, "EVP_MD_CTX_new failed");
    int ok = verify ? EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, s->pkey) == 1
                    : EVP_DigestSignInit(ctx, NULL, NULL, NULL, s->pkey) == 1;
    if (!ok) {
        EVP_MD_CTX_free(ctx);
        return err_ossl(err, "EVP_Digest%sInit failed", verify ? "Verify" : "Sign");
    }
    *out = ctx;
    return 1;
}

static int run_pkey_sign(sig_state *s, uint64_t n, probe_err *err)
{
    for (uint64_t i = 0; i < n; i++) {
        if (!s->prehashed && !digest_msg(s))
            return err_ossl(err, "message digest failed");
        s->sig_len = s->sig_cap;
        if (EVP_PKEY_sign(s->pkey_ctx, s->sig, &s->sig_len, s->dgst, s->dgst_len) <= 0)
            return err_ossl(err, "EVP_PKEY_sign failed");
    }
    return 1;
}

static int run_pkey_verify(sig_state *s, uint64_t n, probe_err *err)
{
    for (uint64_t i = 0; i < n; i++) {
        if (!s->prehashed && !digest_msg(s))
            return err_ossl(err, "message digest failed");
        int r = EVP_PKEY_verify(s->pkey_ctx, s->sig, s->sig_len, s->dgst, s->dgst_len);
        if (r != 1)
            return err_ossl(err, "EVP_PKEY_verify returned %d", r);
    }
    return 1;
}

static int run_ed_sign(sig_state *s, uint64_t n, probe_err *err)
{
    for (uint64_t i = 0; i < n; i++) {
        s->sig_len = s->sig_cap;
        if (EVP_DigestSign(s->ed_ctx, s->sig, &s->sig_len, s->msg, s->msg_len) != 1)
            return err_ossl(err, "EVP_DigestSign failed");
    }
    return 1;
}

static int run_ed_verify(sig_state *s, uint64_t n, probe_err *err)
{
    for (uint64_t i = 0; i < n; i++) {
        int r = EVP_DigestVerify(s->ed_ctx, s->sig, s->sig_len, s->msg, s->msg_len);
        if (r != 1)
            return err_ossl(err, "EVP_DigestVerify returned %d", r);
    }
    return 1;
}

int sig_run(void *state, uint64_t n, probe_err *err)
{
    sig_state *s = state;
    if (is_eddsa(s))
        return s->verify ? run_ed_verify(s, n, err) : run_ed_sign(s, n, err);
    return s->verify ? run_pkey_verify(s, n, err) : run_pkey_sign(s, n, err);
}

int sig_sign_once(sig_state *s, probe_err *err)
{
    if (s->verify)
        return err_fail(err, "sig_sign_once on a verify state");
    return sig_run(s, 1, err);
}

/* Makes the signature the verify loop checks, with a sign context of its own. */
static int make_reference_signature(sig_state *s, probe_err *err)
{
    int ok;
    if (is_eddsa(s)) {
        EVP_MD_CTX *ctx = NULL;
        if (!prepare_ed_ctx(s, 0, &ctx, err))
            return 0;
        s->sig_len = s->sig_cap;
        ok = EVP_DigestSign(ctx, s->sig, &s->sig_len, s->msg, s->msg_len) == 1;
        EVP_MD_CTX_free(ctx);
        return ok ? 1 : err_ossl(err, "EVP_DigestSign (reference signature) failed");
    }
    EVP_PKEY_CTX *ctx = NULL;
    if (!prepare_pkey_ctx(s, 0, &ctx, err))
        return 0;
    s->sig_len = s->sig_cap;
    ok = EVP_PKEY_sign(ctx, s->sig, &s->sig_len, s->dgst, s->dgst_len) > 0;
    EVP_PKEY_CTX_free(ctx);
    return ok ? 1 : err_ossl(err, "EVP_PKEY_sign (reference signature) failed");
}

int sig_state_init(sig_state *s, const sig_params *p, probe_err *err)
{
    memset(s, 0, sizeof(*s));
    s->alg = p->alg;
    s->verify = p->verify;
    s->prehashed = p->prehashed && p->alg->family != FAM_EDDSA;

    /* At least one byte so malloc(0) never decides the outcome. */
    s->msg = malloc(p->msg_len ? p->msg_len : 1);
    if (s->msg == NULL)
        return err_fail(err, "out of memory for the message");
    if (p->msg_len)
        memcpy(s->msg, p->msg, p->msg_len);
    s->msg_len = p->msg_len;

    if (!keys_signing_key(p->alg, p->key_cache, &s->pkey, &s->key_src, err))
        return 0;
    s->sig_cap = (size_t)EVP_PKEY_get_size(s->pkey);
    s->sig = malloc(s->sig_cap);
    if (s->sig == NULL)
        return err_fail(err, "out of memory for the signature");

    if (is_eddsa(s)) {
        if (s->verify && !make_reference_signature(s, err))
            return 0;
        return prepare_ed_ctx(s, s->verify, &s->ed_ctx, err);
    }

    s->md = EVP_MD_fetch(NULL, md_name(p->hash), NULL);
    s->md_ctx = EVP_MD_CTX_new();
    if (s->md == NULL || s->md_ctx == NULL)
        return err_ossl(err, "fetching %s failed", md_name(p->hash));
    /* Computed here too: with --prehashed this is the digest the loop signs. */
    if (!digest_msg(s))
        return err_ossl(err, "message digest failed");
    if (s->verify && !make_reference_signature(s, err))
        return 0;
    return prepare_pkey_ctx(s, s->verify, &s->pkey_ctx, err);
}

void sig_state_free(sig_state *s)
{
    EVP_MD_CTX_free(s->ed_ctx);
    EVP_PKEY_CTX_free(s->pkey_ctx);
    EVP_MD_CTX_free(s->md_ctx);
    EVP_MD_free(s->md);
    EVP_PKEY_free(s->pkey);
    free(s->sig);
    free(s->msg);
    memset(s, 0, sizeof(*s));
}

static void sig_destroy(void *state)
{
    sig_state_free(state);
    free(state);
}

static void describe(const sig_state *s, const op_request *req, char *buf, size_t bufsz)
{
    const char *verb = s->verify ? "verify" : "sign";
    if (is_eddsa(s)) {
        snprintf(buf, bufsz, "EVP_Digest%s (PureEdDSA %s) of a %zu-byte message on a context "
                 "initialised once", s->verify ? "Verify" : "Sign",
                 strcmp(s->alg->name, "ed25519") == 0 ? "Ed25519" : "Ed448", s->msg_len);
        return;
    }
    char scheme[96];
    if (s->alg->family == FAM_RSA)
        snprintf(scheme, sizeof(scheme), "RSA-%d %s", s->alg->key_bits,
                 s->alg->variant == RSA_PSS ? "PSS (salt = digest length, MGF1 same hash)"
                 : s->alg->variant == RSA_NOCRT ? "PKCS#1 v1.5, n,e,d-only key (no CRT)"
                                                : "PKCS#1 v1.5, CRT key");
    else
        snprintf(scheme, sizeof(scheme), "ECDSA %s, DER signature", s->alg->param);
    if (s->prehashed)
        snprintf(buf, bufsz, "EVP_PKEY_%s (%s) of a %s digest computed once before timing "
                 "(%zu-byte message), on a prepared context", verb, scheme,
                 md_label(req->hash), s->msg_len);
    else
        snprintf(buf, bufsz, "%s of a %zu-byte message + EVP_PKEY_%s (%s) on a prepared "
                 "context", md_label(req->hash), s->msg_len, verb, scheme);
}

int sig_op_setup(const op_request *req, bench_op *op, probe_err *err)
{
    sig_state *s = calloc(1, sizeof(*s));
    unsigned char *msg = malloc(req->size);
    if (s == NULL || msg == NULL) {
        free(s);
        free(msg);
        return err_fail(err, "out of memory");
    }
    uint64_t r = req->seed;
    splitmix64_fill(&r, msg, req->size);
    sig_params p = {req->alg, req->op == OP_VERIFY, req->hash, req->prehashed, msg, req->size,
                    req->key_cache};
    int ok = sig_state_init(s, &p, err);
    free(msg);
    if (!ok) {
        sig_destroy(s);
        return 0;
    }
    op->run = sig_run;
    op->destroy = sig_destroy;
    op->state = s;
    op->key_bits = s->alg->family == FAM_RSA ? EVP_PKEY_get_bits(s->pkey) : s->alg->key_bits;
    op->key_source = key_source_name(s->key_src);
    op->hash = is_eddsa(s) ? NULL : req->hash;
    op->prehashed = s->prehashed;
    op->size_bytes = (long long)req->size;
    describe(s, req, op->detail, sizeof(op->detail));
    return 1;
}
