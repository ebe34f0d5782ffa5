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

Cache rows: each primitive on its own ("op:NAME"), each handshake row by its Need; a prediction counts
only the primitives its clients use (every one with all_ops, as the planner asks), so a question about
one protocol never waits for the whole primitive table.

Decisions:
- Which stack counts which protocol: app/device_stacks.py (one stack for as many of the asked
  protocols as it runs; every row names its stack; a note when they differ).
- A group the device stacks do not offer (a KEM or hybrid) is counted with X25519's row and the
  KEM primitives of the PQClean add-on (model.costs.ADDON_STACKS) name the difference.
- A server certificate the device row cannot carry (ECDSA P-384, ML-DSA) is counted with the
  protocol's default certificate; the verify of the asked one is a named primitive.
- Resumed and PSK handshakes are counted where the device client runs them (TLS 1.3 and 1.2
  resumption, TLS 1.3 external PSK, DTLS 1.2 resumption and PSK, DTLS 1.3 resumption and connection
  IDs, QUIC resumption and 0-RTT); others (and those a build lacks, with a note) take the full row's
  residual (model.predict).
- EDHOC is counted as the device's initiator runs it (method 3, credentials by kid or by value,
  suite 2 on P-256); another method or suite of the what-if takes that row's residual with its own
  operations.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core import result as R
from ..core.derived import derived
from ..core.errors import InputError, SecperfError
from ..core.result_schema import Result, Series
from ..core.writes import atomic_write
from ..inputs.devices import core_names
from ..lab import registry
from ..measure import device as D
from ..measure import device_dtls as DT
from ..measure import edhoc_device as E
from ..measure import quic_device as Q
from ..measure.device_build import device_home, ensure_built
from ..measure.device_plan import target_for
from ..model import costs as C
from ..model import flights as F
from ..model.device_rows import DEVICE_OPS
from . import bounds
from . import device_stacks as DS
from .device_stacks import FAMILY_NAME, NO_PRIMITIVES
from .reporter import reporter

if TYPE_CHECKING:
    from ..inputs.core_profiles import Core
    from ..measure.device_build import Build
    from ..model.flights import Context, Scenario
    from .device_stacks import StackPlan

# a primitives row to count: ("crypto", stack, its build, one op or None for all of them)
CryptoJob = tuple[str, str, "Build", str | None]

CERTS_ON_DEVICE = ("rsa-2048", "ecdsa-p256")
CLIENT_KEYS_ON_DEVICE = ("ecdsa-p256", "rsa-2048")


@dataclass(frozen=True)
class Need:
    """One handshake row to count."""

    tls: str  # the protocol family (app/device_stacks.FAMILY): 1.3 | 1.2 | dtls1.2 | dtls1.3 | edhoc | quic
    mode: str  # full | resumed | psk; DTLS 1.3: full-cid, resumed-cid too; EDHOC: m3-kid...; QUIC: 0rtt
    group: str  # x25519 | p-256 | p-384
    server_cert: str
    client_cert: str  # none | ecdsa-p256 | rsa-2048

    def label(self) -> str:
        if self.tls == "edhoc":
            return f"EDHOC {self.mode} + OSCORE"
        auth = "mutual" if self.client_cert != "none" else "server auth"
        return f"{FAMILY_NAME[self.tls]} {self.mode} {self.group} {self.server_cert} ({auth})"


EDHOC_ON_DEVICE = ("m3-kid", "m3-value")  # what the device's EDHOC initiator implements
QUIC_ON_DEVICE = ("full", "resumed", "0rtt")


