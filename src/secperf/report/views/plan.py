"""The tables of a `plan` Result, built once as Grids (report/views/grid.py) for the terminal and the
HTML page alike: the suitability matrix (study S2's Table 7, computed), per pattern what security
does to each requirement, the deciding numbers before / after each measure / after the best
combination, the measures ranked by gain; the alert thresholds and `--verify`'s rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core.analysis_schema import PlanPattern, VerifyRow
from ...core.result_schema import Result
from ...inputs.patterns import MEASURES
from ..units import fmt_time_us
from .grid import Grid

MARK = {True: "✓", False: "✗"}
ALONE = "⚠"  # a requirement the pattern breaks with no security at all (not judged)
SHORT = {
    "resumption": "resumption",
    "keepalive": "keep-alive",
    "pooling": "pooling",
    "token-cache": "JWT cache",
    "preauth": "pre-auth",
    "psk": "PSK",
    "precomputed-keyshare": "key share",
    "backoff": "back-off",
    "edhoc-oscore": "EDHOC+OSCORE",
    "quic-0rtt": "QUIC 0-RTT",
    "dtls13-cid": "DTLS 1.3 CID",
}
TINY = {"edhoc-oscore": "EDHOC", "dtls13-cid": "DTLS CID"}  # the matrix's narrow design column
VERDICT_SHORT = {"suitable as is": "as is", "suitable with design measures": "measures", "hard to reconcile": "hard"}


def plans(doc: Result) -> list[PlanPattern]:
    return doc.analysis.plan.patterns if doc.analysis.plan is not None else []


def fmt_ms(v: float | None) -> str:
    """A latency given in ms at human scale, 3 significant digits (the formatter of every table)."""
    return "–" if v is None else fmt_time_us(v * 1e3)


def fmt_j(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v / 1e3:.3g} kJ" if v >= 10_000 else f"{v:.3g} J"


def fmt_bytes(v: float) -> str:
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= div:
            return f"{v / div:.1f} {unit}"
    return f"{v:.0f} B"


def _signed_bytes(v: float) -> str:
    return fmt_bytes(v) if v >= 0 else "−" + fmt_bytes(-v)


def _mark(o: dict[str, Any], check: str) -> str:
    c = next((c for c in o["checks"] if c["check"] == check), None)
    return ALONE if c is not None and not c["ok"] and not c.get("judged", True) else ""


def short_cell(o: dict[str, Any]) -> str:
    """A matrix cell in a few characters: the latency percentile (its spread when judged), energy per
    day, and ✓/✗ (meets every requirement security is judged on)."""
    x = o["numbers"]
    checks = {c["check"] for c in o["checks"]}
    s = f"{fmt_ms(x['latency_pq_ms'])}{_mark(o, 'latency')} {MARK[o['passes']]}"
    if "determinism" in checks:
        s += f"\n±{fmt_ms(x['spread_ms'])}{_mark(o, 'determinism')}"
    return s + f"\n{fmt_j(x['energy_per_day_j'])}{_mark(o, 'energy')}"


def _short_requirement(p: PlanPattern) -> str:
    r = p.requirements or {}
    s = f"≤{fmt_ms(r['latency_ms'])}"
    if r.get("determinism_ms") is not None:
        s += f"\n±≤{fmt_ms(r['determinism_ms'])}"
    if r.get("energy_per_day_j") is not None:
        s += f"\n≤{fmt_j(r['energy_per_day_j'])}"
    return s


def _short_verdict(p: PlanPattern) -> str:
    s = VERDICT_SHORT.get(str(p.verdict), str(p.verdict))
    for b in p.pattern_breaks or []:
        s += f"\n{ALONE} {'spread' if b['check'] == 'determinism' else b['check']}"
    return s


def pattern_keys(ps: list[PlanPattern]) -> list[str]:
    """Short column names for the patterns (P1, P2, ...): the legend under the matrix names them."""
    return [f"P{i + 1}" for i in range(len(ps))]


def used_measures(ps: list[PlanPattern]) -> list[str]:
    return [m for m in MEASURES if any(any(x["measure"] == m for x in p.measures or []) for p in ps)]


def matrix(ps: list[PlanPattern]) -> Grid:
    """Study S2's suitability matrix, one column per pattern (P1, P2, ... named in the notes) and one
    row per design: as written, each measure alone, the best combination. A column per pattern keeps
    six patterns side by side at 80 columns."""
    keys = pattern_keys(ps)
    legend = "; ".join(
        f"{k} {p.pattern} ({i['protocol']} {i['auth']} {i['key']} @ {i['network']})"
        for k, p, i in ((k, p, p.inputs or {}) for k, p in zip(keys, ps))
    )
    g = Grid(
        "suitability matrix (study S2, computed): per pattern, latency percentile (± spread), energy a day",
        ["design", *keys],
        notes=[
            f"{legend}. ✓ meets every requirement security is judged on, ✗ not; ⚠ broken with no security at "
            "all (the radio or the network alone: not a security verdict); n/a: the measure does not apply; "
            "verdict: suitable as is, with (design) measures, or hard to reconcile"
        ],
        no_wrap=("design",),
    )
    g.add(["percentile", *(f"P{(p.requirements or {})['latency_percentile']:g}" for p in ps)])
    g.add(["requires", *(_short_requirement(p) for p in ps)])
    g.add(["as written", *(short_cell(p.before or {}) for p in ps)])
    for m in used_measures(ps):
        by = [{x["measure"]: x for x in p.measures or []}.get(m) for p in ps]
        g.add([TINY.get(m, SHORT[m]), *(short_cell(x) if x else "n/a" for x in by)])
    best = [p.best for p in ps]
    g.add(["best", *(short_cell(b) if b else "–" for b in best)])
    g.add(["best is", *(" + ".join(TINY.get(m, SHORT[m]) for m in b["measures"]) if b else "–" for b in best)])
    g.add(["verdict", *(_short_verdict(p) for p in ps)])
    return g


def designs(p: PlanPattern, combinations: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """A pattern's designs in report order: as written, each measure, the combinations shown (unless
    `combinations` is False: the energy figure leaves them out), the best."""
    rows = [("as written", p.before or {})] + [(x["measure"], x) for x in p.measures or []]
    if combinations:
        rows += [(name, o) for name, o in (p.shown_combinations or {}).items()]
    if p.best:
        rows.append(("best: " + "+".join(p.best["measures"]), p.best))
    return rows


def _g3(v: float) -> str:
    return f"{v:.3g}"


# a design's columns: header ("P<q>": the pattern's latency percentile), its number, how it is shown
DESIGN_COLUMNS: list[tuple[str, str, Callable[[Any], str]]] = [
    ("P50", "latency_p50_ms", fmt_ms),
    ("P<q>", "latency_pq_ms", fmt_ms),
    ("worst−P50", "spread_ms", fmt_ms),
    ("set-ups/day", "setups_per_day", _g3),
    ("signatures/day", "signatures_per_day", _g3),
    ("pings/day", "keepalives_per_day", _g3),
    ("energy/day", "energy_per_day_j", fmt_j),
    ("radio", "energy_radio_j", fmt_j),
    ("CPU", "energy_cpu_j", fmt_j),
    ("SE", "energy_se_j", fmt_j),
    ("per msg", "energy_per_message_mj", lambda v: f"{v:.3g} mJ"),
    ("battery", "battery_days", lambda v: "–" if v is None else f"{v / 365:.1f} y"),
    ("bytes/day", "bytes_per_day", fmt_bytes),
]


def detail(p: PlanPattern) -> Grid:
    g = Grid(
        f"{p.pattern}: {p.verdict} — {p.description}",
        [
            "design",
            *(f"P{(p.requirements or {})['latency_percentile']:g}" if h == "P<q>" else h for h, _, _ in DESIGN_COLUMNS),
            "meets",
        ],
        no_wrap=("design",),
    )
    for name, o in designs(p):
        x = o["numbers"]
        failed = ",".join(c["check"] for c in o["checks"] if not c["ok"])
        cells = [show(x.get(key)) for _, key, show in DESIGN_COLUMNS]
        g.add([name, *cells, MARK[o["passes"]] + ("" if o["passes"] else " " + failed)])
    return g


def security(p: PlanPattern) -> Grid | None:
    """What security does to each requirement: the pattern as written against the same traffic with no
    security at all; the verdict's reason as the note."""
    rows = p.security_adds
    if not rows:
        return None
    g = Grid(
        f"{p.pattern}: what security does to each requirement (as written, against the same traffic without security)",
        ["requirement", "limit", "without security", "with security", "security adds", "judged", "source"],
        notes=[p.verdict_reason] if p.verdict_reason else [],
        text=("judged", "source"),
    )
    src = (p.requirements or {}).get("sources") or {}

    def f(v: float | None, u: str) -> str:
        return fmt_ms(v) if u == "ms" else fmt_j(v) + "/day"

    for r in rows:
        g.add(
            [
                r["what"],
                f(r["limit"], r["unit"]),
                f(r["without_security"], r["unit"]),
                f(r["with_security"], r["unit"]),
                f(r["adds"], r["unit"]),
                f"{ALONE} no: broken without security" if r["breaks_without_security"] else "yes",
                src.get(r["check"], ""),
            ]
        )
    return g


