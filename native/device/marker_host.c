/* marker_host: the host build's markers (the same client, compiled for this machine). Where the
 * emulator's plugin records the instruction count at each marker, the host records the calling
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID, ns; a fifth field: CLOCK_MONOTONIC, ns) and writes the
 * events, in the plugin's file format, to the file named by SP_HOST_EVENTS: at every handshake end and at exit. So the same
 * attribution (secperf.measure.device_attrib) partitions a handshake's client CPU per message. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "marker.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_EVENTS 65536

struct ev {
    unsigned long long ns, wall_ns;
    unsigned kind, arg;
};

static struct ev events[MAX_EVENTS];
static size_t n_events, n_written;
static int overflow, registered;
static FILE *out;

static unsigned long long now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void flush_events(void)
{
    if (out == NULL) {
        const char *path = getenv("SP_HOST_EVENTS");
        if (path == NULL || (out = fopen(path, "w")) == NULL)
            return;
        fprintf(out, "# insn_events v1 total=0 unit=thread_cpu_ns%s\n", overflow ? " oom" : "");
    }
    for (; n_written < n_events; n_written++)
        fprintf(out, "%llu M %u %u %llu\n", events[n_written].ns, events[n_written].kind, events[n_written].arg,
                events[n_written].wall_ns);
    fflush(out);
}

void sp_mark(unsigned kind, unsigned arg)
{
    unsigned long long t = now_ns(CLOCK_THREAD_CPUTIME_ID), w = now_ns(CLOCK_MONOTONIC);
    if (!registered) {
        registered = 1;
        atexit(flush_events);
    }
    if (n_events < MAX_EVENTS)
        events[n_events++] = (struct ev){t, w, kind, arg};
    else
        overflow = 1;
    if (kind == SP_MARK_HS_END || kind == SP_MARK_OP_END)
        flush_events();
}
