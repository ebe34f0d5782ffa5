/* timing: the per-class cycle model of the counting plugin (see timing.h for what it models). */
#include "timing.h"
#include "decode_cache.h"
#include "dual_issue.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef SECPERF_QEMU_PLUGIN_HEADER
#include <qemu-plugin.h>
#else
#include "qemu_plugin_api.h"
#endif

const char *const timing_class_names[TC_N] = {
    "alu", "load", "load_pipelined", "store", "ldrd", "strd", "ldm", "stm", "ldstm_regs",
    "mul", "mla", "mull", "div", "branch", "branch_taken", "branch_not_taken", "pc_write",
    "it", "vfp", "vfp_mem", "vdiv", "neon", "neon_mem", "other",
    "ifetch_miss", "ifetch_seq_stall", "dflash_miss", "l1i_miss", "l1d_miss", "l2_miss", "mispredict",
    "agu_stall", "store_regoff", "branch_load_taken", "branch_taken_unaligned",
    "dual_issue", "unaligned_run",
};

double timing_cycles[TIMING_SETS];   /* stalls and branch penalties, added by the callbacks */
uint64_t timing_counts[TC_N];
/* the blocks' class costs, added by inline operations at each block's start (no callback), in
 * 1/TIMING_FIX cycles */
#define TIMING_FIX 4096.0
static uint64_t timing_fixed[TIMING_SETS];

/* Where the static part (class counts, class costs) is summed. Default: one inline addition per block
 * execution to the block's own counter, the totals made when an event asks for them (the sum over
 * the blocks of executions x the block's counts); with timing_set_inline(1), as before: an inline
 * addition per class and per set to the running totals at each block's start. The two give the same
 * integers (tests compare them); the first costs one inline operation per block instead of up to a
 * dozen. */
static int sum_inline;
static int full_path;   /* the full path (see the caches below) */
/* Each block has an id for life and its execution counter in a chunk of counters that never moves (the
 * inline additions point at it); an event's totals add, for the blocks whose counter moved since the
 * last event (a scan of the contiguous counters), the executions since then x the block's counts to
 * the running totals: the same integers as summing every block every time, without visiting every
 * block's structure at every event. */
#define CTR_CHUNK 4096
#define CTR_CHUNKS 4096
static uint64_t *ctr_chunk[CTR_CHUNKS];
static uint64_t *ctr_seen;         /* by id: the count already in the totals */
static struct tbinfo **ctr_owner;  /* by id: the block (NULL once released) */
static size_t n_ids, cap_ids;
static void block_sums(void);

void timing_set_inline(int on)
{
    sum_inline = on;
}

void timing_set_full(int on)
{
    full_path = on;
}

void timing_state(double cycles[TIMING_SETS], uint64_t counts[TC_N])
{
    if (!sum_inline)
        block_sums();
    memcpy(counts, timing_counts, sizeof(uint64_t) * TC_N);
    for (int s = 0; s < TIMING_SETS; s++)
        cycles[s] = (double)timing_fixed[s] / TIMING_FIX + timing_cycles[s];
}

double timing_now(int set)
{
    double cyc[TIMING_SETS];
    uint64_t counts[TC_N];
    timing_state(cyc, counts);
    return cyc[set];
}

/* ---- parameters ------------------------------------------------------------------------------- */

enum cost {
    C_ALU, C_LOAD, C_LOAD_PIPELINED, C_STORE, C_LDRD, C_STRD, C_LDM_BASE, C_LDM_PER_REG, C_STM_BASE,
    C_STM_PER_REG, C_MUL, C_MLA, C_MULL, C_DIV, C_BRANCH, C_BRANCH_TAKEN_EXTRA, C_MISPREDICT, C_IT,
    C_VFP, C_VFP_MEM, C_VDIV, C_NEON, C_NEON_MEM, C_OTHER, C_FLASH_WS, C_L1_MISS, C_L2_MISS, C_NO_PREFETCH, C_AGU_STALL, C_BRANCH_LOAD_EXTRA, C_STORE_REGOFF_EXTRA,
    C_BRANCH_UNALIGNED_EXTRA, C_UNALIGNED_RUN_EXTRA, C_DUAL_ISSUE, C_N
};
static const char *const cost_names[C_N] = {
    "alu", "load", "load_pipelined", "store", "ldrd", "strd", "ldm_base", "ldm_per_reg", "stm_base",
    "stm_per_reg", "mul", "mla", "mull", "div", "branch", "branch_taken_extra", "mispredict", "it",
    "vfp", "vfp_mem", "vdiv", "neon", "neon_mem", "other", "flash_ws", "l1_miss", "l2_miss", "no_prefetch",
    "agu_stall", "branch_load_extra", "store_regoff_extra", "branch_unaligned_extra", "unaligned_run_extra",
    "dual_issue",
};
static double cost[C_N][TIMING_SETS];
/* dual_issue is optional: given, the younger instruction of a pair the core issues together (dual_issue.h)
 * costs it instead of its class cost and is counted as dual_issue; absent, nothing pairs */
static int pairing;

enum geom {
    G_FLASH_LO, G_FLASH_HI, G_FETCH_BYTES, G_ICACHE_ENTRIES, G_ICACHE_WAYS, G_DCACHE_ENTRIES,
    G_DCACHE_WAYS, G_DFETCH_BYTES, G_L1I_BYTES, G_L1I_LINE, G_L1I_WAYS, G_L1D_BYTES, G_L1D_LINE, G_L1D_WAYS,
    G_L2_BYTES, G_L2_LINE, G_L2_WAYS, G_BP_ENTRIES, G_N
};
static const char *const geom_names[G_N] = {
    "flash_lo", "flash_hi", "fetch_bytes", "icache_entries", "icache_ways", "dcache_entries",
    "dcache_ways", "dfetch_bytes", "l1i_bytes", "l1i_line", "l1i_ways", "l1d_bytes", "l1d_line", "l1d_ways",
    "l2_bytes", "l2_line", "l2_ways", "bp_entries",
};
static unsigned long long geom[G_N];

/* ---- caches: set-associative, least recently used way replaced ----------------------------------- */

/* The cheaper path (default) and the full path (plugin argument path=full, kept to check the cheaper one
 * against: the same event file) differ only in how they get the same answers:
 *   - recency: the full path stamps each use and searches a set for the oldest stamp on a miss; the
 *     cheaper path keeps, per set of up to 8 ways, an 8 x 8 bit matrix (bit j of way i's byte: i was
 *     used after j) whose all-zero byte is the least recently used way, so a use is two operations and
 *     a miss finds its victim without a search. Ways never used have all-zero bytes and the lowest is
 *     taken first, as the oldest stamp (0) is;
 *   - lookup: the full path searches the set's tags; the cheaper path keeps, for the flash lines a
 *     microcontroller's caches hold, the way each line was last filled into, in a table indexed by the
 *     line number, and checks that way's tag;
 *   - memory callbacks: the full path registers one for every load that is not sp-relative by its text
 *     ("[sp"); the cheaper path also leaves out the other loads whose only address register is sp (pop,
 *     ldm sp, vpop), which read the stack in SRAM as the "[sp" loads do;
 *   - instruction fetch: the cheaper path precomputes, per block, the stall each of its granules pays on
 *     a miss where that depends on the block alone (fetch_flash_table), and logs the uses of blocks
 *     whose granules all hit instead of applying them one by one (apply_use_log); such a block takes a short
 *     path in on_tb_exec, and the previous block's branch is resolved from a copy of its end and kind kept
 *     at its execution (no read of that block); loads have a callback of their own (on_mem_flash: the
 *     flash bounds as one comparison, the line table's lookup, a miss filled in place). */

struct cache {
    unsigned sets, ways, shift; /* shift: log2 of the line (granule) size */
    unsigned long long *tag;    /* sets * ways, tag = line number + 1 (0 = empty) */
    unsigned long long *stamp;  /* full path (and more than 8 ways, or a way count that is not a power of 2) */
    unsigned long long clock;
    uint64_t *age;              /* cheaper path: per set, the recency matrix (byte i: way i's row) */
    uint64_t row_or[8], row_and[8];   /* a use of way w: age | row_or[w] (its row set), & row_and[w] (its column clear) */
    unsigned wshift;            /* log2(ways) when age is kept */
    uint8_t *where;             /* cheaper path, with age: per line in [where_lo, where_lo + where_n) the way it
                                 * was last filled into + 1 (0 never): present when that way's tag is the line's */
    unsigned long long where_lo, where_n;
    unsigned long long fills;   /* misses so far: while it stands still, every present line stays */
    unsigned last_slot;         /* where the last access hit or filled */
};

static int log2u(unsigned long long v)
{
    int s = 0;
    while ((1ull << s) < v)
        s++;
    return (1ull << s) == v ? s : -1;
}

/* a cache of `entries` lines of `line` bytes in `ways` ways; [lo_addr, hi_addr) (hi > lo) the addresses
 * whose lines the cheaper path finds through a table */
