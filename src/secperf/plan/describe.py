"""A pattern's one-line description as the plan shows it: the pattern's own text when it agrees with
the protocol and key the plan judges, else a line made from them.

A built-in pattern's description names its stack ("... over MQTT/TLS (QoS 1), key in the IoT SAFE
SIM"). A system file that takes the pattern (`[pattern] use = ...`) with another protocol, or
`plan --key` with another key, keeps the traffic but not that stack: the line is then derived from
the protocol and key actually judged, never copied from the pattern it started from."""

from __future__ import annotations

import re

from ..inputs.patterns import Pattern

# how each protocol reads in a sentence, and the words that name it in a description
PROTOCOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "mqtt": ("MQTT/TLS (QoS 1)", ("MQTT",)),
    "coap": ("CoAP/DTLS (confirmable)", ("CoAP",)),
    "https": ("HTTPS", ("HTTPS", "HTTP")),
    "vpn": ("a VPN tunnel (OpenVPN)", ("VPN", "OpenVPN")),
}
# the word that names a secure-element profile (by its name's start) in a description
_SE_WORDS = (
    ("iot-safe-sim", "SIM"),
    ("atecc608", "ATECC608"),
    ("optiga", "OPTIGA"),
    ("tpm", "TPM"),
    ("yubikey", "YubiKey"),
    ("luna", "HSM"),
)
_KEY_WORDS = re.compile(r"\b(SIM|secure element|ATECC608|OPTIGA|TPM|YubiKey|HSM|key in)\b")


def _mentions(text: str, words: tuple[str, ...]) -> bool:
    return any(re.search(rf"\b{re.escape(w)}\b", text) for w in words)


def protocol_phrase(protocol: str) -> str:
    return PROTOCOLS.get(protocol, (protocol, ()))[0]


def key_phrase(key: str) -> str:
    if key == "software":
        return "key in software"
    name = key.split(":")[1] if key.startswith("se:") else key
    return "key in the IoT SAFE SIM" if name == "iot-safe-sim" else f"key in secure element {name}"


def _traffic(p: Pattern) -> str:
    t = p.traffic
    if t.schedule == "periodic" and t.interval_s:
        every = f"{t.interval_s / 60:g} minutes" if t.interval_s >= 60 else f"{t.interval_s:g} s"
        return f"a device sends {t.payload_up_bytes} B every {every}"
    if t.schedule == "events" and t.events_per_day:
        return f"a device sends about {t.events_per_day:g} events of {t.payload_up_bytes} B a day"
    if t.schedule == "batch" and t.batches_per_day and t.messages_per_batch:
        return f"a device uploads {t.batches_per_day:g} batch(es) of {t.messages_per_batch} messages a day"
    if t.schedule == "bulk" and t.transfers_per_day:
        return f"a device transfers {t.payload_down_bytes or t.payload_up_bytes} B {t.transfers_per_day:g} times a day"
    return f"{t.schedule} traffic"


def agrees(text: str, protocol: str, key: str) -> bool:
    """Whether a description names no other protocol than `protocol` and no key store `key` is not."""
    others = [
        w
        for name, (_, ws) in PROTOCOLS.items()
        if name != protocol
        for w in ws
        if w not in PROTOCOLS.get(protocol, ("", ()))[1]
    ]
    if _mentions(text, tuple(others)):
        return False
    if _KEY_WORDS.search(text) is None:
        return True  # the description says nothing about the key
    if key == "software":
        return "key in software" in text
    name = key.split(":")[1] if key.startswith("se:") else key
    marks = [w for prefix, w in _SE_WORDS if name.startswith(prefix)] or [name]
    return _mentions(text, tuple(marks))


def describe(p: Pattern, key: str) -> str:
    """The pattern's description if it agrees with its protocol and `key`, else one derived from them."""
    protocol = p.stack.protocol
    if p.description and agrees(p.description, protocol, key):
        return p.description
    head = p.description.split(" over ")[0] if " over " in p.description else ""
    if not head or not agrees(head, protocol, key):
        head = _traffic(p)
    return f"{head} over {protocol_phrase(protocol)}, {key_phrase(key)}"
