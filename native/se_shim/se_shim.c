/* se_shim: a PKCS#11 module that forwards every call to a real module (SoftHSM2) and adds
 * secure-element latency per function from a profile (SECPERF_SE_PROFILE). See README.md.
 *
 * Locking:
 *   init_mx   serializes C_Initialize / C_Finalize;
 *   life      read-held by every forwarded call, write-held while C_Initialize / C_Finalize
 *             change the state (so the real module is never unloaded under a running call);
 *   token     one FIFO lock per slot (the emulated card channel: callers are served in arrival
 *             order), or the global one for calls tied to no slot; held around the real call
 *             and the injected delay;
 *   sess_lk   the session -> slot table; rng_mx the PRNG; slots_mx the slot -> mutex table.
 * Only one token lock is held at a time; sess_lk, rng_mx and slots_mx are leaves. */
#include <p11-kit/pkcs11.h>

#include "profile.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SHIM_EXPORT __attribute__((visibility("default")))

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

/* ---- FIFO (ticket) lock: concurrent callers of one card queue in arrival order ------- */

typedef struct fifo_lock {
    pthread_mutex_t m;
    pthread_cond_t c;
    unsigned long next, serving;
} fifo_lock;

#define FIFO_LOCK_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0}

static void fifo_init(fifo_lock *l)
{
    pthread_mutex_init(&l->m, NULL);
    pthread_cond_init(&l->c, NULL);
    l->next = l->serving = 0;
}

static void fifo_destroy(fifo_lock *l)
{
    pthread_cond_destroy(&l->c);
    pthread_mutex_destroy(&l->m);
}

static inline void fifo_lock_acquire(fifo_lock *l)
{
    pthread_mutex_lock(&l->m);
    unsigned long t = l->next++;
    while (t != l->serving)
        pthread_cond_wait(&l->c, &l->m);
    pthread_mutex_unlock(&l->m);
}

static inline void fifo_lock_release(fifo_lock *l)
{
    pthread_mutex_lock(&l->m);
    l->serving++;
    int waiters = l->next != l->serving;
    pthread_mutex_unlock(&l->m);
    if (waiters)
        pthread_cond_broadcast(&l->c);
}

/* ---- state --------------------------------------------------------------------------- */

