"""What `secperf handshake` measures: one client/server configuration (HandshakeConfig) and the named
experiments, each a list of configurations (S1's and beyond), plus the offer made to a server secperf
did not set up (`--connect`). measure/handshake.py runs them."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.errors import InputError
from ..inputs import netspec as NS


class HandshakeError(InputError):
    pass


@dataclass(frozen=True)
class HandshakeConfig:
    """One thing to measure: a client/server configuration. `label` names it in tables."""

    label: str
    tls: str = "1.3"
    proto: str = "tls"
    ciphersuites: str | None = "TLS_AES_128_GCM_SHA256"
    ciphers: str | None = None  # TLS 1.2 cipher list
    groups: str | None = "x25519"
    sigalgs: str | None = None
    cert_type: str = "rsa-2048"
    depth: int = 1
    mode: str = "full"  # full | resume-ticket | resume-id | psk | psk-dhe | 0rtt
    mtls: bool = False
    client_key_type: str = "ecdsa-p256"
    server: str = "probe"
    dtls_cookie: bool = True
    mtu: int | None = None
    request_bytes: int = 40
    response_bytes: int = 846
    early_data_bytes: int = 40
    network: str = "loopback"  # a --network value: profile name or spec (lab/netns.Link)

    @property
    def series_id(self) -> str:
        base = f"handshake/{self.server}/{self.label}"
        return base if self.network in NS.LOOPBACK_NAMES else f"{base} @ {self.network}"


V13 = HandshakeConfig("tls1.3 aes128gcm x25519 rsa2048")


V12 = HandshakeConfig(
    "tls1.2 ecdhe-rsa-aes128gcm x25519 rsa2048", tls="1.2", ciphersuites=None, ciphers="ECDHE-RSA-AES128-GCM-SHA256"
)


def experiment(name: str) -> list[HandshakeConfig]:
    """The configurations of a named experiment (S1's and beyond)."""
    chacha = "TLS_CHACHA20_POLY1305_SHA256"
    if name == "versions":
        return [V13, V12]
    if name == "suites":
        return [V13, replace(V13, label="tls1.3 chacha20 x25519 rsa2048", ciphersuites=chacha)]
    if name == "groups":
        return [
            replace(V13, label=f"tls1.3 aes128gcm {g.lower()} rsa2048", groups=g)
            for g in ("x25519", "P-256", "P-384", "x448", "ffdhe2048")
        ]
    if name == "breakdown":
        return [
            replace(V13, label=f"tls1.3 {s} {g.lower()}", ciphersuites=cs, groups=g)
            for s, cs in (("aes128gcm", "TLS_AES_128_GCM_SHA256"), ("chacha20", chacha))
            for g in ("x25519", "P-256")
        ]
    if name == "appdata":
        return [
            replace(V13, label=f"tls1.3 {s} response {size}", ciphersuites=cs, response_bytes=size)
            for s, cs in (("aes128gcm", "TLS_AES_128_GCM_SHA256"), ("chacha20", chacha))
            for size in (846, 4096, 16000)
        ]
    if name == "resumption":
        return [
            V13,
            replace(V13, label="tls1.3 resume ticket", mode="resume-ticket"),
            V12,
            replace(V12, label="tls1.2 resume ticket", mode="resume-ticket"),
            replace(V12, label="tls1.2 resume session-id", mode="resume-id"),
        ]
    if name == "psk":
        return [
            V13,
            replace(V13, label="tls1.3 psk_ke (no ECDHE)", mode="psk"),
            replace(V13, label="tls1.3 psk_dhe_ke", mode="psk-dhe"),
            replace(V12, label="tls1.2 psk-aes128-gcm", mode="psk", ciphers="PSK-AES128-GCM-SHA256"),
        ]
    if name == "0rtt":
        return [
            replace(V13, label="tls1.3 resume ticket", mode="resume-ticket"),
            replace(V13, label="tls1.3 0-rtt early data", mode="0rtt"),
        ]
    if name == "certs":
        return [
            replace(V13, label=f"tls1.3 cert {t}", cert_type=t)
            for t in ("rsa-2048", "rsa-3072", "rsa-4096", "ecdsa-p256", "ecdsa-p384", "ed25519")
        ] + [replace(V13, label=f"tls1.3 cert rsa-2048 chain depth {d}", depth=d) for d in (2, 3)]
    if name == "mtls":
        return [
            V13,
            replace(V13, label="tls1.3 mutual tls (client ecdsa-p256)", mtls=True),
            V12,
            replace(V12, label="tls1.2 mutual tls (client ecdsa-p256)", mtls=True),
        ]
    if name == "dtls":
        d = replace(V12, label="dtls1.2 ecdhe-rsa-aes128gcm cookie", proto="dtls")
        return [d, replace(d, label="dtls1.2 ecdhe-rsa-aes128gcm no cookie", dtls_cookie=False), V12]
    raise HandshakeError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")


def for_any_certificate(cfg: HandshakeConfig) -> HandshakeConfig:
    """The configuration as offered to a server secperf did not set up (`--connect`): its
    certificate may be RSA or ECDSA and its groups are its own, so every TLS 1.2 ECDHE suite is
    offered with both signature kinds (ECDHE-ECDSA-X beside ECDHE-RSA-X) and the group list goes on
    past the configured first one (x25519, then P-256 and P-384). The label then names the offer
    without a certificate type; what the server chose is recorded per row (derived.negotiated)."""
    ciphers = cfg.ciphers
    if ciphers:
        out: list[str] = []
        for c in ciphers.split(":"):
            for kind in ("ECDSA", "RSA"):
                alt = c.replace("ECDHE-RSA-", f"ECDHE-{kind}-").replace("ECDHE-ECDSA-", f"ECDHE-{kind}-")
                if alt not in out:
                    out.append(alt)
        ciphers = ":".join(out)
    groups = cfg.groups
    if groups and cfg.mode != "psk":
        names = groups.split(":")
        groups = ":".join(names + [g for g in ("P-256", "P-384") if g not in names])
    label = cfg.label.replace("ecdhe-rsa-", "ecdhe-").replace(f" {cfg.cert_type.replace('-', '')}", "")
    return replace(cfg, ciphers=ciphers, groups=groups, label=label)


EXPERIMENTS = (
    "versions",
    "suites",
    "groups",
    "breakdown",
    "appdata",
    "resumption",
    "psk",
    "0rtt",
    "certs",
    "mtls",
    "dtls",
)
