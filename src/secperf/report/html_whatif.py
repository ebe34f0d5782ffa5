"""The what-if section of the HTML report: predicted set-up time per scenario and link with its
breakdown, P50/P95 against RTT and loss when a sweep varied them, the tornado of P95, the flights
(where a flight crosses the TCP initial window or the MTU), S1's estimate and the cost table with
every figure's source."""

from __future__ import annotations

from .plots import Plot
from .svg import figure
from .terminal_whatif import END_TITLE, components, end_point
from .views.whatif import predicted_vs_measured, whatif_series
from .units import esc as e, fmt_time_us


def _name(s: dict) -> str:
    return s["id"].split("/", 1)[1].rsplit(" @ ", 1)[0]


def _table(head: list[str], rows: list[list[str]], left: int = 2) -> str:
    h = "".join(f"<th class='l'>{e(c)}</th>" if i < left else f"<th>{e(c)}</th>" for i, c in enumerate(head))
    b = "".join("<tr>" + "".join(f"<td class='l'>{c}</td>" if i < left else f"<td>{c}</td>" for i, c in enumerate(r))
                + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{b}</table>"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:+.1f}%"


def _vs_plot(series: list[dict], key: str, label: str) -> Plot | None:
    groups: dict[str, list] = {}
    for s in series:
        x = s["labels"].get("inputs", {}).get(key)
        if x is None:
            continue
        groups.setdefault(_name(s) + " P50", []).append((x, s["derived"]["usable"]["p50_us"] / 1e3))
        groups.setdefault(_name(s) + " P95", []).append((x, s["derived"]["usable"]["p95_us"] / 1e3))
    lines = [(k, sorted(v)) for k, v in groups.items() if len(v) > 1]
    if not lines:
        return None
    return Plot(f"whatif-against-{key}", "line", f"predicted set-up time against {label}", lines,
                f"P50 and P95 of {series[0]['derived']['usable']['n']} simulated connections per point.",
                {"x_label": label, "y_label": "ms"})


def _components_plot(series: list[dict]) -> Plot:
    comps = components(series[:24])
    bars = [(f"{_name(s)} @ {s['labels']['network']}",
             [(v, s["derived"]["breakdown_mean_us"].get(k, 0.0) / 1e3) for k, v in comps.items()])
            for s in series[:24]]
    return Plot("whatif-components", "stacked", "mean set-up time by component", bars,
                "Means add up to the mean set-up time; the tail (P95, P99) is mostly retransmission waits and "
                "secure-element tails.", {"unit": "ms"})


def plots(doc: dict) -> list[Plot]:
    """The what-if plots in report order (what --figures writes)."""
    series = whatif_series(doc)
    if not series:
        return []
    out = [_components_plot(series)]
    for key, label in (("rtt", "RTT (ms)"), ("loss", "loss (%)"), ("delay", "one-way delay (ms)")):
        p = _vs_plot(series, key, label)
        if p:
            out.append(p)
    return out


def section(doc: dict) -> str:
    series = whatif_series(doc)
    if not series:
        return ""
    a = doc.get("analysis", {}).get("whatif", {})
    out = [f"<h2>What-if: predicted connection set-up {e(END_TITLE[end_point(series)])}</h2>",
           "<p>Predictions, not measurements: flight models (messages, bytes, work per side) over the network "
           "model of each link, with costs from the cost table below, simulated by Monte Carlo (docs: "
           "explanation, &ldquo;The what-if model&rdquo;). The clock starts at the client's first packet and stops at "
           f"{e(series[0]['derived'].get('end_point_description') or 'the first application response')}.</p>"]
    rows = []
    comps = components(series)
    for s in series:
        d = s["derived"]
        u = d["usable"]
        rows.append([e(_name(s)), e(s["labels"]["network"]), str(d["round_trips"]),
                     *(fmt_time_us(u[k]) for k in ("p50_us", "p90_us", "p95_us", "p99_us")),
                     *(fmt_time_us(d["breakdown_mean_us"].get(k, 0.0)) for k in comps),
                     f"{d['bytes_up_mean']:.0f} / {d['bytes_down_mean']:.0f}",
                     ("IW " if d["crosses"]["initial_window"] else "") + ("MTU" if d["crosses"]["mtu"] else ""),
                     f"{d['failed_share'] * 100:.2g}%"])
    out.append(_table(["scenario", "network", "round trips", "P50", "P90", "P95", "P99",
                       *(f"{v} (mean)" for v in comps.values()), "bytes up / down", "crosses",
                       "gave up"], rows))
    sec = [s for s in series if s["derived"].get("security_cost")]
    if sec:
        def adds(x, fmt):
            if not x:
                return "–"
            share = "" if x["share"] is None else f" ({x['share'] * 100:.0f}&nbsp;%)"
            return f"{fmt(x['adds'])} of {fmt(x['secured'])}{share}"
        mj = lambda v: f"{v:.1f} mJ"  # noqa: E731
        byt = lambda v: f"{v:,.0f} B"  # noqa: E731
        notes = (a.get("security_cost") or {}).get("without_security") or {}
        out.append("<h3>What security costs</h3><p>Each row against the same exchange without security: "
                   + "; ".join(f"<b>{e(p)}</b>: {e(w)}" for p, w in notes.items())
                   + ". Time is the difference of the two rows' P50s (same seed), bytes and radio-on time of their "
                     "means, energy of one isolated connection (radio promotion and tail included) where the link "
                     "has a radio energy profile. Secure-element rows also show what the key source adds over a "
                     "software key.</p>" + _table(
                         ["scenario", "network", "no security P50", "security adds (P50)", "bytes added",
                          "radio on added (mean)", "energy added / connection", "key vs software (P50)"],
                         [[e(_name(s)), e(s["labels"]["network"]),
                           fmt_time_us(s["derived"]["security_cost"]["time_p50_us"]["without"]),
                           adds(s["derived"]["security_cost"]["time_p50_us"], fmt_time_us),
                           adds(s["derived"]["security_cost"]["bytes"], byt),
                           adds(s["derived"]["security_cost"]["radio_on_us"], fmt_time_us),
                           adds(s["derived"]["security_cost"].get("energy_mj"), mj),
                           adds((s["derived"]["security_cost"].get("key_vs_software") or {}).get("time_p50_us"),
                                fmt_time_us) if s["derived"]["security_cost"].get("key_vs_software")
                           else "(software key)"] for s in sec]))
    pvm = [r for r in predicted_vs_measured(doc) if r["measured_p50_us"] is not None]
    if pvm:
        out.append("<h3>Predicted next to measured (this run)</h3><p>Each prediction is calibrated on this run's "
                   "loopback rows and set beside the connection series measured for the same protocol, key, "
                   "handshake and network. Over emulated links the difference is the model's error.</p>" + _table(
                       ["protocol", "key", "handshake", "network", "measured P50", "predicted P50", "error",
                        "measured P95", "predicted P95", "error"],
                       [[e(r["protocol"]), e(r["key"]), e(r["handshake"]), e(r["network"]),
                         fmt_time_us(r["measured_p50_us"]), fmt_time_us(r["predicted_p50_us"]), _pct(r["p50_error"]),
                         fmt_time_us(r["measured_p95_us"]), fmt_time_us(r["predicted_p95_us"]), _pct(r["p95_error"])]
                        for r in pvm], left=4))
    out += [figure(p) for p in plots(doc)]
    if a.get("tornado"):
        out.append("<h3>Which input moves P95 most</h3>" + _table(
            ["input", "low", "P95 low", "high", "P95 high", "swing"],
            [[e(r["input"]), e(r["low_value"]), fmt_time_us(r["low_us"]), e(r["high_value"]),
              fmt_time_us(r["high_us"]), fmt_time_us(r["swing_us"])] for r in a["tornado"]], left=1))
    if a.get("s1"):
        s1 = a["s1"]
        out.append(f"<h3>Study S1's acceleration estimate</h3><p>{e(s1['method'])}.</p>" + _table(
            ["message", "full", "accelerated"],
            [[e(r["message"]), fmt_time_us(r["full_us"]), fmt_time_us(r["accelerated_us"])] for r in s1["rows"]]
            + [["total", fmt_time_us(s1["full_us"]), fmt_time_us(s1["accelerated_us"])]], left=1))
    first = series[0]
    out.append(f"<h3>Flights of {e(_name(first))}</h3>" + _table(
        ["exchange", "sender", "messages", "bytes", "packets", "extra RTT (initial window)", "work before sending"],
        [[str(f["exchange"]), e(f["sender"]), e(f["messages"]), str(f["bytes"]), str(f["packets"]),
          str(f["extra_window_rounds"]), e(", ".join(f["ops"]))] for f in first["derived"]["flights"]], left=3))
    ct = a.get("cost_table") or {}
    if ct:
        out.append(f"<h3>Cost table {e(ct.get('name'))}</h3><p class='muted'>{e(ct.get('description'))}</p>" + _table(
            ["party", "operation", "µs", "source"],
            [[e(r["party"]), e(r["op"]), f"{r['us']:.1f}", e(r["source"])] for r in ct.get("rows", [])], left=2))
    return "".join(out)
