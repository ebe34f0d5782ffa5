"""Judge one communication pattern: the design as written, each applicable measure alone, every
combination, the best one, the verdict with its deciding numbers, the ranking of measures and the
alert thresholds the verdict assumes. Returns plain dicts (the Result's `analysis.plan`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import InputError, InternalError
from ..inputs import netspec as NS
from ..inputs import se_profiles as SE
from ..inputs.core_profiles import Core
from ..inputs.patterns import Pattern
from ..model import costs as C
from ..model import energy as E
from ..model import network as N
from . import design as D
from . import measures as MS
from . import verdict as V
from .describe import describe
from .evaluate import Context, evaluate

# the numbers kept for every combination of measures (the best one keeps all of them)
COMBO_NUMBERS = (
    "latency_pq_ms",
    "spread_ms",
    "energy_per_day_j",
    "bytes_per_day",
    "signatures_per_day",
    "session_reuse_share",
)

# combinations shown in full next to the single measures (JWT: token cached + session resumed)
SHOWN_COMBOS = (("resumption", "token-cache"),)


@dataclass(frozen=True)
class Overrides:
    device: str | None = None  # cost table (and CPU power) instead of the pattern's
    core: Core | None = None  # the device's emulated core, resolved by the caller (app/plan.py): its CPU power
    se: str | None = None  # secure-element profile instead of the pattern's key's
    network: str | None = None  # link profile instead of the pattern's (its name, as recorded)
    radio: str | None = None  # radio energy profile (default: the pattern's, else the network's)
    n: int = 20_000
    seed: int = 1
    table: C.CostTable | None = None  # a device's costs made by the caller (app/plan.py: an emulated core)
    # the inputs the command resolved by name (app/plan.resolved): the link the pattern (or --network)
    # names and the secure-element profile of its key (None: a software key); the planner takes these
    link: NS.NetSpec | None = None
    key_profile: SE.Profile | None = None


def key_of(p: Pattern, o: Overrides) -> str:
    if o.se is None:
        return p.stack.key
    if o.se in ("software", "none"):
        return "software"
    return f"se:{o.se}" if not o.se.startswith("se:") else o.se


def context(p: Pattern, o: Overrides) -> Context:
    device = o.device or p.stack.device  # a name the caller resolved (app/plan.py: old spellings mapped)
    network = o.network or p.stack.network
    table = o.table if o.table is not None else C.load_table(device)
    if o.link is None:
        raise InternalError(f"the planner takes the link the command resolved (app/plan.resolved), not {network!r}")
    link = N.from_spec(o.link)
    radio_name = o.radio or p.stack.radio or (network if network in E.radio_names() else None)
    if radio_name is None:
        raise InputError(
            f"--network {network!r} has no radio energy profile; name one with --radio (or [stack].radio): "
            f"{', '.join(E.radio_names())}"
        )
    radio = E.radio(radio_name)
    key = key_of(p, o)
    prof = key.split(":")[1] if key.startswith("se:") else None
    if prof is not None and (o.key_profile is None or o.key_profile.name != prof):
        raise InternalError(f"the planner takes the profile of key {key} the command resolved (app/plan.resolved)")
    return Context(
        pattern=p,
        table=table,
        link=link,
        radio=radio,
        cpu=E.cpu(o.core or device),
        se=E.se(prof),
        n=o.n,
        seed=o.seed,
        key_profile=o.key_profile if prof is not None else None,
    )


def requirement_sources(p: Pattern) -> dict[str, str]:
    """Where each stated requirement comes from: its own source ([requirements].latency_source, ...)
    or, for a file that gives only one, the section's source."""
    r = p.requirements
    out = {"latency": r.latency_source or r.source}
    if p.determinism_s is not None:
        out["determinism"] = r.determinism_source or r.source
    if p.energy_budget_j is not None:
        out["energy"] = r.energy_source or r.source
    return out


def profile_sign_ms(key: str, prof: SE.Profile | None) -> float | None:
    """The profile's mean signing time (ms) for the key's calls (cold: the whole session); None for a software key."""
    if not key.startswith("se:") or prof is None:
        return None
    calls = SE.TOTAL_CALLS if key.endswith(":cold") else SE.SIGN_ONLY_CALLS
    return sum(d.mean() if (d := prof.dist(c)) else 0.0 for c in calls)


def check(p: Pattern, o: Overrides = Overrides()) -> None:
    """The pattern's inputs resolved (cost table, link, radio, profiles, measures): InputError if bad."""
    context(p, o)
    MS.applicable(p, D.baseline(p, key_of(p, o)))


