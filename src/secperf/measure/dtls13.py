"""`secperf connect dtls13|dtls12`: DTLS 1.3 (RFC 9147) and DTLS 1.2 (RFC 6347) on the same wolfSSL
5.9 server, with or without connection IDs, full and resumed, over real kernel UDP.

Why a native pair (native/dtls13/dtls_pair.c) on wolfSSL 5.9: OpenSSL 3.0 (the probe's library) has
no DTLS 1.3, and Debian 12's libwolfssl 5.5.4 is built without --enable-dtls13. wolfSSL 5.9.4's
sources come with the wolfssl-sys crate that scripts/bootstrap fetches for the device stack
`wolfssl59` (`secperf device handshake --stack wolfssl59`); this module builds them for the host at first use (CMake: DTLS, DTLS 1.3, connection
IDs, session tickets, HRR cookie) into $SECPERF_HOME/dtls/<fingerprint>/ together with the pair,
keyed by a hash of the sources and flags -- as the device builds are (measure/device_build.py).

One configuration becomes one connect series: establishment time from the client's first datagram
being built to the response read (request 40 B, response 846 B as study S1's GET); the client's
thread CPU at message boundaries (ClientHello written; the rest of the handshake; request →
response); every datagram on the wire with its size and records, hence bytes, datagrams and round
trips per connection. Both ends authenticate with the lab's ECDSA P-256 certificates (mutual, as
the CoAP rows), group X25519, AES-128-GCM. The server asks for a cookie in both versions (DTLS 1.3:
HelloRetryRequest, 1.2: HelloVerifyRequest), as RFC 9147 section 5.1 recommends for servers on
the open Internet. With connection IDs the server gives an 8-byte CID (the client's is empty:
server-to-device records stay CID-free, as an IoT deployment behind NAT wants).

`lost` ("client-hello"): the client's first datagram is not sent, so the handshake waits for
wolfSSL's retransmission timer (1 s initial, doubling: RFC 9147 section 5.8.2).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core import stats
from ..core.errors import InputError
from ..core.native import shipped_sources
from ..core.paths import private_dir, secperf_home
from ..core.result_schema import ConnectDerived, LinkedDerived, Result, Series
from ..lab import registry
from ..lab.netns import LinkPerNetwork
from ..lab.pki import LabPKI
from ..lab.processes import first_line
from .device_build import DeviceSetupError, source_dir
from .link_counts import link_counters, link_timeout_ms

if TYPE_CHECKING:
    from ..core.store import Run
    from ..inputs.netspec import NetSpec
    from ..lab.netns import Link
    from . import Progress

HANDSHAKES = ("full", "resumed")
LOSSES = ("none", "client-hello")
# the installed package's copy (CMake installs it into share/dtls13), else the source tree's
SOURCE = (
    shipped_sources("dtls13", "native/dtls13", "dtls_pair.c")
    or Path(__file__).resolve().parents[1] / "share" / "dtls13"
) / "dtls_pair.c"
USABLE = "response received (response_bytes read)"
TIMER_START = "client: first datagram built (wolfSSL_connect started)"
CPU_SEGMENTS = ("ClientHello", "server flight → client Finished", "request → response")
INITIAL_RTX_S = 1.0  # wolfSSL DTLS_TIMEOUT_INIT; RFC 9147 section 5.8.2 recommends 1 s
SERVER_CID_BYTES = 8
WOLFSSL_CMAKE = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DWOLFSSL_DTLS=yes",
    "-DWOLFSSL_DTLS13=yes",
    "-DWOLFSSL_DTLS_CID=yes",
    "-DWOLFSSL_TLS13=yes",
    "-DWOLFSSL_SESSION_TICKET=yes",
    "-DWOLFSSL_CURVE25519=yes",
    "-DWOLFSSL_HRR_COOKIE=yes",
    "-DWOLFSSL_EXAMPLES=no",
    "-DWOLFSSL_CRYPT_TESTS=no",
    # external PSKs, for the server as the emulated device's DTLS 1.3 psk peer (measure/device_dtls.py);
    # the pair's own client sets none
    "-DWOLFSSL_PSK=yes",
]
BUILD_TIMEOUT_S = 900


class DtlsSetupError(InputError):
    """The DTLS pair cannot be built here (no wolfSSL 5.9 sources, no compiler, no cmake)."""


@dataclass(frozen=True)
class Dtls13Config:
    version: str = "1.3"  # 1.3 | 1.2 (the same wolfSSL server and client)
    handshake: str = "full"  # full | resumed
    cid: bool = False
    network: str = "loopback"
    lost: str = "none"  # none | client-hello
    request_bytes: int = 40
    response_bytes: int = 846

    @property
    def protocol(self) -> str:
        return "dtls13" if self.version == "1.3" else "dtls12"

    @property
    def series_id(self) -> str:
        extra = "/cid" if self.cid else ""
        extra += "" if self.lost == "none" else f"/lost-{self.lost}"
        extra += "" if self.network in ("loopback", "none") else f"@{self.network}"
        return f"connect/{self.protocol}/wolfssl/{self.handshake}{extra}"

    @property
    def label(self) -> str:
        parts = [f"dtls{self.version}", "wolfssl", self.handshake]
        parts += ["cid"] if self.cid else []
        parts += [f"lost {self.lost}"] if self.lost != "none" else []
        parts += [f"@ {self.network}"] if self.network not in ("loopback", "none") else []
        return " ".join(parts)


def validate(cfg: Dtls13Config) -> None:
    if cfg.version not in ("1.2", "1.3"):
        raise InputError(f"DTLS version {cfg.version!r}: the wolfSSL pair speaks 1.2 and 1.3")
    if cfg.handshake not in HANDSHAKES:
        raise InputError(f"{cfg.protocol}: unknown handshake {cfg.handshake!r}; known: {', '.join(HANDSHAKES)}")
    if cfg.lost not in LOSSES:
        raise InputError(f"{cfg.protocol}: unknown --lost {cfg.lost!r}; known: {', '.join(LOSSES)}")


# --- the build -----------------------------------------------------------------------------------


def wolfssl_source() -> Path:
    try:
        return source_dir("wolfssl59")
    except DeviceSetupError as exc:
        raise DtlsSetupError(str(exc)) from None


def _fingerprint(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()[:16]


SERVER_READY_S = 30.0  # the wolfSSL DTLS server's start-up to its ready line


def _run_steps(steps: list[list[str]], log: Path) -> None:
    with open(log, "a") as fh:
        for argv in steps:
            try:  # registered, in a process group of its own: killed whole (its compilers too) past the limit
                p = registry.run(
                    argv,
                    f"building the DTLS pair ({Path(argv[0]).name})",
                    BUILD_TIMEOUT_S,
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except subprocess.TimeoutExpired as exc:
                raise DtlsSetupError(
                    f"building the DTLS pair: `{Path(argv[0]).name}` did not finish within {exc.timeout:g} s "
                    f"and was stopped (log: {log})"
                ) from None
            if p.returncode != 0:
                raise DtlsSetupError(f"building the DTLS pair failed at `{' '.join(argv[:2])}` (log: {log})")


def library_dir(src: Path) -> Path:
    """Where the library of this wolfSSL source and WOLFSSL_CMAKE is built (its install: wolfssl/)."""
    return (
        secperf_home()
        / "dtls"
        / ("wolfssl-" + _fingerprint(" ".join(WOLFSSL_CMAKE).encode(), (src / "wolfssl" / "version.h").read_bytes()))
    )


def pair_compile_argv(inst: Path, out: Path) -> list[str]:
    """The pair's compile and link command against the wolfSSL installed at inst (the lint's
    compile database, scripts/lint_compile_db.py, takes its flags from here too)."""
    return [
        "cc",
        "-O2",
        "-std=gnu11",
        "-D_GNU_SOURCE",
        "-Wall",
        "-o",
        str(out),
        str(SOURCE),
        f"-I{inst / 'include'}",
        str(inst / "lib" / "libwolfssl.a"),
        "-lm",
        "-lpthread",
    ]


def ensure_tool() -> Path:
    """The built pair (built now if needed: the library once per wolfSSL version and flags, the pair
    once per source); DtlsSetupError naming what is missing."""
    src = wolfssl_source()
    for tool, pkg in (("cmake", "cmake"), ("cc", "gcc")):
        if not shutil.which(tool):
            raise DtlsSetupError(f"{tool} not found: install the Debian package {pkg} (scripts/bootstrap installs it)")
    lib_dir = library_dir(src)
    inst = lib_dir / "wolfssl"
    private_dir(lib_dir)
    log = lib_dir / "build.log"
    if not (inst / "lib" / "libwolfssl.a").exists():
        build = lib_dir / "build"
        _run_steps(
            [
                ["cmake", "-S", str(src), "-B", str(build), f"-DCMAKE_INSTALL_PREFIX={inst}", *WOLFSSL_CMAKE],
                ["cmake", "--build", str(build), "-j2"],
                ["cmake", "--install", str(build)],
            ],
            log,
        )
        shutil.rmtree(build, ignore_errors=True)
    # the pair includes ../common's option parser and JSON writer: they are part of its cache key
    common = [c.read_bytes() for c in sorted((SOURCE.parent.parent / "common").glob("*.[ch]"))]
    exe = lib_dir / f"dtls_pair-{_fingerprint(SOURCE.read_bytes(), *common)}"
    if not exe.exists():
        tmp = exe.with_suffix(".tmp")
        _run_steps([pair_compile_argv(inst, tmp)], log)
        tmp.rename(exe)
    return exe


def library_version(exe: Path) -> str:
    inc = exe.parent / "wolfssl" / "include" / "wolfssl" / "version.h"
    for line in inc.read_text().splitlines() if inc.exists() else []:
        if "LIBWOLFSSL_VERSION_STRING" in line:
            return "wolfSSL " + line.split('"')[1]
    return "wolfSSL"


# --- one configuration ---------------------------------------------------------------------------


def _flights(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for d in wire:
        if not out or out[-1]["dir"] != d["dir"]:
            out.append({"dir": d["dir"], "datagrams": 0, "bytes": 0, "records": []})
        f = out[-1]
        f["datagrams"] += 1
        f["bytes"] += d["bytes"]
        f["records"] += d["records"].split(",") if d["records"] else []
        if d.get("dropped"):
            f["dropped"] = f.get("dropped", 0) + 1
    return out


def _round_trips(wire: list[dict[str, Any]], until_us: float) -> int:
    n, last = 0, None
    for d in wire:
        if d["t_us"] > until_us:
            break
        if last == "c2s" and d["dir"] == "s2c":
            n += 1
        last = d["dir"]
    return n


def sample(conn: dict[str, Any]) -> dict[str, Any]:
    """A client line as a connect sample: flights, bytes and round trips up to the response."""
    if not conn.get("ok"):
        conn.pop("wire", None)
        return conn
    wire = conn.pop("wire")
    upto = [d for d in wire if d["t_us"] <= conn["usable_us"] + 1.0]
    segs = [conn.pop("cpu_hello_us"), conn.pop("cpu_handshake_us"), conn.pop("cpu_response_us")]
    conn.update(
        lib_cpu_us=sum(segs),
        cpu_segments=[{"segment": n, "cpu_us": v} for n, v in zip(CPU_SEGMENTS, segs)],
        round_trips=_round_trips(wire, conn["usable_us"] + 1.0),
        handshake_round_trips=_round_trips(wire, conn["handshake_us"] + 1.0),
        bytes_c2s=sum(d["bytes"] for d in upto if d["dir"] == "c2s"),
        bytes_s2c=sum(d["bytes"] for d in upto if d["dir"] == "s2c"),
        datagrams=len(upto),
        dropped=sum(1 for d in wire if d.get("dropped")),
        flights=_flights(upto),
    )
    return conn


def measure(
    cfg: Dtls13Config,
    n: int,
    warmup: int,
    pki: LabPKI,
    link: Link | None = None,
    timeout_s: float = 10.0,
    exe: Path | None = None,
    doc: Result | None = None,
) -> Series:
    validate(cfg)

    labels = {
        **asdict(cfg),
        "protocol": cfg.protocol,
        "client": "wolfssl",
        "server": "wolfssl",
        "label": cfg.label,
        "tls": cfg.version,
        "key_source": "software",
        "group": "x25519",
        "cipher": "aes-128-gcm",
        "cookie": "HelloRetryRequest" if cfg.version == "1.3" else "HelloVerifyRequest",
        "server_cid_bytes": SERVER_CID_BYTES if cfg.cid else 0,
    }
    s = R.new_series(
        cfg.series_id,
        kind="connect",
        labels=labels,
        timer={
            "name": "establishment",
            "start": TIMER_START,
            "end": USABLE,
            "clock": "CLOCK_MONOTONIC (dtls_pair), CLOCK_THREAD_CPUTIME_ID for client CPU",
        },
    )
    try:
        exe = exe or ensure_tool()
    except DtlsSetupError as exc:
        R.add_failure(s, f"build: {exc}")
        return R.finalize_series(s)
    s.labels["library"] = library_version(exe)
    emul = link if link is not None and not link.loopback else None
    if emul:
        s.labels.update(
            network_spec=emul.spec.canonical(), network_rtt_ms=emul.spec.rtt_ms, network_loss=emul.spec.loss
        )
    srv_certs, cli_certs = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    host = emul.server_addr if emul else "127.0.0.1"
    common = ["--version", cfg.version] + (["--cid"] if cfg.cid else [])
    srv_argv = [
        str(exe),
        "--role",
        "server",
        "--host",
        host,
        "--ca",
        str(cli_certs.ca),
        "--cert",
        str(srv_certs.cert),
        "--key",
        str(srv_certs.key),
        "--response-bytes",
        str(cfg.response_bytes),
        *common,
    ]
    prefix = emul.srv_prefix() if emul else []
    server = registry.spawn(
        [*prefix, *srv_argv],
        "DTLS server (wolfSSL)",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line, limit = first_line(server, SERVER_READY_S)  # a server that hangs is a failure, not a wait
        try:
            port = int(json.loads(line)["ready"])
        except (ValueError, KeyError, TypeError):
            said = server.stderr.read() if server.stderr and server.poll() is not None else ""
            why = said.strip() or line.strip() or f"no ready line within {limit:g} s"
            R.add_failure(s, f"server: did not start ({why})")
            return R.finalize_series(s)
        cli_argv = [
            str(exe),
            "--role",
            "client",
            "--host",
            host,
            "--port",
            str(port),
            "--ca",
            str(srv_certs.ca),
            "--cert",
            str(cli_certs.cert),
            "--key",
            str(cli_certs.key),
            "--n",
            str(n),
            "--warmup",
            str(warmup),
            "--mode",
            cfg.handshake,
            "--request-bytes",
            str(cfg.request_bytes),
            "--response-bytes",
            str(cfg.response_bytes),
            "--timeout-ms",
            str(max(1, int(timeout_s * 1000))),
            *common,
        ]
        cli_argv += ["--drop-first"] if cfg.lost == "client-hello" else []
        budget = (n + warmup + 2) * timeout_s + 30
        with link_counters(s.derived_as(LinkedDerived), link):
            try:
                p = registry.run(
                    [*(emul.dev_prefix() if emul else []), *cli_argv],
                    "DTLS client (wolfSSL)",
                    capture_output=True,
                    text=True,
                    timeout=budget,
                )
                out, err, rc = p.stdout, p.stderr, p.returncode
            except subprocess.TimeoutExpired as exc:
                out, err, rc = (
                    (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or ""),
                    "",
                    None,
                )
                R.add_failure(s, f"client did not finish within {exc.timeout:g} s")
    finally:
        server.kill()
        server.wait()
        registry.forget(server)
        server_err = server.stderr.read() if server.stderr else ""
    for line in out.splitlines():
        try:
            c = sample(json.loads(line))
        except (ValueError, KeyError):
            continue
        s.samples.append(c)
        if not c.get("ok"):
            R.add_failure(s, f"connection {c.get('i')}: {c.get('stage')}: {c.get('reason')}")
            continue
        if cfg.handshake == "resumed" and not c["resumed"]:
            c["ok"] = False
            R.add_failure(s, f"connection {c['i']}: resumption: the server did not resume the session")
            continue
        if cfg.cid and not c["cid"]:
            c["ok"] = False
            R.add_failure(s, f"connection {c['i']}: connection ID: not negotiated")
            continue
        s.values_us.append(float(c["usable_us"]))
        s.cpu_values_us.append(float(c["lib_cpu_us"]))
    if rc not in (0, None):
        R.add_failure(s, f"client exited with {rc}: {(err.strip().splitlines() or [''])[-1]}")
    if s.failures and server_err.strip():  # the server's own word on failed handshakes
        s.labels["server_errors"] = server_err.strip().splitlines()[-5:]
    _derive(s)
    return R.finalize_series(s)


def _derive(s: Series) -> None:
    ok = [c for c in s.samples if c.get("ok")]
    if not ok:
        return
    d = s.derived_as(ConnectDerived)
    for k in ("handshake_us", "round_trips", "handshake_round_trips", "bytes_c2s", "bytes_s2c", "datagrams"):
        setattr(
            d, f"{k.removesuffix('_us')}_p50" + ("_us" if k.endswith("_us") else ""), stats.median([c[k] for c in ok])
        )
    d.round_trips_note = (
        "round trips count the wire's client-to-server turns up to the response: with DTLS 1.3 "
        "the server's ticket and the client's request cross, so 5 turns are 4 waits"
    )
    d.resumed = sum(1 for c in ok if c["resumed"])
    # as the probe's connect rows name it, so `whatif --calibrate` takes the client's CPU from here
    d.phases_p50_us = [{"phase": "handshake: client CPU", "p50_us": stats.median([c["lib_cpu_us"] for c in ok])}]
    d.cid = sum(1 for c in ok if c["cid"])
    d.cpu_segments_p50_us = [
        {"segment": n, "p50_us": stats.median([c["cpu_segments"][k]["cpu_us"] for c in ok])}
        for k, n in enumerate(CPU_SEGMENTS)
    ]
    clean = [c for c in ok if not c["dropped"]] or ok
    d.flights = clean[0]["flights"]


def run(
    configs: list[Dtls13Config],
    n: int,
    warmup: int,
    timeout_ms: int,
    seed: int,
    doc: Result,
    run: Run | None = None,
    progress: Progress | None = None,
    specs: Sequence[NetSpec] = (),  # the --network links the command resolved, by name in the configs
) -> Result:
    pki = LabPKI().ensure()
    try:
        exe = ensure_tool()
        build_error = None
    except DtlsSetupError as exc:
        exe, build_error = None, str(exc)
    with LinkPerNetwork(seed, specs) as links:
        for k, cfg in enumerate(configs):
            if progress:
                progress("start", cfg, k, len(configs), None)
            link, err = links.get(cfg.network)
            if err or build_error:
                s = R.new_series(
                    cfg.series_id,
                    kind="connect",
                    labels={**asdict(cfg), "protocol": cfg.protocol, "label": cfg.label},
                    timer={"name": "establishment", "start": TIMER_START, "end": USABLE},
                )
                R.add_failure(s, f"network {cfg.network}: {err}" if err else f"build: {build_error}")
                doc.series.append(R.finalize_series(s))
            else:
                t_ms = link_timeout_ms(timeout_ms, link.spec) if link is not None else timeout_ms
                doc.series.append(measure(cfg, n, warmup, pki, link, t_ms / 1000.0, exe, doc))
            if run is not None:
                run.save(doc)
            if progress:
                progress("done", cfg, k, len(configs), None)
    return doc
