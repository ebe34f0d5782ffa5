/* secperf-loadgen: drives one TLS server with many concurrent connections from one or several
 * processes (see lg_usage) and reports what it achieved, per interval and in total. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include "clock.h"
#include "json.h"
#include "lg_io.h"
#include "lg_args.h"
#include "lg_conn.h"
#include "lg_report.h"
#include "lg_stats.h"
#include "lg_storm.h"
#include "rng.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

typedef struct counts {
    uint64_t ok, full, resumed, resume_missed, failed, started, dropped;
    uint64_t cookie, retransmits;  /* DTLS: handshakes with a cookie exchange; flights sent again */
} counts;

typedef struct run {
    const lg_args *a;
    lg_shared sh;
    lg_conn *conns;
    unsigned slots;
    unsigned *free_slots;
    unsigned nfree;
    xoshiro256 rng;
    counts total, iv;
    lg_samples lat_total, lat_hs, lat_iv;
    lg_reasons reasons;
    uint64_t t_measure_ns, t_end_ns, next_id;
    unsigned proc;
    unsigned concurrency;     /* this process's share (closed loop) */
    double rate;              /* this process's share (open loop) */
} run;

static void write_counts(json_obj *o, const counts *c)
{
    json_obj_u64(o, "handshakes", c->ok);
    json_obj_u64(o, "full", c->full);
    json_obj_u64(o, "resumed", c->resumed);
    json_obj_u64(o, "resume_missed", c->resume_missed);
    json_obj_u64(o, "failed", c->failed);
    json_obj_u64(o, "started", c->started);
    json_obj_u64(o, "not_started", c->dropped);
    json_obj_u64(o, "cookie_exchanges", c->cookie);
    json_obj_u64(o, "retransmits", c->retransmits);
}

static void write_meta(run *r)
{
    const lg_args *a = r->a;
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "meta");
    json_obj_str(&o, "tool", "secperf-loadgen");
    json_obj_str(&o, "library", OpenSSL_version(OPENSSL_VERSION));
    json_obj_u64(&o, "proc", r->proc);
    json_obj_u64(&o, "procs", a->procs);
    json_obj_i64(&o, "pid", (int64_t)getpid());
    json_obj_str(&o, "loop", a->rate > 0 ? "open" : "closed");
    json_obj_u64(&o, "concurrency", r->concurrency);
    json_obj_fixed(&o, "rate_per_s", 3, r->rate);
    json_obj_str(&o, "arrivals", a->rate > 0 ? (a->poisson ? "poisson" : "fixed") : "closed");
    json_obj_fixed(&o, "duration_s", 3, a->duration_s);
    json_obj_fixed(&o, "warmup_s", 3, a->warmup_s);
    json_obj_fixed(&o, "resume_ratio", 4, a->resume_ratio);
    json_obj_str(&o, "app", lg_app_name(a->app));
    json_obj_bool(&o, "client_cert", a->cert != NULL);
    json_obj_str(&o, "tls", a->tls);
    json_obj_str(&o, "protocol", a->dtls ? "dtls1.2" : "tls");
    json_obj_str(&o, "clock", CLOCK_MONO_NAME);
    json_obj_str(&o, "latency_from", a->rate > 0 ? "scheduled start" : "connect start");
    json_end_line(stdout);
}

static void write_interval(run *r, uint64_t now)
{
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "interval");
    json_obj_u64(&o, "proc", r->proc);
    json_obj_fixed(&o, "t_s", 3, (double)(now - r->t_measure_ns) / 1e9);
    write_counts(&o, &r->iv);
    json_obj_u64(&o, "in_flight", r->slots - r->nfree);
    lg_json_quantiles(&o, "", &r->lat_iv, LG_Q_P95);
    json_end_line(stdout);
    memset(&r->iv, 0, sizeof(r->iv));
    lg_samples_clear(&r->lat_iv);
}

