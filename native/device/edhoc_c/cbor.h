/* The few CBOR (RFC 8949) pieces EDHOC and OSCORE need: definite-length heads, byte strings, small
 * integers, and a reader that walks one item at a time. No allocation; lengths up to 2^32 - 1. */
#ifndef SP_EDHOC_CBOR_H
#define SP_EDHOC_CBOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { CB_UINT = 0, CB_NINT = 1, CB_BSTR = 2, CB_TSTR = 3, CB_ARRAY = 4, CB_MAP = 5, CB_SIMPLE = 7 };

/* a head: major type and argument; returns the bytes written */
static inline size_t cb_head(uint8_t *p, unsigned major, uint32_t v)
{
    uint8_t m = (uint8_t)(major << 5);
    if (v < 24) { p[0] = m | (uint8_t)v; return 1; }
    if (v < 0x100) { p[0] = m | 24; p[1] = (uint8_t)v; return 2; }
    if (v < 0x10000) { p[0] = m | 25; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)v; return 3; }
    p[0] = m | 26; p[1] = (uint8_t)(v >> 24); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 8); p[4] = (uint8_t)v;
    return 5;
}

static inline size_t cb_bstr(uint8_t *p, const uint8_t *d, size_t n)
{
    size_t h = cb_head(p, CB_BSTR, (uint32_t)n);
    if (n)
        memmove(p + h, d, n);
    return h + n;
}

static inline size_t cb_int(uint8_t *p, int32_t v)
{
    return v >= 0 ? cb_head(p, CB_UINT, (uint32_t)v) : cb_head(p, CB_NINT, (uint32_t)(-1 - v));
}

/* one item's head at *pos: major type, argument (a string's length, an integer's value), and for
 * strings the offset of their content; *pos moves past the head (not the content) */
struct cb_item {
    unsigned major;
    uint32_t val;
    size_t start;   /* where the head began */
};

static inline int cb_read(const uint8_t *p, size_t len, size_t *pos, struct cb_item *it)
{
    if (*pos >= len)
        return -1;
    uint8_t b = p[*pos];
    unsigned ai = b & 31, need = ai < 24 ? 0 : ai == 24 ? 1 : ai == 25 ? 2 : ai == 26 ? 4 : 9;
    if (need == 9 || *pos + 1 + need > len)
        return -1;
    it->start = *pos;
    it->major = b >> 5;
    it->val = ai < 24 ? ai : 0;
    for (unsigned k = 0; k < need; k++)
        it->val = it->val << 8 | p[*pos + 1 + k];
    *pos += 1 + need;
    if ((it->major == CB_BSTR || it->major == CB_TSTR) && (it->val > len - *pos))
        return -1;
    return 0;
}

/* skip one whole item (nested arrays and maps included) */
static inline int cb_skip(const uint8_t *p, size_t len, size_t *pos, int depth)
{
    struct cb_item it;
    if (depth > 8 || cb_read(p, len, pos, &it))
        return -1;
    if (it.major == CB_BSTR || it.major == CB_TSTR)
        *pos += it.val;
    else if (it.major == CB_ARRAY || it.major == CB_MAP)
        for (uint32_t k = 0; k < it.val * (it.major == CB_MAP ? 2u : 1u); k++)
            if (cb_skip(p, len, pos, depth + 1))
                return -1;
    return 0;
}

#endif
