/* lg_stats: latency samples (µs) with percentiles, and failure counts by reason. */
#ifndef SECPERF_LOADGEN_LG_STATS_H
#define SECPERF_LOADGEN_LG_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* Log-linear latency bins (the histogram the cluster run merges bin by bin, secperf/core/histogram.py
 * holds the same rule): values below 128 µs have a bin each; above, every power of two is cut into
 * 64 equal bins (a bin is at most 1/64 = 1.6 % of its values wide). */
#define LG_HIST_LINEAR 128u
#define LG_HIST_SUB_BITS 6
unsigned lg_hist_index(uint32_t us);
uint32_t lg_hist_lower(unsigned index);
/* Writes [[lower_us, count], ...] of the sorted samples' non-empty bins (sorts them first). */
void lg_hist_write(FILE *f, lg_samples *s);

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
