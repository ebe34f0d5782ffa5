"""The plan section of the HTML report: the suitability matrix (study S2's Table 7, computed), per
pattern the deciding numbers before / after each measure / after the best combination, energy per
day split radio / CPU / secure element as stacked bars, the measures ranked by gain, the alert
thresholds, `--verify`'s predicted vs measured rows, and the verdict rule."""

from __future__ import annotations

from typing import Any

from ..core.result_schema import Result
from . import html_grid
from .html_env import figure_view
from .plots import Plot, slug
from .views import plan as V
from .views.plan import plans


def plots(doc: Result) -> list[Plot]:
    out = []
    for p in plans(doc):
        rows = V.designs(p, combinations=False)
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
                slug("plan-energy", p.pattern),
                "stacked",
                f"{p.pattern}: energy per day by part",
                bars,
                "Radio (including its floor between activities), device CPU and secure element; joules per day.",
                {"unit": "J"},
            )
        )
    return out


def view(doc: Result) -> dict[str, Any] | None:
    """The plan part: the grids of report/views/plan.py (the terminal draws the same), with each
    pattern's energy figure and the verdict rule."""
    ps = plans(doc)
    if not ps:
        return None
    a = doc.analysis.plan
    assert a is not None  # plans(doc) found its patterns
    g = html_grid.view
    figs = {pl.name: pl for pl in plots(doc)}
    patterns = []
    for p in ps:
        fig = figs.get(slug("plan-energy", p.pattern))
        patterns.append(
            {
                "pattern": p.pattern,
                "verdict": p.verdict,
                "description": p.description,
                "source": p.source,
                "requirements_source": (p.requirements or {}).get("source"),
                "why": p.verdict_reason,
                "security": g(V.security(p)),
                "states": g(V.detail(p)),
                "figure": figure_view(fig, data_plot="plan-energy") if fig else None,
                "ranking": g(V.ranking(p)),
                "not_applicable": list((p.not_applicable or {}).items()),
            }
        )
    return {
        "template": "plan.html.j2",
        "title": "Communication patterns: verdicts before and after design measures",
        "rule": a.rule or "",
        "matrix": g(V.matrix(ps)),
        "patterns": patterns,
        "alerts": g(V.alerts(ps)),
        "verify": g(V.verify(a.verify)) if a.verify else None,
    }
