/* secperf-shim-bench: the per-call overhead of the se_shim PKCS#11 module.
 *
 * Times N calls each of C_GetSessionInfo and C_GenerateRandom (16 bytes) against the real module
 * directly and through the shim (SECPERF_SE_PROFILE set by the caller, normally to a profile with
 * no delays), alternating direct and shim for --rounds rounds, and prints one JSON line with the
 * median ns per call of both and their difference.
 *
 *   secperf-shim-bench --direct /usr/lib/softhsm/libsofthsm2.so --shim libsecperf_se_shim.so
 *                      [--n 20000] [--rounds 3] [--pin 1234] [--token-label t1]
 *
 * The two modules are used one after the other (each finalized and unloaded before the other
 * loads), because the shim loads the same real module into the process. */
#include <p11-kit/pkcs11.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "json.h"
#include "opts.h"

static inline int64_t now_ns(void) { return clock_mono_ns(); }

static void usage(void)
{
    fprintf(stderr, "usage: secperf-shim-bench --direct MODULE --shim SHIM_MODULE [--n N] [--rounds R]\n"
                    "                          [--pin PIN] [--token-label LABEL]\n"
                    "SECPERF_SE_PROFILE must name the shim's profile (normally one without delays).\n");
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t median(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct opts {
    const char *direct, *shim, *pin, *label;
    size_t n;
    int rounds;
};

/* The label of a token is 32 bytes padded with blanks. */
static int label_matches(const unsigned char *tok_label, const char *want)
{
    size_t len = 32;
    while (len > 0 && tok_label[len - 1] == ' ')
        len--;
    return strlen(want) == len && memcmp(tok_label, want, len) == 0;
}

#define CHECK(call, what)                                                                      \
    do {                                                                                       \
        CK_RV rv_ = (call);                                                                    \
        if (rv_ != CKR_OK) {                                                                   \
            fprintf(stderr, "secperf-shim-bench: %s: %s failed: rv 0x%lx\n", path, what,       \
                    (unsigned long)rv_);                                                       \
            goto fail;                                                                         \
        }                                                                                      \
    } while (0)

/* Loads PATH, opens a session on the chosen token and appends n samples per function at
 * gsi + off and rnd + off. Returns 0 on success. */
static int run_module(const char *path, const struct opts *o, int64_t *gsi, int64_t *rnd)
{
    int rc = -1, inited = 0;
    CK_SLOT_ID *slots = NULL;
    CK_SESSION_HANDLE h = CK_INVALID_HANDLE;
    CK_FUNCTION_LIST_PTR f = NULL;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "secperf-shim-bench: cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    void *sym = dlsym(lib, "C_GetFunctionList");
    if (!sym) {
        fprintf(stderr, "secperf-shim-bench: %s has no C_GetFunctionList\n", path);
        goto fail;
    }
    CK_C_GetFunctionList gfl;
    memcpy(&gfl, &sym, sizeof gfl);
    CHECK(gfl(&f), "C_GetFunctionList");
    CK_C_INITIALIZE_ARGS args;
    memset(&args, 0, sizeof args);
    args.flags = CKF_OS_LOCKING_OK;
    CHECK(f->C_Initialize(&args), "C_Initialize");
    inited = 1;

    CK_ULONG nslots = 0;
    CHECK(f->C_GetSlotList(CK_TRUE, NULL, &nslots), "C_GetSlotList");
    slots = calloc(nslots ? nslots : 1, sizeof *slots);
    if (!slots)
        goto fail;
    CHECK(f->C_GetSlotList(CK_TRUE, slots, &nslots), "C_GetSlotList");
    CK_SLOT_ID slot = 0;
    int found = 0;
    for (CK_ULONG i = 0; i < nslots && !found; i++) {
        CK_TOKEN_INFO ti;
        if (f->C_GetTokenInfo(slots[i], &ti) != CKR_OK || !(ti.flags & CKF_TOKEN_INITIALIZED))
            continue;
        if (o->label && !label_matches(ti.label, o->label))
            continue;
        slot = slots[i];
        found = 1;
    }
    if (!found) {
        fprintf(stderr, "secperf-shim-bench: %s: no initialized token%s%s\n", path,
                o->label ? " labelled " : "", o->label ? o->label : "");
        goto fail;
    }
    CHECK(f->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &h), "C_OpenSession");
    if (o->pin) {
        CK_RV rv = f->C_Login(h, CKU_USER, (CK_UTF8CHAR_PTR)o->pin, (CK_ULONG)strlen(o->pin));
        if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN) {
            fprintf(stderr, "secperf-shim-bench: %s: C_Login failed: rv 0x%lx\n", path, (unsigned long)rv);
            goto fail;
        }
    }
    CK_SESSION_INFO si;
    unsigned char buf[16];
    size_t warm = o->n / 10 + 100;
    for (size_t i = 0; i < warm; i++) {
        CHECK(f->C_GetSessionInfo(h, &si), "C_GetSessionInfo");
        CHECK(f->C_GenerateRandom(h, buf, sizeof buf), "C_GenerateRandom");
    }
    for (size_t i = 0; i < o->n; i++) {
        int64_t t0 = now_ns();
        CK_RV rv = f->C_GetSessionInfo(h, &si);
        int64_t t1 = now_ns();
        CHECK(rv, "C_GetSessionInfo");
        gsi[i] = t1 - t0;
    }
    for (size_t i = 0; i < o->n; i++) {
        int64_t t0 = now_ns();
        CK_RV rv = f->C_GenerateRandom(h, buf, sizeof buf);
        int64_t t1 = now_ns();
        CHECK(rv, "C_GenerateRandom");
        rnd[i] = t1 - t0;
    }
    rc = 0;
fail:
    if (h != CK_INVALID_HANDLE)
        f->C_CloseSession(h);
    if (inited)
        f->C_Finalize(NULL);
    free(slots);
    dlclose(lib);
    return rc;
}

