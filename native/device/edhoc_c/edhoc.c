/* EDHOC initiator, method 3, cipher suite 2 (edhoc.h). Section numbers are RFC 9528's.
 *
 * Where the work falls: message_1 makes the ephemeral key pair; processing message_2 derives G_Y's
 * y (it arrives as its x-coordinate) and does the two ECDHs that involve the responder's keys (G_XY
 * for PRK_2e, G_RX for PRK_3e2m), decrypts
 * PLAINTEXT_2, checks MAC_2 and computes TH_3; message_3 does the third ECDH (G_IY, the initiator's
 * static key with G_Y), MAC_3, the AEAD of PLAINTEXT_3, TH_4, PRK_out and PRK_exporter. */
#include "edhoc.h"

#include <string.h>

#include "cbor.h"

#define MAC_LEN 8   /* EDHOC MAC length of suite 2 */
#define SCRATCH 640
#define MAX_PT2 320   /* PLAINTEXT_2 (C_R, ID_CRED_R by value at most, MAC_2) */

/* EDHOC-KDF(PRK, label, context, length) = HKDF-Expand(PRK, info, length), Section 4.1.2 */
static int kdf(const uint8_t prk[CR_HASH_LEN], uint32_t label, const uint8_t *ctx, size_t ctx_len, uint8_t *out,
               size_t len)
{
    uint8_t info[SCRATCH];
    if (ctx_len + 16 > sizeof info)
        return ED_ERR_SPACE;
    size_t n = cb_head(info, CB_UINT, label);
    n += cb_bstr(info + n, ctx, ctx_len);
    n += cb_head(info + n, CB_UINT, (uint32_t)len);
    return cr_hkdf_expand(prk, info, n, out, len) ? ED_ERR_CRYPTO : 0;
}

/* H(bstr(th), a, b): the transcript hashes TH_3 and TH_4 (Sections 5.3.2, 5.4.2) */
static int transcript(const uint8_t th[CR_HASH_LEN], const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len,
                      uint8_t out[CR_HASH_LEN])
{
    uint8_t buf[SCRATCH];
    if (2 + CR_HASH_LEN + a_len + b_len > sizeof buf)
        return ED_ERR_SPACE;
    size_t n = cb_bstr(buf, th, CR_HASH_LEN);
    memcpy(buf + n, a, a_len);
    n += a_len;
    memcpy(buf + n, b, b_len);
    n += b_len;
    return cr_sha256(buf, n, out) ? ED_ERR_CRYPTO : 0;
}

static int walk_cred(struct ed_cred *c, const uint8_t *p, size_t len, size_t *pos, int depth, unsigned *found)
{
    struct cb_item m, k, v;
    if (depth > 4 || cb_read(p, len, pos, &m) || m.major != CB_MAP)
        return -1;
    for (uint32_t e = 0; e < m.val; e++) {
        if (cb_read(p, len, pos, &k) || (k.major != CB_UINT && k.major != CB_NINT))
            return -1;
        int32_t key = k.major == CB_UINT ? (int32_t)k.val : -1 - (int32_t)k.val;
        size_t at = *pos;
        if (cb_read(p, len, pos, &v))
            return -1;
        if (v.major == CB_MAP) {
            *pos = at;
            if (walk_cred(c, p, len, pos, depth + 1, found))
                return -1;
            continue;
        }
        if (v.major == CB_BSTR && key == 2 && v.val <= ED_MAX_ID) {
            memcpy(c->kid, p + *pos, v.val);
            c->kid_len = v.val;
            *found |= 1;
        } else if (v.major == CB_BSTR && (key == -2 || key == -3) && v.val == CR_ECC_LEN) {
            memcpy(key == -2 ? c->x : c->y, p + *pos, CR_ECC_LEN);
            *found |= key == -2 ? 2 : 4;
        }
        *pos = at;
        if (cb_skip(p, len, pos, depth))
            return -1;
    }
    return 0;
}