static pthread_mutex_t init_mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t life = PTHREAD_RWLOCK_INITIALIZER;
static int initialized;          /* under life */
static unsigned long generation; /* bumped by every C_Finalize, under life */
static CK_FUNCTION_LIST_PTR real;
static void *real_handle;
static se_profile prof;
static int log_fd = -1;
static fifo_lock global_lk = FIFO_LOCK_INIT;
static pthread_mutex_t rng_mx = PTHREAD_MUTEX_INITIALIZER;
static se_rng rng;
static atomic_int blocking_waiters; /* threads inside a blocking C_WaitForSlotEvent */

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    char buf[1400];
    int n = snprintf(buf, sizeof buf, "secperf se_shim: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    size_t len = strlen(buf);
    buf[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}

/* ---- slot -> token mutex ------------------------------------------------------------- */

#define MAX_SLOTS 256

struct slot_lock {
    CK_SLOT_ID id;
    fifo_lock lk;
};

static struct slot_lock slots[MAX_SLOTS];
static atomic_size_t nslots;
static pthread_mutex_t slots_mx = PTHREAD_MUTEX_INITIALIZER;

/* Entries are appended and never removed while initialized, so readers scan without a lock. */
static fifo_lock *slot_lock(CK_SLOT_ID id)
{
    size_t n = atomic_load_explicit(&nslots, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (slots[i].id == id)
            return &slots[i].lk;
    pthread_mutex_lock(&slots_mx);
    n = atomic_load_explicit(&nslots, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        if (slots[i].id == id) {
            pthread_mutex_unlock(&slots_mx);
            return &slots[i].lk;
        }
    fifo_lock *lk = &global_lk; /* more slots than MAX_SLOTS: they share the global lock */
    if (n < MAX_SLOTS) {
        slots[n].id = id;
        fifo_init(&slots[n].lk);
        atomic_store_explicit(&nslots, n + 1, memory_order_release);
        lk = &slots[n].lk;
    }
    pthread_mutex_unlock(&slots_mx);
    return lk;
}

static void slots_reset(void) /* under the life write lock */
{
    size_t n = atomic_load(&nslots);
    for (size_t i = 0; i < n; i++)
        fifo_destroy(&slots[i].lk);
    atomic_store(&nslots, 0);
}

/* ---- session -> slot ----------------------------------------------------------------- */

struct sess_ent {
    CK_SESSION_HANDLE h;
    CK_SLOT_ID slot;
    int used;
};

static pthread_rwlock_t sess_lk = PTHREAD_RWLOCK_INITIALIZER;
static struct sess_ent *sess_t;
static size_t sess_cap, sess_n; /* open addressing, linear probing, cap a power of two */

static inline size_t sess_home(CK_SESSION_HANDLE h, size_t cap)
{
    uint64_t x = (uint64_t)h * 0x9e3779b97f4a7c15ULL;
    return (size_t)(x ^ (x >> 29)) & (cap - 1);
}

static int sess_lookup(CK_SESSION_HANDLE h, CK_SLOT_ID *slot)
{
    int found = 0;
    pthread_rwlock_rdlock(&sess_lk);
    if (sess_cap) {
        for (size_t i = sess_home(h, sess_cap); sess_t[i].used; i = (i + 1) & (sess_cap - 1))
            if (sess_t[i].h == h) {
                *slot = sess_t[i].slot;
                found = 1;
                break;
            }
    }
    pthread_rwlock_unlock(&sess_lk);
    return found;
}

static void sess_put(struct sess_ent *t, size_t cap, CK_SESSION_HANDLE h, CK_SLOT_ID slot, size_t *n)
{
    size_t i = sess_home(h, cap);
    while (t[i].used && t[i].h != h)
        i = (i + 1) & (cap - 1);
    if (!t[i].used)
        (*n)++;
    t[i].h = h;
    t[i].slot = slot;
    t[i].used = 1;
}

static void sess_insert(CK_SESSION_HANDLE h, CK_SLOT_ID slot)
{
    pthread_rwlock_wrlock(&sess_lk);
    if ((sess_n + 1) * 2 > sess_cap) {
        size_t ncap = sess_cap ? sess_cap * 2 : 64;
        struct sess_ent *nt = calloc(ncap, sizeof *nt);
        if (!nt) { /* the session then uses the global lock and logs slot null */
            pthread_rwlock_unlock(&sess_lk);
            return;
        }
        size_t nn = 0;
        for (size_t i = 0; i < sess_cap; i++)
            if (sess_t[i].used)
                sess_put(nt, ncap, sess_t[i].h, sess_t[i].slot, &nn);
        free(sess_t);
        sess_t = nt;
        sess_cap = ncap;
        sess_n = nn;
    }
    sess_put(sess_t, sess_cap, h, slot, &sess_n);
    pthread_rwlock_unlock(&sess_lk);
}

/* Backward-shift deletion at index i (no tombstones). Caller holds sess_lk for writing. */
static void sess_delete_at(size_t i)
{
    size_t mask = sess_cap - 1;
    sess_t[i].used = 0;
    sess_n--;
    for (size_t j = (i + 1) & mask; sess_t[j].used; j = (j + 1) & mask) {
        size_t k = sess_home(sess_t[j].h, sess_cap);
        /* leave j where it is if its home k lies cyclically in (i, j] */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        sess_t[i] = sess_t[j];
        sess_t[j].used = 0;
        i = j;
    }
}

static void sess_remove(CK_SESSION_HANDLE h)
{
    pthread_rwlock_wrlock(&sess_lk);
    if (sess_cap) {
        for (size_t i = sess_home(h, sess_cap); sess_t[i].used; i = (i + 1) & (sess_cap - 1))
            if (sess_t[i].h == h) {
                sess_delete_at(i);
                break;
            }
    }
    pthread_rwlock_unlock(&sess_lk);
}

static void sess_remove_slot(CK_SLOT_ID slot)
{
    pthread_rwlock_wrlock(&sess_lk);
    for (size_t i = 0; i < sess_cap;) {
        if (sess_t[i].used && sess_t[i].slot == slot)
            sess_delete_at(i); /* an entry may have shifted into i: look at i again */
        else
            i++;
    }
    pthread_rwlock_unlock(&sess_lk);
}

static void sess_reset(void)
{
    pthread_rwlock_wrlock(&sess_lk);
    free(sess_t);
    sess_t = NULL;
    sess_cap = sess_n = 0;
    pthread_rwlock_unlock(&sess_lk);
}

/* ---- delay and log ------------------------------------------------------------------- */

/* wait = "sleep" sleeps until this long before the deadline and spins the rest: a sleeping thread
 * wakes late by the scheduler's wake-up of an idle CPU, measured at a median of 170 us and a P90 of
 * 300 us (20 ms sleeps, 2-core virtual machine), which would add to every injected delay */
#define SLEEP_SPIN_TAIL_NS 400000LL

static void wait_until(int64_t deadline)
{
    if (!prof.busy && deadline - now_ns() > SLEEP_SPIN_TAIL_NS) {
        int64_t wake = deadline - SLEEP_SPIN_TAIL_NS;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000LL), .tv_nsec = (long)(wake % 1000000000LL)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    while (now_ns() < deadline)
        ;
}

/* Draws this call's delay (0 when none is configured or for a length query) and waits it out
 * from `from`. Returns the drawn delay in ns. */
static int64_t inject_delay(int fn, int length_query, int64_t from)
{
    const se_fn_profile *fp = &prof.fn[fn];
    if (!fp->active || length_query)
        return 0;
    pthread_mutex_lock(&rng_mx);
    int64_t d = se_draw_delay_ns(fp, &rng);
    pthread_mutex_unlock(&rng_mx);
    if (d > 0)
        wait_until(from + d);
    return d;
}

static void log_call(int fn, int64_t t0, int64_t t1, int64_t real_ns, int64_t delay_ns, CK_RV rv,
                     int has_slot, CK_SLOT_ID slot, int length_query)
{
    char slotbuf[24] = "null";
    if (has_slot)
        snprintf(slotbuf, sizeof slotbuf, "%lu", (unsigned long)slot);
    char buf[384];
    int n = snprintf(buf, sizeof buf,
                     "{\"fn\":\"%s\",\"start_ns\":%" PRId64 ",\"duration_ns\":%" PRId64
                     ",\"real_ns\":%" PRId64 ",\"delay_ns\":%" PRId64
                     ",\"rv\":%lu,\"pid\":%ld,\"slot\":%s,\"length_query\":%s}\n",
                     se_fn_names[fn], t0, t1 - t0, real_ns, delay_ns, (unsigned long)rv,
                     (long)getpid(), slotbuf, length_query ? "true" : "false");
    if (n > 0 && (size_t)n < sizeof buf) {
        ssize_t w = write(log_fd, buf, (size_t)n); /* one write on an O_APPEND fd: no interleaving */
        (void)w;
    }
}

/* ---- the common path of a forwarded call --------------------------------------------- */

struct call {
    int fn;
    int length_query;
    int has_slot;
    CK_SLOT_ID slot;
    fifo_lock *lk;
    int64_t t0, r0, r1;
};

static inline int call_begin(struct call *c, int fn)
{
    c->t0 = now_ns();
    pthread_rwlock_rdlock(&life);
    if (!initialized) {
        pthread_rwlock_unlock(&life);
        return 0;
    }
    c->fn = fn;
    c->length_query = 0;
    c->has_slot = 0;
    c->slot = 0;
    c->lk = &global_lk;
    return 1;
}

static inline void call_slot(struct call *c, CK_SLOT_ID slot)
{
    c->has_slot = 1;
    c->slot = slot;
    c->lk = slot_lock(slot);
}

static inline void call_session(struct call *c, CK_SESSION_HANDLE h)
{
    CK_SLOT_ID slot;
    if (sess_lookup(h, &slot))
        call_slot(c, slot);
}

static inline void call_enter(struct call *c)
{
    fifo_lock_acquire(c->lk);
    c->r0 = now_ns();
}

static inline CK_RV call_leave(struct call *c, CK_RV rv)
{
    int64_t delay = inject_delay(c->fn, c->length_query, c->r1);
    int64_t t1 = delay > 0 ? now_ns() : c->r1;
    fifo_lock_release(c->lk);
    if (log_fd >= 0)
        log_call(c->fn, c->t0, t1, c->r1 - c->r0, delay, rv, c->has_slot, c->slot, c->length_query);
    pthread_rwlock_unlock(&life);
    return rv;
}

#define BEGIN(name)                                                                            \
    struct call c_;                                                                            \
    if (!call_begin(&c_, SE_FN_##name))                                                        \
    return CKR_CRYPTOKI_NOT_INITIALIZED
#define ON_SLOT(s) call_slot(&c_, (s))
#define ON_SESSION(h) call_session(&c_, (h))
#define LENGTH_QUERY(e) (c_.length_query = (e) ? 1 : 0)
/* Calls the real function under the token lock; leaves the result in rv_. */
#define CALL_REAL(name, ...)                                                                   \
    CK_RV rv_;                                                                                 \
    call_enter(&c_);                                                                           \
    rv_ = real->name ? real->name(__VA_ARGS__) : CKR_FUNCTION_NOT_SUPPORTED;                   \
    c_.r1 = now_ns()
#define FORWARD(name, ...)                                                                     \
    CALL_REAL(name, __VA_ARGS__);                                                              \
    return call_leave(&c_, rv_)

/* ---- C_Initialize / C_Finalize ------------------------------------------------------- */

static void unload(void) /* under the life write lock */
{
    if (real_handle) {
        /* A thread still inside a blocking C_WaitForSlotEvent of the real module (which its
         * C_Finalize must make return) would crash if the code went away: wait up to 1 s. */
        for (int i = 0; i < 1000 && atomic_load(&blocking_waiters) > 0; i++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        if (atomic_load(&blocking_waiters) == 0)
            dlclose(real_handle);
    }
    real_handle = NULL;
    real = NULL;
    if (log_fd >= 0)
        close(log_fd);
    log_fd = -1;
    se_profile_free(&prof);
    slots_reset();
    sess_reset();
    initialized = 0;
    generation++;
}

static CK_FUNCTION_LIST shim_list;

static CK_RV load(const char *path)
{
    char err[1200];
    if (se_profile_load(path, &prof, err, sizeof err) != 0) {
        report("%s", err);
        return CKR_ARGUMENTS_BAD;
    }
    const char *logpath = getenv("SECPERF_SE_LOG");
    int log_from_env = logpath && *logpath;
    if (!log_from_env)
        logpath = prof.log;
    if (logpath) {
        log_fd = open(logpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (log_fd < 0) {
            if (log_from_env)
                report("SECPERF_SE_LOG=%s: cannot open log: %s", logpath, strerror(errno));
            else
                report("%s:%d: cannot open log %s: %s", path, prof.log_line, logpath, strerror(errno));
            return CKR_ARGUMENTS_BAD;
        }
    }
    dlerror();
    real_handle = dlopen(prof.module, RTLD_NOW | RTLD_LOCAL);
    if (!real_handle) {
        const char *e = dlerror();
        report("%s:%d: cannot load module %s: %s", path, prof.module_line, prof.module, e ? e : "?");
        return CKR_ARGUMENTS_BAD;
    }
    void *sym = dlsym(real_handle, "C_GetFunctionList");
    if (!sym) {
        report("%s:%d: module %s has no C_GetFunctionList", path, prof.module_line, prof.module);
        return CKR_ARGUMENTS_BAD;
    }
    CK_C_GetFunctionList gfl;
    memcpy(&gfl, &sym, sizeof gfl);
    CK_FUNCTION_LIST_PTR fl = NULL;
    CK_RV rv = gfl(&fl);
    if (rv != CKR_OK || !fl) {
        report("%s:%d: C_GetFunctionList of module %s failed (rv %lu)", path, prof.module_line,
               prof.module, (unsigned long)rv);
        return CKR_ARGUMENTS_BAD;
    }
    if (fl == &shim_list) {
        report("%s:%d: module %s is the shim itself", path, prof.module_line, prof.module);
        return CKR_ARGUMENTS_BAD;
    }
    if (!fl->C_Initialize || !fl->C_Finalize) {
        report("%s:%d: module %s has no C_Initialize/C_Finalize", path, prof.module_line, prof.module);
        return CKR_ARGUMENTS_BAD;
    }
    real = fl;
    se_rng_seed(&rng, prof.seed);
    return CKR_OK;
}

static CK_RV shim_C_Initialize(CK_VOID_PTR pInitArgs)
{
    int64_t t0 = now_ns();
    pthread_mutex_lock(&init_mx);
    pthread_rwlock_wrlock(&life);
    CK_RV rv;
    if (initialized) {
        rv = CKR_CRYPTOKI_ALREADY_INITIALIZED;
        goto out;
    }
    const char *path = getenv("SECPERF_SE_PROFILE");
    if (!path || !*path) {
        report("SECPERF_SE_PROFILE is not set");
        rv = CKR_ARGUMENTS_BAD;
        goto out;
    }
    rv = load(path);
    if (rv != CKR_OK) {
        unload();
        goto out;
    }
    int64_t r0 = now_ns();
    rv = real->C_Initialize(pInitArgs);
    int64_t r1 = now_ns();
    int64_t delay = inject_delay(SE_FN_C_Initialize, 0, r1);
    int64_t t1 = delay > 0 ? now_ns() : r1;
    if (log_fd >= 0)
        log_call(SE_FN_C_Initialize, t0, t1, r1 - r0, delay, rv, 0, 0, 0);
    if (rv == CKR_OK)
        initialized = 1;
    else
        unload();
out:
    pthread_rwlock_unlock(&life);
    pthread_mutex_unlock(&init_mx);
    return rv;
}

static CK_RV shim_C_Finalize(CK_VOID_PTR pReserved)
{
    int64_t t0 = now_ns();
    pthread_mutex_lock(&init_mx);
    pthread_rwlock_wrlock(&life);
    CK_RV rv;
    if (!initialized) {
        rv = CKR_CRYPTOKI_NOT_INITIALIZED;
        goto out;
    }
    int64_t r0 = now_ns();
    rv = real->C_Finalize(pReserved);
    int64_t r1 = now_ns();
    int64_t delay = inject_delay(SE_FN_C_Finalize, 0, r1);
    int64_t t1 = delay > 0 ? now_ns() : r1;
    if (log_fd >= 0)
        log_call(SE_FN_C_Finalize, t0, t1, r1 - r0, delay, rv, 0, 0, 0);
    if (rv == CKR_OK)
        unload();
out:
    pthread_rwlock_unlock(&life);
    pthread_mutex_unlock(&init_mx);
    return rv;
}

/* ---- general, slot and token --------------------------------------------------------- */

static CK_RV shim_C_GetInfo(CK_INFO_PTR pInfo)
{
    BEGIN(C_GetInfo);
    FORWARD(C_GetInfo, pInfo);
}

static CK_RV shim_C_GetSlotList(CK_BBOOL tokenPresent, CK_SLOT_ID_PTR pSlotList, CK_ULONG_PTR pulCount)
{
    BEGIN(C_GetSlotList);
    LENGTH_QUERY(pSlotList == NULL);
    FORWARD(C_GetSlotList, tokenPresent, pSlotList, pulCount);
}

static CK_RV shim_C_GetSlotInfo(CK_SLOT_ID slotID, CK_SLOT_INFO_PTR pInfo)
{
    BEGIN(C_GetSlotInfo);
    ON_SLOT(slotID);
    FORWARD(C_GetSlotInfo, slotID, pInfo);
}

static CK_RV shim_C_GetTokenInfo(CK_SLOT_ID slotID, CK_TOKEN_INFO_PTR pInfo)
{
    BEGIN(C_GetTokenInfo);
    ON_SLOT(slotID);
    FORWARD(C_GetTokenInfo, slotID, pInfo);
}

static CK_RV shim_C_GetMechanismList(CK_SLOT_ID slotID, CK_MECHANISM_TYPE_PTR pMechanismList,
                                     CK_ULONG_PTR pulCount)
{
    BEGIN(C_GetMechanismList);
    ON_SLOT(slotID);
    LENGTH_QUERY(pMechanismList == NULL);
    FORWARD(C_GetMechanismList, slotID, pMechanismList, pulCount);
}

static CK_RV shim_C_GetMechanismInfo(CK_SLOT_ID slotID, CK_MECHANISM_TYPE type, CK_MECHANISM_INFO_PTR pInfo)
{
    BEGIN(C_GetMechanismInfo);
    ON_SLOT(slotID);
    FORWARD(C_GetMechanismInfo, slotID, type, pInfo);
}

static CK_RV shim_C_InitToken(CK_SLOT_ID slotID, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen, CK_UTF8CHAR_PTR pLabel)
{
    BEGIN(C_InitToken);
    ON_SLOT(slotID);
    FORWARD(C_InitToken, slotID, pPin, ulPinLen, pLabel);
}

static CK_RV shim_C_InitPIN(CK_SESSION_HANDLE hSession, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen)
{
    BEGIN(C_InitPIN);
    ON_SESSION(hSession);
    FORWARD(C_InitPIN, hSession, pPin, ulPinLen);
}

static CK_RV shim_C_SetPIN(CK_SESSION_HANDLE hSession, CK_UTF8CHAR_PTR pOldPin, CK_ULONG ulOldLen,
                           CK_UTF8CHAR_PTR pNewPin, CK_ULONG ulNewLen)
{
    BEGIN(C_SetPIN);
    ON_SESSION(hSession);
    FORWARD(C_SetPIN, hSession, pOldPin, ulOldLen, pNewPin, ulNewLen);
}

/* ---- sessions ------------------------------------------------------------------------ */

static CK_RV shim_C_OpenSession(CK_SLOT_ID slotID, CK_FLAGS flags, CK_VOID_PTR pApplication,
                                CK_NOTIFY Notify, CK_SESSION_HANDLE_PTR phSession)
{
    BEGIN(C_OpenSession);
    ON_SLOT(slotID);
    CALL_REAL(C_OpenSession, slotID, flags, pApplication, Notify, phSession);
    if (rv_ == CKR_OK && phSession)
        sess_insert(*phSession, slotID);
    return call_leave(&c_, rv_);
}

static CK_RV shim_C_CloseSession(CK_SESSION_HANDLE hSession)
{
    BEGIN(C_CloseSession);
    ON_SESSION(hSession);
    CALL_REAL(C_CloseSession, hSession);
    if (rv_ == CKR_OK || rv_ == CKR_SESSION_HANDLE_INVALID || rv_ == CKR_SESSION_CLOSED)
        sess_remove(hSession);
    return call_leave(&c_, rv_);
}

static CK_RV shim_C_CloseAllSessions(CK_SLOT_ID slotID)
{
    BEGIN(C_CloseAllSessions);
    ON_SLOT(slotID);
    CALL_REAL(C_CloseAllSessions, slotID);
    if (rv_ == CKR_OK)
        sess_remove_slot(slotID);
    return call_leave(&c_, rv_);
}

static CK_RV shim_C_GetSessionInfo(CK_SESSION_HANDLE hSession, CK_SESSION_INFO_PTR pInfo)
{
    BEGIN(C_GetSessionInfo);
    ON_SESSION(hSession);
    FORWARD(C_GetSessionInfo, hSession, pInfo);
}

static CK_RV shim_C_GetOperationState(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState,
                                      CK_ULONG_PTR pulOperationStateLen)
{
    BEGIN(C_GetOperationState);
    ON_SESSION(hSession);
    LENGTH_QUERY(pOperationState == NULL);
    FORWARD(C_GetOperationState, hSession, pOperationState, pulOperationStateLen);
}

static CK_RV shim_C_SetOperationState(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState,
                                      CK_ULONG ulOperationStateLen, CK_OBJECT_HANDLE hEncryptionKey,
                                      CK_OBJECT_HANDLE hAuthenticationKey)
{
    BEGIN(C_SetOperationState);
    ON_SESSION(hSession);
    FORWARD(C_SetOperationState, hSession, pOperationState, ulOperationStateLen, hEncryptionKey,
            hAuthenticationKey);
}

static CK_RV shim_C_Login(CK_SESSION_HANDLE hSession, CK_USER_TYPE userType, CK_UTF8CHAR_PTR pPin,
                          CK_ULONG ulPinLen)
{
    BEGIN(C_Login);
    ON_SESSION(hSession);
    FORWARD(C_Login, hSession, userType, pPin, ulPinLen);
}

static CK_RV shim_C_Logout(CK_SESSION_HANDLE hSession)
{
    BEGIN(C_Logout);
    ON_SESSION(hSession);
    FORWARD(C_Logout, hSession);
}

/* ---- objects ------------------------------------------------------------------------- */

static CK_RV shim_C_CreateObject(CK_SESSION_HANDLE hSession, CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount,
                                 CK_OBJECT_HANDLE_PTR phObject)
{
    BEGIN(C_CreateObject);
    ON_SESSION(hSession);
    FORWARD(C_CreateObject, hSession, pTemplate, ulCount, phObject);
}

static CK_RV shim_C_CopyObject(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject,
                               CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount, CK_OBJECT_HANDLE_PTR phNewObject)
{
    BEGIN(C_CopyObject);
    ON_SESSION(hSession);
    FORWARD(C_CopyObject, hSession, hObject, pTemplate, ulCount, phNewObject);
}

static CK_RV shim_C_DestroyObject(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject)
{
    BEGIN(C_DestroyObject);
    ON_SESSION(hSession);
    FORWARD(C_DestroyObject, hSession, hObject);
}

static CK_RV shim_C_GetObjectSize(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject, CK_ULONG_PTR pulSize)
{
    BEGIN(C_GetObjectSize);
    ON_SESSION(hSession);
    FORWARD(C_GetObjectSize, hSession, hObject, pulSize);
}

static int all_values_null(CK_ATTRIBUTE_PTR t, CK_ULONG n)
{
    if (!t)
        return 1;
    for (CK_ULONG i = 0; i < n; i++)
        if (t[i].pValue != NULL)
            return 0;
    return 1;
}

static CK_RV shim_C_GetAttributeValue(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject,
                                      CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount)
{
    BEGIN(C_GetAttributeValue);
    ON_SESSION(hSession);
    LENGTH_QUERY(all_values_null(pTemplate, ulCount));
    FORWARD(C_GetAttributeValue, hSession, hObject, pTemplate, ulCount);
}

static CK_RV shim_C_SetAttributeValue(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject,
                                      CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount)
{
    BEGIN(C_SetAttributeValue);
    ON_SESSION(hSession);
    FORWARD(C_SetAttributeValue, hSession, hObject, pTemplate, ulCount);
}

static CK_RV shim_C_FindObjectsInit(CK_SESSION_HANDLE hSession, CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount)
{
    BEGIN(C_FindObjectsInit);
    ON_SESSION(hSession);
    FORWARD(C_FindObjectsInit, hSession, pTemplate, ulCount);
}

static CK_RV shim_C_FindObjects(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE_PTR phObject,
                                CK_ULONG ulMaxObjectCount, CK_ULONG_PTR pulObjectCount)
{
    BEGIN(C_FindObjects);
    ON_SESSION(hSession);
    FORWARD(C_FindObjects, hSession, phObject, ulMaxObjectCount, pulObjectCount);
}

static CK_RV shim_C_FindObjectsFinal(CK_SESSION_HANDLE hSession)
{
    BEGIN(C_FindObjectsFinal);
    ON_SESSION(hSession);
    FORWARD(C_FindObjectsFinal, hSession);
}

/* ---- encryption and decryption ------------------------------------------------------- */

static CK_RV shim_C_EncryptInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey)
{
    BEGIN(C_EncryptInit);
    ON_SESSION(hSession);
    FORWARD(C_EncryptInit, hSession, pMechanism, hKey);
}

static CK_RV shim_C_Encrypt(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                            CK_BYTE_PTR pEncryptedData, CK_ULONG_PTR pulEncryptedDataLen)
{
    BEGIN(C_Encrypt);
    ON_SESSION(hSession);
    LENGTH_QUERY(pEncryptedData == NULL);
    FORWARD(C_Encrypt, hSession, pData, ulDataLen, pEncryptedData, pulEncryptedDataLen);
}

static CK_RV shim_C_EncryptUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen,
                                  CK_BYTE_PTR pEncryptedPart, CK_ULONG_PTR pulEncryptedPartLen)
{
    BEGIN(C_EncryptUpdate);
    ON_SESSION(hSession);
    LENGTH_QUERY(pEncryptedPart == NULL);
    FORWARD(C_EncryptUpdate, hSession, pPart, ulPartLen, pEncryptedPart, pulEncryptedPartLen);
}

static CK_RV shim_C_EncryptFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pLastEncryptedPart,
                                 CK_ULONG_PTR pulLastEncryptedPartLen)
{
    BEGIN(C_EncryptFinal);
    ON_SESSION(hSession);
    LENGTH_QUERY(pLastEncryptedPart == NULL);
    FORWARD(C_EncryptFinal, hSession, pLastEncryptedPart, pulLastEncryptedPartLen);
}

static CK_RV shim_C_DecryptInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey)
{
    BEGIN(C_DecryptInit);
    ON_SESSION(hSession);
    FORWARD(C_DecryptInit, hSession, pMechanism, hKey);
}

static CK_RV shim_C_Decrypt(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedData, CK_ULONG ulEncryptedDataLen,
                            CK_BYTE_PTR pData, CK_ULONG_PTR pulDataLen)
{
    BEGIN(C_Decrypt);
    ON_SESSION(hSession);
    LENGTH_QUERY(pData == NULL);
    FORWARD(C_Decrypt, hSession, pEncryptedData, ulEncryptedDataLen, pData, pulDataLen);
}

static CK_RV shim_C_DecryptUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedPart,
                                  CK_ULONG ulEncryptedPartLen, CK_BYTE_PTR pPart, CK_ULONG_PTR pulPartLen)
{
    BEGIN(C_DecryptUpdate);
    ON_SESSION(hSession);
    LENGTH_QUERY(pPart == NULL);
    FORWARD(C_DecryptUpdate, hSession, pEncryptedPart, ulEncryptedPartLen, pPart, pulPartLen);
}

static CK_RV shim_C_DecryptFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pLastPart, CK_ULONG_PTR pulLastPartLen)
{
    BEGIN(C_DecryptFinal);
    ON_SESSION(hSession);
    LENGTH_QUERY(pLastPart == NULL);
    FORWARD(C_DecryptFinal, hSession, pLastPart, pulLastPartLen);
}

/* ---- digests ------------------------------------------------------------------------- */

static CK_RV shim_C_DigestInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism)
{
    BEGIN(C_DigestInit);
    ON_SESSION(hSession);
    FORWARD(C_DigestInit, hSession, pMechanism);
}

