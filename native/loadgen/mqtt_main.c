/* secperf-mqttload: N persistent MQTT 3.1.1 clients over TLS against one broker (see usage). Phases:
 * ramp (clients connect at --connect-rate until all are up), hold (--hold seconds connected,
 * publishing at --publish-rate over all clients, keep-alive), and with --storm a reconnect storm (every
 * connection dropped at once; each client comes back under the back-off policy). JSON lines on stdout:
 * meta, interval lines, one phase line per phase (counts, CONNACK / PUBACK / wait histograms, failures
 * by reason with refusals apart), end. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "clock.h"
#include "json.h"
#include "lg_io.h"
#include "lg_mqtt.h"
#include "lg_mqtt_args.h"
#include "lg_report.h"
#include "lg_stats.h"
#include "lg_storm.h"
#include "rng.h"

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

typedef struct pstats {
    uint64_t attempts, connected, failed, refused, dropped, gave_up, resumed, offered, se_waits;
    uint64_t pub0, pub1, pub2, pubacks, skipped, pings, pingresps;
    uint64_t t_start_ns, t_all_up_ns;
    double cpu0_s;            /* the generator's CPU (user + system) when the phase began */
    lg_samples connack, hs, puback, wait;
    lg_reasons reasons;
} pstats;

typedef struct ivstats { uint64_t connacks, failed, pubs, pubacks; } ivstats;

enum { PH_RAMP, PH_HOLD, PH_STORM };
static const char *const phase_names[] = {"ramp", "hold", "storm"};

typedef struct loop {
    const mq_args *a;
    lg_args backoff;          /* the back-off fields only (lg_backoff_ns) */
    mq_shared sh;
    mq_client *c;
    unsigned n, up, peak_up;
    xoshiro256 rng;
    pstats ps;
    ivstats iv;
    int phase;
    /* --storm-sync: the storm_ready line written, the instant read from stdin, or why the drop did not wait */
    int ready;
    uint64_t ready_ns;
    int64_t storm_at_ns, drop_rt_ns;
    const char *sync_note;
    char in[160];
    size_t in_len;
} loop;

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

