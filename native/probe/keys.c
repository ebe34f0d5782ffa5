/* keys: signature keys from the on-disk cache or freshly generated, and the n,e,d-only RSA key. */
#include "keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

const char *key_source_name(key_source src)
{
    return src == KEY_CACHE ? "cache" : "generated";
}

int keys_keygen_ctx(const alg_info *alg, EVP_PKEY_CTX **out, probe_err *err)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, alg->ossl_name, NULL);
    if (ctx == NULL)
        return err_ossl(err, "EVP_PKEY_CTX_new_from_name(%s) failed", alg->ossl_name);
    if (EVP_PKEY_keygen_init(ctx) <= 0) {
        EVP_PKEY_CTX_free(ctx);
        return err_ossl(err, "EVP_PKEY_keygen_init(%s) failed", alg->name);
    }
    if (alg->family == FAM_RSA && EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, alg->key_bits) <= 0) {
        EVP_PKEY_CTX_free(ctx);
        return err_ossl(err, "setting RSA key size %d failed", alg->key_bits);
    }
    if (alg->param != NULL && EVP_PKEY_CTX_set_group_name(ctx, alg->param) <= 0) {
        EVP_PKEY_CTX_free(ctx);
        return err_ossl(err, "setting group %s failed", alg->param);
    }
    *out = ctx;
    return 1;
}

int keys_generate(const alg_info *alg, EVP_PKEY **out, probe_err *err)
{
    EVP_PKEY_CTX *ctx = NULL;
    if (!keys_keygen_ctx(alg, &ctx, err))
        return 0;
    EVP_PKEY *pkey = NULL;
    int ok = EVP_PKEY_keygen(ctx, &pkey) > 0;
    EVP_PKEY_CTX_free(ctx);
    if (!ok)
        return err_ossl(err, "EVP_PKEY_keygen(%s) failed", alg->name);
    *out = pkey;
    return 1;
}

/* A cached file must hold exactly the key type we would have generated. */
static int key_matches(const alg_info *alg, EVP_PKEY *pkey)
{
    if (!EVP_PKEY_is_a(pkey, alg->ossl_name))
        return 0;
    if (alg->family == FAM_RSA)
        return EVP_PKEY_get_bits(pkey) == alg->key_bits;
    if (alg->param != NULL) {
        char group[80];
        size_t len = 0;
        if (!EVP_PKEY_get_group_name(pkey, group, sizeof(group), &len))
            return 0;
        return strcmp(group, alg->param) == 0;
    }
    return 1;
}

/* mkdir -p with mode 0700 for the components we create. */
static int make_dirs(const char *dir, probe_err *err)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
        return err_input(err, "--key-cache path too long");
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return err_fail(err, "cannot create key cache dir %s: %s", path, strerror(errno));
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return err_fail(err, "cannot create key cache dir %s: %s", path, strerror(errno));
    return 1;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

/* Publishes the finished temp file: link() so a concurrent run's key is never replaced (all
 * runs end up on one key), rename() where the file system has no hard links. */
static int publish(const char *tmp, const char *path, int *lost_race, probe_err *err)
{
    *lost_race = 0;
    if (link(tmp, path) == 0) {
        unlink(tmp);
        return 1;
    }
    int saved = errno;
    if (saved == EEXIST) {
        *lost_race = 1;
        unlink(tmp);
        return 1;
    }
    if (rename(tmp, path) == 0)
        return 1;
    saved = errno;
    unlink(tmp);
    return err_fail(err, "cannot publish %s as %s: %s", tmp, path, strerror(saved));
}

/* Writes the PKCS#8 PEM to a private temp file, then publishes it: readers never see half a
 * key. *lost_race says another run published its key first. */
static int store_key(const char *dir, const char *path, EVP_PKEY *pkey, int *lost_race,
                     probe_err *err)
{
    BIO *mem = BIO_new(BIO_s_mem());
    if (mem == NULL || !PEM_write_bio_PrivateKey(mem, pkey, NULL, NULL, 0, NULL, NULL)) {
        BIO_free(mem);
        return err_ossl(err, "PEM_write_bio_PrivateKey failed");
    }
    char *pem = NULL;
    long pem_len = BIO_get_mem_data(mem, &pem);

    unsigned char rnd[8];
    if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
        BIO_free(mem);
        return err_ossl(err, "RAND_bytes failed");
    }
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s/.tmp-%ld-%02x%02x%02x%02x%02x%02x%02x%02x.pem", dir,
             (long)getpid(), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);

    int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0) {
        BIO_free(mem);
        return err_fail(err, "cannot create %s: %s", tmp, strerror(errno));
    }
    int ok = write_all(fd, pem, (size_t)pem_len) && fsync(fd) == 0;
    int saved = errno;
    ok = (close(fd) == 0) && ok;
    BIO_free(mem);
    if (!ok) {
        unlink(tmp);
        return err_fail(err, "cannot write %s: %s", tmp, strerror(saved));
    }
    return publish(tmp, path, lost_race, err);
}

