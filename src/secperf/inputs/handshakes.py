"""The what-if's protocols and the handshakes each models, in a module of its own (no import): the
command parsers list the protocols in their help without loading the secure-element catalogue that
inputs/vocabulary.py checks keys against."""

from __future__ import annotations

# the what-if's protocols and the handshakes each models (model/flights/ builds them; a system
# file and the what-if's options are checked against this one table)
HANDSHAKES = {
    "tls1.3": ("full", "hrr", "resumed", "psk", "psk-dhe", "0rtt"),
    "tls1.2": ("full", "resumed", "psk"),
    "dtls1.2": ("full", "nocookie", "resumed", "psk"),
    "https": ("full", "resumed", "psk", "psk-dhe", "0rtt"),
    "mqtt": ("full", "resumed", "psk", "psk-dhe"),
    "coap": ("full", "nocookie", "resumed", "psk"),
    "openvpn": ("full",),
    "jwt": ("fresh", "cached"),
    # EDHOC + OSCORE (model/flights/edhoc.py): m<METHOD>-<CREDENTIAL>[-combined]
    "edhoc": tuple(
        f"m{m}-{c}{x}" for m in (3, 0, 1, 2) for c in ("kid", "value", "x5t", "x5chain") for x in ("", "-combined")
    ),
    "quic": ("full", "resumed", "0rtt", "psk"),  # model/flights/quic.py
    "dtls1.3": ("full", "resumed", "full-cid", "resumed-cid"),  # model/flights/dtls13.py
}
