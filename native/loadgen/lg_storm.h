/* lg_storm: a reconnect storm. N clients each need one successful connection; all first attempts
 * start at once (or spread over --spread-ms); a failed attempt (refused, reset, timed out after
 * --timeout-ms) is retried after the back-off policy's delay, at most --max-attempts times. */
#ifndef SECPERF_LOADGEN_LG_STORM_H
#define SECPERF_LOADGEN_LG_STORM_H

#include <signal.h>

#include "lg_args.h"

/* Runs the storm and writes its JSON lines (ending early, with its end line, once *stop is set);
 * 0 on success, 1 on a setup error. */
int lg_storm_run(const lg_args *a, volatile sig_atomic_t *stop);

/* The delay in ns before the retry that follows failed attempt `attempt` (1-based); `prev_ns` is the
 * previous delay (decorrelated jitter), u a uniform draw in [0, 1). */
uint64_t lg_backoff_ns(const lg_args *a, unsigned attempt, uint64_t prev_ns, double u);

#endif
