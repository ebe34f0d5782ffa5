"""DTLS 1.2 and DTLS 1.3 on the emulated cores (`secperf device handshake --tls dtls1.2,dtls1.3`): the
checks of what a DTLS row asks for, and the host peer that serves it.

Handshakes (`--mode`): full (with the server's cookie exchange: HelloVerifyRequest in DTLS 1.2, a
HelloRetryRequest carrying a cookie in DTLS 1.3), resumed (a session ticket of a full handshake
before it), psk (an external PSK: DTLS 1.2 a plain PSK suite, RFC 5487, no certificate and no
ECDHE, as CoAP's PSK mode; DTLS 1.3 psk_dhe_ke with the group's ECDHE share, as TLS 1.3's), and
with a connection ID: full-cid, resumed-cid.

Decision -- a connection ID is a handshake name, `--mode full-cid,resumed-cid`, not a `--cid` flag:
the what-if names DTLS 1.3's handshakes so (inputs/vocabulary.py HANDSHAKES["dtls1.3"]: full,
resumed, full-cid, resumed-cid), so a row's `mode` label is the what-if's handshake as it is and
the lead maps rows to handshakes without a second field; and a flag would multiply every mode
(psk-cid is no handshake the what-if models). The client asks for the server's CID and offers an
empty one of its own (RFC 9146 allows it): its records to the server carry the server's 8-byte
CID, the server's records to it none, as a device behind a NAT wants.

Peers (loopback, started and stopped by PID): DTLS 1.2 full and resumed run against `openssl
s_server -dtls` (OpenSSL 3.0 always exchanges a cookie), DTLS 1.2 psk against secperf's own probe
server (`secperf-probe server --proto dtls`, OpenSSL 3.0 too, cookie exchange on; `psk_server`); OpenSSL 3.0 has
neither DTLS 1.3 nor connection IDs, so DTLS 1.3 and the CID rows run against the wolfSSL 5.9 host
server of `secperf connect dtls13` (native/dtls13/dtls_pair.c, built by measure/dtls13.py), which
asks for a cookie in both versions and answers each request with a response: the client makes the
application exchange there (it reads DTLS 1.3's session ticket, which arrives after the handshake).
That server is built before anything runs (a build that fails is a device build failure, `ensure_peer`
says why); one that does not start, passes its start limit or dies during a row fails that row with
its own words (exit status, first stderr line) and the run goes on (DtlsPeerError).

Which stacks have what (the builds' `--offers` say it; the table here lets a wrong stack exit 2
before anything is built): wolfSSL 5.9 (wolfssl59) DTLS 1.2 and 1.3 with CIDs; wolfSSL 5.5 DTLS 1.2
(its DTLS 1.3 is a first cut and it has no DTLS 1.2 CID); Mbed TLS 3.6 DTLS 1.2 with CIDs (no DTLS
1.3); Mbed TLS 2.28 DTLS 1.2 without CIDs (its CID is a pre-RFC draft); OpenSSL 3.0 (A-profile cores)
DTLS 1.2 full only.

Decision -- the DTLS 1.2 psk row's peer is the probe server, which reads the key from a 0600 file
(`--psk-file`), not `openssl s_server`: s_server takes a TLS 1.2/DTLS PSK from `-psk HEX` only, which
puts the key on the process list (/proc/PID/cmdline, readable by every user) for the whole run. The
other candidate, the wolfSSL 5.9 pair server, reads a key file too, but wolfSSL compiles its plain
PSK suites only with WOLFSSL_STATIC_PSK, which its CMake build has no option for: adding it would
rebuild the library every DTLS 1.3 run shares and move the row to another server library. The probe
is OpenSSL 3.0 as s_server is, and like s_server it exchanges a cookie (HelloVerifyRequest), takes
the plain PSK suites (RFC 5487) with no identity hint (so no ServerKeyExchange), and serves clients
one after another, each ending with the client's close_notify: the guest makes the same handshake
with the same server library and its counts mean what they meant.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError, MeasurementError
from ..core.paths import private_dir, write_private
from ..lab import registry
from ..lab.pki import LabPKI
from ..lab.processes import first_line
from ..lab.services import ProbeServer
from .device_sources import DeviceSetupError
from .dtls13 import SERVER_READY_S, WOLFSSL_CMAKE, DtlsSetupError, ensure_tool, library_version

if TYPE_CHECKING:
    from ..lab.pki import CertSet
    from .device_attrib import Handshake
    from .device_build import Build
    from .device_plan import Config

DTLS = ("dtls1.2", "dtls1.3")
CID_MODES = ("full-cid", "resumed-cid")
# the stacks with each DTLS version in some build (their --offers refine it per build)
HAS = {"dtls1.2": ("wolfssl", "wolfssl59", "mbedtls", "mbedtls3", "openssl"), "dtls1.3": ("wolfssl59",)}
PAIR_SUITES = {
    ("1.3", "aes128gcm"): "TLS13-AES128-GCM-SHA256",
    ("1.3", "chacha20"): "TLS13-CHACHA20-POLY1305-SHA256",
    ("1.2", "aes128gcm"): "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256",
    ("1.2", "chacha20"): "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305",
}
PAIR_PSK_SUITES = {"aes128gcm": "PSK-AES128-GCM-SHA256", "chacha20": "PSK-CHACHA20-POLY1305"}
SERVER_CID_BYTES = 8  # the pair server's connection ID (dtls_pair.c SERVER_CID_LEN)


def base_mode(mode: str) -> str:
    """full-cid -> full, resumed-cid -> resumed; others unchanged."""
    return mode.removesuffix("-cid")


def check_plan(stacks: list[str], tls: list[str], modes: list[str]) -> None:
    """InputError for a combination no stack or version has, naming what has it."""
    for t in tls:
        if t not in DTLS:
            continue
        lacking = [s for s in stacks if s not in HAS[t]]
        if lacking:
            raise InputError(
                f"--tls {t}: {', '.join(lacking)} {'has' if len(lacking) == 1 else 'have'} no {t.upper()} "
                f"client here; stacks with {t.upper()}: {', '.join(HAS[t])}"
                + (
                    "; Mbed TLS 3.6 has no DTLS 1.3"
                    if t == "dtls1.3" and any(s.startswith("mbedtls") for s in lacking)
                    else ""
                )
            )
    cid = [m for m in modes if m in CID_MODES]
    if cid and any(t not in DTLS for t in tls):
        raise InputError(
            f"--mode {cid[0]}: a connection ID is a DTLS extension (RFC 9146, RFC 9147); use --tls dtls1.2 or dtls1.3"
        )
    if "psk" in modes and "1.2" in tls:
        raise InputError(
            "--mode psk: TLS 1.2 over TCP has no PSK row here; use TLS 1.3 (--tls 1.3), or DTLS "
            "(--tls dtls1.2 or dtls1.3)"
        )


def handshakes_offered(offers: dict[str, Any], tls: str) -> tuple[str, ...]:
    """The handshakes (`--mode` names) a build runs for a protocol version, from its declared offers
    (Build.offers): () when it lacks the version. For the what-if layer: `"dtls1.3" in offers["tls"]`
    says whether a build has DTLS 1.3, this which handshakes, has_cid whether it has connection IDs."""
    if tls not in offers.get("tls", ()):
        return ()
    if tls in DTLS:
        modes = (offers.get("dtls_modes") or {}).get(tls)
        return tuple(modes if modes is not None else (["full"] if tls == "dtls1.2" else []))
    return tuple(offers.get("modes", ()))


def has_cid(offers: dict[str, Any], tls: str) -> bool:
    """Whether a build runs DTLS handshakes with a connection ID for this version."""
    return any(m in CID_MODES for m in handshakes_offered(offers, tls))


def lacking(cfg: Config, build: Build) -> str:
    """Why a build lacks a DTLS version (appended to the message naming what it offers)."""
    if cfg.tls == "dtls1.3":
        return f"; stacks with DTLS 1.3: {', '.join(HAS['dtls1.3'])}"
    if cfg.tls == "dtls1.2" and build.target == "cortex-m0plus":
        return (
            "; its Cortex-M0+ build (newlib) has no DTLS timer: Mbed TLS 2.28 has no millisecond-clock hook "
            "for one; DTLS 1.2 there: wolfssl, wolfssl59, mbedtls3"
        )
    return ""


def check_offers(cfg: Config, off: dict[str, Any], what: str) -> None:
    """InputError when a build cannot run a DTLS configuration, naming the handshakes it offers."""
    modes = handshakes_offered(off, cfg.tls)  # a build that declares no DTLS modes: DTLS 1.2 full only
    if cfg.mode not in modes:
        raise InputError(f"--mode {cfg.mode}: {what} offers {cfg.tls.upper()} handshakes {', '.join(modes) or 'none'}")
    if cfg.tls == "dtls1.3" and cfg.mode == "psk" and not pair_has_psk():
        raise InputError(
            "--mode psk with --tls dtls1.3: the DTLS 1.3 peer (wolfSSL 5.9 host server) is built "
            "without PSK support here; DTLS 1.3 offers full, resumed, full-cid, resumed-cid"
        )


def needs_pair(cfg: Config) -> bool:
    """The row runs against the wolfSSL 5.9 host server (DTLS 1.3, or a connection ID)."""
    return cfg.tls == "dtls1.3" or cfg.mode in CID_MODES


def pair_has_psk() -> bool:
    """Whether the host wolfSSL of the pair server was built with PSK (measure/dtls13.WOLFSSL_CMAKE)."""

    return "-DWOLFSSL_PSK=yes" in WOLFSSL_CMAKE


class PairServer:
    """The wolfSSL 5.9 DTLS server (native/dtls13/dtls_pair.c) on loopback for one device
    configuration: its version, the client's suite, any of the device's groups, a connection ID for
    the -cid modes, a client certificate of the lab client CA asked for only under mutual TLS, and
    an external PSK in a private file (never on a command line)."""

    PSK_IDENTITY = "secperf-device"
    name = "wolfSSL 5.9 DTLS server (native/dtls13, host, loopback)"

    def __init__(self, cfg: Config) -> None:
        pki = LabPKI().ensure()
        self.cfg = cfg
        self.certs = pki.server(cfg.server_cert)
        self.client = None if cfg.client_cert == "none" else pki.client(cfg.client_cert)
        self._tmp = tempfile.TemporaryDirectory(prefix="secperf-device-dtls-")
        self.psk_file = Path(private_dir(Path(self._tmp.name))) / "psk"  # 32 random bytes, this server's only
        write_private(self.psk_file, f"{self.PSK_IDENTITY}\n{secrets.token_hex(32)}\n".encode())
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.library = "wolfSSL"
        self.errors: list[str] = []  # its stderr's first lines once stopped

    def argv(self, exe: Path) -> list[str]:
        cfg = self.cfg
        version = "1.3" if cfg.tls == "dtls1.3" else "1.2"
        ciphers = (
            PAIR_PSK_SUITES[cfg.suite] if cfg.mode == "psk" and version == "1.2" else PAIR_SUITES[(version, cfg.suite)]
        )
        out = [
            str(exe),
            "--role",
            "server",
            "--version",
            version,
            "--host",
            "127.0.0.1",
            "--ca",
            str(self.client.ca if self.client else self.certs.ca),
            "--cert",
            str(self.certs.chain),
            "--key",
            str(self.certs.key),
            "--any-group",
            "--ciphers",
            ciphers,
        ]
        out += ["--cid"] if cfg.mode in CID_MODES else []
        out += [] if self.client else ["--no-client-auth"]
        out += ["--psk-file", str(self.psk_file)] if cfg.mode == "psk" else []
        return out

    def __enter__(self) -> PairServer:
        """Start the server (the pair is built first if it is not: DtlsPeerBuildError). A server that
        cannot be spawned, exits, or prints no ready line within its limit is stopped and raises
        DtlsPeerError with its own words: that configuration fails, the run goes on."""
        try:
            exe = ensure_peer()
            self.library = library_version(exe)
            self.proc = proc = registry.spawn(
                self.argv(exe),
                "DTLS server (wolfSSL, device peer)",
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:  # the pair's executable cannot be run (gone, not executable)
            self.__exit__(None, None, None)
            raise DtlsPeerError(f"{self.name} did not start: {exc.strerror or exc}") from None
        except BaseException:
            self.__exit__(None, None, None)
            raise
        line, limit = first_line(proc, SERVER_READY_S)  # a server that hangs is an error, not a wait
        try:
            self.port = int(json.loads(line)["ready"])
        except (ValueError, KeyError, TypeError):
            status = proc.poll()
            self.__exit__(None, None, None)  # stopped with all it started; its stderr read
            said = _first_error("\n".join(self.errors) or line)
            if status is None:  # still running at the limit (stopped now)
                why = f"no ready line within {limit:g} s" + (f" ({said})" if said else "")
            else:
                why = f"{said} ({_status(status)})" if said else _status(status)
            raise DtlsPeerError(f"{self.name} did not start: {why}") from None
        return self

    def died(self) -> str | None:
        """Why the server is gone while it should still serve (its exit status and first stderr line),
        or None while it runs: read before __exit__ stops it."""
        if self.proc is None or self.proc.poll() is None:
            return None
        said = _first_error(self.proc.stderr.read() if self.proc.stderr else "")
        return f"{self.name} exited during the run ({_status(self.proc.returncode)})" + (f": {said}" if said else "")

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc is not None:
                registry.kill_tree(self.proc, reap=False)  # it and its process group
                self.proc.wait()
                registry.forget(self.proc)
                err = self.proc.stderr.read() if self.proc.stderr and not self.proc.stderr.closed else ""
                self.errors = [ln.strip() for ln in err.splitlines() if ln.strip()][:5]
                if self.proc.stderr is not None:  # its stdout is the ready-line reader's (lab/processes)
                    self.proc.stderr.close()
                self.proc = None
        finally:
            self._tmp.cleanup()


def _status(code: int) -> str:
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


def _first_error(text: str) -> str:
    """A peer's first non-empty stderr line (its own words), cut to a reason's length."""
    return next((ln.strip()[:300] for ln in text.splitlines() if ln.strip()), "")


def ensure_peer() -> Path:
    """The DTLS 1.3 / CID peer's executable, built now if it is not (measure/dtls13.ensure_tool).

    Decision -- a peer that cannot be BUILT is a build failure of the run, not a failed series: the
    device handshake command builds every guest client (measure/device_build.ensure_built), the QUIC
    client (quic_device_build.ensure_built) and the EDHOC initiator (edhoc_device_build.build) before
    anything runs, and a build that fails there is a DeviceSetupError (exit 1, nothing measured,
    naming what is missing). The peer is a build the run needs like them, found missing by the same
    kind of cause (no wolfSSL 5.9 sources, no compiler, a build past its limit): it is built in the
    same place (app/device.py, before the first configuration) and fails the same way,
    DtlsPeerBuildError (a DeviceSetupError). A peer that was built but does not START (exits, is
    killed, passes its start limit) or dies during a configuration is that configuration's failed
    series with the peer's own words (DtlsPeerError), and the other configurations go on."""
    try:
        return ensure_tool()
    except DtlsSetupError as exc:
        raise DtlsPeerBuildError(f"the DTLS 1.3 / CID peer ({PairServer.name}) cannot be built: {exc}") from None


