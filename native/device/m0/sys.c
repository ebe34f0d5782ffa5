/* The Cortex-M0+ build's system layer: the guest runs under qemu-user (Linux user mode) like the
 * other builds, but is linked with newlib (arm-none-eabi), whose soft-float ABI matches ARMv6-M and
 * which has no operating system underneath. This file is that operating-system side: the process
 * entry (_start: argc and argv from the initial Linux stack), newlib's system-call stubs (read,
 * write, open, close, sbrk over brk, exit, time) and the sockets the client needs, each one a
 * Linux ARM EABI system call made with `svc 0` (r7 = number), as marker.c makes its marker.
 * Linux's errno numbers are translated to newlib's where they differ. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#include "m0_net.h"

/* Linux ARM EABI system call numbers */
enum {
    NR_exit = 1, NR_read = 3, NR_write = 4, NR_open = 5, NR_close = 6, NR_lseek = 19, NR_getpid = 20,
    NR_kill = 37, NR_times = 43, NR_brk = 45, NR_ioctl = 54, NR_exit_group = 248, NR_clock_gettime = 263,
    NR_socket = 281, NR_connect = 283, NR_send = 289, NR_sendto = 290, NR_recv = 291, NR_recvfrom = 292,
    NR_shutdown = 293, NR_setsockopt = 294,
};

static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
    register long r0 __asm__("r0") = a;
    register long r1 __asm__("r1") = b;
    register long r2 __asm__("r2") = c;
    register long r3 __asm__("r3") = d;
    register long r4 __asm__("r4") = e;
    register long r5 __asm__("r5") = f;
    register long r7 __asm__("r7") = nr;
    __asm__ volatile("svc 0" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r7) : "memory");
    return r0;
}
#define SYS(nr, a, b, c) sys6((nr), (long)(a), (long)(b), (long)(c), 0, 0, 0)

/* Linux errno -> newlib errno (1..34 are the same) */
static int errno_of(long linux_err)
{
    static const struct { short lx, nl; } map[] = {
        {38, ENOSYS}, {110, ETIMEDOUT}, {115, EINPROGRESS}, {107, ENOTCONN}, {113, EHOSTUNREACH},
        {101, ENETUNREACH}, {98, EADDRINUSE}, {103, ECONNABORTED}, {90, EMSGSIZE}, {97, EAFNOSUPPORT},
        {88, ENOTSOCK}, {92, ENOPROTOOPT}, {93, EPROTONOSUPPORT}, {99, EADDRNOTAVAIL}, {106, EISCONN},
        {114, EALREADY}, {36, ENAMETOOLONG}, {40, ELOOP},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].lx == linux_err)
            return map[i].nl;
    return (int)linux_err;
}

static long ret(long r)
{
    if (r < 0 && r > -4096) {
        errno = errno_of(-r);
        return -1;
    }
    return r;
}

/* --- process entry ---------------------------------------------------------------------------- */
/* The names below are newlib's and the linker's contract (crt0's _start, the _init/_fini hooks,
 * newlib's _read/_write/... system-call stubs): reserved identifiers by design. */
/* NOLINTBEGIN(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
extern int main(int argc, char **argv);
extern void __libc_init_array(void);
extern char **environ;

void _init(void) {}
void _fini(void) {}

__attribute__((noreturn, used)) void sp_m0_start(long *sp)
{
    int argc = (int)sp[0];
    char **argv = (char **)(sp + 1);
    environ = argv + argc + 1;
    __libc_init_array();
    exit(main(argc, argv));
}

__attribute__((naked, noreturn)) void _start(void)
{
    __asm__ volatile("mov r0, sp\n\t"
                     "bl sp_m0_start\n\t");
}

/* --- newlib's system-call stubs ----------------------------------------------------------------- */
void _exit(int status)
{
    for (;;)
        SYS(NR_exit_group, status, 0, 0);
}

int _read(int fd, char *buf, int len) { return (int)ret(SYS(NR_read, fd, buf, len)); }
int _write(int fd, const char *buf, int len) { return (int)ret(SYS(NR_write, fd, buf, len)); }
int _close(int fd) { return (int)ret(SYS(NR_close, fd, 0, 0)); }
int _getpid(void) { return (int)SYS(NR_getpid, 0, 0, 0); }
int _kill(int pid, int sig) { return (int)ret(SYS(NR_kill, pid, sig, 0)); }
off_t _lseek(int fd, off_t off, int whence) { return (off_t)ret(SYS(NR_lseek, fd, (long)off, whence)); }

int _open(const char *path, int flags, int mode)
{
    /* newlib's O_ flags -> Linux's (ARM) */
    int lx = flags & O_ACCMODE;
    if (flags & O_CREAT) lx |= 0100;
    if (flags & O_EXCL) lx |= 0200;
    if (flags & O_TRUNC) lx |= 01000;
    if (flags & O_APPEND) lx |= 02000;
    if (flags & O_NONBLOCK) lx |= 04000;
    return (int)ret(SYS(NR_open, path, lx | 0400000 /* O_CLOEXEC */, mode));
}

int _isatty(int fd)
{
    uint32_t termios[16];
    return SYS(NR_ioctl, fd, 0x5401 /* TCGETS */, termios) == 0;
}

