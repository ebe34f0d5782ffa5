/* EDHOC (RFC 9528) initiator: method 3 (static DH keys on both sides), cipher suite 2 (P-256,
 * SHA-256, AES-CCM-16-64-128, EDHOC MAC length 8), CCS credentials (a CWT claim set holding a
 * COSE_Key) identified by kid or sent by value; no EAD. Three calls, one per message, and the
 * exporter (Section 4.2.1) for OSCORE. */
#ifndef SP_EDHOC_H
#define SP_EDHOC_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"

#define ED_MAX_CRED 256
#define ED_MAX_ID 8
#define ED_MAX_MSG 400

struct ed_cred {
    uint8_t ccs[ED_MAX_CRED];   /* CRED_x: the CCS as its bytes */
    size_t ccs_len;
    uint8_t kid[ED_MAX_ID];
    size_t kid_len;
    uint8_t x[CR_ECC_LEN], y[CR_ECC_LEN];   /* its COSE_Key's point */
};

struct ed_initiator {
    /* set up before message_1 */
    uint8_t i[CR_ECC_LEN];          /* the initiator's static private key */
    struct ed_cred cred_i, cred_r;  /* own credential, and the responder's one (pinned) */
    int by_value;                   /* ID_CRED_I: 0 = {4: kid} (compact), 1 = {14: CCS} */
    uint8_t suites[8];              /* SUITES_I as encoded: 02, or [.., 2] with 2 selected last */
    size_t suites_len;
    uint8_t c_i[ED_MAX_ID + 2];     /* C_I as encoded (a one-byte int or a byte string) */
    size_t c_i_len;
    const uint8_t *fixed_x;         /* test vectors only: the ephemeral private key */
    /* state */
    uint8_t x[CR_ECC_LEN], g_x[CR_ECC_LEN], g_y[CR_ECC_LEN], g_y_y[CR_ECC_LEN];   /* G_Y and its y */
    uint8_t h_m1[CR_HASH_LEN], th_2[CR_HASH_LEN], th_3[CR_HASH_LEN], th_4[CR_HASH_LEN];
    uint8_t prk_2e[CR_HASH_LEN], prk_3e2m[CR_HASH_LEN], prk_4e3m[CR_HASH_LEN], prk_out[CR_HASH_LEN];
    uint8_t prk_exporter[CR_HASH_LEN];
    uint8_t c_r[ED_MAX_ID + 2];     /* C_R as received (its CBOR encoding) */
    size_t c_r_len;
};

/* error codes (negative): where the handshake stopped */
enum {
    ED_ERR_CRYPTO = -1, ED_ERR_SPACE = -2, ED_ERR_M2_FORMAT = -3, ED_ERR_M2_CRED = -4, ED_ERR_M2_MAC = -5,
    ED_ERR_M2_EAD = -6,
};

/* the credential's kid and point, read from its CCS (2: sub, 8: {1: COSE_Key}); 0 when found */
int ed_cred_parse(struct ed_cred *c);
int ed_message_1(struct ed_initiator *s, uint8_t *out, size_t cap, size_t *len);
int ed_process_message_2(struct ed_initiator *s, const uint8_t *m2, size_t len);
int ed_message_3(struct ed_initiator *s, uint8_t *out, size_t cap, size_t *len);
/* EDHOC-Exporter(label, context, length) after message_3 */
int ed_exporter(const struct ed_initiator *s, uint32_t label, const uint8_t *ctx, size_t ctx_len, uint8_t *out,
                size_t len);

#endif