static CK_RV shim_C_Digest(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                           CK_BYTE_PTR pDigest, CK_ULONG_PTR pulDigestLen)
{
    BEGIN(C_Digest);
    ON_SESSION(hSession);
    LENGTH_QUERY(pDigest == NULL);
    FORWARD(C_Digest, hSession, pData, ulDataLen, pDigest, pulDigestLen);
}

static CK_RV shim_C_DigestUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
    BEGIN(C_DigestUpdate);
    ON_SESSION(hSession);
    FORWARD(C_DigestUpdate, hSession, pPart, ulPartLen);
}

static CK_RV shim_C_DigestKey(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hKey)
{
    BEGIN(C_DigestKey);
    ON_SESSION(hSession);
    FORWARD(C_DigestKey, hSession, hKey);
}

static CK_RV shim_C_DigestFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pDigest, CK_ULONG_PTR pulDigestLen)
{
    BEGIN(C_DigestFinal);
    ON_SESSION(hSession);
    LENGTH_QUERY(pDigest == NULL);
    FORWARD(C_DigestFinal, hSession, pDigest, pulDigestLen);
}

/* ---- signatures ---------------------------------------------------------------------- */

static CK_RV shim_C_SignInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey)
{
    BEGIN(C_SignInit);
    ON_SESSION(hSession);
    FORWARD(C_SignInit, hSession, pMechanism, hKey);
}