static int cache_init(struct cache *c, unsigned long long entries, unsigned long long ways,
                      unsigned long long line, const char *what, unsigned long long lo_addr,
                      unsigned long long hi_addr)
{
    memset(c, 0, sizeof *c);
    if (entries == 0)
        return 0;
    if (ways == 0 || entries % ways || log2u(line) < 0 || log2u(entries / ways) < 0) {
        fprintf(stderr, "timing: %s: %llu entries of %llu bytes in %llu ways is not a power-of-two geometry\n",
                what, entries, line, ways);
        return -1;
    }
    c->sets = (unsigned)(entries / ways);
    c->ways = (unsigned)ways;
    c->shift = (unsigned)log2u(line);
    c->tag = calloc(entries, sizeof *c->tag);
    if (c->tag == NULL)
        return -1;
    if (!full_path && ways <= 8 && log2u(ways) >= 0) {
        c->wshift = (unsigned)log2u(ways);
        for (unsigned w = 0; w < ways; w++) {
            c->row_or[w] = ((1ull << ways) - 1) << (8 * w);
            c->row_and[w] = ~(0x0101010101010101ull << w);
        }
        c->age = calloc(c->sets, sizeof *c->age);
        if (c->age == NULL)
            return -1;
    } else if ((c->stamp = calloc(entries, sizeof *c->stamp)) == NULL)
        return -1;
    if (c->age && hi_addr > lo_addr) {
        unsigned long long n = ((hi_addr - 1) >> c->shift) - (lo_addr >> c->shift) + 1;
        if (n <= (1ull << 26)) {   /* up to 256 MiB of table: else the search does it */
            c->where_lo = lo_addr >> c->shift;
            c->where_n = n;
            c->where = calloc(n, sizeof *c->where);   /* pages never touched cost nothing */
        }
    }
    return 0;
}

/* the way in `slot` was used now */
static inline void cache_touch(struct cache *c, unsigned slot)
{
    if (c->age) {
        unsigned set = slot >> c->wshift, w = slot & (c->ways - 1);
        c->age[set] = (c->age[set] | c->row_or[w]) & c->row_and[w];
    } else
        c->stamp[slot] = ++c->clock;
}

/* 1 and *slot where the line sits, or 0 */
static inline int cache_find(const struct cache *c, unsigned long long line_no, unsigned *slot)
{
    if (c->where && line_no - c->where_lo < c->where_n) {
        unsigned w = c->where[line_no - c->where_lo];
        *slot = ((unsigned)(line_no & (c->sets - 1)) << c->wshift) + w - 1;
        return w != 0 && c->tag[*slot] == line_no + 1;
    }
    unsigned set = (unsigned)(line_no & (c->sets - 1));
    const unsigned long long *tag = c->tag + (size_t)set * c->ways;
    for (unsigned w = 0; w < c->ways; w++)
        if (tag[w] == line_no + 1) {
            *slot = set * c->ways + w;
            return 1;
        }
    return 0;
}

/* the least recently used way of the set (the lowest of those never used while any is) */
static inline unsigned cache_victim(const struct cache *c, unsigned set)
{
    if (c->age) {
        uint64_t x = c->age[set];
        uint64_t z = (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull;   /* lowest zero byte exact */
        return (unsigned)__builtin_ctzll(z) >> 3;
    }
    const unsigned long long *st = c->stamp + (size_t)set * c->ways;
    unsigned victim = 0;
    for (unsigned w = 1; w < c->ways; w++)
        if (st[w] < st[victim])
            victim = w;
    return victim;
}

/* 1 on a hit; on a miss the line is filled (the least recently used way is replaced) */
static int cache_access(struct cache *c, unsigned long long line_no)
{
    unsigned slot;
    if (cache_find(c, line_no, &slot)) {
        cache_touch(c, slot);
        c->last_slot = slot;
        return 1;
    }
    unsigned set = (unsigned)(line_no & (c->sets - 1));
    slot = set * c->ways + cache_victim(c, set);
    if (c->where && line_no - c->where_lo < c->where_n)
        c->where[line_no - c->where_lo] = (uint8_t)((slot & (c->ways - 1)) + 1);
    c->tag[slot] = line_no + 1;
    cache_touch(c, slot);
    c->last_slot = slot;
    c->fills++;
    return 0;
}

/* cache_access with a hint: where this line sat the last time this fetch or load saw it, then where the
 * last access of this cache went. A line is only ever in its own set, so a tag found there is the hit
 * the full search would find; the bookkeeping (use, last slot) is the same, so the results are too. The
 * hint is updated. (With the line table the lookup needs no hint.) */
static inline int cache_access_at(struct cache *c, unsigned long long line_no, unsigned *hint)
{
    if (!c->where) {
        unsigned h = *hint;
        if (c->tag[h] != line_no + 1)
            h = c->last_slot;   /* else where the cache's last access went (a table read twice in a row) */
        if (c->tag[h] == line_no + 1) {
            cache_touch(c, h);
            c->last_slot = *hint = h;
            return 1;
        }
    }
    int hit = cache_access(c, line_no);
    *hint = c->last_slot;
    return hit;
}

static struct cache icache, dcache, l1i, l1d, l2;
static unsigned char *bp;           /* 2-bit counters */
static int mcu_flash;               /* code and read-only data in flash (microcontrollers) */
static unsigned long long dflash_lo, dflash_span;   /* flash: [dflash_lo, dflash_lo + dflash_span) */

static void cache_free(struct cache *c)
{
    free(c->tag);
    free(c->stamp);
    free(c->age);
    free(c->where);
    memset(c, 0, sizeof *c);
}

void timing_unload(void)
{
    cache_free(&icache);
    cache_free(&dcache);
    cache_free(&l1i);
    cache_free(&l1d);
    cache_free(&l2);
    free(bp);
    bp = NULL;
    free(ctr_seen);   /* the counter chunks stay: translated blocks may still add to them */
    free(ctr_owner);
    ctr_seen = NULL;
    ctr_owner = NULL;
    n_ids = cap_ids = 0;
}

/* The line's first word is its key: up to max numbers after it (strtod, so a malformed one is seen);
 * returns how many were read before the end of the line or the first that is not a number. */
static int numbers_after_key(const char *line, double *v, int max)
{
    const char *p = line + strspn(line, " \t");
    p += strcspn(p, " \t\r\n");
    int n = 0;
    while (n < max) {
        char *end = NULL;
        double x = strtod(p, &end);
        if (end == p)
            break;
        v[n++] = x;
        p = end;
    }
    p += strspn(p, " \t\r\n");
    return *p == '\0' ? n : -1;
}

/* One whole number after the key (decimal, or hex with 0x): 0, else -1. */
static int integer_after_key(const char *line, unsigned long long *out)
{
    const char *p = line + strspn(line, " \t");
    p += strcspn(p, " \t\r\n");
    p += strspn(p, " \t");
    if (*p < '0' || *p > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(p, &end, 0);
    if (errno != 0 || end == p || end[strspn(end, " \t\r\n")] != '\0')
        return -1;
    *out = x;
    return 0;
}

int timing_load(const char *path)
{
    timing_unload();   /* a second load replaces the first */
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "timing: cannot open parameter file %s\n", path);
        return -1;
    }
    int have_cost[C_N] = {0}, have_geom[G_N] = {0};
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char key[64];
        double v[TIMING_SETS];
        if (line[0] == '#' || sscanf(line, "%63s", key) != 1)
            continue;
        int done = 0;
        for (int i = 0; i < C_N && !done; i++)
            if (strcmp(key, cost_names[i]) == 0) {
                if (numbers_after_key(line, v, 3) != 3) {
                    fprintf(stderr, "timing: %s needs three values (low point high)\n", key);
                    fclose(f);
                    return -1;
                }
                memcpy(cost[i], v, sizeof v);
                have_cost[i] = done = 1;
            }
        for (int i = 0; i < G_N && !done; i++)
            if (strcmp(key, geom_names[i]) == 0) {
                if (integer_after_key(line, &geom[i]) != 0) {
                    fprintf(stderr, "timing: %s needs one integer\n", key);
                    fclose(f);
                    return -1;
                }
                have_geom[i] = done = 1;
            }
        if (!done && strcmp(key, "decode_cache") == 0) {   /* optional: where this binary's decoded facts are kept */
            char dpath[480];
            if (sscanf(line, "%*s %479s", dpath) != 1) {
                fprintf(stderr, "timing: decode_cache needs a path\n");
                fclose(f);
                return -1;
            }
            decode_cache_open(dpath);
            done = 1;
        }
        if (!done) {
            fprintf(stderr, "timing: unknown parameter %s\n", key);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    pairing = have_cost[C_DUAL_ISSUE];
    for (int i = 0; i < C_N; i++)
        if (!have_cost[i] && i != C_DUAL_ISSUE) {
            fprintf(stderr, "timing: missing parameter %s\n", cost_names[i]);
            return -1;
        }
    for (int i = 0; i < G_N; i++)
        if (!have_geom[i]) {
            fprintf(stderr, "timing: missing parameter %s\n", geom_names[i]);
            return -1;
        }
    mcu_flash = geom[G_FLASH_HI] > geom[G_FLASH_LO];
    dflash_lo = geom[G_FLASH_LO];
    dflash_span = mcu_flash ? geom[G_FLASH_HI] - geom[G_FLASH_LO] : 0;
    if (mcu_flash && log2u(geom[G_FETCH_BYTES]) < 0) {
        fprintf(stderr, "timing: fetch_bytes must be a power of two\n");
        return -1;
    }
    /* flash lines: a block that starts in flash may end a little past it (the table covers that too) */
    unsigned long long flo = mcu_flash ? geom[G_FLASH_LO] : 0, fhi = mcu_flash ? geom[G_FLASH_HI] : 0;
    if (cache_init(&icache, geom[G_ICACHE_ENTRIES], geom[G_ICACHE_WAYS], geom[G_FETCH_BYTES], "icache", flo,
                   fhi ? fhi + 4096 : 0) ||
        cache_init(&dcache, geom[G_DCACHE_ENTRIES], geom[G_DCACHE_WAYS], geom[G_DFETCH_BYTES], "dcache", flo, fhi) ||
        cache_init(&l1i, geom[G_L1I_LINE] ? geom[G_L1I_BYTES] / geom[G_L1I_LINE] : 0, geom[G_L1I_WAYS],
                   geom[G_L1I_LINE], "l1i", 0, 0) ||
        cache_init(&l1d, geom[G_L1D_LINE] ? geom[G_L1D_BYTES] / geom[G_L1D_LINE] : 0, geom[G_L1D_WAYS],
                   geom[G_L1D_LINE], "l1d", 0, 0) ||
        cache_init(&l2, geom[G_L2_LINE] ? geom[G_L2_BYTES] / geom[G_L2_LINE] : 0, geom[G_L2_WAYS],
                   geom[G_L2_LINE], "l2", 0, 0))
        return -1;
    if (geom[G_BP_ENTRIES]) {
        if (log2u(geom[G_BP_ENTRIES]) < 0) {
            fprintf(stderr, "timing: bp_entries must be a power of two\n");
            return -1;
        }
        bp = malloc(geom[G_BP_ENTRIES]);
        if (bp == NULL)
            return -1;
        memset(bp, 1, geom[G_BP_ENTRIES]); /* weakly not taken */
    }
    return 0;
}

/* ---- classification ----------------------------------------------------------------------------- */

static const char *const CONDS[] = {"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc",
                                    "hi", "ls", "ge", "lt", "gt", "le", NULL};

static int is_cond(const char *s)
{
    for (int i = 0; CONDS[i]; i++)
        if (strcmp(s, CONDS[i]) == 0)
            return 1;
    return strcmp(s, "al") == 0 ? 2 : 0;
}

static int in_list(const char *s, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

/* base mnemonic without a condition code or flag-setting "s"; *cond 1 when a condition was stripped */
static int strip(const char *base, const char *const *list, int *cond)
{
    char tmp[32];
    size_t n = strlen(base);
    if (in_list(base, list))
        return 1;
    if (n > 2 && n < sizeof tmp && is_cond(base + n - 2)) {
        memcpy(tmp, base, n - 2);
        tmp[n - 2] = 0;
        if (in_list(tmp, list)) {
            *cond = is_cond(base + n - 2) == 1;
            return 1;
        }
        if (n > 3 && tmp[n - 3] == 's') { /* e.g. "addseq" */
            tmp[n - 3] = 0;
            if (in_list(tmp, list)) {
                *cond = 1;
                return 1;
            }
        }
    }
    if (n > 1 && base[n - 1] == 's' && n < sizeof tmp) {
        memcpy(tmp, base, n - 1);
        tmp[n - 1] = 0;
        if (in_list(tmp, list))
            return 1;
    }
    return 0;
}

static const char *const LOADS[] = {"ldr", "ldrb", "ldrh", "ldrsb", "ldrsh", "ldrex", "ldrexb", "ldrexh", "ldrt",
                                    "ldrbt", "ldrht", "ldrsbt", "ldrsht", "lda", "ldab", "ldah", "ldaex", "pld",
                                    "pli", NULL};
static const char *const LOADD[] = {"ldrd", "ldrexd", NULL};
static const char *const STORES[] = {"str", "strb", "strh", "strex", "strexb", "strexh", "strt", "strbt", "strht",
                                     "stl", "stlb", "stlh", "stlex", NULL};
static const char *const STORED[] = {"strd", "strexd", NULL};
static const char *const LDMS[] = {"ldm", "ldmia", "ldmib", "ldmda", "ldmdb", "ldmfd", "pop", NULL};
static const char *const STMS[] = {"stm", "stmia", "stmib", "stmda", "stmdb", "stmfd", "push", NULL};
static const char *const MULS[] = {"mul", "smulbb", "smulbt", "smultb", "smultt", "smulwb", "smulwt", "smmul",
                                   "smmulr", "smuad", "smuadx", "smusd", "smusdx", "usad8", NULL};
static const char *const MLAS[] = {"mla", "mls", "smlabb", "smlabt", "smlatb", "smlatt", "smlawb", "smlawt",
                                   "smmla", "smmlar", "smmls", "smmlsr", "smlad", "smladx", "smlsd", "smlsdx",
                                   "usada8", NULL};
static const char *const MULLS[] = {"umull", "smull", "umlal", "smlal", "umaal", "smlalbb", "smlalbt", "smlaltb",
                                    "smlaltt", "smlald", "smlaldx", "smlsld", "smlsldx", NULL};
static const char *const DIVS[] = {"sdiv", "udiv", NULL};
static const char *const BRANCHES[] = {"b", "bl", "blx", "bx", "bxj", NULL};
static const char *const OTHERS[] = {"svc", "udf", "bkpt", "mrc", "mcr", "mrc2", "mcr2", "mrs", "msr", "cps", "cpsid",
                                     "cpsie", "dmb", "dsb", "isb", "wfi", "wfe", "sev", "clrex", "setend", NULL};

/* count of registers in the first {...} of the operands ("r4-r7" counts 4) */
static int reg_list(const char *ops)
{
    const char *p = strchr(ops, '{');
    if (p == NULL)
        return 1;
    int n = 0;
    for (p++; *p && *p != '}';) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '}' || !*p)
            break;
        char a[8] = {0}, b[8] = {0};
        int k = 0;
        while (*p && *p != ',' && *p != '}' && *p != '-' && k < 7)
            a[k++] = *p++;
        if (*p == '-') {
            p++;
            k = 0;
            while (*p && *p != ',' && *p != '}' && k < 7)
                b[k++] = *p++;
            long x = strtol(a + 1, NULL, 10), y = strtol(b + 1, NULL, 10); /* r4-r7: 4, 7 */
            n += y >= x ? (int)(y - x + 1) : 1;
        } else
            n++;
        while (*p && *p != ',' && *p != '}')
            p++;
    }
    return n ? n : 1;
}

