"""`secperf signer`: study S2's signing modes through a real PKCS#11 token (SoftHSM2) behind the
secure-element latency shim, for any profile and key type:

- local_sw: software signing in-process (cryptography, the same key type), and the
  `openssl dgst -sha256 -sign` command timed as a whole (process start included, labelled);
- sign_only: C_SignInit + C_Sign on a kept session and key handle;
- total: C_OpenSession, C_Login, C_FindObjects*, C_SignInit, C_Sign, C_Logout/C_CloseSession each time.

Token modes run in a worker process (one PKCS#11 initialisation per profile); the shim's per-call
log (CLOCK_MONOTONIC, the same clock as the worker's timestamps) is matched to iterations so each
series carries a per-PKCS#11-call breakdown: how much was signing, session set-up, login, search.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from ..core import result as R
from ..core import stats
from ..core.errors import InputError, MeasurementError
from ..core.jsonlines import parse_lines
from ..core.paths import private_dir
from ..core.result_schema import JwtDerived, LinkedDerived, Result, Series, SignerDerived
from ..inputs.netspec import LOOPBACK_NAMES
from ..inputs.se_profiles import write_shim_config
from ..lab import registry
from ..lab.netns import LinkPerNetwork
from ..lab.pki import CLIENT_KEY_TYPES, LabPKI
from ..lab.services import JwtServer
from ..lab.token import LabToken
from . import Progress
from .jwt import jwt_loop, software_signer
from .link_counts import link_counters, link_timeout_ms
from .probe import find_shim

if TYPE_CHECKING:
    from ..core.store import Run
    from ..inputs.netspec import NetSpec
    from ..inputs.se_profiles import Profile

MODES = ("local_sw", "local_sw_cmd", "sign_only", "total")
OVER_S_US = 1_000_000.0  # S2 counts runs over 1 s
TIMERS = {
    "local_sw": ("software signing in-process (cryptography)", "before sign()", "signature returned"),
    "local_sw_cmd": (
        "`openssl dgst -sha256 -sign KEY` as a whole command (process start included)",
        "fork/exec",
        "process exited",
    ),
    "sign_only": (
        "C_SignInit + C_Sign on a kept session and key handle",
        "before C_SignInit",
        "C_Sign returned the signature",
    ),
    "total": (
        "C_OpenSession, C_Login, C_FindObjects, C_SignInit, C_Sign, C_Logout, C_CloseSession",
        "before C_OpenSession",
        "after C_CloseSession",
    ),
}
MESSAGE = bytes(range(32))

DGST_TIMEOUT_S = 30  # one `openssl dgst -sign` of the local_sw_cmd rows, before $SECPERF_LIMIT_SCALE


class SignerError(InputError):
    pass


@dataclass
class SignerParams:
    n: int = 30
    warmup: int = 2
    seed: int = 1
    workdir: Path | None = None
    links: tuple[NetSpec, ...] = ()  # the --network links the command resolved (by name)

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "warmup": self.warmup, "seed": self.seed}


def _series(profile: str, key: dict[str, str], mode: str) -> Series:
    what, start, end = TIMERS[mode]
    return R.new_series(
        f"signer/{profile}/{key['key_type']}/{mode}",
        kind="signer",
        labels={
            "profile": profile,
            "key_type": key["key_type"],
            "key_label": key["label"],
            "mode": mode,
            "message_bytes": len(MESSAGE),
            "what": what,
        },
        timer={"name": mode, "start": start, "end": end, "clock": "CLOCK_MONOTONIC"},
    )


def key_type_for(profile: Profile | None, requested: str) -> str:
    """The token key a profile signs with: the one its hardware has where it has only one (the 1998
    RSA card: `algorithm = "rsa-1024"`), else the requested key type."""
    algorithm = getattr(profile, "algorithm", "") or ""
    return algorithm if algorithm.startswith("rsa-") and algorithm != "rsa-2048" else requested


def software_key(key_type: str, pki: LabPKI) -> tuple[PrivateKeyTypes, Path]:
    """The lab's software client key of the same type (for local_sw), and its PEM path."""

    cs = pki.client(
        key_type if key_type in CLIENT_KEY_TYPES else "rsa-2048" if key_type.startswith("rsa") else "ecdsa-p256"
    )
    return serialization.load_pem_private_key(cs.key.read_bytes(), None), cs.key


