/* profile: the secure-element latency profile (SECPERF_SE_PROFILE), its parser and the delay
 * distributions (drawn from the common xoshiro256**, seeded by the profile's seed). See README.md in this
 * directory for the format. */
#ifndef SECPERF_SE_SHIM_PROFILE_H
#define SECPERF_SE_SHIM_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

/* PKCS#11 2.40 functions in CK_FUNCTION_LIST order; the index is SE_FN_<name>. */
#define SE_FUNCTIONS(X)                                                                          \
    X(C_Initialize) X(C_Finalize) X(C_GetInfo) X(C_GetFunctionList) X(C_GetSlotList)             \
    X(C_GetSlotInfo) X(C_GetTokenInfo) X(C_GetMechanismList) X(C_GetMechanismInfo)               \
    X(C_InitToken) X(C_InitPIN) X(C_SetPIN) X(C_OpenSession) X(C_CloseSession)                   \
    X(C_CloseAllSessions) X(C_GetSessionInfo) X(C_GetOperationState) X(C_SetOperationState)      \
    X(C_Login) X(C_Logout) X(C_CreateObject) X(C_CopyObject) X(C_DestroyObject)                  \
    X(C_GetObjectSize) X(C_GetAttributeValue) X(C_SetAttributeValue) X(C_FindObjectsInit)        \
    X(C_FindObjects) X(C_FindObjectsFinal) X(C_EncryptInit) X(C_Encrypt) X(C_EncryptUpdate)      \
    X(C_EncryptFinal) X(C_DecryptInit) X(C_Decrypt) X(C_DecryptUpdate) X(C_DecryptFinal)         \
    X(C_DigestInit) X(C_Digest) X(C_DigestUpdate) X(C_DigestKey) X(C_DigestFinal)                \
    X(C_SignInit) X(C_Sign) X(C_SignUpdate) X(C_SignFinal) X(C_SignRecoverInit)                  \
    X(C_SignRecover) X(C_VerifyInit) X(C_Verify) X(C_VerifyUpdate) X(C_VerifyFinal)              \
    X(C_VerifyRecoverInit) X(C_VerifyRecover) X(C_DigestEncryptUpdate)                           \
    X(C_DecryptDigestUpdate) X(C_SignEncryptUpdate) X(C_DecryptVerifyUpdate) X(C_GenerateKey)    \
    X(C_GenerateKeyPair) X(C_WrapKey) X(C_UnwrapKey) X(C_DeriveKey) X(C_SeedRandom)              \
    X(C_GenerateRandom) X(C_GetFunctionStatus) X(C_CancelFunction) X(C_WaitForSlotEvent)

enum se_fn {
#define SE_FN_ENUM(name) SE_FN_##name,
    SE_FUNCTIONS(SE_FN_ENUM)
#undef SE_FN_ENUM
    SE_FN_COUNT
};

extern const char *const se_fn_names[SE_FN_COUNT];

enum se_dist_kind { SE_DIST_NONE = 0, SE_DIST_FIXED, SE_DIST_NORMAL, SE_DIST_LOGNORMAL, SE_DIST_EMPIRICAL };

/* The delay sampler: ONE definition, written here (se_draw_delay_ms, on the common xoshiro256**)
 * and in secperf.inputs.se_profiles (Dist.sample_ms, on numpy); each names the other, and
 * tests/test_delay_sampler.py draws from both (this side through secperf-se-sample) and checks that
 * their distributions agree.
 *   fixed V                 V
 *   normal MEAN SD          MEAN + SD*z, z standard normal; a negative draw is drawn again, at most
 *                           SE_REDRAW_LIMIT draws per delay, then 0 (needs MEAN far below 0, which
 *                           a profile cannot set); SD = 0: MEAN
 *   lognormal MEDIAN SIGMA  MEDIAN * exp(SIGMA*z); SIGMA = 0: MEDIAN
 *   empirical V1 V2 ...     one of the values, uniformly
 *   tail P DIST             first a uniform u; u < P: the tail's draw instead of the body's
 *   clamp                   every delay ends in [0, SE_DELAY_MAX_MS] (one hour) */
#define SE_REDRAW_LIMIT 64
#define SE_DELAY_MAX_MS 3600000.0

/* One distribution, all values in milliseconds. fixed: a; normal: mean a, sd b (truncated at 0
 * by redrawing); lognormal: median a, sigma b; empirical: samples[0..nsamples). */
typedef struct se_dist {
    int kind;
    double a, b;
    double *samples;
    size_t nsamples;
} se_dist;

typedef struct se_fn_profile {
    int active;      /* body or tail configured: a delay is drawn for this function */
    se_dist body;    /* SE_DIST_NONE with a tail: the body delay is 0 */
    int has_tail;
    double tail_p;
    se_dist tail;
} se_fn_profile;

typedef struct se_profile {
    char *module;
    int module_line;
    char *log;
    int log_line;
    uint64_t seed;
    int busy; /* wait = busy */
    se_fn_profile fn[SE_FN_COUNT];
} se_profile;

/* Parses PATH into *out (zeroed first). On error returns -1 with a one-line message in err
 * (without the "secperf se_shim: " prefix, e.g. "prof.txt:3: unknown distribution 'x'"). */
int se_profile_load(const char *path, se_profile *out, char *err, size_t errlen);
void se_profile_free(se_profile *p);

/* Draws the delay of one call of a function with this profile, in milliseconds, in
 * [0, SE_DELAY_MAX_MS] (the sampler above). */
double se_draw_delay_ms(const se_fn_profile *fp, xoshiro256 *r);
/* The same draw in whole nanoseconds (rounded). */
int64_t se_draw_delay_ns(const se_fn_profile *fp, xoshiro256 *r);

#endif
