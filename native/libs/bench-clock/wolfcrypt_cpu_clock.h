/* Force-included (cc -include) into wolfCrypt's own benchmark program (wolfcrypt/benchmark/
 * benchmark.c) for its CPU-clock build: the program's timer, gettimeofday(), reads the process's
 * CPU time instead of the wall clock, so its loops run for 1 s of CPU and its ops/s are operations
 * per CPU second. Everything else is the program as shipped. benchmarks/libraries.py compares
 * this figure with secperf's CPU-based rate where the machine is too busy for wall times to agree. */
#ifndef SECPERF_WOLFCRYPT_CPU_CLOCK_H
#define SECPERF_WOLFCRYPT_CPU_CLOCK_H
#include <sys/time.h>
#include <time.h>

static inline int secperf_cpu_gettimeofday(struct timeval *tv, void *tz)
{
    struct timespec ts;
    (void)tz;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}
#define gettimeofday secperf_cpu_gettimeofday
#endif
