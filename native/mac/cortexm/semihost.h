/* semihost: console output and exit through ARM semihosting (QEMU -semihosting-config). */
#ifndef SECPERF_SEMIHOST_H
#define SECPERF_SEMIHOST_H

void sh_puts(const char *s);
void sh_exit(int ok);
void secperf_mark(void);

#endif
