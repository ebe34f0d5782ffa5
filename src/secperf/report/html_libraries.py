"""HTML section of `secperf crypto --library`: per algorithm and operation one bar per library,
grouped by SP 800-57 strength, with the bootstrap 95% interval of the median as whiskers; a table
with each library's ratio to the fastest; S5's questions answered across libraries."""

from __future__ import annotations

from typing import Any

from ..core.result_schema import Result
from .html_env import cell, figure_view, frag, hcell
from .plots import Plot, slug
from .units import fmt_time_us

BULK = ("aead", "mac", "hash")


def _bars(table: list[dict[str, Any]], ops: tuple[str, ...], bulk: bool) -> list[tuple[str, list[Any]]]:
    groups: dict[int, list[Any]] = {}
    for r in table:
        if r["op"] not in ops or (r["family"] in BULK) != bulk:
            continue
        for lib, c in r["cells"].items():
            if c.get("p50_us"):
                lo, hi = c["ci95_us"]
                size = f" {r['size_bytes']} B" if r["size_bytes"] else ""
                groups.setdefault(r["security_bits"], []).append(
                    (f"{r['alg']} {r['op']}{size} · {lib}", c["p50_us"], lo, hi)
                )
    return [(f"{bits}-bit security", bars) for bits, bars in sorted(groups.items())]


def _table(lib: dict[str, Any]) -> dict[str, Any]:
    """Per row and library: P50 and × the fastest (bold), with hover details; n/a or failed with the reason."""
    libs = lib["libraries"]
    rows = []
    for r in lib["table"]:
        cells: list[Any] = []
        for n in libs:
            c = r["cells"].get(n)
            if c is None:
                cells.append("")
            elif c.get("p50_us"):
                lo, hi = c["ci95_us"]
                rci = c.get("ratio_ci95")
                ratio = f"×{c['ratio_to_fastest']:.2f}" + (f" ({rci[0]:.2f}–{rci[1]:.2f})" if rci else "")
                cpu = (
                    f"; CPU {fmt_time_us(c['cpu_p50_us'])} per op ({c['cpu_share']:.0%} of the wall time on a CPU)"
                    if c.get("cpu_p50_us")
                    else ""
                )
                parts: list[Any] = [fmt_time_us(c["p50_us"]), " ", frag(ratio, span="muted")]
                if c.get("cpu_share", 1.0) < 0.8:
                    parts += [" ", frag("⚠", span="warn")]
                cells.append(
                    cell(
                        parts=parts,
                        b=c.get("ratio_to_fastest") == 1.0,  # the fastest library in bold
                        title=f"P50 95% CI {fmt_time_us(lo)}–{fmt_time_us(hi)}{cpu}",
                    )
                )
            else:
                cells.append(
                    cell(
                        "n/a" if c["status"] == "unsupported" else "failed",
                        cls="warn" if c["status"] == "unsupported" else "fail",
                        title=c.get("reason", ""),
                    )
                )
        rows.append(
            [r["security_bits"], cell(r["alg"], cls="l"), cell(r["op"], cls="l"), r["size_bytes"] or "", *cells]
        )
    return {"head": ["bits", hcell("algorithm"), hcell("op"), "bytes", *libs], "rows": rows}


PLOTS = (
    (("sign",), "Signing by library and strength", False),
    (("verify",), "Verification by library and strength", False),
    (("derive", "encaps", "decaps"), "Key agreement by library and strength", False),
    (("encrypt", "decrypt"), "AEAD by library", True),
)


def plots(doc: Result) -> list[Plot]:
    """One grouped-bar plot per operation kind: a bar per library, groups by SP 800-57 strength."""
    lib = doc.analysis.libraries
    if not lib:
        return []
    out = []
    for ops, title, bulk in PLOTS:
        groups = _bars(lib["table"], ops, bulk)
        if groups:
            out.append(
                Plot(
                    slug("libraries", ops[0]),
                    "bars",
                    title,
                    groups,
                    "One bar per library: P50 per operation (log scale), whiskers the bootstrap 95% interval "
                    "of the median; groups are SP 800-57 strength rows.",
                    {"unit": "µs", "log": True},
                )
            )
    return out


def view(doc: Result) -> dict[str, Any] | None:
    """The libraries side by side (part of the crypto section)."""
    lib = doc.analysis.libraries
    if not lib:
        return None
    versions: dict[str, Any] = {}
    for r in lib["table"]:
        for n, c in r["cells"].items():
            if c.get("library"):
                versions.setdefault(n, c["library"])
    per_library = [(name, ans) for name, ans in (lib.get("per_library") or {}).items() if name != "openssl" and ans]
    return {
        "table": _table(lib),
        "versions": list(versions.items()),
        "figures": [figure_view(p) for p in plots(doc)],
        "answers": lib.get("answers") or [],
        "per_library": per_library,
    }
