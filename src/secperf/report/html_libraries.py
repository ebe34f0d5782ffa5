"""HTML section of `secperf crypto --library`: per algorithm and operation one bar per library,
grouped by SP 800-57 strength, with the bootstrap 95% interval of the median as whiskers; a table
with each library's ratio to the fastest; S5's questions answered across libraries."""

from __future__ import annotations

from .plots import Plot, slug
from .svg import figure
from .units import esc as e, fmt_time_us

BULK = ("aead", "mac", "hash")


def _bars(table: list[dict], ops: tuple[str, ...], bulk: bool) -> list:
    groups: dict[int, list] = {}
    for r in table:
        if r["op"] not in ops or (r["family"] in BULK) != bulk:
            continue
        for lib, c in r["cells"].items():
            if c.get("p50_us"):
                lo, hi = c["ci95_us"]
                size = f" {r['size_bytes']} B" if r["size_bytes"] else ""
                groups.setdefault(r["security_bits"], []).append(
                    (f"{r['alg']} {r['op']}{size} · {lib}", c["p50_us"], lo, hi))
    return [(f"{bits}-bit security", bars) for bits, bars in sorted(groups.items())]


def _table(lib: dict) -> str:
    libs = lib["libraries"]
    head = ("<tr><th>bits</th><th class='l'>algorithm</th><th class='l'>op</th><th>bytes</th>"
            + "".join(f"<th>{e(n)}</th>" for n in libs) + "</tr>")
    trs = []
    for r in lib["table"]:
        cells = []
        for n in libs:
            c = r["cells"].get(n)
            if c is None:
                cells.append("<td></td>")
            elif c.get("p50_us"):
                lo, hi = c["ci95_us"]
                best = " style='font-weight:600'" if c.get("ratio_to_fastest") == 1.0 else ""
                rci = c.get("ratio_ci95")
                ratio = f"×{c['ratio_to_fastest']:.2f}" + (f" ({rci[0]:.2f}–{rci[1]:.2f})" if rci else "")
                cpu = (f"; CPU {fmt_time_us(c['cpu_p50_us'])} per op ({c['cpu_share']:.0%} of the wall time on a CPU)"
                       if c.get("cpu_p50_us") else "")
                busy = " <span class='warn'>⚠</span>" if c.get("cpu_share", 1.0) < 0.8 else ""
                cells.append(f"<td{best} title='P50 95% CI {e(fmt_time_us(lo))}–{e(fmt_time_us(hi))}{e(cpu)}'>"
                             f"{e(fmt_time_us(c['p50_us']))} <span class='muted'>{e(ratio)}</span>{busy}</td>")
            else:
                cls = "warn" if c["status"] == "unsupported" else "fail"
                cells.append(f"<td class='{cls}' title='{e(c.get('reason', ''))}'>"
                             f"{'n/a' if c['status'] == 'unsupported' else 'failed'}</td>")
        trs.append(f"<tr><td>{r['security_bits']}</td><td class='l'>{e(r['alg'])}</td><td class='l'>{e(r['op'])}</td>"
                   f"<td>{r['size_bytes'] or ''}</td>{''.join(cells)}</tr>")
    return f"<table>{head}{''.join(trs)}</table>"


PLOTS = ((("sign",), "Signing by library and strength", False),
         (("verify",), "Verification by library and strength", False),
         (("derive", "encaps", "decaps"), "Key agreement by library and strength", False),
         (("encrypt", "decrypt"), "AEAD by library", True))


def plots(doc: dict) -> list[Plot]:
    """One grouped-bar plot per operation kind: a bar per library, groups by SP 800-57 strength."""
    lib = doc.get("analysis", {}).get("libraries")
    if not lib:
        return []
    out = []
    for ops, title, bulk in PLOTS:
        groups = _bars(lib["table"], ops, bulk)
        if groups:
            out.append(Plot(slug("libraries", ops[0]), "bars", title, groups,
                            "One bar per library: P50 per operation (log scale), whiskers the bootstrap 95% interval "
                            "of the median; groups are SP 800-57 strength rows.", {"unit": "µs", "log": True}))
    return out


def section(doc: dict) -> str:
    lib = doc.get("analysis", {}).get("libraries")
    if not lib:
        return ""
    parts = ["<h2>Libraries side by side</h2>",
             "<p>Each library ran the same catalogue rows by the same rules (warm-up, batches long enough "
             "for the clock, wall and thread CPU per sample, keys made before timing, hashing inside "
             "signatures unless prehashed). Cells: P50 per operation and × the fastest library (bold), "
             "with the bootstrap 95% interval of that ratio (both libraries' samples resampled); hover "
             "for the P50's own interval, the CPU time per operation, or the reason a library lacks a row. "
             "⚠: the row's thread was on a CPU for less than 80% of its wall time (a busy machine), so its "
             "wall time includes waiting.</p>", _table(lib)]
    versions = {}
    for r in lib["table"]:
        for n, c in r["cells"].items():
            if c.get("library"):
                versions.setdefault(n, c["library"])
    parts.append("<p class='muted'>" + "; ".join(f"{e(n)} = {e(v)}" for n, v in versions.items()) + "</p>")
    parts += [figure(p) for p in plots(doc)]
    if lib.get("answers"):
        trs = "".join(f"<tr><td>{e(a['question'])}</td><td>{e(a['answer'])}</td></tr>" for a in lib["answers"])
        parts.append("<h3>Study S5 across libraries</h3><table class='answers'><tr><th class='l'>question</th>"
                     f"<th class='l'>answer</th></tr>{trs}</table>")
    for name, ans in (lib.get("per_library") or {}).items():
        if name == "openssl" or not ans:
            continue
        trs = "".join(f"<tr><td>{e(a['question'])}</td><td>{e(a['answer'])}</td></tr>" for a in ans)
        parts.append(f"<h3>Study S5 answered for {e(name)}</h3><table class='answers'><tr><th class='l'>question</th>"
                     f"<th class='l'>answer</th></tr>{trs}</table>")
    return "".join(parts)