/* whether the operands name pc as the destination (first operand) or in a register list */
static int writes_pc(const char *base, const char *ops, int ldm)
{
    if (ldm) {
        const char *l = strchr(ops, '{');
        return l && strstr(l, "pc") != NULL;
    }
    while (*ops == ' ')
        ops++;
    return strncmp(ops, "pc,", 3) == 0 && strcmp(base, "str") != 0 && strncmp(base, "cmp", 3) != 0 &&
           strncmp(base, "tst", 3) != 0;
}

int timing_classify(const char *disas, int *nregs, int *branch, int *mem)
{
    char mn[32];
    const char *p = disas_mnemonic(disas, mn, sizeof mn);
    const char *ops = p;
    char base[32];
    snprintf(base, sizeof base, "%s", mn);
    char *dot = strchr(base, '.');
    const char *dtype = dot ? strchr(mn, '.') + 1 : "";
    if (dot)
        *dot = 0;
    *nregs = 1, *branch = 0, *mem = 0;
    int cond = 0;

    /* branches */
    if (strcmp(base, "cbz") == 0 || strcmp(base, "cbnz") == 0) {
        *branch = 2;
        return TC_BRANCH;
    }
    if (strcmp(base, "tbb") == 0 || strcmp(base, "tbh") == 0) {
        *branch = 1;
        *mem = 1;
        return TC_BRANCH;
    }
    if (strip(base, BRANCHES, &cond)) {
        *branch = cond ? 2 : 1;
        return TC_BRANCH;
    }
    /* IT blocks: it, itt, ite, ittee, ... */
    if (base[0] == 'i' && base[1] == 't' && strspn(base + 2, "te") == strlen(base + 2))
        return TC_IT;
    if (base[0] == 'v') {
        static const char *const VMEM[] = {"vldr", "vstr", NULL};
        static const char *const VMULTI[] = {"vldm", "vldmia", "vldmdb", "vstm", "vstmia", "vstmdb", "vpush", "vpop", NULL};
        static const char *const VDIV[] = {"vdiv", "vsqrt", NULL};
        int neon = strchr(ops, 'q') != NULL || (dtype[0] && dtype[0] != 'f' && strncmp(dtype, "32", 2) != 0 &&
                                               strncmp(base, "vmov", 4) != 0 && strncmp(base, "vcvt", 4) != 0);
        if (strip(base, VMEM, &cond)) {
            *mem = strncmp(base, "vst", 3) == 0 ? 2 : 1;
            return TC_VFP_MEM;
        }
        if (strip(base, VMULTI, &cond)) {
            *mem = strncmp(base, "vst", 3) == 0 || strncmp(base, "vpush", 5) == 0 ? 2 : 1;
            *nregs = reg_list(ops);
            return TC_VFP_MEM;
        }
        if (strncmp(base, "vld", 3) == 0 || strncmp(base, "vst", 3) == 0) {
            *mem = base[1] == 'l' ? 1 : 2;
            return TC_NEON_MEM;
        }
        if (strip(base, VDIV, &cond))
            return TC_VDIV;
        return neon ? TC_NEON : TC_VFP;
    }
    if (strip(base, LDMS, &cond)) {
        *nregs = reg_list(ops);
        *mem = 1;
        if (writes_pc(base, ops, 1))
            *branch = cond ? 2 : 1;
        return TC_LDM;
    }
    if (strip(base, STMS, &cond)) {
        *nregs = reg_list(ops);
        *mem = 2;
        return TC_STM;
    }
    if (strip(base, LOADD, &cond)) {
        *mem = 1;
        return TC_LDRD;
    }
    if (strip(base, STORED, &cond)) {
        *mem = 2;
        return TC_STRD;
    }
    if (strip(base, LOADS, &cond)) {
        *mem = 1;
        if (writes_pc(base, ops, 0))
            *branch = cond ? 2 : 1;
        return TC_LOAD;
    }
    if (strip(base, STORES, &cond)) {
        *mem = 2;
        return TC_STORE;
    }
    if (strip(base, MULLS, &cond))
        return TC_MULL;
    if (strip(base, MLAS, &cond))
        return TC_MLA;
    if (strip(base, MULS, &cond))
        return TC_MUL;
    if (strip(base, DIVS, &cond))
        return TC_DIV;
    if (strip(base, OTHERS, &cond))
        return TC_OTHER;
    /* data processing; one that writes pc (mov pc, lr / add pc, ...) is a branch */
    if (writes_pc(base, ops, 0)) {
        size_t n = strlen(base);
        *branch = n > 2 && is_cond(base + n - 2) == 1 ? 2 : 1;
        return TC_PC_WRITE;
    }
    return TC_ALU;
}

