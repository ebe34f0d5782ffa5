/* startup: bare-metal start for the Cortex-M MAC kernels under QEMU: vector table, .data/.bss
 * set-up, semihosting (console output and exit), and the marker the instruction counter keys on.
 * No newlib: memcpy/memset for the compiler's struct copies are here. */
#include <stddef.h>
#include <stdint.h>

#include "semihost.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);

#define SYS_WRITE0 0x04
#define SYS_EXIT 0x18
#define ADP_STOPPED_APPLICATION_EXIT 0x20026
#define ADP_STOPPED_RUNTIME_ERROR 0x20023

static int semihost(int op, const void *arg)
{
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void sh_puts(const char *s)
{
    semihost(SYS_WRITE0, s);
}

void sh_exit(int ok)
{
    semihost(SYS_EXIT, (const void *)(uintptr_t)(ok ? ADP_STOPPED_APPLICATION_EXIT : ADP_STOPPED_RUNTIME_ERROR));
    for (;;)
        ;
}

/* The instruction counter (plugin) snapshots its count each time this function's first
 * instruction executes; noipa keeps every call in place. */
__attribute__((noinline, noipa, used)) void secperf_mark(void)
{
    __asm__ volatile("" ::: "memory");
}

void *memcpy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    while (n--)
        *d++ = *s++;
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    uint8_t *d = dst;
    while (n--)
        *d++ = (uint8_t)c;
    return dst;
}

void reset_handler(void)
{
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata)
        *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss; dst++)
        *dst = 0;
    sh_exit(main() == 0);
}

static void fault_handler(void)
{
    sh_puts("fault\n");
    sh_exit(0);
}

__attribute__((section(".vectors"), used)) static const void *const VECTORS[16] = {
    &_estack, (const void *)reset_handler, (const void *)fault_handler, (const void *)fault_handler,
    (const void *)fault_handler, (const void *)fault_handler, (const void *)fault_handler, 0, 0, 0, 0,
    (const void *)fault_handler, (const void *)fault_handler, 0, (const void *)fault_handler,
    (const void *)fault_handler,
};
