/* bench: the MAC kernels measured on a Cortex-M under QEMU. For each MAC and message length it
 * calls secperf_mark() right before and right after one tag computation with a prepared key, and
 * prints "mac <name> <op> <bytes> <tag hex>" so the host can pair each pair of marks with its row
 * and check the tag. A first empty pair measures the marks' own cost. */
#include <stddef.h>
#include <stdint.h>

#include "../chaskey.h"
#include "cmac.h"
#include "semihost.h"
#include "sha256.h"

static const size_t SIZES[] = {8, 16, 64, 256, 1024};
#define N_SIZES (sizeof(SIZES) / sizeof(SIZES[0]))
#define MAX_MSG 1024

static uint8_t msg[MAX_MSG];
static uint8_t key[32];

static void put_row(const char *name, const char *op, size_t len, const uint8_t *tag, size_t tag_len)
{
    static const char HEX[] = "0123456789abcdef";
    char line[160];
    size_t n = 0;
    const char *parts[3] = {"mac ", name, " "};
    for (int p = 0; p < 3; p++)
        for (const char *s = parts[p]; *s; s++)
            line[n++] = *s;
    for (const char *s = op; *s; s++)
        line[n++] = *s;
    line[n++] = ' ';
    char digits[12];
    int d = 0;
    do {
        digits[d++] = (char)('0' + len % 10);
        len /= 10;
    } while (len > 0);
    while (d > 0)
        line[n++] = digits[--d];
    line[n++] = ' ';
    for (size_t i = 0; i < tag_len; i++) {
        line[n++] = HEX[tag[i] >> 4];
        line[n++] = HEX[tag[i] & 15];
    }
    if (tag_len == 0)
        line[n++] = '-';
    line[n++] = '\n';
    line[n] = 0;
    sh_puts(line);
}

static void chaskey_rows(const char *name, unsigned rounds)
{
    uint8_t tag[16];
    chaskey_ctx c;
    for (size_t i = 0; i < N_SIZES; i++) {
        secperf_mark();
        chaskey_init(&c, key, rounds);
        chaskey_update(&c, msg, SIZES[i]);
        chaskey_final(&c, tag, sizeof(tag));
        secperf_mark();
        put_row(name, "mac", SIZES[i], tag, sizeof(tag));
    }
}

int main(void)
{
    for (size_t i = 0; i < MAX_MSG; i++)
        msg[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)i;

    secperf_mark();
    secperf_mark();
    put_row("marks", "none", 0, 0, 0);

    /* Chaskey keeps no key schedule beyond two subkeys: init (subkeys from the key) is inside
     * each measured tag, so its "setup" is part of every row. */
    chaskey_rows("chaskey", 8);
    chaskey_rows("chaskey-12", 12);

    static cmac_key ck;
    uint8_t tag[32];
    secperf_mark();
    cmac_setup(&ck, key);
    secperf_mark();
    put_row("aes-128-cmac", "setup", 0, 0, 0);
    for (size_t i = 0; i < N_SIZES; i++) {
        secperf_mark();
        cmac_tag(&ck, msg, SIZES[i], tag);
        secperf_mark();
        put_row("aes-128-cmac", "mac", SIZES[i], tag, 16);
    }

    static hmac_sha256_key hk;
    secperf_mark();
    hmac_sha256_setup(&hk, key, 32);
    secperf_mark();
    put_row("hmac-sha256", "setup", 0, 0, 0);
    for (size_t i = 0; i < N_SIZES; i++) {
        secperf_mark();
        hmac_sha256_tag(&hk, msg, SIZES[i], tag);
        secperf_mark();
        put_row("hmac-sha256", "mac", SIZES[i], tag, 32);
    }
    sh_puts("done\n");
    return 0;
}
