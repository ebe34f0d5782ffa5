/* relay: the emulator's event loop. Reads IP packets from the device-side TUN and the server-side
 * TUN, lets each direction's link decide their fate, and writes them to the other side at their
 * release time.
 *
 * Precision: for --spin-us after any activity (a packet read or released) and from 200 us before
 * any due release the loop spins (non-blocking reads, no sleep), so a packet arriving within that
 * window or a release falling inside it is handled without a scheduler wake-up; otherwise it sleeps
 * in epoll on both TUN fds and a timerfd armed 200 us before the next release. Undelayed packets
 * are written straight from the read buffer (no queueing).
 *
 * Why a 10 ms window by default: waking a relay that sleeps in epoll costs a scheduler wake-up of
 * an idle CPU, measured at 25-75 us per direction on a virtual machine (where an idle vCPU halts),
 * above the 20 us budget; a spinning relay adds 5-11 us. Experiments send their packets in bursts
 * (a handshake, a ping every few ms), so a window of 10 ms keeps the relay awake through a
 * measurement and lets it sleep between them. While spinning it calls sched_yield(), so on a small
 * machine a client or server sharing its CPU runs first, and it spins only while no task waits for a
 * CPU (see CONTENTION_* below); spinning towards a due release it does not yield. */
#include "relay.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "pktq.h"

static volatile sig_atomic_t g_stop, g_report;

/* a sleeping relay's timer fires this long before the next release, then it spins to the exact
 * time (the wake-up of an idle CPU takes tens of µs) */
#define RELEASE_MARGIN_NS 200000
#define RELAY_NICE (-10)
/* Contention: while it spins for new packets, the relay checks every 100 µs whether tasks wait for
 * a CPU (cpus_contended). When they still do 300 µs after it first saw them, it ends its spin window
 * and sleeps until the next packet or release, so a loaded machine's client, server or other work
 * gets the CPU instead of sharing it with a spinning relay. An idle machine's own short bursts (a
 * kernel worker, a timer) last microseconds and do not end the window. While it waits for that
 * confirmation it does not yield: on a loaded CPU a yield hands the CPU to a busy task for a whole
 * scheduler tick (4 ms), and a packet arriving meanwhile would wait that long. */
#define CONTENTION_CHECK_NS 100000
#define CONTENTION_CONFIRM_NS 300000

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        g_report = 1;
    else
        g_stop = 1;
}

/* Is another task waiting for a CPU? /proc/loadavg's fourth field is the number of runnable tasks
 * (this relay included) at the moment of reading; more than there are CPUs means someone waits.
 * A pread of it costs a few µs. -1 (unknown) when the file cannot be read. */
static int cpus_contended(int fd, long ncpu)
{
    char buf[128];
    if (fd < 0 || ncpu < 1)
        return -1;
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    const char *p = buf;
    for (int field = 0; field < 3 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    if (!p)
        return -1;
    char *end = NULL;
    long runnable = strtol(p, &end, 10);
    return end == p ? -1 : runnable > ncpu;
}

static void print_dir(json_obj *parent, const char *name, const link_state *l)
{
    const link_stats *s = &l->st;
    json_obj o;
    json_obj_key(parent, name);
    json_obj_begin(&o, parent->f);
    json_obj_u64(&o, "rx_packets", s->rx_packets);
    json_obj_u64(&o, "rx_bytes", s->rx_bytes);
    json_obj_u64(&o, "tx_packets", s->tx_packets);
    json_obj_u64(&o, "tx_bytes", s->tx_bytes);
    json_obj_u64(&o, "dropped_loss", s->dropped_loss);
    json_obj_u64(&o, "dropped_queue", s->dropped_queue);
    json_obj_u64(&o, "dropped_mtu", s->dropped_mtu);
    json_obj_u64(&o, "dropped_pool", s->dropped_pool);
    json_obj_u64(&o, "dropped_write", s->dropped_write);
    json_obj_u64(&o, "duplicated", s->duplicated);
    json_obj_u64(&o, "reordered", s->reordered);
    json_obj_u64(&o, "delayed", s->delayed);
    json_obj_u64(&o, "pending_at_exit", s->pending_at_exit);
    json_obj_close(&o);
}

static void print_stats(const relay *r, int final, int64_t t0)
{
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "stats");
    json_obj_bool(&o, "final", final);
    json_obj_fixed(&o, "elapsed_s", 6, (double)(clock_mono_ns() - t0) / 1e9);
    json_obj_u64(&o, "load_sleeps", r->load_sleeps);
    print_dir(&o, "up", &r->dir[0]);
    print_dir(&o, "down", &r->dir[1]);
    json_end_line(stdout);
}

static void emit(relay *r, int dir, const unsigned char *data, int len)
{
    link_stats *s = &r->dir[dir].st;
    ssize_t w = write(r->fd[dir ^ 1], data, (size_t)len);
    if (w == (ssize_t)len) {
        s->tx_packets++;
        s->tx_bytes += (uint64_t)len;
    } else {
        s->dropped_write++;
    }
}

/* write every packet whose release time has come; returns how many */
static int release_due(relay *r, sched *q, int64_t now)
{
    int n = 0;
    for (pkt *p = sched_top(q); p && p->release <= now; p = sched_top(q)) {
        sched_pop(q);
        emit(r, p->dir, p->data, p->len);
        sched_free(q, p);
        n++;
    }
    return n;
}

