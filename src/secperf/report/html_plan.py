"""The plan section of the HTML report: the suitability matrix (study S2's Table 7, computed), per
pattern the deciding numbers before / after each measure / after the best combination, energy per
day split radio / CPU / secure element as stacked bars, the measures ranked by gain, the alert
thresholds, `--verify`'s predicted vs measured rows, and the verdict rule."""

from __future__ import annotations

from .plots import Plot, slug
from .svg import figure
from .terminal_plan import MARK, SHORT, fmt_bytes, fmt_j, fmt_ms, plans
from .units import esc as e
from ..inputs.patterns import MEASURES


def _table(head: list[str], rows: list[list[str]], left: int = 1) -> str:
    h = "".join(f"<th class='l'>{e(c)}</th>" if i < left else f"<th>{e(c)}</th>" for i, c in enumerate(head))
    b = "".join("<tr>" + "".join(f"<td class='l'>{c}</td>" if i < left else f"<td>{c}</td>" for i, c in enumerate(r))
                + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{b}</table>"


def _cell(o: dict) -> str:
    x = o["numbers"]
    s = f"P{x['latency_percentile']:g} {fmt_ms(x['latency_pq_ms'])}"
    if any(c["check"] == "determinism" for c in o["checks"]):
        s += f"<br>spread {fmt_ms(x['spread_ms'])}"
    s += f"<br>{fmt_j(x['energy_per_day_j'])}/day"
    cls = "ok" if o["passes"] else "fail"
    return f"<span class='{cls}'>{e(s).replace('&lt;br&gt;', '<br>')} {MARK[o['passes']]}</span>"


def plots(doc: dict) -> list[Plot]:
    out = []
    for p in plans(doc):
        rows = [("as written", p["before"])] + [(x["measure"], x) for x in p["measures"]]
        if p.get("best"):
            rows.append(("best: " + "+".join(p["best"]["measures"]), p["best"]))
        bars = [(name, [("radio", o["numbers"]["energy_radio_j"]), ("CPU", o["numbers"]["energy_cpu_j"]),
                        ("secure element", o["numbers"]["energy_se_j"])]) for name, o in rows]
        out.append(Plot(slug("plan-energy", p["pattern"]), "stacked", f"{p['pattern']}: energy per day by part",
                        bars, "Radio (including its floor between activities), device CPU and secure element; "
                        "joules per day.", {"unit": "J"}))
    return out


def section(doc: dict) -> str:
    ps = plans(doc)
    if not ps:
        return ""
    a = doc["analysis"]["plan"]
    used = [m for m in MEASURES if any(any(x["measure"] == m for x in p["measures"]) for p in ps)]
    out = ["<h2>Communication patterns: verdicts before and after design measures</h2>",
           "<p>Computed from the what-if model (docs: explanation, &ldquo;The planner and the energy model&rdquo;): each measure is a "
           "transformation of the what-if inputs; ✓ means every stated requirement holds.</p>",
           f"<p class='muted'>{e(a.get('rule', ''))}</p>"]
    rows = []
    for p in ps:
        by = {x["measure"]: x for x in p["measures"]}
        r = p["requirements"]
        req = f"P{r['latency_percentile']:g} ≤ {fmt_ms(r['latency_ms'])}"
        if r.get("determinism_ms") is not None:
            req += f"<br>spread ≤ {e(fmt_ms(r['determinism_ms']))}"
        if r.get("energy_per_day_j") is not None:
            req += f"<br>≤ {e(fmt_j(r['energy_per_day_j']))}/day"
        best = p.get("best")
        rows.append([f"<b>{e(p['pattern'])}</b><br>{e(p['inputs']['protocol'])} {e(p['inputs']['auth'])} "
                     f"{e(p['inputs']['key'])} @ {e(p['inputs']['network'])}", req, _cell(p["before"]),
                     *(_cell(by[m]) if m in by else "<span class='muted'>n/a</span>" for m in used),
                     (e("+".join(SHORT[m] for m in best["measures"])) + "<br>" + _cell(best)) if best else "–",
                     f"<b>{e(p['verdict'])}</b>" + "".join(f"<br>⚠ without security: {e(b['check'])}"
                                                          for b in p.get("pattern_breaks") or [])])
    out.append("<div class='plan-matrix'>" + _table(["pattern", "requires", "before", *(SHORT[m] for m in used),
                                                     "best combination", "verdict"], rows, left=2) + "</div>")
    figs = {pl.name: pl for pl in plots(doc)}
    for p in ps:
        out.append(f"<h3>{e(p['pattern'])}: {e(p['verdict'])}</h3><p>{e(p['description'])}. "
                   f"<span class='muted'>Source: {e(p['source'])}. Requirements: {e(p['requirements']['source'])}"
                   f"</span></p>")
        if p.get("verdict_reason"):
            out.append(f"<p><b>Why:</b> {e(p['verdict_reason'])}</p>")
        if p.get("security_adds"):
            unit = lambda v, u: fmt_ms(v) if u == "ms" else fmt_j(v) + "/day"  # noqa: E731
            srcs = p["requirements"].get("sources") or {}
            out.append("<p>What security does to each requirement (the pattern as written against the same traffic "
                       "with no security at all; a requirement broken without security is not judged):</p>" + _table(
                           ["requirement", "limit", "without security", "with security", "security adds", "judged",
                            "source"],
                           [[e(r["what"]), unit(r["limit"], r["unit"]), unit(r["without_security"], r["unit"]),
                             unit(r["with_security"], r["unit"]), unit(r["adds"], r["unit"]),
                             "⚠ no: broken without security" if r["breaks_without_security"] else "yes",
                             e(srcs.get(r["check"], ""))] for r in p["security_adds"]]))
        rows = []
        states = [("as written", p["before"])] + [(x["measure"], x) for x in p["measures"]]
        states += [(name, o) for name, o in (p.get("shown_combinations") or {}).items()]
        if p.get("best"):
            states.append(("best: " + "+".join(p["best"]["measures"]), p["best"]))
        for name, o in states:
            x = o["numbers"]
            bat = x.get("battery_days")
            rows.append([e(name), fmt_ms(x["latency_p50_ms"]), fmt_ms(x["latency_pq_ms"]), fmt_ms(x["spread_ms"]),
                         f"{x['setups_per_day']:.3g}", f"{x['signatures_per_day']:.3g}", f"{x['keepalives_per_day']:.3g}",
                         fmt_j(x["energy_per_day_j"]), fmt_j(x["energy_radio_j"]), fmt_j(x["energy_cpu_j"]),
                         fmt_j(x["energy_se_j"]), "–" if bat is None else f"{bat / 365:.1f} y",
                         fmt_bytes(x["bytes_per_day"]),
                         MARK[o["passes"]] + " " + e(", ".join(c["check"] for c in o["checks"] if not c["ok"]))])
        out.append(_table(["design", "P50", f"P{p['requirements']['latency_percentile']:g}", "worst − P50",
                           "set-ups/day", "signatures/day", "pings/day", "energy/day", "radio", "CPU", "SE",
                           "battery", "bytes/day", "meets"], rows))
        fig = figs.get(slug("plan-energy", p["pattern"]))
        if fig:
            out.append(figure(fig, data_plot="plan-energy"))
        out.append("<p>Measures ranked by gain:</p>" + _table(
            ["measure", "score", "Δ latency", "Δ energy/day", "Δ bytes/day", "Δ signatures/day", "meets"],
            [[e(r["measure"]), f"{r['score']:+.2f}", fmt_ms(r["latency_pq_ms"]), fmt_j(r["energy_per_day_j"]),
              f"{r['bytes_per_day']:.0f} B", f"{r['signatures_per_day']:.3g}", MARK[r["meets"]]] for r in p["ranking"]]))
        if p.get("not_applicable"):
            out.append("<p class='muted'>Not applicable: " + "; ".join(f"{e(k)}: {e(v)}" for k, v in
                                                                        p["not_applicable"].items()) + "</p>")
    out.append("<h3>Alert thresholds the verdicts assume</h3>" + _table(
        ["pattern", "metric", "assumed", "alert", "why"],
        [[e(p["pattern"]), e(a["metric"]), f"{a['assumed']:.4g}",
          (f"&gt; {a['alert_above']:.4g}" if "alert_above" in a else f"&lt; {a['alert_below']:.4g}"), e(a["why"])]
         for p in ps for a in p["alerts"]], left=2))
    if a.get("verify"):
        out.append("<h3>Measured cross-check (--verify)</h3>" + _table(
            ["pattern", "measure", "row", "network", "predicted P50", "measured P50", "error", "n", "note"],
            [[e(r["pattern"]), e(r["measure"]), e(r["row"]), e(r["network"]), fmt_ms(r.get("predicted_p50_ms")),
              fmt_ms(r.get("measured_p50_ms")), "–" if r.get("error_share") is None else f"{r['error_share'] * 100:+.1f}%",
              str(r.get("n", "")), e(r.get("note", ""))] for r in a["verify"]], left=4))
    return "".join(out)
