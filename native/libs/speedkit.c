/* speedkit: options, clocks, batch calibration, warm-up/sample loop and JSON lines, following
 * native/probe (timing.c, speed.c) so every library's row is made by the same rules. */
#include "speedkit.h"
#include "rng.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WALL_CLOCK CLOCK_MONOTONIC
#define CPU_CLOCK CLOCK_THREAD_CPUTIME_ID
#define OVERHEAD_READS 1001
#define MAX_BATCH (UINT64_C(1) << 40)
#define CALIBRATION_CHECKS 3
#define CALIBRATION_MARGIN 1.05

typedef struct sample { uint64_t wall_ns, cpu_ns, ops; } sample;

static inline uint64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

void sk_fill(uint8_t *buf, size_t len, uint64_t *state)
{
    splitmix64_fill(state, buf, len);  /* the native tools' one generator (native/common/rng) */
}

int sk_unsupported(char *err, const sk_args *a, const char *why)
{
    snprintf(err, SK_ERR_LEN, "unsupported by %s: %s %s%s%s", backend_library(), a->alg, a->op,
             why ? " — " : "", why ? why : "");
    return SK_UNSUPPORTED;
}

int sk_not_implemented(char *err, const sk_args *a, const char *backend_name)
{
    snprintf(err, SK_ERR_LEN, "not measured: secperf's %s backend does not implement %s %s", backend_name,
             a->alg, a->op);
    return SK_UNSUPPORTED;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void end_line(FILE *f) { fputs("}\n", f); fflush(f); }

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static double overhead_ns(void)
{
    static uint64_t wall[OVERHEAD_READS], d[OVERHEAD_READS - 1];
    for (int i = 0; i < OVERHEAD_READS; i++) {
        (void)now_ns(CPU_CLOCK);
        wall[i] = now_ns(WALL_CLOCK);
    }
    for (int i = 0; i + 1 < OVERHEAD_READS; i++)
        d[i] = wall[i + 1] - wall[i];
    qsort(d, OVERHEAD_READS - 1, sizeof d[0], cmp_u64);
    int mid = (OVERHEAD_READS - 1) / 2;
    return ((double)d[mid - 1] + (double)d[mid]) / 2.0;
}

static int timed_batch(const sk_op *op, uint64_t batch, sample *out, char *err)
{
    uint64_t c0 = now_ns(CPU_CLOCK);
    uint64_t w0 = now_ns(WALL_CLOCK);
    int ok = op->run(op->state, batch, err);
    uint64_t w1 = now_ns(WALL_CLOCK);
    uint64_t c1 = now_ns(CPU_CLOCK);
    out->wall_ns = w1 - w0;
    out->cpu_ns = c1 - c0;
    out->ops = batch;
    return ok;
}

static int calibrate(const sk_op *op, double min_sample_us, uint64_t *batch, char *err)
{
    double target = min_sample_us * 1000.0;
    uint64_t b = 1;
    sample s;
    for (;;) {
        if (!timed_batch(op, b, &s, err)) return 0;
        if ((double)s.wall_ns >= target || b >= MAX_BATCH) break;
        b *= 2;
    }
    if (b == 1 || s.wall_ns == 0) { *batch = b; return 1; }
    double scaled = (double)b * target / (double)s.wall_ns + 0.5;
    b = scaled < 1.0 ? 1 : (uint64_t)scaled;
    for (int i = 0; i < CALIBRATION_CHECKS; i++) {
        if (!timed_batch(op, b, &s, err)) return 0;
        if ((double)s.wall_ns >= target || s.wall_ns == 0) break;
        b = (uint64_t)((double)b * CALIBRATION_MARGIN * target / (double)s.wall_ns) + 1;
    }
    *batch = b;
    return 1;
}

static void print_error(const char *type, const char *reason)
{
    printf("{\"type\":\"%s\",\"reason\":", type);
    json_str(stdout, reason);
    end_line(stdout);
}

static int usage(const char *tool)
{
    fprintf(stderr, "usage: %s speed --alg NAME --op OP [--size N] [--n N] [--warmup N] "
            "[--min-sample-us US] [--max-seconds S] [--hash sha256|sha1] [--prehashed] [--seed N]\n"
            "       %s --version\n", tool, tool);
    return 2;
}

static int parse(int argc, char **argv, sk_args *a)
{
    *a = (sk_args){.size = 32, .n = 30, .warmup = 2, .min_sample_us = 1000.0, .max_seconds = 10.0,
                   .hash = "sha256", .seed = 1};
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--prehashed")) { a->prehashed = 1; continue; }
        if (!v) { fprintf(stderr, "%s needs a value\n", k); return 0; }
        if (!strcmp(k, "--alg")) a->alg = v;
        else if (!strcmp(k, "--op")) a->op = v;
        else if (!strcmp(k, "--size")) a->size = atoll(v);
        else if (!strcmp(k, "--n")) a->n = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--warmup")) a->warmup = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--min-sample-us")) a->min_sample_us = atof(v);
        else if (!strcmp(k, "--max-seconds")) a->max_seconds = atof(v);
        else if (!strcmp(k, "--hash")) a->hash = v;
        else if (!strcmp(k, "--seed")) a->seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--key-cache")) { /* keys are made in-process here: never timed */ }
        else { fprintf(stderr, "unknown option %s\n", k); return 0; }
        i++;
    }
    if (!a->alg || !a->op) { fprintf(stderr, "--alg and --op are required\n"); return 0; }
    if (a->size <= 0) { fprintf(stderr, "--size must be at least 1\n"); return 0; }
    if (strcmp(a->hash, "sha256") && strcmp(a->hash, "sha1")) {
        fprintf(stderr, "--hash %s: use sha256 or sha1\n", a->hash);
        return 0;
    }
    return 1;
}

