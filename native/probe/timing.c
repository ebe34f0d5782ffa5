/* timing: clocks, timer overhead, batch calibration and the warm-up/sample loop. */
#include "timing.h"

#include <stdlib.h>
#include <time.h>

#include "clock.h"

#define OVERHEAD_READS 1001
#define MAX_BATCH (UINT64_C(1) << 40)
#define CALIBRATION_CHECKS 3
#define CALIBRATION_MARGIN 1.05

/* The probe's two clocks (common/clock.h), as unsigned ns. */
static inline uint64_t wall_ns(void) { return (uint64_t)clock_mono_ns(); }
static inline uint64_t cpu_ns(void) { return (uint64_t)clock_thread_cpu_ns(); }

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

double timing_overhead_ns(void)
{
    /* Wall deltas between back-to-back (cpu, wall) read pairs = the cost of one pair. */
    uint64_t wall[OVERHEAD_READS];
    uint64_t deltas[OVERHEAD_READS - 1];
    for (int i = 0; i < OVERHEAD_READS; i++) {
        (void)cpu_ns();
        wall[i] = wall_ns();
    }
    for (int i = 0; i + 1 < OVERHEAD_READS; i++)
        deltas[i] = wall[i + 1] - wall[i];
    qsort(deltas, OVERHEAD_READS - 1, sizeof(deltas[0]), cmp_u64);
    int mid = (OVERHEAD_READS - 1) / 2;
    return ((double)deltas[mid - 1] + (double)deltas[mid]) / 2.0;
}

/* One sample: CPU clock outermost so the wall interval holds as little clock code as possible. */
static int timed_batch(op_run_fn run, void *state, uint64_t batch, sample *out, probe_err *err)
{
    uint64_t c0 = cpu_ns();
    uint64_t w0 = wall_ns();
    int ok = run(state, batch, err);
    uint64_t w1 = wall_ns();
    uint64_t c1 = cpu_ns();
    out->wall_ns = w1 - w0;
    out->cpu_ns = c1 - c0;
    out->ops = batch;
    return ok;
}

int timing_calibrate(op_run_fn run, void *state, double min_sample_us, uint64_t *batch,
                     probe_err *err)
{
    double target_ns = min_sample_us * 1000.0;
    uint64_t b = 1;
    sample s;
    for (;;) {
        if (!timed_batch(run, state, b, &s, err))
            return 0;
        if ((double)s.wall_ns >= target_ns || b >= MAX_BATCH)
            break;
        b *= 2;
    }
    if (b == 1 || s.wall_ns == 0) {
        *batch = b;
        return 1;
    }
    /* Scale the last (long enough) batch down to the target; the doubling overshoots up to 2x. */
    double scaled = (double)b * target_ns / (double)s.wall_ns + 0.5;
    b = scaled < 1.0 ? 1 : (uint64_t)scaled;
    /* Early batches run cold; re-check so warm batches do not fall short of the target. */
    for (int i = 0; i < CALIBRATION_CHECKS; i++) {
        if (!timed_batch(run, state, b, &s, err))
            return 0;
        if ((double)s.wall_ns >= target_ns || s.wall_ns == 0)
            break;
        b = (uint64_t)((double)b * CALIBRATION_MARGIN * target_ns / (double)s.wall_ns) + 1;
    }
    *batch = b;
    return 1;
}

int timing_measure(op_run_fn run, void *state, uint64_t batch, const timing_plan *plan,
                   sample_sink sink, void *sink_arg, timing_result *res, probe_err *err)
{
    sample s;
    for (uint64_t i = 0; i < plan->warmup; i++)
        if (!timed_batch(run, state, batch, &s, err))
            return 0;

    res->samples = 0;
    res->stopped_by_time = 0;
    uint64_t budget_ns = (uint64_t)(plan->max_seconds * 1e9);
    uint64_t start = wall_ns();
    while (res->samples < plan->n) {
        if (!timed_batch(run, state, batch, &s, err))
            return 0;
        res->samples++;
        sink(sink_arg, &s);
        if (res->samples < plan->n && wall_ns() - start >= budget_ns) {
            res->stopped_by_time = 1;
            break;
        }
    }
    res->elapsed_s = (double)(wall_ns() - start) / 1e9;
    return 1;
}