/* destination and base register of a single load ("ldr r3, [r2, #4]" -> "r3", "r2"), empty if not found */
static void load_regs(const char *disas, char dest[8], char base[8])
{
    const char *p = disas;
    while (*p && !isspace((unsigned char)*p))
        p++;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t k = 0;
    while (*p && *p != ',' && !isspace((unsigned char)*p) && k < 7)
        dest[k++] = *p++;
    dest[k] = 0;
    const char *b = strchr(p, '[');
    k = 0;
    if (b)
        for (b++; *b && *b != ',' && *b != ']' && !isspace((unsigned char)*b) && k < 7;)
            base[k++] = *b++;
    base[k] = 0;
}

/* register number of the name at *p ("r0".."r15", sb sl fp ip sp lr pc), -1 if none; *p moves past it */
static int reg_at(const char **p)
{
    static const char *const alias[] = {"sb", "sl", "fp", "ip", "sp", "lr", "pc"};
    const char *s = *p;
    while (*s == ' ' || *s == '\t' || *s == '{')
        s++;
    if (s[0] == 'r' && isdigit((unsigned char)s[1])) {
        char *end;
        long n = strtol(s + 1, &end, 10);
        if (n >= 0 && n <= 15 && !isalnum((unsigned char)*end)) {
            *p = end;
            return (int)n;
        }
        return -1;
    }
    for (int i = 0; i < 7; i++)
        if (s[0] == alias[i][0] && s[1] == alias[i][1] && !isalnum((unsigned char)s[2])) {
            *p = s + 2;
            return 9 + i;
        }
    return -1;
}

static const char *operands(const char *disas)
{
    const char *p = disas;
    while (*p == ' ' || *p == '\t')
        p++;
    while (*p && !isspace((unsigned char)*p))
        p++;
    return p;
}

unsigned timing_dp_dest(const char *disas, int cls)
{
    if (cls != TC_ALU && cls != TC_MUL && cls != TC_MLA && cls != TC_MULL && cls != TC_DIV)
        return 0;
    const char *p = disas;
    while (*p == ' ' || *p == '\t')
        p++;
    /* compares and tests write only the flags; nop and the hints write nothing */
    static const char *const NODEST[] = {"cmp", "cmn", "tst", "teq", "nop", "yield", "sev", "wfe", "wfi", NULL};
    for (int i = 0; NODEST[i]; i++)
        if (strncmp(p, NODEST[i], strlen(NODEST[i])) == 0)
            return 0;
    const char *q = operands(disas);
    unsigned out = 0;
    int r = reg_at(&q);
    if (r < 0)
        return 0;
    out |= 1u << r;
    if (cls == TC_MULL) {   /* RdLo, RdHi */
        while (*q == ' ' || *q == ',')
            q++;
        r = reg_at(&q);
        if (r >= 0)
            out |= 1u << r;
    }
    return out;
}

/* a register offset in the address ("[r3, r2, lsl #2]", "[r1, -r2]") */
static int has_index(const char *disas)
{
    const char *b = strchr(disas, '[');
    if (b == NULL)
        return 0;
    b++;
    if (reg_at(&b) < 0)
        return 0;
    while (*b == ' ' || *b == ',' || *b == '-')
        b++;
    return reg_at(&b) >= 0;
}

unsigned timing_addr_regs(const char *disas, int cls)
{
    const char *q = operands(disas);
    unsigned out = 0;
    switch (cls) {
    case TC_LDM:
    case TC_STM: {
        const char *p = disas;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "push", 4) == 0 || strncmp(p, "pop", 3) == 0)
            return 1u << 13;
        int r = reg_at(&q);
        return r >= 0 ? 1u << r : 0;
    }
    case TC_LOAD: case TC_LOAD_PIPELINED: case TC_STORE: case TC_LDRD: case TC_STRD: case TC_VFP_MEM:
    case TC_NEON_MEM: {
        const char *b = strchr(q, '[');
        if (b == NULL) {   /* vpush / vpop */
            const char *p = disas;
            while (*p == ' ' || *p == '\t')
                p++;
            return strncmp(p, "vpush", 5) == 0 || strncmp(p, "vpop", 4) == 0 ? 1u << 13 : 0;
        }
        b++;
        int r = reg_at(&b);
        if (r >= 0)
            out |= 1u << r;
        while (*b == ' ' || *b == ',')
            b++;
        if (*b == '-')
            b++;
        r = reg_at(&b);   /* an index register */
        if (r >= 0)
            out |= 1u << r;
        return out;
    }
    default:
        return 0;
    }
}

/* the facts timing_translate takes from one instruction's disassembly (d NULL: none was given) */
static void decode_facts(const char *d, struct decoded *out)
{
    int nregs, branch, mem;
    memset(out, 0, sizeof *out);
    int cls = timing_classify(d ? d : "", &nregs, &branch, &mem);
    out->cls = (uint8_t)cls;
    out->nregs = (uint8_t)(nregs > 255 ? 255 : nregs);
    out->branch = (uint8_t)branch;
    out->mem = (uint8_t)mem;
    if (d == NULL)
        return;
    if (cls == TC_LOAD)
        load_regs(d, out->dest, out->base);
    out->has_index = (uint8_t)has_index(d);
    out->addr_regs = (uint16_t)timing_addr_regs(d, cls);
    out->dp_dest = (uint16_t)timing_dp_dest(d, cls);
    out->sp_based = strstr(d, "[sp") != NULL;
    out->pair_role = (uint8_t)dual_issue_facts(d, cls, branch, &out->pair_reads, &out->pair_writes);
}

/* ---- per block --------------------------------------------------------------------------------- */

/* the fields every execution reads (on_tb_exec, and the next block's branch resolution) come first,
 * in the block's first two host cache lines (the block is allocated on a line boundary) */
#define SLOTS_INLINE 4
struct tbinfo {
    /* what every execution reads on the cheaper path when the block's granules are all present: the
     * first host cache line */
    unsigned long long start, end;   /* [start, end) bytes of the block */
    unsigned long long valid_fills;  /* the cache's fill count when all its granules were last seen present
                                      * (~0: never) */
    unsigned long long last_line;    /* first_line + n_lines - 1 */
    double last_cost[TIMING_SETS];   /* line_cost's last granule (what the fast path adds) */
    uint64_t use_seq;                /* cheaper path: when its granules were last used without a fill */
    unsigned n_lines;
    unsigned char in_log;            /* cheaper path: in the log of uses not yet applied */
    unsigned char logged;            /* cheaper path: a flash block with its slots, whose uses can be logged */
    unsigned char br_bits;           /* br_kind, + 4 when the branch loads the PC (the next block resolves it),
                                      * + the run at its end << 3 (run_bits: a conditional branch not taken
                                      * continues it into the next block) */
    unsigned char odd_wide;          /* its first instruction is 32-bit at a halfword (not word) address: a
                                      * taken branch to it pays branch_unaligned_extra */
    unsigned char head_run;          /* run_bits of the group of unaligned 32-bit instructions it starts with */
    unsigned long long br_pc;        /* address of the last instruction */
    int br_kind;                     /* 0 none, 1 always taken, 2 conditional */
    int br_load;                     /* the branch loads the PC (LDR PC, POP/LDM with PC, TBB/TBH) */
    int in_flash;                    /* fetched from flash (microcontrollers) */
    unsigned long long first_line;   /* first fetch granule (flash) or L1 line (A profile) */
    unsigned *slot;                  /* n_lines: where each granule sits in the instruction cache */
    double *line_cost;               /* n_lines * TIMING_SETS: the block's base cycles spent in each granule */
    uint64_t *execs;                 /* executions (an inline addition at the block's start; NULL: none) */
    size_t id;                       /* its index in the counter tables */
    double *miss_stall;              /* cheaper path, n_lines * TIMING_SETS: what granule k >= 1 stalls on a miss
                                      * when granule k - 1 was entered in this block (0: no stall) */
    unsigned slot_in[SLOTS_INLINE];  /* slot's storage for a block of up to SLOTS_INLINE granules */
    /* read when an event asks for the totals, or at translation */
    unsigned n_cls;                  /* (class, count) pairs */
    unsigned char cls[TC_N];
    unsigned short cnt[TC_N];
    double base[TIMING_SETS];        /* class costs of the whole block */
    double *prefix;                  /* (n_insns + 1) * TIMING_SETS: base cost before instruction i */
    unsigned *mem_hint;              /* n_insns: where each load or store last found its data cache line */
    uint64_t fixed[TIMING_SETS];     /* base cycles in 1/TIMING_FIX */
};