static double cpu_now_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void write_phase(loop *L, uint64_t now, const char *stopped)
{
    pstats *p = &L->ps;
    unsigned in_progress = 0, waiting = 0, abandoned = 0;
    for (unsigned i = 0; i < L->n; i++) {
        mq_state s = L->c[i].state;
        if (s == MQ_DOWN)
            *(L->c[i].t_next_ns ? &waiting : &abandoned) += 1;
        else if (s != MQ_UP)
            in_progress++;
    }
    uint64_t missing = 0, pings_out = 0;
    for (unsigned i = 0; i < L->n; i++) {
        missing += L->c[i].pub_inflight != 0;
        pings_out += L->c[i].ping_out;
    }
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "phase");
    json_obj_str(&o, "phase", phase_names[L->phase]);
    json_obj_str(&o, "stopped", stopped);
    json_obj_fixed(&o, "elapsed_s", 4, (double)(now - p->t_start_ns) / 1e9);
    json_obj_fixed(&o, "cpu_s", 6, cpu_now_s() - p->cpu0_s);
    if (L->phase == PH_STORM) {
        json_obj_i64(&o, "drop_realtime_ns", L->drop_rt_ns);
        if (L->storm_at_ns) {
            json_obj_i64(&o, "storm_at_ns", L->storm_at_ns);
            json_obj_i64(&o, "drop_late_ns", L->drop_rt_ns - L->storm_at_ns);
        } else {
            json_obj_null(&o, "storm_at_ns");
            json_obj_null(&o, "drop_late_ns");
        }
        json_obj_str(&o, "storm_sync", !L->a->storm_sync ? "off" : L->sync_note ? L->sync_note : "storm-at");
    }
    json_obj_u64(&o, "clients", L->n);
    json_obj_u64(&o, "up_at_end", L->up);
    json_obj_u64(&o, "connecting_at_end", in_progress);
    json_obj_u64(&o, "waiting_retry_at_end", waiting);
    json_obj_u64(&o, "gave_up", p->gave_up);
    json_obj_u64(&o, "abandoned_at_end", abandoned);
    if (p->t_all_up_ns)
        json_obj_fixed(&o, "time_all_up_s", 4, (double)(p->t_all_up_ns - p->t_start_ns) / 1e9);
    else
        json_obj_null(&o, "time_all_up_s");
    json_obj_u64(&o, "attempts", p->attempts);
    json_obj_u64(&o, "connacks", p->connected);
    json_obj_u64(&o, "failed", p->failed);
    json_obj_u64(&o, "refused", p->refused);
    json_obj_u64(&o, "dropped", p->dropped);
    json_obj_u64(&o, "offered_session", p->offered);
    json_obj_u64(&o, "resumed", p->resumed);
    json_obj_u64(&o, "se_waits", p->se_waits);
    json_obj_u64(&o, "published_qos0", p->pub0);
    json_obj_u64(&o, "published_qos1", p->pub1);
    json_obj_u64(&o, "published_qos2", p->pub2);
    json_obj_u64(&o, "pubacks", p->pubacks);
    json_obj_u64(&o, "pubacks_outstanding_at_end", missing);
    json_obj_u64(&o, "publish_skipped", p->skipped);
    json_obj_u64(&o, "pings", p->pings);
    json_obj_u64(&o, "pingresps", p->pingresps);
    json_obj_u64(&o, "pings_outstanding_at_end", pings_out);
    lg_json_quantiles(&o, "connack_", &p->connack, LG_Q_NULL_EMPTY);
    lg_json_quantiles(&o, "puback_", &p->puback, LG_Q_NULL_EMPTY);
    lg_json_quantiles(&o, "wait_", &p->wait, LG_Q_NULL_EMPTY);
    lg_json_hist(&o, "connack_hist_us", &p->connack);
    lg_json_hist(&o, "hs_hist_us", &p->hs);
    lg_json_hist(&o, "puback_hist_us", &p->puback);
    lg_json_hist(&o, "wait_hist_us", &p->wait);
    lg_json_reasons(&o, "errors", &p->reasons);
    json_end_line(stdout);
    fflush(stdout);
}

static void reset_phase(loop *L, int phase, uint64_t now)
{
    pstats *p = &L->ps;
    lg_samples keep[4] = {p->connack, p->hs, p->puback, p->wait};
    memset(p, 0, sizeof(*p));
    p->connack = keep[0], p->hs = keep[1], p->puback = keep[2], p->wait = keep[3];
    lg_samples_clear(&p->connack);
    lg_samples_clear(&p->hs);
    lg_samples_clear(&p->puback);
    lg_samples_clear(&p->wait);
    p->t_start_ns = now;
    p->cpu0_s = cpu_now_s();
    L->phase = phase;
    if (L->up == L->n)
        p->t_all_up_ns = now;
}

/* An attempt or a connection ended badly: count it, schedule the next attempt under the policy. */
static void on_failed(loop *L, mq_client *c, int was_up, uint64_t now)
{
    pstats *p = &L->ps;
    char why[200];
    snprintf(why, sizeof(why), "%s%s", c->refused ? "refused: " : "", c->reason);
    lg_reasons_add(&p->reasons, why);
    if (was_up) {
        p->dropped++;
        L->up--;
        c->attempts = 0;
        c->prev_delay_ns = 0;
        c->t_down_ns = now;
        c->t_next_ns = now;
        return;
    }
    if (c->refused)
        p->refused++;
    else
        p->failed++;
    L->iv.failed++;
    c->attempts++;
    if (c->attempts >= L->a->max_attempts) {
        p->gave_up++;
        c->t_next_ns = 0;
        return;
    }
    uint64_t d = lg_backoff_ns(&L->backoff, c->attempts, c->prev_delay_ns, xoshiro256_uniform(&L->rng));
    c->prev_delay_ns = d;
    c->t_next_ns = now + d;
}

