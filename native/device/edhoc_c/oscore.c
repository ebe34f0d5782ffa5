/* OSCORE for a CoAP client (oscore.h). Section numbers are RFC 8613's; CoAP's message format is
 * RFC 7252 Section 3. Class U options (Uri-Host, Uri-Port, Proxy-Scheme) stay outside, every other
 * option is encrypted (class E); there are no class I options, so the AAD's options are empty. */
#include "oscore.h"

#include <string.h>

#include "cbor.h"

#define ALG_AEAD 10      /* AES-CCM-16-64-128 */
#define OPT_OSCORE 9
#define MAX_OPTS 16

struct opt { uint16_t num; const uint8_t *val; uint16_t len; };

struct coap {
    uint8_t hdr[4];
    const uint8_t *token;
    size_t tkl;
    struct opt opts[MAX_OPTS];
    size_t n_opts;
    const uint8_t *payload;
    size_t payload_len;
};

static int ext(const uint8_t *p, size_t len, size_t *pos, unsigned nib, uint32_t *out)
{
    if (nib < 13) { *out = nib; return 0; }
    if (nib == 13) { if (*pos + 1 > len) return -1; *out = 13u + p[*pos]; *pos += 1; return 0; }
    if (nib == 14) { if (*pos + 2 > len) return -1; *out = 269u + (p[*pos] << 8 | p[*pos + 1]); *pos += 2; return 0; }
    return -1;
}

/* options and payload from pos on */
static int parse_options(const uint8_t *p, size_t len, size_t pos, struct coap *m)
{
    uint32_t num = 0;
    m->n_opts = 0;
    m->payload = NULL;
    m->payload_len = 0;
    while (pos < len) {
        if (p[pos] == 0xff) {
            if (pos + 1 >= len)
                return -1;   /* a payload marker with no payload */
            m->payload = p + pos + 1;
            m->payload_len = len - pos - 1;
            return 0;
        }
        uint32_t delta, olen;
        unsigned b = p[pos++];
        if (ext(p, len, &pos, b >> 4, &delta) || ext(p, len, &pos, b & 15, &olen) || pos + olen > len ||
            m->n_opts == MAX_OPTS)
            return -1;
        num += delta;
        m->opts[m->n_opts++] = (struct opt){(uint16_t)num, p + pos, (uint16_t)olen};
        pos += olen;
    }
    return 0;
}

static int parse(const uint8_t *p, size_t len, struct coap *m)
{
    if (len < 4 || (p[0] >> 6) != 1 || (p[0] & 15) > 8 || 4 + (size_t)(p[0] & 15) > len)
        return -1;
    memcpy(m->hdr, p, 4);
    m->tkl = p[0] & 15;
    m->token = p + 4;
    return parse_options(p, len, 4 + m->tkl, m);
}

static size_t put_nibble_ext(uint8_t *p, uint32_t v)
{
    if (v >= 269) { p[0] = (uint8_t)((v - 269) >> 8); p[1] = (uint8_t)(v - 269); return 2; }
    if (v >= 13) { p[0] = (uint8_t)(v - 13); return 1; }
    return 0;
}

static size_t put_option(uint8_t *p, uint32_t delta, const uint8_t *val, uint32_t len)
{
    unsigned dn = delta >= 269 ? 14 : delta >= 13 ? 13 : delta, ln = len >= 269 ? 14 : len >= 13 ? 13 : len;
    size_t n = 1;
    p[0] = (uint8_t)(dn << 4 | ln);
    n += put_nibble_ext(p + n, delta);
    n += put_nibble_ext(p + n, len);
    memcpy(p + n, val, len);
    return n + len;
}

static int outer_class(uint16_t num)
{
    return num == 3 || num == 7 || num == 39;   /* Uri-Host, Uri-Port, Proxy-Scheme */
}

