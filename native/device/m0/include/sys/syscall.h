/* M0+ build (newlib): marker.c includes this for syscall(2), which the ARM path does not use */
#ifndef SP_M0_SYSCALL_H
#define SP_M0_SYSCALL_H
#endif