/* the executions of block t since the last sum, into the running totals */
static void block_flush(const struct tbinfo *t)
{
    uint64_t now = *t->execs, d = now - ctr_seen[t->id];
    if (d == 0)
        return;
    for (unsigned i = 0; i < t->n_cls; i++)
        timing_counts[t->cls[i]] += d * t->cnt[i];
    for (int s = 0; s < TIMING_SETS; s++)
        timing_fixed[s] += d * t->fixed[s];
    ctr_seen[t->id] = now;
}

static void block_sums(void)
{
    for (size_t c = 0; c * CTR_CHUNK < n_ids; c++) {
        const uint64_t *ctr = ctr_chunk[c];
        size_t lo = c * CTR_CHUNK, hi = n_ids < lo + CTR_CHUNK ? n_ids : lo + CTR_CHUNK;
        for (size_t id = lo; id < hi; id++)
            if (ctr[id - lo] != ctr_seen[id] && ctr_owner[id] != NULL)
                block_flush(ctr_owner[id]);
    }
}

/* a counter for block t (0), or -1 when the tables cannot grow (the caller then adds inline) */
static int block_counter(struct tbinfo *t)
{
    if (n_ids == cap_ids) {
        size_t cap = cap_ids ? cap_ids * 2 : CTR_CHUNK;
        uint64_t *seen = realloc(ctr_seen, cap * sizeof(uint64_t));
        if (seen == NULL)
            return -1;
        ctr_seen = seen;
        struct tbinfo **own = realloc(ctr_owner, cap * sizeof(struct tbinfo *));
        if (own == NULL)
            return -1;
        ctr_owner = own;
        cap_ids = cap;
    }
    size_t c = n_ids / CTR_CHUNK;
    if (c >= CTR_CHUNKS)
        return -1;
    if (ctr_chunk[c] == NULL && (ctr_chunk[c] = calloc(CTR_CHUNK, sizeof(uint64_t))) == NULL)
        return -1;
    t->id = n_ids++;
    t->execs = &ctr_chunk[c][t->id % CTR_CHUNK];
    ctr_seen[t->id] = *t->execs = 0;
    ctr_owner[t->id] = t;
    return 0;
}

static struct tbinfo *last_tb;
static const struct tbinfo *prev_tb;   /* the block executed before the current one */
/* its last branch, kept here so that resolving it reads no block: prev_bits is its br_bits (0: none, or no
 * previous block), prev_end its end, prev_br_pc the branch's address */
static unsigned prev_bits;
static unsigned long long prev_end, prev_br_pc;
static unsigned long long cur_fetch = ~0ull;   /* the flash granule the core is executing from */
static double line_elapsed[TIMING_SETS];      /* cycles spent in it so far */
static unsigned long long cur_l1i = ~0ull;
static FILE *trace;

void timing_reset(void)
{
    memset(timing_cycles, 0, sizeof timing_cycles);
    memset(timing_fixed, 0, sizeof timing_fixed);
    memset(timing_counts, 0, sizeof timing_counts);
    memset(line_elapsed, 0, sizeof line_elapsed);
    prev_tb = NULL;
    prev_bits = 0;
    cur_fetch = cur_l1i = ~0ull;
    for (size_t id = 0; id < n_ids; id++) {
        ctr_chunk[id / CTR_CHUNK][id % CTR_CHUNK] = 0;
        ctr_seen[id] = 0;
    }
}

void timing_set_trace(FILE *f)
{
    if (trace && trace != f)
        fclose(trace);
    trace = f;
}

const void *timing_last_tb(void)
{
    return last_tb;
}

static void apply_use_log(void);

void timing_release(void *tbinfo)
{
    struct tbinfo *t = tbinfo;
    if (t == NULL)
        return;
    if (t->in_log)
        apply_use_log();
    if (prev_tb == t) {
        prev_tb = NULL;
        prev_bits = 0;
    }
    if (t->execs != NULL && ctr_owner[t->id] == t) {   /* its executions stay in the totals */
        block_flush(t);
        ctr_owner[t->id] = NULL;
    }
    if (last_tb == t)
        last_tb = NULL;
    free(t->prefix);
    free(t->line_cost);
    free(t->miss_stall);
    if (t->slot != t->slot_in)
        free(t->slot);
    free(t->mem_hint);
    free(t);
}

void timing_remaining(const void *tbinfo, size_t insn_index, double out[TIMING_SETS])
{
    const struct tbinfo *t = tbinfo;
    for (int s = 0; s < TIMING_SETS; s++)
        out[s] = t->base[s] - t->prefix[insn_index * TIMING_SETS + s];
}

static void cost_of(int cls, int nregs, double out[TIMING_SETS])
{
    for (int s = 0; s < TIMING_SETS; s++) {
        double c;
        switch (cls) {
        case TC_LOAD: c = cost[C_LOAD][s]; break;
        case TC_LOAD_PIPELINED: c = cost[C_LOAD_PIPELINED][s]; break;
        case TC_STORE: c = cost[C_STORE][s]; break;
        case TC_LDRD: c = cost[C_LDRD][s]; break;
        case TC_STRD: c = cost[C_STRD][s]; break;
        case TC_LDM: c = cost[C_LDM_BASE][s] + nregs * cost[C_LDM_PER_REG][s]; break;
        case TC_STM: c = cost[C_STM_BASE][s] + nregs * cost[C_STM_PER_REG][s]; break;
        case TC_MUL: c = cost[C_MUL][s]; break;
        case TC_MLA: c = cost[C_MLA][s]; break;
        case TC_MULL: c = cost[C_MULL][s]; break;
        case TC_DIV: c = cost[C_DIV][s]; break;
        case TC_BRANCH: c = cost[C_BRANCH][s]; break;
        case TC_IT: c = cost[C_IT][s]; break;
        case TC_VFP: c = cost[C_VFP][s]; break;
        case TC_VFP_MEM: c = cost[C_VFP_MEM][s] * nregs; break;
        case TC_VDIV: c = cost[C_VDIV][s]; break;
        case TC_NEON: c = cost[C_NEON][s]; break;
        case TC_NEON_MEM: c = cost[C_NEON_MEM][s]; break;
        case TC_OTHER: c = cost[C_OTHER][s]; break;
        default: c = cost[C_ALU][s]; break; /* ALU, PC_WRITE (its refill is charged as a taken branch) */
        }
        out[s] = c;
    }
}

static void add_stall(int set_cost, double scale)
{
    for (int s = 0; s < TIMING_SETS; s++)
        timing_cycles[s] += cost[set_cost][s] * scale;
}

/* the previous block's last branch (prev_bits != 0), resolved by where execution went; a stall adds the
 * cost itself (cost x 1.0, as add_stall: the same sums) */
static inline void resolve_branch(unsigned long long start, unsigned odd_wide, unsigned head_run)
{
    unsigned kind = prev_bits & 3;
    int taken = kind == 1 || start != prev_end;
    /* not taken: the group of unaligned 32-bit instructions the previous block ended with goes on into
     * this block's first one; it pays unaligned_run_extra here when neither part paid and together they
     * make a group (the rule at translation, timing_translate) */
    unsigned tail = prev_bits >> 3;
    if (!taken && (tail & 3) && (head_run & 3) && !((tail | head_run) & 8)) {
        unsigned len = (tail & 3) + (head_run & 3);
        if (len >= 4 || (len == 3 && !(tail & head_run & 4))) {
            timing_counts[TC_UNALIGNED_RUN]++;
            const double *g = cost[C_UNALIGNED_RUN_EXTRA];
            timing_cycles[0] += g[0];
            timing_cycles[1] += g[1];
            timing_cycles[2] += g[2];
        }
    }
    timing_counts[taken ? TC_BRANCH_TAKEN : TC_BRANCH_NOT_TAKEN]++;
    if (bp) {
        unsigned char *c = &bp[(prev_br_pc >> 1) & (geom[G_BP_ENTRIES] - 1)];
        int predicted = kind == 1 || *c >= 2; /* unconditional: the target buffer knows it */
        if (predicted != taken) {
            timing_counts[TC_MISPREDICT]++;
            add_stall(C_MISPREDICT, 1.0);
        }
        if (kind == 2)
            *c = taken ? (*c < 3 ? *c + 1 : 3) : (*c > 0 ? *c - 1 : 0);
    } else if (taken) {
        int load = (prev_bits & 4) != 0;
        if (load)
            timing_counts[TC_BRANCH_LOAD_TAKEN]++;
        const double *c = cost[load ? C_BRANCH_LOAD_EXTRA : C_BRANCH_TAKEN_EXTRA];
        timing_cycles[0] += c[0];
        timing_cycles[1] += c[1];
        timing_cycles[2] += c[2];
        /* the refill fetches the target: a 32-bit instruction at a halfword address spans two words,
         * one fetch more before it can decode (Cortex-M4 TRM: P = 1-3 by the target's alignment and
         * width), whichever way the branch found its target */
        if (odd_wide) {
            timing_counts[TC_BRANCH_TAKEN_UNALIGNED]++;
            const double *u = cost[C_BRANCH_UNALIGNED_EXTRA];
            timing_cycles[0] += u[0];
            timing_cycles[1] += u[1];
            timing_cycles[2] += u[2];
        }
    }
}

