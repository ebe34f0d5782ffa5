"""Terminal tables of a `plan` Result: the suitability matrix (study S2's Table 7, computed), per
pattern the deciding numbers before, after each measure and after the best combination, the
ranking of measures, the alert thresholds, and `--verify`'s predicted vs measured rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.table import Table

from ..core.result import as_result
from ..core.result_schema import Result
from ..inputs.patterns import MEASURES
from .units import fmt_time_us

MARK = {True: "✓", False: "✗"}
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


def plans(doc: Result | Mapping[str, Any]) -> list[dict[str, Any]]:
    patterns: list[dict[str, Any]] = (as_result(doc).analysis.get("plan") or {}).get("patterns", [])
    return patterns


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


ALONE = "⚠"  # a requirement the pattern breaks with no security at all (not judged)


def _mark(o: dict[str, Any], check: str) -> str:
    c = next((c for c in o["checks"] if c["check"] == check), None)
    return f" {ALONE}" if c is not None and not c["ok"] and not c.get("judged", True) else ""


def cell(o: dict[str, Any]) -> str:
    x = o["numbers"]
    s = f"P{x['latency_percentile']:g} {fmt_ms(x['latency_pq_ms'])}{_mark(o, 'latency')}"
    checks = {c["check"]: c for c in o["checks"]}
    if "determinism" in checks:
        s += f"\nspread {fmt_ms(x['spread_ms'])}{_mark(o, 'determinism')}"
    s += f"\n{fmt_j(x['energy_per_day_j'])}/day{_mark(o, 'energy')}"
    return s + " " + MARK[o["passes"]]


def verdict_cell(p: dict[str, Any]) -> str:
    """The security verdict, and what the pattern breaks by itself (⚠: not a security verdict)."""
    s = str(p["verdict"])
    for b in p.get("pattern_breaks") or []:
        s += f"\n{ALONE} without security: {b['check']}"
    return s


def requirement(p: dict[str, Any]) -> str:
    r = p["requirements"]
    s = f"P{r['latency_percentile']:g} ≤ {fmt_ms(r['latency_ms'])}"
    if r.get("determinism_ms") is not None:
        s += f"\nspread ≤ {fmt_ms(r['determinism_ms'])}"
    if r.get("energy_per_day_j") is not None:
        s += f"\n≤ {fmt_j(r['energy_per_day_j'])}/day"
    return s


def short_cell(o: dict[str, Any]) -> str:
    """A matrix cell in a few characters: the latency percentile (its spread when judged), energy per
    day, and ✓/✗ (meets every requirement security is judged on)."""
    x = o["numbers"]
    checks = {c["check"]: c for c in o["checks"]}
    s = f"{fmt_ms(x['latency_pq_ms'])}{_mark(o, 'latency').strip()} {MARK[o['passes']]}"
    if "determinism" in checks:
        s += f"\n±{fmt_ms(x['spread_ms'])}{_mark(o, 'determinism').strip()}"
    return s + f"\n{fmt_j(x['energy_per_day_j'])}{_mark(o, 'energy').strip()}"


def _short_requirement(p: dict[str, Any]) -> str:
    r = p["requirements"]
    s = f"≤{fmt_ms(r['latency_ms'])}"
    if r.get("determinism_ms") is not None:
        s += f"\n±≤{fmt_ms(r['determinism_ms'])}"
    if r.get("energy_per_day_j") is not None:
        s += f"\n≤{fmt_j(r['energy_per_day_j'])}"
    return s


TINY = {"edhoc-oscore": "EDHOC", "dtls13-cid": "DTLS CID"}  # the matrix's narrow design column


def pattern_keys(ps: list[dict[str, Any]]) -> list[str]:
    """Short column names for the patterns (P1, P2, ...): the legend under the matrix names them."""
    return [f"P{i + 1}" for i in range(len(ps))]


def matrix_table(ps: list[dict[str, Any]]) -> Table:
    """Study S2's suitability matrix, one column per pattern (P1, P2, ... named in the caption) and one
    row per design: as written, each measure alone, the best combination. Transposed from a row per
    pattern, which at 80 columns split into several parts of tall cells: six patterns fit side by side."""
    keys = pattern_keys(ps)
    legend = "; ".join(
        f"{k} {p['pattern']} ({p['inputs']['protocol']} {p['inputs']['auth']} {p['inputs']['key']} @ "
        f"{p['inputs']['network']})"
        for k, p in zip(keys, ps)
    )
    t = Table(
        title="suitability matrix (study S2, computed): per pattern, latency percentile (± spread), energy a day",
        title_justify="left",
        show_lines=True,
        box=box.SIMPLE_HEAD,
        padding=(0, 0, 0, 1),
        pad_edge=False,
        caption=f"{legend}. ✓ meets every requirement security is judged on, ✗ not; ⚠ broken with no security at "
        "all (the radio or the network alone: not a security verdict); n/a: the measure does not apply; "
        "verdict: suitable as is, with (design) measures, or hard to reconcile",
        caption_justify="left",
    )
    t.add_column("design", no_wrap=True)
    for k in keys:
        t.add_column(k, justify="right")
    t.add_row("percentile", *(f"P{p['requirements']['latency_percentile']:g}" for p in ps))
    t.add_row("requires", *(_short_requirement(p) for p in ps))
    t.add_row("as written", *(short_cell(p["before"]) for p in ps))
    used = [m for m in MEASURES if any(any(x["measure"] == m for x in p["measures"]) for p in ps)]
    for m in used:
        by = [{x["measure"]: x for x in p["measures"]}.get(m) for p in ps]
        t.add_row(TINY.get(m, SHORT[m]), *(short_cell(x) if x else "n/a" for x in by))
    best = [p.get("best") for p in ps]
    t.add_row("best", *(short_cell(b) if b else "–" for b in best))
    t.add_row("best is", *(" + ".join(TINY.get(m, SHORT[m]) for m in b["measures"]) if b else "–" for b in best))
    t.add_row("verdict", *(_short_verdict(p) for p in ps))
    return t


VERDICT_SHORT = {"suitable as is": "as is", "suitable with design measures": "measures", "hard to reconcile": "hard"}


def _short_verdict(p: dict[str, Any]) -> str:
    s = VERDICT_SHORT.get(str(p["verdict"]), str(p["verdict"]))
    for b in p.get("pattern_breaks") or []:
        s += f"\n{ALONE} {'spread' if b['check'] == 'determinism' else b['check']}"
    return s


def detail_table(p: dict[str, Any]) -> Table:
    t = Table(title=f"{p['pattern']}: {p['verdict']} — {p['description']}", title_justify="left")
    cols = (
        "design",
        "P50",
        f"P{p['requirements']['latency_percentile']:g}",
        "worst−P50",
        "set-ups/day",
        "signatures/day",
        "pings/day",
        "energy/day",
        "radio",
        "CPU",
        "SE",
        "per msg",
        "battery",
        "bytes/day",
        "",
    )
    for c in cols:
        t.add_column(c, justify="left" if c == "design" else "right", no_wrap=c == "design")
    rows = [("as written", p["before"])] + [(x["measure"], x) for x in p["measures"]]
    rows += [(name, o) for name, o in (p.get("shown_combinations") or {}).items()]
    if p.get("best"):
        rows.append(("best: " + "+".join(p["best"]["measures"]), p["best"]))
    for name, o in rows:
        x = o["numbers"]
        bat = x.get("battery_days")
        t.add_row(
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
            f"{x['energy_per_message_mj']:.3g} mJ",
            "–" if bat is None else f"{bat / 365:.1f} y",
            fmt_bytes(x["bytes_per_day"]),
            MARK[o["passes"]]
            + (" " + ",".join(c["check"] for c in o["checks"] if not c["ok"]) if not o["passes"] else ""),
        )
    return t


def security_table(p: dict[str, Any]) -> Table | None:
    """What security does to each requirement: the pattern as written against the same traffic with no
    security at all; the verdict's reason as the caption."""
    rows = p.get("security_adds")
    if not rows:
        return None
    t = Table(
        title=f"{p['pattern']}: what security does to each requirement (as written, against the same traffic "
        f"without security)",
        title_justify="left",
        caption=p.get("verdict_reason"),
        caption_justify="left",
    )
    for c in ("requirement", "limit", "without security", "with security", "security adds", "judged", "source"):
        t.add_column(c, justify="left" if c in ("requirement", "judged", "source") else "right")
    src = p["requirements"].get("sources") or {}

    def f(v: float | None, u: str) -> str:
        return fmt_ms(v) if u == "ms" else fmt_j(v) + "/day"

    for r in rows:
        t.add_row(
            r["what"],
            f(r["limit"], r["unit"]),
            f(r["without_security"], r["unit"]),
            f(r["with_security"], r["unit"]),
            f(r["adds"], r["unit"]),
            f"{ALONE} no: broken without security" if r["breaks_without_security"] else "yes",
            src.get(r["check"], ""),
        )
    return t


