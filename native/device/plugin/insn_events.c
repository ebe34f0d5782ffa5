/* insn_events: a QEMU TCG plugin for qemu-user (and qemu-system) that counts every executed guest
 * instruction (an inline add before each one) and records the running count at two kinds of
 * events, in the order they happen:
 *   - a marker system call made by the guest (number `marker`, default 1516, unused on ARM: the
 *     kernel and QEMU return ENOSYS), with its first two arguments: "count M a1 a2";
 *   - the first instruction at a watched address (function entries named in `watch=FILE`, lines
 *     "0xADDR ID"): "count W ID".
 * One vCPU (single-threaded guests). Arguments: out=FILE (required), marker=N, watch=FILE,
 * count=tb|insn. count=tb (default) adds a block's instruction count when the block starts, except
 * in blocks holding a watched address, which count instruction by instruction so the watched
 * instruction sees the exact count; a marker system call always ends its block, so its count is
 * exact either way. count=insn adds before every instruction (slower; the two agree unless a
 * block is left in its middle, which user-mode code without faults does not do).
 * timing=FILE turns the cycle model on (timing.h); sums=inline|blocks and path=fast|full choose how
 * it is computed (the defaults are the cheaper ways, the others are kept to check them: the same
 * figures), trace=FILE writes each translated instruction's class.
 * Written when the guest exits:
 *   # insn_events v1 total=N events=K
 *   <count> M <a1> <a2>
 *   <count> W <id>
 *
 *   qemu-arm -plugin libinsn_events.so,out=ev.txt,watch=w.txt ./client ...
 *
 * Built against QEMU's qemu-plugin.h when the build is given it (Debian's qemu source package,
 * fetched by scripts/bootstrap), else against the declarations shared with native/mac/cortexm. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SECPERF_QEMU_PLUGIN_HEADER
#include <qemu-plugin.h>
#else
#include "qemu_plugin_api.h"
#endif

#include "decode_cache.h"
#include "timing.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define MAX_WATCH 64

struct event {
    unsigned long long count;
    char kind; /* 'M' marker syscall, 'W' watched address */
    unsigned long long a1, a2;
    double cycles[TIMING_SETS];  /* with timing=FILE: the model's cycles so far (low, point, high) */
    uint64_t *classes;           /* and its class counters (TC_N) */
};

/* a watched instruction inside a block whose whole cost the timing model added at the block's start */
struct watch_at {
    unsigned long long id;
    const void *tb;
    size_t index;
};

static unsigned long long count;
static long long marker_nr = 1516;
static int per_insn;
static unsigned long long watch_addr[MAX_WATCH];
static unsigned long long watch_id[MAX_WATCH];
static size_t n_watch;
static struct event *events;
static size_t n_events, cap_events;
static int oom;
static char out_path[4096];
static int timing_on;

static void snapshot(struct event *e, const double *less)
{
    double cyc[TIMING_SETS];
    e->classes = malloc(sizeof(uint64_t) * TC_N);
    if (e->classes == NULL) {
        oom = 1;
        return;
    }
    timing_state(cyc, e->classes);
    for (int s = 0; s < TIMING_SETS; s++)
        e->cycles[s] = cyc[s] - (less ? less[s] : 0);
}

static void record(char kind, unsigned long long a1, unsigned long long a2)
{
    if (n_events == cap_events) {
        size_t cap = cap_events ? cap_events * 2 : 4096;
        struct event *e = realloc(events, cap * sizeof *e);
        if (e == NULL) {
            oom = 1;
            return;
        }
        events = e;
        cap_events = cap;
    }
    events[n_events++] = (struct event){count, kind, a1, a2, {0}, NULL};
    if (timing_on && kind == 'M')
        snapshot(&events[n_events - 1], NULL);
}

static void on_watch(unsigned int vcpu, void *udata)
{
    (void)vcpu;
    if (!timing_on) {
        record('W', (unsigned long long)(size_t)udata, 0);
        return;
    }
    const struct watch_at *w = udata;
    record('W', w->id, 0);
    if (n_events > 0 && events[n_events - 1].kind == 'W' && !oom) {
        double rest[TIMING_SETS];
        timing_remaining(w->tb, w->index, rest);
        snapshot(&events[n_events - 1], rest);
    }
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1, uint64_t a2,
                       uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8)
{
    (void)id, (void)vcpu, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8;
    if (num == marker_nr)
        record('M', a1 & 0xffffffffu, a2 & 0xffffffffu);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    if (timing_on)
        timing_translate(tb);
    int watched = 0;
    for (size_t i = 0; i < n && n_watch > 0; i++) {
        unsigned long long va = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
        for (size_t w = 0; w < n_watch; w++)
            watched |= watch_addr[w] == va;
    }
    if (!per_insn && !watched) {
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &count, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &count, 1);
        unsigned long long va = qemu_plugin_insn_vaddr(insn);
        for (size_t w = 0; w < n_watch; w++)
            if (watch_addr[w] == va) {
                void *udata = (void *)(size_t)watch_id[w];
                if (timing_on) {
                    struct watch_at *at = malloc(sizeof *at);
                    if (at == NULL) {
                        oom = 1;
                        continue;
                    }
                    *at = (struct watch_at){watch_id[w], timing_last_tb(), i};
                    udata = at;
                }
                qemu_plugin_register_vcpu_insn_exec_cb(insn, on_watch, QEMU_PLUGIN_CB_NO_REGS, udata);
            }
    }
}