int ed_cred_parse(struct ed_cred *c)
{
    size_t pos = 0;
    unsigned found = 0;
    if (walk_cred(c, c->ccs, c->ccs_len, &pos, 0, &found) || pos != c->ccs_len)
        return -1;
    return found == 7 ? 0 : -1;
}

/* ID_CRED_x by kid: the map {4: kid} (in MAC contexts) and its compact form (in plaintexts):
 * a one-byte kid that is itself a one-byte CBOR integer goes as that integer, any other as a bstr */
static size_t id_cred_map(uint8_t *p, const struct ed_cred *c, int by_value)
{
    p[0] = 0xa1;
    if (by_value) {
        p[1] = 0x0e;   /* 14: kccs */
        memcpy(p + 2, c->ccs, c->ccs_len);
        return 2 + c->ccs_len;
    }
    p[1] = 0x04;
    return 2 + cb_bstr(p + 2, c->kid, c->kid_len);
}

static size_t id_cred_compact(uint8_t *p, const struct ed_cred *c, int by_value)
{
    if (by_value)
        return id_cred_map(p, c, 1);
    if (c->kid_len == 1 && (c->kid[0] <= 0x17 || (c->kid[0] >= 0x20 && c->kid[0] <= 0x37))) {
        p[0] = c->kid[0];
        return 1;
    }
    return cb_bstr(p, c->kid, c->kid_len);
}

int ed_message_1(struct ed_initiator *s, uint8_t *out, size_t cap, size_t *len)
{
    if (cap < 3 + s->suites_len + CR_ECC_LEN + s->c_i_len)
        return ED_ERR_SPACE;
    if (cr_keygen(s->fixed_x, s->x, s->g_x))
        return ED_ERR_CRYPTO;
    size_t n = cb_head(out, CB_UINT, 3);   /* METHOD */
    memcpy(out + n, s->suites, s->suites_len);
    n += s->suites_len;
    n += cb_bstr(out + n, s->g_x, CR_ECC_LEN);
    memcpy(out + n, s->c_i, s->c_i_len);
    n += s->c_i_len;
    *len = n;
    return cr_sha256(out, n, s->h_m1) ? ED_ERR_CRYPTO : 0;
}

