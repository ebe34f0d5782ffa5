"""`secperf plan`: judge communication patterns (study S2's six or the user's) before and after
design measures, write a Result of kind `plan` (the matrix in `analysis.plan`), print the matrix;
`--verify` runs each measure the emulator can run before/after on the real servers over the
pattern's emulated link (app/plan_verify.py)."""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import host
from ..core import result as R
from ..core.analysis_schema import PlanAnalysis
from ..core.errors import InputError, InternalError
from ..core.result_schema import Result
from ..core.store import RunStore
from ..inputs import devices as D
from ..inputs import netspec as NS
from ..inputs import patterns as PS
from ..inputs import se_profiles as SE
from ..measure import device as MD
from ..model import flights as F
from ..plan import planner as PL
from ..plan.verdict import __doc__ as RULE
from ..report.export import write_csv
from ..report.export_metrics import write_metrics
from ..report.html import render
from . import bounds, plan_verify
from . import device_stacks as DS
from .cluster import connect, map_items
from .device_counts import device_counts
from .host_costs import host_table
from .plan_options import PlanOptions as PlanOptions  # handed on: callers name it as plan.PlanOptions
from .plan_verify import verify
from .reporter import reporter
from .runner import check_output_file

if TYPE_CHECKING:
    from ..inputs.core_profiles import Core
    from ..inputs.devices import DeviceChoice
    from ..inputs.netspec import NetSpec
    from ..inputs.patterns import Pattern
    from ..inputs.se_profiles import Profile as SEProfile
    from ..model.costs import CostTable
    from ..model.flights import Scenario


def _clean(x: Any) -> Any:
    """JSON-safe: infinities (a battery that never empties) become None."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def _overrides(
    o: PlanOptions,
    table: CostTable | None = None,
    p: Pattern | None = None,
    devices: dict[str, DeviceChoice] | None = None,
) -> PL.Overrides:
    """The planner's overrides for pattern `p`: its device (--device, else the pattern's) as the run
    chose it once (`devices`, per pattern: _devices): the name (old spellings mapped) for the cost
    table, the emulated core's object for the CPU power."""
    devices = devices if devices is not None else _devices(o, [p] if p is not None else [])
    ch = devices[p.name if p is not None else ""]
    ov = PL.Overrides(
        device=ch.name,
        core=ch.core,
        se=o.se,
        network=o.network,
        radio=o.radio,
        n=o.n,
        seed=o.seed,
        table=table,
        link=o.link,  # a --system file's, resolved while it was read (else None: resolved() does it)
        key_profile=o.key_profile,
    )
    return resolved(p, ov) if p is not None else ov


def resolved(p: Pattern, ov: PL.Overrides) -> PL.Overrides:
    """`ov` with the inputs pattern `p` and the options name resolved here, at the command's edge:
    the link (--network, else the pattern's [stack].network) and the secure-element profile of the
    key (--se, else the pattern's [stack].key). The planner takes the objects; each name is looked
    up once per run (_link, _key_profile), and not at all when `ov` carries the objects a --system
    file's reader resolved (PlanOptions.link, .key_profile)."""

    key = PL.key_of(p, ov)
    prof = None
    if key.startswith("se:"):
        name = key.split(":")[1]
        given = ov.key_profile  # a --system file's, resolved while it was read
        prof = given if given is not None and given.name == name else _key_profile(name)
    return replace(ov, link=ov.link or _link(ov.network or p.stack.network), key_profile=prof)


def _devices(o: PlanOptions, pats: list[Pattern]) -> dict[str, DeviceChoice]:
    """Per pattern (its name; "" without patterns), its device (--device, else the pattern's) as the
    inputs layer chose it (inputs.devices.choose_device: a cost table, else an emulated core, else
    unknown), each distinct name chosen once here: the checks, the counting and the planner's
    overrides take the objects (check() names an unknown one)."""

    named = {p.name: o.device or p.stack.device for p in pats} if pats else {"": o.device}
    given = o.device_choice  # a --system file's [device].core, chosen while the file was read
    chosen: dict[str | None, DeviceChoice] = {given.name: given} if given is not None else {}
    for n in named.values():
        if n not in chosen:
            chosen[n] = D.choose_device(n)
    return {k: chosen[n] for k, n in named.items()}


