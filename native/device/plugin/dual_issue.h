/* dual_issue: which neighbouring instructions an in-order core with partial dual issue (the Cortex-A7)
 * issues in the same cycle, decided from the disassembly.
 *
 * The rule (sources: GCC's Cortex-A7 pipeline description, gcc/config/arm/cortex-a7.md, contributed
 * by ARM: two issue slots, the second usable only together with the first; measured issue rates in
 * M. Rullgard, "Cortex-A7 instruction cycle timings", hardwarebug.org, 2014):
 *   - the older instruction of a pair takes the first slot: a data-processing instruction (immediate,
 *     register or shifted operand), a single load or store, or a direct branch;
 *   - the younger takes the second slot, which only data processing with an immediate operand or a
 *     plain register move (MOV, the extends), and direct branches, can use (both measured at
 *     half an issue cycle, ADD with a register operand at a whole one);
 *   - multiplies, divides, load/store double and multiple, VFP/NEON and everything else issue alone;
 *   - two branches never pair, and the younger must not read (or write) what the older writes:
 *     a register, or the flags (a conditional instruction after a flag-setting one).
 * The younger of a pair cannot be the older of the next pair. */
#ifndef SECPERF_DEVICE_DUAL_ISSUE_H
#define SECPERF_DEVICE_DUAL_ISSUE_H

#include <stddef.h>
#include <stdint.h>

#define DI_OLDER 1u    /* may take the first issue slot */
#define DI_YOUNGER 2u  /* may take the second issue slot */
#define DI_BRANCH 4u   /* a branch (two never pair) */
#define DI_FLAGS (1u << 16)   /* the flags, as a register bit beside r0..r15 */

/* an instruction's mnemonic from its disassembly, lower case, in mn (cap bytes, at least 1), leading
 * blanks skipped; returns where its operands begin (shared by the timing classes and the pairing) */
const char *disas_mnemonic(const char *disas, char *mn, size_t cap);

/* the pairing facts of one instruction (cls: its timing class, timing.h): its role bits (0: issues
 * alone), the registers it reads and writes as bits (r0 = bit 0, pc = bit 15, DI_FLAGS) */
unsigned dual_issue_facts(const char *disas, int cls, int branch, uint32_t *reads, uint32_t *writes);

/* 1 when the younger instruction issues with the older one */
int dual_issue_pairs(unsigned older_role, uint32_t older_writes, unsigned younger_role, uint32_t younger_reads,
                     uint32_t younger_writes);

#endif
