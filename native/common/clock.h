/* clock: the two clocks every measurement uses, in nanoseconds. Inline because the shim and the
 * relay read them in spin loops. */
#ifndef SECPERF_COMMON_CLOCK_H
#define SECPERF_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The name written into Results next to wall times. */
#define CLOCK_MONO_NAME "CLOCK_MONOTONIC"
#define CLOCK_CPU_NAME "CLOCK_THREAD_CPUTIME_ID"

/* MONOTONIC, not MONOTONIC_RAW: it is served by the vDSO on every kernel (RAW was a syscall before
 * Linux 5.3) and NTP slews it by at most 500 ppm, far below run-to-run noise. */
static inline int64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

/* CPU time of the calling thread (not the process: other threads must not count). */
static inline int64_t clock_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

#endif
