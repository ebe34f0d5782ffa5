/* OSCORE (RFC 8613) for a CoAP client: the security context from a master secret and salt
 * (Section 3.2), a request protected and its response unprotected (Sections 5, 8.1, 8.4), with
 * AES-CCM-16-64-128 and HKDF-SHA-256, no ID Context. */
#ifndef SP_OSCORE_H
#define SP_OSCORE_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"

#define OSC_MAX_ID 7          /* nonce length 13 - 6 */
#define OSC_MAX_MSG 512

struct osc_ctx {
    uint8_t sender_id[OSC_MAX_ID], recipient_id[OSC_MAX_ID];
    size_t sid_len, rid_len;
    uint8_t sender_key[CR_KEY_LEN], recipient_key[CR_KEY_LEN], common_iv[CR_NONCE_LEN];
    uint64_t seq;             /* the next sender sequence number */
    /* the last request: its nonce and the AAD's request_kid/request_piv, for the response */
    uint8_t req_nonce[CR_NONCE_LEN], req_piv[5];
    size_t req_piv_len;
};

int osc_derive(struct osc_ctx *c, const uint8_t *secret, size_t secret_len, const uint8_t *salt, size_t salt_len,
               const uint8_t *sid, size_t sid_len, const uint8_t *rid, size_t rid_len);
/* a whole CoAP request (RFC 7252 message over UDP) in, its OSCORE-protected form out */
int osc_protect_request(struct osc_ctx *c, const uint8_t *msg, size_t len, uint8_t *out, size_t cap,
                        size_t *out_len);
/* the protected response to the last request in; the inner code and the payload out (payload points
 * into buf, which receives the decrypted plaintext) */
int osc_unprotect_response(struct osc_ctx *c, const uint8_t *msg, size_t len, uint8_t *buf, size_t cap,
                           uint8_t *code, const uint8_t **payload, size_t *payload_len);

#endif
