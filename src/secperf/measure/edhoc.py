"""EDHOC (RFC 9528) + OSCORE (RFC 8613) set-up, measured: `secperf connect edhoc`.

A real EDHOC implementation (lakers, Rust, through its Python bindings) runs over real kernel UDP
as CoAP (RFC 9528 Appendix A.2, POST /.well-known/edhoc), the responder inside aiocoap's OSCORE
site wrapper, the initiator driven message by message in secperf.measure.edhoc_peer; then OSCORE-
protected CoAP GETs with the context derived from the EDHOC exporter. Over `--network` the server
runs in the link's server namespace and the client in its device namespace.

One configuration becomes one Result series (kind "connect", protocol "edhoc"):
- values_us: set-up time per handshake, "message_1 prepared → first OSCORE-protected response
  verified" (the protocol is usable);
- cpu_values_us: the initiator thread's CPU over the same span (lakers, CBOR, CoAP, aiocoap);
- samples: each handshake raw: per-message client CPU (thread CPU clock read at each message
  boundary: message_1 = prepare_message_1; message_2 = parse + verify message_2; message_3 =
  prepare_message_3 + OSCORE key derivation; message_4 = processing the responder's reply in the
  separate flow), EDHOC message sizes, CoAP datagram sizes, per-request OSCORE protect/unprotect
  CPU and round trip;
- derived: medians of those, the messages' sizes, round trips to the first protected response.

What lakers (0.6) offers, and so what is measured: method 3 (static DH / static DH), cipher suite 2
(AES-CCM-16-64-128, SHA-256, P-256, ES256), credentials as CWT claim sets, by reference (kid) or by
value (kccs). Method 0 (signatures), suites 0/1/3-6 and X.509 credentials (x5t, x5chain) are not
implemented there; asking for them is an input error naming what lakers has. The what-if flight
model (model/flights/edhoc.py) covers them, sized from RFC 9528's encodings and checked against
RFC 9529's traces. lakers keeps its keys in memory (no PKCS#11): a secure-element key cannot be
measured here; the model charges the secure element's operation from its profile (inputs/se_profiles).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric import ec

from ..core import result as R
from ..core.errors import InputError, MeasurementError
from ..core.jsonlines import parse_lines
from ..core.paths import private_dir, secperf_home, write_private
from ..core.result_schema import ConnectDerived, Result, Series
from ..lab import registry
from ..lab.netns import LinkPerNetwork
from ..lab.processes import first_line
from .link_counts import link_timeout_ms

if TYPE_CHECKING:
    from ..core.store import Run
    from ..inputs.netspec import NetSpec
    from ..lab.netns import Link
    from . import Progress

# RFC 9528 section 3.2 / 3.6 / IANA: what exists, and what lakers implements
METHODS = {
    0: "signature / signature",
    1: "signature / static DH",
    2: "static DH / signature",
    3: "static DH / static DH",
}
SUITES = {
    0: "AES-CCM-16-64-128, SHA-256, X25519, EdDSA",
    1: "AES-CCM-16-128-128, SHA-256, X25519, EdDSA",
    2: "AES-CCM-16-64-128, SHA-256, P-256, ES256",
    3: "AES-CCM-16-128-128, SHA-256, P-256, ES256",
    4: "ChaCha20/Poly1305, SHA-256, X25519, EdDSA",
    5: "ChaCha20/Poly1305, SHA-256, P-256, ES256",
    6: "A128GCM, SHA-256, X25519, ES256",
    24: "A256GCM, SHA-384, P-384, ES384",
    25: "ChaCha20/Poly1305, SHAKE256, X448, EdDSA",
}
CREDENTIALS = {
    "kid": "CCS by reference (kid)",
    "value": "CCS by value (kccs)",
    "x5t": "X.509 by hash (x5t)",
    "x5chain": "X.509 by value (x5chain)",
}
LAKERS_METHODS = (3,)
LAKERS_SUITES = (2,)
LAKERS_CREDENTIALS = ("kid", "value")
FLOWS = ("separate", "combined")
TIMER_START = "initiator starts message_1"
USABLE = "first OSCORE-protected CoAP response received and verified"


class EdhocError(InputError):
    """An EDHOC configuration that cannot be measured as asked (method, suite, credential, key)."""


@dataclass(frozen=True)
class EdhocConfig:
    method: int = 3
    suite: int = 2
    cred: str = "kid"  # kid | value (CCS); x5t | x5chain exist in the model only
    flow: str = "separate"  # separate: message_3 in its own POST; combined: with the first request
    requests: int = 1  # OSCORE-protected requests per handshake (the first one ends the timer)
    network: str = "loopback"

    @property
    def series_id(self) -> str:
        net = "" if self.network in ("loopback", "none") else f"@{self.network}"
        return f"connect/edhoc/m{self.method}/s{self.suite}/{self.cred}/{self.flow}{net}"

    @property
    def label(self) -> str:
        return f"edhoc method {self.method} suite {self.suite} {self.cred} {self.flow}" + (
            "" if self.network in ("loopback", "none") else f" over {self.network}"
        )


def validate(cfg: EdhocConfig) -> None:
    """Refuse, naming it, what lakers cannot run (exit 2 through InputError)."""
    if cfg.method not in METHODS:
        raise EdhocError(
            f"EDHOC method {cfg.method}: not defined by RFC 9528; methods: "
            + ", ".join(f"{k} ({v})" for k, v in METHODS.items())
        )
    if cfg.method not in LAKERS_METHODS:
        raise EdhocError(
            f"EDHOC method {cfg.method} ({METHODS[cfg.method]}): lakers 0.6 implements method 3 "
            f"(static DH / static DH) only; method {cfg.method} is in the what-if model "
            f"(secperf whatif edhoc --handshake m{cfg.method}-kid)"
        )
    if cfg.suite not in SUITES:
        raise EdhocError(f"EDHOC cipher suite {cfg.suite}: not registered; suites: {', '.join(map(str, SUITES))}")
    if cfg.suite not in LAKERS_SUITES:
        raise EdhocError(
            f"EDHOC cipher suite {cfg.suite} ({SUITES[cfg.suite]}): lakers 0.6 offers suite 2 ({SUITES[2]}) only"
        )
    if cfg.cred not in CREDENTIALS:
        raise EdhocError(f"EDHOC credential {cfg.cred!r}: known: {', '.join(CREDENTIALS)}")
    if cfg.cred not in LAKERS_CREDENTIALS:
        raise EdhocError(
            f"EDHOC credential {cfg.cred} ({CREDENTIALS[cfg.cred]}): lakers 0.6 takes CWT claim "
            "sets only: kid (by reference) or value (by value)"
        )
    if cfg.flow not in FLOWS:
        raise EdhocError(f"EDHOC flow {cfg.flow!r}: known: {', '.join(FLOWS)}")
    if cfg.requests < 1:
        raise EdhocError("EDHOC + OSCORE needs at least one protected request (it ends the timer)")


# -- keys -----------------------------------------------------------------------------------------------


def make_keys(directory: Path) -> Path:
    """Fresh P-256 static DH keys for both ends: server.key/client.key (COSE_Key, CBOR, 0600) and their
    CWT claim sets server.ccs/client.ccs (kids 0x0a and 0x2b, as RFC 9529 trace 2's lengths)."""
    import cbor2  # reason: optional 'protocols' extra

    d = private_dir(Path(directory))
    for who, kid in (("server", b"\x0a"), ("client", b"\x2b")):
        priv = ec.generate_private_key(ec.SECP256R1())
        nums = priv.private_numbers()
        x, y = (nums.public_numbers.x.to_bytes(32, "big"), nums.public_numbers.y.to_bytes(32, "big"))
        write_private(d / f"{who}.key", cbor2.dumps({1: 2, -1: 1, -4: nums.private_value.to_bytes(32, "big")}))
        registry.track_secret(d / f"{who}.key")
        ccs = {14: {2: "", 8: {1: {1: 2, 2: kid, -1: 1, -2: x, -3: y}}}}
        (d / f"{who}.ccs").write_bytes(cbor2.dumps(ccs))
    return d


# -- in-process sizes (no network): the implementation's messages for the RFC 9529 comparison ----------


def message_sizes(cred: str = "kid") -> dict[str, int]:
    """EDHOC message sizes lakers produces for method 3, suite 2, CCS credentials sent as `cred`, one
    handshake in this process with fresh keys (sizes do not depend on the key values)."""
    import cbor2  # reason: optional 'protocols' extra
    import lakers  # reason: optional 'protocols' extra

    validate(EdhocConfig(cred=cred))
    keys = {}
    for who, kid in (("r", b"\x0a"), ("i", b"\x2b")):
        priv, pub = lakers.p256_generate_key_pair()

        pk = ec.derive_private_key(int.from_bytes(priv, "big"), ec.SECP256R1()).public_key().public_numbers()
        ccs = cbor2.dumps(
            {2: "", 8: {1: {1: 2, 2: kid, -1: 1, -2: pk.x.to_bytes(32, "big"), -3: pk.y.to_bytes(32, "big")}}},
            canonical=True,
        )
        keys[who] = (priv, ccs)
    transfer = lakers.CredentialTransfer.ByReference if cred == "kid" else lakers.CredentialTransfer.ByValue
    ini, res = lakers.EdhocInitiator(), lakers.EdhocResponder(*keys["r"])
    m1 = ini.prepare_message_1(b"\x37", None)
    _c_i, ead_1 = res.process_message_1(m1)
    m2 = res.prepare_message_2(transfer, b"\x27", ead_1)
    _c_r, id_cred_r, _ = ini.parse_message_2(m2)
    ini.verify_message_2(keys["i"][0], keys["i"][1], lakers.credential_check_or_fetch(id_cred_r, keys["r"][1]))
    m3, prk_i = ini.prepare_message_3(transfer, None)
    id_cred_i, _ = res.parse_message_3(m3)
    prk_r = res.verify_message_3(lakers.credential_check_or_fetch(id_cred_i, keys["i"][1]))
    if bytes(prk_i) != bytes(prk_r):
        raise MeasurementError("lakers: initiator and responder derived different PRK_out")
    return {"message_1": len(m1), "message_2": len(m2), "message_3": len(m3)}


# -- the measurement ---------------------------------------------------------------------------------


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _peer_argv(role: str, cfg: EdhocConfig, keys: Path, host: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "secperf.measure.edhoc_peer",
        role,
        "--keys",
        str(keys),
        "--host",
        host,
        "--port",
        str(port),
        "--cred-style",
        cfg.cred,
    ]


def _env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2])  # the package's root: the workers import secperf
    return {**os.environ, "PYTHONPATH": src + (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")}


SERVER_READY_S = 60.0  # the server's Python start-up (aiocoap, lakers) on a loaded host


def _start_server(cfg: EdhocConfig, keys: Path, link: Link | None, port: int) -> tuple[subprocess.Popen[str], str]:
    emul = link if link is not None and not link.loopback else None
    host = emul.server_addr if emul else "127.0.0.1"
    argv = _peer_argv("server", cfg, keys, host, port)
    kw: dict[str, Any] = dict(
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), start_new_session=True
    )
    proc = emul.popen("srv", argv, **kw) if emul else registry.spawn(argv, "EDHOC/OSCORE server (aiocoap)", **kw)
    line, limit = first_line(proc, SERVER_READY_S)  # within a limit: a server that hangs is stopped and named
    if line.strip() != "ready":
        err = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
        _stop(proc)
        why = (err or line).strip()[-300:] or f"no ready line within {limit:g} s"
        raise MeasurementError(f"the EDHOC server did not start: {why}")
    return proc, host


def _stop(proc: subprocess.Popen[str] | None) -> None:
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except Exception:  # noqa: BLE001
            proc.kill()
            proc.wait()
    registry.forget(proc)


def _median(xs: Iterable[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return statistics.median(got) if got else None


def measure(
    cfg: EdhocConfig, n: int, warmup: int, keys: Path, link: Link | None = None, timeout_ms: int = 5000
) -> Series:
    """One configuration: n timed handshakes (+ warm-up) in one client process; a series."""
    validate(cfg)
    s = R.new_series(
        cfg.series_id,
        kind="connect",
        labels={
            **asdict(cfg),
            "protocol": "edhoc",
            "client": "lakers+aiocoap",
            "key_source": "software",
            "group": "p-256" if cfg.suite == 2 else None,
            "handshake": "full",
            "implementation": _versions(),
            "label": cfg.label,
        },
        timer={
            "name": "EDHOC + OSCORE set-up",
            "start": TIMER_START,
            "end": USABLE,
            "cpu": "initiator thread CPU over the same span (lakers, CBOR, CoAP, aiocoap)",
        },
    )
    port = _free_udp_port() if link is None or link.loopback else 5683
    server: subprocess.Popen[str] | None = None
    try:
        server, host = _start_server(cfg, keys, link, port)
        argv = _peer_argv("client", cfg, keys, host, port) + [
            "--n",
            str(n),
            "--warmup",
            str(warmup),
            "--timeout-ms",
            str(timeout_ms),
            "--flow",
            cfg.flow,
            "--requests",
            str(cfg.requests),
        ]
        if link is not None and not link.loopback:
            argv = link.dev_exec(argv)
        budget = (n + warmup) * (timeout_ms / 1000 + 2) + 30
        r = registry.run(
            argv, "EDHOC/OSCORE client (lakers + aiocoap)", capture_output=True, text=True, env=_env(), timeout=budget
        )
        lines = list(parse_lines(r.stdout))
        if not lines:
            R.add_failure(s, f"the EDHOC client printed nothing (exit {r.returncode}): {r.stderr.strip()[-300:]}")
        for ln in lines:
            if ln.get("warm"):
                continue
            s.samples.append(ln)
            if ln.get("ok"):
                s.values_us.append(ln["usable_us"])
                s.cpu_values_us.append(ln["cpu_total_us"])
            else:
                R.add_failure(s, f"handshake {ln.get('i')}: {ln.get('reason', 'failed')}")
    except Exception as exc:  # noqa: BLE001 - a configuration that fails is a failed series with its reason
        R.add_failure(s, f"{type(exc).__name__}: {exc}")
    finally:
        _stop(server)
    s.derived = derive(s.samples, cfg)
    return R.finalize_series(s)


def derive(samples: list[dict[str, Any]], cfg: EdhocConfig) -> ConnectDerived:
    ok = [x for x in samples if x.get("ok")]
    if not ok:
        return ConnectDerived()
    msgs = sorted({k for x in ok for k in x["cpu_us"]})
    out = ConnectDerived(
        cpu_per_message_p50_us={m: _median([x["cpu_us"].get(m) for x in ok]) for m in msgs},
        edhoc_bytes=ok[0]["edhoc_bytes"],
        coap_bytes=ok[0]["coap_bytes"],
        edhoc_p50_us=_median([x["edhoc_us"] for x in ok]),
        first_request_p50_us=_median([x["requests"][0]["rtt_us"] for x in ok if x["requests"]]),
        oscore_protect_cpu_p50_us=_median([q.get("protect_cpu_us") for x in ok for q in x["requests"]]),
        oscore_unprotect_cpu_p50_us=_median([q.get("unprotect_cpu_us") for x in ok for q in x["requests"]]),
        oscore_request_bytes=ok[0]["requests"][0].get("oscore_outer_bytes") if ok[0]["requests"] else None,
        round_trips_to_first_response=3 if cfg.flow == "separate" else 2,
        cipher_suite=ok[0].get("suite"),
        attribution="per-message CPU: thread CPU between message boundaries inside lakers calls "
        "(message_3 includes the OSCORE key derivation); the rest of the total is CoAP/aiocoap",
    )
    seg = [sum(v for v in x["cpu_us"].values()) for x in ok]
    out.edhoc_library_cpu_p50_us = _median(seg)
    # the connect rows' phase list, so `whatif --calibrate` fits EDHOC's base: costs from this row
    # (model/costs.calibrate): the client's compute per set-up is its thread CPU over the whole span
    out.phases_p50_us = [{"phase": "handshake: client CPU", "p50_us": _median([x["cpu_total_us"] for x in ok])}]
    return out


def _versions() -> str:
    parts = []
    for pkg in ("lakers-python", "aiocoap"):
        try:
            parts.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            parts.append(f"{pkg} missing")
    return ", ".join(parts)


def run(
    configs: list[EdhocConfig],
    n: int,
    warmup: int,
    timeout_ms: int,
    seed: int,
    doc: Result,
    run: Run | None = None,
    progress: Progress | None = None,
    specs: Sequence[NetSpec] = (),  # the --network links the command resolved, by name in the configs
) -> Result:
    """Every configuration in turn over its network (one emulated link per network); series into doc."""

    keys = make_keys(secperf_home() / "lab" / "edhoc-keys")
    try:
        with LinkPerNetwork(seed, specs) as links:
            for k, cfg in enumerate(configs):
                if progress:
                    progress("start", cfg, k, len(configs), None)
                link, err = links.get(cfg.network)
                if err:
                    s = R.new_series(
                        cfg.series_id,
                        kind="connect",
                        labels={**asdict(cfg), "protocol": "edhoc", "label": cfg.label},
                        timer={"name": "EDHOC + OSCORE set-up", "start": TIMER_START, "end": USABLE},
                    )
                    R.add_failure(s, f"network {cfg.network}: {err}")
                    doc.series.append(R.finalize_series(s))
                else:
                    t_ms = link_timeout_ms(timeout_ms, link.spec) if link is not None else timeout_ms
                    doc.series.append(measure(cfg, n, warmup, keys, link, int(t_ms)))
                if run is not None:
                    run.save(doc)
                if progress:
                    progress("done", cfg, k, len(configs), None)
    finally:
        for who in ("server", "client"):
            registry.forget_secret(keys / f"{who}.key")
    return doc
