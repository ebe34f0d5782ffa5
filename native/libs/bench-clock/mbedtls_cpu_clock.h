/* Force-included (cc -include) into Mbed TLS's own benchmark program (programs/test/benchmark.c)
 * for its CPU-clock build: mbedtls_set_alarm(s), which arms a wall-clock alarm(), arms a timer on
 * the process's CPU time instead (setitimer ITIMER_PROF: user + system time), so each 3 s window
 * is 3 s of CPU and the printed figure is operations per CPU second. Everything else is the
 * program as shipped. benchmarks/libraries.py compares it with secperf's CPU-based rate. */
#ifndef SECPERF_MBEDTLS_CPU_CLOCK_H
#define SECPERF_MBEDTLS_CPU_CLOCK_H
#include <signal.h>
#include <stddef.h>
#include <sys/time.h>
#include "mbedtls/timing.h"

static void secperf_cpu_alarmed(int sig)
{
    (void)sig;
    mbedtls_timing_alarmed = 1;
}

static inline void secperf_cpu_set_alarm(int seconds)
{
    struct itimerval it = {{0, 0}, {seconds, 0}};
    mbedtls_timing_alarmed = 0;
    signal(SIGPROF, secperf_cpu_alarmed);
    if (seconds == 0) { mbedtls_timing_alarmed = 1; return; }
    setitimer(ITIMER_PROF, &it, NULL);
}
#define mbedtls_set_alarm secperf_cpu_set_alarm
#endif
