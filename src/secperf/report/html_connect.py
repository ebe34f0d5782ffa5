"""The connection-establishment section of the HTML report (`secperf connect`): study S2's
summary (software vs secure element per protocol, resumed and JWT rows), where the time went per
configuration (stacked phases), the distributions, and the secure element's calls per connection."""

from __future__ import annotations

from .views.connect import series_label, series_rows, summary
from . import html_netem
from .plots import Plot
from .svg import figure
from .units import esc as _e, fmt_time_us


def _t(v) -> str:
    return _e(fmt_time_us(v)) if v is not None else "–"


def _calls(v) -> str:
    return f"{v:.1f}" if v is not None else "–"


def _resumed(r: dict) -> str:
    return f"{r['resumed']}/{r['n']}" if r.get("resumed") is not None and r.get("n") else "–"


def summary_table(doc: dict) -> str:
    sm = summary(doc)
    if not sm["rows"]:
        return ""
    by_net = len(sm["networks"]) > 1
    head = ("<tr>" + ("<th class='l'>network</th>" if by_net else "")
            + "<th class='l'>protocol</th><th class='l'>handshake / auth</th><th>software</th><th>token</th>"
            f"<th>secure element ({_e(sm['se_source'] or '–')})</th><th>difference</th><th>SE signing</th>"
            "<th>SE session, login, key search</th><th>token calls / connection</th><th>resumed</th></tr>")
    rows = []
    for r in sm["rows"]:
        parts = r["se_parts_us"]
        rest = parts["session set-up"] + parts["login"] + parts["key search"] if parts else None
        rows.append("<tr>" + (f"<td class='l'>{_e(r['network'])}</td>" if by_net else "")
                    + f"<td class='l'>{_e(r['protocol'])}</td>"
                    f"<td class='l'>{_e(r['handshake'] if r['auth'] == 'mtls' else r['auth'])}"
                    f"{', cold key session' if r.get('key_session') == 'cold' else ''}</td>"
                    + "".join(f"<td>{_t(r[k])}</td>" for k in ("software_p50_us", "token_p50_us", "se_p50_us",
                                                                "difference_us"))
                    + f"<td>{_t(parts['signing'] if parts else None)}</td><td>{_t(rest)}</td>"
                    + f"<td>{_e(_calls(r['se_calls_per_conn']))}</td><td>{_e(_resumed(r))}</td></tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def series_table(rows: list[dict]) -> str:
    head = ("<tr><th class='l'>configuration</th><th class='l'>timed from → to</th><th>n</th><th>P50</th><th>P90</th>"
            "<th>P99</th><th>runs &gt; 1 s</th><th>resumed</th><th>token calls</th><th>process start-up</th></tr>")
    out = []
    for r in rows:
        timer = f"{r['timer'].get('start', '')} → {r['timer'].get('end', '')}"
        if not r["n"]:
            out.append(f"<tr><td class='l'>{_e(r['label'])}</td><td class='l muted'>{_e(timer)}</td>"
                       f"<td class='l fail' colspan='8'>{_e(r['failure'] or r['status'])}</td></tr>")
            continue
        note = "" if r["status"] == "ok" else f" <span class='fail'>({_e(r['status'])}: {_e(r['failure'])})</span>"
        if r.get("note"):
            note += f"<br><span class='muted'>{_e(r['note'])}</span>"
        calls = _calls(r["token_calls"])
        out.append(f"<tr><td class='l'>{_e(r['label'])}{note}</td><td class='l muted'>{_e(timer)}</td>"
                   f"<td>{r['n']}</td><td>{_t(r['p50_us'])}</td><td>{_t(r['p90_us'])}</td><td>{_t(r['p99_us'])}</td>"
                   f"<td>{_e(r['over_1s'] or 0)}</td><td>{_e(r['resumed'] if r['resumed'] is not None else '–')}</td>"
                   f"<td>{_e(calls)}</td><td>{_t(r['startup_p50_us'])}</td></tr>")
    return f"<table>{head}{''.join(out)}</table>"


def se_call_table(doc: dict) -> str:
    rows = []
    for s in doc["series"]:
        per = (s.get("derived") or {}).get("se_calls")
        if s.get("kind") != "connect" or not per or not per.get("calls"):
            continue
        for c in per["calls"]:
            rows.append(f"<tr><td class='l'>{_e(series_label(s))}</td><td class='l'>{_e(c['fn'])}</td>"
                        f"<td>{c['calls_per_op']:.2f}</td><td>{_t(c['p50_ms'] * 1000 if c['p50_ms'] is not None else None)}</td>"
                        f"<td>{_t(c['delay_p50_ms'] * 1000 if c['delay_p50_ms'] is not None else None)}</td></tr>")
    if not rows:
        return ""
    return ("<h3>The secure element's calls per connection (from the shim's log)</h3><table><tr>"
            "<th class='l'>configuration</th><th class='l'>PKCS#11 function</th><th>calls / connection</th>"
            "<th>time / connection P50</th><th>injected delay P50</th></tr>" + "".join(rows) + "</table>")


def _own_plots(doc: dict, rows: list[dict]) -> list[Plot]:
    out = []
    stacked = [(r["label"], [(p["phase"], p["p50_us"]) for p in r["phases"]]) for r in rows if r["phases"]]
    if stacked:
        out.append(Plot("connect-phases", "stacked", "Where the establishment time went (phase medians)", stacked,
                        "Medians per phase; they need not add up to the median total.", {"unit": "µs"}))
    dist = [(r["label"], s["values_us"]) for r, s in zip(rows, [x for x in doc["series"] if x.get("kind") == "connect"])
            if s["values_us"]]
    if dist:
        out.append(Plot("connect-time-per-connection", "box", "Establishment time per connection", dist,
                        "Log scale; dots are connections.", {"unit": "µs"}))
    return out


def plots(doc: dict) -> list[Plot]:
    """Phases as stacked bars, the distribution per configuration, the time against the link."""
    rows = series_rows(doc)
    if not rows:
        return []
    return _own_plots(doc, rows) + html_netem.sweep_plots(doc["series"], kind="connect")


def section(doc: dict) -> str:
    rows = series_rows(doc)
    if not rows:
        return ""
    parts = ["<h2>Connection establishment on real servers</h2>",
             "<p>Each configuration connects to a real server started by secperf (nginx with client-certificate "
             "verification, mosquitto with <code>require_certificate</code>, libcoap's coap-server over DTLS, "
             "OpenVPN in server mode inside network namespaces) and is timed from the socket connect to the point "
             "the protocol is usable. The client key is a software file, the SoftHSM2 token (<b>token</b>), or the "
             "token behind a secure-element latency profile (<b>se:PROFILE</b>). The secure element's phase is "
             "the sum of the shim's logged calls inside each connection; resumed handshakes and cached JWTs show "
             "whether the token was touched at all (token calls).</p>", summary_table(doc)]
    parts += [figure(p) for p in _own_plots(doc, rows)]
    parts += [html_netem.sweep_plot(doc["series"], kind="connect"), series_table(rows), se_call_table(doc)]
    return "".join(parts)
