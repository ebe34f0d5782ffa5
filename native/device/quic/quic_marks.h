/* quic_marks: what the QUIC device client's STEP markers (native/device/marker.h, SP_MARK_STEP)
 * carry. A STEP marker starts a new part of the connection's count; the part runs to the next
 * marker (STEP or HS_END). The parser (src/secperf/measure/quic_device.py) names the parts:
 *   QM_RECV | t   a TLS handshake message of type t received: GnuTLS is about to process it
 *                 (its pre-hook); the QUIC packets' decryption before the next message is its own
 *   QM_SENT | t   a TLS handshake message of type t is about to be built (GnuTLS pre-hook)
 *   QM_FLIGHT     the client's first flight is on the wire: what follows (waiting is free, then the
 *                 server's Initial packet) belongs to the server's first message (ServerHello)
 *   QM_APP        the handshake is done and the client's Finished is on the wire: the request (or,
 *                 after 0-RTT, the rest of it) and its response; a NewSessionTicket arriving in this
 *                 part is a part of its own, and QM_APP marks the return to the exchange
 * HS_BEGIN (connection index) starts the ClientHello part: the session, the connection and the
 * Initial packet (with 0-RTT: the 0-RTT packet with the request too). HS_END (1 ok, 0 failed) ends
 * the connection's count once the response and the session ticket are in. */
#ifndef SP_QUIC_MARKS_H
#define SP_QUIC_MARKS_H

#define QM_SENT 0x100u
#define QM_RECV 0x200u
#define QM_FLIGHT 0x300u
#define QM_APP 0x400u

#endif
