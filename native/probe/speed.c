/* speed: the `speed` subcommand (one row of samples as JSON lines). */
#include "speed.h"

#include <inttypes.h>
#include <stdio.h>

#include <openssl/crypto.h>
#include <openssl/opensslv.h>

#include "json.h"
#include "ops.h"
#include "timing.h"

static void write_meta(FILE *f, double overhead_ns)
{
    fputs("{\"type\":\"meta\",\"tool\":\"secperf-probe\",\"version\":", f);
    json_str(f, PROBE_VERSION);
    fputs(",\"openssl_version\":", f);
    json_str(f, OpenSSL_version(OPENSSL_VERSION));
    fprintf(f, ",\"openssl_version_num\":%lu,\"timer_overhead_ns\":%.1f,\"clock\":",
            (unsigned long)OpenSSL_version_num(), overhead_ns);
    json_str(f, TIMING_CLOCK_NAME);
    json_end_line(f);
}

static void write_row(FILE *f, const probe_args *a, const bench_op *op, uint64_t batch)
{
    fputs("{\"type\":\"row\",\"alg\":", f);
    json_str(f, a->alg->name);
    fputs(",\"op\":", f);
    json_str(f, op_name(a->op));
    if (op->size_bytes < 0)
        fputs(",\"size_bytes\":null", f);
    else
        fprintf(f, ",\"size_bytes\":%lld", op->size_bytes);
    fputs(",\"hash\":", f);
    json_str(f, op->hash);
    fprintf(f, ",\"prehashed\":%s,\"batch\":%" PRIu64 ",\"key_bits\":%d,\"detail\":",
            op->prehashed ? "true" : "false", batch, op->key_bits);
    json_str(f, op->detail);
    fputs(",\"key_source\":", f);
    json_str(f, op->key_source);
    json_end_line(f);
}

static void write_sample(void *arg, const sample *s)
{
    FILE *f = arg;
    fprintf(f, "{\"type\":\"sample\",\"wall_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
            ",\"ops\":%" PRIu64, s->wall_ns, s->cpu_ns, s->ops);
    json_end_line(f);
}

static void write_end(FILE *f, const timing_result *r)
{
    fprintf(f, "{\"type\":\"end\",\"samples\":%" PRIu64 ",\"stopped\":\"%s\",\"elapsed_s\":%.6f",
            r->samples, r->stopped_by_time ? "time" : "n", r->elapsed_s);
    json_end_line(f);
}

int speed_main(const probe_args *a, probe_err *err)
{
    /* Meta first, before any key loading that may take minutes. */
    write_meta(stdout, timing_overhead_ns());

    op_request req = {a->alg, a->op, a->size, a->hash, a->prehashed, a->seed, a->key_cache};
    bench_op op;
    if (!op_setup(&req, &op, err)) {
        op_destroy(&op);
        return 0;
    }
    uint64_t batch = 1;
    int ok = timing_calibrate(op.run, op.state, a->min_sample_us, &batch, err);
    if (ok) {
        write_row(stdout, a, &op, batch);
        timing_plan plan = {a->n, a->warmup, a->min_sample_us, a->max_seconds};
        timing_result res;
        ok = timing_measure(op.run, op.state, batch, &plan, write_sample, stdout, &res, err);
        if (ok)
            write_end(stdout, &res);
    }
    op_destroy(&op);
    return ok;
}
