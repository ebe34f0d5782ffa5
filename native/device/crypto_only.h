/* crypto_only: what the primitives-only guest clients (PQClean's ML-KEM/ML-DSA, p256-m) share: a
 * fixed-seed generator for the randomness their code asks for, and the backend with no TLS, which
 * crypto_only.c defines around the three functions and two names a client gives it.
 *
 * The generator is splitmix64, the sequence of native/common/rng.h (whose copy is not installed
 * with these guest sources): the same seed draws the same keys and coins in every process, so the
 * counts repeat. */
#ifndef SECPERF_DEVICE_CRYPTO_ONLY_H
#define SECPERF_DEVICE_CRYPTO_ONLY_H

#include <stddef.h>
#include <stdint.h>

/* the generator's state; a client seeds it before each operation's preparation */
extern uint64_t sp_fixed_rng;
/* n bytes of splitmix64 output from sp_fixed_rng, each word little end first */
void sp_fixed_random(uint8_t *out, size_t n);

/* what the client defines: its stack name ("pqclean"), the name its messages use ("PQClean"), its
 * library line, its operation names (a JSON array) and the operation runner (backend.h's crypto) */
extern const char sp_only_name[], sp_only_display[];
const char *sp_only_library(void);
const char *sp_only_ops(void);
int sp_only_op(void *st, const char *op, int reps, char *err, size_t errlen);

#endif
