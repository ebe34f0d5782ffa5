"""The emulated counts a device prediction needs, run now or taken from the cache.

`secperf whatif PROTOCOL --device CORE` and `secperf plan --device CORE` need the client's costs on
that core: the primitives (`secperf device crypto`) and a warm handshake row of each TLS version and
authentication the scenarios use (`secperf device handshake`, mutual TLS where the protocol has it).
This module works out which rows, runs the ones the cache lacks on the emulator (with a progress bar
on stderr), and gives them back as a `device` Result that model.costs.from_device reads like a
user's own `--calibrate` Result.

Cache: one JSON file per (core, stack, build configuration) under $SECPERF_HOME/device/counts, keyed
inside by the build's fingerprint (its sources, flags, compiler and libraries: the build directory's
name), the core profile (clock, memory, timing parameters) and secperf's version; a row is reused
only when all three match, else counted again. Counts are exact and repeatable on the emulator, so
one warm handshake after one warm-up (and one run of each primitive) is the figure; `secperf device`
itself is the place for the per-row spread.

Decisions:
- The stack defaults to wolfSSL (every core has a build of it); `--stack` picks another.
- A group the device stacks do not offer (a KEM or hybrid) is counted with X25519's row and the
  KEM primitives of the PQClean add-on (model.costs.ADDON_STACKS) name the difference.
- A server certificate the device row cannot carry (ECDSA P-384, ML-DSA) is counted with the
  protocol's default certificate; the verify of the asked one is a named primitive.
- Resumed and PSK handshakes are counted where the device client runs them (TLS 1.3 and 1.2
  resumption, TLS 1.3 external PSK); DTLS and others take the full row's residual (model.predict).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from .. import __version__
from ..core import result as R
from ..core.errors import InputError
from ..core.result import Result, Series
from .reporter import reporter

DEFAULT_STACK = "wolfssl"
CERTS_ON_DEVICE = ("rsa-2048", "ecdsa-p256")
CLIENT_KEYS_ON_DEVICE = ("ecdsa-p256", "rsa-2048")


@dataclass(frozen=True)
class Need:
    """One handshake row to count."""
    tls: str            # 1.3 | 1.2 | dtls1.2
    mode: str           # full | resumed | psk
    group: str          # x25519 | p-256 | p-384
    server_cert: str
    client_cert: str    # none | ecdsa-p256 | rsa-2048

    def label(self) -> str:
        auth = "mutual TLS" if self.client_cert != "none" else "server auth"
        return f"TLS {self.tls} {self.mode} {self.group} {self.server_cert} ({auth})"


def needs(scenarios) -> list[Need]:
    """The handshake rows the scenarios' client costs come from (one per TLS version, handshake
    kind and authentication, the scenario's group and certificate where the device runs them)."""
    out: dict[Need, None] = {}
    for sc in scenarios:
        s = sc.resolved()
        p = s.protocol
        tls = "dtls1.2" if p in ("dtls1.2", "coap") else "1.2" if p == "tls1.2" else "1.3"
        mtls = bool(s.mtls) and p != "jwt" and not (p == "tls1.2")
        client = (s.client_key_type if s.client_key_type in CLIENT_KEYS_ON_DEVICE else "ecdsa-p256") if mtls else "none"
        group = s.group if s.group in ("x25519", "p-256", "p-384") else "x25519"
        cert = s.cert if s.cert in CERTS_ON_DEVICE else ("rsa-2048" if p in ("tls1.3", "tls1.2", "dtls1.2") else "ecdsa-p256")
        hs = "full" if p == "jwt" else s.handshake
        mode = {"resumed": "resumed", "psk-dhe": "psk"}.get(hs, "full")
        if tls == "dtls1.2" or (mode == "psk" and tls != "1.3"):
            mode = "full"
        out[Need(tls, "full", group, cert, client)] = None       # every residual starts from the full row
        if mode != "full":
            out[Need(tls, mode, group, cert, client)] = None
    return list(out)


def _pq_needed(scenarios) -> bool:
    from ..model import flights as F
    for sc in scenarios:
        s = sc.resolved()
        g = F.groups().get(s.group, {})
        if g.get("kind") in ("kem", "hybrid") or str(s.cert).startswith("ml-dsa"):
            return True
    return False


