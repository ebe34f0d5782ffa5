/* args: the command line, parsed and validated into one struct (bad input -> exit 2). */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Whole numbers only: no sign, no blanks, no trailing text, no overflow. */
static int parse_u64(const char *opt, const char *s, uint64_t *out, probe_err *err)
{
    if (s[0] < '0' || s[0] > '9')
        return err_input(err, "malformed %s '%s' (expected a whole number)", opt, s);
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return err_input(err, "malformed %s '%s' (expected a whole number)", opt, s);
    *out = v;
    return 1;
}

static int parse_positive(const char *opt, const char *s, uint64_t *out, probe_err *err)
{
    if (s[0] == '-')
        return err_input(err, "%s must be at least 1 (got '%s')", opt, s);
    if (!parse_u64(opt, s, out, err))
        return 0;
    if (*out == 0)
        return err_input(err, "%s must be at least 1 (got '%s')", opt, s);
    return 1;
}

static int parse_seconds(const char *opt, const char *s, int allow_zero, double *out,
                         probe_err *err)
{
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (s[0] == '\0' || errno != 0 || *end != '\0' || !isfinite(v))
        return err_input(err, "malformed %s '%s' (expected a number)", opt, s);
    if (v < 0 || (!allow_zero && v == 0))
        return err_input(err, "%s must be %s (got '%s')", opt, allow_zero ? ">= 0" : "> 0", s);
    *out = v;
    return 1;
}

int args_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int parse_hex(const char *s, probe_args *a, probe_err *err)
{
    size_t len = strlen(s);
    if (len % 2 != 0)
        return err_input(err, "malformed --msg-hex (odd number of hex digits: %zu)", len);
    free(a->msg);
    a->msg = malloc(len / 2 + 1);
    if (a->msg == NULL)
        return err_fail(err, "out of memory");
    for (size_t i = 0; i < len; i += 2) {
        int hi = args_hex_digit(s[i]), lo = args_hex_digit(s[i + 1]);
        if (hi < 0 || lo < 0)
            return err_input(err, "malformed --msg-hex: '%c%c' at offset %zu is not hex",
                             s[i], s[i + 1], i);
        a->msg[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    a->msg_len = len / 2;
    return 1;
}

typedef struct raw_args {
    const char *alg;
    const char *op;
    const char *size;
    const char *msg_hex;
} raw_args;

/* Options each subcommand accepts; anything else is bad input. */
static int option_allowed(probe_cmd cmd, const char *name)
{
    static const char *const sign_opts[] = {"--alg", "--hash", "--msg-hex", "--key-cache", NULL};
    if (cmd == CMD_SPEED)
        return strcmp(name, "--msg-hex") != 0;
    for (int i = 0; sign_opts[i]; i++)
        if (strcmp(sign_opts[i], name) == 0)
            return 1;
    return 0;
}

static int apply_option(const char *name, const char *val, probe_args *a, raw_args *raw,
                        probe_err *err)
{
    uint64_t u;
    if (strcmp(name, "--alg") == 0)
        raw->alg = val;
    else if (strcmp(name, "--op") == 0)
        raw->op = val;
    else if (strcmp(name, "--size") == 0)
        raw->size = val;
    else if (strcmp(name, "--msg-hex") == 0)
        raw->msg_hex = val;
    else if (strcmp(name, "--key-cache") == 0) {
        if (val[0] == '\0')
            return err_input(err, "--key-cache must not be empty");
        a->key_cache = val;
    } else if (strcmp(name, "--hash") == 0) {
        if (strcmp(val, "sha256") != 0 && strcmp(val, "sha1") != 0)
            return err_input(err, "unknown --hash '%s'; known: sha256, sha1", val);
        a->hash = val;
    } else if (strcmp(name, "--n") == 0) {
        if (!parse_positive(name, val, &a->n, err))
            return 0;
    } else if (strcmp(name, "--warmup") == 0) {
        if (!parse_u64(name, val, &a->warmup, err))
            return 0;
    } else if (strcmp(name, "--seed") == 0) {
        if (!parse_u64(name, val, &u, err))
            return 0;
        a->seed = u;
    } else if (strcmp(name, "--min-sample-us") == 0) {
        if (!parse_seconds(name, val, 1, &a->min_sample_us, err))
            return 0;
    } else if (strcmp(name, "--max-seconds") == 0) {
        if (!parse_seconds(name, val, 0, &a->max_seconds, err))
            return 0;
    } else
        return err_input(err, "unknown option '%s'", name);
    return 1;
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

int args_option_value(int argc, char **argv, int *i, char *name, size_t name_len, const char **val,
                      probe_err *err)
{
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    if (eq != NULL) {
        size_t nlen = (size_t)(eq - arg);
        if (nlen >= name_len)
            return err_input(err, "unknown option '%.60s...'", arg);
        memcpy(name, arg, nlen);
        name[nlen] = '\0';
        *val = eq + 1;
        return 1;
    }
    snprintf(name, name_len, "%s", arg);
    if (*i + 1 >= argc)
        return err_input(err, "missing value for %s", name);
    *val = argv[++*i];
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
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            a->cmd = CMD_HELP;
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0)
            return err_input(err, "unexpected argument '%s'", arg);
        if (strcmp(arg, "--prehashed") == 0) {
            if (a->cmd != CMD_SPEED)
                return err_input(err, "--prehashed applies to speed only");
            a->prehashed = 1;
            continue;
        }
        /* --name VALUE or --name=VALUE */
        char name[64];
        const char *val;
        if (!args_option_value(argc, argv, &i, name, sizeof(name), &val, err))
            return 0;
        if (!option_allowed(a->cmd, name))
            return err_input(err, "option %s is not accepted by %s", name, cmd);
        if (!apply_option(name, val, a, &raw, err))
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
        if (!parse_positive("--size", raw.size, &v, err))
            return 0;
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
