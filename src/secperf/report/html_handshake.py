"""Handshake sections of the HTML report: wall and CPU distributions per configuration (box plots
like study S1's figures), the per-message client CPU as stacked bars and as a table, and a summary
table with resumption / early-data verification and the server's CPU."""

from __future__ import annotations

from .plots import Plot
from .svg import figure as _figure
from .views.handshake import message_matrix, verifications
from .units import esc as _e, fmt_time_us


def _name(s: dict) -> str:
    lab = s["labels"]
    net = lab.get("network", "loopback")
    return f"{lab['label']} @ {lab['server']}" + ("" if net == "loopback" else f" / {net}")


def summary_table(series: list[dict]) -> str:
    head = ("<tr><th class='l'>configuration</th><th class='l'>server</th><th>n ok</th><th>failed</th>"
            "<th>handshake P50</th><th>P90</th><th>P99</th><th>client CPU P50</th><th>waiting P50</th>"
            "<th>TCP connect P50</th><th>server CPU P50</th><th>app write P50</th><th>app read P50</th>"
            "<th class='l'>negotiated</th>"
            "<th class='l'>verified</th></tr>")
    trs = []
    for s in series:
        lab, sm, d = s["labels"], s["summary"], s["derived"]
        nfail = len([f for f in s["failures"]])
        neg = d.get("negotiated") or {}
        checks = verifications(s)
        if not sm:
            reason = s["failures"][-1]["reason"] if s["failures"] else s["status"]
            trs.append(f"<tr><td class='l'>{_e(lab['label'])}</td><td class='l'>{_e(_name(s).split(' @ ', 1)[1])}</td>"
                       f"<td>0</td><td>{nfail}</td><td class='l fail' colspan='11'>{_e(reason)}</td></tr>")
            continue
        cpu = (s.get("cpu_summary") or {}).get("p50_us")
        cells = [sm["n"], nfail, fmt_time_us(sm["p50_us"]), fmt_time_us(sm["p90_us"]), fmt_time_us(sm["p99_us"]),
                 fmt_time_us(cpu), fmt_time_us(d.get("wait_p50_us")), fmt_time_us(d.get("tcp_connect_p50_us")),
                 fmt_time_us(d.get("server_cpu_p50_us")), fmt_time_us(d.get("app_write_p50_us")),
                 fmt_time_us(d.get("app_read_p50_us"))]
        trs.append(f"<tr><td class='l'>{_e(lab['label'])}</td><td class='l'>{_e(_name(s).split(' @ ', 1)[1])}</td>"
                   + "".join(f"<td>{_e(c)}</td>" for c in cells)
                   + f"<td class='l muted'>{_e(' '.join(str(v) for v in neg.values() if v))}</td>"
                   + f"<td class='l'>{_e('; '.join(checks))}</td></tr>")
    return f"<table>{head}{''.join(trs)}</table>"


def message_table(series: list[dict]) -> str:
    cols, order, matrix = message_matrix(series)
    if not cols:
        return ""
    head = "<tr><th class='l'>message</th>" + "".join(f"<th>{_e(_name(s))}</th>" for s in cols) + "</tr>"
    rows = [f"<tr><td class='l'>{_e(msg)}</td>"
            + "".join(f"<td>{_e(fmt_time_us(v) if v is not None else '–')}</td>" for v in vals) + "</tr>"
            for msg, vals in zip(order, matrix)]
    total = "".join(f"<td><b>{_e(fmt_time_us((s.get('cpu_summary') or {}).get('p50_us')))}</b></td>" for s in cols)
    rows.append(f"<tr><td class='l'><b>client CPU in the library (P50)</b></td>{total}</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def plots(series: list[dict]) -> list[Plot]:
    """Wall and client-CPU distributions per configuration and the per-message CPU as stacked bars."""
    out = []
    ok = [s for s in series if s["values_us"]]
    if ok:
        out.append(Plot("handshake-wall-time", "box", "Handshake wall time per connection",
                        [(_name(s), s["values_us"]) for s in ok],
                        "Box: P25–P75, line: median, dots: connections.", {"unit": "µs", "log": False}))
        out.append(Plot("handshake-client-cpu", "box", "Client CPU per handshake (inside the TLS library)",
                        [(_name(s), s["cpu_values_us"]) for s in ok], "", {"unit": "µs", "log": False}))
    stacked = [(_name(s), [(m["message"], m["p50_cpu_us"]) for m in s["derived"]["breakdown"]["messages"]])
               for s in series if s["derived"].get("breakdown")]
    if stacked:
        out.append(Plot("handshake-cpu-per-message", "stacked", "Client CPU per message (P50 per message)", stacked,
                        "Medians per message, so a bar's length can differ slightly from the median total.",
                        {"unit": "µs"}))
    return out


def _by_name(plots: list[Plot]) -> dict[str, Plot]:
    return {p.name: p for p in plots}


def section(series: list[dict]) -> str:
    if not series:
        return ""
    parts = ["<h2>TLS/DTLS handshakes</h2>",
             "<p>Each connection is timed by <code>secperf-probe client</code> inside one process after "
             "warm-up connections. <b>Handshake</b>: wall time from the established TCP connection to "
             "handshake completion. <b>Client CPU</b>: the client thread's CPU time inside OpenSSL (rows marked (wolfssl) or "
             "(mbedtls): the same client, native/device, built for this host against that library) during "
             "the handshake; <b>waiting</b> is the rest (network and server). <b>App write/read</b>: wall time "
             "of the library's write call for the request and of the read calls until the whole response is in. The per-message split "
             "attributes that CPU to the message being built (sent) or processed (received); the parts "
             "add up to the total on every connection.</p>",
             summary_table(series)]
    wall, cpu, stacked = (_by_name(plots(series)).get(k) for k in
                          ("handshake-wall-time", "handshake-client-cpu", "handshake-cpu-per-message"))
    for p in (wall, cpu):
        if p:
            parts.append(_figure(p))
    if stacked:
        parts.append("<h3>Client CPU per handshake message</h3>")
        parts.append(_figure(stacked))
        parts.append(message_table(series))
    return "".join(parts)