def _cache_file(core: str, stack: str, config: str):
    from ..measure.device_build import device_home
    d = device_home() / "counts"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{core}-{stack}-{config}.json"


def _core_key(dev) -> str:
    """The core profile as counted: clock, memory and timing parameters (a changed profile recounts)."""
    return hashlib.sha256(repr(dev).encode()).hexdigest()[:16]


def _load(path, fingerprint: str) -> dict[str, list[Series]]:
    """The cached rows (JSON objects in the cache file, series here), or {} when the cache is another's."""
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(cache, dict) or cache.get("fingerprint") != fingerprint:
        return {}
    # a row that failed to count (a handshake error under emulation) is counted again next time
    rows = {k: v for k, v in (cache.get("rows") or {}).items()
            if isinstance(v, list) and v and all(isinstance(s, dict) and s.get("status") in ("ok", "partial")
                                                 for s in v)}
    try:
        return {k: [R.as_series(s) for s in v] for k, v in rows.items()}
    except ValueError:   # a cache an older secperf wrote in another shape: counted again
        return {}


def _save(path, fingerprint: str, rows: dict[str, list[Series]]) -> None:
    from ..core.store import atomic_write
    data = {k: [R.as_series(s).model_dump(mode="json", by_alias=True, exclude_unset=True) for s in v]
            for k, v in rows.items()}
    atomic_write(path, json.dumps({"fingerprint": fingerprint, "rows": data}))


def _reason(s: Series) -> str:
    return s.failures[0].reason if s.failures else "no reason recorded"


@dataclass
class Counts:
    doc: Result            # a `device` Result holding the rows (validated like a user's)
    counted: list[str]     # rows counted now
    reused: list[str]      # rows taken from the cache
    stack: str
    config: str
    library: str

    def note(self) -> str:
        n, r = len(self.counted), len(self.reused)
        how = ("counted now on the emulator" if not r else "taken from the cache" if not n else
               f"{n} counted now, {r} from the cache")
        return f"device counts ({self.library}, build {self.config}): {n + r} rows, {how}"


STACK_ORDER = ("wolfssl", "mbedtls3", "mbedtls", "wolfssl59", "openssl")


def _check_rows(core: str, stack: str, conf, build, want: list[Need]) -> None:
    from ..measure import device as D
    for n in want:      # every row checked against what the build offers before anything runs
        D.check_offers(D.Config(core, stack, n.tls, n.group, "aes128gcm", n.mode, n.server_cert, n.client_cert,
                                conf), build)


def _default_stack(core: str, dev, target: str, config: str | None, want: list[Need]):
    """Without --stack: the first stack of STACK_ORDER built for the core whose build runs every
    row the scenarios need (wolfSSL's Cortex-M builds have no DTLS, so CoAP there is Mbed TLS's);
    one stack for the whole table, never a mix. The note names the stack taken."""
    from ..measure import device as D
    from ..measure.device_build import STACK_TARGETS, ensure_built
    why = []
    for st in STACK_ORDER:
        if target not in STACK_TARGETS.get(st, (target,)):
            continue
        try:
            conf = D.check_build_configs(config, [st], dev)[st]
        except InputError as exc:
            why.append(f"{st}: {exc}")
            continue
        build = ensure_built(st, target, conf[0])
        try:
            _check_rows(core, st, conf[0], build, want)
        except InputError as exc:
            why.append(f"{st}: {exc}")
            continue
        return st, build, conf
    raise InputError(f"--device {core}: no stack built for it runs every handshake these scenarios need ("
                     f"{'; '.join(why)})")