static CK_RV shim_C_Sign(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                         CK_BYTE_PTR pSignature, CK_ULONG_PTR pulSignatureLen)
{
    BEGIN(C_Sign);
    ON_SESSION(hSession);
    LENGTH_QUERY(pSignature == NULL);
    FORWARD(C_Sign, hSession, pData, ulDataLen, pSignature, pulSignatureLen);
}

static CK_RV shim_C_SignUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
    BEGIN(C_SignUpdate);
    ON_SESSION(hSession);
    FORWARD(C_SignUpdate, hSession, pPart, ulPartLen);
}

static CK_RV shim_C_SignFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature, CK_ULONG_PTR pulSignatureLen)
{
    BEGIN(C_SignFinal);
    ON_SESSION(hSession);
    LENGTH_QUERY(pSignature == NULL);
    FORWARD(C_SignFinal, hSession, pSignature, pulSignatureLen);
}

static CK_RV shim_C_SignRecoverInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey)
{
    BEGIN(C_SignRecoverInit);
    ON_SESSION(hSession);
    FORWARD(C_SignRecoverInit, hSession, pMechanism, hKey);
}

static CK_RV shim_C_SignRecover(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                                CK_BYTE_PTR pSignature, CK_ULONG_PTR pulSignatureLen)
{
    BEGIN(C_SignRecover);
    ON_SESSION(hSession);
    LENGTH_QUERY(pSignature == NULL);
    FORWARD(C_SignRecover, hSession, pData, ulDataLen, pSignature, pulSignatureLen);
}