static void on_events(loop *L, mq_client *c, int ev, int was_up, uint64_t ack_us, uint64_t now)
{
    pstats *p = &L->ps;
    if (ev & MQ_EV_SE_WAIT)
        p->se_waits++;
    if (ev & MQ_EV_CONNACK) {
        p->connected++;
        L->iv.connacks++;
        p->resumed += c->resumed;
        lg_samples_add(&p->connack, (now - c->t_start_ns) / 1000);
        lg_samples_add(&p->hs, (c->t_hs_ns - c->t_start_ns) / 1000);
        if (c->t_down_ns) {
            lg_samples_add(&p->wait, (now - (c->t_down_ns > p->t_start_ns ? c->t_down_ns : p->t_start_ns)) / 1000);
            c->t_down_ns = 0;
        }
        c->attempts = 0;
        c->prev_delay_ns = 0;
        if (++L->up > L->peak_up)
            L->peak_up = L->up;
        if (L->up == L->n && !p->t_all_up_ns)
            p->t_all_up_ns = now;
    }
    if (ev & MQ_EV_PUBACK) {
        p->pubacks++;
        L->iv.pubacks++;
        lg_samples_add(&p->puback, ack_us);
    }
    if (ev & MQ_EV_PINGRESP)
        p->pingresps++;
    if (ev & MQ_EV_FAILED)
        on_failed(L, c, was_up || (ev & MQ_EV_CONNACK), now);
}

static void start_attempt(loop *L, mq_client *c, uint64_t now)
{
    int offer = L->a->resume_ratio > 0 && xoshiro256_uniform(&L->rng) < L->a->resume_ratio;
    L->ps.attempts++;
    c->t_next_ns = 0;
    if (!lg_mqtt_start(&L->sh, c, now, offer)) {
        on_failed(L, c, 0, now);
        return;
    }
    L->ps.offered += c->offered;
}

/* Due attempts, secure-element waits that ended, timeouts and keep-alive, one pass over the clients. */
static void sweep(loop *L, uint64_t now, int keepalive_due)
{
    const mq_args *a = L->a;
    uint64_t ka_ns = (uint64_t)a->keepalive_s * 500000000ull; /* ping after half the keep-alive idle */
    for (unsigned i = 0; i < L->n; i++) {
        mq_client *c = &L->c[i];
        switch (c->state) {
        case MQ_DOWN:
            if (c->t_next_ns && c->t_next_ns <= now)
                start_attempt(L, c, now);
            break;
        case MQ_UP:
            if (keepalive_due && a->keepalive_s && now - c->last_tx_ns >= ka_ns) {
                int r = lg_mqtt_ping(&L->sh, c, now);
                if (r > 0)
                    L->ps.pings++;
                else if (r < 0)
                    on_failed(L, c, 1, now);
            }
            break;
        default:
            if (now > c->deadline_ns) {
                char st[24];
                snprintf(st, sizeof(st), "%s", lg_mqtt_state_name(c->state));
                lg_mqtt_close(&L->sh, c, 0);
                snprintf(c->reason, sizeof(c->reason), "%s: timed out after %u ms", st, a->timeout_ms);
                c->refused = 0;
                on_failed(L, c, 0, now);
            } else if (c->state == MQ_SE_WAIT && now >= c->t_next_ns) {
                uint64_t ack = 0;
                int ev = lg_mqtt_step(&L->sh, c, now, &ack);
                on_events(L, c, ev, 0, ack, (uint64_t)clock_mono_ns());
            }
        }
    }
}

static void publish_due(loop *L, double *next_pub, uint64_t now, unsigned *rr)
{
    const mq_args *a = L->a;
    double gap = 1e9 / a->publish_rate;
    if ((double)now - *next_pub > 1e9) { /* the loop stalled: what it could not send is counted, not sent late */
        uint64_t behind = (uint64_t)(((double)now - *next_pub) / gap);
        L->ps.skipped += behind;
        *next_pub += (double)behind * gap;
    }
    while (*next_pub <= (double)now) {
        int sent = 0;
        for (unsigned k = 0; k < L->n && !sent; k++) {
            mq_client *c = &L->c[(*rr)++ % L->n];
            int r = lg_mqtt_publish(&L->sh, c, a->qos, a->payload, now);
            if (r > 0) {
                sent = 1;
                if (a->qos == 2)
                    L->ps.pub2++;
                else if (a->qos == 1)
                    L->ps.pub1++;
                else
                    L->ps.pub0++;
                L->iv.pubs++;
            } else if (r < 0) {
                on_failed(L, c, 1, now);
            }
        }
        if (!sent)
            L->ps.skipped++;
        *next_pub += gap;
    }
}

