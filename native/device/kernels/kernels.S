/* Cortex-M4 timing kernels: short instruction sequences whose cycle counts the Cortex-M4 Technical
 * Reference Manual (DDI 0439, 3.3 "Instruction set summary" and its load/store timing notes) and the
 * STM32 reference manuals (flash wait states behind the ART accelerator) document. Each runs between
 * two marker system calls (number 1516, r0 = kernel id, r1 = 0 at the start, 1 at the end), so the
 * counting plugin's timing model gives the cycles of exactly these instructions; kernels.toml holds
 * the documented count of each and where it comes from, and secperf compares the two.
 *
 * A static Linux executable for `qemu-arm -cpu max`, no C library: r3 points at a scratch area in
 * SRAM (.bss), r7 holds the marker's system call number throughout.
 *
 *   arm-linux-gnueabihf-gcc -nostdlib -static -mcpu=cortex-m4 -mthumb -o kernels kernels.S
 */
    .syntax unified
    .cpu cortex-m4
    .thumb

/* the marker: its own three instructions (movs, movs, svc) are in every kernel's count; the empty
 * kernel (id 1) measures them and the comparison subtracts it */
    .macro MARK id, phase
    movs r0, #\id
    movs r1, #\phase
    svc #0
    .endm

/* every kernel starts on a 16-byte boundary (the widest flash fetch granule here), so its fetches
 * do not depend on what came before */
    .macro KERNEL id
    .balign 16
    MARK \id, 0
    .endm

    .macro END id
    MARK \id, 1
    .endm

    .text
    .global _start
    .type _start, %function
    .thumb_func