static CK_RV shim_C_VerifyInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey)
{
    BEGIN(C_VerifyInit);
    ON_SESSION(hSession);
    FORWARD(C_VerifyInit, hSession, pMechanism, hKey);
}

static CK_RV shim_C_Verify(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                           CK_BYTE_PTR pSignature, CK_ULONG ulSignatureLen)
{
    BEGIN(C_Verify);
    ON_SESSION(hSession);
    FORWARD(C_Verify, hSession, pData, ulDataLen, pSignature, ulSignatureLen);
}

static CK_RV shim_C_VerifyUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
    BEGIN(C_VerifyUpdate);
    ON_SESSION(hSession);
    FORWARD(C_VerifyUpdate, hSession, pPart, ulPartLen);
}

static CK_RV shim_C_VerifyFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature, CK_ULONG ulSignatureLen)
{
    BEGIN(C_VerifyFinal);
    ON_SESSION(hSession);
    FORWARD(C_VerifyFinal, hSession, pSignature, ulSignatureLen);
}

static CK_RV shim_C_VerifyRecoverInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                                      CK_OBJECT_HANDLE hKey)
{
    BEGIN(C_VerifyRecoverInit);
    ON_SESSION(hSession);
    FORWARD(C_VerifyRecoverInit, hSession, pMechanism, hKey);
}