static int kdf(const uint8_t *secret, size_t secret_len, const uint8_t *salt, size_t salt_len, const uint8_t *id,
               size_t id_len, int iv, uint8_t *out)
{
    /* info = [id, id_context (nil), alg_aead, type ("Key" / "IV"), L] (Section 3.2.1) */
    uint8_t info[32], prk[CR_HASH_LEN];
    size_t n = cb_head(info, CB_ARRAY, 5);
    n += cb_bstr(info + n, id, id_len);
    info[n++] = 0xf6;
    n += cb_head(info + n, CB_UINT, ALG_AEAD);
    n += cb_head(info + n, CB_TSTR, iv ? 2 : 3);
    memcpy(info + n, iv ? "IV" : "Key", iv ? 2 : 3);
    n += iv ? 2 : 3;
    size_t l = iv ? CR_NONCE_LEN : CR_KEY_LEN;
    n += cb_head(info + n, CB_UINT, (uint32_t)l);
    if (cr_hkdf_extract(salt, salt_len, secret, secret_len, prk) || cr_hkdf_expand(prk, info, n, out, l))
        return -1;
    return 0;
}

int osc_derive(struct osc_ctx *c, const uint8_t *secret, size_t secret_len, const uint8_t *salt, size_t salt_len,
               const uint8_t *sid, size_t sid_len, const uint8_t *rid, size_t rid_len)
{
    if (sid_len > OSC_MAX_ID || rid_len > OSC_MAX_ID)
        return -1;
    memcpy(c->sender_id, sid, sid_len);
    memcpy(c->recipient_id, rid, rid_len);
    c->sid_len = sid_len;
    c->rid_len = rid_len;
    c->seq = 0;
    if (kdf(secret, secret_len, salt, salt_len, sid, sid_len, 0, c->sender_key) ||
        kdf(secret, secret_len, salt, salt_len, rid, rid_len, 0, c->recipient_key) ||
        kdf(secret, secret_len, salt, salt_len, NULL, 0, 1, c->common_iv))
        return -1;
    return 0;
}

static void nonce(const struct osc_ctx *c, const uint8_t *id, size_t id_len, const uint8_t *piv, size_t piv_len,
                  uint8_t out[CR_NONCE_LEN])
{
    memset(out, 0, CR_NONCE_LEN);
    out[0] = (uint8_t)id_len;
    memcpy(out + 1 + OSC_MAX_ID - id_len, id, id_len);
    memcpy(out + CR_NONCE_LEN - piv_len, piv, piv_len);
    for (int k = 0; k < CR_NONCE_LEN; k++)
        out[k] ^= c->common_iv[k];
}

/* Enc_structure ["Encrypt0", h'', external_aad = bstr([1, [alg], request_kid, request_piv, h''])] */
static size_t aad(const struct osc_ctx *c, uint8_t *out)
{
    uint8_t ext_aad[32];
    size_t n = cb_head(ext_aad, CB_ARRAY, 5);
    ext_aad[n++] = 0x01;
    n += cb_head(ext_aad + n, CB_ARRAY, 1);
    n += cb_head(ext_aad + n, CB_UINT, ALG_AEAD);
    n += cb_bstr(ext_aad + n, c->sender_id, c->sid_len);
    n += cb_bstr(ext_aad + n, c->req_piv, c->req_piv_len);
    ext_aad[n++] = 0x40;
    static const uint8_t enc0[] = {0x83, 0x68, 'E', 'n', 'c', 'r', 'y', 'p', 't', '0', 0x40};
    memcpy(out, enc0, sizeof enc0);
    return sizeof enc0 + cb_bstr(out + sizeof enc0, ext_aad, n);
}