def needs(resolved: Iterable[Scenario], family_of: Mapping[str, str]) -> list[Need]:
    """The handshake rows the scenarios' client costs come from (one per protocol family, handshake
    kind and authentication, the scenario's group and certificate where the device runs them). A
    handshake the device client does not run takes the full row's residual (model.predict).
    resolved: the scenarios, each resolved (Scenario.resolved); family_of: protocol -> family
    (device_stacks.FAMILY; a protocol without one has no rows, and device_stacks.plan refuses it)."""
    out: dict[Need, None] = {}
    for s in resolved:
        p = s.protocol
        if p not in family_of:
            continue
        fam = family_of[p]
        if fam == "edhoc":  # method 3 with kid credentials (P-256, suite 2) unless the scenario's variant is counted
            mode = s.handshake.removesuffix("-combined")
            out[Need("edhoc", mode if mode in EDHOC_ON_DEVICE else "m3-kid", "p-256", "none", "none")] = None
            continue
        mtls = bool(s.mtls) and p != "jwt" and fam not in ("1.2", "quic")
        client = (s.client_key_type if s.client_key_type in CLIENT_KEYS_ON_DEVICE else "ecdsa-p256") if mtls else "none"
        group = s.group if s.group in ("x25519", "p-256", "p-384") else "x25519"
        if fam == "quic" and group == "p-384":
            group = "x25519"
        cert = (
            s.cert if s.cert in CERTS_ON_DEVICE else ("rsa-2048" if fam in ("1.3", "1.2", "dtls1.2") else "ecdsa-p256")
        )
        hs = "full" if p == "jwt" else s.handshake
        if fam == "quic":
            mode = hs if hs in QUIC_ON_DEVICE else "full"
        elif fam == "dtls1.3":
            mode = hs if hs in ("full", "resumed", "full-cid", "resumed-cid") else "full"
        elif fam == "dtls1.2":  # resumption and the plain PSK suite, as the DTLS 1.2 model has them
            mode = hs if hs in ("resumed", "psk") else "full"
        else:
            mode = {"resumed": "resumed", "psk-dhe": "psk"}.get(hs, "full")
            if mode == "psk" and fam != "1.3":
                mode = "full"
        out[Need(fam, "full", group, cert, client)] = None  # every residual starts from the full row
        if mode != "full":
            out[Need(fam, mode, group, cert, client)] = None
    return list(out)


def _pq_needed(resolved: Iterable[Scenario], kinds: Mapping[str, Mapping[str, Any]]) -> bool:
    """A resolved scenario uses a KEM or hybrid group or an ML-DSA certificate (the PQClean add-on
    counts it). kinds: the model's group table (the run's flights.Context)."""
    resolved = list(resolved)
    if any(str(s.cert).startswith("ml-dsa") for s in resolved):
        return True
    return any(kinds.get(s.group, {}).get("kind") in ("kem", "hybrid") for s in resolved)


def _cache_file(core: str, stack: str, config: str, home: Path | None = None) -> Path:
    """The count cache of a core, stack and build configuration; home: $SECPERF_HOME/device when the
    caller resolved it (measure/device_build.device_home)."""

    d = (home or device_home()) / "counts"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{core}-{stack}-{config}.json"


def _core_key(dev: Core) -> str:
    """The core profile as counted: clock, memory and timing parameters (a changed profile recounts)."""
    return hashlib.sha256(repr(dev).encode()).hexdigest()[:16]


def _load(path: Path, fingerprint: str) -> dict[str, list[Series]]:
    """The cached rows (JSON objects in the cache file, series here), or {} when the cache is another's."""
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(cache, dict) or cache.get("fingerprint") != fingerprint:
        return {}
    # a row that failed to count (a handshake error under emulation) is counted again next time
    rows = {
        k: v
        for k, v in (cache.get("rows") or {}).items()
        if isinstance(v, list) and v and all(isinstance(s, dict) and s.get("status") in ("ok", "partial") for s in v)
    }
    try:
        # a row holding a key this release does not declare (an older secperf's) is left out and
        # counted again: the Result it would join refuses undeclared keys
        return R.declared_rows(rows, f"device-count cache {path.name}")
    except ValueError:  # a cache an older secperf wrote in another shape: counted again
        return {}


