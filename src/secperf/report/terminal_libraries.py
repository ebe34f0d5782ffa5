"""Terminal view of `secperf crypto --library`: per algorithm and operation one column per
library (P50 per operation, its ratio to the fastest with the ratio's bootstrap 95% interval), grouped
by SP 800-57 strength; then S5's questions answered across libraries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from ..core.result_schema import Result
from .terminal import answers_table
from .units import fmt_time_us


def openssl_only(doc: Result) -> Result:
    """The Result with only its OpenSSL crypto series (the per-family tables show one library)."""
    if not doc.analysis.libraries:
        return doc
    keep = [s for s in doc.series if s.kind != "crypto" or (s.labels.get("backend") or "openssl") == "openssl"]
    return doc.model_copy(update={"series": keep})


BUSY = 0.8  # below this share of a CPU during a row, its wall time is mostly waiting for the CPU


def _cell(c: Mapping[str, Any] | None) -> str:
    if c is None:
        return ""
    if c.get("p50_us"):
        r = c.get("ratio_to_fastest", 1.0)
        busy = " [yellow]⚠[/yellow]" if c.get("cpu_share", 1.0) < BUSY else ""
        if c.get("ratio_ci95"):  # the ratio's own bootstrap interval
            lo, hi = c["ratio_ci95"]
            return f"{fmt_time_us(c['p50_us'])} ×{r:.2f} ({lo:.2f}–{hi:.2f}){busy}"
        lo, hi = c["ci95_us"]  # the fastest: its P50's interval
        half = (hi - lo) / 2 / c["p50_us"]
        return f"[bold green]{fmt_time_us(c['p50_us'])}[/bold green] ×{r:.2f} ±{half:.0%}{busy}"
    return "[yellow]n/a[/yellow]" if c["status"] == "unsupported" else "[red]failed[/red]"


def libraries_table(lib: Mapping[str, Any]) -> Table:
    libs = lib["libraries"]
    bulk = any(r["size_bytes"] for r in lib["table"])
    t = Table(
        title="Libraries side by side: P50 per operation, × the fastest library (bootstrap 95% interval of "
        "the ratio); the fastest in green, ± half its P50's 95% interval",
        title_justify="left",
        header_style="bold",
        caption_justify="left",
    )
    t.add_column("bits", justify="right")
    t.add_column("algorithm")
    t.add_column("op")
    if bulk:
        t.add_column("bytes", justify="right")
    for name in libs:
        t.add_column(name, justify="right")
    reasons: dict[str, str] = {}
    last_bits = None
    for r in lib["table"]:
        row = [str(r["security_bits"]) if r["security_bits"] != last_bits else "", r["alg"], r["op"]]
        last_bits = r["security_bits"]
        if bulk:
            row.append(str(r["size_bytes"] or ""))
        row += [_cell(r["cells"].get(name)) for name in libs]
        for name, c in r["cells"].items():
            if c.get("reason") and not c.get("p50_us"):
                reasons.setdefault(c["reason"], name)
        t.add_row(*row)
    versions: dict[str, str] = {}
    for r in lib["table"]:
        for name, c in r["cells"].items():
            if c.get("library"):
                versions.setdefault(name, c["library"])
    cap = ["libraries: " + "; ".join(f"{n} = {v}" for n, v in versions.items())]
    if any(c.get("cpu_share", 1.0) < BUSY for r in lib["table"] for c in r["cells"].values()):
        cap.append(
            f"⚠ the row's thread was on a CPU for less than {BUSY:.0%} of its wall time (a busy machine): "
            "its wall time includes waiting; result.json has its CPU per operation (cpu_p50_us)"
        )
    cap += [f"n/a: {reason}" for reason in list(reasons)[:12]]
    if len(reasons) > 12:
        cap.append(f"... and {len(reasons) - 12} more (result.json: analysis.libraries)")
    t.caption = "\n".join(cap)
    return t


def tables(doc: Result) -> list[Table]:
    lib = doc.analysis.libraries
    if not lib:
        return []
    out = [libraries_table(lib)]
    if lib.get("answers"):
        out.append(answers_table(lib["answers"], "Study S5 across libraries"))
    return out