static void write_interval(loop *L, uint64_t now, uint64_t t0)
{
    unsigned down = 0;
    for (unsigned i = 0; i < L->n; i++)
        down += L->c[i].state == MQ_DOWN;
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "interval");
    json_obj_str(&o, "phase", phase_names[L->phase]);
    json_obj_fixed(&o, "t_s", 3, (double)(now - t0) / 1e9);
    json_obj_u64(&o, "up", L->up);
    json_obj_u64(&o, "down", down);
    json_obj_u64(&o, "connecting", L->n - L->up - down);
    json_obj_u64(&o, "connacks", L->iv.connacks);
    json_obj_u64(&o, "failed", L->iv.failed);
    json_obj_u64(&o, "published", L->iv.pubs);
    json_obj_u64(&o, "pubacks", L->iv.pubacks);
    json_end_line(stdout);
    fflush(stdout);
    memset(&L->iv, 0, sizeof(L->iv));
}

/* stdin while the storm waits for its instant: "storm-at NS\n" sets it; end of file or another line
 * sets why the drop does not wait (it happens at once). */
static void read_instant(loop *L)
{
    for (;;) {
        ssize_t k = read(STDIN_FILENO, L->in + L->in_len, sizeof(L->in) - 1 - L->in_len);
        if (k < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                L->sync_note = "stdin unreadable before storm-at";
            return;
        }
        if (k == 0) {
            L->sync_note = "stdin closed before storm-at";
            return;
        }
        L->in_len += (size_t)k;
        L->in[L->in_len] = '\0';
        char *nl = strchr(L->in, '\n');
        if (nl == NULL) {
            if (L->in_len >= sizeof(L->in) - 1)
                L->sync_note = "bad line on stdin (want: storm-at NS)";
            if (L->sync_note)
                return;
            continue;
        }
        *nl = '\0';
        char *end = NULL;
        errno = 0;
        long long at = strncmp(L->in, "storm-at ", 9) == 0 ? strtoll(L->in + 9, &end, 10) : 0;
        if (end == NULL || *end != '\0' || errno != 0 || at <= 0)
            L->sync_note = "bad line on stdin (want: storm-at NS)";
        else
            L->storm_at_ns = at;
        return;
    }
}

/* May the storm begin? At once without --storm-sync; with it, once the instant from stdin is reached
 * (the last few ms slept on CLOCK_REALTIME), or at once when there will be no instant (sync_note). */
