"""`secperf plan`: judge communication patterns (study S2's six or the user's) before and after
design measures, write a Result of kind `plan` (the matrix in `analysis.plan`), print the matrix;
`--verify` runs each measure the emulator can run before/after on the real servers over the
pattern's emulated link (app/plan_verify.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..core import host, result as R
from ..core.errors import EXIT_OK
from ..core.store import RunStore
from ..plan import planner as PL
from ..plan.verdict import __doc__ as RULE
from ..spec import patterns as PS


@dataclass
class PlanOptions:
    patterns: list[str]
    device: str | None = None
    se: str | None = None
    network: str | None = None
    radio: str | None = None
    n: int = 20_000
    seed: int = 1
    verify: bool = False
    verify_n: int = 10
    json: bool = False
    out: str = "results"
    no_report: bool = False
    metrics: str | None = None
    command: list[str] = field(default_factory=lambda: ["secperf", "plan"])


def _clean(x):
    """JSON-safe: infinities (a battery that never empties) become None."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def _overrides(o: PlanOptions) -> PL.Overrides:
    return PL.Overrides(device=o.device, se=o.se, network=o.network, radio=o.radio, n=o.n, seed=o.seed)


def check(o: PlanOptions) -> list:
    """Every input checked (patterns, profiles, link, measures) without simulating anything."""
    from .runner import check_output_file
    check_output_file(o.metrics, "--metrics")  # a file written at the end: said before anything runs
    pats = PS.load_patterns(o.patterns)
    for p in pats:
        PL.check(p, _overrides(o))
    return pats


def plan_all(o: PlanOptions) -> list[dict]:
    pats = check(o)
    return [_clean(PL.plan_pattern(p, _overrides(o))) for p in pats]


def run(o: PlanOptions) -> int:
    from ..report import terminal_plan
    from .runner import show_result
    plans = plan_all(o)                      # bad input stops here, before a run directory exists
    run_ = RunStore(o.out).create("plan")
    params = {"patterns": o.patterns, "device": o.device, "se": o.se, "network": o.network, "radio": o.radio, "n": o.n,
              "seed": o.seed, "verify": o.verify}
    doc = R.new_result(kind="plan", command=o.command, params=params, host=host.collect(), run_id=run_.run_id)
    doc["analysis"]["plan"] = {"patterns": plans, "rule": " ".join(RULE.split())}
    if o.verify:
        from .plan_verify import verify
        doc["analysis"]["plan"]["verify"] = verify(plans, o, doc, run_)
    R.finish(doc)
    run_.save(doc)
    if not o.no_report:
        from ..report.html import render
        run_.write_text("report.html", render(doc))
    if o.metrics:
        from ..report.export_metrics import write_metrics
        write_metrics(doc, o.metrics)
    show_result(doc, run_, json_out=o.json, no_report=o.no_report, tables=terminal_plan.tables(doc))
    return EXIT_OK
