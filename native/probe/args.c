/* args: the command line, parsed and validated into one struct (bad input -> exit 2). */
#include "args.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

void args_usage(FILE *f)
{
    fputs(
        "usage:\n"
        "  secperf-probe speed --alg ALG --op OP [--size BYTES] [--hash sha256|sha1] [--n SAMPLES]\n"
        "                      [--warmup SAMPLES] [--min-sample-us US] [--max-seconds S]\n"
        "                      [--key-cache DIR] [--prehashed] [--seed N]\n"
        "  secperf-probe sign --alg ALG [--hash sha256|sha1] --msg-hex HEX [--key-cache DIR]\n"
        "  secperf-probe list\n"
        "  secperf-probe --version\n"
        "\n"
        "speed: one (alg, op, size) row as JSON lines on stdout: meta, row, one sample per timed\n"
        "batch of ops (wall and thread-CPU ns), end.\n"
        "  --size      message bytes for sign/verify (default 32); buffer bytes for AEAD, MAC and\n"
        "              hash (default 1024); ignored by keygen and derive\n"
        "  --hash      digest for RSA and ECDSA (default sha256); EdDSA signs the message itself\n"
        "  --prehashed RSA/ECDSA sign/verify: digest once before timing, as openssl speed does\n"
        "              (ignored elsewhere; the row's \"prehashed\" says whether it applied)\n"
        "  --n 30 --warmup 2 --min-sample-us 1000 --max-seconds 10 --seed 1 (defaults)\n"
        "  --key-cache DIR: signature keys are kept as DIR/<rsa-N|ecdsa-CURVE|ed25519|ed448>.pem\n"
        "              (PKCS#8, mode 0600); rsa-N, rsa-N-pss and rsa-N-nocrt share rsa-N.pem\n"
        "  SipHash is SipHash-2-4 with a 16-byte key and 16-byte output.\n"
        "row fields: size_bytes is null for keygen and derive; key_bits is the RSA modulus or\n"
        "the curve's field size (0 for symmetric); hash is null where no --hash applies.\n"
        "AEAD ops follow openssl speed -aead (3.0.16+): key, IV length and IV set every op.\n"
        "exit codes: 0 ok, 1 measurement failed ({\"type\":\"error\"} line on stdout), 2 bad input\n",
        f);
}

enum {
    OPT_ALG = 256, OPT_OP, OPT_SIZE, OPT_HASH, OPT_N, OPT_WARMUP, OPT_MIN_SAMPLE_US, OPT_MAX_SECONDS,
    OPT_KEY_CACHE, OPT_PREHASHED, OPT_SEED, OPT_MSG_HEX, OPT_HELP
};

