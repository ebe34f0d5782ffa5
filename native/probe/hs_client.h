/* hs_client: the `client` subcommand (timed TLS/DTLS handshakes with a per-message CPU breakdown). */
#ifndef SECPERF_PROBE_HS_CLIENT_H
#define SECPERF_PROBE_HS_CLIENT_H

#include "err.h"

/* argv[1] == "client". Returns 1 on success (failed connections included), 0 with err set. */
int hs_client_main(int argc, char **argv, probe_err *err);

#endif
