"""`secperf server`'s configurations: the server set-up one row measures (ServerConfig), the load
it is driven with (LoadParams), and the checks that name what cannot be measured as asked."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import InputError, InternalError, MeasurementError
from ..core.native import find_native
from ..lab.token_openssl import PKCS11_ENGINE_PACKAGE, pkcs11_engine

if TYPE_CHECKING:
    from ..inputs.se_profiles import Profile

SERVERS = ("nginx", "probe", "mosquitto", "coap-server")
PROTOCOLS = ("tls", "dtls")
# DTLS: libcoap's coap-server (OpenSSL build) is the target. It keeps one session per client
# address on one UDP socket and interleaves their handshakes in its event loop, so it serves many
# concurrent DTLS clients; the probe server's DTLS mode (and `openssl s_server -dtls`) serves one
# client at a time. coap-server always asks for a cookie (DTLSv1_listen): every handshake carries
# the HelloVerifyRequest round trip, which the load generator counts.
DTLS_SERVERS = ("coap-server",)
KEYS = (
    "rsa-1024",
    "rsa-1024-nocrt",
    "rsa-2048",
    "rsa-2048-nocrt",
    "rsa-3072",
    "rsa-3072-nocrt",
    "rsa-4096",
    "rsa-4096-nocrt",
    "ecdsa-p256",
    "ecdsa-p384",
    "ed25519",
)
WAITS = ("busy", "sleep")
# servers that load their key through OpenSSL's pkcs11 engine (nginx: engine:pkcs11:URI; mosquitto:
# tls_engine pkcs11 with tls_keyform engine): the ones --key-source offload runs on
OFFLOAD_SERVERS = ("nginx", "mosquitto")
# key types the lab token holds (lab/token KEY_SPECS): the ones a server can offload
TOKEN_KEYS = ("rsa-1024", "rsa-2048", "ecdsa-p256")
# the offload profile matching each token key's algorithm (data/secure_elements.toml)
OFFLOAD_PROFILE = {"rsa-1024": "rsa-card-1998", "rsa-2048": "hsm-network-rsa2048", "ecdsa-p256": "atecc608"}
LOADGEN_NAME = "secperf-loadgen"


class ServerMeasureError(MeasurementError):
    """A server or the load generator failed as a whole (not one connection)."""


def find_loadgen() -> Path:
    return find_native(LOADGEN_NAME, "bin", "SECPERF_LOADGEN", "native/loadgen")


@dataclass(frozen=True)
class ServerConfig:
    """One server set-up; measured at every concurrency level of LoadParams."""

    server: str = "nginx"
    key: str = "rsa-2048"  # KEYS; "-nocrt" runs on the probe server only
    source: str = "software"  # software | offload:PROFILE:busy|sleep
    client_auth: bool = False
    resume_ratio: float = 0.0
    depth: int = 1
    tls: str = "1.3"
    protocol: str = "tls"  # tls (TCP) | dtls (DTLS 1.2 over UDP, coap-server)
    # the offloaded key's secure-element profile, resolved by the command (app/server_plan): the
    # measurement takes the object, never the name in `source`; not part of the row's identity
    profile: Profile | None = field(default=None, compare=False, repr=False)

    @property
    def key_type(self) -> str:
        return self.key.removesuffix("-nocrt")

    @property
    def nocrt(self) -> bool:
        return self.key.endswith("-nocrt")

    @property
    def offload(self) -> tuple[str, str] | None:
        if not self.source.startswith("offload:"):
            return None
        _, profile, wait = self.source.split(":")
        return profile, wait

    def offloaded(self) -> tuple[Profile, str]:
        """The offloaded key's profile (the object the command resolved) and its wait mode."""
        if self.offload is None or self.profile is None or self.profile.name != self.offload[0]:
            raise InternalError(
                f"internal: --key-source {self.source}: the secure-element profile was not resolved at the "
                "command (app/server_plan, app/mqtt_load hand the Profile in ServerConfig.profile)"
            )
        return self.profile, self.offload[1]

    def label(self) -> str:
        parts = [self.server, self.key, self.source.replace("offload:", "offload ")]
        if self.protocol == "dtls":
            parts.insert(1, "DTLS 1.2")
        if self.client_auth:
            parts.append("client auth")
        if self.resume_ratio:
            parts.append(f"{self.resume_ratio:.0%} resumed")
        if self.depth != 1:
            parts.append(f"chain depth {self.depth}")
        return ", ".join(parts)

    def series_id(self, concurrency: int, rate: float | None = None) -> str:
        at = f"@r{rate:g}" if rate else f"@c{concurrency}"
        proto = "dtls/" if self.protocol == "dtls" else ""
        return (
            f"server/{proto}{self.server}/{self.key}/{self.source}/auth-{'on' if self.client_auth else 'off'}/"
            f"resume-{self.resume_ratio:g}/d{self.depth}{at}"
        )


