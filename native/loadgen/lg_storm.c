/* lg_storm: see lg_storm.h. A binary heap orders the clients' next attempts; the connections run on
 * the same non-blocking state machine as the other modes (lg_conn). */
#include "lg_storm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "lg_conn.h"
#include "lg_report.h"
#include "lg_stats.h"
#include "rng.h"

typedef struct ev {
    uint64_t t;
    uint32_t client;
} ev;

typedef struct heap {
    ev *v;
    size_t n;
} heap;

static void heap_push(heap *h, ev e)
{
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->v[p].t <= e.t)
            break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = e;
}

static ev heap_pop(heap *h)
{
    ev top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const ev *mv = &last;
        if (l < h->n && h->v[l].t < mv->t)
            m = l, mv = &h->v[l];
        if (r < h->n && h->v[r].t < mv->t)
            m = r;
        if (m == i)
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n > 0)
        h->v[i] = last;
    return top;
}

uint64_t lg_backoff_ns(const lg_args *a, unsigned attempt, uint64_t prev_ns, double u)
{
    double base = a->backoff_base_ms * 1e6, cap = a->backoff_cap_ms * 1e6, d;
    switch (a->backoff) {
    case LG_BACKOFF_NONE: return 0;
    case LG_BACKOFF_FIXED: return (uint64_t)base;
    case LG_BACKOFF_EXPONENTIAL: /* full jitter: uniform(0, min(cap, base * 2^(attempt-1))) */
        d = base * (attempt > 60 ? 1e18 : attempt < 2 ? 1.0 : (double)(1ull << (attempt - 1)));
        return (uint64_t)(u * (d < cap ? d : cap));
    default: { /* decorrelated jitter: min(cap, uniform(base, 3 * previous)) */
        double prev = prev_ns ? (double)prev_ns : base, hi = 3 * prev;
        d = base + u * (hi > base ? hi - base : 0);
        return (uint64_t)(d < cap ? d : cap);
    }
    }
}

typedef struct client {
    unsigned attempts;
    uint64_t prev_delay_ns;
    uint64_t back_ns;      /* 0: not yet */
} client;

static double cpu_now_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