enum { OPT_DIRECT = 256, OPT_SHIM, OPT_PIN, OPT_TOKEN_LABEL, OPT_N, OPT_ROUNDS, OPT_HELP };

static const struct option bench_options[] = {
    {"direct", required_argument, NULL, OPT_DIRECT},
    {"shim", required_argument, NULL, OPT_SHIM},
    {"pin", required_argument, NULL, OPT_PIN},
    {"token-label", required_argument, NULL, OPT_TOKEN_LABEL},
    {"n", required_argument, NULL, OPT_N},
    {"rounds", required_argument, NULL, OPT_ROUNDS},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

int main(int argc, char **argv)
{
    struct opts o = {.n = 20000, .rounds = 3};
    opt_parser p;
    opt_init(&p, argc, argv, "h", bench_options);
    char err[512];
    int opt;
    uint64_t u;
    while ((opt = opt_next(&p, err, sizeof err)) != 0) {
        int rc = 0;
        switch (opt) {
        case 'h':
        case OPT_HELP:
            usage();
            return 0;
        case OPT_DIRECT: o.direct = p.arg; break;
        case OPT_SHIM: o.shim = p.arg; break;
        case OPT_PIN: o.pin = p.arg; break;
        case OPT_TOKEN_LABEL: o.label = p.arg; break;
        case OPT_N:
            if ((rc = opt_u64(p.name, p.arg, 1, 100000000, &u, err, sizeof err)) == 0)
                o.n = (size_t)u;
            break;
        case OPT_ROUNDS:
            if ((rc = opt_u64(p.name, p.arg, 1, 1000, &u, err, sizeof err)) == 0)
                o.rounds = (int)u;
            break;
        default: rc = -1; /* opt_next's message */
        }
        if (rc < 0) {
            fprintf(stderr, "secperf-shim-bench: %s\n", err);
            return 2;
        }
    }
    if (!o.direct || !o.shim) {
        usage();
        return 2;
    }
    if (!getenv("SECPERF_SE_PROFILE"))
        fprintf(stderr, "secperf-shim-bench: warning: SECPERF_SE_PROFILE is not set; the shim will refuse to initialize\n");

    size_t total = o.n * (size_t)o.rounds;
    int64_t *s[4]; /* direct gsi, direct rnd, shim gsi, shim rnd */
    for (int k = 0; k < 4; k++) {
        s[k] = calloc(total, sizeof(int64_t));
        if (!s[k]) {
            fprintf(stderr, "secperf-shim-bench: out of memory\n");
            while (k-- > 0)
                free(s[k]);
            return 1;
        }
    }
    for (int r = 0; r < o.rounds; r++) {
        size_t off = (size_t)r * o.n;
        if (run_module(o.direct, &o, s[0] + off, s[1] + off) != 0)
            return 1;
        if (run_module(o.shim, &o, s[2] + off, s[3] + off) != 0)
            return 1;
    }
    int64_t m[4];
    for (int k = 0; k < 4; k++)
        m[k] = median(s[k], total);
    static const char *const fns[2] = {"C_GetSessionInfo", "C_GenerateRandom"};
    json_obj out, sub;
    json_obj_begin(&out, stdout);
    json_obj_u64(&out, "n", o.n);
    json_obj_i64(&out, "rounds", o.rounds);
    json_obj_str(&out, "direct", o.direct);
    json_obj_str(&out, "shim", o.shim);
    static const char *const groups[3] = {"direct_ns", "shim_ns", "overhead_ns"};
    for (int g = 0; g < 3; g++) {
        json_obj_key(&out, groups[g]);
        json_obj_begin(&sub, stdout);
        for (int k = 0; k < 2; k++)
            json_obj_i64(&sub, fns[k], g == 0 ? m[k] : g == 1 ? m[2 + k] : m[2 + k] - m[k]);
        json_obj_close(&sub);
    }
    json_end_line(stdout);
    for (int k = 0; k < 4; k++)
        free(s[k]);
    return 0;
}