int ed_process_message_2(struct ed_initiator *s, const uint8_t *m2, size_t len)
{
    struct cb_item it;
    size_t pos = 0;
    if (cb_read(m2, len, &pos, &it) || it.major != CB_BSTR || pos + it.val != len || it.val <= CR_ECC_LEN ||
        it.val - CR_ECC_LEN > MAX_PT2)
        return ED_ERR_M2_FORMAT;
    const uint8_t *ct = m2 + pos + CR_ECC_LEN;
    size_t ct_len = it.val - CR_ECC_LEN;
    memcpy(s->g_y, m2 + pos, CR_ECC_LEN);

    /* TH_2 = H(G_Y, H(message_1)); PRK_2e = HKDF-Extract(TH_2, G_XY) (Sections 5.3.2, 4.1.1.1) */
    uint8_t buf[SCRATCH], secret[CR_ECC_LEN];
    size_t n = cb_bstr(buf, s->g_y, CR_ECC_LEN);
    n += cb_bstr(buf + n, s->h_m1, CR_HASH_LEN);
    if (cr_sha256(buf, n, s->th_2) || cr_derive_y(s->g_y, s->g_y_y) || cr_ecdh(s->x, s->g_y, s->g_y_y, secret) ||
        cr_hkdf_extract(s->th_2, CR_HASH_LEN, secret, CR_ECC_LEN, s->prk_2e))
        return ED_ERR_CRYPTO;

    /* PLAINTEXT_2 = CIPHERTEXT_2 XOR KEYSTREAM_2 */
    uint8_t pt[MAX_PT2];
    int r = kdf(s->prk_2e, 0, s->th_2, CR_HASH_LEN, pt, ct_len);
    if (r)
        return r;
    for (size_t k = 0; k < ct_len; k++)
        pt[k] ^= ct[k];

    /* ( C_R, ID_CRED_R, Signature_or_MAC_2 ) */
    pos = 0;
    if (cb_read(pt, ct_len, &pos, &it))
        return ED_ERR_M2_FORMAT;
    if (it.major == CB_BSTR)
        pos += it.val;
    else if ((it.major != CB_UINT && it.major != CB_NINT) || it.val > 23)
        return ED_ERR_M2_FORMAT;
    if (pos - it.start > sizeof s->c_r)
        return ED_ERR_M2_FORMAT;
    memcpy(s->c_r, pt + it.start, pos - it.start);
    s->c_r_len = pos - it.start;

    uint8_t id_map[ED_MAX_CRED + 4];
    size_t id_len;
    size_t at = pos;
    if (cb_read(pt, ct_len, &pos, &it))
        return ED_ERR_M2_FORMAT;
    if (it.major == CB_MAP) {   /* by value: {14: CCS}, which must be the pinned credential */
        pos = at;
        if (cb_skip(pt, ct_len, &pos, 0))
            return ED_ERR_M2_FORMAT;
        id_len = pos - at;
        memcpy(id_map, pt + at, id_len);
        if (id_len != 2 + s->cred_r.ccs_len || pt[at] != 0xa1 || pt[at + 1] != 0x0e ||
            memcmp(pt + at + 2, s->cred_r.ccs, s->cred_r.ccs_len) != 0)
            return ED_ERR_M2_CRED;
    } else {                    /* by kid, compact: an int stands for the one byte of its encoding */
        const uint8_t *kid = pt + at;
        size_t kid_len = 1;
        if (it.major == CB_BSTR) {
            kid = pt + pos;
            kid_len = it.val;
            pos += it.val;
        } else if ((it.major != CB_UINT && it.major != CB_NINT) || it.val > 23) {
            return ED_ERR_M2_FORMAT;
        }
        if (kid_len != s->cred_r.kid_len || memcmp(kid, s->cred_r.kid, kid_len) != 0)
            return ED_ERR_M2_CRED;
        id_len = id_cred_map(id_map, &s->cred_r, 0);
    }
    if (cb_read(pt, ct_len, &pos, &it) || it.major != CB_BSTR || it.val != MAC_LEN)
        return ED_ERR_M2_FORMAT;
    const uint8_t *mac_2 = pt + pos;
    pos += MAC_LEN;
    if (pos != ct_len)
        return ED_ERR_M2_EAD;   /* EAD_2 is not supported */

    /* PRK_3e2m = HKDF-Extract(SALT_3e2m, G_RX) (Section 4.1.1.2) */
    uint8_t salt[CR_HASH_LEN];
    if ((r = kdf(s->prk_2e, 1, s->th_2, CR_HASH_LEN, salt, CR_HASH_LEN)))
        return r;
    if (cr_ecdh(s->x, s->cred_r.x, s->cred_r.y, secret) ||
        cr_hkdf_extract(salt, CR_HASH_LEN, secret, CR_ECC_LEN, s->prk_3e2m))
        return ED_ERR_CRYPTO;

    /* MAC_2 = EDHOC-KDF(PRK_3e2m, 2, context_2 = << C_R, ID_CRED_R, TH_2, CRED_R >>, 8) */
    if (s->c_r_len + id_len + 2 + CR_HASH_LEN + s->cred_r.ccs_len > sizeof buf)
        return ED_ERR_SPACE;
    n = 0;
    memcpy(buf, s->c_r, s->c_r_len);
    n += s->c_r_len;
    memcpy(buf + n, id_map, id_len);
    n += id_len;
    n += cb_bstr(buf + n, s->th_2, CR_HASH_LEN);
    memcpy(buf + n, s->cred_r.ccs, s->cred_r.ccs_len);
    n += s->cred_r.ccs_len;
    uint8_t mac[MAC_LEN], diff = 0;
    if ((r = kdf(s->prk_3e2m, 2, buf, n, mac, MAC_LEN)))
        return r;
    for (int k = 0; k < MAC_LEN; k++)
        diff |= mac[k] ^ mac_2[k];
    if (diff)
        return ED_ERR_M2_MAC;

    /* TH_3 = H(TH_2, PLAINTEXT_2, CRED_R) */
    return transcript(s->th_2, pt, ct_len, s->cred_r.ccs, s->cred_r.ccs_len, s->th_3);
}

