/* crypto_mbedtls: Mbed TLS primitives one at a time between OP markers (not yet filled in). */
#include <stdio.h>
#include "crypto_mbedtls.h"

const char *sp_mbedcrypto_ops(void) { return "[]"; }

int sp_mbedcrypto_op(void *st, const char *op, int reps, char *err, size_t errlen)
{
    (void)st, (void)reps;
    snprintf(err, errlen, "unknown operation %s", op);
    return 2;
}