def ranking(p: PlanPattern) -> Grid:
    g = Grid(
        f"{p.pattern}: measures ranked by gain (score = gains as shares of each limit, summed)",
        ["measure", "score", "Δ latency", "Δ spread", "Δ energy/day", "Δ bytes/day", "Δ signatures/day", "meets"],
    )
    for r in p.ranking or []:
        g.add(
            [
                r["measure"],
                f"{r['score']:+.2f}",
                fmt_ms(r["latency_pq_ms"]),
                fmt_ms(r["spread_ms"]),
                fmt_j(r["energy_per_day_j"]),
                _signed_bytes(r["bytes_per_day"]),
                f"{r['signatures_per_day']:.3g}",
                MARK[r["meets"]],
            ]
        )
    return g


def alerts(ps: list[PlanPattern]) -> Grid:
    g = Grid(
        "alert thresholds the verdicts assume (secperf metrics names)",
        ["pattern", "metric", "assumed", "alert", "why"],
        left=5,
    )
    for p in ps:
        for a in p.alerts or []:
            alert = f"> {a['alert_above']:.4g}" if "alert_above" in a else f"< {a['alert_below']:.4g}"
            g.add([p.pattern, a["metric"], f"{a['assumed']:.4g}", alert, a["why"]])
    return g


def verify(rows: list[VerifyRow]) -> Grid:
    g = Grid(
        "--verify: predicted vs measured P50 over the pattern's emulated link (set-ups; 'kept msg': one "
        "message on a kept session)",
        ["pattern", "measure", "row", "network", "predicted P50", "measured P50", "error", "n", "note"],
        left=4,
        text=("note",),
    )
    for r in rows:
        err = r.error_share
        g.add(
            [
                r.pattern,
                r.measure,
                r.row,
                r.network,
                fmt_ms(r.predicted_p50_ms),
                fmt_ms(r.measured_p50_ms),
                "–" if err is None else f"{err * 100:+.1f}%",
                "" if r.n is None else str(r.n),
                r.note,
            ]
        )
    return g


def pattern_grids(p: PlanPattern) -> list[Grid]:
    """One pattern's tables: its designs, what security does, its measures ranked."""
    sec = security(p)
    return [detail(p)] + ([sec] if sec is not None else []) + [ranking(p)]


def grids(doc: Result) -> list[Grid]:
    """Every plan table in report order."""
    ps = plans(doc)
    if not ps:
        return []
    out = [matrix(ps)]
    for p in ps:
        out += pattern_grids(p)
    out.append(alerts(ps))
    v = doc.analysis.plan.verify if doc.analysis.plan is not None else None
    if v:
        out.append(verify(v))
    return out
