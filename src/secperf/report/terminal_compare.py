"""Terminal tables of `secperf compare` (core/compare.py): measured differences with their
intervals, predicted percentiles with their sampling intervals, changed headline numbers and
changed verdicts. Each table says in its caption how its rows were judged."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from ..core.compare import MIN_RANKS
from .units import fmt_time_us

COLOURS = {
    "faster": "green",
    "higher": "green",
    "slower": "red",
    "lower": "red",
    "B predicts faster": "green",
    "B predicts slower": "red",
    "too few samples to decide": "yellow",
    "not comparable": "yellow",
}


def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return ""
    if unit in ("us", "ms", "s"):
        return fmt_time_us(v * {"us": 1.0, "ms": 1e3, "s": 1e6}[unit]) if v >= 0 else "−" + fmt(-v, unit)
    if unit == "ratio":
        return f"{v:.3g}"
    if unit == "1/s":
        return f"{v:.4g}/s"
    return f"{v:.4g} {unit}" if unit not in ("count", "bool") else f"{v:.6g}"


def signed(v: float | None, unit: str) -> str:
    if v is None:
        return ""
    return ("+" if v >= 0 else "−") + fmt(abs(v), unit)


def pct(v: float | None) -> str:
    return "" if v is None or v != v else f"{v:+.1%}"


def _verdict(text: str) -> str:
    c = COLOURS.get(text)
    return f"[{c}]{text}[/{c}]" if c else text


def difference_cell(r: dict[str, Any]) -> str:
    """B − A named by its estimator; a Hodges-Lehmann shift whose sign differs from the difference of
    the shown medians says so beside it (both are right: they answer different questions)."""
    unit = r["unit"]
    hl = str(r.get("method", "")).startswith("Hodges-Lehmann")
    pct_row = str(r.get("method", "")).startswith("difference of the phases'")  # an mqtt-load P50/P99
    text = signed(r["diff"], unit) + (" shift" if hl else "" if pct_row else " means")
    a, b = r.get("a"), r.get("b")
    if hl and a is not None and b is not None:
        medians = b - a
        if (medians > 0 > r["diff"]) or (medians < 0 < r["diff"]) or (medians == 0) != (r["diff"] == 0):
            text += f" (medians {signed(medians, unit)})"
    return text


def _table(cmp: dict[str, Any], what: str, caption: str, columns: tuple[str, ...], left: tuple[str, ...]) -> Table:
    """A comparison table of B against A: its title says what it compares, its columns are right-aligned
    but those in `left`."""
    t = Table(
        title=f"B ({cmp['b']}) against A ({cmp['a']}): {what}",
        title_justify="left",
        header_style="bold",
        caption=caption,
        caption_justify="left",
    )
    for c in columns:
        t.add_column(c, justify="left" if c in left else "right")
    return t


def _a_b(r: dict[str, Any]) -> tuple[str, str]:
    """A row's A and B cells, in its unit ('' where a side has no value)."""
    return fmt(r.get("a"), r["unit"]), fmt(r.get("b"), r["unit"])


