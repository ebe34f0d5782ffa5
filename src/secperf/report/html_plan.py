"""The plan section of the HTML report: the suitability matrix (study S2's Table 7, computed), per
pattern the deciding numbers before / after each measure / after the best combination, energy per
day split radio / CPU / secure element as stacked bars, the measures ranked by gain, the alert
thresholds, `--verify`'s predicted vs measured rows, and the verdict rule."""

from __future__ import annotations

from typing import Any

from ..core.result_schema import Result
from ..inputs.patterns import MEASURES
from .html_env import Frag, cell, figure_view, frag
from .plots import Plot, slug
from .terminal_plan import MARK, SHORT, fmt_bytes, fmt_j, fmt_ms, plans


def _table(head: list[str], rows: list[list[Any]], left: int = 1) -> dict[str, Any]:
    return {"head": head, "rows": rows, "left": left}


def _lines(lines: list[str]) -> list[Frag]:
    """Fragments: one per line, each after a line break but the first."""
    return [frag(x, br=i > 0) for i, x in enumerate(lines)]


def _in_unit(x: float | None, unit: str) -> str:
    """A requirement's figure in its unit: milliseconds, or joules per day."""
    return fmt_ms(x) if unit == "ms" else fmt_j(x) + "/day"


def _outcome(o: dict[str, Any]) -> Frag:
    """A design's deciding numbers and its mark, in the pass/fail colour."""
    x = o["numbers"]
    lines = [f"P{x['latency_percentile']:g} {fmt_ms(x['latency_pq_ms'])}"]
    if any(c["check"] == "determinism" for c in o["checks"]):
        lines.append(f"spread {fmt_ms(x['spread_ms'])}")
    lines.append(f"{fmt_j(x['energy_per_day_j'])}/day {MARK[o['passes']]}")
    return frag(_lines(lines), span="ok" if o["passes"] else "fail")


def plots(doc: Result) -> list[Plot]:
    out = []
    for p in plans(doc):
        rows = [("as written", p["before"])] + [(x["measure"], x) for x in p["measures"]]
        if p.get("best"):
            rows.append(("best: " + "+".join(p["best"]["measures"]), p["best"]))
        bars = [
            (
                name,
                [
                    ("radio", o["numbers"]["energy_radio_j"]),
                    ("CPU", o["numbers"]["energy_cpu_j"]),
                    ("secure element", o["numbers"]["energy_se_j"]),
                ],
            )
            for name, o in rows
        ]
        out.append(
            Plot(
                slug("plan-energy", p["pattern"]),
                "stacked",
                f"{p['pattern']}: energy per day by part",
                bars,
                "Radio (including its floor between activities), device CPU and secure element; joules per day.",
                {"unit": "J"},
            )
        )
    return out