static void write_end(run *r, uint64_t now, double cpu_s, const char *stopped)
{
    double elapsed = (double)(now - r->t_measure_ns) / 1e9;
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "end");
    json_obj_u64(&o, "proc", r->proc);
    json_obj_str(&o, "stopped", stopped);
    json_obj_fixed(&o, "elapsed_s", 4, elapsed);
    write_counts(&o, &r->total);
    json_obj_u64(&o, "in_flight_at_end", r->slots - r->nfree);
    json_obj_fixed(&o, "handshakes_per_s", 2, elapsed > 0 ? r->total.ok / elapsed : 0);
    json_obj_fixed(&o, "target_rate_per_s", 3, r->rate);
    json_obj_fixed(&o, "started_per_s", 2, elapsed > 0 ? r->total.started / elapsed : 0);
    json_obj_fixed(&o, "cpu_s", 6, cpu_s);
    json_obj_fixed(&o, "cpu_us_per_handshake", 2, r->total.ok ? cpu_s * 1e6 / r->total.ok : 0);
    lg_json_quantiles(&o, "", &r->lat_total, LG_Q_P95);
    lg_json_quantiles(&o, "hs_", &r->lat_hs, LG_Q_P95);
    /* the latencies' log-linear bins: several generators' runs merge exactly, bin by bin */
    lg_json_hist(&o, "hist_us", &r->lat_total);
    lg_json_hist(&o, "hs_hist_us", &r->lat_hs);
    lg_json_reasons(&o, "errors", &r->reasons);
    json_end_line(stdout);
}

static double cpu_now_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void record(run *r, lg_conn *c, int outcome, uint64_t now)
{
    if (now < r->t_measure_ns || now > r->t_end_ns)
        return; /* warm-up, or after the window */
    counts *cs[2] = {&r->total, &r->iv};
    for (int i = 0; i < 2; i++) {
        cs[i]->retransmits += c->retransmits;
        if (outcome > 0 && c->cookie)
            cs[i]->cookie++;
        if (outcome > 0) {
            cs[i]->ok++;
            if (c->resumed)
                cs[i]->resumed++;
            else
                cs[i]->full++;
            if (c->offered_session && !c->resumed)
                cs[i]->resume_missed++;
        } else {
            cs[i]->failed++;
        }
    }
    if (outcome > 0) {
        uint64_t us = (now - c->t_start_ns) / 1000;
        lg_samples_add(&r->lat_total, us);
        lg_samples_add(&r->lat_iv, us);
        lg_samples_add(&r->lat_hs, (c->t_hs_ns - c->t_start_ns) / 1000);
    } else {
        char why[260];
        snprintf(why, sizeof(why), "%s: %s", c->stage ? c->stage : "?", c->reason);
        /* the stage is already the reason's first word for most failures */
        const char *text = strncmp(c->reason, c->stage ? c->stage : "", c->stage ? strlen(c->stage) : 0) == 0
                               ? c->reason : why;
        lg_reasons_add(&r->reasons, text);
    }
}

/* Starts a connection in a free slot; 0 when none is free. */
static int start_one(run *r, uint64_t t_start)
{
    if (r->nfree == 0)
        return 0;
    unsigned slot = r->free_slots[--r->nfree];
    lg_conn *c = &r->conns[slot];
    int offer = r->a->resume_ratio > 0 && xoshiro256_uniform(&r->rng) < r->a->resume_ratio;
    uint64_t now = (uint64_t)clock_mono_ns();
    if (now >= r->t_measure_ns)
        r->total.started++, r->iv.started++;
    if (!lg_conn_start(&r->sh, c, t_start, offer, r->next_id++)) {
        record(r, c, -1, now);
        r->free_slots[r->nfree++] = slot;
    }
    return 1;
}

static void release(run *r, lg_conn *c)
{
    r->free_slots[r->nfree++] = (unsigned)(c - r->conns);
}