PSK_PEER = "secperf-probe DTLS server (OpenSSL, host, loopback)"


def psk_server(certs: CertSet, client_ca: Path | None, identity: str, key_hex: str) -> ProbeServer:
    """The DTLS 1.2 psk row's peer (not started): the probe server over DTLS 1.2 with a cookie
    exchange, the server certificate s_server had, the lab client CA when the row asks for a client
    certificate, and the external PSK `identity` whose key (hex) it reads from a 0600 file in its
    private work directory (listed in the run registry, removed when it stops): never on a command line."""

    svc = ProbeServer(certs, proto="dtls", client_ca=client_ca)
    key_file = svc.write_secret(svc.workdir / "psk.hex", f"{key_hex}\n".encode())
    svc.args = ["--tls", "1.2", "--dtls-cookie", "on", "--psk-identity", identity, "--psk-file", str(key_file)]
    return svc


def psk_refused(cfg: Config, hs: Handshake, conn: dict[str, Any]) -> bool:
    """Whether a psk handshake fell back to certificates: DTLS 1.2's PSK is a suite of its own (the
    negotiated suite names PSK); in TLS/DTLS 1.3 a server Certificate means the PSK was refused."""
    if cfg.tls == "dtls1.2":
        return "PSK" not in (conn.get("suite") or "").upper()
    return any(m["dir"] == "received" and m["message"] == "Certificate" for m in hs.messages)