def ranking_table(p: dict[str, Any]) -> Table:
    t = Table(
        title=f"{p['pattern']}: measures ranked by gain (score = gains as shares of each limit, summed)",
        title_justify="left",
    )
    for c in ("measure", "score", "Δ latency", "Δ spread", "Δ energy/day", "Δ bytes/day", "Δ signatures/day", "meets"):
        t.add_column(c, justify="left" if c == "measure" else "right")
    for r in p["ranking"]:
        t.add_row(
            r["measure"],
            f"{r['score']:+.2f}",
            fmt_ms(r["latency_pq_ms"]),
            fmt_ms(r["spread_ms"]),
            fmt_j(r["energy_per_day_j"]),
            fmt_bytes(abs(r["bytes_per_day"])) if r["bytes_per_day"] >= 0 else "−" + fmt_bytes(-r["bytes_per_day"]),
            f"{r['signatures_per_day']:.3g}",
            MARK[r["meets"]],
        )
    return t


def alerts_table(ps: list[dict[str, Any]]) -> Table:
    t = Table(title="alert thresholds the verdicts assume (secperf metrics names)", title_justify="left")
    for c in ("pattern", "metric", "assumed", "alert", "why"):
        t.add_column(c, justify="left")
    for p in ps:
        for a in p["alerts"]:
            alert = f"> {a['alert_above']:.4g}" if "alert_above" in a else f"< {a['alert_below']:.4g}"
            t.add_row(p["pattern"], a["metric"], f"{a['assumed']:.4g}", alert, a["why"])
    return t


