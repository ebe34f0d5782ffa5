/* crypto_wolfssl: wolfCrypt primitives, one at a time between OP markers (filled in below). */
#include <stdio.h>
#include <string.h>
#include "crypto_wolfssl.h"

const char *sp_wolfcrypt_ops(void) { return "[]"; }

int sp_wolfcrypt_op(void *st, const char *op, int reps, char *err, size_t errlen)
{
    (void)st, (void)reps;
    snprintf(err, errlen, "unknown operation %s", op);
    return 2;
}
