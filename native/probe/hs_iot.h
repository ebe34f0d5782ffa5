/* hs_iot: the protocol step after the handshake for MQTT (CONNECT -> CONNACK) and CoAP
 * (confirmable GET -> ACK / response), timed like the HTTP exchange in hs_app. */
#ifndef SECPERF_PROBE_HS_IOT_H
#define SECPERF_PROBE_HS_IOT_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "err.h"
#include "hs_app.h"
#include "hs_trace.h"

/* MQTT 3.1.1 CONNECT (clean session, keep-alive 60 s) for client_id into out (cap bytes);
 * returns its length, 0 when it does not fit. */
size_t hs_mqtt_connect(const char *client_id, unsigned char *out, size_t cap);
/* The CONNACK return code's meaning (MQTT 3.1.1, 3.2.2.3). */
const char *hs_mqtt_rc_name(int rc);
/* CoAP (RFC 7252) confirmable GET of path ("" = the root resource) with a 4-byte token;
 * returns its length, 0 when it does not fit. */
size_t hs_coap_get(const char *path, uint16_t message_id, uint32_t token, unsigned char *out,
                   size_t cap);

/* Client: sends the protocol's first message and reads until the protocol is usable:
 * MQTT: CONNACK with return code 0; CoAP: the piggybacked response in the ACK, or the empty ACK
 * followed by the separate response (acknowledged). Result fields as in hs_app_client; status is
 * the CONNACK return code (MQTT) or the response code as class*100+detail (CoAP, 205 = 2.05). */
int hs_iot_client(SSL *ssl, int fd, int coap, const unsigned char *req, size_t req_len,
                  uint64_t timeout_ns, hs_trace *tr, hs_app_result *r, int *alert_first,
                  char *reason, size_t rlen);

/* MQTT DISCONNECT before close (not timed; errors ignored). */
void hs_mqtt_disconnect(SSL *ssl);

#endif