@functools.cache
def _link(network: str) -> NetSpec:
    specs = NS.parse_networks([network])
    if len(specs) != 1:
        raise InputError(f"--network {network!r}: a plan needs one link, not a sweep")
    return specs[0]


@functools.cache
def _key_profile(name: str) -> SEProfile:
    profiles = SE.load_profiles()
    if name not in profiles:
        raise InputError(f"--se: unknown secure-element profile {name!r}; known: {', '.join(profiles)}")
    return profiles[name]


# the scenarios a plan can cost (plan/evaluate.py: each pattern's protocol with its handshakes and
# measures, HTTPS without a client certificate under a JWT), counted once per core
PLAN_PROTOCOLS = {"mqtt": ("mqtt",), "https": ("https", "jwt"), "coap": ("coap",), "vpn": ("openvpn",)}


def _device_tables(
    o: PlanOptions, pats: list[Pattern], devices: dict[str, DeviceChoice] | None = None
) -> dict[str, CostTable | None]:
    """Per pattern, the emulated core's cost table when its device is one (`--device CORE`, a system
    file's [device], or the pattern's [stack].device): the client's costs counted now or from the
    cache (app/device_counts.py) with the stack and build configuration asked, the server's this
    host's; None for a cost-table name."""

    out: dict[str, CostTable | None] = {}
    made: dict[str, CostTable] = {}
    devices = _devices(o, pats) if devices is None else devices
    for p in pats:
        ch = devices[p.name]
        dev = ch.name
        if ch.table or ch.core is None or dev is None:
            if o.stack or o.config:
                raise InputError(
                    f"--{'stack' if o.stack else 'config'}: picks the library of an emulated core's "
                    f"counts; pattern {p.name}'s device {dev!r} is a cost table"
                )
            # a pattern on "this host" (host-default, the patterns' default) is costed from this host's
            # table (app/host_costs.py); another cost table by name is that table
            out[p.name] = host_table(o.host_costs) if dev == "host-default" else None
            continue
        if dev not in made:
            protos = {
                x for q in pats if devices[q.name].name == dev for x in PLAN_PROTOCOLS.get(q.stack.protocol, ())
            } | {"https", "jwt"}
            # the protocols the measures switch to, costed from the device's own counts of them: EDHOC +
            # OSCORE and DTLS 1.3 with connection IDs for CoAP, QUIC for HTTPS and MQTT (on the cores that
            # run it; elsewhere the measure is listed as not costed, with the reason)
            core = ch.core  # the core object, chosen once (_devices): counting below takes it, not its name
            extra = _measure_scenarios(core, protos)
            scs = [
                F.Scenario(pr, h)
                for pr in sorted(protos)
                for h in F.HANDSHAKES[pr]
                if h in ("full", "resumed", "psk-dhe", "fresh")
            ]
            scs.append(F.Scenario("https", "resumed", mtls=False))
            counts = device_counts(
                core,
                scs,
                o.stack,
                o.config,
                quiet=o.json,
                stack_from=o.stack_from,
                config_from=o.config_from,
                all_ops=True,
                optional=extra,
                base=host_table(o.host_costs),
                max_hours=o.max_hours,
            )
            reporter().note(f"{dev}: {counts.note()}")
            made[dev] = counts.table
        out[p.name] = made[dev]
    return out


def _measure_scenarios(core: Core, protos: set[str]) -> list[Scenario]:
    """Scenarios of the protocols the planner's measures switch to (plan/measures.py), for the cores
    whose stacks count them: EDHOC + OSCORE and DTLS 1.3 with connection IDs for CoAP, QUIC for HTTPS
    and MQTT. A protocol no stack counts on the core is left out here and its measure says why."""

    target = MD.target_for(core)
    out: list[Scenario] = []
    wanted: list[tuple[str, tuple[str, ...]]] = []
    if "coap" in protos:
        wanted += [("edhoc", ("m3-kid",)), ("dtls1.3", ("full-cid", "resumed-cid"))]
    if protos & {"https", "mqtt"}:
        wanted += [("quic", ("full", "resumed", "0rtt"))]
    for proto, hss in wanted:
        if DS.stacks_with(DS.family(proto), target):
            out += [F.Scenario(proto, h) for h in hss]
    return out