int _fstat(int fd, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_mode = _isatty(fd) ? S_IFCHR : S_IFREG;
    st->st_blksize = 1024;
    return 0;
}

int _stat(const char *path, struct stat *st)
{
    (void)path, (void)st;
    errno = ENOSYS;
    return -1;
}

int _link(const char *a, const char *b)
{
    (void)a, (void)b;
    errno = ENOSYS;
    return -1;
}

int _unlink(const char *path)
{
    (void)path;
    errno = ENOSYS;
    return -1;
}

void *_sbrk(ptrdiff_t incr)
{
    static uintptr_t cur;
    if (cur == 0)
        cur = (uintptr_t)SYS(NR_brk, 0, 0, 0);
    uintptr_t old = cur, want = cur + (uintptr_t)incr;
    if (incr != 0) {
        uintptr_t got = (uintptr_t)SYS(NR_brk, want, 0, 0);
        if (got < want) {
            errno = ENOMEM;
            return (void *)-1;
        }
        cur = want;
    }
    return (void *)old;
}

struct lx_timespec { int32_t tv_sec, tv_nsec; };  /* the 32-bit time call (clock_gettime, 263) */

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    struct lx_timespec l = {0, 0};  /* written by the kernel; zero if the call fails */
    long r = ret(SYS(NR_clock_gettime, clk, &l, 0));
    if (r == 0) {
        ts->tv_sec = l.tv_sec;
        ts->tv_nsec = l.tv_nsec;
    }
    return (int)r;
}

int _gettimeofday(struct timeval *tv, void *tz)
{
    (void)tz;
    struct timespec ts;
    if (clock_gettime(0 /* CLOCK_REALTIME */, &ts) != 0)
        return -1;
    if (tv != NULL) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
}

clock_t _times(struct tms *t)
{
    int32_t lx[4] = {0, 0, 0, 0};  /* written by the kernel; zero if the call fails */
    long r = SYS(NR_times, lx, 0, 0);
    if (t != NULL) {
        t->tms_utime = lx[0], t->tms_stime = lx[1], t->tms_cutime = lx[2], t->tms_cstime = lx[3];
    }
    return (clock_t)r;
}
/* NOLINTEND(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */

/* --- sockets (m0_net.h) ------------------------------------------------------------------------- */
int socket(int domain, int type, int protocol) { return (int)ret(SYS(NR_socket, domain, type, protocol)); }
int connect(int fd, const struct sockaddr *a, socklen_t len) { return (int)ret(SYS(NR_connect, fd, a, len)); }
int shutdown(int fd, int how) { return (int)ret(SYS(NR_shutdown, fd, how, 0)); }

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    int32_t tv32[2];
    if (level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO) && len == sizeof(struct timeval)) {
        const struct timeval *tv = val;   /* newlib's 64-bit time_t -> the kernel's 32-bit timeval */
        tv32[0] = (int32_t)tv->tv_sec, tv32[1] = (int32_t)tv->tv_usec;
        val = tv32, len = sizeof tv32;
    }
    return (int)ret(sys6(NR_setsockopt, fd, level, name, (long)val, (long)len, 0));
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    return (ssize_t)ret(sys6(NR_send, fd, (long)buf, (long)len, flags, 0, 0));
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    return (ssize_t)ret(sys6(NR_recv, fd, (long)buf, (long)len, flags, 0, 0));
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
    return (ssize_t)ret(sys6(NR_sendto, fd, (long)buf, (long)len, flags, (long)to, (long)tolen));
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
    return (ssize_t)ret(sys6(NR_recvfrom, fd, (long)buf, (long)len, flags, (long)from, (long)fromlen));
}

int inet_pton(int af, const char *src, void *dst)
{
    if (af != AF_INET)
        return -1;
    uint8_t b[4];
    for (int i = 0; i < 4; i++) {
        unsigned v = 0, digits = 0;
        while (*src >= '0' && *src <= '9' && digits < 3)
            v = v * 10 + (unsigned)(*src++ - '0'), digits++;
        if (digits == 0 || v > 255 || (i < 3 ? *src++ != '.' : *src != '\0'))
            return 0;
        b[i] = (uint8_t)v;
    }
    memcpy(dst, b, 4);
    return 1;
}

/* --- printf: newlib as Debian builds it has no C99 length modifiers (%zu prints "zu"); the client
 * prints sizes with %zu. Linked with --wrap=printf: the format is copied without the z (size_t is
 * unsigned int here). */
#include <stdarg.h>
#include <stdio.h>
/* the linker's --wrap names: reserved identifiers by design */
int __real_printf(const char *fmt, ...);  /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
int __wrap_printf(const char *fmt, ...)   /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp) */
{
    char f[512];
    size_t j = 0;
    for (size_t i = 0; fmt[i] != '\0' && j + 1 < sizeof f; i++) {
        if (fmt[i] == 'z' && i > 0 && fmt[i - 1] == '%')
            continue;
        f[j++] = fmt[i];
    }
    f[j] = '\0';
    va_list ap;
    va_start(ap, fmt);
    int r = vprintf(f, ap);
    va_end(ap);
    return r;
}