def _costed(ctx: Context, base: D.Design, usable: list[MS.Measure], not_applicable: dict[str, str]) -> list[MS.Measure]:
    """The measures the cost table can price. A measure that needs a cost the table does not have (a
    device's counted table without rows for the protocol the measure switches to, e.g. EDHOC on a
    Cortex-M) is set aside with the table's own reason, like a measure that does not apply: the other
    measures are still judged instead of the whole plan stopping on one missing row. The baseline
    itself still needs every cost (a missing one there is the user's input error)."""
    out = []
    for m in usable:
        try:
            evaluate(ctx, m.apply(base))
        except C.MissingCost as exc:
            not_applicable[m.name] = f"not costed on this table: {exc}"
            continue
        out.append(m)
    return out


def plan_pattern(p: Pattern, o: Overrides = Overrides()) -> dict[str, Any]:
    ctx = context(p, o)
    radio_name = ctx.radio.name
    base = D.baseline(p, key_of(p, o))
    usable, not_applicable = MS.applicable(p, base)
    usable = _costed(ctx, base, usable, not_applicable)
    # the reference without any security: a requirement it breaks is the pattern's, not security's
    plain = evaluate(ctx, base.without_security())
    broken = frozenset(c["check"] for c in plain.checks if not c["ok"])
    by_name = {m.name: m for m in usable}
    designs = []
    for names in V.combinations([m.name for m in usable]):
        d = base
        for nm in names:
            d = by_name[nm].apply(d)
        designs.append(d)
    # a requirement the pattern breaks without security is still judged when some combination of
    # measures meets it (keep-alive avoids the set-up the network alone makes too slow): the user's
    # "what gets us under the budget" has an answer then (verdict.py's rule); the simulations are
    # cached, so judging twice costs no draws
    ctx.broken = frozenset()
    reachable = {c["check"] for d in designs for c in evaluate(ctx, d).checks if c["check"] in broken and c["ok"]}
    ctx.broken = broken - reachable
    before = evaluate(ctx, base)
    singles = [evaluate(ctx, m.apply(base)) for m in usable]
    combos = [evaluate(ctx, d) for d in designs]
    best = V.best_of(combos)
    verdict = V.verdict(before, best)
    chosen = before if before.passes else (best or before)
    sources = requirement_sources(p)
    why = V.explain(before, plain, best, singles, verdict, sources)
    return {
        "pattern": p.name,
        "description": describe(p, base.key),
        "source": p.source,
        "inputs": {
            "protocol": p.stack.protocol,
            "auth": p.stack.auth,
            "key": base.key,
            "network": o.network or p.stack.network,
            "radio": radio_name,
            "device": o.device or p.stack.device,
            "link": ctx.link.as_dict(),
            "schedule": p.traffic.schedule,
            "connection": p.connection.mode,
            "cost_table": ctx.table.name,
            "payload_up_bytes": p.traffic.payload_up_bytes,
            "payload_down_bytes": p.traffic.payload_down_bytes,
        },
        "requirements": {
            "latency_ms": p.latency_s * 1e3,
            "latency_percentile": p.requirements.latency_percentile,
            "determinism_ms": None if p.determinism_s is None else p.determinism_s * 1e3,
            "energy_per_day_j": p.energy_budget_j,
            "source": p.requirements.source,
            "sources": sources,
        },
        "power": {
            "radio": {k: getattr(ctx.radio, k) for k in E.RADIO_FIELDS} | {"profile": ctx.radio.name},
            "radio_sources": ctx.radio.sources,
            "cpu_mw": ctx.cpu.active_mw,
            "cpu_source": ctx.cpu.source,
            "se_mw": ctx.se.active_mw,
            "se_source": ctx.se.source,
        },
        "before": before.as_dict(),
        "measures": [
            {"measure": m.name, "title": m.title, "transforms": m.transforms, **o_.as_dict()}
            for m, o_ in zip(usable, singles)
        ],
        "not_applicable": not_applicable,
        "best": best.as_dict() if best else None,
        "combinations": [
            {"measures": list(c.design.measures), "passes": c.passes, **{k: c.numbers[k] for k in COMBO_NUMBERS}}
            for c in combos
        ],
        "shown_combinations": {
            "+".join(c.design.measures): c.as_dict() for c in combos if tuple(sorted(c.design.measures)) in SHOWN_COMBOS
        },
        "verdict": verdict,
        "verdict_reason": why["sentence"],
        "deciding_requirement": why["deciding"],
        "moving_measure": why["measure"],
        "pattern_breaks": why["pattern_breaks"],
        "without_security": plain.as_dict(),
        "security_adds": V.security_adds(before, plain),
        "deciding": [c for c in (best or before).checks] if not before.passes else before.checks,
        "ranking": V.ranking(before, singles),
        "alerts": V.alert_thresholds(chosen, profile_sign_ms(base.key, ctx.key_profile)),
        "n": ctx.n,
        "seed": ctx.seed,
    }