def _patterns(o: PlanOptions) -> list[Pattern]:
    return list(o.resolved) if o.resolved else PS.load_patterns(o.patterns)


def check(o: PlanOptions, tables: dict[str, CostTable | None] | None = None) -> list[Pattern]:
    """Every input checked (patterns, profiles, link, measures) without simulating anything; with
    `tables` (from _device_tables), each pattern against its device's costs."""
    return _checked(o, tables)[0]


def _checked(
    o: PlanOptions, tables: dict[str, CostTable | None] | None = None
) -> tuple[list[Pattern], dict[str, DeviceChoice]]:
    """check()'s patterns and their devices, each chosen once (_devices)."""

    check_output_file(o.metrics, "--metrics")  # a file written at the end: said before anything runs
    check_output_file(o.csv, "--csv")

    pats = _patterns(o)
    devices = _devices(o, pats)
    for p in pats:
        ov = _overrides(o, (tables or {}).get(p.name), p, devices)
        ch = devices[p.name]
        if not ch.table and ch.core is None:
            raise ch.unknown()
        if ov.table is None and not ch.table:
            # the core's counts come later (_device_tables): the rest is checked against the host table
            ov = replace(ov, device="host-default")
        PL.check(p, ov)
    return pats, devices


def plan_all(o: PlanOptions) -> list[dict[str, Any]]:
    pats, devices = _checked(o)  # names, profiles and links first: a bad one stops before any counting
    tables = _device_tables(o, pats, devices)
    jobs = [(p, _overrides(o, tables.get(p.name), p, devices)) for p in pats]
    if o.cluster:  # the same judgements, as Ray tasks: each draws with its Overrides' seed, wherever it runs
        with connect(o.cluster, quiet=o.json) as cl:
            return [_clean(x) for x in map_items(plan_job, None, jobs, cl, "plan patterns")]
    return [_clean(PL.plan_pattern(p, ov)) for p, ov in jobs]


def plan_job(_shared: object, job: tuple[Pattern, PL.Overrides]) -> dict[str, Any]:
    """One pattern's judgement (a Ray task's item): plan_pattern(pattern, overrides)."""
    return PL.plan_pattern(*job)


def run(o: PlanOptions) -> Result:
    """The plan's Result, written to its run directory (and --metrics, --csv); the caller shows it."""
    plans = plan_all(o)  # bad input stops here, before a run directory exists
    limit = plan_verify.estimate(plans, o) if o.verify else {}  # --max-hours also bounds device counting
    run_ = RunStore(o.out).create("plan")
    params = {
        "patterns": o.patterns,
        "device": o.device,
        "se": o.se,
        "network": o.network,
        "radio": o.radio,
        "n": o.n,
        "seed": o.seed,
        "verify": o.verify,
        "system": o.system,
        "stack": o.stack,
        "config": o.config,
        "max_hours": bounds.limit_hours(o.max_hours),
        **limit,
    }
    doc = R.new_result(kind="plan", command=o.command, params=params, host=host.collect(), run_id=run_.run_id)
    doc.analysis.plan = PlanAnalysis.model_validate({"patterns": plans, "rule": " ".join(RULE.split())})
    if o.verify:
        try:
            doc.analysis.plan.verify = verify(plans, o, doc, run_)
        except InternalError as exc:  # secperf's own combination refused: the partial Result says so
            doc.internal = {"check": "plan --verify's derived rows", "problem": str(exc)[:400], "withheld": []}
            R.finish(doc, "internal-error")
            run_.save(doc)
            raise
    R.finish(doc)
    run_.save(doc)
    if not o.no_report:
        run_.write_text("report.html", render(doc, log=run_.dir / "secperf.log"))
    if o.metrics:
        write_metrics(doc, o.metrics)
    if o.csv:
        write_csv(doc, Path(o.csv))
    return doc
