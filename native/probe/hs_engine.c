/* hs_engine: a private key from a PKCS#11 token through the OpenSSL ENGINE "pkcs11" (libp11). */
/* The ENGINE API is deprecated in OpenSSL 3.0 but public; libp11 ships no provider in Debian 12. */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include "hs_engine.h"

#include <stddef.h>
#include <stdlib.h>

#include <openssl/engine.h>
#include <openssl/ui.h>

static ENGINE *engine;

int hs_engine_load_key(const char *uri, EVP_PKEY **out, probe_err *err)
{
    *out = NULL;
    if (engine == NULL) {
        ENGINE *e = ENGINE_by_id("pkcs11");
        if (e == NULL)
            return err_ossl(err, "cannot load the OpenSSL ENGINE \"pkcs11\" for --key %s "
                            "(install the Debian package libengine-pkcs11-openssl)", uri);
        /* The module the engine loads: SECPERF_PKCS11_MODULE (e.g. the secure-element latency
         * shim or SoftHSM2) instead of libp11's default (p11-kit's proxy). */
        const char *module = getenv("SECPERF_PKCS11_MODULE");
        if (module != NULL && *module != '\0'
            && !ENGINE_ctrl_cmd_string(e, "MODULE_PATH", module, 0)) {
            ENGINE_free(e);
            return err_ossl(err, "the pkcs11 engine rejected MODULE_PATH %s", module);
        }
        if (!ENGINE_init(e)) {
            ENGINE_free(e);
            return err_ossl(err, "cannot initialise the OpenSSL ENGINE \"pkcs11\" (is a PKCS#11 "
                            "module configured, e.g. p11-kit or MODULE_PATH?)");
        }
        engine = e;
    }
    /* No UI: a key that needs a PIN must carry pin-value= in the URI instead of prompting. */
    UI_METHOD *ui = UI_create_method("secperf-probe (no prompt)");
    *out = ENGINE_load_private_key(engine, uri, ui, NULL);
    UI_destroy_method(ui);
    if (*out == NULL)
        return err_ossl(err, "cannot load the private key %s through the pkcs11 engine", uri);
    return 1;
}

void hs_engine_release(void)
{
    if (engine != NULL) {
        ENGINE_finish(engine);
        ENGINE_free(engine);
        engine = NULL;
    }
}
