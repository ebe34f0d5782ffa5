/* speed: the `speed` subcommand (one row of samples as JSON lines). */
#ifndef SECPERF_PROBE_SPEED_H
#define SECPERF_PROBE_SPEED_H

#include "args.h"
#include "err.h"

int speed_main(const probe_args *a, probe_err *err);

#endif
