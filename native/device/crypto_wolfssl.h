#ifndef SP_CRYPTO_WOLFSSL_H
#define SP_CRYPTO_WOLFSSL_H
#include <stddef.h>
int sp_wolfcrypt_op(void *st, const char *op, int reps, char *err, size_t errlen);
const char *sp_wolfcrypt_ops(void);
#endif