static void fetch_flash_table(struct tbinfo *t);

/* Cheaper path: the uses of the instruction cache's ways by blocks whose granules were all present are
 * not applied one by one. Each such block is logged once with the sequence number of its latest use;
 * before anything reads the recency (a block that may miss: every fill goes through there) the log is
 * applied, block by block in the order of their latest uses, each block's granules in order. The
 * least recently used way of a set depends only on the order of each way's latest use, and that is the
 * order of this replay: a loop of blocks that all hit applies each block's uses once, not once per
 * iteration. Nothing fills meanwhile, so each logged block's granules are still where it found them. */
#define USE_LOG 4096
static struct tbinfo *use_log[USE_LOG];
static size_t n_use_log;
static uint64_t use_seq;

static int by_use_seq(const void *a, const void *b)
{
    uint64_t x = (*(struct tbinfo *const *)a)->use_seq, y = (*(struct tbinfo *const *)b)->use_seq;
    return x < y ? -1 : x > y;
}

static __attribute__((noinline)) void apply_use_log(void)
{
    if (n_use_log > 1)
        qsort(use_log, n_use_log, sizeof(struct tbinfo *), by_use_seq); /* an array of block pointers */
    for (size_t i = 0; i < n_use_log; i++) {
        struct tbinfo *b = use_log[i];
        for (unsigned k = 0; k < b->n_lines; k++)
            cache_touch(&icache, b->slot[k]);
        b->in_log = 0;
    }
    n_use_log = 0;
}

/* the cheaper path's record of a block whose granules were all present: its use, in order, applied to the
 * cache's recency (apply_use_log) before anything reads it */
static inline void log_use(struct tbinfo *t)
{
    t->use_seq = ++use_seq;
    if (!t->in_log) {
        if (n_use_log == USE_LOG)
            apply_use_log();
        use_log[n_use_log++] = t;
        t->in_log = 1;
    }
}

/* instruction fetch of the block's bytes: microcontroller flash behind prefetch and cache (on the cheaper
 * path, a block whose granules are all present takes on_tb_exec's copy of the first branch below) */
static __attribute__((noinline)) void fetch_flash(struct tbinfo *t)
{
    if (!t->in_flash)
        return;
    if (t->slot && t->valid_fills == icache.fills) {
        /* nothing was filled since the block's granules were all present: they still are; only
         * their use is recorded (LRU), and there is no fetch stall */
        if (icache.age) {   /* cheaper path: logged (see apply_use_log) */
            log_use(t);
        } else
            for (unsigned k = 0; k < t->n_lines; k++)
                cache_touch(&icache, t->slot[k]);
        const double *last = t->last_cost;
        unsigned long long g = t->first_line + t->n_lines - 1;
        for (int s = 0; s < TIMING_SETS; s++)
            line_elapsed[s] = (t->n_lines == 1 && g == cur_fetch ? line_elapsed[s] : 0.0) + last[s];
        cur_fetch = g;
        return;
    }
    if (n_use_log)
        apply_use_log();
    if (t->miss_stall) {
        fetch_flash_table(t);
        return;
    }
    for (unsigned k = 0; k < t->n_lines; k++) {
        unsigned long long g = t->first_line + k;
        const double *share = t->line_cost + (size_t)k * TIMING_SETS;
        if (g == cur_fetch) {   /* still executing from the granule last fetched: no new fetch */
            if (t->slot && !cache_access_at(&icache, g, &t->slot[k]))
                timing_counts[TC_IFETCH_MISS]++;   /* evicted meanwhile (refilled, its bytes already in) */
            for (int s = 0; s < TIMING_SETS; s++)
                line_elapsed[s] += share[s];
            continue;
        }
        int hit = t->slot ? cache_access_at(&icache, g, &t->slot[k]) : icache.sets ? cache_access(&icache, g) : 0;
        if (!hit) {
            timing_counts[TC_IFETCH_MISS]++;
            int sequential = g == cur_fetch + 1;
            for (int s = 0; s < TIMING_SETS; s++) {
                /* with the prefetch buffer on (no_prefetch 0), this read started when the core entered
                 * the previous granule; without it, a miss waits the whole read */
                double stall = sequential && cost[C_NO_PREFETCH][s] < 0.5
                                   ? cost[C_FLASH_WS][s] + 1.0 - line_elapsed[s] : cost[C_FLASH_WS][s];
                if (stall > 0)
                    timing_cycles[s] += stall;
                if (s == 1 && sequential && stall > 0)
                    timing_counts[TC_IFETCH_SEQ_STALL]++;
            }
        }
        cur_fetch = g;
        for (int s = 0; s < TIMING_SETS; s++)
            line_elapsed[s] = share[s];
    }
    /* remember that all the block's granules are present now, if they still are (the block's own
     * fills may have evicted one of its earlier granules) */
    if (t->slot) {
        int present = 1;
        for (unsigned k = 0; k < t->n_lines && present; k++)
            present = icache.tag[t->slot[k]] == t->first_line + k + 1;
        t->valid_fills = present ? icache.fills : ~0ull;
    }
}

/* the stall of a fetch miss on granule k >= 1 of block t, per set, when the core entered granule k - 1 in
 * this block (it spent share k - 1 there): what fetch_flash computes at the miss, made once */
static void miss_stalls(struct tbinfo *t)
{
    t->miss_stall = calloc((size_t)t->n_lines * TIMING_SETS, sizeof *t->miss_stall);
    for (unsigned k = 1; t->miss_stall && k < t->n_lines; k++)
        for (int s = 0; s < TIMING_SETS; s++) {
            double stall = cost[C_NO_PREFETCH][s] < 0.5
                               ? cost[C_FLASH_WS][s] + 1.0 - t->line_cost[(size_t)(k - 1) * TIMING_SETS + s]
                               : cost[C_FLASH_WS][s];
            t->miss_stall[(size_t)k * TIMING_SETS + s] = stall > 0 ? stall : 0.0;
        }
}

/* fetch_flash on the cheaper path (a block whose granules the line table covers, with its stalls made):
 * the same accesses in the same order, the same counts and the same additions to the cycles */