def measured_table(cmp: dict[str, Any]) -> Table:
    conf = 1 - cmp["alpha"]
    t = _table(
        cmp,
        "measured",
        f"A, B: medians (means where B − A says 'means'); B − A with its {conf:.0%} interval: 'shift' is the Hodges-Lehmann shift (the median of all "
        "pairwise differences B − A), which can have the other sign than the difference of the medians A and B "
        "(then shown beside it); 'means' is the difference of means (fewer than "
        f"{MIN_RANKS} samples a side); 'detectable': the smallest change these sample sizes "
        f"find at alpha {cmp['alpha']:g} with {cmp.get('power', 0.8):.0%} power; a change counts from "
        f"{cmp['min_change']:.0%}; 'too few samples to decide': the interval reaches past ±"
        f"{cmp['min_change']:.0%}"
        + (
            "; P50 / P99 rows (mqtt-load): A, B are the phases' own percentiles, the interval a percentile "
            "bootstrap of both sides' samples"
            if any(str(r.get("method", "")).startswith("difference of the phases'") for r in cmp["rows"])
            else ""
        ),
        ("series", "metric", "n A/B", "A", "B", "B − A", "change [interval]", "detectable", "verdict"),
        ("series", "metric", "verdict"),
    )
    for r in cmp["rows"]:
        n = f"{r['n_a']}/{r['n_b']}"
        if "diff" not in r:
            why = _verdict(r["verdict"]) + (f": {r['reason']}" if r.get("reason") else "")
            t.add_row(r["id"], r["metric"], n, *_a_b(r), "", "", "", why)
            continue
        ci, det = r["change_ci"], r["detectable_change"]
        change = f"{pct(r['change'])} [{pct(ci[0])}, {pct(ci[1])}]" if r["change"] is not None else ""
        t.add_row(
            r["id"],
            r["metric"],
            n,
            *_a_b(r),
            difference_cell(r),
            change,
            f"±{abs(det):.1%}" if det is not None else "",
            _verdict(r["verdict"]),
        )
    return t


def predicted_table(cmp: dict[str, Any]) -> Table:
    """The predicted (what-if) rows: each percentile of A and B over all draws, B − A with the
    simulation's sampling interval, the draws on each side and the verdict."""
    t = _table(
        cmp,
        "predicted (Monte Carlo)",
        "percentiles over all draws; the interval is the simulation's sampling "
        f"error ({1 - cmp['alpha']:.0%}, bootstrap of the stored draws scaled to all draws); no significance "
        "test on draws",
        ("series", "", "A", "B", "B − A [interval]", "change", "draws A/B", "verdict"),
        ("series", "verdict"),
    )
    for r in cmp["predictions"]:
        iv = r["diff_interval"]
        t.add_row(
            r["id"],
            r["statistic"].upper(),
            *_a_b(r),
            signed(r["diff"], r["unit"]) + (f" [{signed(iv[0], r['unit'])}, {signed(iv[1], r['unit'])}]" if iv else ""),
            pct(r["change"]),
            f"{r['draws_a']:,}/{r['draws_b']:,}",
            _verdict(r["verdict"]),
        )
    return t


def changes_table(cmp: dict[str, Any]) -> Table:
    """The deterministic numbers (models, instruction counts) that differ between A and B."""
    t = _table(
        cmp,
        "changed numbers",
        f"{cmp['unchanged']} numbers identical; deterministic numbers (models, "
        "instruction counts): any difference is a change"
        + (
            "; mqtt-load phase counts (failed, refused, all up after, broker utilisation): one number per run, "
            "listed without an interval"
            if any(r.get("kind") == "mqtt" for r in cmp["changes"])
            else ""
        ),
        ("row", "number", "A", "B", "B − A", "change"),
        ("row", "number"),
    )
    for r in cmp["changes"]:
        name = r["metric"] + ("" if r["statistic"] == "value" else f" {r['statistic']}")
        t.add_row(r["id"], name, *_a_b(r), signed(r["diff"], r["unit"]), pct(r["change"]))
    return t


def verdicts_table(cmp: dict[str, Any]) -> Table:
    t = Table(title="verdicts", title_justify="left", header_style="bold")
    for c in ("pattern", "A", "B", ""):
        t.add_column(c)
    for r in cmp["verdicts"]:
        t.add_row(r["pattern"], r["a"], r["b"], "[yellow]changed[/yellow]" if r["changed"] else "same")
    return t


def tables(cmp: dict[str, Any]) -> list[Table | str]:
    """Every table the comparison has rows for; identical deterministic numbers get one line."""
    out: list[Table | str] = []
    if cmp["rows"]:
        out.append(measured_table(cmp))
    if cmp["predictions"]:
        out.append(predicted_table(cmp))
    if cmp["verdicts"]:
        out.append(verdicts_table(cmp))
    if cmp["changes"]:
        out.append(changes_table(cmp))
    elif cmp["unchanged"]:
        out.append(f"all {cmp['unchanged']} headline numbers of the {cmp['kind']} Results are identical")
    return out