def _save(path: Path, fingerprint: str, rows: dict[str, list[Series]]) -> None:
    data = {k: [s.model_dump(mode="json", by_alias=True, exclude_unset=True) for s in v] for k, v in rows.items()}
    atomic_write(path, json.dumps({"fingerprint": fingerprint, "rows": data}))


def _reason(s: Series) -> str:
    return s.failures[0].reason if s.failures else "no reason recorded"


@dataclass
class Counts:
    """One stack's rows on the core."""

    doc: Result  # a `device` Result holding the rows (validated like a user's)
    counted: list[str]  # rows counted now
    reused: list[str]  # rows taken from the cache
    stack: str
    config: str
    library: str

    def note(self) -> str:
        n, r = len(self.counted), len(self.reused)
        how = (
            "counted now on the emulator"
            if not r
            else "taken from the cache"
            if not n
            else f"{n} counted now, {r} from the cache"
        )
        # one short line (80 columns with the core's name before it): the library's name without the
        # build's target, which the core already says
        return f"{self.library.split(' (')[0]} {self.config}: {n + r} device rows, {how}"


@dataclass
class DeviceCounts:
    """Every stack's rows a prediction needs, and the cost table made of them: the main stack's table,
    with each protocol another stack counts costed from that stack's table (CostTable.by_protocol)."""

    core: str
    per_stack: dict[str, Counts]
    families: dict[str, str]  # protocol family -> stack
    table: C.CostTable
    notes: list[str]

    @property
    def stack(self) -> str:
        return self.table.stack or next(iter(self.per_stack))

    @property
    def doc(self) -> Result:
        return self.per_stack[self.stack].doc

    def note(self) -> str:
        return "; ".join(c.note() for c in self.per_stack.values())


def _family_stack_check(dev: Core, stack: str, conf: str | None, build: Build, want: list[Need]) -> None:
    """Every TLS/DTLS row checked against what the build offers before anything runs."""

    for n in want:
        if n.tls in ("edhoc", "quic"):
            continue
        D.check_offers(
            D.Config(dev, stack, n.tls, n.group, "aes128gcm", n.mode, n.server_cert, n.client_cert, conf), build
        )


def _runnable(stack: str, build: Build, want: list[Need]) -> list[Need]:
    """The rows the build runs: an abbreviated handshake it lacks (Mbed TLS 2.28 has no DTLS PSK) is
    left out with a note and takes the full row's residual (model.predict); a full row it lacks stays,
    and is refused naming what the build offers."""

    out = []
    for n in want:
        if (
            n.tls not in ("edhoc", "quic")
            and n.mode != "full"
            and n.mode not in DT.handshakes_offered(build.offers, n.tls)
        ):
            reporter().note(
                f"note: {build.library} has no {n.label()} handshake; it is predicted from the full row's residual"
            )
            continue
        out.append(n)
    return out


def _client_ops(scenarios: Iterable[Scenario], want: list[Need], models: Mapping[Scenario, Any]) -> list[str]:
    """The device primitives (measure/device op names) the scenarios' client operations use, in their
    own group and certificate and in the counted rows' (the residual is fitted there), plus the AEADs
    of the application exchange. models: the flight models the run's flights.Context holds (a variant
    not among them is built here)."""

    inverse = {v: k for k, v in DEVICE_OPS.items()}
    ops = {"aes-128-gcm-1024", "chacha20-poly1305-1024"}
    groups = {n.group for n in want} | {"x25519"}
    certs = {n.server_cert for n in want if n.server_cert != "none"}
    for sc in scenarios:
        # each distinct variant built once (the scenario's own group and certificate are often the rows')
        variants = list(
            dict.fromkeys([sc] + [replace(sc, group=g) for g in groups] + [replace(sc, cert=c) for c in certs])
        )
        for v in variants:
            try:
                m = models[v] if v in models else F.build(v)
            except SecperfError:  # a variant the model does not run (a group EDHOC has no suite for): skip it
                continue
            for e in m.exchanges:
                for f in (e.out, e.back):
                    if f is not None and f.sender == "client":
                        ops |= {inverse[o] for o in f.ops if o in inverse}
            ops |= {inverse[o] for o in m.final_ops if o in inverse}
    return sorted(ops)