static void fetch_flash_table(struct tbinfo *t)
{
    struct cache *c = &icache;
    unsigned long long g0 = t->first_line;
    uint8_t *where = c->where + (g0 - c->where_lo);
    const unsigned long long *tag = c->tag;
    unsigned set_mask = c->sets - 1, wshift = c->wshift;
    unsigned n = t->n_lines, *slot = t->slot;
    const double *share = t->line_cost;
    unsigned long long misses = 0;
    if (slot == NULL || n == 0) /* made with the block's line table at translation: never, but not assumed */
        return;
    /* granule 0: the core may still be in it, or enter it right after the granule it was in */
    int entered = g0 == cur_fetch;   /* its time adds to what was spent there before this block */
    unsigned sl = ((unsigned)(g0 & set_mask) << wshift) + where[0] - 1;
    int hit = where[0] != 0 && tag[sl] == g0 + 1;
    if (hit) {
        cache_touch(c, sl);
        slot[0] = sl;
    } else {
        cache_access(c, g0);
        slot[0] = c->last_slot;
        misses++;
    }
    if (entered)
        for (int s = 0; s < TIMING_SETS; s++)
            line_elapsed[s] += share[s];
    else {
        if (!hit) {
            int sequential = g0 == cur_fetch + 1;
            for (int s = 0; s < TIMING_SETS; s++) {
                double stall = sequential && cost[C_NO_PREFETCH][s] < 0.5
                                   ? cost[C_FLASH_WS][s] + 1.0 - line_elapsed[s] : cost[C_FLASH_WS][s];
                if (stall > 0)
                    timing_cycles[s] += stall;
                if (s == 1 && sequential && stall > 0)
                    timing_counts[TC_IFETCH_SEQ_STALL]++;
            }
        }
        for (int s = 0; s < TIMING_SETS; s++)
            line_elapsed[s] = share[s];
    }
    /* granules 1..n-1: sequential, the stall of a miss made at translation (granule 1 after a granule 0
     * the core was already in: from the time spent). The cycles gather in locals, added in the same
     * order as at each miss: the same sums. */
    double c0 = timing_cycles[0], c1 = timing_cycles[1], c2 = timing_cycles[2];
    unsigned long long seq = 0;
    for (unsigned k = 1; k < n; k++) {
        unsigned long long g = g0 + k;
        unsigned set = (unsigned)(g & set_mask);
        sl = (set << wshift) + where[k] - 1;
        if (where[k] != 0 && tag[sl] == g + 1) {
            cache_touch(c, sl);
            slot[k] = sl;
            continue;
        }
        /* a miss: the set's least recently used way takes the line (cache_access's fill, inline) */
        unsigned v = cache_victim(c, set);
        sl = (set << wshift) | v;
        where[k] = (uint8_t)(v + 1);
        c->tag[sl] = g + 1;
        cache_touch(c, sl);
        c->fills++;
        slot[k] = sl;
        misses++;
        if (k == 1 && entered) {
            const double le[TIMING_SETS] = {line_elapsed[0], line_elapsed[1], line_elapsed[2]};
            double add[TIMING_SETS];
            for (int s = 0; s < TIMING_SETS; s++) {
                double stall = cost[C_NO_PREFETCH][s] < 0.5 ? cost[C_FLASH_WS][s] + 1.0 - le[s] : cost[C_FLASH_WS][s];
                add[s] = stall > 0 ? stall : 0.0;
            }
            c0 += add[0], c1 += add[1], c2 += add[2];
            seq += add[1] > 0;
        } else {
            const double *st = t->miss_stall + (size_t)k * TIMING_SETS;
            c0 += st[0], c1 += st[1], c2 += st[2];
            seq += st[1] > 0;
        }
    }
    timing_cycles[0] = c0, timing_cycles[1] = c1, timing_cycles[2] = c2;
    timing_counts[TC_IFETCH_MISS] += misses;
    timing_counts[TC_IFETCH_SEQ_STALL] += seq;
    c->last_slot = slot[n - 1];
    if (n > 1)
        for (int s = 0; s < TIMING_SETS; s++)
            line_elapsed[s] = t->last_cost[s];
    cur_fetch = g0 + n - 1;
    /* all the block's granules are present now unless its own fills evicted one of them, which needs two
     * of them in one set: more granules than sets */
    int present = 1;
    if (n > c->sets)
        for (unsigned k = 0; k < n && present; k++)
            present = tag[slot[k]] == g0 + k + 1;
    t->valid_fills = present ? c->fills : ~0ull;
}

/* A-profile: L1 instruction cache over the block's lines, L2 behind it */
static __attribute__((noinline)) void fetch_l1(const struct tbinfo *t)
{
    for (unsigned long long g = t->first_line; g < t->first_line + t->n_lines; g++) {
        if (g == cur_l1i)
            continue;
        cur_l1i = g;
        if (cache_access(&l1i, g))
            continue;
        timing_counts[TC_L1I_MISS]++;
        add_stall(C_L1_MISS, 1.0);
        if (l2.sets && !cache_access(&l2, (g << l1i.shift) >> l2.shift)) {
            timing_counts[TC_L2_MISS]++;
            add_stall(C_L2_MISS, 1.0);
        }
    }
}

static void on_tb_exec(unsigned int vcpu, void *udata)
{
    (void)vcpu;
    struct tbinfo *t = udata;
    if (prev_bits)
        resolve_branch(t->start, t->odd_wide, t->head_run);
    if (t->logged && t->valid_fills == icache.fills) {
        /* cheaper path, nothing filled since the block's granules were all present: fetch_flash's first
         * branch, with the use logged (apply_use_log) */
        log_use(t);
        const double *last = t->last_cost;
        if (t->n_lines == 1 && t->last_line == cur_fetch) {
            line_elapsed[0] += last[0];
            line_elapsed[1] += last[1];
            line_elapsed[2] += last[2];
        } else {   /* 0.0 + x is x: fetch_flash's sum */
            line_elapsed[0] = last[0];
            line_elapsed[1] = last[1];
            line_elapsed[2] = last[2];
        }
        cur_fetch = t->last_line;
    } else if (mcu_flash)
        fetch_flash(t);
    else if (l1i.sets)
        fetch_l1(t);
    prev_tb = t;
    prev_bits = t->br_bits;
    prev_end = t->end;
    prev_br_pc = t->br_pc;
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    (void)vcpu;
    unsigned *hint = udata;   /* the instruction's own cache hint (NULL when it could not be kept) */
    if (mcu_flash) {
        /* constants read from flash (literal pools, tables in .rodata) behind the data cache; the
         * address first: most loads read SRAM, and QEMU's direction test is a call */
        if (vaddr < geom[G_FLASH_LO] || vaddr >= geom[G_FLASH_HI])
            return;
        if (qemu_plugin_mem_is_store(info))   /* (the cheaper path with a line table: on_mem_flash) */
            return;
        if (dcache.sets && (hint ? cache_access_at(&dcache, vaddr >> dcache.shift, hint)
                                 : cache_access(&dcache, vaddr >> dcache.shift)))
            return;
        timing_counts[TC_DFLASH_MISS]++;
        add_stall(C_FLASH_WS, 1.0);
        return;
    }
    int store = qemu_plugin_mem_is_store(info);
    if (!l1d.sets || (hint ? cache_access_at(&l1d, vaddr >> l1d.shift, hint) : cache_access(&l1d, vaddr >> l1d.shift)))
        return;
    timing_counts[TC_L1D_MISS]++;
    if (store)  /* write-allocate behind a store buffer: the miss fills the line without a stall */
        return;
    add_stall(C_L1_MISS, 1.0);
    if (l2.sets && !cache_access(&l2, vaddr >> l2.shift)) {
        timing_counts[TC_L2_MISS]++;
        add_stall(C_L2_MISS, 1.0);
    }
}

/* on_mem on the cheaper path of a microcontroller with a flash data cache (its line table): the same
 * work, with the flash bounds as one subtraction and comparison and nothing else to ask first (the
 * instruction's hint is not needed: the table finds the line) */
static void on_mem_flash(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    (void)vcpu, (void)info, (void)udata;
    if (vaddr - dflash_lo >= dflash_span)   /* SRAM (most loads) */
        return;
    unsigned long long line = vaddr >> dcache.shift;
    unsigned w = dcache.where[line - dcache.where_lo];
    unsigned set = (unsigned)(line & (dcache.sets - 1));
    unsigned sl = (set << dcache.wshift) + w - 1;
    if (w != 0 && dcache.tag[sl] == line + 1) {
        cache_touch(&dcache, sl);
        dcache.last_slot = sl;
        return;
    }
    unsigned v = cache_victim(&dcache, set);   /* a miss: on_mem's fill */
    sl = (set << dcache.wshift) | v;
    dcache.where[line - dcache.where_lo] = (uint8_t)(v + 1);
    dcache.tag[sl] = line + 1;
    cache_touch(&dcache, sl);
    dcache.last_slot = sl;
    dcache.fills++;
    timing_counts[TC_DFLASH_MISS]++;
    timing_cycles[0] += cost[C_FLASH_WS][0];
    timing_cycles[1] += cost[C_FLASH_WS][1];
    timing_cycles[2] += cost[C_FLASH_WS][2];
}

