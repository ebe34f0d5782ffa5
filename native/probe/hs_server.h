/* hs_server: the `server` subcommand (sequential TLS/DTLS server answering one HTTP request per connection). */
#ifndef SECPERF_PROBE_HS_SERVER_H
#define SECPERF_PROBE_HS_SERVER_H

#include "err.h"

/* argv[1] == "server". Runs until SIGTERM/SIGINT or --max-conns; 0 with err set on setup errors. */
int hs_server_main(int argc, char **argv, probe_err *err);

#endif