static int run_loop(run *r)
{
    const lg_args *a = r->a;
    int open_loop = a->rate > 0;
    uint64_t t0 = (uint64_t)clock_mono_ns();
    r->t_measure_ns = t0 + (uint64_t)(a->warmup_s * 1e9);
    r->t_end_ns = r->t_measure_ns + (uint64_t)(a->duration_s * 1e9);
    uint64_t interval_ns = (uint64_t)a->interval_ms * 1000000ull;
    uint64_t next_iv = r->t_measure_ns + interval_ns;
    double gap_ns = open_loop ? 1e9 / r->rate : 0;
    /* processes start their arrivals staggered by a fraction of the gap */
    double next_arrival = (double)t0 + (open_loop ? gap_ns * r->proc / a->procs : 0);
    struct epoll_event evs[256];
    double cpu0 = -1;
    const char *stopped = "duration";

    if (!open_loop)
        for (unsigned i = 0; i < r->concurrency; i++)
            start_one(r, (uint64_t)clock_mono_ns());
    uint64_t last_sweep = t0;
    uint64_t next_timer = UINT64_MAX;   /* DTLS: the nearest retransmission timer */
    for (;;) {
        uint64_t now = (uint64_t)clock_mono_ns();
        if (cpu0 < 0 && now >= r->t_measure_ns)
            cpu0 = cpu_now_s(); /* interval counts need no reset: record() counts inside the window only */
        if (stop_requested) {
            stopped = "signal";
            break;
        }
        if (now >= r->t_end_ns)
            break;
        if (a->max_handshakes && r->total.ok + r->total.failed >= a->max_handshakes) {
            stopped = "max-handshakes";
            break;
        }
        if (now >= next_iv) {
            write_interval(r, now);
            next_iv += interval_ns;
        }
        if (open_loop) {
            while (next_arrival <= (double)now) {
                if (!start_one(r, (uint64_t)next_arrival)) {
                    if (now >= r->t_measure_ns)
                        r->total.dropped++, r->iv.dropped++;
                }
                double g = a->poisson ? -log(xoshiro256_uniform_open(&r->rng)) * gap_ns : gap_ns;
                next_arrival += g;
            }
        }
        uint64_t wake = next_iv < r->t_end_ns ? next_iv : r->t_end_ns;
        if (open_loop && next_arrival < (double)wake)
            wake = (uint64_t)next_arrival;
        if (next_timer < wake)
            wake = next_timer;
        int timeout_ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
        if (timeout_ms > 50)
            timeout_ms = 50; /* deadlines are swept at least this often */
        int n = epoll_wait(r->sh.epfd, evs, 256, timeout_ms);
        if (n < 0 && errno != EINTR)
            return 0;
        now = (uint64_t)clock_mono_ns();
        for (int i = 0; i < n; i++) {
            lg_conn *c = evs[i].data.ptr;
            int rc = lg_conn_step(&r->sh, c, now);
            if (rc == 0) {
                if (c->timer_ns && c->timer_ns < next_timer)
                    next_timer = c->timer_ns;   /* DTLS: a timer (re)armed by this step */
                continue;
            }
            uint64_t done = (uint64_t)clock_mono_ns();
            record(r, c, rc, done);
            release(r, c);
        }
        if (!open_loop) /* closed loop: refill every slot that ended (one pass per wake-up) */
            for (unsigned k = r->nfree; k > 0; k--)
                start_one(r, (uint64_t)clock_mono_ns());
        now = (uint64_t)clock_mono_ns();
        if (r->sh.dtls && now >= next_timer) {
            /* OpenSSL's DTLS timers: when the nearest one is due, every connection's is run (and the
             * nearest found again); a step above that armed a timer lowered next_timer */
            next_timer = UINT64_MAX;
            for (unsigned s = 0; s < r->slots; s++) {
                lg_conn *c = &r->conns[s];
                if (c->state == LG_DONE || c->fd < 0)
                    continue;
                if (lg_conn_timer(&r->sh, c, now, &next_timer) < 0) {
                    record(r, c, -1, now);
                    release(r, c);
                }
            }
        }
        if (now - last_sweep > 20000000ull) {
            last_sweep = now;
            for (unsigned s = 0; s < r->slots; s++) {
                lg_conn *c = &r->conns[s];
                if (c->state != LG_DONE && c->fd >= 0 && now > c->deadline_ns) {
                    char why[64];
                    snprintf(why, sizeof(why), "timed out after %u ms", a->timeout_ms);
                    lg_conn_abort(&r->sh, c, why);
                    record(r, c, -1, now);
                    release(r, c);
                }
            }
        }
    }
    uint64_t now = (uint64_t)clock_mono_ns();
    if (now > r->t_end_ns)
        now = r->t_end_ns; /* the window's end: later completions were not counted */
    double cpu = cpu0 < 0 ? 0 : cpu_now_s() - cpu0;
    if (r->iv.ok || r->iv.failed)
        write_interval(r, now);
    write_end(r, now, cpu, stopped);
    /* connections still in flight are closed, not counted (the window ended) */
    for (unsigned s = 0; s < r->slots; s++)
        if (r->conns[s].state != LG_DONE && r->conns[s].fd >= 0)
            lg_conn_abort(&r->sh, &r->conns[s], "window ended");
    return 1;
}