/* speed and sign share one table; sign accepts only some of it (option_allowed) */
static const struct option probe_options[] = {
    {"alg", required_argument, NULL, OPT_ALG},
    {"op", required_argument, NULL, OPT_OP},
    {"size", required_argument, NULL, OPT_SIZE},
    {"hash", required_argument, NULL, OPT_HASH},
    {"n", required_argument, NULL, OPT_N},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"min-sample-us", required_argument, NULL, OPT_MIN_SAMPLE_US},
    {"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
    {"key-cache", required_argument, NULL, OPT_KEY_CACHE},
    {"prehashed", no_argument, NULL, OPT_PREHASHED},
    {"seed", required_argument, NULL, OPT_SEED},
    {"msg-hex", required_argument, NULL, OPT_MSG_HEX},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static int parse_hex(const char *s, probe_args *a, probe_err *err)
{
    size_t len = strlen(s);
    if (len % 2 != 0)
        return err_input(err, "malformed --msg-hex (odd number of hex digits: %zu)", len);
    free(a->msg);
    a->msg = malloc(len / 2 + 1);
    if (a->msg == NULL)
        return err_fail(err, "out of memory");
    long n = hex_decode(s, a->msg);
    if (n < 0) {
        size_t i = (size_t)(-2 - n);
        return err_input(err, "malformed --msg-hex: '%c%c' at offset %zu is not hex", s[i], s[i + 1], i);
    }
    a->msg_len = (size_t)n;
    return 1;
}

typedef struct raw_args {
    const char *alg;
    const char *op;
    const char *size;
    const char *msg_hex;
} raw_args;

/* Options each subcommand accepts; anything else is bad input. */
static int option_allowed(probe_cmd cmd, int opt)
{
    if (cmd == CMD_SPEED)
        return opt != OPT_MSG_HEX;
    return opt == OPT_ALG || opt == OPT_HASH || opt == OPT_MSG_HEX || opt == OPT_KEY_CACHE;
}

static int apply_option(int opt, const char *name, const char *val, probe_args *a, raw_args *raw,
                        probe_err *err)
{
    static const char *const hashes[] = {"sha256", "sha1", NULL};
    char *m = err->msg;
    size_t ml = sizeof err->msg;
    switch (opt) {
    case OPT_ALG: raw->alg = val; return 1;
    case OPT_OP: raw->op = val; return 1;
    case OPT_SIZE: raw->size = val; return 1;
    case OPT_MSG_HEX: raw->msg_hex = val; return 1;
    case OPT_KEY_CACHE:
        return opt_nonempty(name, val, &a->key_cache, m, ml) == 0 || err_as_input(err);
    case OPT_HASH: {
        int i = opt_choice(name, val, hashes, m, ml);
        if (i < 0)
            return err_as_input(err);
        a->hash = hashes[i];
        return 1;
    }
    case OPT_N:
        return opt_u64(name, val, 1, UINT64_MAX, &a->n, m, ml) == 0 || err_as_input(err);
    case OPT_WARMUP:
        return opt_u64(name, val, 0, UINT64_MAX, &a->warmup, m, ml) == 0 || err_as_input(err);
    case OPT_SEED:
        return opt_u64(name, val, 0, UINT64_MAX, &a->seed, m, ml) == 0 || err_as_input(err);
    case OPT_MIN_SAMPLE_US:
        return opt_double(name, val, 0, 0, HUGE_VAL, &a->min_sample_us, m, ml) == 0 || err_as_input(err);
    case OPT_MAX_SECONDS:
        return opt_double(name, val, 0, 1, HUGE_VAL, &a->max_seconds, m, ml) == 0 || err_as_input(err);
    case OPT_PREHASHED:
        a->prehashed = 1;
        return 1;
    default:
        return err_input(err, "unknown option '%s'", name);
    }
}

static int resolve_alg_op(probe_args *a, const raw_args *raw, probe_err *err)
{
    char known[2048];
    if (raw->alg == NULL)
        return err_input(err, "missing --alg");
    a->alg = alg_find(raw->alg);
    if (a->alg == NULL) {
        alg_names(known, sizeof(known));
        return err_input(err, "unknown --alg '%s'; known: %s", raw->alg, known);
    }
    if (a->cmd == CMD_SIGN) {
        if (a->alg->family != FAM_RSA && a->alg->family != FAM_ECDSA
            && a->alg->family != FAM_EDDSA)
            return err_input(err, "sign takes a signature --alg (rsa-*, ecdsa-*, ed25519, "
                             "ed448), not '%s'", raw->alg);
        return 1;
    }
    if (raw->op == NULL)
        return err_input(err, "missing --op");
    a->op = op_from_name(raw->op);
    if (a->op == OP_COUNT || !alg_has_op(a->alg, a->op)) {
        alg_op_names(a->alg, known, sizeof(known));
        if (a->op == OP_KEYGEN && a->alg->family == FAM_RSA && a->alg->variant == RSA_NOCRT)
            return err_input(err, "--op 'keygen' does not apply to '%s' (its key is rsa-%d's "
                             "without CRT; time keygen with rsa-%d); known: %s", raw->alg,
                             a->alg->key_bits, a->alg->key_bits, known);
        return err_input(err, "unknown --op '%s' for --alg '%s'; known: %s", raw->op, raw->alg,
                         known);
    }
    return 1;
}

int args_parse(int argc, char **argv, probe_args *a, probe_err *err)
{
    memset(a, 0, sizeof(*a));
    a->hash = "sha256";
    a->n = 30;
    a->warmup = 2;
    a->min_sample_us = 1000.0;
    a->max_seconds = 10.0;
    a->seed = 1;

    if (argc < 2)
        return err_input(err, "missing command; try --help");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0)
        a->cmd = CMD_VERSION;
    else if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
        a->cmd = CMD_HELP;
    else if (strcmp(cmd, "list") == 0)
        a->cmd = CMD_LIST;
    else if (strcmp(cmd, "speed") == 0)
        a->cmd = CMD_SPEED;
    else if (strcmp(cmd, "sign") == 0)
        a->cmd = CMD_SIGN;
    else
        return err_input(err, "unknown command '%s'; known: speed, sign, list, --version", cmd);

    if (a->cmd == CMD_VERSION || a->cmd == CMD_HELP || a->cmd == CMD_LIST) {
        if (argc > 2)
            return err_input(err, "unexpected argument '%s' after %s", argv[2], cmd);
        return 1;
    }

    raw_args raw = {0};
    opt_parser p;
    opt_init(&p, argc - 1, argv + 1, "h", probe_options);
    int opt;
    while ((opt = opt_next(&p, err->msg, sizeof err->msg)) != 0) {
        if (opt < 0)
            return err_as_input(err);
        if (opt == 'h' || opt == OPT_HELP) {
            a->cmd = CMD_HELP;
            return 1;
        }
        if (opt == OPT_PREHASHED && a->cmd != CMD_SPEED)
            return err_input(err, "--prehashed applies to speed only");
        if (!option_allowed(a->cmd, opt))
            return err_input(err, "option %s is not accepted by %s", p.name, cmd);
        if (!apply_option(opt, p.name, p.arg, a, &raw, err))
            return 0;
    }

    if (!resolve_alg_op(a, &raw, err))
        return 0;

    if (a->cmd == CMD_SIGN) {
        if (raw.msg_hex == NULL)
            return err_input(err, "missing --msg-hex");
        return parse_hex(raw.msg_hex, a, err);
    }

    a->size = family_is_bulk(a->alg->family) ? DEFAULT_BULK_SIZE : DEFAULT_SIG_SIZE;
    if (raw.size != NULL) {
        uint64_t v;
        if (opt_u64("--size", raw.size, 1, UINT64_MAX, &v, err->msg, sizeof err->msg) != 0)
            return err_as_input(err);
        if (v > (uint64_t)1 << 31)
            return err_input(err, "--size %s too large (max %llu)", raw.size,
                             (unsigned long long)1 << 31);
        a->size = (size_t)v;
        if (a->alg->max_size != 0 && a->size > a->alg->max_size)
            return err_input(err, "--size %s too large for %s (max %zu)", raw.size,
                             a->alg->name, a->alg->max_size);
    }
    return 1;
}

void args_free(probe_args *a)
{
    free(a->msg);
    a->msg = NULL;
}