int osc_protect_request(struct osc_ctx *c, const uint8_t *msg, size_t len, uint8_t *out, size_t cap,
                        size_t *out_len)
{
    struct coap m;
    uint8_t pt[OSC_MAX_MSG], ad[64];
    if (len > OSC_MAX_MSG || parse(msg, len, &m) || c->seq >= (1ull << 40) - 1)
        return -1;
    /* the plaintext: the request's code, its class E options, its payload (Section 5.3) */
    size_t n = 0;
    uint32_t last = 0;
    pt[n++] = m.hdr[1];
    for (size_t k = 0; k < m.n_opts; k++)
        if (!outer_class(m.opts[k].num)) {
            n += put_option(pt + n, m.opts[k].num - last, m.opts[k].val, m.opts[k].len);
            last = m.opts[k].num;
        }
    if (m.payload) {
        pt[n++] = 0xff;
        memcpy(pt + n, m.payload, m.payload_len);
        n += m.payload_len;
    }
    /* Partial IV: the sequence number in as few bytes as it needs, at least one (Section 6.1) */
    uint64_t s = c->seq++;
    c->req_piv_len = 0;
    do {
        c->req_piv_len++;
    } while (c->req_piv_len < 5 && (s >> (8 * c->req_piv_len)));
    for (size_t k = 0; k < c->req_piv_len; k++)
        c->req_piv[k] = (uint8_t)(s >> (8 * (c->req_piv_len - 1 - k)));
    nonce(c, c->sender_id, c->sid_len, c->req_piv, c->req_piv_len, c->req_nonce);
    size_t ad_len = aad(c, ad);
    /* the outer message: POST (a GET's outer code, Section 4.2), class U options and the OSCORE option */
    uint8_t optv[1 + 5 + OSC_MAX_ID];
    size_t ov = 0;
    optv[ov++] = (uint8_t)(0x08 | c->req_piv_len);   /* k: kid present; n: Partial IV length */
    memcpy(optv + ov, c->req_piv, c->req_piv_len);
    ov += c->req_piv_len;
    memcpy(optv + ov, c->sender_id, c->sid_len);
    ov += c->sid_len;
    if (cap < 4 + m.tkl + len + ov + 8 + CR_TAG_LEN + 4)
        return -1;
    size_t o = 0;
    memcpy(out, m.hdr, 4);
    out[1] = m.hdr[1] == 0x05 ? 0x05 : 0x02;   /* FETCH stays FETCH, everything else is POST */
    o = 4;
    memcpy(out + o, m.token, m.tkl);
    o += m.tkl;
    last = 0;
    int placed = 0;
    for (size_t k = 0; k <= m.n_opts; k++) {
        uint16_t num = k < m.n_opts ? m.opts[k].num : 0xffff;
        if (!placed && num > OPT_OSCORE) {
            o += put_option(out + o, OPT_OSCORE - last, optv, (uint32_t)ov);
            last = OPT_OSCORE;
            placed = 1;
        }
        if (k < m.n_opts && outer_class(num)) {
            o += put_option(out + o, num - last, m.opts[k].val, m.opts[k].len);
            last = num;
        }
    }
    out[o++] = 0xff;
    if (cr_aead_encrypt(c->sender_key, c->req_nonce, ad, ad_len, pt, n, out + o))
        return -1;
    *out_len = o + n + CR_TAG_LEN;
    return 0;
}

int osc_unprotect_response(struct osc_ctx *c, const uint8_t *msg, size_t len, uint8_t *buf, size_t cap,
                           uint8_t *code, const uint8_t **payload, size_t *payload_len)
{
    struct coap m, inner;
    uint8_t ad[64], nn[CR_NONCE_LEN];
    if (parse(msg, len, &m) || !m.payload || m.payload_len < CR_TAG_LEN || m.payload_len - CR_TAG_LEN + 1 > cap)
        return -1;
    const struct opt *os = NULL;
    for (size_t k = 0; k < m.n_opts; k++)
        if (m.opts[k].num == OPT_OSCORE)
            os = &m.opts[k];
    if (!os)
        return -2;   /* not an OSCORE response */
    memcpy(nn, c->req_nonce, CR_NONCE_LEN);
    if (os->len > 0) {   /* a Partial IV of the server's own: its nonce (Section 8.3) */
        size_t piv_len = os->val[0] & 7;
        if (piv_len > 5 || 1u + piv_len > os->len)
            return -1;
        if (piv_len)
            nonce(c, c->recipient_id, c->rid_len, os->val + 1, piv_len, nn);
    }
    size_t ad_len = aad(c, ad);
    size_t n = m.payload_len - CR_TAG_LEN;
    if (cr_aead_decrypt(c->recipient_key, nn, ad, ad_len, m.payload, m.payload_len, buf))
        return -3;   /* the tag does not verify */
    if (n < 1)
        return -1;
    *code = buf[0];
    if (parse_options(buf, n, 1, &inner))
        return -1;
    *payload = inner.payload;
    *payload_len = inner.payload_len;
    return 0;
}