static int run_proc(const lg_args *a, unsigned proc)
{
    static run r;
    memset(&r, 0, sizeof(r));
    r.a = a;
    r.proc = proc;
    if (a->rate > 0) {
        r.rate = a->rate / a->procs;
        r.slots = a->max_inflight;
    } else {
        r.concurrency = a->concurrency / a->procs + (proc < a->concurrency % a->procs ? 1 : 0);
        r.slots = r.concurrency;
    }
    xoshiro256_seed(&r.rng, a->seed + proc);
    char err[300];
    if (!lg_shared_init(&r.sh, a, err, sizeof(err))) {
        json_error_line(stdout, err);
        return 2;
    }
    r.sh.proc = proc;
    r.sh.epfd = epoll_create1(EPOLL_CLOEXEC);
    r.conns = calloc(r.slots, sizeof(*r.conns));
    r.free_slots = calloc(r.slots, sizeof(*r.free_slots));
    if (r.sh.epfd < 0 || r.conns == NULL || r.free_slots == NULL) {
        json_error_line(stdout, "out of memory or epoll_create1 failed");
        return 1;
    }
    for (unsigned i = 0; i < r.slots; i++) {
        r.conns[i].fd = -1;
        r.conns[i].state = LG_DONE;
        r.free_slots[r.nfree++] = r.slots - 1 - i;
    }
    write_meta(&r);
    int ok = run_loop(&r);
    close(r.sh.epfd);
    lg_shared_free(&r.sh);
    lg_samples_free(&r.lat_total);
    lg_samples_free(&r.lat_hs);
    lg_samples_free(&r.lat_iv);
    free(r.conns);
    free(r.free_slots);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    lg_args a;
    char err[300];
    if (!lg_args_parse(argc, argv, &a, err, sizeof(err))) {
        fprintf(stderr, "secperf-loadgen: %s\n", err);
        return 2;
    }
    if (a.help) {
        lg_usage(stdout);
        return 0;
    }
    lg_stop_signals(on_signal);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (a.storm > 0)
        return lg_storm_run(&a, &stop_requested);
    if (a.procs == 1)
        return run_proc(&a, 0);
    fflush(stdout);
    pid_t kids[64];
    unsigned started = 0;
    for (unsigned i = 0; i < a.procs; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(run_proc(&a, i));
        if (pid < 0)
            break;
        kids[started++] = pid;
    }
    int rc = started == a.procs ? 0 : 1;
    for (unsigned i = 0; i < started; i++) {
        int st = 0;
        while (waitpid(kids[i], &st, 0) < 0) {
            if (errno != EINTR)
                break;
            if (stop_requested) /* pass the stop on to every process we started */
                for (unsigned k = 0; k < started; k++)
                    kill(kids[k], SIGTERM);
        }
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        if (code > rc)
            rc = code;
    }
    return rc;
}