static CK_RV shim_C_VerifyRecover(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature, CK_ULONG ulSignatureLen,
                                  CK_BYTE_PTR pData, CK_ULONG_PTR pulDataLen)
{
    BEGIN(C_VerifyRecover);
    ON_SESSION(hSession);
    LENGTH_QUERY(pData == NULL);
    FORWARD(C_VerifyRecover, hSession, pSignature, ulSignatureLen, pData, pulDataLen);
}

/* ---- dual-function operations -------------------------------------------------------- */

static CK_RV shim_C_DigestEncryptUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen,
                                        CK_BYTE_PTR pEncryptedPart, CK_ULONG_PTR pulEncryptedPartLen)
{
    BEGIN(C_DigestEncryptUpdate);
    ON_SESSION(hSession);
    LENGTH_QUERY(pEncryptedPart == NULL);
    FORWARD(C_DigestEncryptUpdate, hSession, pPart, ulPartLen, pEncryptedPart, pulEncryptedPartLen);
}

static CK_RV shim_C_DecryptDigestUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedPart,
                                        CK_ULONG ulEncryptedPartLen, CK_BYTE_PTR pPart, CK_ULONG_PTR pulPartLen)
{
    BEGIN(C_DecryptDigestUpdate);
    ON_SESSION(hSession);
    LENGTH_QUERY(pPart == NULL);
    FORWARD(C_DecryptDigestUpdate, hSession, pEncryptedPart, ulEncryptedPartLen, pPart, pulPartLen);
}

