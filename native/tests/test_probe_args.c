/* The probe's command lines (probe/args.c, probe/hs_args.c): defaults and errors that the Python
 * drivers (secperf.measure.*, secperf.lab.services) rely on. */
#include "args.h"
#include "argv.h"
#include "harness.h"
#include "hs_args.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void speed_defaults_match_the_usage(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "speed", "--alg", "sha256", "--op", "hash");
    probe_args pa;
    probe_err err = {0, ""};
    CHECK(args_parse(a.argc, a.argv, &pa, &err) == 1);
    CHECK(pa.n == 30 && pa.warmup == 2 && pa.seed == 1 && pa.size == 1024);
    CHECK(pa.min_sample_us == 1000.0 && pa.max_seconds == 10.0 && !pa.prehashed);
    args_free(&pa);
}

static void speed_rejects_n_zero_naming_n(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "speed", "--alg", "sha256", "--op", "hash", "--n", "0");
    probe_args pa;
    probe_err err = {0, ""};
    CHECK(args_parse(a.argc, a.argv, &pa, &err) == 0);
    CHECK(err.code == PROBE_BAD_INPUT);
    CHECK_HAS(err.msg, "--n must be at least 1");
    args_free(&pa);
}

static void speed_rejects_a_size_over_the_limit(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "speed", "--alg", "sha256", "--op", "hash", "--size", "4294967296");
    probe_args pa;
    probe_err err = {0, ""};
    CHECK(args_parse(a.argc, a.argv, &pa, &err) == 0 && err.code == PROBE_BAD_INPUT);
    CHECK_HAS(err.msg, "--size 4294967296 too large");
    args_free(&pa);
}

static void sign_refuses_speed_only_options(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "sign", "--alg", "ed25519", "--msg-hex", "00", "--n", "3");
    probe_args pa;
    probe_err err = {0, ""};
    CHECK(args_parse(a.argc, a.argv, &pa, &err) == 0 && err.code == PROBE_BAD_INPUT);
    CHECK_HAS(err.msg, "option --n is not accepted by sign");
    args_free(&pa);
}

static void sign_decodes_the_message_and_names_bad_hex(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "sign", "--alg", "ed25519", "--msg-hex=00ff");
    probe_args pa;
    probe_err err = {0, ""};
    CHECK(args_parse(a.argc, a.argv, &pa, &err) == 1);
    CHECK(pa.msg_len == 2 && pa.msg[1] == 0xff);
    args_free(&pa);
    ARGS(&a, "secperf-probe", "sign", "--alg", "ed25519", "--msg-hex", "0g");
    CHECK(args_parse(a.argc, a.argv, &pa, &err) == 0);
    CHECK_HAS(err.msg, "malformed --msg-hex: '0g' at offset 0");
    args_free(&pa);
}

static void help_wins_wherever_it_appears(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "speed", "--alg", "sha256", "--help", "--bogus");
    probe_args pa;
    probe_err err = {0, ""};
    CHECK(args_parse(a.argc, a.argv, &pa, &err) == 1 && pa.cmd == CMD_HELP);
    args_free(&pa);
}

static void client_defaults_match_the_usage(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "client", "--port", "4433");
    hs_client_args ca;
    probe_err err = {0, ""};
    CHECK(hs_client_args_parse(a.argc, a.argv, &ca, &err) == 1);
    CHECK(ca.port == 4433 && strcmp(ca.host, "127.0.0.1") == 0 && ca.n == 20 && ca.warmup == 3);
    CHECK(ca.request_bytes == 40 && ca.response_bytes == 846 && ca.tls.timeout_ms == 5000);
    CHECK(ca.mode == HS_FULL && ca.app == HS_APP_HTTP && !ca.no_app && !ca.dtls_cookie);
}

/* A 0600 file holding `text` (the PSK as secperf writes it); its path in `path`. */
static void psk_file(char *path, const char *text)
{
    static const char template[] = "/tmp/secperf-test-psk-XXXXXX";
    memcpy(path, template, sizeof template);
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
        close(fd);
    }
}

static void client_flags_and_choices_are_read(void)
{
    char path[64];
    psk_file(path, "0102\n");
    test_argv a;
    ARGS(&a, "secperf-probe", "client", "--port", "1", "--proto", "dtls", "--app", "coap", "--dtls-cookie",
         "--mode", "psk-dhe", "--psk-identity", "id", "--psk-file", path, "--mtu", "1200");
    hs_client_args ca;
    probe_err err = {0, ""};
    int parsed = hs_client_args_parse(a.argc, a.argv, &ca, &err);
    unlink(path);
    CHECK(parsed == 1);
    CHECK(ca.tls.proto == HS_DTLS && ca.app == HS_APP_COAP && ca.dtls_cookie && ca.mode == HS_PSK_DHE);
    CHECK(ca.tls.psk_len == 2 && ca.tls.psk[1] == 2 && ca.tls.mtu == 1200);
    CHECK(ca.tls.version == HS_V_12); /* psk over DTLS: 1.2 */
}