int lg_storm_run(const lg_args *a, volatile sig_atomic_t *stop)
{
    unsigned n = a->storm;
    lg_shared sh;
    char err[300];
    if (!lg_shared_init(&sh, a, err, sizeof(err))) {
        json_error_line(stdout, err);
        return 1;
    }
    sh.proc = 0;
    sh.epfd = epoll_create1(EPOLL_CLOEXEC);
    lg_conn *conns = calloc(n, sizeof(*conns));
    client *cl = calloc(n, sizeof(*cl));
    heap h = {calloc(n, sizeof(ev)), 0};
    lg_samples waits = {0};
    lg_reasons reasons;
    memset(&reasons, 0, sizeof(reasons));
    if (sh.epfd < 0 || !conns || !cl || !h.v) {
        json_error_line(stdout, "out of memory or epoll_create1 failed");
        if (sh.epfd >= 0)
            close(sh.epfd);
        free(conns);
        free(cl);
        free(h.v);
        return 1;
    }
    xoshiro256 rng;
    xoshiro256_seed(&rng, a->seed);
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "meta");
    json_obj_str(&o, "tool", "secperf-loadgen");
    json_obj_str(&o, "loop", "storm");
    json_obj_u64(&o, "clients", n);
    json_obj_str(&o, "backoff", lg_backoff_name(a->backoff));
    json_obj_fixed(&o, "backoff_base_ms", 3, a->backoff_base_ms);
    json_obj_fixed(&o, "backoff_cap_ms", 3, a->backoff_cap_ms);
    json_obj_u64(&o, "timeout_ms", a->timeout_ms);
    json_obj_u64(&o, "max_attempts", a->max_attempts);
    json_obj_fixed(&o, "spread_ms", 3, a->spread_ms);
    json_obj_fixed(&o, "duration_s", 3, a->duration_s);
    json_obj_str(&o, "app", lg_app_name(a->app));
    json_obj_str(&o, "clock", CLOCK_MONO_NAME);
    json_end_line(stdout);
    fflush(stdout);

    uint64_t t0 = (uint64_t)clock_mono_ns(), t_end = t0 + (uint64_t)(a->duration_s * 1e9);
    for (unsigned i = 0; i < n; i++) {
        conns[i].fd = -1;
        conns[i].state = LG_DONE;
        uint64_t off = a->spread_ms > 0 ? (uint64_t)(xoshiro256_uniform(&rng) * a->spread_ms * 1e6) : 0;
        heap_push(&h, (ev){t0 + off, i});
    }
    uint64_t interval_ns = (uint64_t)a->interval_ms * 1000000ull, next_iv = t0 + interval_ns, last_sweep = t0;
    uint64_t back = 0, gave_up = 0, failed = 0, attempts = 0, iv_back = 0, iv_failed = 0, in_flight = 0;
    uint64_t last_back_ns = 0;
    double cpu0 = cpu_now_s();
    const char *stopped = "all back";
    struct epoll_event evs[256];

    /* an attempt ended: success (rc > 0) or failure; a failure schedules the retry */
    #define ENDED(c, rc, now)                                                                     \
        do {                                                                                      \
            uint32_t id_ = (uint32_t)(c)->id;                                                     \
            in_flight--;                                                                          \
            if ((rc) > 0) {                                                                       \
                cl[id_].back_ns = (now);                                                          \
                back++, iv_back++;                                                                \
                last_back_ns = (now);                                                             \
                lg_samples_add(&waits, ((now) - t0) / 1000);                                      \
            } else {                                                                              \
                failed++, iv_failed++;                                                            \
                lg_reasons_add(&reasons, (c)->reason);                                            \
                if (cl[id_].attempts >= a->max_attempts) {                                        \
                    gave_up++;                                                                    \
                } else {                                                                          \
                    uint64_t d_ = lg_backoff_ns(a, cl[id_].attempts, cl[id_].prev_delay_ns,       \
                                                xoshiro256_uniform(&rng));                        \
                    cl[id_].prev_delay_ns = d_;                                                   \
                    heap_push(&h, (ev){(now) + d_, id_});                                         \
                }                                                                                 \
            }                                                                                     \
        } while (0)

    for (;;) {
        uint64_t now = (uint64_t)clock_mono_ns();
        if (back + gave_up >= n)
            break;
        if (stop != NULL && *stop) {
            stopped = "signal";
            break;
        }
        if (now >= t_end) {
            stopped = "duration";
            break;
        }
        while (h.n > 0 && h.v[0].t <= now) {
            ev e = heap_pop(&h);
            lg_conn *c = &conns[e.client];
            cl[e.client].attempts++;
            attempts++;
            in_flight++;
            if (!lg_conn_start(&sh, c, now, 0, e.client))
                ENDED(c, -1, now);
        }
        if (now >= next_iv) {
            json_obj_begin(&o, stdout);
            json_obj_str(&o, "type", "interval");
            json_obj_fixed(&o, "t_s", 3, (double)(now - t0) / 1e9);
            json_obj_u64(&o, "back", iv_back);
            json_obj_u64(&o, "back_total", back);
            json_obj_u64(&o, "failed", iv_failed);
            json_obj_u64(&o, "in_flight", in_flight);
            json_obj_u64(&o, "waiting_retry", h.n);
            json_end_line(stdout);
            iv_back = iv_failed = 0;
            next_iv += interval_ns;
        }
        uint64_t wake = next_iv < t_end ? next_iv : t_end;
        if (h.n > 0 && h.v[0].t < wake)
            wake = h.v[0].t;
        int timeout_ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
        if (timeout_ms > 20)
            timeout_ms = 20;
        int k = epoll_wait(sh.epfd, evs, 256, timeout_ms);
        if (k < 0 && errno != EINTR)
            break;
        now = (uint64_t)clock_mono_ns();
        for (int i = 0; i < k; i++) {
            lg_conn *c = evs[i].data.ptr;
            int rc = lg_conn_step(&sh, c, now);
            if (rc != 0)
                ENDED(c, rc, (uint64_t)clock_mono_ns());
        }
        if (now - last_sweep > 20000000ull) {
            last_sweep = now;
            for (unsigned s = 0; s < n; s++) {
                lg_conn *c = &conns[s];
                if (c->state != LG_DONE && c->fd >= 0 && now > c->deadline_ns) {
                    char why[64];
                    snprintf(why, sizeof(why), "timed out after %u ms", a->timeout_ms);
                    lg_conn_abort(&sh, c, why);
                    ENDED(c, -1, now);
                }
            }
        }
    }
    #undef ENDED
    double cpu = cpu_now_s() - cpu0;
    uint64_t now = (uint64_t)clock_mono_ns();
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "end");
    json_obj_str(&o, "loop", "storm");
    json_obj_str(&o, "stopped", stopped);
    json_obj_u64(&o, "clients", n);
    json_obj_u64(&o, "back", back);
    json_obj_u64(&o, "gave_up", gave_up);
    json_obj_u64(&o, "attempts", attempts);
    json_obj_u64(&o, "failed_attempts", failed);
    json_obj_fixed(&o, "elapsed_s", 4, (double)(now - t0) / 1e9);
    if (back == n)
        json_obj_fixed(&o, "time_all_back_s", 4, (double)(last_back_ns - t0) / 1e9);
    lg_samples_sort(&waits);
    static const struct { const char *k; double q; } qs[] = {
        {"wait_p50_s", 0.5}, {"wait_p90_s", 0.9}, {"wait_p99_s", 0.99}, {"wait_max_s", 1.0}};
    /* percentiles over all clients: one that never came back counts as not yet back (omitted) */
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        double rank = qs[i].q * n;
        if (waits.n > 0 && rank <= (double)waits.n)
            json_obj_fixed(&o, qs[i].k, 4, lg_samples_quantile(&waits, rank / waits.n) / 1e6);
    }
    /* the clients' waits in log-linear bins (µs): several generators' storms merge exactly */
    lg_json_hist(&o, "wait_hist_us", &waits);
    json_obj_fixed(&o, "cpu_s", 6, cpu);
    lg_json_reasons(&o, "errors", &reasons);
    json_end_line(stdout);
    for (unsigned s = 0; s < n; s++)
        if (conns[s].state != LG_DONE && conns[s].fd >= 0)
            lg_conn_abort(&sh, &conns[s], "storm ended");
    close(sh.epfd);
    lg_shared_free(&sh);
    lg_samples_free(&waits);
    free(conns);
    free(cl);
    free(h.v);
    return 0;
}
