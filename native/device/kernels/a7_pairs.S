/* Dual-issue kernels (ARM state) for the Cortex-A7 pairing rule of the timing model
 * (native/device/plugin/dual_issue.h). Each kernel runs 16 data-processing instructions between two
 * marker system calls (number 1516, r0 = kernel id, r1 = 0 at the start, 1 at the end), as
 * kernels.S does; every kernel has the same length, alignment and marker, so two kernels differ in
 * their cycles only by how their instructions issue:
 *   2  independent pairs: ADD #imm to r2, then to r4 (the younger reads nothing the older writes)
 *   3  a dependent chain: ADD #imm to r2, sixteen times (each reads the one before)
 *   4  register operands: ADD r2, r2, r3 then ADD r4, r4, r5 (independent, but a register operand
 *      cannot take the second issue slot)
 *   5  flags: CMP #0 then a conditional, flag-setting ADD: the ADD reads the flags the CMP writes,
 *      and the next CMP writes the flags the ADD writes
 *
 *   arm-linux-gnueabihf-gcc -nostdlib -static -marm -mcpu=cortex-a7 -o a7_pairs a7_pairs.S
 */
    .syntax unified
    .arch armv7-a
    .arm

    .macro MARK id, phase
    mov r0, #\id
    mov r1, #\phase
    svc #0
    .endm

/* 32-byte alignment: the Cortex-A7's instruction cache line */
    .macro KERNEL id
    .balign 32
    MARK \id, 0
    .endm

    .macro END id
    MARK \id, 1
    .endm

    .text
    .global _start
    .type _start, %function
_start:
    movw r7, #1516
    mov r2, #0
    mov r3, #3
    mov r4, #0
    mov r5, #5

    KERNEL 1
    END 1

    KERNEL 2
    .rept 8
    add r2, r2, #1
    add r4, r4, #1
    .endr
    END 2

    KERNEL 3
    .rept 16
    add r2, r2, #1
    .endr
    END 3

    KERNEL 4
    .rept 8
    add r2, r2, r3
    add r4, r4, r5
    .endr
    END 4

    KERNEL 5
    .rept 8
    cmp r2, #0
    addseq r4, r4, #1
    .endr
    END 5

    mov r0, #0
    mov r7, #1                  @ exit(0)
    svc #0