def _count_stack(
    core: str,
    dev: Core,
    target: str,
    stack: str,
    conf: str | None,
    want: list[Need],
    scenarios: list[Scenario],
    all_ops: bool,
    quiet: bool,
    max_hours: float | None = None,
    ctx: Context | None = None,
) -> Counts:
    """One stack's rows: from the cache, or counted now (with a progress bar on stderr). scenarios:
    the ones this stack's primitives price, each resolved (Scenario.resolved); ctx: the run's
    flights.Context (its group table and flight models)."""

    home = device_home()  # $SECPERF_HOME/device once: the builds and the count cache live under it
    if stack == "ngtcp2":
        qb = Q.ensure_built()
        client, config, library, build = qb.client, "debian", qb.library, None
    else:
        build = ensure_built(stack, target, conf, home=home)
        if not build.offers.get("tls") and stack != "pqclean":
            raise InputError(f"--stack {stack}: {build.library} has no TLS; give a TLS stack (wolfssl, mbedtls3, ...)")
        want = _runnable(stack, build, want)
        _family_stack_check(dev, stack, conf, build, want)
        client, config, library = build.client, build.config, build.library
    fp = f"{client.parent.name}|{_core_key(dev)}|secperf {__version__}|timing on"
    path = _cache_file(core, stack, config, home=home)
    rows = _load(path, fp)
    jobs: list[tuple[str, Need | CryptoJob]] = []
    if build is not None:
        known = list(build.crypto_ops)
        ops = known if all_ops else [o for o in _client_ops(scenarios, want, ctx.models if ctx else {}) if o in known]
        jobs += [(f"op:{o}", ("crypto", stack, build, o)) for o in ops if f"op:{o}" not in rows]
        op_keys = [f"op:{o}" for o in ops]
    else:
        op_keys = []
    addon = None
    if build is not None and target != "armhf" and _pq_needed(scenarios, (ctx or F.context(())).groups):
        try:
            addon = ensure_built("pqclean", target, None, home=home)
        except Exception:  # no PQClean build here: the KEM's cost stays a named missing cost
            addon = None
        if addon is not None and "crypto:pqclean" not in rows:
            jobs.append(("crypto:pqclean", ("crypto", "pqclean", addon, None)))
    for n in want:
        k = json.dumps(asdict(n), sort_keys=True)
        if k not in rows:
            jobs.append((k, n))
    counted = [k for k, _ in jobs]
    if jobs:  # only the rows missing from the cache cost emulator time (app/bounds.py)
        hs = sum(1 for _, j in jobs if isinstance(j, Need))
        bounds.check_estimate(
            f"counting on {core}",
            bounds.device_handshakes_s(hs, 1, 1) + bounds.device_ops_s(len(jobs) - hs, 1, 1),
            f"{len(jobs)} rows of {stack} not in the device-count cache: {hs} handshakes, "
            f"{len(jobs) - hs} primitives; a cached row costs nothing",
            "count fewer rows (--stack, --config, the handshakes)",
            max_hours,
        )
        registry.start()  # every emulator under the run registry: none outlives a killed secperf
        if not quiet:
            reporter().status(
                f"[bold]counting on {core}[/bold]: {library.split(' (')[0]} {config}, {len(jobs)} rows (then cached)"
            )
        servers: dict[tuple[str, str, str, bool], Any] = {}
        try:
            with reporter().progress(len(jobs), "counting", quiet=quiet) as update:
                for k, job in jobs:
                    if isinstance(job, Need):
                        update(job.label())
                        # a row secperf derived from the scenarios, checked above: a refusal now is its own
                        with derived(
                            f"the device-count row {job.label()} on {core} ({stack}"
                            f"{f' [{conf}]' if conf else ''}) that the prediction needs"
                        ):
                            rows[k] = _count_row(dev, stack, conf, build, job, servers)
                    else:
                        _, st, b, op = job
                        update(f"{st} {op or 'primitives'}")
                        rows[k] = D.measure_crypto(dev, st, [op] if op else None, 1, b, timed=True)
                    update(advance=1)
                    _save(path, fp, rows)  # each row kept as soon as it is counted
        finally:
            for srv in servers.values():
                srv.__exit__(None, None, None)
    keys = (
        op_keys
        + (["crypto:pqclean"] if addon is not None else [])
        + [json.dumps(asdict(n), sort_keys=True) for n in want]
    )
    failed = [s for k in keys for s in rows.get(k, []) if s.status == "failed"]
    if failed:
        why = "; ".join(f"{s.id}: {_reason(s)}" for s in failed[:3])
        reporter().note(f"note: {len(failed)} device rows of {stack} failed to count ({why}); their costs are missing")
    # the Result made whole in one call: its rows, finished, checked as a file would be (from_device takes it so)
    doc = R.new_result(
        kind="device",
        command=["secperf", "device", "(counts for a prediction)"],
        params={"device": core, "stacks": [stack], "config": config},
        host={},
        run_id=f"counts-{core}-{stack}-{config}",
        series=[s for k in keys for s in rows.get(k, []) if s.status in ("ok", "partial")],
        status="complete",
    )
    return Counts(doc, counted, [k for k in keys if k not in counted], stack, config, library)


