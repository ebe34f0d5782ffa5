/* crypto_only: the fixed-seed generator and the no-TLS backend of the primitives-only guest clients
 * (see crypto_only.h). */
#include "crypto_only.h"

#include <stdio.h>

#include "backend.h"

uint64_t sp_fixed_rng;

void sp_fixed_random(uint8_t *out, size_t n)
{
    while (n > 0) {
        uint64_t z = (sp_fixed_rng += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        for (int i = 0; i < 8 && n > 0; i++, n--)
            *out++ = (uint8_t)(z >> (8 * i));
    }
}

static const char *only_offers(void) { return "{\"tls\":[],\"groups\":[],\"suites\":[],\"modes\":[],\"mtls\":0}"; }
static int st_dummy;
static void *only_setup(const struct sp_config *cfg, char *err, size_t errlen)
{
    if (cfg != NULL) {
        snprintf(err, errlen, "the %s build has no TLS: use --crypto", sp_only_display);
        return NULL;
    }
    return &st_dummy;
}
static int only_none(void *st, char *err, size_t errlen)
{
    (void)st;
    snprintf(err, errlen, "the %s build has no TLS", sp_only_display);
    return -1;
}
static int only_prepare(void *st, struct sp_recio *io, char *err, size_t errlen)
{
    (void)io;
    return only_none(st, err, errlen);
}
static int only_app(void *st, size_t *n, char *err, size_t errlen)
{
    (void)n;
    return only_none(st, err, errlen);
}
static void only_finish(void *st, struct sp_conn_info *info) { (void)st, (void)info; }
static void only_cleanup(void *st) { (void)st; }

const struct sp_backend sp_backend = {
    .name = sp_only_name,
    .library = sp_only_library,
    .offers = only_offers,
    .setup = only_setup,
    .prepare = only_prepare,
    .handshake = only_none,
    .app = only_app,
    .finish = only_finish,
    .cleanup = only_cleanup,
    .crypto = sp_only_op,
    .crypto_ops = sp_only_ops,
};