/* one packet read from side `dir`: admit it to the link, write it now or schedule it */
static void handle(relay *r, sched *q, int dir, pkt *p, int len, int64_t now)
{
    int64_t rel[2];
    link_state *l = &r->dir[dir];
    int copies = link_admit(l, len, now, rel);
    if (copies == 2) {
        pkt *c = sched_alloc(q);
        if (!c) {
            l->st.dropped_pool++;
        } else {
            memcpy(c->data, p->data, (size_t)len);
            c->dir = dir;
            c->len = len;
            c->release = rel[1];
            if (rel[1] <= now) {
                emit(r, dir, c->data, len);
                sched_free(q, c);
            } else {
                sched_push(q, c);
            }
        }
    }
    if (copies == 0) {
        sched_free(q, p);
        return;
    }
    p->dir = dir;
    p->len = len;
    p->release = rel[0];
    if (rel[0] <= now) {
        emit(r, dir, p->data, len);
        sched_free(q, p);
    } else {
        sched_push(q, p);
    }
}

int relay_run(relay *r)
{
    sched q;
    static unsigned char scratch[65536];
    if (sched_init(&q, r->pool, r->bufsize) < 0) {
        fprintf(stderr, "secperf-netem: cannot allocate %d packet buffers\n", r->pool);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* The emulated link should not wait for the CPU the client and server being measured use (a
     * real link does not share their CPU): where permitted, the relay runs at nice -10. It gives
     * way while it only spins (sched_yield in the loop below: a CPU-bound task sharing its core was measured to
     * lose no time to a spinning relay at nice -10). Without the privilege it stays at 0. */
    if (setpriority(PRIO_PROCESS, 0, RELAY_NICE) < 0) { /* not permitted: keep the default */ }

    int ep = epoll_create1(EPOLL_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ep < 0 || tfd < 0) {
        perror("secperf-netem: epoll/timerfd");
        return 1;
    }
    struct epoll_event ev = {.events = EPOLLIN};
    for (int i = 0; i < 2; i++) {
        ev.data.fd = r->fd[i];
        epoll_ctl(ep, EPOLL_CTL_ADD, r->fd[i], &ev);
    }
    ev.data.fd = tfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);

    const int64_t t0 = clock_mono_ns();
    const int64_t spin = r->spin_ns;
    int64_t last_act = t0, checked = 0, contended_since = 0;
    const int loadfd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    while (!g_stop) {
        if (g_report) {
            g_report = 0;
            print_stats(r, 0, t0);
        }
        int64_t now = clock_mono_ns();
        int got = release_due(r, &q, now); /* a release is activity: the peer's answer follows */
        for (int dir = 0; dir < 2; dir++) {
            for (int k = 0; k < 64; k++) {
                pkt *p = sched_alloc(&q);
                unsigned char *buf = p ? p->data : scratch;
                ssize_t n = read(r->fd[dir], buf, p ? (size_t)r->bufsize : sizeof scratch);
                if (n <= 0) {
                    if (p)
                        sched_free(&q, p);
                    break;
                }
                got++;
                /* The packet's arrival is stamped after its read, never with the loop's `now`:
                 * releases written above and earlier reads take time (a burst of releases took
                 * over 1 ms under load), and a packet that arrived meanwhile would be stamped
                 * before it came and leave before its delay. Stamped here it is at most late by
                 * the wait in the TUN queue, never early. */
                const int64_t arrived = clock_mono_ns();
                if (!p) {
                    r->dir[dir].st.rx_packets++;
                    r->dir[dir].st.rx_bytes += (uint64_t)n;
                    r->dir[dir].st.dropped_pool++;
                    continue;
                }
                handle(r, &q, dir, p, (int)n, arrived);
            }
        }
        if (got) {
            last_act = now;
            contended_since = 0; /* a new window judges the load afresh (at its next check, not at once:
                                  * a read of /proc/loadavg right after a packet would delay its answer) */
            continue;
        }
        pkt *top = sched_top(&q);
        if (top && top->release - now < RELEASE_MARGIN_NS)
            continue; /* a release is due: hold the CPU (a yield could hand it to a busy task for a
                       * whole scheduler tick, 4 ms, and the packet would leave that late) */
        if (now - last_act < spin) {
            if (now - checked >= CONTENTION_CHECK_NS) {
                checked = now;
                if (cpus_contended(loadfd, ncpu) != 1)
                    contended_since = 0;
                else if (!contended_since)
                    contended_since = now;
            }
            if (!contended_since) {
                sched_yield(); /* nobody waits: a yield returns at once, or lets a task on this CPU run */
                continue;
            }
            if (now - contended_since < CONTENTION_CONFIRM_NS)
                continue; /* no yield: under load it would hand the CPU away for a whole tick */
            contended_since = 0; /* tasks kept waiting for a CPU: sleep instead of spinning */
            r->load_sleeps++;
        }
        int timeout_ms = 100; /* bounded, so a signal racing the sleep is seen within 100 ms */
        if (top) {
            int64_t at = top->release - RELEASE_MARGIN_NS;
            struct itimerspec its = {.it_value = {.tv_sec = at / 1000000000LL, .tv_nsec = at % 1000000000LL}};
            timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
        }
        struct epoll_event evs[4];
        int n = epoll_wait(ep, evs, 4, timeout_ms);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == tfd) {
                uint64_t x;
                if (read(tfd, &x, sizeof x) < 0) { /* already consumed */ }
            }
        }
        /* no last_act here: a wake-up by the 100 ms timeout is not activity, and a packet or a
         * release that woke us counts as activity when the next iteration handles it */
    }
    if (loadfd >= 0)
        close(loadfd);
    for (pkt *p = sched_pop(&q); p; p = sched_pop(&q))
        r->dir[p->dir].st.pending_at_exit++;
    print_stats(r, 1, t0);
    return 0;
}
