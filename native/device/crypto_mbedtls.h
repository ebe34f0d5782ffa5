#ifndef SP_CRYPTO_MBEDTLS_H
#define SP_CRYPTO_MBEDTLS_H
#include <stddef.h>
int sp_mbedcrypto_op(void *st, const char *op, int reps, char *err, size_t errlen);
const char *sp_mbedcrypto_ops(void);
#endif