_start:
    movw r7, #1516
    ldr r3, =scratch
    str r3, [r3]                @ scratch[0] = &scratch: a pointer for the dependent-load kernel
    movs r2, #0
    str r2, [r3, #4]
    str r2, [r3, #8]
    str r2, [r3, #12]
    movs r4, #3
    movs r5, #5
    movs r6, #7
    mov r8, r4

    KERNEL 1                    @ empty: the marker alone
    END 1

    KERNEL 2                    @ data processing: 8 instructions, 16- and 32-bit, 1 cycle each
    add.w r2, r2, #1
    eor.w r4, r4, r2
    adds r5, r5, #1
    eors r6, r6, r5
    add.w r2, r2, r5, ror #3
    eor.w r4, r4, r6, lsl #2
    adds r5, r5, r2
    orrs r6, r6, r4
    END 2

    KERNEL 3                    @ a single LDR followed by data processing: 2
    ldr r2, [r3, #4]
    END 3

    KERNEL 4                    @ four independent LDRs: pipelined, N + 1 = 5
    ldr r2, [r3, #4]
    ldr r4, [r3, #8]
    ldr r5, [r3, #12]
    ldr r6, [r3, #4]
    END 4

    KERNEL 5                    @ an LDR whose address is the previous LDR's result: not pipelined, 2 + 2
    ldr r2, [r3]
    ldr r4, [r2, #4]
    END 5

    KERNEL 6                    @ LDR then STR of what it loaded: pipelined, 3
    ldr r2, [r3, #4]
    str r2, [r3, #8]
    END 6

    KERNEL 7                    @ STR then LDR: nothing pipelines after a store, 1 + 2
    str r2, [r3, #8]
    ldr r4, [r3, #4]
    END 7

    KERNEL 8                    @ data processing writes the LDR's base register: no forwarding path to the
    add.w r2, r3, #4            @ address generation, one stall cycle: 1 + 1 + 2
    ldr r4, [r2]
    END 8

    KERNEL 9                    @ the same before a STR: 1 + 1 + 1
    add.w r2, r3, #8
    str r4, [r2]
    END 9

    KERNEL 10                   @ data processing writes the LDR's index register: 1 + 1 + 2
    movs r2, #1
    ldr r4, [r3, r2, lsl #2]
    END 10

    KERNEL 11                   @ data processing on another register: no stall, 1 + 2
    add.w r2, r3, #4
    ldr r4, [r3, #8]
    END 11

    KERNEL 12                   @ LDM and STM of four registers: 1 + N each, 10
    ldm r3, {r2, r4, r5, r6}
    stm r3, {r2, r4, r5, r6}
    END 12

    KERNEL 13                   @ PUSH and POP of four registers: 1 + N each, 10
    push {r2, r4, r5, r6}
    pop {r2, r4, r5, r6}
    END 13

    KERNEL 14                   @ LDRD and STRD: 1 + N each (never pipelined), 6
    ldrd r4, r5, [r3, #8]
    strd r4, r5, [r3, #8]
    END 14

    KERNEL 15                   @ multiplies: MUL, UMULL, SMULL, UMLAL, SMLAL, UMAAL 1 each, MLA 2: 8
    mul r2, r4, r5
    umull r2, r4, r5, r6
    smull r2, r4, r5, r6
    umlal r2, r4, r5, r6
    smlal r2, r4, r5, r6
    umaal r2, r4, r5, r6
    mla r2, r4, r5, r6
    movs r4, #3                 @ keep the operands small for the kernels after this one
    END 15

    KERNEL 16                   @ a counted loop: 10 x SUBS, 9 taken BNE (1 + P), 1 not taken, plus the MOVS
    movs r2, #10
1:  subs r2, #1
    bne 1b
    END 16

    KERNEL 17                   @ a taken unconditional branch over two instructions: 1 + P
    b 2f
    nop
    nop
2:  END 17

    KERNEL 18                   @ BL to a function that returns with BX LR: (1 + P) + (1 + P_reg)
    bl kfunc
    END 18

    KERNEL 19                   @ literal-pool loads: two LDR Rx, =constant from flash, one granule
    ldr r2, =0x12345678
    ldr r4, =0x9abcdef0
    END 19
    b 4f                        @ over the literal pool (outside the markers)
    .ltorg
4:

    KERNEL 20                   @ a loop that fits the flash accelerator's instruction cache, 4 passes:
    movs r2, #4                 @ on a part with wait states only the first pass misses
3:  add.w r4, r4, #1
    add.w r5, r5, #1
    add.w r6, r6, #1
    subs r2, #1
    bne 3b
    END 20

    KERNEL 21                   @ BL to a function that saves LR and returns with POP {pc}: BL (1 + P),
    bl kfunc2                   @ PUSH {lr} (1 + 1), POP {pc} (1 + 1, a load into the PC: 3 of reload)
    END 21

    KERNEL 22                   @ TBB: a table branch (2 for the load, 1, 3 of reload) to the first case
    movs r2, #0
    tbb [pc, r2]
5:  .byte (6f - 5b) / 2, (6f - 5b) / 2
6:  END 22

    KERNEL 23                   @ STR with a register offset, then data processing: nothing pipelines
    movs r4, #4                 @ after it, 1 + 1 (the MOVS before it writes only the stored offset's
    nop                         @ register two instructions ahead: no address stall)
    str r2, [r3, r4]
    END 23

    KERNEL 24                   @ a counted loop whose branch target is a 32-bit instruction at a word
    movs r2, #10                @ address (the marker's 6 bytes and this MOVS: offset 8): 10 x (ADD.W;
1:  add.w r4, r4, #1            @ SUBS; BNE), 9 BNE taken (1 + P), 1 not taken, plus the MOVS
    subs r2, #1
    bne 1b
    END 24

    KERNEL 25                   @ the same loop with its target at a halfword address: a 32-bit MOV.W
    mov.w r2, #10               @ instead of the MOVS (offset 10); each taken BNE's refill needs one more
1:  add.w r4, r4, #1            @ fetch (TRM: P by the target's alignment and width)
    subs r2, #1
    bne 1b
    END 25

    KERNEL 26                   @ three 32-bit MOV.W at word addresses (a 16-bit NOP first: offset 8):
    nop                         @ 1 cycle each, 4
    mov.w r8, r8
    mov.w r8, r8
    mov.w r8, r8
    END 26

    KERNEL 27                   @ the same instructions with the three MOV.W at halfword addresses (offset
    mov.w r8, r8                @ 6) and the NOP after them: a group of three unaligned 32-bit instructions,
    mov.w r8, r8                @ one cycle more (measured from flash, compendium.i-0.nl "Alignment rules")
    mov.w r8, r8
    nop
    END 27

    KERNEL 28                   @ three 32-bit STR.W at halfword addresses, then a NOP: a group of stores
    str.w r2, [r3, #8]          @ only costs its cycle from the fourth, 1 + 1 + 1 + 1
    str.w r2, [r3, #12]
    str.w r2, [r3, #8]
    nop
    END 28

    KERNEL 29                   @ four such STR.W: the group's cycle, 1 x 4 + 1
    str.w r2, [r3, #8]
    str.w r2, [r3, #12]
    str.w r2, [r3, #8]
    str.w r2, [r3, #12]
    END 29

    KERNEL 30                   @ a group across a conditional branch not taken: CMP.W (flags: equal) and
    cmp.w r8, r8                @ BNE.W at halfword addresses end the block, the MOV.W after it goes on
    bne.w 7f                    @ from the next one; the three make one group: 1 + 1 + 1 + 1 and its cycle
    mov.w r8, r8
    nop
7:  END 30

    /* exit(0) */
    movs r0, #0
    movs r7, #1
    svc #0

    .balign 4
    .type kfunc, %function
    .thumb_func
kfunc:
    bx lr

    .balign 4
    .type kfunc2, %function
    .thumb_func
kfunc2:
    push {lr}
    pop {pc}
    .ltorg

    .bss
    .balign 8
scratch:
    .space 64