int sk_main(int argc, char **argv)
{
    const char *tool = backend_tool();
    if (argc >= 2 && !strcmp(argv[1], "--version")) {
        printf("{\"type\":\"version\",\"tool\":");
        json_str(stdout, tool);
        printf(",\"library\":");
        json_str(stdout, backend_library());
        end_line(stdout);
        return 0;
    }
    sk_args a;
    if (argc < 2 || strcmp(argv[1], "speed") || !parse(argc, argv, &a))
        return usage(tool);

    printf("{\"type\":\"meta\",\"tool\":");
    json_str(stdout, tool);
    printf(",\"library\":");
    json_str(stdout, backend_library());
    printf(",\"timer_overhead_ns\":%.1f,\"clock\":\"CLOCK_MONOTONIC\"", overhead_ns());
    end_line(stdout);

    char err[SK_ERR_LEN] = "";
    sk_op op = {0};
    int rc = backend_setup(&a, &op, err);
    if (rc != SK_OK) {
        print_error(rc == SK_UNSUPPORTED ? "unsupported" : "error", err[0] ? err : "set-up failed");
        backend_destroy(&op);
        return rc == SK_UNSUPPORTED ? 0 : 1;
    }
    uint64_t batch = 1;
    int ok = calibrate(&op, a.min_sample_us, &batch, err);
    if (ok) {
        int bulk = !strcmp(a.op, "encrypt") || !strcmp(a.op, "decrypt") || !strcmp(a.op, "mac")
                   || !strcmp(a.op, "hash");
        int sig = !strcmp(a.op, "sign") || !strcmp(a.op, "verify");
        printf("{\"type\":\"row\",\"alg\":");
        json_str(stdout, a.alg);
        printf(",\"op\":");
        json_str(stdout, a.op);
        printf(",\"size_bytes\":%lld,\"hash\":", a.size);
        if (sig && strncmp(a.alg, "ed", 2)) json_str(stdout, a.hash); else fputs("null", stdout);
        printf(",\"prehashed\":%s,\"batch\":%" PRIu64 ",\"key_bits\":%d,\"detail\":",
               a.prehashed ? "true" : "false", batch, op.key_bits);
        json_str(stdout, op.detail);
        printf(",\"key_source\":\"generated in-process before timing\",\"bulk\":%s", bulk ? "true" : "false");
        end_line(stdout);

        sample s;
        for (uint64_t i = 0; ok && i < a.warmup; i++)
            ok = timed_batch(&op, batch, &s, err);
        uint64_t taken = 0, budget = (uint64_t)(a.max_seconds * 1e9);
        int by_time = 0;
        uint64_t start = now_ns(WALL_CLOCK);
        while (ok && taken < a.n) {
            if (!(ok = timed_batch(&op, batch, &s, err))) break;
            taken++;
            printf("{\"type\":\"sample\",\"wall_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64 ",\"ops\":%" PRIu64,
                   s.wall_ns, s.cpu_ns, s.ops);
            end_line(stdout);
            if (taken < a.n && now_ns(WALL_CLOCK) - start >= budget) { by_time = 1; break; }
        }
        if (ok) {
            printf("{\"type\":\"end\",\"samples\":%" PRIu64 ",\"stopped\":\"%s\",\"elapsed_s\":%.6f",
                   taken, by_time ? "time" : "n", (double)(now_ns(WALL_CLOCK) - start) / 1e9);
            end_line(stdout);
        }
    }
    if (!ok)
        print_error("error", err[0] ? err : "operation failed");
    backend_destroy(&op);
    return ok ? 0 : 1;
}
