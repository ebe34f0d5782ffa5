/* marker: see marker.h. On 32-bit ARM the call is made directly (svc) so that it costs the same
 * few instructions in every build; elsewhere through syscall(2). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "marker.h"

#include <unistd.h>
#include <sys/syscall.h>

void sp_mark(unsigned kind, unsigned arg)
{
#if defined(__arm__)
    register unsigned r0 __asm__("r0") = kind;
    register unsigned r1 __asm__("r1") = arg;
    register unsigned r7 __asm__("r7") = SP_MARK_NR;
    __asm__ volatile("svc 0" : "+r"(r0) : "r"(r1), "r"(r7) : "memory");
#else
    (void)syscall(SP_MARK_NR, kind, arg);
#endif
}
