/* hs_ctx: the SSL_CTX of the client and of the server, configured from their arguments. */
#include "hs_ctx.h"

#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>

#include "hs_cookie.h"
#include "hs_engine.h"
#include "hs_trace.h"

static int ctx_idx = -1; /* SSL_CTX ex data: hs_tls_ctx * */

/* The first queued OpenSSL reason, for bad-input messages (which must stay one line). */
static const char *first_reason(void)
{
    unsigned long e = ERR_peek_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    return r ? r : "rejected";
}

static int set_lists(SSL_CTX *ctx, const hs_tls_opts *o, probe_err *err)
{
    if (o->ciphers && !SSL_CTX_set_cipher_list(ctx, o->ciphers))
        return err_input(err, "--ciphers '%s' not accepted by OpenSSL: %s", o->ciphers,
                         first_reason());
    if (o->ciphersuites && !SSL_CTX_set_ciphersuites(ctx, o->ciphersuites))
        return err_input(err, "--ciphersuites '%s' not accepted by OpenSSL: %s", o->ciphersuites,
                         first_reason());
    if (o->groups && !SSL_CTX_set1_groups_list(ctx, o->groups))
        return err_input(err, "--groups '%s' not accepted by OpenSSL: %s", o->groups,
                         first_reason());
    if (o->sigalgs && !SSL_CTX_set1_sigalgs_list(ctx, o->sigalgs))
        return err_input(err, "--sigalgs '%s' not accepted by OpenSSL: %s", o->sigalgs,
                         first_reason());
    ERR_clear_error();
    return 1;
}

static int set_versions(SSL_CTX *ctx, const hs_tls_opts *o, probe_err *err)
{
    int v = 0;
    if (o->proto == HS_DTLS)
        v = o->version == HS_V_12 ? DTLS1_2_VERSION : 0;
    else if (o->version == HS_V_12)
        v = TLS1_2_VERSION;
    else if (o->version == HS_V_13)
        v = TLS1_3_VERSION;
    if (v != 0 && (!SSL_CTX_set_min_proto_version(ctx, v) || !SSL_CTX_set_max_proto_version(ctx, v)))
        return err_ossl(err, "cannot restrict the protocol version");
    return 1;
}

static int load_chain_file(SSL_CTX *ctx, const char *file, probe_err *err)
{
    BIO *b = BIO_new_file(file, "r");
    if (b == NULL)
        return err_ossl(err, "cannot open --chain %s", file);
    int n = 0;
    X509 *x;
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        if (!SSL_CTX_add0_chain_cert(ctx, x)) {
            X509_free(x);
            BIO_free(b);
            return err_ossl(err, "cannot add a certificate of --chain %s", file);
        }
        n++;
    }
    BIO_free(b);
    ERR_clear_error(); /* the read that ended the loop */
    if (n == 0)
        return err_fail(err, "--chain %s holds no PEM certificate", file);
    return 1;
}

static int load_identity(hs_tls_ctx *c, const hs_tls_opts *o, probe_err *err)
{
    SSL_CTX *ctx = c->ctx;
    if (o->cert == NULL)
        return 1;
    if (!SSL_CTX_use_certificate_chain_file(ctx, o->cert))
        return err_ossl(err, "cannot load --cert %s", o->cert);
    if (o->chain && !load_chain_file(ctx, o->chain, err))
        return 0;
    if (strncmp(o->key, "pkcs11:", 7) == 0) {
        EVP_PKEY *k = NULL;
        if (!hs_engine_load_key(o->key, &k, err))
            return 0;
        c->uses_engine = 1;
        int ok = SSL_CTX_use_PrivateKey(ctx, k);
        EVP_PKEY_free(k);
        if (!ok)
            return err_ossl(err, "cannot use the pkcs11 key %s", o->key);
    } else if (!SSL_CTX_use_PrivateKey_file(ctx, o->key, SSL_FILETYPE_PEM)) {
        return err_ossl(err, "cannot load --key %s", o->key);
    }
    if (!SSL_CTX_check_private_key(ctx))
        return err_ossl(err, "--key %s does not match --cert %s", o->key, o->cert);
    return 1;
}

static int common(hs_tls_ctx *c, const SSL_METHOD *method, const hs_tls_opts *o, probe_err *err)
{
    c->ctx = SSL_CTX_new(method);
    if (c->ctx == NULL)
        return err_ossl(err, "SSL_CTX_new failed");
    if (ctx_idx < 0)
        ctx_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    if (ctx_idx < 0 || !SSL_CTX_set_ex_data(c->ctx, ctx_idx, c))
        return err_ossl(err, "SSL_CTX ex data failed");
    if (!set_versions(c->ctx, o, err) || !set_lists(c->ctx, o, err))
        return 0;
    /* The certificate chain sent is exactly --cert (+ --chain), never completed from --ca. */
    SSL_CTX_set_mode(c->ctx, SSL_MODE_NO_AUTO_CHAIN);
    if (o->ca && !SSL_CTX_load_verify_locations(c->ctx, o->ca, NULL))
        return err_ossl(err, "cannot load --ca %s", o->ca);
    if (o->psk_identity) {
        c->has_psk = 1;
        c->psk.identity = o->psk_identity;
        memcpy(c->psk.key, o->psk, o->psk_len);
        c->psk.key_len = o->psk_len;
    }
    return load_identity(c, o, err) && hs_trace_install(c->ctx, err);
}