void timing_translate(struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    struct tbinfo *t = NULL;
    if (posix_memalign((void **)&t, 64, sizeof *t) != 0)
        return;
    memset(t, 0, sizeof *t);
    t->valid_fills = ~0ull;
    t->prefix = calloc((n + 1) * TIMING_SETS, sizeof *t->prefix);
    if (mcu_flash ? dcache.sets != 0 : l1d.sets != 0)
        t->mem_hint = calloc(n ? n : 1, sizeof *t->mem_hint);
    unsigned counts[TC_N] = {0};
    int prev_mem = 0;
    char prev_dest[8] = "";
    unsigned prev_dp = 0;
    unsigned pair_role = 0;   /* the previous instruction's pairing facts (0: it cannot take the first slot) */
    uint32_t pair_writes = 0;
    /* the run of consecutive 32-bit instructions at halfword addresses so far (each keeps the next at a
     * halfword address; a 16-bit one ends the run), whether all of it were stores, and whether its
     * group has paid unaligned_run_extra */
    unsigned odd_run = 0;
    int odd_run_stores = 1, odd_run_paid = 0, in_head = 1;
    t->start = qemu_plugin_tb_vaddr(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        unsigned long long va = qemu_plugin_insn_vaddr(insn);
        size_t size = qemu_plugin_insn_size(insn);
        /* what the disassembly says: from the binary's decode cache, else from QEMU's disassembler
         * (kept for the next run). Every fact taken from the text goes through struct decoded. */
        const void *bytes = qemu_plugin_insn_data(insn);
        const struct decoded *known = trace ? NULL : decode_cache_find(va, bytes, size);
        struct decoded dc;
        char *d = NULL;
        if (known != NULL)
            dc = *known;
        else {
            d = qemu_plugin_insn_disas(insn);
            decode_facts(d, &dc);
            decode_cache_add(va, bytes, size, &dc);
        }
        int nregs = dc.nregs, branch = dc.branch, mem = dc.mem;
        int cls = dc.cls;
        /* a single load right after another single load pipelines its address phase (Cortex-M TRM),
         * unless its address register is the one the previous load writes; after a store it does not:
         * the store's data phase, which its one cycle hides, takes the bus */
        const char *dest = dc.dest, *base = dc.base;
        if (cls == TC_LOAD && prev_mem == 1 && strcmp(base, prev_dest) != 0 && !branch)
            cls = TC_LOAD_PIPELINED;
        prev_mem = (cls == TC_LOAD || cls == TC_LOAD_PIPELINED) ? 1 : 0;
        memcpy(prev_dest, dest, sizeof prev_dest);
        double c[TIMING_SETS];
        cost_of(cls, nregs, c);
        if (cls == TC_BRANCH && mem == 1)   /* TBB/TBH: a table load before the branch (TRM: 2 + 1 + refill) */
            for (int s = 0; s < TIMING_SETS; s++)
                c[s] += cost[C_LOAD][s];
        /* a store with a register offset: nothing pipelines behind it, its data phase is not hidden
         * (TRM load/store timings) */
        if (cls == TC_STORE && dc.has_index) {
            counts[TC_STORE_REGOFF]++;
            for (int s = 0; s < TIMING_SETS; s++)
                c[s] += cost[C_STORE_REGOFF_EXTRA][s];
        }
        /* a load or store whose address register the instruction just before wrote as data processing:
         * no forwarding path to the address generation, one stall cycle (Cortex-M3/M4 TRM, load/store
         * timings) */
        unsigned addr = dc.addr_regs;
        if (addr & prev_dp) {
            counts[TC_AGU_STALL]++;
            for (int s = 0; s < TIMING_SETS; s++)
                c[s] += cost[C_AGU_STALL][s];
        }
        prev_dp = dc.dp_dest;
        /* dual issue: the younger of a pair issues in the older's cycle, at the dual_issue cost, counted
         * apart; it cannot take the first slot of another pair */
        int counted = cls;
        if (pairing && dual_issue_pairs(pair_role, pair_writes, dc.pair_role, dc.pair_reads, dc.pair_writes)) {
            counted = TC_DUAL_ISSUE;
            for (int s = 0; s < TIMING_SETS; s++)
                c[s] = cost[C_DUAL_ISSUE][s];
            pair_role = 0;
        } else {
            pair_role = dc.pair_role;
            pair_writes = dc.pair_writes;
        }
        /* a group of three or more 32-bit instructions at halfword addresses: the 32-bit fetches cannot
         * keep ahead of decode when every instruction spans two words, one cycle once per group; a group
         * of stores only from its fourth (measured with the DWT counters on an STM32 running from flash,
         * compendium.i-0.nl "Alignment rules"). Counted inside the block; a group that goes on past a
         * conditional branch not taken into the next block is completed there (resolve_branch) */
        if (size == 4 && (va & 3) == 2) {
            odd_run++;
            odd_run_stores = odd_run_stores && cls == TC_STORE;
            if (!odd_run_paid && (odd_run >= 4 || (odd_run == 3 && !odd_run_stores))) {
                odd_run_paid = 1;
                counts[TC_UNALIGNED_RUN]++;
                for (int s = 0; s < TIMING_SETS; s++)
                    c[s] += cost[C_UNALIGNED_RUN_EXTRA][s];
            }
        } else {
            odd_run = 0;
            odd_run_stores = 1;
            odd_run_paid = 0;
            in_head = 0;
        }
        /* the group's state, for one that goes on past the block's edge: its length (up to 3), all stores
         * (4), paid (8) */
        unsigned run_bits = odd_run ? (odd_run < 3 ? odd_run : 3) | (odd_run_stores ? 4u : 0u) | (odd_run_paid ? 8u : 0u)
                                    : 0u;
        if (in_head)
            t->head_run = (unsigned char)run_bits;
        if (t->prefix)
            for (int s = 0; s < TIMING_SETS; s++)
                t->prefix[(i + 1) * TIMING_SETS + s] = t->prefix[i * TIMING_SETS + s] + c[s];
        for (int s = 0; s < TIMING_SETS; s++)
            t->base[s] += c[s];
        counts[counted]++;
        if (cls == TC_LDM || cls == TC_STM)
            counts[TC_LDSTM_REGS] += (unsigned)nregs;
        if (branch && cls != TC_BRANCH)
            counts[TC_PC_WRITE] += cls != TC_PC_WRITE;
        if (trace)
            fprintf(trace, "%llx %s %d %s\n", va, timing_class_names[counted], nregs, d ? d : "?");
        /* memory callbacks: microcontrollers only need loads that may read flash (not stack-relative);
         * A-profile caches see every load and store */
        /* always QEMU_PLUGIN_MEM_RW: QEMU 7.2's code generator tests a read-only registration against
         * the access direction off by one and attaches it to stores only; on_mem tells them apart */
        int stack_only = dc.sp_based || (!full_path && dc.addr_regs == 1u << 13);   /* see full_path */
        if (mem && (mcu_flash ? (mem == 1 && !stack_only) : l1d.sets != 0)) {
            if (mcu_flash && dcache.where != NULL)
                qemu_plugin_register_vcpu_mem_cb(insn, on_mem_flash, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
            else
                qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                                 t->mem_hint ? &t->mem_hint[i] : NULL);
        }
        free(d);
        if (i == 0)
            t->odd_wide = (va & 3) == 2 && size == 4;
        if (i == n - 1) {
            t->end = va + size;
            t->br_pc = va;
            t->br_kind = branch;
            t->br_load = branch && (mem == 1);
            t->br_bits = (unsigned char)(branch | (t->br_load ? 4 : 0) | (branch == 2 ? run_bits << 3 : 0));
        }
    }
    if (n == 0)
        t->end = t->start + 1;
    /* the granules the block is fetched in, and its base cycles spent in each (by bytes) */
    if (mcu_flash) {
        unsigned long long fb = geom[G_FETCH_BYTES];
        t->in_flash = t->start >= geom[G_FLASH_LO] && t->start < geom[G_FLASH_HI];
        t->first_line = t->start / fb;
        t->n_lines = (unsigned)((t->end - 1) / fb - t->first_line + 1);
        t->line_cost = calloc((size_t)t->n_lines * TIMING_SETS, sizeof *t->line_cost);
        double bytes = (double)(t->end - t->start);
        for (unsigned k = 0; t->line_cost && k < t->n_lines; k++) {
            unsigned long long g = t->first_line + k;
            unsigned long long lo = g * fb > t->start ? g * fb : t->start;
            unsigned long long hi = (g + 1) * fb < t->end ? (g + 1) * fb : t->end;
            for (int s = 0; s < TIMING_SETS; s++)
                t->line_cost[k * TIMING_SETS + s] = t->base[s] * (double)(hi - lo) / bytes;
        }
        if (t->line_cost == NULL)
            t->in_flash = 0;
        else
            memcpy(t->last_cost, t->line_cost + (size_t)(t->n_lines - 1) * TIMING_SETS, sizeof t->last_cost);
    } else if (l1i.sets) {
        t->first_line = t->start >> l1i.shift;
        t->n_lines = (unsigned)(((t->end - 1) >> l1i.shift) - t->first_line + 1);
    }
    for (int c = 0; c < TC_N; c++)
        if (counts[c]) {
            t->cls[t->n_cls] = (unsigned char)c;
            t->cnt[t->n_cls++] = (unsigned short)counts[c];
        }
    if (mcu_flash && icache.sets && t->in_flash) {
        t->slot = t->n_lines <= SLOTS_INLINE ? t->slot_in : calloc(t->n_lines, sizeof *t->slot);
        t->valid_fills = ~0ull;
        /* the cheaper path: the line table covers the block's granules */
        if (t->slot && icache.where && t->first_line - icache.where_lo < icache.where_n &&
            t->first_line + t->n_lines - icache.where_lo <= icache.where_n)
            miss_stalls(t);
        t->logged = t->slot != NULL && icache.age != NULL;
    }
    t->last_line = t->first_line + t->n_lines - 1;
    last_tb = t;
    for (int s = 0; s < TIMING_SETS; s++)
        t->fixed[s] = (uint64_t)(t->base[s] * TIMING_FIX + 0.5);
    /* the static part (class counters, class costs) as inline additions; the callback does the rest */
    if (sum_inline) {
        for (unsigned i = 0; i < t->n_cls; i++)
            qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &timing_counts[t->cls[i]],
                                                     t->cnt[i]);
        for (int s = 0; s < TIMING_SETS; s++)
            if (t->fixed[s])
                qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &timing_fixed[s], t->fixed[s]);
    } else {
        {
            if (block_counter(t) != 0) {   /* cannot keep the block: its static part as inline additions */
                for (unsigned i = 0; i < t->n_cls; i++)
                    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
                                                             &timing_counts[t->cls[i]], t->cnt[i]);
                for (int s = 0; s < TIMING_SETS; s++)
                    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &timing_fixed[s],
                                                             t->fixed[s]);
                goto callback;
            }
        }
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, t->execs, 1);
    }
callback:
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, QEMU_PLUGIN_CB_NO_REGS, t);
}