static void on_plugin_exit(qemu_plugin_id_t id, void *udata)
{
    (void)id, (void)udata;
    timing_set_trace(NULL); /* closes the trace file, if any */
    decode_cache_save();    /* the instructions decoded in this run, for the next (timing=FILE's decode_cache) */
    FILE *f = fopen(out_path, "w");
    if (f == NULL)
        return;
    if (!timing_on)
        fprintf(f, "# insn_events v1 total=%llu events=%zu%s\n", count, n_events, oom ? " oom" : "");
    else {
        double cyc[TIMING_SETS];
        uint64_t totals[TC_N];
        timing_state(cyc, totals);
        fprintf(f, "# insn_events v2 total=%llu events=%zu%s cycles=%.1f,%.1f,%.1f classes=", count, n_events,
                oom ? " oom" : "", cyc[0], cyc[1], cyc[2]);
        for (int c = 0; c < TC_N; c++)
            fprintf(f, "%s%s", c ? "," : "", timing_class_names[c]);
        fprintf(f, " totals=");
        for (int c = 0; c < TC_N; c++)
            fprintf(f, "%s%llu", c ? "," : "", (unsigned long long)totals[c]);
        fprintf(f, "\n");
    }
    for (size_t i = 0; i < n_events; i++) {
        const struct event *e = &events[i];
        if (e->kind == 'M')
            fprintf(f, "%llu M %llu %llu", e->count, e->a1, e->a2);
        else
            fprintf(f, "%llu W %llu", e->count, e->a1);
        if (timing_on && e->classes) {
            fprintf(f, " | %.1f %.1f %.1f |", e->cycles[0], e->cycles[1], e->cycles[2]);
            for (int c = 0; c < TC_N; c++)
                fprintf(f, " %llu", (unsigned long long)e->classes[c]);
        }
        fprintf(f, "\n");
    }
    fclose(f);
}

static int read_watch(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "insn_events: cannot open watch file %s\n", path);
        return -1;
    }
    /* one "0xADDR ID" a line (device_build.watch_lines); a line of any other shape is an error */
    char line[128];
    int rc = 0;
    while (n_watch < MAX_WATCH && rc == 0 && fgets(line, sizeof line, f) != NULL) {
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue;
        char *end = NULL, *end2 = NULL;
        errno = 0;
        unsigned long long addr = strtoull(line, &end, 16);
        unsigned long long id = strtoull(end, &end2, 10);
        if (errno != 0 || end == line || end2 == end || end2[strspn(end2, " \t\r\n")] != '\0') {
            fprintf(stderr, "insn_events: watch file %s: not an 'ADDRESS ID' line: %.60s\n", path, line);
            rc = -1;
            break;
        }
        watch_addr[n_watch] = addr & ~1ull; /* a Thumb function's symbol has bit 0 set */
        watch_id[n_watch] = id;
        n_watch++;
    }
    fclose(f);
    return rc;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    const char *timing_file = NULL;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0)
            snprintf(out_path, sizeof(out_path), "%s", argv[i] + 4);
        else if (strncmp(argv[i], "marker=", 7) == 0)
            marker_nr = strtoll(argv[i] + 7, NULL, 0);
        else if (strcmp(argv[i], "count=insn") == 0)
            per_insn = 1;
        else if (strcmp(argv[i], "count=tb") == 0)
            per_insn = 0;
        else if (strncmp(argv[i], "watch=", 6) == 0) {
            if (read_watch(argv[i] + 6) != 0)
                return -1;
        } else if (strncmp(argv[i], "timing=", 7) == 0) {
            timing_file = argv[i] + 7;   /* loaded once every argument is known (path= changes how) */
        } else if (strcmp(argv[i], "sums=inline") == 0 || strcmp(argv[i], "sums=blocks") == 0) {
            timing_set_inline(argv[i][5] == 'i');
        } else if (strcmp(argv[i], "path=full") == 0 || strcmp(argv[i], "path=fast") == 0) {
            timing_set_full(argv[i][6] == 'u');
        } else if (strncmp(argv[i], "trace=", 6) == 0) {
            FILE *t = fopen(argv[i] + 6, "w");
            if (t == NULL) {
                fprintf(stderr, "insn_events: cannot write trace file %s\n", argv[i] + 6);
                return -1;
            }
            timing_set_trace(t);
        } else {
            fprintf(stderr, "insn_events: unknown argument %s (known: out=FILE, marker=N, watch=FILE, count=tb|insn, "
                    "timing=FILE, sums=inline|blocks, path=fast|full, trace=FILE)\n", argv[i]);
            return -1;
        }
    }
    if (out_path[0] == '\0') {
        fprintf(stderr, "insn_events: needs out=FILE\n");
        return -1;
    }
    if (timing_file != NULL) {
        if (timing_load(timing_file) != 0)
            return -1;
        timing_on = 1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
    return 0;
}
