/* sp-edhoc: the EDHOC + OSCORE initiator as a guest program of `secperf device`. The responder (the
 * host's lakers and aiocoap's OSCORE, measure/edhoc_device_peer.py) answers over stdin/stdout, one
 * line per message, so the emulated process runs the initiator's work only.
 *
 *   sp-edhoc run KEYFILE N      N handshakes, each followed by one OSCORE request and its response
 *   sp-edhoc oscore-vector      OSCORE alone on given inputs (RFC 8613 Appendix C's test vectors)
 *   sp-edhoc --offers           what this build does, as one JSON line
 *
 * KEYFILE (mode 0600; the host writes it): one "name HEX" per line: i (the static private key),
 * cred_i, cred_r (CCS credentials), and optionally suites (SUITES_I as encoded, default 02), c_i
 * (default 37: -24), by_value (1: ID_CRED_I by value), x (a fixed ephemeral key: test vectors only),
 * trace (1: print the key schedule's intermediate values: test vectors only).
 *
 * Lines out: "m1 HEX", "m3 HEX", "req HEX", then one JSON line per handshake; lines in: "m2 HEX",
 * "resp HEX" ("stop" ends the run). Markers (marker.h): HS_BEGIN/HS_END around a handshake and its
 * OSCORE exchange, OP_BEGIN/OP_END around each initiator step (ids below); the time spent waiting
 * for the host is outside every step. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc.h"
#include "marker.h"
#include "oscore.h"

enum { STEP_M1 = 1, STEP_M2 = 2, STEP_M3 = 3, STEP_EXPORT = 4, STEP_PROTECT = 5, STEP_UNPROTECT = 6 };

#define LINE (2 * OSC_MAX_MSG + 64)

static int unhex(const char *h, uint8_t *out, size_t cap, size_t *len)
{
    size_t n = 0;
    while (h[0] && h[0] != '\n' && h[0] != '\r' && h[0] != ' ') {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = h[k];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
            else return -1;
        }
        if (n == cap)
            return -1;
        out[n++] = (uint8_t)v;
        h += 2;
    }
    *len = n;
    return 0;
}

static void put_hex(const char *name, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    fputs(name, stdout);
    fputc(' ', stdout);
    for (size_t k = 0; k < n; k++) {
        fputc(digits[p[k] >> 4], stdout);
        fputc(digits[p[k] & 15], stdout);
    }
    fputc('\n', stdout);
    fflush(stdout);
}

/* "name HEX" from the host; -1 on "stop", end of input or a malformed line */
static int get_hex(const char *name, uint8_t *out, size_t cap, size_t *len)
{
    char line[LINE];
    size_t nl = strlen(name);
    if (!fgets(line, sizeof line, stdin) || strncmp(line, name, nl) != 0 || line[nl] != ' ')
        return -1;
    return unhex(line + nl + 1, out, cap, len);
}

struct keys {
    struct ed_initiator ini;
    uint8_t x[CR_ECC_LEN];
    int trace;
};

/* s as a decimal number in [0, max]: digits only, no sign or trailing characters (a line end of a
 * file's line allowed); -1 when not */
static int parse_count(const char *s, long max, long *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || v > max || end[strspn(end, "\r\n")] != '\0')
        return -1;
    *out = v;
    return 0;
}

