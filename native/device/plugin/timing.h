/* timing: a per-instruction-class cycle model for the counting plugin (insn_events.c).
 *
 * Every translated instruction is classified once from QEMU's disassembly (capstone's text:
 * "mnemonic operands") into a class (data processing, load, store, load/store multiple by register
 * count, multiply, long multiply, divide, branch, IT, VFP, NEON, ...). Each class is charged cycles
 * from the core's Technical Reference Manual; the parameters come from a file written by
 * secperf.model.device_timing from data/devices.toml, in three sets (low, point, high) that run
 * side by side, so one emulation gives a point and a band.
 *
 * What moves time beyond the class costs, simulated on the guest's addresses:
 *   - taken vs not-taken branches (the next block's address tells), with the pipeline refill, or
 *     a 2-bit branch predictor with a misprediction penalty (A-profile cores);
 *   - instruction fetch from flash with wait states behind a prefetch buffer and an instruction
 *     cache (ST's ART accelerator and the like) over the fetched addresses, and loads of constants
 *     from flash behind a small data cache (microcontrollers: code and read-only data in flash,
 *     everything else in zero-wait-state SRAM);
 *   - L1 instruction and data caches and a unified L2 over fetch and load/store addresses, with
 *     the next level's latency (A-profile cores).
 * Dual issue, where the core's model gives a dual_issue cost (the Cortex-A7): neighbouring instructions
 * of a block that the core pairs (dual_issue.h) issue in one cycle.
 * Not modelled: operand-dependent timings (divide and early-terminating multiplies take the
 * parameter's value), register dependencies beyond the pairing rule (folded into the class costs), bus
 * contention, DMA, interrupts. */
#ifndef SECPERF_DEVICE_TIMING_H
#define SECPERF_DEVICE_TIMING_H

#include <stdint.h>
#include <stdio.h>

#define TIMING_SETS 3

/* counted classes (the order of the "classes=" list in the event file) */
enum tclass {
    TC_ALU, TC_LOAD, TC_LOAD_PIPELINED, TC_STORE, TC_LDRD, TC_STRD, TC_LDM, TC_STM, TC_LDSTM_REGS,
    TC_MUL, TC_MLA, TC_MULL, TC_DIV, TC_BRANCH, TC_BRANCH_TAKEN, TC_BRANCH_NOT_TAKEN, TC_PC_WRITE,
    TC_IT, TC_VFP, TC_VFP_MEM, TC_VDIV, TC_NEON, TC_NEON_MEM, TC_OTHER,
    /* memory and predictor events (counts, not instructions) */
    TC_IFETCH_MISS, TC_IFETCH_SEQ_STALL, TC_DFLASH_MISS, TC_L1I_MISS, TC_L1D_MISS, TC_L2_MISS,
    TC_MISPREDICT,
    /* static pipeline events (counted per instruction at translation, charged with the block) */
    TC_AGU_STALL, TC_STORE_REGOFF,
    /* taken branches that load the PC, resolved at run time: they pay branch_load_extra instead of
     * branch_taken_extra (device calibrate counts each taken branch under one of the two) */
    TC_BRANCH_LOAD_TAKEN,
    /* taken branches whose target is a 32-bit instruction at a halfword (not word) address: the refill
     * needs one more fetch (Cortex-M4 TRM: P by the target's alignment and width), branch_unaligned_extra */
    TC_BRANCH_TAKEN_UNALIGNED,
    /* instructions issued in the second slot of a pair (dual_issue.h), counted here instead of their class
     * and charged dual_issue */
    TC_DUAL_ISSUE,
    /* groups of three or more consecutive 32-bit instructions at halfword (not word) addresses (four when
     * all are stores): the fetch falls one cycle behind (Cortex-M4, measured), unaligned_run_extra once
     * per group; counted per translated block at translation */
    TC_UNALIGNED_RUN,
    TC_N
};

extern const char *const timing_class_names[TC_N];

/* the running state the event records snapshot: cycles so far of set s (low, point, high) and the
 * counters (timing_cycles holds the dynamic part only: stalls and branch penalties) */
double timing_now(int set);
/* cycles so far of the three sets and every counter, at once (one pass over the blocks) */
void timing_state(double cycles[TIMING_SETS], uint64_t counts[TC_N]);
/* 1: sum the static part with an inline addition per class at each block's start (the older, slower
 * way; the same figures), 0 (default): per block execution counters */
void timing_set_inline(int on);
/* 1: the full path (stamped recency, searched tags, a memory callback for every load not "[sp"-relative,
 * fetch stalls computed at each miss), kept to check the cheaper default against (the same figures);
 * call before timing_load */
void timing_set_full(int on);
extern double timing_cycles[TIMING_SETS];
extern uint64_t timing_counts[TC_N];

struct qemu_plugin_tb;

/* parse the parameter file; 0 on success, -1 with a message on stderr */
int timing_load(const char *path);
/* free the caches and predictor timing_load made (a plugin keeps them until the process ends) */
void timing_unload(void);
/* free one block's information (a plugin keeps it: QEMU may run the block until the process ends) */
void timing_release(void *tbinfo);
/* forget the running state (cycles, counters, the previous block, the fetch position); caches stay */
void timing_reset(void);
/* instrument one translated block (after the instruction counter's own registration) */
void timing_translate(struct qemu_plugin_tb *tb);
/* base cycles of the instructions from `insn_index` to the block's end, per set (for events at a
 * watched instruction in the middle of a block, whose whole base was added at the block's start) */
void timing_remaining(const void *tbinfo, size_t insn_index, double out[TIMING_SETS]);
/* the block info of the last translated block (valid inside timing_translate's caller) */
const void *timing_last_tb(void);
/* one line per translated instruction, "vaddr class nregs disassembly" (debugging); NULL closes the file */
void timing_set_trace(FILE *f);
/* classify one disassembly line (exposed for the unit test): returns the class, *nregs the register
 * count of a load/store multiple, *branch 0 none, 1 unconditional, 2 conditional */
int timing_classify(const char *disas, int *nregs, int *branch, int *mem);
/* registers (bit n = rn; sp 13, lr 14, pc 15) a data-processing instruction of class cls writes, and
 * those a load or store uses to form its address (exposed for the unit test) */
unsigned timing_dp_dest(const char *disas, int cls);
unsigned timing_addr_regs(const char *disas, int cls);

#endif
