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

#include "clock.h"
#include "forwarders.h"
#include "json.h"
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

static inline int64_t now_ns(void) { return clock_mono_ns(); }

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
static xoshiro256 rng;
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

/* One JSON line per call, built in memory and written with one write() on the O_APPEND fd, so
 * lines of concurrent calls and processes never interleave. */
static void log_call(int fn, int64_t t0, int64_t t1, int64_t real_ns, int64_t delay_ns, CK_RV rv,
                     int has_slot, CK_SLOT_ID slot, int length_query)
{
    char buf[384];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    if (!f)
        return;
    json_obj o;
    json_obj_begin(&o, f);
    json_obj_str(&o, "fn", se_fn_names[fn]);
    json_obj_i64(&o, "start_ns", t0);
    json_obj_i64(&o, "duration_ns", t1 - t0);
    json_obj_i64(&o, "real_ns", real_ns);
    json_obj_i64(&o, "delay_ns", delay_ns);
    json_obj_u64(&o, "rv", (uint64_t)rv);
    json_obj_i64(&o, "pid", (int64_t)getpid());
    if (has_slot)
        json_obj_u64(&o, "slot", (uint64_t)slot);
    else
        json_obj_null(&o, "slot");
    json_obj_bool(&o, "length_query", length_query);
    json_end_line(f);
    long n = ftell(f);
    int ok = !ferror(f) && n > 0 && (size_t)n < sizeof buf;
    fclose(f);
    if (ok) {
        ssize_t w = write(log_fd, buf, (size_t)n);
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
    xoshiro256_seed(&rng, prof.seed);
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

/* ---- sessions: the forwarders that keep the session -> slot table ------------------- */

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

/* ---- the pass-through forwarders (forwarders.h) ------------------------------------- */

/* C_GetAttributeValue is a length query when no attribute has a buffer. */
static int all_values_null(CK_ATTRIBUTE_PTR t, CK_ULONG n)
{
    if (!t)
        return 1;
    for (CK_ULONG i = 0; i < n; i++)
        if (t[i].pValue != NULL)
            return 0;
    return 1;
}

#define ROUTE_NONE(on) ((void)(on))
#define ROUTE_SLOT(on) ON_SLOT(on)
#define ROUTE_SESSION(on) ON_SESSION(on)
/* One forwarder: route to the token lock, mark a length query, call the real function, inject
 * the delay and log (call_leave). The same steps the hand-written ones above take. */
#define SHIM_FORWARDER(name, route, on, length_query, params, args)                             \
    static CK_RV shim_##name params                                                            \
    {                                                                                          \
        BEGIN(name);                                                                           \
        ROUTE_##route(on);                                                                     \
        LENGTH_QUERY(length_query);                                                            \
        CK_RV rv_;                                                                             \
        call_enter(&c_);                                                                       \
        rv_ = real->name ? real->name args : CKR_FUNCTION_NOT_SUPPORTED;                       \
        c_.r1 = now_ns();                                                                      \
        return call_leave(&c_, rv_);                                                           \
    }
SHIM_FORWARDERS(SHIM_FORWARDER)
#undef SHIM_FORWARDER

/* ---- slot events --------------------------------------------------------------------- */

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
