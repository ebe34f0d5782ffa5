/* The device timing model (native/device/plugin/timing.c) on hand-made blocks: the classifier
 * against capstone's ARM/Thumb text, and the cycles a block costs with flash wait states, the
 * prefetch buffer, the instruction cache and taken or not-taken branches. QEMU's plugin API is
 * replaced by the stubs below, which keep the registered callback so a test can "execute" a block. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "qemu_plugin_api.h"
#include "timing.h"

struct qemu_plugin_insn {
    unsigned long long va;
    size_t size;
    const char *dis;
};
struct qemu_plugin_tb {
    unsigned long long va;
    size_t n;
    struct qemu_plugin_insn insn[16];
    qemu_plugin_vcpu_udata_cb_t cb;
    void *udata;
    uint64_t *inline_ptr[40];
    uint64_t inline_imm[40];
    int n_inline;
};

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb) { return tb->n; }
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t i)
{
    return (struct qemu_plugin_insn *)&tb->insn[i];
}
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn) { return insn->va; }
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn) { return insn->size; }
char *qemu_plugin_insn_disas(const struct qemu_plugin_insn *insn) { return strdup(insn->dis); }
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn) { return &insn->va; }
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb) { return tb->va; }
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *udata)
{
    (void)flags;
    tb->cb = cb;
    tb->udata = udata;
}
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm)
{
    (void)op;
    tb->inline_ptr[tb->n_inline] = ptr;
    tb->inline_imm[tb->n_inline++] = imm;
}
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw, void *udata)
{
    (void)insn, (void)cb, (void)flags, (void)rw, (void)udata;
}
int qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info) { return (int)info; }

/* a Cortex-M4 at 4 wait states, 64-bit flash reads, prefetch on; icache entries given */
static int load_m4(int ws, int icache_entries)
{
    char path[] = "/tmp/secperf-timing-test-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    fprintf(f, "alu 1 1 1\nload 2 2 2\nload_pipelined 1 1 1\nstore 1 1 1\nldrd 3 3 3\nstrd 3 3 3\n"
               "ldm_base 1 1 1\nldm_per_reg 1 1 1\nstm_base 1 1 1\nstm_per_reg 1 1 1\nmul 1 1 1\nmla 2 2 2\n"
               "mull 1 1 1\ndiv 2 7 12\nbranch 1 1 1\nbranch_taken_extra 1 2 3\nmispredict 0 0 0\nit 0 0 1\n"
               "vfp 1 1 1\nvfp_mem 2 2 2\nvdiv 14 14 14\nneon 1 1 1\nneon_mem 2 2 2\nother 1 1 1\n"
               "flash_ws %d %d %d\nl1_miss 0 0 0\nl2_miss 0 0 0\nno_prefetch 0 0 0\nflash_lo 0x10000\nflash_hi 0x20000\n"
               "fetch_bytes 8\nicache_entries %d\nicache_ways %d\ndcache_entries 0\ndcache_ways 0\n"
               "dfetch_bytes 8\nl1i_bytes 0\nl1i_line 0\nl1i_ways 0\nl1d_bytes 0\nl1d_line 0\nl1d_ways 0\n"
               "l2_bytes 0\nl2_line 0\nl2_ways 0\nbp_entries 0\n"
               "agu_stall 0 0 0\nbranch_load_extra 0 0 0\nstore_regoff_extra 0 0 0\nbranch_unaligned_extra 0 0 0\n"
               "unaligned_run_extra 0 0 0\n",
            ws, ws, ws, icache_entries, icache_entries ? 8 : 0);
    fclose(f);
    int rc = timing_load(path);
    unlink(path);
    timing_reset();
    return rc;
}

/* a class's executions so far: the per-block counters summed as the plugin reports them (timing_state) */
static uint64_t count_of(int cls)
{
    double cyc[TIMING_SETS];
    uint64_t counts[TC_N];
    timing_state(cyc, counts);
    return counts[cls];
}

/* a block of n 32-bit instructions at va, all `dis`, the last one `last` (NULL: also `dis`) */
static void block(struct qemu_plugin_tb *tb, unsigned long long va, size_t n, const char *dis, const char *last)
{
    memset(tb, 0, sizeof *tb);
    tb->va = va;
    tb->n = n;
    for (size_t i = 0; i < n; i++)
        tb->insn[i] = (struct qemu_plugin_insn){va + 4 * i, 4, i == n - 1 && last ? last : dis};
    timing_translate(tb);
}

/* "execute" a block: its inline additions, then its callback, as QEMU does at the block's start */
/* free what the blocks and the parameter file made (LeakSanitizer runs over these tests) */
static void release(struct qemu_plugin_tb *tbs, int n)
{
    for (int i = 0; i < n; i++) {
        timing_release(tbs[i].udata);
        tbs[i].udata = NULL;
    }
    timing_unload();
}