/* Returns 1 with *out set, 1 with *out NULL when the file does not exist, 0 on error. */
static int load_key(const alg_info *alg, const char *path, EVP_PKEY **out, probe_err *err)
{
    *out = NULL;
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        if (errno == ENOENT)
            return 1;
        return err_fail(err, "cannot open %s: %s", path, strerror(errno));
    }
    BIO *bio = BIO_new_fp(fp, BIO_CLOSE);
    if (bio == NULL) {
        fclose(fp);
        return err_ossl(err, "BIO_new_fp failed");
    }
    EVP_PKEY *pkey = PEM_read_bio_PrivateKey_ex(bio, NULL, NULL, NULL, NULL, NULL);
    BIO_free(bio);
    if (pkey == NULL)
        return err_ossl(err, "cannot read a private key from %s", path);
    if (!key_matches(alg, pkey)) {
        EVP_PKEY_free(pkey);
        return err_fail(err, "%s holds another key type or size than %s needs", path,
                        alg->key_file);
    }
    *out = pkey;
    return 1;
}

static int cached_or_new(const alg_info *alg, const char *dir, EVP_PKEY **out, key_source *src,
                         probe_err *err)
{
    if (dir == NULL) {
        *src = KEY_GENERATED;
        return keys_generate(alg, out, err);
    }
    if (!make_dirs(dir, err))
        return 0;
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s.pem", dir, alg->key_file);
    if (!load_key(alg, path, out, err))
        return 0;
    if (*out != NULL) {
        *src = KEY_CACHE;
        return 1;
    }
    *src = KEY_GENERATED;
    if (!keys_generate(alg, out, err))
        return 0;
    int lost_race = 0;
    if (!store_key(dir, path, *out, &lost_race, err)) {
        EVP_PKEY_free(*out);
        *out = NULL;
        return 0;
    }
    if (!lost_race)
        return 1;
    /* Another run stored its key while we generated ours: use that one. */
    EVP_PKEY_free(*out);
    *src = KEY_CACHE;
    if (!load_key(alg, path, out, err))
        return 0;
    return *out != NULL ? 1 : err_fail(err, "%s vanished after a concurrent write", path);
}

/* Rebuilds the key from n, e, d alone so OpenSSL's private operation cannot use CRT. */
static int strip_crt(EVP_PKEY *crt, EVP_PKEY **out, probe_err *err)
{
    BIGNUM *n = NULL, *e = NULL, *d = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    int ok = 0;

    *out = NULL;
    if (!EVP_PKEY_get_bn_param(crt, OSSL_PKEY_PARAM_RSA_N, &n)
        || !EVP_PKEY_get_bn_param(crt, OSSL_PKEY_PARAM_RSA_E, &e)
        || !EVP_PKEY_get_bn_param(crt, OSSL_PKEY_PARAM_RSA_D, &d)) {
        err_ossl(err, "reading n, e, d from the RSA key failed");
        goto done;
    }
    bld = OSSL_PARAM_BLD_new();
    if (bld == NULL || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n)
        || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e)
        || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_D, d)
        || (params = OSSL_PARAM_BLD_to_param(bld)) == NULL) {
        err_ossl(err, "building n, e, d params failed");
        goto done;
    }
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0
        || EVP_PKEY_fromdata(ctx, out, EVP_PKEY_KEYPAIR, params) <= 0) {
        err_ossl(err, "EVP_PKEY_fromdata(n, e, d) failed");
        goto done;
    }
    ok = 1;
done:
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_clear_free(d);
    BN_free(e);
    BN_free(n);
    return ok;
}

int keys_signing_key(const alg_info *alg, const char *cache_dir, EVP_PKEY **out,
                     key_source *src, probe_err *err)
{
    EVP_PKEY *pkey = NULL;
    if (!cached_or_new(alg, cache_dir, &pkey, src, err))
        return 0;
    if (alg->family != FAM_RSA || alg->variant != RSA_NOCRT) {
        *out = pkey;
        return 1;
    }
    int ok = strip_crt(pkey, out, err);
    EVP_PKEY_free(pkey);
    return ok;
}
