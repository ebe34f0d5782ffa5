#ifndef SP_CRYPTO_OPENSSL_H
#define SP_CRYPTO_OPENSSL_H
#include <stddef.h>
int sp_openssl_op(void *st, const char *op, int reps, char *err, size_t errlen);
const char *sp_openssl_ops(void);
#endif