/* No key on a command line: --psk-hex is refused as bad input naming the file option, on both sides. */
static void psk_hex_is_refused_naming_psk_file(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "client", "--port", "1", "--mode", "psk", "--psk-identity", "id", "--psk-hex", "0102");
    hs_client_args ca;
    probe_err err = {0, ""};
    CHECK(hs_client_args_parse(a.argc, a.argv, &ca, &err) == 0 && err.code == PROBE_BAD_INPUT);
    CHECK_HAS(err.msg, "--psk-hex: a key on the command line");
    CHECK_HAS(err.msg, "--psk-file FILE");
    test_argv b;
    ARGS(&b, "secperf-probe", "server", "--port", "0", "--cert", "c", "--key", "k", "--psk-identity", "id",
         "--psk-hex", "0102");
    hs_server_args sa;
    probe_err err2 = {0, ""};
    CHECK(hs_server_args_parse(b.argc, b.argv, &sa, &err2) == 0 && err2.code == PROBE_BAD_INPUT);
    CHECK_HAS(err2.msg, "--psk-file FILE");
}

static void client_rejects_port_out_of_range_naming_port(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "client", "--port", "70000");
    hs_client_args ca;
    probe_err err = {0, ""};
    CHECK(hs_client_args_parse(a.argc, a.argv, &ca, &err) == 0 && err.code == PROBE_BAD_INPUT);
    CHECK_HAS(err.msg, "--port '70000' out of range (1..65535)");
}

static void client_rejects_server_only_options(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "client", "--port", "1", "--tickets", "2");
    hs_client_args ca;
    probe_err err = {0, ""};
    CHECK(hs_client_args_parse(a.argc, a.argv, &ca, &err) == 0 && err.code == PROBE_BAD_INPUT);
    CHECK_HAS(err.msg, "unknown option '--tickets'");
}

static void server_needs_an_explicit_port_and_accepts_zero(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "server", "--cert", "c.pem", "--key", "k.pem");
    hs_server_args sa;
    probe_err err = {0, ""};
    CHECK(hs_server_args_parse(a.argc, a.argv, &sa, &err) == 0);
    CHECK_HAS(err.msg, "missing --port");
    ARGS(&a, "secperf-probe", "server", "--port", "0", "--cert", "c.pem", "--key", "k.pem");
    CHECK(hs_server_args_parse(a.argc, a.argv, &sa, &err) == 1);
    CHECK(sa.port == 0 && sa.tickets == 2 && sa.session_cache && sa.dtls_cookie && sa.tls.timeout_ms == 10000);
}

static void server_on_off_options_name_the_option(void)
{
    test_argv a;
    ARGS(&a, "secperf-probe", "server", "--port", "0", "--cert", "c", "--key", "k", "--dtls-cookie", "maybe");
    hs_server_args sa;
    probe_err err = {0, ""};
    CHECK(hs_server_args_parse(a.argc, a.argv, &sa, &err) == 0 && err.code == PROBE_BAD_INPUT);
    CHECK_HAS(err.msg, "--dtls-cookie takes on or off, not 'maybe'");
}

const test_case probe_args_tests[] = {
    {"probe speed: defaults match the usage text", speed_defaults_match_the_usage},
    {"probe speed: rejects --n 0 with an error naming --n", speed_rejects_n_zero_naming_n},
    {"probe speed: rejects a --size over 2^31", speed_rejects_a_size_over_the_limit},
    {"probe sign: refuses speed-only options by name", sign_refuses_speed_only_options},
    {"probe sign: decodes --msg-hex and names a bad pair", sign_decodes_the_message_and_names_bad_hex},
    {"probe: --help wins wherever it appears", help_wins_wherever_it_appears},
    {"probe client: defaults match the usage text", client_defaults_match_the_usage},
    {"probe client: flags and choices are read", client_flags_and_choices_are_read},
    {"probe: --psk-hex is refused, naming --psk-file", psk_hex_is_refused_naming_psk_file},
    {"probe client: rejects --port 70000 naming --port", client_rejects_port_out_of_range_naming_port},
    {"probe client: rejects server-only options", client_rejects_server_only_options},
    {"probe server: needs --port and accepts 0 (ephemeral)", server_needs_an_explicit_port_and_accepts_zero},
    {"probe server: on|off options name the option", server_on_off_options_name_the_option},
    {NULL, NULL},
};