def view(doc: Result) -> dict[str, Any] | None:
    """The plan part: the suitability matrix, per pattern its designs, energy, measures ranked; the
    alert thresholds; --verify's cross-check."""
    ps = plans(doc)
    if not ps:
        return None
    a = doc.analysis["plan"]
    used = [m for m in MEASURES if any(any(x["measure"] == m for x in p["measures"]) for p in ps)]
    rows = []
    for p in ps:
        by = {x["measure"]: x for x in p["measures"]}
        r = p["requirements"]
        req = [f"P{r['latency_percentile']:g} ≤ {fmt_ms(r['latency_ms'])}"]
        if r.get("determinism_ms") is not None:
            req.append(f"spread ≤ {fmt_ms(r['determinism_ms'])}")
        if r.get("energy_per_day_j") is not None:
            req.append(f"≤ {fmt_j(r['energy_per_day_j'])}/day")
        best = p.get("best")
        inputs = p["inputs"]
        rows.append(
            [
                cell(
                    parts=[
                        frag(p["pattern"], b=True),
                        frag(f"{inputs['protocol']} {inputs['auth']} {inputs['key']} @ {inputs['network']}", br=True),
                    ]
                ),
                cell(parts=_lines(req)),
                cell(parts=[_outcome(p["before"])]),
                *(cell(parts=[_outcome(by[m]) if m in by else frag("n/a", span="muted")]) for m in used),
                cell(parts=["+".join(SHORT[m] for m in best["measures"]), frag("", br=True), _outcome(best)])
                if best
                else "–",
                cell(
                    parts=[
                        frag(p["verdict"], b=True),
                        *(frag(f"⚠ without security: {b['check']}", br=True) for b in p.get("pattern_breaks") or []),
                    ]
                ),
            ]
        )
    figs = {pl.name: pl for pl in plots(doc)}
    patterns = []
    for p in ps:
        v: dict[str, Any] = {
            "pattern": p["pattern"],
            "verdict": p["verdict"],
            "description": p["description"],
            "source": p["source"],
            "requirements_source": p["requirements"]["source"],
            "why": p.get("verdict_reason"),
            "security": None,
        }
        if p.get("security_adds"):
            srcs = p["requirements"].get("sources") or {}
            v["security"] = _table(
                ["requirement", "limit", "without security", "with security", "security adds", "judged", "source"],
                [
                    [
                        r["what"],
                        _in_unit(r["limit"], r["unit"]),
                        _in_unit(r["without_security"], r["unit"]),
                        _in_unit(r["with_security"], r["unit"]),
                        _in_unit(r["adds"], r["unit"]),
                        "⚠ no: broken without security" if r["breaks_without_security"] else "yes",
                        srcs.get(r["check"], ""),
                    ]
                    for r in p["security_adds"]
                ],
            )
        states = [("as written", p["before"])] + [(x["measure"], x) for x in p["measures"]]
        states += [(name, o) for name, o in (p.get("shown_combinations") or {}).items()]
        if p.get("best"):
            states.append(("best: " + "+".join(p["best"]["measures"]), p["best"]))
        srows = []
        for name, o in states:
            x = o["numbers"]
            bat = x.get("battery_days")
            srows.append(
                [
                    name,
                    fmt_ms(x["latency_p50_ms"]),
                    fmt_ms(x["latency_pq_ms"]),
                    fmt_ms(x["spread_ms"]),
                    f"{x['setups_per_day']:.3g}",
                    f"{x['signatures_per_day']:.3g}",
                    f"{x['keepalives_per_day']:.3g}",
                    fmt_j(x["energy_per_day_j"]),
                    fmt_j(x["energy_radio_j"]),
                    fmt_j(x["energy_cpu_j"]),
                    fmt_j(x["energy_se_j"]),
                    "–" if bat is None else f"{bat / 365:.1f} y",
                    fmt_bytes(x["bytes_per_day"]),
                    MARK[o["passes"]] + " " + ", ".join(c["check"] for c in o["checks"] if not c["ok"]),
                ]
            )
        v["states"] = _table(
            [
                "design",
                "P50",
                f"P{p['requirements']['latency_percentile']:g}",
                "worst − P50",
                "set-ups/day",
                "signatures/day",
                "pings/day",
                "energy/day",
                "radio",
                "CPU",
                "SE",
                "battery",
                "bytes/day",
                "meets",
            ],
            srows,
        )
        fig = figs.get(slug("plan-energy", p["pattern"]))
        v["figure"] = figure_view(fig, data_plot="plan-energy") if fig else None
        v["ranking"] = _table(
            ["measure", "score", "Δ latency", "Δ energy/day", "Δ bytes/day", "Δ signatures/day", "meets"],
            [
                [
                    r["measure"],
                    f"{r['score']:+.2f}",
                    fmt_ms(r["latency_pq_ms"]),
                    fmt_j(r["energy_per_day_j"]),
                    f"{r['bytes_per_day']:.0f} B",
                    f"{r['signatures_per_day']:.3g}",
                    MARK[r["meets"]],
                ]
                for r in p["ranking"]
            ],
        )
        v["not_applicable"] = list((p.get("not_applicable") or {}).items())
        patterns.append(v)
    alerts = _table(
        ["pattern", "metric", "assumed", "alert", "why"],
        [
            [
                p["pattern"],
                x["metric"],
                f"{x['assumed']:.4g}",
                f"> {x['alert_above']:.4g}" if "alert_above" in x else f"< {x['alert_below']:.4g}",
                x["why"],
            ]
            for p in ps
            for x in p["alerts"]
        ],
        left=2,
    )
    verify = (
        _table(
            ["pattern", "measure", "row", "network", "predicted P50", "measured P50", "error", "n", "note"],
            [
                [
                    r["pattern"],
                    r["measure"],
                    r["row"],
                    r["network"],
                    fmt_ms(r.get("predicted_p50_ms")),
                    fmt_ms(r.get("measured_p50_ms")),
                    "–" if r.get("error_share") is None else f"{r['error_share'] * 100:+.1f}%",
                    str(r.get("n", "")),
                    r.get("note", ""),
                ]
                for r in a["verify"]
            ],
            left=4,
        )
        if a.get("verify")
        else None
    )
    return {
        "template": "plan.html.j2",
        "title": "Communication patterns: verdicts before and after design measures",
        "rule": a.get("rule", ""),
        "matrix": _table(
            ["pattern", "requires", "before", *(SHORT[m] for m in used), "best combination", "verdict"], rows, left=2
        ),
        "patterns": patterns,
        "alerts": alerts,
        "verify": verify,
    }