def _local_sign(sk: PrivateKeyTypes, key_type: str) -> Callable[[], bytes]:
    """The software signature of MESSAGE by the lab key of key_type (ECDSA P-256 or RSA PKCS#1 v1.5)."""
    if key_type.startswith("ecdsa") and isinstance(sk, ec.EllipticCurvePrivateKey):
        return lambda: sk.sign(MESSAGE, ec.ECDSA(hashes.SHA256()))
    if not key_type.startswith("ecdsa") and isinstance(sk, rsa.RSAPrivateKey):
        return lambda: sk.sign(MESSAGE, padding.PKCS1v15(), hashes.SHA256())
    raise SignerError(f"the lab's software key for {key_type} is a {type(sk).__name__}, not the key type's")


def measure_local(profile: str, key: dict[str, str], p: SignerParams, pki: LabPKI) -> list[Series]:
    out: list[Series] = []
    if key["key_type"] == "ecdsa-brainpoolp256r1":
        return out  # no brainpool software key in the lab PKI: local_sw is shown for P-256 and RSA
    sk, path = software_key(key["key_type"], pki)
    s = _series(profile, key, "local_sw")
    sign = _local_sign(sk, key["key_type"])
    for i in range(p.warmup + p.n):
        t0 = time.perf_counter_ns()
        sign()
        t1 = time.perf_counter_ns()
        if i >= p.warmup:
            s.values_us.append((t1 - t0) / 1000)
    out.append(R.finalize_series(s, OVER_S_US))
    s = _series(profile, key, "local_sw_cmd")
    msg = (p.workdir or path.parent) / "message.bin"
    msg.write_bytes(MESSAGE)
    limit = registry.scaled(DGST_TIMEOUT_S)
    for i in range(p.warmup + p.n):
        t0 = time.perf_counter_ns()
        try:  # bounded (it inherits the run's mark; not listed in the registry: its write would be timed)
            r = subprocess.run(
                ["openssl", "dgst", "-sha256", "-sign", str(path), "-out", os.devnull, str(msg)],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=limit,
            )
        except subprocess.TimeoutExpired:  # killed by subprocess.run: a failed sample, the run goes on
            R.add_failure(s, f"openssl dgst did not finish within {limit:g} s (stopped)")
            continue
        t1 = time.perf_counter_ns()
        if r.returncode != 0:
            R.add_failure(s, f"openssl dgst exited {r.returncode}: {r.stderr.decode(errors='replace')[-200:]}")
        elif i >= p.warmup:
            s.values_us.append((t1 - t0) / 1000)
    out.append(R.finalize_series(s, OVER_S_US))
    return out


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return list(parse_lines(path.read_text()))