def device_counts(core: str, scenarios, stack: str | None = None, config: str | None = None,
                  quiet: bool = False) -> Counts:
    """The rows `scenarios` need on `core` (see the module's docstring), counting the missing ones."""
    from ..lab import registry
    from ..measure import device as D
    from ..measure.device_build import ensure_built
    dev = D.check_device(core)
    if dev.profile != "A" and any(sc.protocol == "openvpn" for sc in scenarios):
        from ..inputs.devices import core as core_profile
        from ..inputs.devices import cores
        a_cores = ", ".join(n for n in cores() if core_profile(n).profile == "A")
        raise InputError(f"openvpn --device {core}: OpenVPN's client needs an operating system with a tun device; "
                         f"a microcontroller runs none. Predict it on an application core ({a_cores})")
    target = D.target_for(dev)
    want = needs(scenarios)
    if stack is None:
        stack, build, conf = _default_stack(core, dev, target, config, want)
    else:
        stacks = D.check_stacks(stack, dev)
        if len(stacks) != 1:
            raise InputError(f"--stack {stack}: a prediction takes one TLS stack; give one of {', '.join(stacks)}")
        stack = stacks[0]
        conf = D.check_build_configs(config, [stack], dev)[stack]
        if len(conf) != 1:
            raise InputError(f"--config {config}: a prediction takes one build configuration")
        build = ensure_built(stack, target, conf[0])
        if not build.offers.get("tls"):
            raise InputError(f"--stack {stack}: {build.library} has no TLS; give a TLS stack (wolfssl, mbedtls3, ...)")
        _check_rows(core, stack, conf[0], build, want)
    fp = f"{build.client.parent.name}|{_core_key(dev)}|secperf {__version__}|timing on"
    path = _cache_file(core, stack, build.config)
    rows = _load(path, fp)
    jobs: list[tuple[str, object]] = []
    if "crypto" not in rows:
        jobs.append(("crypto", ("crypto", stack, build)))
    addon = None
    if _pq_needed(scenarios) and target != "armhf":
        try:
            addon = ensure_built("pqclean", target, None)
        except Exception:      # no PQClean build here: the KEM's cost stays a named missing cost
            addon = None
        if addon is not None and "crypto:pqclean" not in rows:
            jobs.append(("crypto:pqclean", ("crypto", "pqclean", addon)))
    for n in want:
        k = json.dumps(asdict(n), sort_keys=True)
        if k not in rows:
            jobs.append((k, n))
    counted = [k for k, _ in jobs]
    if jobs:
        registry.start()   # every emulator under the run registry: none outlives a killed secperf
        if not quiet:
            reporter().status(f"[bold]counting on {core}[/bold] ({build.library}, build {build.config}): "
                              f"{len(jobs)} rows (cached for the next prediction)")
        servers: dict[tuple, D.Server] = {}
        try:
            with reporter().progress(len(jobs), "counting", quiet=quiet) as update:
                for k, job in jobs:
                    if isinstance(job, Need):
                        update(job.label())
                        cfg = D.Config(core, stack, job.tls, job.group, "aes128gcm", job.mode, job.server_cert,
                                       job.client_cert, conf[0])
                        sk = (job.server_cert, job.client_cert, "dtls" if cfg.dtls else "tls")
                        if sk not in servers:
                            servers[sk] = D.Server(*sk).__enter__()
                        series = D.measure_config(cfg, 1, 1, build, servers[sk], timed=True)
                        rows[k] = [s for s in series if s.labels.get("phase") == "warm"]
                    else:
                        _, st, b = job
                        update(f"{st} primitives")
                        rows[k] = D.measure_crypto(core, st, None, 1, b, timed=True)
                    update(advance=1)
                    _save(path, fp, rows)   # each row kept as soon as it is counted
        finally:
            for srv in servers.values():
                srv.__exit__(None, None, None)
    keys = ["crypto"] + (["crypto:pqclean"] if addon is not None else []) + \
        [json.dumps(asdict(n), sort_keys=True) for n in want]
    doc = R.new_result(kind="device", command=["secperf", "device", "(counts for a prediction)"],
                       params={"device": core, "stacks": [stack], "config": build.config},
                       host={}, run_id=f"counts-{core}-{stack}-{build.config}")
    for k in keys:
        doc.series += [s for s in rows.get(k, []) if s.status in ("ok", "partial")]
    failed = [s for k in keys for s in rows.get(k, []) if s.status == "failed"]
    if failed:
        why = "; ".join(f"{s.id}: {_reason(s)}" for s in failed[:3])
        reporter().note(f"note: {len(failed)} device rows failed to count ({why}); their costs are missing")
    R.finish(doc)
    return Counts(doc, counted, [k for k in keys if k not in counted], stack, build.config, build.library)
