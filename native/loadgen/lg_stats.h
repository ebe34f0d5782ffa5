/* lg_stats: latency samples (µs) with percentiles, and failure counts by reason. */
#ifndef SECPERF_LOADGEN_LG_STATS_H
#define SECPERF_LOADGEN_LG_STATS_H

#include <stddef.h>
#include <stdint.h>

typedef struct lg_samples {
    uint32_t *v;   /* microseconds, saturated at UINT32_MAX */
    size_t n, cap;
} lg_samples;

/* 1: stored; 0: out of memory (the sample is dropped and counted by the caller). */
int lg_samples_add(lg_samples *s, uint64_t us);
/* Sorts in place; q in [0, 1]; nearest rank; 0 when empty. */
uint32_t lg_samples_quantile(lg_samples *s, double q);
void lg_samples_sort(lg_samples *s);
void lg_samples_clear(lg_samples *s);
void lg_samples_free(lg_samples *s);

#define LG_REASONS_MAX 32
#define LG_REASON_LEN 160

typedef struct lg_reasons {
    char text[LG_REASONS_MAX][LG_REASON_LEN];
    uint64_t count[LG_REASONS_MAX];
    unsigned n;
    uint64_t other; /* failures whose reason did not fit the table */
} lg_reasons;

void lg_reasons_add(lg_reasons *r, const char *reason);

#endif