def verify_table(rows: list[dict[str, Any]]) -> Table:
    t = Table(
        title="--verify: predicted vs measured P50 over the pattern's emulated link (set-ups; 'kept msg': one "
        "message on a kept session)",
        title_justify="left",
    )
    for c in ("pattern", "measure", "row", "network", "predicted P50", "measured P50", "error", "n", "note"):
        t.add_column(c, justify="left" if c in ("pattern", "measure", "row", "network", "note") else "right")
    for r in rows:
        err = r.get("error_share")
        t.add_row(
            r["pattern"],
            r["measure"],
            r["row"],
            r["network"],
            fmt_ms(r.get("predicted_p50_ms")),
            fmt_ms(r.get("measured_p50_ms")),
            "–" if err is None else f"{err * 100:+.1f}%",
            str(r.get("n", "")),
            r.get("note", ""),
        )
    return t


def tables(doc: Result | Mapping[str, Any]) -> list[Table]:
    doc = as_result(doc)
    ps = plans(doc)
    if not ps:
        return []
    out = [matrix_table(ps)]
    for p in ps:
        sec = security_table(p)
        out += [detail_table(p)] + ([sec] if sec is not None else []) + [ranking_table(p)]
    out.append(alerts_table(ps))
    v = doc.analysis["plan"].get("verify")
    if v:
        out.append(verify_table(v))
    return out


def listing() -> None:
    from ..inputs import patterns as PS
    from ..model import energy as E
    from ..plan.measures import CATALOGUE
    from .fit import print_table
    from .terminal import out_console

    con = out_console()
    t = Table(title="built-in patterns (secperf plan --pattern NAME)", title_justify="left")
    for c in ("pattern", "protocol", "schedule", "description"):
        t.add_column(c)
    for n in PS.builtin_names():
        p = PS.load_pattern(n)
        t.add_row(n, f"{p.stack.protocol}/{p.stack.auth}", p.traffic.schedule, p.description)
    print_table(con, t)
    m = Table(title="design measures", title_justify="left")
    m.add_column("measure")
    m.add_column("what it changes in the what-if inputs")
    for name, x in CATALOGUE.items():
        m.add_row(name, x.transforms)
    print_table(con, m)
    con.print("radio energy profiles: " + ", ".join(E.radio_names()))
