"""A design: the what-if inputs of one pattern (protocol, handshake, key, key share) plus how the
device keeps its connection (kept alive, pooled over a batch, set up ahead of time). Design
measures are transformations of a Design (measures.py); the evaluator turns a Design into numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import InputError
from ..inputs.patterns import Pattern

# the what-if protocol that models a pattern's protocol and authentication
WHATIF_PROTOCOL = {
    ("mqtt", "mtls"): "mqtt",
    ("mqtt", "psk"): "mqtt",
    ("https", "mtls"): "https",
    ("https", "psk"): "https",
    ("https", "jwt"): "jwt",
    ("coap", "mtls"): "coap",
    ("coap", "psk"): "coap",
    ("vpn", "mtls"): "openvpn",
}


@dataclass(frozen=True)
class Design:
    protocol: str  # pattern protocol: mqtt | coap | https | vpn
    auth: str  # mtls | jwt | psk
    key: str  # software | se:PROFILE[:cold]
    resumption: bool = False  # reconnections resume the last session (tickets / session IDs)
    psk: bool = False  # external pre-shared key: no certificate, no client signature
    precomputed_keyshare: bool = False
    token_cache: bool = False  # JWT reused for its lifetime
    keepalive: bool = False  # the session is kept across idle periods by pings
    pooling: bool = False  # the messages of a batch share one connection
    preauth: bool = False  # sessions are set up off the request path, ahead of the message
    backoff: bool = False  # exponential back-off on SE/network errors
    measures: tuple[str, ...] = ()
    security: bool = True  # False: the same traffic with no security at all (without_security)
    edhoc: bool = False  # CoAP set up by EDHOC and protected by OSCORE instead of DTLS 1.2
    quic: bool = False  # HTTPS/MQTT over QUIC: reconnections with a ticket send 0-RTT (flights/quic.py)
    dtls13_cid: bool = False  # CoAP over DTLS 1.3 with connection IDs instead of DTLS 1.2 (flights/dtls13.py)

    @property
    def whatif_protocol(self) -> str:
        return WHATIF_PROTOCOL[(self.protocol, self.auth)]

    def handshake(self, resumed: bool, fresh_token: bool = True) -> str:
        """The what-if handshake of one connection set-up of this design. A JWT design with
        resumption has two more kinds, `resumed+fresh` and `resumed+cached`: the JWT request on a
        resumed TLS session (evaluate.jwt_resumed_plan composes them from what-if plans)."""
        if self.edhoc:
            # EDHOC has no resumption (a kept OSCORE context is keep-alive's business). Decision: a
            # certificate design (mtls) becomes signature/signature EDHOC with the certificates known
            # to the peer (x5t: enrolled at provisioning, as the device's certificate is for IoT SAFE);
            # a PSK design becomes static DH with key IDs (the shortest EDHOC, no signature)
            return "m3-kid" if (self.psk or self.auth == "psk") else "m0-x5t"
        if self.quic:
            # a PSK design runs QUIC's psk_ke handshake; otherwise a reconnection with a ticket sends 0-RTT
            return "psk" if (self.psk or self.auth == "psk") else "0rtt" if resumed and self.resumption else "full"
        if self.dtls13_cid:
            # Decision: a PSK design is modelled by the resumed flights (PSK binder, no certificates): the
            # DTLS 1.3 model has no external-PSK variant, and the two differ only by the identity's bytes
            return "resumed-cid" if (self.psk or self.auth == "psk" or (resumed and self.resumption)) else "full-cid"
        if self.whatif_protocol == "jwt":
            token = "fresh" if fresh_token else "cached"
            return f"resumed+{token}" if resumed and self.resumption else token
        if self.psk or self.auth == "psk":
            return "psk"
        if resumed and self.resumption:
            return "resumed"
        return "full"

    def without_security(self) -> Design:
        """The pattern as written with no security at all: the same messages, schedule and connection
        behaviour over plain TCP/UDP (flights.no_security: no handshake, no record overhead, no key,
        no token, no signature). It is the reference that tells a requirement security breaks from one
        the pattern breaks by itself (the radio alone, the network alone). No measure applies to it."""
        return Design(protocol=self.protocol, auth=self.auth, key="software", security=False)

    def with_measure(self, name: str, **fields: Any) -> Design:
        return replace(self, measures=self.measures + (name,), **fields)


def baseline(p: Pattern, key: str | None = None) -> Design:
    """The pattern as written: no design measure applied."""
    s = p.stack
    if (s.protocol, s.auth) not in WHATIF_PROTOCOL:
        allowed = sorted({a for (pr, a) in WHATIF_PROTOCOL if pr == s.protocol})
        raise InputError(f"[stack].auth: {s.auth!r} is not modelled for {s.protocol}; allowed: {', '.join(allowed)}")
    return Design(protocol=s.protocol, auth=s.auth, key=key or s.key)
