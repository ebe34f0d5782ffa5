/* mac_op: the name of a MAC operation the crypto clients count, "aes-128-cmac-N" (AES-128-CMAC) or
 * "hmac-sha256-N" (HMAC-SHA256) over N message bytes, parsed once for every backend (crypto_wolfssl.c,
 * crypto_mbedtls.c, crypto_openssl.c). Header only: the guest builds compile each client from its
 * sources without a separate object for it.
 *
 * N is decimal digits only (no sign, space, or trailing characters: "aes-128-cmac-12x" is refused)
 * and within 1..max; a number too large for unsigned long is refused, not wrapped. */
#ifndef SECPERF_DEVICE_MAC_OP_H
#define SECPERF_DEVICE_MAC_OP_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum sp_mac_kind { SP_MAC_NONE = 0, SP_MAC_CMAC = 1, SP_MAC_HMAC = 2 };

/* The MAC kind op names and its length in *len; SP_MAC_NONE (and *len untouched) when op is not a
 * MAC name, or its length is not a plain decimal number in 1..max. */
static inline int sp_mac_op(const char *op, unsigned max, unsigned *len)
{
    static const char cmac[] = "aes-128-cmac-", hmac[] = "hmac-sha256-";
    int kind = SP_MAC_NONE;
    const char *num = NULL;
    if (strncmp(op, cmac, sizeof cmac - 1) == 0) {
        kind = SP_MAC_CMAC;
        num = op + sizeof cmac - 1;
    } else if (strncmp(op, hmac, sizeof hmac - 1) == 0) {
        kind = SP_MAC_HMAC;
        num = op + sizeof hmac - 1;
    } else {
        return SP_MAC_NONE;
    }
    /* strtoul alone would take leading space and a sign (wrapping "-1" to ULONG_MAX) */
    if (num[0] < '0' || num[0] > '9')
        return SP_MAC_NONE;
    char *end = NULL;
    errno = 0;
    unsigned long n = strtoul(num, &end, 10);
    if (errno != 0 || end == num || *end != '\0' || n == 0 || n > max)
        return SP_MAC_NONE;
    *len = (unsigned)n;
    return kind;
}

#endif