def _count_row(
    dev: Core,
    stack: str,
    conf: str | None,
    build: Build | None,
    job: Need,
    servers: dict[tuple[str, str, str, bool], Any],
) -> list[Series]:
    """The warm series of one handshake row (the cold one is `secperf device handshake`'s business)."""

    if job.tls == "edhoc":
        series = E.measure(dev, job.mode, 1, 1, timed=True, config=conf, stack=stack)
    elif job.tls == "quic":
        series = Q.measure_config(Q.QuicConfig(dev, job.mode, job.group, job.server_cert), 1, 1, timed=True)
    else:
        cfg = D.Config(dev, stack, job.tls, job.group, "aes128gcm", job.mode, job.server_cert, job.client_cert, conf)
        server = None

        if not DT.needs_pair(cfg):
            sk = (job.server_cert, job.client_cert, "dtls" if cfg.dtls else "tls", cfg.dtls and cfg.mode == "psk")
            if sk not in servers:
                servers[sk] = D.Server(*sk).__enter__()
            server = servers[sk]
        series = D.measure_config(cfg, 1, 1, build, server, timed=True)
    return [s for s in series if s.labels.get("phase") == "warm"]


def device_counts(
    dev: Core,
    scenarios: Iterable[Scenario],
    stack: str | list[str] | None = None,
    config: str | list[str] | None = None,
    quiet: bool = False,
    stack_from: str | None = None,
    config_from: str | None = None,
    all_ops: bool = False,
    base: C.CostTable | None = None,
    optional: Iterable[Scenario] = (),
    max_hours: float | None = None,
    target: str | None = None,
    context: Context | None = None,
) -> DeviceCounts:
    """The rows `scenarios` need on `core` (module docstring), each protocol family on the stack that
    counts it (app/device_stacks.py), counting the missing rows; the cost table made of them.
    stack_from / config_from: the system file's key when --stack / --config came from one (a
    preference there, a demand on the command line). all_ops: count every primitive of each stack
    (the planner's measures change groups and keys), else the ones the scenarios' clients use. base:
    the server's table (this host's, calibrated or not; default host-default). target: the core's
    build target when the command already worked it out (measure/device_plan.target_for). context: the
    scenarios' flights.Context when the command asked for it (resolved, tables, flight models; its
    scenarios must be `scenarios` and `optional` in order), else asked here once."""

    core = dev.name  # the core, resolved where the command read --device; its name for labels and the cache
    if dev.profile != "A" and any(sc.protocol == "openvpn" for sc in scenarios):
        a_cores = ", ".join(core_names(lambda c: c.profile == "A"))
        raise InputError(
            f"openvpn --device {core}: OpenVPN's client needs an operating system with a tun device; "
            f"a microcontroller runs none. Predict it on an application core ({a_cores})"
        )
    if target is None:
        target = target_for(dev)
    optional = list(optional)
    scenarios = list(scenarios) + optional

    if context is None or list(context.given) != scenarios:
        context = F.context(scenarios)  # one call: each scenario resolved, the tables, the flight models
    resolved = list(context.resolved)  # the rows, the PQ check and the client's operations read these
    want = needs(resolved, DS.FAMILY)
    asked = _names(stack)
    required = [sc.protocol for sc in scenarios if sc not in optional]
    # one call works out which stack counts what (and refuses a protocol without device rows)
    sp = DS.plan(
        core,
        target,
        required,
        [sc.protocol for sc in optional],
        [n.tls for n in want],
        asked,
        stack_from,
        _names(config),
        config_from,
    )
    want = [n for n in want if n.tls in sp.by_family]
    keep = [sp.family_of[sc.protocol] in sp.by_family for sc in scenarios]
    scenarios = [sc for sc, k in zip(scenarios, keep) if k]
    resolved = [r for r, k in zip(resolved, keep) if k]
    for msg in sp.notes:
        reporter().note(msg)
    per: dict[str, Counts] = {}
    for st in sp.order:
        mine = [n for n in want if sp.by_family[n.tls] == st]
        own = [sp.priced_by[sp.family_of[sc.protocol]] == st for sc in scenarios]
        scs = [r for r, k in zip(resolved, own) if k]  # resolved: _client_ops builds their flight models
        per[st] = _count_stack(core, dev, target, st, sp.configs.get(st), mine, scs, all_ops, quiet, max_hours, context)
    table = _tables(dev, sp, per, scenarios, base or C.load_table(), context.key_types)
    return DeviceCounts(core, per, sp.by_family, table, sp.notes)


