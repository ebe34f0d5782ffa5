/* speedkit: options, clocks, batch calibration, warm-up/sample loop and JSON lines, following
 * native/probe (timing.c, speed.c) so every library's row is made by the same rules. */
#include "speedkit.h"
#include "json.h"
#include "opts.h"
#include "rng.h"

#include <math.h>
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
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", type);
    json_obj_str(&o, "reason", reason);
    json_end_line(stdout);
}

static void usage(FILE *f, const char *tool)
{
    fprintf(f, "usage: %s speed --alg NAME --op OP [--size N] [--n N] [--warmup N] "
            "[--min-sample-us US] [--max-seconds S] [--hash sha256|sha1] [--prehashed] [--seed N]\n"
            "       %s --version\n", tool, tool);
}

enum {
    OPT_ALG = 256, OPT_OP, OPT_SIZE, OPT_N, OPT_WARMUP, OPT_MIN_SAMPLE_US, OPT_MAX_SECONDS, OPT_HASH,
    OPT_PREHASHED, OPT_SEED, OPT_KEY_CACHE, OPT_HELP
};

/* the probe's speed options (native/probe/args.c), with the same ranges */
static const struct option sk_options[] = {
    {"alg", required_argument, NULL, OPT_ALG},
    {"op", required_argument, NULL, OPT_OP},
    {"size", required_argument, NULL, OPT_SIZE},
    {"n", required_argument, NULL, OPT_N},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"min-sample-us", required_argument, NULL, OPT_MIN_SAMPLE_US},
    {"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
    {"hash", required_argument, NULL, OPT_HASH},
    {"prehashed", no_argument, NULL, OPT_PREHASHED},
    {"seed", required_argument, NULL, OPT_SEED},
    {"key-cache", required_argument, NULL, OPT_KEY_CACHE},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* One option into *a: 0, or -1 with a message naming the option in err. */
static int apply_option(int opt, const char *name, const char *val, sk_args *a, char *err, size_t errlen)
{
    static const char *const hashes[] = {"sha256", "sha1", NULL};
    uint64_t v;
    switch (opt) {
    case OPT_ALG: return opt_nonempty(name, val, &a->alg, err, errlen);
    case OPT_OP: return opt_nonempty(name, val, &a->op, err, errlen);
    case OPT_SIZE:
        if (opt_u64(name, val, 1, (uint64_t)1 << 31, &v, err, errlen) != 0)
            return -1;
        a->size = (long long)v;
        return 0;
    case OPT_N: return opt_u64(name, val, 1, UINT64_MAX, &a->n, err, errlen);
    case OPT_WARMUP: return opt_u64(name, val, 0, UINT64_MAX, &a->warmup, err, errlen);
    case OPT_SEED: return opt_u64(name, val, 0, UINT64_MAX, &a->seed, err, errlen);
    case OPT_MIN_SAMPLE_US: return opt_double(name, val, 0, 0, HUGE_VAL, &a->min_sample_us, err, errlen);
    /* at most 1e9 s: the budget in ns must fit 64 bits */
    case OPT_MAX_SECONDS: return opt_double(name, val, 0, 1, 1e9, &a->max_seconds, err, errlen);
    case OPT_HASH: {
        int i = opt_choice(name, val, hashes, err, errlen);
        if (i < 0)
            return -1;
        a->hash = hashes[i];
        return 0;
    }
    case OPT_PREHASHED: a->prehashed = 1; return 0;
    case OPT_KEY_CACHE: return 0; /* keys are made in-process here: never timed */
    default: return -1; /* opt_next's message */
    }
}

/* argv[1] is "speed". 1: parsed; 0: --help (usage on stdout); -1: bad input, message in err. */
static int parse(int argc, char **argv, sk_args *a, char *err, size_t errlen)
{
    *a = (sk_args){.size = 32, .n = 30, .warmup = 2, .min_sample_us = 1000.0, .max_seconds = 10.0,
                   .hash = "sha256", .seed = 1};
    opt_parser p;
    opt_init(&p, argc - 1, argv + 1, "h", sk_options);
    int opt;
    while ((opt = opt_next(&p, err, errlen)) != 0) {
        if (opt == 'h' || opt == OPT_HELP)
            return 0;
        if (opt < 0 || apply_option(opt, p.name, p.arg, a, err, errlen) != 0)
            return -1;
    }
    if (!a->alg || !a->op) {
        snprintf(err, errlen, "--alg and --op are required");
        return -1;
    }
    return 1;
}

static void json_version(const char *tool)
{
    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "version");
    json_obj_str(&o, "tool", tool);
    json_obj_str(&o, "library", backend_library());
    json_end_line(stdout);
}