static CK_RV shim_C_SignEncryptUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen,
                                      CK_BYTE_PTR pEncryptedPart, CK_ULONG_PTR pulEncryptedPartLen)
{
    BEGIN(C_SignEncryptUpdate);
    ON_SESSION(hSession);
    LENGTH_QUERY(pEncryptedPart == NULL);
    FORWARD(C_SignEncryptUpdate, hSession, pPart, ulPartLen, pEncryptedPart, pulEncryptedPartLen);
}

static CK_RV shim_C_DecryptVerifyUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedPart,
                                        CK_ULONG ulEncryptedPartLen, CK_BYTE_PTR pPart, CK_ULONG_PTR pulPartLen)
{
    BEGIN(C_DecryptVerifyUpdate);
    ON_SESSION(hSession);
    LENGTH_QUERY(pPart == NULL);
    FORWARD(C_DecryptVerifyUpdate, hSession, pEncryptedPart, ulEncryptedPartLen, pPart, pulPartLen);
}

/* ---- keys ---------------------------------------------------------------------------- */

static CK_RV shim_C_GenerateKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                                CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount, CK_OBJECT_HANDLE_PTR phKey)
{
    BEGIN(C_GenerateKey);
    ON_SESSION(hSession);
    FORWARD(C_GenerateKey, hSession, pMechanism, pTemplate, ulCount, phKey);
}

static CK_RV shim_C_GenerateKeyPair(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                                    CK_ATTRIBUTE_PTR pPublicKeyTemplate, CK_ULONG ulPublicKeyAttributeCount,
                                    CK_ATTRIBUTE_PTR pPrivateKeyTemplate, CK_ULONG ulPrivateKeyAttributeCount,
                                    CK_OBJECT_HANDLE_PTR phPublicKey, CK_OBJECT_HANDLE_PTR phPrivateKey)
{
    BEGIN(C_GenerateKeyPair);
    ON_SESSION(hSession);
    FORWARD(C_GenerateKeyPair, hSession, pMechanism, pPublicKeyTemplate, ulPublicKeyAttributeCount,
            pPrivateKeyTemplate, ulPrivateKeyAttributeCount, phPublicKey, phPrivateKey);
}

