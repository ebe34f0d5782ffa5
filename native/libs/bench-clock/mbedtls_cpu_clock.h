/* Force-included (cc -include) into Mbed TLS's own benchmark program (programs/test/benchmark.c)
 * for its CPU-clock build: mbedtls_set_alarm(s), which arms a wall-clock alarm(), arms a POSIX
 * timer on the process's CPU clock instead (timer_create(CLOCK_PROCESS_CPUTIME_ID): the kernel's
 * exact run time, not the tick-sampled user + system time ITIMER_PROF counts), so each 3 s window
 * is 3 s of CPU and the printed figure is operations per CPU second. Everything else is the
 * program as shipped. benchmarks/libraries.py compares it with secperf's CPU-based rate. */
#ifndef SECPERF_MBEDTLS_CPU_CLOCK_H
#define SECPERF_MBEDTLS_CPU_CLOCK_H
#include <signal.h>
#include <string.h>
#include <time.h>
#include "mbedtls/timing.h"

static void secperf_cpu_alarmed(int sig)
{
    (void)sig;
    mbedtls_timing_alarmed = 1;
}

static inline void secperf_cpu_set_alarm(int seconds)
{
    static timer_t timer;
    static int made;
    struct itimerspec its;
    mbedtls_timing_alarmed = 0;
    if (seconds == 0) { mbedtls_timing_alarmed = 1; return; }
    signal(SIGPROF, secperf_cpu_alarmed);
    if (!made) {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_SIGNAL;
        sev.sigev_signo = SIGPROF;
        if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &timer) != 0) { mbedtls_timing_alarmed = 1; return; }
        made = 1;
    }
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = seconds;
    timer_settime(timer, 0, &its, NULL);
}
#define mbedtls_set_alarm secperf_cpu_set_alarm
#endif
