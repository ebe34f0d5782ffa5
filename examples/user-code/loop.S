@ countdown(n): a loop of known length, in Thumb-2 / Thumb-1 assembly (runs on every target).
@ Instructions per call: 1 (movs) + 2 per iteration (subs, bne) + 1 (bx lr) = 2n + 2 for n >= 1.
    .syntax unified
    .thumb
    .text
    .align 2
    .global countdown
    .type countdown, %function
    .thumb_func
countdown:
    movs r3, r0
1:  subs r3, r3, #1
    bne 1b
    bx lr
    .size countdown, . - countdown