def _names(v: str | list[str] | None) -> list[str] | None:
    if v is None:
        return None
    items = [x.strip().lower() for x in (v.split(",") if isinstance(v, str) else v) if x.strip()]
    return list(dict.fromkeys(items)) or None


def _tables(
    dev: Core,
    sp: StackPlan,
    per: dict[str, Counts],
    scenarios: list[Scenario],
    host: C.CostTable,
    key_types: Mapping[str, Any] | None = None,
) -> C.CostTable:
    """The main stack's table, and per protocol of another stack that stack's (a stack without
    primitives, ngtcp2, on the primitives of `sp.prim`: the main stack, or the first one with primitives)."""

    prof = dev
    main, prim = sp.main, sp.prim
    tables: dict[str, C.CostTable] = {}
    for st in [prim] + [s for s in per if s != prim]:
        c = per[st]
        base = tables[prim] if st in NO_PRIMITIVES else host
        t = C.from_device(
            c.doc, prof, base, where=f"device counts {c.doc.run_id}", stack=st, checked=True, key_types=key_types
        )
        if st in NO_PRIMITIVES:
            t = replace(
                t,
                description=f"{t.description}; {st} counts whole handshakes (no primitives): its client "
                f"operations are priced with {prim}'s counted primitives",
            )
        tables[st] = replace(t, stack=st, library=c.library)
    by_protocol = {
        sc.protocol: tables[sp.by_family[sp.family_of[sc.protocol]]]
        for sc in scenarios
        if sp.by_family.get(sp.family_of[sc.protocol]) not in (None, main)
    }
    return replace(tables[main], by_protocol=by_protocol)
