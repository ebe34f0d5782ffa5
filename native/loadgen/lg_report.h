/* lg_report: the JSON pieces both load generators (TLS handshakes, MQTT clients) write the same way:
 * latency percentiles, the log-linear bins a cluster run merges, and failures by reason. */
#ifndef SECPERF_LOADGEN_LG_REPORT_H
#define SECPERF_LOADGEN_LG_REPORT_H

#include "json.h"
#include "lg_stats.h"

enum {
    LG_Q_P95 = 1,        /* also "p95_ms" */
    LG_Q_NULL_EMPTY = 2  /* null for no samples (else 0) */
};

/* PREFIXp50_ms, p90, [p95,] p99 and max of the samples (sorted in place), in ms. */
void lg_json_quantiles(json_obj *o, const char *prefix, lg_samples *s, int flags);
/* "KEY": [[lower_us, count], ...] of the samples' non-empty bins. */
void lg_json_hist(json_obj *o, const char *key, lg_samples *s);
/* "KEY": {"reason": count, ..., "(other reasons)": n}. */
void lg_json_reasons(json_obj *o, const char *key, const lg_reasons *r);

#endif