static int load_keys(const char *path, struct keys *k)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[LINE];
    size_t n;
    long num = 0;
    unsigned have = 0;
    memset(k, 0, sizeof *k);
    k->ini.suites[0] = 0x02;
    k->ini.suites_len = 1;
    k->ini.c_i[0] = 0x37;
    k->ini.c_i_len = 1;
    while (fgets(line, sizeof line, f)) {
        char *v = strchr(line, ' ');
        if (!v)
            continue;
        *v++ = 0;
        int r = 0;
        if (!strcmp(line, "i")) { r = unhex(v, k->ini.i, CR_ECC_LEN, &n) || n != CR_ECC_LEN; have |= 1; }
        else if (!strcmp(line, "cred_i")) { r = unhex(v, k->ini.cred_i.ccs, ED_MAX_CRED, &k->ini.cred_i.ccs_len); have |= 2; }
        else if (!strcmp(line, "cred_r")) { r = unhex(v, k->ini.cred_r.ccs, ED_MAX_CRED, &k->ini.cred_r.ccs_len); have |= 4; }
        else if (!strcmp(line, "suites")) r = unhex(v, k->ini.suites, sizeof k->ini.suites, &k->ini.suites_len);
        else if (!strcmp(line, "c_i")) r = unhex(v, k->ini.c_i, sizeof k->ini.c_i, &k->ini.c_i_len);
        else if (!strcmp(line, "by_value")) { r = parse_count(v, 1, &num); k->ini.by_value = (int)num; }
        else if (!strcmp(line, "trace")) { r = parse_count(v, INT_MAX, &num); k->trace = (int)num; }
        else if (!strcmp(line, "x")) { r = unhex(v, k->x, CR_ECC_LEN, &n) || n != CR_ECC_LEN; k->ini.fixed_x = k->x; }
        if (r) {
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    if (have != 7 || ed_cred_parse(&k->ini.cred_i) || ed_cred_parse(&k->ini.cred_r))
        return -1;
    return 0;
}

/* an EDHOC connection identifier as an OSCORE ID (RFC 9528 Section 3.3.3): a one-byte integer is
 * the byte of its encoding, a byte string its content */
static size_t conn_id(const uint8_t *enc, size_t len, const uint8_t **out)
{
    if (len == 1) {
        *out = enc;
        return 1;
    }
    *out = enc + 1;   /* a byte string of at most ED_MAX_ID bytes: a one-byte head */
    return len - 1;
}

static void fail(int i, const char *stage, int code)
{
    sp_mark(SP_MARK_HS_END, 0);
    printf("{\"i\": %d, \"ok\": false, \"stage\": \"%s\", \"code\": %d}\n", i, stage, code);
    fflush(stdout);
}

static int run(const char *keyfile, int n)
{
    static struct keys k;
    if (load_keys(keyfile, &k)) {
        fprintf(stderr, "sp-edhoc: the key file %s is missing, unreadable or incomplete (i, cred_i, cred_r)\n", keyfile);
        return 2;
    }
    if (cr_init(0x5eed0001u)) {
        fprintf(stderr, "sp-edhoc: the crypto library did not initialise\n");
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < n; i++) {
        static uint8_t m1[ED_MAX_MSG], m2[ED_MAX_MSG], m3[ED_MAX_MSG], req[OSC_MAX_MSG], prot[OSC_MAX_MSG],
            resp[OSC_MAX_MSG], buf[OSC_MAX_MSG];
        size_t l1, l2, l3, lq, lp, lr;
        struct ed_initiator s = k.ini;
        struct osc_ctx oc;
        int r;
        sp_mark(SP_MARK_HS_BEGIN, (unsigned)i);

        sp_mark(SP_MARK_OP_BEGIN, STEP_M1);
        r = ed_message_1(&s, m1, sizeof m1, &l1);
        sp_mark(SP_MARK_OP_END, STEP_M1);
        if (r) { fail(i, "message_1", r); failed++; continue; }
        put_hex("m1", m1, l1);
        if (get_hex("m2", m2, sizeof m2, &l2)) { fail(i, "message_2 (none from the responder)", 0); return 1; }

        sp_mark(SP_MARK_OP_BEGIN, STEP_M2);
        r = ed_process_message_2(&s, m2, l2);
        sp_mark(SP_MARK_OP_END, STEP_M2);
        if (r) { fail(i, "message_2", r); put_hex("m3", m3, 0); failed++; continue; }

        sp_mark(SP_MARK_OP_BEGIN, STEP_M3);
        r = ed_message_3(&s, m3, sizeof m3, &l3);
        sp_mark(SP_MARK_OP_END, STEP_M3);
        if (r) { fail(i, "message_3", r); put_hex("m3", m3, 0); failed++; continue; }
        put_hex("m3", m3, l3);

        /* OSCORE: master secret and salt from the exporter, then the security context (RFC 9528
         * Appendix A.1: the initiator's Sender ID is C_R, its Recipient ID C_I) */
        uint8_t secret[16], salt[8];
        const uint8_t *sid, *rid;
        size_t sid_len = conn_id(s.c_r, s.c_r_len, &sid), rid_len = conn_id(s.c_i, s.c_i_len, &rid);
        sp_mark(SP_MARK_OP_BEGIN, STEP_EXPORT);
        r = ed_exporter(&s, 0, NULL, 0, secret, sizeof secret) || ed_exporter(&s, 1, NULL, 0, salt, sizeof salt) ||
            osc_derive(&oc, secret, sizeof secret, salt, sizeof salt, sid, sid_len, rid, rid_len);
        sp_mark(SP_MARK_OP_END, STEP_EXPORT);
        if (k.trace) {
            put_hex("trace th_2", s.th_2, CR_HASH_LEN);
            put_hex("trace prk_2e", s.prk_2e, CR_HASH_LEN);
            put_hex("trace prk_3e2m", s.prk_3e2m, CR_HASH_LEN);
            put_hex("trace th_3", s.th_3, CR_HASH_LEN);
            put_hex("trace prk_4e3m", s.prk_4e3m, CR_HASH_LEN);
            put_hex("trace th_4", s.th_4, CR_HASH_LEN);
            put_hex("trace prk_out", s.prk_out, CR_HASH_LEN);
            put_hex("trace master_secret", secret, sizeof secret);
            put_hex("trace master_salt", salt, sizeof salt);
        }
        if (r) { fail(i, "oscore_export", r); put_hex("req", req, 0); failed++; continue; }

        /* the application's request, GET /temp (CON, a 2-byte token), before protection */
        lq = 0;
        req[lq++] = 0x42;
        req[lq++] = 0x01;
        req[lq++] = (uint8_t)(i >> 8);
        req[lq++] = (uint8_t)i;
        req[lq++] = 0x5a;
        req[lq++] = (uint8_t)i;
        req[lq++] = 0xb4;   /* Uri-Path (11), 4 bytes */
        static const uint8_t path[4] = {'t', 'e', 'm', 'p'};
        memcpy(req + lq, path, sizeof path);
        lq += sizeof path;
        sp_mark(SP_MARK_OP_BEGIN, STEP_PROTECT);
        r = osc_protect_request(&oc, req, lq, prot, sizeof prot, &lp);
        sp_mark(SP_MARK_OP_END, STEP_PROTECT);
        if (r) { fail(i, "oscore_protect", r); put_hex("req", req, 0); failed++; continue; }
        put_hex("req", prot, lp);
        if (get_hex("resp", resp, sizeof resp, &lr)) { fail(i, "oscore response (none from the responder)", 0); return 1; }

        uint8_t code = 0;
        const uint8_t *payload = NULL;
        size_t payload_len = 0;
        sp_mark(SP_MARK_OP_BEGIN, STEP_UNPROTECT);
        r = osc_unprotect_response(&oc, resp, lr, buf, sizeof buf, &code, &payload, &payload_len);
        sp_mark(SP_MARK_OP_END, STEP_UNPROTECT);
        if (r || code != 0x45) { fail(i, "oscore_unprotect", r ? r : code); failed++; continue; }
        sp_mark(SP_MARK_HS_END, 1);
        printf("{\"i\": %d, \"ok\": true, \"message_1\": %zu, \"message_2\": %zu, \"message_3\": %zu, "
               "\"request\": %zu, \"response\": %zu, \"payload\": \"%.*s\"}\n", i, l1, l2, l3, lp, lr,
               (int)(payload_len < 64 ? payload_len : 64), payload ? (const char *)payload : "");
        fflush(stdout);
    }
    return failed ? 1 : 0;
}

/* OSCORE alone: "secret", "salt", "sid", "rid" (hex), "seq" (decimal), "request" (hex) on stdin */
static int oscore_vector(void)
{
    uint8_t secret[64], salt[64], sid[OSC_MAX_ID], rid[OSC_MAX_ID], req[OSC_MAX_MSG], out[OSC_MAX_MSG];
    size_t ls, lt, li, lr, lq, lo;
    char line[LINE];
    struct osc_ctx c;
    if (cr_init(1) || get_hex("secret", secret, sizeof secret, &ls) || get_hex("salt", salt, sizeof salt, &lt) ||
        get_hex("sid", sid, sizeof sid, &li) || get_hex("rid", rid, sizeof rid, &lr) ||
        !fgets(line, sizeof line, stdin) || strncmp(line, "seq ", 4) != 0 || get_hex("request", req, sizeof req, &lq)) {
        fprintf(stderr, "sp-edhoc oscore-vector: give secret, salt, sid, rid, seq and request lines\n");
        return 2;
    }
    if (osc_derive(&c, secret, ls, salt, lt, sid, li, rid, lr))
        return 1;
    c.seq = strtoull(line + 4, NULL, 10);
    put_hex("sender_key", c.sender_key, CR_KEY_LEN);
    put_hex("recipient_key", c.recipient_key, CR_KEY_LEN);
    put_hex("common_iv", c.common_iv, CR_NONCE_LEN);
    if (osc_protect_request(&c, req, lq, out, sizeof out, &lo))
        return 1;
    put_hex("protected", out, lo);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--offers")) {
        printf("{\"library\": \"%s\", \"implementation\": \"secperf EDHOC initiator (C)\", "
               "\"variants\": [\"m3-kid\", \"m3-value\"], \"suites\": [2], \"steps\": [\"message_1\", \"message_2\", "
               "\"message_3\", \"oscore_export\", \"oscore_protect\", \"oscore_unprotect\"]}\n", cr_library());
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "oscore-vector"))
        return oscore_vector();
    long n = 0;
    if (argc == 4 && !strcmp(argv[1], "run") && parse_count(argv[3], INT_MAX, &n) == 0)
        return run(argv[2], (int)n);
    fprintf(stderr, "usage: sp-edhoc run KEYFILE N | oscore-vector | --offers\n");
    return 2;
}