static int storm_due(loop *L, uint64_t now)
{
    if (!L->a->storm_sync)
        return 1;
    if (!L->ready) {
        L->ready = 1;
        L->ready_ns = now;
        fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
        json_obj o;
        json_obj_begin(&o, stdout);
        json_obj_str(&o, "type", "storm_ready");
        json_obj_i64(&o, "realtime_ns", realtime_ns());
        json_obj_u64(&o, "up", L->up);
        json_end_line(stdout);
        fflush(stdout);
    }
    if (!L->storm_at_ns && !L->sync_note)
        read_instant(L);
    if (L->sync_note)
        return 1;
    if (!L->storm_at_ns) {
        if (now - L->ready_ns > (uint64_t)(L->a->storm_max_s * 1e9))
            L->sync_note = "no storm-at within --storm-max";
        return L->sync_note != NULL;
    }
    int64_t left = L->storm_at_ns - realtime_ns();
    if (left > 3000000)
        return 0; /* more than 3 ms ahead: the hold goes on (keep-alive, PUBLISH) */
    if (left > 0) {
        struct timespec ts = {(time_t)(L->storm_at_ns / 1000000000LL), (long)(L->storm_at_ns % 1000000000LL)};
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    return 1;
}

static void storm_drop(loop *L, uint64_t now)
{
    L->drop_rt_ns = realtime_ns();
    for (unsigned i = 0; i < L->n; i++) {
        mq_client *c = &L->c[i];
        if (c->state != MQ_DOWN)
            lg_mqtt_close(&L->sh, c, 0); /* a reset, no DISCONNECT: the broker loses them as in an outage */
        c->attempts = 0;
        c->prev_delay_ns = 0;
        c->t_down_ns = now;
        c->t_next_ns = now + (L->a->spread_ms > 0 ? (uint64_t)(xoshiro256_uniform(&L->rng) * L->a->spread_ms * 1e6) : 0);
        if (!c->t_next_ns)
            c->t_next_ns = 1;
    }
    L->up = 0;
}

static int run(loop *L)
{
    const mq_args *a = L->a;
    struct epoll_event evs[512];
    uint64_t t0 = (uint64_t)clock_mono_ns();
    double cpu0 = cpu_now_s();
    for (unsigned i = 0; i < L->n; i++) {
        mq_client *c = &L->c[i];
        c->idx = i;
        c->fd = -1;
        c->state = MQ_DOWN;
        c->t_next_ns = t0 + (uint64_t)(i * 1e9 / a->connect_rate);
        c->t_down_ns = c->t_next_ns;   /* a ramp client's wait counts from its scheduled start */
    }
    reset_phase(L, PH_RAMP, t0);
    L->ps.t_all_up_ns = 0;
    uint64_t ramp_max_ns = (uint64_t)(a->ramp_max_s * 1e9), hold_ns = (uint64_t)(a->hold_s * 1e9);
    uint64_t storm_max_ns = (uint64_t)(a->storm_max_s * 1e9), iv_ns = (uint64_t)a->interval_ms * 1000000ull;
    uint64_t next_iv = t0 + iv_ns, last_sweep = 0, next_ka = t0;
    double next_pub = (double)t0;
    unsigned rr = 0;
    const char *stopped = "done";
    for (;;) {
        uint64_t now = (uint64_t)clock_mono_ns();
        if (stop_requested) {
            stopped = "signal";
            write_phase(L, now, stopped);
            break;
        }
        uint64_t since = now - L->ps.t_start_ns;
        if (L->phase == PH_RAMP && (L->up == L->n || since >= ramp_max_ns)) {
            write_phase(L, now, L->up == L->n ? "all up" : "--ramp-max");
            reset_phase(L, PH_HOLD, now);
        } else if (L->phase == PH_HOLD && since >= hold_ns && (!a->storm || storm_due(L, now))) {
            now = (uint64_t)clock_mono_ns(); /* storm_due may have slept until the instant */
            write_phase(L, now, "--hold");
            if (!a->storm)
                break;
            storm_drop(L, now);
            reset_phase(L, PH_STORM, now);
            L->ps.t_all_up_ns = 0;
        } else if (L->phase == PH_STORM && (L->up == L->n || since >= storm_max_ns)) {
            write_phase(L, now, L->up == L->n ? "all up" : "--storm-max");
            break;
        }
        if (now >= next_iv) {
            write_interval(L, now, t0);
            next_iv += iv_ns;
        }
        if (a->publish_rate > 0)
            publish_due(L, &next_pub, now, &rr);
        if (now - last_sweep >= 2000000ull) {
            int ka = now >= next_ka;
            if (ka)
                next_ka = now + 200000000ull;
            sweep(L, now, ka);
            last_sweep = now;
        }
        int k = epoll_wait(L->sh.epfd, evs, 512, 2);
        if (k < 0 && errno != EINTR)
            return 1;
        for (int i = 0; i < k; i++) {
            mq_client *c = evs[i].data.ptr;
            int was_up = c->state == MQ_UP;
            uint64_t ack = 0, t = (uint64_t)clock_mono_ns();
            int ev = lg_mqtt_step(&L->sh, c, t, &ack);
            if (ev)
                on_events(L, c, ev, was_up, ack, t);
        }
    }
    uint64_t now = (uint64_t)clock_mono_ns();
    double cpu = cpu_now_s() - cpu0;
    for (unsigned i = 0; i < L->n; i++)
        if (L->c[i].state != MQ_DOWN)
            lg_mqtt_close(&L->sh, &L->c[i], 1);
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "end");
    json_obj_str(&o, "stopped", stopped);
    json_obj_u64(&o, "clients", L->n);
    json_obj_u64(&o, "peak_up", L->peak_up);
    json_obj_fixed(&o, "elapsed_s", 4, (double)(now - t0) / 1e9);
    json_obj_fixed(&o, "cpu_s", 6, cpu);
    json_end_line(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    static mq_args a;
    char err[400];
    if (!mq_args_parse(argc, argv, &a, err, sizeof(err))) {
        fprintf(stderr, "secperf-mqttload: %s\n", err);
        return 2;
    }
    if (a.help) {
        mq_usage(stdout);
        return 0;
    }
    lg_stop_signals(on_signal);
    mq_limits lim;
    if (!mq_check_limits(&a, &lim, err, sizeof(err))) {
        fprintf(stderr, "secperf-mqttload: %s\n", err);
        return 2;
    }
    static loop L;
    L.a = &a;
    L.n = a.clients;
    L.backoff.backoff = a.backoff;
    L.backoff.backoff_base_ms = a.backoff_base_ms;
    L.backoff.backoff_cap_ms = a.backoff_cap_ms;
    xoshiro256_seed(&L.rng, a.seed);
    L.sh.rng = a.seed * 0x9e3779b97f4a7c15ull + 1;
    if (!mq_load_se(&a, &L.sh.se_ms, &L.sh.se_n, err, sizeof(err))) {
        fprintf(stderr, "secperf-mqttload: %s\n", err);
        return 2;
    }
    if (!lg_mqtt_init(&L.sh, a.host, a.port, a.cert, a.key, a.tls, a.groups, err, sizeof(err))) {
        fprintf(stderr, "secperf-mqttload: %s\n", err);
        return 2;
    }
    if (a.source_addrs > 1 && (ntohl(((const struct sockaddr_in *)&L.sh.addr)->sin_addr.s_addr) >> 24) != 127) {
        fprintf(stderr, "secperf-mqttload: --source-addrs %u: several loopback source addresses reach a loopback "
                        "--host only\n", a.source_addrs);
        return 2;
    }
    L.sh.source_addrs = a.source_addrs;
    L.sh.timeout_ns = (uint64_t)a.timeout_ms * 1000000ull;
    L.sh.keepalive_s = a.keepalive_s;
    L.sh.servername = a.servername;
    L.sh.id_prefix = a.id_prefix;
    L.sh.epfd = epoll_create1(EPOLL_CLOEXEC);
    L.c = calloc(L.n, sizeof(*L.c));
    if (L.sh.epfd < 0 || L.c == NULL) {
        fprintf(stderr, "secperf-mqttload: out of memory or epoll_create1 failed\n");
        return 1;
    }
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "meta");
    json_obj_str(&o, "tool", "secperf-mqttload");
    json_obj_str(&o, "library", OpenSSL_version(OPENSSL_VERSION));
    json_obj_i64(&o, "pid", (int64_t)getpid());
    json_obj_u64(&o, "clients", a.clients);
    json_obj_u64(&o, "nofile_soft", lim.nofile);
    json_obj_u64(&o, "nofile_hard", lim.nofile_hard);
    json_obj_u64(&o, "ephemeral_ports", lim.ports);
    json_obj_u64(&o, "source_addrs", a.source_addrs);
    json_obj_u64(&o, "se_samples", L.sh.se_n);
    json_obj_str(&o, "clock", CLOCK_MONO_NAME);
    json_obj_str(&o, "connack_from", "TCP connect start");
    json_obj_str(&o, "puback_from", "PUBLISH handed to TLS");
    json_end_line(stdout);
    fflush(stdout);
    int rc = run(&L);
    close(L.sh.epfd);
    lg_mqtt_free(&L.sh);
    free(L.c);
    free(L.sh.se_ms);
    return rc;
}
