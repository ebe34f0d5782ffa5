/* decode_cache: what the timing model reads from an instruction's disassembly, kept per guest binary
 * across runs.
 *
 * Disassembling an instruction (QEMU asks capstone, one call and one string per instruction) and
 * classifying the text costs as much as running a short guest. The facts taken from the text depend
 * on nothing but the instruction, so they are kept in a file beside the guest binary: a later run of
 * the same binary finds them by address, checks the instruction's bytes, and disassembles only what
 * it has not seen. Costs are not kept: they come from the parameter file of each run.
 *
 * The file is a cache: a missing, unreadable, foreign or stale file (another plugin build, another
 * record layout) is ignored and rewritten; a record whose bytes differ from the instruction's is not
 * used. Written when the plugin exits, through a temporary file and a rename, so runs in parallel
 * never read a half-written one (the last writer's set wins). */
#ifndef SECPERF_DEVICE_DECODE_CACHE_H
#define SECPERF_DEVICE_DECODE_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* the facts of one instruction; everything timing_translate takes from the disassembly */
struct decoded {
    uint16_t addr_regs;   /* timing_addr_regs */
    uint16_t dp_dest;     /* timing_dp_dest */
    uint8_t cls;          /* timing_classify, before the pairing rules (LOAD, never LOAD_PIPELINED) */
    uint8_t nregs;
    uint8_t branch;
    uint8_t mem;
    uint8_t has_index;    /* a register offset in the address */
    uint8_t sp_based;     /* the address is sp-relative ("[sp") */
    char dest[8], base[8];   /* a single load's destination and base register names ("" otherwise) */
    uint32_t pair_reads, pair_writes;   /* dual_issue_facts: registers (and flags) read and written */
    uint8_t pair_role;                  /* dual_issue_facts: which issue slot it may take */
};

/* read the cache file (it may not exist); the path is kept for decode_cache_save */
void decode_cache_open(const char *path);
/* the facts of the instruction at vaddr with these bytes, NULL when not known */
const struct decoded *decode_cache_find(uint64_t vaddr, const void *bytes, size_t size);
/* remember them (a copy is kept) */
void decode_cache_add(uint64_t vaddr, const void *bytes, size_t size, const struct decoded *d);
/* write the file if anything was added; free the table */
void decode_cache_save(void);

#endif
