/* sign: the `sign` subcommand (one signature + public key, for cross-checking elsewhere). */
#ifndef SECPERF_PROBE_SIGN_H
#define SECPERF_PROBE_SIGN_H

#include "args.h"
#include "err.h"

int sign_main(const probe_args *a, probe_err *err);

#endif
