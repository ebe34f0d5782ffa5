/* main: entry point; dispatches subcommands and turns a probe_err into the exit code. */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "algs.h"
#include "args.h"
#include "err.h"
#include "hs_client.h"
#include "hs_server.h"
#include "json.h"
#include "sign.h"
#include "speed.h"

/* Bad input goes to stderr as one line; a failed measurement is a JSON line on stdout. */
static int report(const probe_err *err)
{
    if (err->code == PROBE_BAD_INPUT) {
        fprintf(stderr, "secperf-probe: %s\n", err->msg);
        return PROBE_BAD_INPUT;
    }
    json_error_line(stdout, err->msg);
    return PROBE_FAILED;
}

int main(int argc, char **argv)
{
    probe_args args;
    probe_err err = {PROBE_OK, ""};
    if (argc >= 2 && strcmp(argv[1], "client") == 0)
        return hs_client_main(argc, argv, &err) ? PROBE_OK : report(&err);
    if (argc >= 2 && strcmp(argv[1], "server") == 0)
        return hs_server_main(argc, argv, &err) ? PROBE_OK : report(&err);
    if (!args_parse(argc, argv, &args, &err)) {
        args_free(&args);
        return report(&err);
    }
    int ok = 1;
    switch (args.cmd) {
    case CMD_HELP:
        args_usage(stdout);
        break;
    case CMD_VERSION:
        printf("secperf-probe %s (%s)\n", PROBE_VERSION, OpenSSL_version(OPENSSL_VERSION));
        break;
    case CMD_LIST:
        alg_write_list(stdout);
        break;
    case CMD_SPEED:
        ok = speed_main(&args, &err);
        break;
    case CMD_SIGN:
        ok = sign_main(&args, &err);
        break;
    }
    args_free(&args);
    return ok ? PROBE_OK : report(&err);
}