def cid_failures(cfg: Config, conns: list[dict[str, Any]]) -> list[str]:
    """A -cid row's handshakes that completed without a connection ID: failed samples with the reason."""
    if cfg.mode not in CID_MODES:
        return []
    return [
        f"handshake {c['conn']}: no connection ID was negotiated"
        for c in conns
        if c.get("ok") and not c.get("cid_bytes")
    ]


def cid_ok(cfg: Config, conn: dict[str, Any]) -> bool:
    return cfg.mode not in CID_MODES or bool(conn.get("cid_bytes"))


def labels(cfg: Config, server: object) -> dict[str, Any]:
    """What a DTLS series says of its peer and connection ID (TLS series: nothing new). `server` is the
    row's peer: a PairServer, or measure/device_server.Server (its `svc` the probe server for the psk row)."""
    if not cfg.dtls:
        return {}
    out: dict[str, Any] = {
        "cid": cfg.mode in CID_MODES,
        "handshake": cfg.mode,
        "cookie": "HelloRetryRequest" if cfg.tls == "dtls1.3" else "HelloVerifyRequest",
    }
    if isinstance(server, PairServer):
        out["server"] = f"{server.library} DTLS server (native/dtls13, host, loopback)"
        out["server_cid_bytes"] = SERVER_CID_BYTES if cfg.mode in CID_MODES else 0
    else:
        if isinstance(getattr(server, "svc", None), ProbeServer):  # the psk row's peer (psk_server)
            out["server"] = PSK_PEER
    return out


class DtlsPeerError(MeasurementError):
    """The host DTLS peer of a DTLS 1.3 or CID row did not start (it exited, was killed or passed its
    start limit) or died during the row: measure/device.measure_config makes that configuration's
    series failed with this reason, and the run goes on."""


class DtlsPeerBuildError(DeviceSetupError):
    """The host DTLS peer cannot be built here: a build failure of the run, as a guest client's
    (ensure_peer says why)."""