/* Keeps the newest session (a TLS 1.3 ticket or a TLS 1.2 session) for the next resumption. */
static int new_session_cb(SSL *ssl, SSL_SESSION *sess)
{
    hs_tls_ctx *c = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ctx_idx);
    if (c == NULL)
        return 0;
    SSL_SESSION_free(c->latest);
    c->latest = sess;
    c->new_sessions++;
    return 1; /* we keep the reference */
}

int hs_ctx_client(const hs_client_args *a, hs_tls_ctx *c, probe_err *err)
{
    memset(c, 0, sizeof(*c));
    const hs_tls_opts *o = &a->tls;
    const SSL_METHOD *m = o->proto == HS_DTLS ? DTLS_client_method() : TLS_client_method();
    if (!common(c, m, o, err))
        return 0;
    SSL_CTX *ctx = c->ctx;
    SSL_CTX_set_verify(ctx, o->ca ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (a->mode == HS_RESUME_TICKET || a->mode == HS_RESUME_ID || a->mode == HS_0RTT) {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(ctx, new_session_cb);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    }
    if (a->mode == HS_RESUME_ID)
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    if (a->mode == HS_PSK || a->mode == HS_PSK_DHE) {
        int tls13 = o->version == HS_V_13;
        if (!tls13 && o->ciphers == NULL) {
            /* TLS 1.2 external PSK: plain PSK, or ECDHE-PSK (no GCM variant exists). */
            const char *list = a->mode == HS_PSK ? "PSK-AES128-GCM-SHA256"
                                                 : "ECDHE-PSK-AES128-CBC-SHA256";
            if (!SSL_CTX_set_cipher_list(ctx, list))
                return err_ossl(err, "cannot set the TLS 1.2 PSK cipher list %s", list);
        }
        /* A TLS 1.3 PSK fixes the hash (SHA-256 here): offer only suites that can use it, or
         * a server picking TLS_AES_256_GCM_SHA384 would ignore the PSK. */
        if (tls13 && o->ciphersuites == NULL
            && !SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"))
            return err_ossl(err, "cannot set the TLS 1.3 PSK suites");
        if (!hs_psk_client(ctx, &c->psk, tls13 && a->mode == HS_PSK, err))
            return 0;
    }
    return 1;
}

int hs_ctx_server(const hs_server_args *a, hs_tls_ctx *c, probe_err *err)
{
    memset(c, 0, sizeof(*c));
    const hs_tls_opts *o = &a->tls;
    const SSL_METHOD *m = o->proto == HS_DTLS ? DTLS_server_method() : TLS_server_method();
    if (!common(c, m, o, err))
        return 0;
    SSL_CTX *ctx = c->ctx;
    static const unsigned char sid_ctx[] = "secperf-probe";
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1);
    if (a->verify_client) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(o->ca);
        if (names == NULL)
            return err_ossl(err, "cannot read CA names from --ca %s", o->ca);
        SSL_CTX_set_client_CA_list(ctx, names);
    }
    SSL_CTX_set_num_tickets(ctx, a->tickets);
    if (a->no_tickets)
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    if (a->no_anti_replay)
        SSL_CTX_set_options(ctx, SSL_OP_NO_ANTI_REPLAY);
    SSL_CTX_set_session_cache_mode(ctx, a->session_cache ? SSL_SESS_CACHE_SERVER : SSL_SESS_CACHE_OFF);
    if (a->early_data > 0
        && (!SSL_CTX_set_max_early_data(ctx, a->early_data)
            || !SSL_CTX_set_recv_max_early_data(ctx, a->early_data)))
        return err_ossl(err, "cannot set --early-data %u", (unsigned)a->early_data);
    if (c->has_psk) {
        if (o->ciphers == NULL && !SSL_CTX_set_cipher_list(ctx, "DEFAULT:PSK"))
            return err_ossl(err, "cannot add the PSK suites to the cipher list");
        if (!hs_psk_server(ctx, &c->psk, err))
            return 0;
    }
    if (o->proto == HS_DTLS && !hs_cookie_install(ctx, err))
        return 0;
    return 1;
}

void hs_ctx_free(hs_tls_ctx *c)
{
    SSL_SESSION_free(c->latest);
    c->latest = NULL;
    hs_psk_free(&c->psk);
    SSL_CTX_free(c->ctx);
    c->ctx = NULL;
    if (c->uses_engine)
        hs_engine_release();
}