int ed_message_3(struct ed_initiator *s, uint8_t *out, size_t cap, size_t *len)
{
    int r;
    uint8_t salt[CR_HASH_LEN], secret[CR_ECC_LEN], buf[SCRATCH];
    /* PRK_4e3m = HKDF-Extract(SALT_4e3m, G_IY) (Section 4.1.1.3) */
    if ((r = kdf(s->prk_3e2m, 5, s->th_3, CR_HASH_LEN, salt, CR_HASH_LEN)))
        return r;
    if (cr_ecdh(s->i, s->g_y, s->g_y_y, secret) ||
        cr_hkdf_extract(salt, CR_HASH_LEN, secret, CR_ECC_LEN, s->prk_4e3m))
        return ED_ERR_CRYPTO;

    /* MAC_3 = EDHOC-KDF(PRK_4e3m, 6, context_3 = << ID_CRED_I, TH_3, CRED_I >>, 8) */
    if (2 * s->cred_i.ccs_len + 2 * (size_t)CR_HASH_LEN + 16 > sizeof buf || cap < s->cred_i.ccs_len + 32)
        return ED_ERR_SPACE;
    size_t n = id_cred_map(buf, &s->cred_i, s->by_value);
    n += cb_bstr(buf + n, s->th_3, CR_HASH_LEN);
    memcpy(buf + n, s->cred_i.ccs, s->cred_i.ccs_len);
    n += s->cred_i.ccs_len;
    uint8_t mac[MAC_LEN];
    if ((r = kdf(s->prk_4e3m, 6, buf, n, mac, MAC_LEN)))
        return r;

    /* PLAINTEXT_3 = ( ID_CRED_I, Signature_or_MAC_3 ) */
    uint8_t pt[ED_MAX_CRED + 16];
    size_t pt_len = id_cred_compact(pt, &s->cred_i, s->by_value);
    pt_len += cb_bstr(pt + pt_len, mac, MAC_LEN);

    /* CIPHERTEXT_3 = AEAD(K_3, IV_3, PLAINTEXT_3, A_3 = ["Encrypt0", h'', TH_3]) */
    uint8_t k3[CR_KEY_LEN], iv3[CR_NONCE_LEN];
    if ((r = kdf(s->prk_3e2m, 3, s->th_3, CR_HASH_LEN, k3, CR_KEY_LEN)) ||
        (r = kdf(s->prk_3e2m, 4, s->th_3, CR_HASH_LEN, iv3, CR_NONCE_LEN)))
        return r;
    static const uint8_t enc0[] = {0x83, 0x68, 'E', 'n', 'c', 'r', 'y', 'p', 't', '0', 0x40};
    memcpy(buf, enc0, sizeof enc0);
    n = sizeof enc0 + cb_bstr(buf + sizeof enc0, s->th_3, CR_HASH_LEN);
    uint8_t ct[ED_MAX_CRED + 16 + CR_TAG_LEN];
    if (cr_aead_encrypt(k3, iv3, buf, n, pt, pt_len, ct))
        return ED_ERR_CRYPTO;
    *len = cb_bstr(out, ct, pt_len + CR_TAG_LEN);

    /* TH_4 = H(TH_3, PLAINTEXT_3, CRED_I); PRK_out; PRK_exporter (Sections 4.1.3, 4.2.1) */
    if ((r = transcript(s->th_3, pt, pt_len, s->cred_i.ccs, s->cred_i.ccs_len, s->th_4)) ||
        (r = kdf(s->prk_4e3m, 7, s->th_4, CR_HASH_LEN, s->prk_out, CR_HASH_LEN)))
        return r;
    return kdf(s->prk_out, 10, NULL, 0, s->prk_exporter, CR_HASH_LEN);
}

int ed_exporter(const struct ed_initiator *s, uint32_t label, const uint8_t *ctx, size_t ctx_len, uint8_t *out,
                size_t len)
{
    return kdf(s->prk_exporter, label, ctx, ctx_len, out, len);
}