static CK_RV shim_C_WrapKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hWrappingKey,
                            CK_OBJECT_HANDLE hKey, CK_BYTE_PTR pWrappedKey, CK_ULONG_PTR pulWrappedKeyLen)
{
    BEGIN(C_WrapKey);
    ON_SESSION(hSession);
    LENGTH_QUERY(pWrappedKey == NULL);
    FORWARD(C_WrapKey, hSession, pMechanism, hWrappingKey, hKey, pWrappedKey, pulWrappedKeyLen);
}

static CK_RV shim_C_UnwrapKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                              CK_OBJECT_HANDLE hUnwrappingKey, CK_BYTE_PTR pWrappedKey, CK_ULONG ulWrappedKeyLen,
                              CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulAttributeCount, CK_OBJECT_HANDLE_PTR phKey)
{
    BEGIN(C_UnwrapKey);
    ON_SESSION(hSession);
    FORWARD(C_UnwrapKey, hSession, pMechanism, hUnwrappingKey, pWrappedKey, ulWrappedKeyLen, pTemplate,
            ulAttributeCount, phKey);
}

static CK_RV shim_C_DeriveKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hBaseKey,
                              CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulAttributeCount, CK_OBJECT_HANDLE_PTR phKey)
{
    BEGIN(C_DeriveKey);
    ON_SESSION(hSession);
    FORWARD(C_DeriveKey, hSession, pMechanism, hBaseKey, pTemplate, ulAttributeCount, phKey);
}

/* ---- random numbers and legacy ------------------------------------------------------- */

static CK_RV shim_C_SeedRandom(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSeed, CK_ULONG ulSeedLen)
{
    BEGIN(C_SeedRandom);
    ON_SESSION(hSession);
    FORWARD(C_SeedRandom, hSession, pSeed, ulSeedLen);
}

static CK_RV shim_C_GenerateRandom(CK_SESSION_HANDLE hSession, CK_BYTE_PTR RandomData, CK_ULONG ulRandomLen)
{
    BEGIN(C_GenerateRandom);
    ON_SESSION(hSession);
    LENGTH_QUERY(RandomData == NULL);
    FORWARD(C_GenerateRandom, hSession, RandomData, ulRandomLen);
}

static CK_RV shim_C_GetFunctionStatus(CK_SESSION_HANDLE hSession)
{
    BEGIN(C_GetFunctionStatus);
    ON_SESSION(hSession);
    FORWARD(C_GetFunctionStatus, hSession);
}

static CK_RV shim_C_CancelFunction(CK_SESSION_HANDLE hSession)
{
    BEGIN(C_CancelFunction);
    ON_SESSION(hSession);
    FORWARD(C_CancelFunction, hSession);
}

/* A blocking wait must not hold the life lock (C_Finalize from another thread is what makes it
 * return) nor the global lock (it would stall every slot-less call): the real call runs
 * unlocked, the delay under the global lock afterwards. */
static CK_RV shim_C_WaitForSlotEvent(CK_FLAGS flags, CK_SLOT_ID_PTR pSlot, CK_VOID_PTR pReserved)
{
    if (flags & CKF_DONT_BLOCK) {
        BEGIN(C_WaitForSlotEvent);
        FORWARD(C_WaitForSlotEvent, flags, pSlot, pReserved);
    }
    int64_t t0 = now_ns();
    pthread_rwlock_rdlock(&life);
    if (!initialized) {
        pthread_rwlock_unlock(&life);
        return CKR_CRYPTOKI_NOT_INITIALIZED;
    }
    CK_C_WaitForSlotEvent fn = real->C_WaitForSlotEvent;
    unsigned long gen = generation;
    atomic_fetch_add(&blocking_waiters, 1);
    pthread_rwlock_unlock(&life);

    int64_t r0 = now_ns();
    CK_RV rv = fn ? fn(flags, pSlot, pReserved) : CKR_FUNCTION_NOT_SUPPORTED;
    int64_t r1 = now_ns();
    atomic_fetch_sub(&blocking_waiters, 1);

    pthread_rwlock_rdlock(&life);
    if (!initialized || generation != gen) {
        pthread_rwlock_unlock(&life);
        return rv;
    }
    fifo_lock_acquire(&global_lk);
    int64_t delay = inject_delay(SE_FN_C_WaitForSlotEvent, 0, now_ns());
    int64_t t1 = now_ns();
    fifo_lock_release(&global_lk);
    if (log_fd >= 0)
        log_call(SE_FN_C_WaitForSlotEvent, t0, t1, r1 - r0, delay, rv, rv == CKR_OK && pSlot,
                 pSlot ? *pSlot : 0, 0);
    pthread_rwlock_unlock(&life);
    return rv;
}

/* ---- the function list --------------------------------------------------------------- */

SHIM_EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ppFunctionList);
static CK_RV shim_C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ppFunctionList);

static CK_FUNCTION_LIST shim_list = {
    .version = {CRYPTOKI_VERSION_MAJOR, CRYPTOKI_VERSION_MINOR},
#define SHIM_ENTRY(name) .name = shim_##name,
    SE_FUNCTIONS(SHIM_ENTRY)
#undef SHIM_ENTRY
};

/* Our own entry point for the table; the table is valid before C_Initialize (the real module
 * is loaded there). */
static CK_RV shim_C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ppFunctionList)
{
    if (!ppFunctionList)
        return CKR_ARGUMENTS_BAD;
    *ppFunctionList = &shim_list;
    return CKR_OK;
}

SHIM_EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ppFunctionList)
{
    return shim_C_GetFunctionList(ppFunctionList);
}
