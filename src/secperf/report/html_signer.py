"""Signer sections of the HTML report: study S2's table (mode × statistics incl. runs over 1 s),
the distributions per mode, and the secure element's per-PKCS#11-call breakdown."""

from __future__ import annotations


from .plots import Plot
from .svg import figure
from .units import esc as _e, fmt_time_us

MODE_TEXT = {"local_sw": "local_sw (in-process)", "local_sw_cmd": "local_sw (openssl dgst command)",
             "sign_only": "sign_only", "total": "total", "jwt_fresh": "JWT fresh", "jwt_cached": "JWT cached"}


def _network(s: dict) -> str:
    return s["labels"].get("network", "loopback")


def _name(s: dict) -> str:
    lab = s["labels"]
    at = "" if _network(s) == "loopback" else f" @ {_network(s)}"
    return f"{lab['profile']} {lab['key_type']} {MODE_TEXT.get(lab['mode'], lab['mode'])}{at}"


def s2_table(series: list[dict]) -> str:
    networked = any(_network(s) != "loopback" for s in series)  # JWT over emulated links: a network column
    net_th = "<th class='l'>network</th>" if networked else ""
    head = ("<tr><th class='l'>profile</th><th class='l'>key</th><th class='l'>mode</th>" + net_th +
            "<th class='l'>timed section</th>"
            "<th>n</th><th>mean</th><th>sd</th><th>P50</th><th>P90</th><th>P99</th><th>runs &gt; 1 s</th>"
            "<th>token calls / op</th><th>signing P50</th><th>request P50</th></tr>")
    rows = []
    for s in series:
        lab, sm = s["labels"], s["summary"]
        pc = s["derived"].get("per_call")
        net_td = f"<td class='l'>{_e(_network(s))}</td>" if networked else ""
        if not sm:
            reason = s["failures"][-1]["reason"] if s["failures"] else s["status"]
            rows.append(f"<tr><td class='l'>{_e(lab['profile'])}</td><td class='l'>{_e(lab['key_type'])}</td>"
                        f"<td class='l'>{_e(lab['mode'])}</td>{net_td}<td class='l fail' colspan='11'>{_e(reason)}</td></tr>")
            continue
        cells = [sm["n"]] + [fmt_time_us(sm[k]) for k in ("mean_us", "sd_us", "p50_us", "p90_us", "p99_us")]
        cells += [sm.get("over_threshold", 0), f"{pc['token_calls_per_op']:.1f}" if pc else "–",
                  fmt_time_us(s["derived"].get("sign_p50_us")), fmt_time_us(s["derived"].get("request_p50_us"))]
        rows.append(f"<tr><td class='l'>{_e(lab['profile'])}</td><td class='l'>{_e(lab['key_type'])}</td>"
                    f"<td class='l'>{_e(MODE_TEXT.get(lab['mode'], lab['mode']))}</td>{net_td}"
                    f"<td class='l muted'>{_e(lab['what'])}</td>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def per_call_table(series: list[dict]) -> str:
    out = []
    for s in series:
        pc = s["derived"].get("per_call")
        if not pc or not pc["calls"]:
            continue
        rows = "".join(f"<tr><td class='l'>{_e(c['fn'])}</td><td>{c['calls_per_op']:.2f}</td>"
                       f"<td>{_e(fmt_time_us(c['p50_ms'] * 1000))}</td><td>{_e(fmt_time_us(c['delay_p50_ms'] * 1000))}</td></tr>"
                       for c in pc["calls"])
        if pc.get("injected_p50_ms") is not None:  # the whole operation: profile + host
            rows += (f"<tr><td class='l'><b>whole operation</b> (host: {_e(fmt_time_us(pc['host_p50_ms'] * 1000))} "
                     f"P50 beyond the injected delay)</td><td>{pc['token_calls_per_op']:.2f}</td>"
                     f"<td>{_e(fmt_time_us(s['summary'].get('p50_us') if s.get('summary') else None))}</td>"
                     f"<td>{_e(fmt_time_us(pc['injected_p50_ms'] * 1000))}</td></tr>")
        out.append(f"<h3>{_e(_name(s))}: per PKCS#11 call</h3><table><tr><th class='l'>function</th>"
                   f"<th>calls per operation</th><th>time per operation (P50)</th><th>of which injected (P50)</th>"
                   f"</tr>{rows}</table>")
    return "".join(out)


def lifetime_table(series: list[dict], requests_per_hour: float = 3600.0) -> str:
    """Signatures per hour and signing time per hour against token lifetime, for a device making
    one request per second, from each signer's measured fresh-JWT signing time."""
    from ..model.tokens import signatures_per_hour
    # signing does not depend on the network: one row per signer, from its loopback series when there is one
    fresh, seen = [], set()
    for s in sorted(series, key=lambda s: _network(s) != "loopback"):
        key = (s["labels"]["profile"], s["labels"]["key_type"])
        if s["labels"]["mode"] == "jwt_fresh" and s["derived"].get("sign_p50_us") and key not in seen:
            seen.add(key)
            fresh.append(s)
    if not fresh:
        return ""
    lifetimes = (1, 60, 300, 900, 3600, 86400)
    head = "<tr><th class='l'>signer</th>" + "".join(f"<th>lifetime {lt} s</th>" for lt in lifetimes) + "</tr>"
    rows = []
    for s in fresh:
        sign_us = s["derived"]["sign_p50_us"]
        cells = []
        for lt in lifetimes:
            n = signatures_per_hour(lt, requests_per_hour)
            cells.append(f"{n:g} sig/h, {fmt_time_us(n * sign_us)} signing/h")
        rows.append(f"<tr><td class='l'>{_e(s['labels']['profile'])} {_e(s['labels']['key_type'])}</td>"
                    + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return (f"<h3>Token lifetime: signatures and signing time per hour (one request per second)</h3>"
            f"<table>{head}{''.join(rows)}</table>")


def plots(series: list[dict]) -> list[Plot]:
    """The signing-time distribution per profile, key and mode (signer Results; JWT rows have none)."""
    ok = [s for s in series if s["values_us"] and s.get("kind") != "jwt"]
    if not ok:
        return []
    return [Plot("signer-time-per-signature", "box", "Time per signature by mode",
                 [(_name(s), s["values_us"]) for s in ok], "Log scale; dots are signatures.", {"unit": "µs"})]


def section(series: list[dict], title: str = "Signing with a secure element") -> str:
    if not series:
        return ""
    if series[0].get("kind") == "jwt":
        return "".join([f"<h2>{_e(title)}</h2>",
                        "<p>A JWT signed in software or by the token (through the secure-element profile) "
                        "authenticates HTTPS requests to an endpoint that verifies it. <b>Fresh</b>: a new JWT "
                        "per request; <b>cached</b>: one JWT reused within its lifetime, so the secure element "
                        "is not touched per request (token calls / op shows it). Every request opens a new "
                        "TCP connection and TLS 1.3 session, so over an emulated link (network column) it "
                        "costs three round trips: TCP connect, TLS handshake, HTTP request and response.</p>",
                        s2_table(series), lifetime_table(series), per_call_table(series)])
    parts = [f"<h2>{_e(title)}</h2>",
             "<p>Study S2's three modes. <b>local_sw</b>: a software key (in-process, and the "
             "<code>openssl dgst -sha256 -sign</code> command timed whole, process start included). "
             "<b>sign_only</b>: C_SignInit + C_Sign on a kept session and key handle. <b>total</b>: a "
             "session opened, logged in, the key searched and the signature made every time. Token modes "
             "run against SoftHSM2 behind secperf's latency shim with the named profile; the per-call "
             "table comes from the shim's own log.</p>", s2_table(series)]
    parts += [figure(p) for p in plots(series)]
    parts.append(per_call_table(series))
    return "".join(parts)