int sk_main(int argc, char **argv)
{
    const char *tool = backend_tool();
    if (argc >= 2 && !strcmp(argv[1], "--version")) {
        if (argc > 2) {
            fprintf(stderr, "%s: unexpected argument '%s' after --version\n", tool, argv[2]);
            return 2;
        }
        json_version(tool);
        return 0;
    }
    sk_args a;
    char perr[SK_ERR_LEN] = "";
    if (argc < 2 || strcmp(argv[1], "speed") != 0) {
        if (argc >= 2)
            fprintf(stderr, "%s: unknown command '%s'; known: speed, --version\n", tool, argv[1]);
        usage(stderr, tool);
        return 2;
    }
    int parsed = parse(argc, argv, &a, perr, sizeof perr);
    if (parsed == 0) {
        usage(stdout, tool);
        return 0;
    }
    if (parsed < 0) {
        fprintf(stderr, "%s: %s\n", tool, perr);
        usage(stderr, tool);
        return 2;
    }

    json_obj o;
    json_obj_begin(&o, stdout);
    json_obj_str(&o, "type", "meta");
    json_obj_str(&o, "tool", tool);
    json_obj_str(&o, "library", backend_library());
    json_obj_fixed(&o, "timer_overhead_ns", 1, overhead_ns());
    json_obj_str(&o, "clock", "CLOCK_MONOTONIC");
    json_end_line(stdout);

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
        json_obj_begin(&o, stdout);
        json_obj_str(&o, "type", "row");
        json_obj_str(&o, "alg", a.alg);
        json_obj_str(&o, "op", a.op);
        json_obj_i64(&o, "size_bytes", a.size);
        json_obj_str(&o, "hash", sig && strncmp(a.alg, "ed", 2) != 0 ? a.hash : NULL);
        json_obj_bool(&o, "prehashed", a.prehashed);
        json_obj_u64(&o, "batch", batch);
        json_obj_i64(&o, "key_bits", op.key_bits);
        json_obj_str(&o, "detail", op.detail);
        json_obj_str(&o, "key_source", "generated in-process before timing");
        json_obj_bool(&o, "bulk", bulk);
        json_end_line(stdout);

        sample s;
        for (uint64_t i = 0; ok && i < a.warmup; i++)
            ok = timed_batch(&op, batch, &s, err);
        uint64_t taken = 0, budget = (uint64_t)(a.max_seconds * 1e9);
        int by_time = 0;
        uint64_t start = now_ns(WALL_CLOCK);
        while (ok && taken < a.n) {
            if (!(ok = timed_batch(&op, batch, &s, err))) break;
            taken++;
            json_obj_begin(&o, stdout);
            json_obj_str(&o, "type", "sample");
            json_obj_u64(&o, "wall_ns", s.wall_ns);
            json_obj_u64(&o, "cpu_ns", s.cpu_ns);
            json_obj_u64(&o, "ops", s.ops);
            json_end_line(stdout);
            if (taken < a.n && now_ns(WALL_CLOCK) - start >= budget) { by_time = 1; break; }
        }
        if (ok) {
            json_obj_begin(&o, stdout);
            json_obj_str(&o, "type", "end");
            json_obj_u64(&o, "samples", taken);
            json_obj_str(&o, "stopped", by_time ? "time" : "n");
            json_obj_fixed(&o, "elapsed_s", 6, (double)(now_ns(WALL_CLOCK) - start) / 1e9);
            json_end_line(stdout);
        }
    }
    if (!ok)
        print_error("error", err[0] ? err : "operation failed");
    backend_destroy(&op);
    return ok ? 0 : 1;
}