static void run(struct qemu_plugin_tb *tb)
{
    for (int i = 0; i < tb->n_inline; i++)
        *tb->inline_ptr[i] += tb->inline_imm[i];
    tb->cb(0, tb->udata);
}

static void classifier_names_thumb2_classes(void)
{
    int nregs, branch, mem;
    CHECK(timing_classify("umull r0, r1, r2, r3", &nregs, &branch, &mem) == TC_MULL);
    CHECK(timing_classify("umlal r4, r5, r6, r7", &nregs, &branch, &mem) == TC_MULL);
    CHECK(timing_classify("mla r0, r1, r2, r3", &nregs, &branch, &mem) == TC_MLA);
    CHECK(timing_classify("muls r0, r1, r0", &nregs, &branch, &mem) == TC_MUL);
    CHECK(timing_classify("udiv r0, r0, r1", &nregs, &branch, &mem) == TC_DIV);
    CHECK(timing_classify("adds.w r0, r0, #1", &nregs, &branch, &mem) == TC_ALU && branch == 0);
    CHECK(timing_classify("ldr.w r3, [r2, #4]", &nregs, &branch, &mem) == TC_LOAD && mem == 1);
    CHECK(timing_classify("strb r3, [r2]", &nregs, &branch, &mem) == TC_STORE && mem == 2);
    CHECK(timing_classify("ldrd r2, r3, [r0]", &nregs, &branch, &mem) == TC_LDRD);
    CHECK(timing_classify("ittee ne", &nregs, &branch, &mem) == TC_IT);
    CHECK(timing_classify("vldr s0, [r0]", &nregs, &branch, &mem) == TC_VFP_MEM);
    CHECK(timing_classify("vadd.f32 s0, s1, s2", &nregs, &branch, &mem) == TC_VFP);
    CHECK(timing_classify("vdiv.f32 s0, s1, s2", &nregs, &branch, &mem) == TC_VDIV);
}

static void classifier_counts_registers_and_finds_branches(void)
{
    int nregs, branch, mem;
    CHECK(timing_classify("push {r4, r5, r6, r7, lr}", &nregs, &branch, &mem) == TC_STM && nregs == 5);
    CHECK(timing_classify("pop {r4, r5, r6, pc}", &nregs, &branch, &mem) == TC_LDM && nregs == 4 && branch == 1);
    CHECK(timing_classify("ldm.w r0, {r1-r4}", &nregs, &branch, &mem) == TC_LDM && nregs == 4 && branch == 0);
    CHECK(timing_classify("bne #0x10444", &nregs, &branch, &mem) == TC_BRANCH && branch == 2);
    CHECK(timing_classify("beq.w #0x10444", &nregs, &branch, &mem) == TC_BRANCH && branch == 2);
    CHECK(timing_classify("b.w #0x10444", &nregs, &branch, &mem) == TC_BRANCH && branch == 1);
    CHECK(timing_classify("bl #0x10444", &nregs, &branch, &mem) == TC_BRANCH && branch == 1);
    CHECK(timing_classify("bx lr", &nregs, &branch, &mem) == TC_BRANCH && branch == 1);
    CHECK(timing_classify("cbz r0, #0x10444", &nregs, &branch, &mem) == TC_BRANCH && branch == 2);
    CHECK(timing_classify("bic r0, r0, #3", &nregs, &branch, &mem) == TC_ALU && branch == 0);
    CHECK(timing_classify("ldr pc, [sp], #4", &nregs, &branch, &mem) == TC_LOAD && branch == 1);
    CHECK(timing_classify("mov pc, lr", &nregs, &branch, &mem) == TC_PC_WRITE && branch == 1);
}

static void straight_line_code_from_flash_stalls_on_every_fetch_the_prefetch_cannot_hide(void)
{
    /* 64-bit reads at 4 wait states take 5 cycles; two 1-cycle instructions use 2 of them: 3 stall
     * cycles per line once the prefetch runs sequentially (the first line is a full miss: 4) */
    CHECK(load_m4(4, 0) == 0);
    struct qemu_plugin_tb tb;
    block(&tb, 0x10000, 16, "add r0, r0, r1", NULL);
    run(&tb);
    double slow = timing_now(1);
    uint64_t alu = count_of(TC_ALU), miss = count_of(TC_IFETCH_MISS);
    release(&tb, 1);
    CHECK(slow == 16 + 4 + 7 * 3);
    CHECK(alu == 16 && miss == 8);
    /* at zero wait states the same block costs its instructions only */
    CHECK(load_m4(0, 0) == 0);
    block(&tb, 0x10000, 16, "add r0, r0, r1", NULL);
    run(&tb);
    double fast = timing_now(1);
    release(&tb, 1);
    CHECK(fast == 16);
}

