/* timing: clocks, timer overhead, batch calibration and the warm-up/sample loop. */
#ifndef SECPERF_PROBE_TIMING_H
#define SECPERF_PROBE_TIMING_H

#include <stdint.h>

#include "clock.h"
#include "err.h"
#include "ops.h"

#define TIMING_CLOCK_NAME CLOCK_MONO_NAME

typedef struct timing_plan {
    uint64_t n;           /* samples wanted */
    uint64_t warmup;      /* samples run and discarded */
    double min_sample_us; /* a batch should take at least this long */
    double max_seconds;   /* stop taking samples after this much measuring (>= 1 sample) */
} timing_plan;

typedef struct sample {
    uint64_t wall_ns; /* whole batch, CLOCK_MONOTONIC */
    uint64_t cpu_ns;  /* whole batch, CLOCK_THREAD_CPUTIME_ID */
    uint64_t ops;     /* batch size */
} sample;

typedef struct timing_result {
    uint64_t samples;
    int stopped_by_time;
    double elapsed_s;
} timing_result;

typedef void (*sample_sink)(void *arg, const sample *s);

/* Median cost of reading both clocks once, as done at each sample boundary. */
double timing_overhead_ns(void);

/* Finds the batch size B so one batch of ops takes about min_sample_us (B = 1 for slow ops). */
int timing_calibrate(op_run_fn run, void *state, double min_sample_us, uint64_t *batch,
                     probe_err *err);

/* Warm-up, then samples of `batch` ops, each handed to sink as soon as it is taken. */
int timing_measure(op_run_fn run, void *state, uint64_t batch, const timing_plan *plan,
                   sample_sink sink, void *sink_arg, timing_result *res, probe_err *err);

#endif
