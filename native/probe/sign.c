/* sign: the `sign` subcommand (one signature + public key, for cross-checking elsewhere). */
#include "sign.h"

#include <stdio.h>

#include <openssl/bio.h>
#include <openssl/pem.h>

#include "json.h"
#include "ops_sig.h"

/* The SubjectPublicKeyInfo PEM of pkey as a NUL-terminated string in a memory BIO. */
static int public_pem(EVP_PKEY *pkey, BIO **bio, const char **pem, probe_err *err)
{
    *bio = BIO_new(BIO_s_mem());
    if (*bio == NULL || !PEM_write_bio_PUBKEY(*bio, pkey) || BIO_write(*bio, "", 1) != 1)
        return err_ossl(err, "PEM_write_bio_PUBKEY failed");
    char *data = NULL;
    BIO_get_mem_data(*bio, &data);
    *pem = data;
    return 1;
}

int sign_main(const probe_args *a, probe_err *err)
{
    sig_params p = {a->alg, 0, a->hash, 0, a->msg, a->msg_len, a->key_cache};
    sig_state s;
    BIO *bio = NULL;
    const char *pem = NULL;
    int ok = sig_state_init(&s, &p, err) && sig_sign_once(&s, err)
             && public_pem(s.pkey, &bio, &pem, err);
    if (ok) {
        FILE *f = stdout;
        fputs("{\"type\":\"signature\",\"alg\":", f);
        json_str(f, a->alg->name);
        fputs(",\"hash\":", f);
        json_str(f, a->alg->family == FAM_EDDSA ? NULL : a->hash);
        fputs(",\"signature_hex\":", f);
        json_hex(f, s.sig, s.sig_len);
        fputs(",\"public_key_pem\":", f);
        json_str(f, pem);
        fputs(",\"key_source\":", f);
        json_str(f, key_source_name(s.key_src));
        json_end_line(f);
    }
    BIO_free(bio);
    sig_state_free(&s);
    return ok;
}