static void a_loop_that_fits_the_instruction_cache_stops_stalling_after_its_first_pass(void)
{
    CHECK(load_m4(4, 128) == 0);
    struct qemu_plugin_tb tb;
    block(&tb, 0x10000, 8, "add r0, r0, r1", "bne #0x10000");
    run(&tb);
    double first = timing_now(1);
    run(&tb); /* taken back edge: 1 + 2 refill, then all lines hit */
    double second = timing_now(1) - first;
    uint64_t taken = count_of(TC_BRANCH_TAKEN), miss = count_of(TC_IFETCH_MISS);
    release(&tb, 1);
    CHECK(first == 8 + 4 + 3 * 3);
    CHECK(second == 8 + 2);
    CHECK(taken == 1 && miss == 4);
}

static void a_loop_bigger_than_the_instruction_cache_keeps_missing(void)
{
    /* 8 blocks of 64 bytes (512 bytes) over a cache of 32 granules (256 bytes): LRU evicts every
     * granule before it is used again, so every pass misses on every granule */
    CHECK(load_m4(4, 32) == 0);
    static struct qemu_plugin_tb tb[8];
    for (int b = 0; b < 8; b++)
        block(&tb[b], 0x10000 + 64ull * b, 16, "add r0, r0, r1", NULL);
    for (int pass = 0; pass < 3; pass++)
        for (int b = 0; b < 8; b++)
            run(&tb[b]);
    uint64_t miss = count_of(TC_IFETCH_MISS);
    release(tb, 8);
    CHECK(miss == (uint64_t)3 * 64);
}

static void a_load_pipelines_behind_a_load_unless_it_needs_that_loads_result(void)
{
    CHECK(load_m4(0, 0) == 0);
    struct qemu_plugin_tb tb[2];
    block(&tb[0], 0x10000, 2, "ldr r3, [r2, #4]", "ldr r4, [r2, #8]");   /* independent: 2 + 1 */
    block(&tb[1], 0x10100, 2, "ldr r3, [r2, #4]", "ldr r4, [r3]");       /* needs r3: 2 + 2 */
    run(&tb[0]);
    double independent = timing_now(1);
    uint64_t piped = count_of(TC_LOAD_PIPELINED);
    timing_reset();
    run(&tb[1]);
    double dependent = timing_now(1);
    uint64_t piped2 = count_of(TC_LOAD_PIPELINED);
    release(tb, 2);
    CHECK(independent == 3 && piped == 1);
    CHECK(dependent == 4 && piped2 == 0);
}

static void a_conditional_branch_costs_its_refill_only_when_taken(void)
{
    CHECK(load_m4(0, 0) == 0);
    struct qemu_plugin_tb tb[3];
    block(&tb[0], 0x10000, 2, "add r0, r0, r1", "bne #0x10100");
    block(&tb[1], 0x10008, 2, "add r0, r0, r1", NULL); /* the fall-through */
    block(&tb[2], 0x10100, 2, "add r0, r0, r1", NULL); /* the target */
    run(&tb[0]);
    run(&tb[1]);
    uint64_t not_taken = count_of(TC_BRANCH_NOT_TAKEN);
    double after_fall_through = timing_now(1);
    run(&tb[0]);
    run(&tb[2]);
    uint64_t taken = count_of(TC_BRANCH_TAKEN);
    double lo = timing_now(0), mid = timing_now(1), hi = timing_now(2);
    release(tb, 3);
    CHECK(not_taken == 1 && after_fall_through == 4);
    CHECK(taken == 1);
    /* low/point/high refill 1/2/3 */
    CHECK(lo == 9 && mid == 10 && hi == 11);
}

static void a_parameter_file_missing_a_value_is_refused_naming_it(void)
{
    char path[] = "/tmp/secperf-timing-test-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "alu 1 1 1\n");
    fclose(f);
    CHECK(timing_load(path) == -1);
    unlink(path);
}

const test_case timing_tests[] = {
    {"timing classifier names Thumb-2 instruction classes", classifier_names_thumb2_classes},
    {"timing classifier counts registers and finds branches", classifier_counts_registers_and_finds_branches},
    {"timing straight-line code from flash stalls on every fetch the prefetch cannot hide",
     straight_line_code_from_flash_stalls_on_every_fetch_the_prefetch_cannot_hide},
    {"timing a loop that fits the instruction cache stops stalling after its first pass",
     a_loop_that_fits_the_instruction_cache_stops_stalling_after_its_first_pass},
    {"timing a loop bigger than the instruction cache keeps missing",
     a_loop_bigger_than_the_instruction_cache_keeps_missing},
    {"timing a load pipelines behind a load unless it needs that load's result",
     a_load_pipelines_behind_a_load_unless_it_needs_that_loads_result},
    {"timing a conditional branch costs its refill only when taken",
     a_conditional_branch_costs_its_refill_only_when_taken},
    {"timing a parameter file missing a value is refused", a_parameter_file_missing_a_value_is_refused_naming_it},
    {NULL, NULL},
};
