/* chaskey: see chaskey.h. Byte-wise little-endian loads and stores: no alignment assumptions. */
#include "chaskey.h"

#define ROTL(x, b) ((uint32_t)(((x) << (b)) | ((x) >> (32 - (b)))))

static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void store_le32(uint8_t *p, uint32_t x)
{
    p[0] = (uint8_t)x;
    p[1] = (uint8_t)(x >> 8);
    p[2] = (uint8_t)(x >> 16);
    p[3] = (uint8_t)(x >> 24);
}

/* The Chaskey round: two parallel half-rounds of add-rotate-xor on (v0,v1) and (v2,v3). */
static void permute(uint32_t v[4], unsigned rounds)
{
    uint32_t v0 = v[0], v1 = v[1], v2 = v[2], v3 = v[3];
    for (unsigned r = 0; r < rounds; r++) {
        v0 += v1; v1 = ROTL(v1, 5);  v1 ^= v0; v0 = ROTL(v0, 16);
        v2 += v3; v3 = ROTL(v3, 8);  v3 ^= v2;
        v0 += v3; v3 = ROTL(v3, 13); v3 ^= v0;
        v2 += v1; v1 = ROTL(v1, 7);  v1 ^= v2; v2 = ROTL(v2, 16);
    }
    v[0] = v0; v[1] = v1; v[2] = v2; v[3] = v3;
}

/* Multiplication by x in GF(2^128) with the polynomial x^128 + x^7 + x^2 + x + 1: word 0 holds
 * the least significant bits, so the carry out of word 3 folds back as 0x87 into word 0. */
static void times_two(uint32_t out[4], const uint32_t in[4])
{
    uint32_t carry = (uint32_t)0 - (in[3] >> 31); /* all ones when the top bit is set */
    out[3] = (in[3] << 1) | (in[2] >> 31);
    out[2] = (in[2] << 1) | (in[1] >> 31);
    out[1] = (in[1] << 1) | (in[0] >> 31);
    out[0] = (in[0] << 1) ^ (carry & 0x87u);
}

static void absorb(uint32_t v[4], const uint8_t block[16], unsigned rounds)
{
    for (size_t i = 0; i < 4; i++)
        v[i] ^= load_le32(block + 4 * i);
    permute(v, rounds);
}

static void wipe(void *p, size_t n)
{
    volatile uint8_t *b = p;
    while (n--)
        *b++ = 0;
}

static void wipe_words(uint32_t *p, unsigned n)
{
    volatile uint32_t *w = p;
    while (n--)
        *w++ = 0;
}

/* Field by field, words as words: the context is wiped after every tag, so this is on the
 * per-message path of short (CAN-sized) messages. */
static void wipe_ctx(chaskey_ctx *c)
{
    wipe_words(c->k1, 4);
    wipe_words(c->k2, 4);
    wipe_words(c->v, 4);
    wipe(c->buf, sizeof(c->buf));
    *(volatile unsigned *)&c->buf_len = 0;
    *(volatile unsigned *)&c->rounds = 0;
}

int chaskey_init(chaskey_ctx *c, const uint8_t key[CHASKEY_KEY_BYTES], unsigned rounds)
{
    if (rounds != 8 && rounds != 12)
        return -1;
    uint32_t k[4];
    for (size_t i = 0; i < 4; i++)
        k[i] = load_le32(key + 4 * i);
    times_two(c->k1, k);
    times_two(c->k2, c->k1);
    for (int i = 0; i < 4; i++)
        c->v[i] = k[i];
    c->buf_len = 0;
    c->rounds = rounds;
    wipe_words(k, 4);
    return 0;
}

void chaskey_update(chaskey_ctx *c, const uint8_t *msg, size_t len)
{
    if (len == 0)
        return;
    /* Top up a partial (or full, held-back) buffer; process it only once more input follows. */
    if (c->buf_len > 0) {
        while (c->buf_len < CHASKEY_BLOCK_BYTES && len > 0) {
            c->buf[c->buf_len++] = *msg++;
            len--;
        }
        if (len == 0)
            return;
        absorb(c->v, c->buf, c->rounds);
        c->buf_len = 0;
    }
    /* Whole blocks straight from the input, keeping the last (possibly full) one back. */
    while (len > CHASKEY_BLOCK_BYTES) {
        absorb(c->v, msg, c->rounds);
        msg += CHASKEY_BLOCK_BYTES;
        len -= CHASKEY_BLOCK_BYTES;
    }
    for (size_t i = 0; i < len; i++)
        c->buf[i] = msg[i];
    c->buf_len = (unsigned)len;
}

int chaskey_final(chaskey_ctx *c, uint8_t *tag, size_t tag_len)
{
    int rc = -1;
    if (tag_len >= CHASKEY_TAG_MIN && tag_len <= CHASKEY_TAG_MAX) {
        const uint32_t *l;
        if (c->buf_len == CHASKEY_BLOCK_BYTES) {
            l = c->k1; /* a complete last block */
        } else {
            l = c->k2; /* empty message or a partial block: pad with 0x01 then zeros */
            c->buf[c->buf_len] = 0x01;
            for (unsigned i = c->buf_len + 1; i < CHASKEY_BLOCK_BYTES; i++)
                c->buf[i] = 0;
        }
        for (size_t i = 0; i < 4; i++)
            c->v[i] ^= load_le32(c->buf + 4 * i) ^ l[i];
        permute(c->v, c->rounds);
        uint8_t full[CHASKEY_TAG_MAX];
        for (size_t i = 0; i < 4; i++)
            store_le32(full + 4 * i, c->v[i] ^ l[i]);
        for (size_t i = 0; i < tag_len; i++)
            tag[i] = full[i];
        wipe(full, sizeof(full));
        rc = 0;
    }
    wipe_ctx(c);
    return rc;
}

int chaskey_mac(uint8_t *tag, size_t tag_len, const uint8_t *msg, size_t len,
                const uint8_t key[CHASKEY_KEY_BYTES], unsigned rounds)
{
    chaskey_ctx c;
    if (chaskey_init(&c, key, rounds) != 0)
        return -1;
    chaskey_update(&c, msg, len);
    return chaskey_final(&c, tag, tag_len);
}