def per_call_breakdown(iters: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Match logged PKCS#11 calls to iterations by time; per function: calls per operation and the
    median time per operation spent in it (and in its injected delay). Per operation: the median
    delay the profile injected (`injected_p50_ms`, what the profile drew with its seed) and the
    median of the rest (`host_p50_ms`: the operation's wall time less its injected delay: the
    token, the library, the host and any late wake-up), so a total can be read as profile + host."""
    calls = sorted(calls, key=lambda c: c["start_ns"])
    per_fn: dict[str, dict[str, list[float]]] = {}
    order: list[str] = []
    injected: list[float] = []
    host: list[float] = []
    j = 0
    for it in iters:
        seen: dict[str, list[float]] = {}
        while j < len(calls) and calls[j]["start_ns"] < it["start_ns"]:
            j += 1
        k = j
        while k < len(calls) and calls[k]["start_ns"] <= it["end_ns"]:
            c = calls[k]
            acc = seen.setdefault(c["fn"], [0.0, 0.0, 0.0])
            acc[0] += 1
            acc[1] += c["duration_ns"] / 1e6
            acc[2] += c["delay_ns"] / 1e6
            k += 1
        op_delay = sum(acc[2] for acc in seen.values())
        injected.append(op_delay)
        host.append((it["end_ns"] - it["start_ns"]) / 1e6 - op_delay)
        for fn, (cnt, dur, dly) in seen.items():
            if fn not in per_fn:
                order.append(fn)
                per_fn[fn] = {"count": [], "ms": [], "delay_ms": []}
            per_fn[fn]["count"].append(cnt)
            per_fn[fn]["ms"].append(dur)
            per_fn[fn]["delay_ms"].append(dly)
    n = max(1, len(iters))
    return {
        "calls": [
            {
                "fn": fn,
                "calls_per_op": sum(per_fn[fn]["count"]) / n,
                "p50_ms": stats.median(per_fn[fn]["ms"]),
                "delay_p50_ms": stats.median(per_fn[fn]["delay_ms"]),
            }
            for fn in order
        ],
        "token_calls_per_op": sum(sum(v["count"]) for v in per_fn.values()) / n,
        "injected_p50_ms": stats.median(injected) if injected else None,
        "host_p50_ms": stats.median(host) if host else None,
    }


def _run_worker(
    job: dict[str, Any], env: dict[str, str], s: Series, prefix: list[str] | None = None
) -> list[dict[str, Any]]:
    """Run the worker (under an argv prefix, e.g. a link's device namespace); add its iterations to
    series `s` (values in µs); return the good ones."""
    budget = (job["n"] + job["warmup"]) * (10 + job.get("timeout_s", 0)) + 60
    try:
        proc = registry.run(
            [*(prefix or []), sys.executable, "-m", "secperf.measure.signer_worker"],
            "signer worker",
            input=json.dumps(job),
            capture_output=True,
            text=True,
            env=env,
            timeout=budget,
        )
    except subprocess.TimeoutExpired as exc:
        R.add_failure(s, f"worker did not finish within {exc.timeout:g} s")
        return []
    iters: list[dict[str, Any]] = []
    for msg in parse_lines(proc.stdout):
        if msg.get("type") == "error":
            R.add_failure(s, msg["reason"])
        elif msg["type"] == "iter" and not msg["warmup"]:
            if msg["ok"]:
                iters.append(msg)
                s.values_us.append((msg["end_ns"] - msg["start_ns"]) / 1000)
            else:
                R.add_failure(s, f"iteration {msg['i']}: {msg['reason']}")
    if proc.returncode != 0 and not s.failures:
        R.add_failure(s, (proc.stderr.strip().splitlines() or [f"worker exited {proc.returncode}"])[-1])
    s.samples = [{k: it[k] for k in ("start_ns", "end_ns", "sign_ns", "request_ns") if k in it} for it in iters]
    return iters


def shim_env(token: LabToken, profile: Profile, workdir: Path, seed: int) -> tuple[dict[str, str], Path]:
    """Environment for a process that loads the shim with `profile` in front of the token."""

    log, conf = workdir / "calls.jsonl", workdir / "shim.conf"
    log.unlink(missing_ok=True)
    write_shim_config(profile, token.module_path, log, seed, conf)
    return dict(os.environ, **token.env(), SECPERF_SE_PROFILE=str(conf)), log


def measure_token(
    profile_name: str,
    key: dict[str, str],
    mode: str,
    p: SignerParams,
    token: LabToken,
    profile: Profile,
    extra: dict[str, Any] | None = None,
    series: Series | None = None,
    prefix: list[str] | None = None,
    tag: str = "",
) -> Series:
    s = series if series is not None else _series(profile_name, key, mode)
    work = private_dir((p.workdir or Path(token.root)) / f"{mode}-{profile_name}-{key['key_type']}{tag}")
    env, log = shim_env(token, profile, work, p.seed)
    job = {
        "module": str(find_shim()),
        "token_label": token.label,
        "key_label": key["label"],
        "key_type": key["key_type"],
        "mode": mode,
        "n": p.n,
        "warmup": p.warmup,
        "pin_file": str(token.pin_path),
        **(extra or {}),
    }
    iters = _run_worker(job, env, s, prefix)
    s.derived_as(SignerDerived).per_call = per_call_breakdown(iters, read_log(log))
    s.labels["shim_log"] = str(log)
    return R.finalize_series(s, OVER_S_US)


def run_signer(
    profiles: Sequence[Profile],
    key_types: list[str],
    modes: list[str],
    p: SignerParams,
    doc: Result,
    run: Run | None = None,
    progress: Progress | None = None,
) -> Result:
    known = {pr.name: pr for pr in profiles}  # resolved by the command (app/phases.py)
    token = LabToken().ensure()
    keys = {k["key_type"]: k for k in token.keys()}
    for kt in key_types:
        if kt not in keys:
            raise SignerError(f"no token key of type {kt!r}; the token holds: {', '.join(keys)}")
    if p.workdir is None and run is not None:
        p.workdir = private_dir(run.dir / "signer")
    pki = LabPKI()
    items = list(dict.fromkeys((pr, key_type_for(known[pr], kt), m) for pr in known for kt in key_types for m in modes))
    for _pr, kt, _m in items:
        if kt not in keys:
            raise SignerError(f"no token key of type {kt!r}; the token holds: {', '.join(keys)}")
    done_local: set[str] = set()
    for i, (pr, kt, mode) in enumerate(items):
        if progress:
            progress("start", (pr, kt, mode), i, len(items), None)
        if mode in ("local_sw", "local_sw_cmd"):
            if kt not in done_local and mode == "local_sw":
                doc.series += measure_local("software", keys[kt], p, pki)
                done_local.add(kt)
        else:
            doc.series.append(measure_token(pr, keys[kt], mode, p, token, known[pr]))
        if run is not None:
            run.save(doc)
        if progress:
            progress("done", (pr, kt, mode), i, len(items), None)
    return doc


JWT_TIMER = {
    "jwt_fresh": ("sign a new JWT, then HTTPS GET on a new connection", "before signing", "response body received"),
    "jwt_cached": ("HTTPS GET with a cached JWT on a new connection", "before connecting", "response body received"),
}
JWT_MODES = ("jwt_fresh", "jwt_cached")
JWT_TIMEOUT_MS = 10_000  # per request over loopback; over a link plus ten of its round trips


def _loopback(network: str) -> bool:
    return network in LOOPBACK_NAMES


KEY_SESSIONS = ("warm", "cold")
JwtItem = tuple[str, str, str, str, str]  # (signer, key type, mode, network, key session)


def jwt_items(
    profiles: Sequence[Profile],
    key_types: list[str],
    networks: list[str] | None = None,
    key_sessions: list[str] | None = None,
) -> list[JwtItem]:
    """What `run_jwt` measures, in order: (signer, key type, mode, network, key session). A cold key
    session (a new PKCS#11 session, login and key search for every token signature) only changes
    the token's fresh rows: software keys have no session, a cached JWT signs once."""
    known = {pr.name: pr for pr in profiles}  # resolved by the command
    out: list[JwtItem] = []
    for net in networks or ["loopback"]:
        for sg in ["software", *known]:
            for kt in dict.fromkeys(key_type_for(known.get(sg), k) for k in key_types):
                for m in JWT_MODES:
                    sessions = (key_sessions or ["warm"]) if sg != "software" and m == "jwt_fresh" else ["warm"]
                    out += [(sg, kt, m, net, ks) for ks in sessions]
    return out


def jwt_item_label(item: JwtItem) -> str:
    sg, kt, mode, net, ks = item
    return f"JWT {sg} {kt} {mode}" + (" cold" if ks == "cold" else "") + ("" if _loopback(net) else f" @ {net}")


def _jwt_series(
    signer: str,
    key_type: str,
    mode: str,
    lifetime_s: int,
    network: str = "loopback",
    spec: NetSpec | None = None,
    key_session: str = "warm",
) -> Series:
    what, start, end = JWT_TIMER[mode]
    if key_session == "cold":
        what += " (cold key session: C_OpenSession, C_Login, C_FindObjects before each signature)"
        start = "before C_OpenSession"
    labels = {
        "profile": signer,
        "key_type": key_type,
        "mode": mode,
        "what": what,
        "lifetime_s": lifetime_s,
        "network": "loopback" if _loopback(network) else network,
        "key_session": key_session,
    }
    if spec is not None and not spec.loopback:
        labels.update(network_spec=spec.canonical(), network_rtt_ms=spec.rtt_ms, network_loss=spec.loss)
    sid = (
        f"jwt/{signer}/{key_type}/{mode}"
        + ("/cold" if key_session == "cold" else "")
        + ("" if _loopback(network) else f"@{network}")
    )
    return R.new_series(
        sid, kind="jwt", labels=labels, timer={"name": mode, "start": start, "end": end, "clock": "CLOCK_MONOTONIC"}
    )


def _jwt_parts(s: Series) -> None:
    for part in ("sign_ns", "request_ns"):
        vals = [x[part] / 1000 for x in s.samples if part in x]
        if vals:
            setattr(s.derived_as(JwtDerived), part.replace("_ns", "_p50_us"), stats.median(vals))


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in text)[:80]


def run_jwt(
    profiles: Sequence[Profile],
    key_types: list[str],
    p: SignerParams,
    doc: Result,
    run: Run | None = None,
    progress: Progress | None = None,
    lifetime_s: int = 3600,
    networks: list[str] | None = None,
    links: LinkPerNetwork | None = None,
    key_sessions: list[str] | None = None,
) -> Result:
    """Software-signed and token-signed (per profile) JWTs, fresh and cached, against the verifying
    HTTPS endpoint; every series records signing and request time separately.

    `networks` (--network values; default loopback): per network the endpoint runs in the link's
    server namespace and the requests leave from its device namespace (the software loop's sockets
    are made there; the token worker runs there), over real kernel TCP through the emulated link.
    A link that cannot be built fails that network's series with the reason. `links`: a caller's
    LinkPerNetwork to share (connect's JWT rows use its links instead of building a second one)."""

    known = {pr.name: pr for pr in profiles}  # resolved by the command
    token = LabToken().ensure()
    keys = {k["key_type"]: k for k in token.keys()}
    pki = LabPKI()
    srv_certs = pki.server("ecdsa-p256", 1)
    if p.workdir is None and run is not None:
        p.workdir = private_dir(run.dir / "jwt")
    nets = list(networks or ["loopback"])
    items = jwt_items(profiles, key_types, nets, key_sessions)
    all_types = list(dict.fromkeys(it[1] for it in items))
    soft = {kt: software_key(kt, pki) for kt in all_types}
    pubkeys = [Path(keys[kt]["cert_path"]) for kt in all_types]
    pubkeys += [software_key(kt, pki)[1].with_suffix(".pem") for kt in all_types]
    with LinkPerNetwork(p.seed, p.links) if links is None else nullcontext(links) as links:
        for net in nets:
            mine = [(i, it) for i, it in enumerate(items) if it[3] == net]
            link, link_err = links.get(net)
            emul = link if link is not None and not link.loopback else None
            emulated = emul is not None
            if link_err:
                for i, (sg, kt, mode, _n, ksess) in mine:
                    if progress:
                        progress("start", items[i], i, len(items), None)
                    s = _jwt_series(sg, kt, mode, lifetime_s, net, key_session=ksess)
                    R.add_failure(s, f"network {net}: {link_err}")
                    doc.series.append(R.finalize_series(s, OVER_S_US))
                    if progress:
                        progress("done", items[i], i, len(items), None)
                continue
            spec = emul.spec if emul else None
            timeout_s = link_timeout_ms(JWT_TIMEOUT_MS, spec) / 1000
            addr = emul.server_addr if emul else "127.0.0.1"
            workdir = (p.workdir or Path(token.root)) / ("jwt-server" + ("" if not emulated else f"-{_slug(net)}"))
            srv = JwtServer(srv_certs, pubkeys, workdir=workdir)
            if emul:
                srv.place(emul.srv_prefix(), emul.server_addr, lambda link=emul: link.socket("srv"))
            with srv:
                if srv.port is None:
                    raise MeasurementError("the JWT endpoint started without a listening port")
                port = srv.port
                for i, (sg, kt, mode, _n, ksess) in mine:
                    if progress:
                        progress("start", items[i], i, len(items), None)
                    s = _jwt_series(sg, kt, mode, lifetime_s, net, spec, key_session=ksess)
                    with link_counters(s.derived_as(LinkedDerived), link):
                        if sg == "software":
                            alg, sign = software_signer(soft[kt][0])
                            iters: list[dict[str, Any]] = []

                            def emit(msg: dict[str, Any], s: Series = s, iters: list[dict[str, Any]] = iters) -> None:
                                if msg["warmup"]:
                                    return
                                if msg["ok"]:
                                    iters.append(msg)
                                    s.values_us.append((msg["end_ns"] - msg["start_ns"]) / 1000)
                                else:
                                    R.add_failure(s, f"iteration {msg['i']}: {msg['reason']}")

                            jwt_loop(
                                alg,
                                sign,
                                fresh=mode == "jwt_fresh",
                                port=port,
                                ca_file=str(srv_certs.ca),
                                n=p.n,
                                warmup=p.warmup,
                                lifetime_s=lifetime_s,
                                emit=emit,
                                addr=addr,
                                timeout_s=timeout_s,
                                make_socket=partial(emul.socket, "dev") if emul else None,
                            )
                            s.samples = [
                                {k: it[k] for k in ("start_ns", "end_ns", "sign_ns", "request_ns")} for it in iters
                            ]
                            R.finalize_series(s, OVER_S_US)
                        else:
                            measure_token(
                                sg,
                                keys[kt],
                                mode,
                                p,
                                token,
                                known[sg],
                                extra={
                                    "port": port,
                                    "ca_file": str(srv_certs.ca),
                                    "lifetime_s": lifetime_s,
                                    "addr": addr,
                                    "timeout_s": timeout_s,
                                    "key_session": ksess,
                                },
                                series=s,
                                prefix=emul.dev_prefix() if emul else None,
                                tag=("" if not emulated else f"-{_slug(net)}") + ("-cold" if ksess == "cold" else ""),
                            )
                    _jwt_parts(s)
                    doc.series.append(s)
                    if run is not None:
                        run.save(doc)
                    if progress:
                        progress("done", items[i], i, len(items), None)
    return doc
