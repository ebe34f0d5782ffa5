/* bench: the MAC kernels measured on a Cortex-M under QEMU. For each MAC and message length it
 * calls secperf_mark() right before and right after one tag computation with a prepared key, and
 * prints "mac <name> <op> <bytes> <tag hex> <stack bytes>" so the host can pair each pair of marks
 * with its row and check the tag. A first empty pair measures the marks' own cost.
 * Stack: before the first mark of a row the stack below the caller is painted with a pattern,
 * after the second mark the deepest overwritten word is found (both outside the marks, so the
 * counts are unchanged); the empty pair's depth (the marks' own frames) is the baseline the host
 * subtracts. */
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

#define PAINT_WORDS 768u /* 3 KiB below the caller's frame */
#define PAINT 0xa5c35a3cu

static __attribute__((noinline)) void stack_paint(void)
{
    volatile uint32_t frame[PAINT_WORDS] __attribute__((unused));
    for (unsigned i = 0; i < PAINT_WORDS; i++)
        frame[i] = PAINT;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/* same frame as stack_paint's, read only: bytes from the deepest overwritten word to the frame's top */
static __attribute__((noinline)) unsigned stack_used(void)
{
    volatile uint32_t frame[PAINT_WORDS];
    unsigned i = 0;
    while (i < PAINT_WORDS && frame[i] == PAINT)
        i++;
    return (PAINT_WORDS - i) * 4u;
}
#pragma GCC diagnostic pop
static uint8_t key[32];

static void put_num(char *line, size_t *n, size_t v)
{
    char digits[12];
    int d = 0;
    do {
        digits[d++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (d > 0)
        line[(*n)++] = digits[--d];
}

static void put_row(const char *name, const char *op, size_t len, const uint8_t *tag, size_t tag_len, unsigned stack)
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
    put_num(line, &n, len);
    line[n++] = ' ';
    for (size_t i = 0; i < tag_len; i++) {
        line[n++] = HEX[tag[i] >> 4];
        line[n++] = HEX[tag[i] & 15];
    }
    if (tag_len == 0)
        line[n++] = '-';
    line[n++] = ' ';
    put_num(line, &n, stack);
    line[n++] = '\n';
    line[n] = 0;
    sh_puts(line);
}

/* one measured region: painted stack, marks around the body, the depth it reached */
#define MEASURE(depth, body)   \
    do {                       \
        stack_paint();         \
        secperf_mark();        \
        body;                  \
        secperf_mark();        \
        (depth) = stack_used(); \
    } while (0)

static void chaskey_rows(const char *name, unsigned rounds)
{
    uint8_t tag[16];
    chaskey_ctx c;
    unsigned depth;
    for (size_t i = 0; i < N_SIZES; i++) {
        MEASURE(depth, {
            chaskey_init(&c, key, rounds);
            chaskey_update(&c, msg, SIZES[i]);
            chaskey_final(&c, tag, sizeof(tag));
        });
        put_row(name, "mac", SIZES[i], tag, sizeof(tag), depth);
    }
}

int main(void)
{
    for (size_t i = 0; i < MAX_MSG; i++)
        msg[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)i;

    unsigned depth;
    MEASURE(depth, {});
    put_row("marks", "none", 0, 0, 0, depth);

    /* Chaskey keeps no key schedule beyond two subkeys: init (subkeys from the key) is inside
     * each measured tag, so its "setup" is part of every row. */
    chaskey_rows("chaskey", 8);
    chaskey_rows("chaskey-12", 12);

    static cmac_key ck;
    uint8_t tag[32];
    MEASURE(depth, cmac_setup(&ck, key));
    put_row("aes-128-cmac", "setup", 0, 0, 0, depth);
    for (size_t i = 0; i < N_SIZES; i++) {
        MEASURE(depth, cmac_tag(&ck, msg, SIZES[i], tag));
        put_row("aes-128-cmac", "mac", SIZES[i], tag, 16, depth);
    }

    static hmac_sha256_key hk;
    MEASURE(depth, hmac_sha256_setup(&hk, key, 32));
    put_row("hmac-sha256", "setup", 0, 0, 0, depth);
    for (size_t i = 0; i < N_SIZES; i++) {
        MEASURE(depth, hmac_sha256_tag(&hk, msg, SIZES[i], tag));
        put_row("hmac-sha256", "mac", SIZES[i], tag, 32, depth);
    }
    sh_puts("done\n");
    return 0;
}