@dataclass
class LoadParams:
    concurrency: list[int] = field(default_factory=lambda: [1, 4, 16])
    rates: list[float] = field(default_factory=list)  # open loop: offered connections/s per level
    duration_s: float = 3.0
    warmup_s: float = 0.5
    seed: int = 1
    core: int = 0  # the core the server is pinned to
    loadgen_procs: int | None = None  # None: one per core the generator runs on (generator_cores)
    op_n: int = 30  # private-key operations timed side by side
    workdir: Path | None = None


def validate(cfg: ServerConfig) -> None:
    """Every combination is checked before anything runs; errors name the option."""
    if cfg.server not in SERVERS:
        raise InputError(f"--server {cfg.server!r}: known: {', '.join(SERVERS)}")
    if cfg.key not in KEYS:
        raise InputError(f"--key {cfg.key!r}: known: {', '.join(KEYS)}")
    if cfg.protocol not in PROTOCOLS:
        raise InputError(f"--protocol {cfg.protocol!r}: give tls or dtls")
    if (cfg.protocol == "dtls") != (cfg.server in DTLS_SERVERS):
        raise InputError(
            f"--server {cfg.server} with --protocol {cfg.protocol}: DTLS runs against "
            f"{', '.join(DTLS_SERVERS)} (the one target here that serves concurrent DTLS clients), "
            f"TLS against {', '.join(s for s in SERVERS if s not in DTLS_SERVERS)}"
        )
    if cfg.protocol == "dtls":
        if cfg.resume_ratio:
            raise InputError(
                f"--resume-ratio {cfg.resume_ratio:g} with --protocol dtls: libcoap's coap-server "
                "resumes no DTLS session; give 0"
            )
        if cfg.source != "software" or cfg.nocrt:
            raise InputError(
                f"--key {cfg.key} --key-source {cfg.source} with --protocol dtls: coap-server loads "
                "its key from a PEM file (software, with CRT) only"
            )
    if cfg.nocrt and cfg.server != "probe":
        raise InputError(
            f"--key {cfg.key}: a key without CRT runs on the probe server only (--server probe): "
            "OpenSSL cannot load an n, e, d-only key from a file, the probe builds it in memory"
        )
    if not 0.0 <= cfg.resume_ratio <= 1.0:
        raise InputError(f"--resume-ratio {cfg.resume_ratio}: give a share between 0 and 1")
    if not 1 <= cfg.depth <= 3:
        raise InputError(f"--chain-depth {cfg.depth}: give 1..3")
    if cfg.source != "software":
        if cfg.server not in OFFLOAD_SERVERS:
            raise InputError(
                f"--key-source {cfg.source}: offload runs with --server {' or '.join(OFFLOAD_SERVERS)} "
                "(OpenSSL's pkcs11 engine)"
            )
        check_offload(cfg.source, cfg.key)


def check_offload(source: str, key: str) -> None:
    """An offloaded key source (offload:PROFILE:busy|sleep) with the server key `key`: its form, the
    lab token holds a key of that type, and OpenSSL's pkcs11 engine is installed (each an InputError
    naming the option or the package). The profile's name is resolved by the command (app/se_keys)."""
    parts = source.split(":")
    if len(parts) != 3 or parts[0] != "offload" or parts[2] not in WAITS:
        raise InputError(
            f"--key-source {source!r}: give software or offload:PROFILE:busy|sleep (e.g. offload:rsa-card-1998:busy)"
        )
    if key not in TOKEN_KEYS:
        raise InputError(
            f"--key {key} with --key-source {source}: the lab token holds "
            f"{', '.join(TOKEN_KEYS)} server-usable keys (no-CRT is a software variant; the "
            "token's own key format decides)"
        )

    if pkcs11_engine() is None:
        raise InputError(
            f"--key-source {source}: OpenSSL's pkcs11 engine (pkcs11.so) is not installed where OpenSSL "
            f"looks for it (OPENSSL_ENGINES or `openssl version -e`): install the Debian package "
            f"{PKCS11_ENGINE_PACKAGE} (scripts/bootstrap does)"
        )
