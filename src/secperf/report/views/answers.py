"""The run's answer first: a few sentences that answer "what does security cost this connection,
and what makes it faster?" from whatever the Result holds, each naming the section it comes from.

Findings, in order: connection set-up per protocol with the software key against the secure
element, per network (S2's question); what resumption saves with the secure element; what a cached
JWT saves; TLS 1.3 against TLS 1.2; what an emulated link adds; the costliest handshake message; signing on the secure element
(kept session vs a device waking cold); the cheapest signature at 128-bit strength; the cheapest MAC
and what it does to a CAN bus; an emulated core's handshake; predictions (what-if) with their range
and what security adds; each pattern's verdict (plan); server capacity; how long a reconnect storm
takes (fleet). A finding whose rows are missing is left out, never guessed.

key_findings(doc) is the one entry point (the terminal's "At a glance" and the HTML report's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from ...core.errors import ResultError
from ...core.result_schema import CryptoDerived, DeviceDerived, HandshakeDerived, Result, Series, WhatifDerived
from ..units import axis_label, fmt_time_us
from .connect import summary as connect_summary
from .server import capacity_row, configs
from .whatif import predicted_vs_measured, whatif_series

PROTO_NAMES = {"https": "HTTPS", "mqtt": "MQTT/TLS", "coap": "CoAP/DTLS", "vpn": "TLS VPN"}


class Finding(TypedDict):
    section: str  # the report section's anchor id
    text: str  # one sentence


def _p50(s: Series) -> float:
    """A series' median; the finders keep series with a summary, so one is always there."""
    p50 = s.p50_us
    if p50 is None:
        raise ResultError(f"series {s.id!r} has no summary")  # a finder meeting it is left out (key_findings)
    return p50


def _finding(section: str, text: str) -> Finding:
    return {"section": section, "text": text}


def _add(out: list[Finding], section: str, text: str) -> None:
    """One more finding of a report section."""
    out.append(_finding(section, text))


def _summarised(doc: Result, kind: str) -> list[Series]:
    """The series of a kind that hold a summary (a failed series has none)."""
    return [s for s in doc.series if s.kind == kind and s.summary is not None]


def connect_findings(doc: Result) -> list[Finding]:
    sm = connect_summary(doc)
    out: list[Finding] = []
    se = (sm.get("se_source") or "").removeprefix("se:")
    full = [r for r in sm["rows"] if r["auth"] == "mtls" and r["handshake"] == "full"]
    for net in sm["networks"]:
        parts: list[str] = []
        for r in (r for r in full if r["network"] == net):
            name = PROTO_NAMES.get(r["protocol"], r["protocol"])
            if r.get("key_session", "warm") == "cold":  # the cold row adds to its protocol's warm one
                if r["se_p50_us"] is not None and parts:
                    said = any("wakes cold" in x for x in parts)  # the why once per sentence
                    parts[-1] += f", {fmt_time_us(r['se_p50_us'])} when the device wakes cold" + (
                        "" if said else " (new session, login, key search)"
                    )
                continue
            if r["software_p50_us"] is not None and r["se_p50_us"] is not None:
                parts.append(
                    f"{name} {fmt_time_us(r['software_p50_us'])} with a software key, "
                    f"{fmt_time_us(r['se_p50_us'])} with the key in {se} "
                    f"(+{fmt_time_us(r['difference_us'])})"
                )
            elif r["software_p50_us"] is not None:
                parts.append(f"{name} {fmt_time_us(r['software_p50_us'])} with a software key")
        if parts:
            _add(out, "connect", f"Connection set-up (P50, connect → usable) over {net}: " + "; ".join(parts) + ".")
    for net in sm["networks"]:
        saves = []
        for proto in PROTO_NAMES:
            f = next(
                (
                    r
                    for r in full
                    if r["network"] == net and r["protocol"] == proto and r.get("key_session", "warm") == "warm"
                ),
                None,
            )
            rs = next(
                (
                    r
                    for r in sm["rows"]
                    if r["network"] == net
                    and r["protocol"] == proto
                    and r["handshake"] == "resumed"
                    and r["auth"] == "mtls"
                    and r.get("key_session", "warm") == "warm"
                ),
                None,
            )
            # a "resumed" row whose server resumed nothing (libcoap with a client certificate) saves nothing
            if f and rs and f["se_p50_us"] is not None and rs["se_p50_us"] is not None and rs.get("resumed"):
                saves.append(f"{PROTO_NAMES[proto]} {fmt_time_us(f['se_p50_us'] - rs['se_p50_us'])}")
        if saves:
            _add(
                out,
                "connect",
                f"Session resumption with the secure-element key saves, over {net}: "
                + ", ".join(saves)
                + " per connection (the token is not touched).",
            )
        fresh = next((r for r in sm["rows"] if r["network"] == net and r["auth"] == "jwt_fresh"), None)
        cached = next((r for r in sm["rows"] if r["network"] == net and r["auth"] == "jwt_cached"), None)
        if fresh and cached and fresh["se_p50_us"] is not None and cached["se_p50_us"] is not None:
            _add(
                out,
                "connect",
                f"A cached JWT saves {fmt_time_us(fresh['se_p50_us'] - cached['se_p50_us'])} "
                f"per request over {net} against signing a fresh one in {se}.",
            )
    return out


def handshake_findings(doc: Result) -> list[Finding]:
    """Full TLS 1.3 against 1.2 per network (P50), and the costliest step of the client's handshake."""
    hs = _summarised(doc, "handshake")
    out: list[Finding] = []
    nets = list(dict.fromkeys((s.labels.get("network") or "loopback") for s in hs))

    def pick(net: str, version: str) -> Series | None:
        return next(
            (
                s
                for s in hs
                if (s.labels.get("network") or "loopback") == net
                and s.labels.get("proto", "tls") == "tls"
                and str(s.labels.get("tls")) == version
                and s.labels.get("mode", "full") == "full"
            ),
            None,
        )

    for net in nets:
        t13, t12 = pick(net, "1.3"), pick(net, "1.2")
        if t13 is not None and t12 is not None:
            _add(
                out,
                "handshake",
                f"Full handshake over {net}: TLS 1.3 {fmt_time_us(_p50(t13))}, TLS 1.2 {fmt_time_us(_p50(t12))} (P50).",
            )
    worst: tuple[Series, dict[str, Any]] | None = None
    for s in hs:
        for m in (s.derived_as(HandshakeDerived).breakdown or {}).get("messages", []):
            if worst is None or m["p50_cpu_us"] > worst[1]["p50_cpu_us"]:
                worst = (s, m)
    if worst:
        s, m = worst
        step = f"{m['message']}: {fmt_time_us(m['p50_cpu_us'])} of CPU (P50) in {s.labels.get('label', s.id)}"
        _add(out, "handshake", f"The costliest step of the client's handshake is {step}.")
    return out


def netem_findings(doc: Result) -> list[Finding]:
    """What each emulated link adds to a handshake: the same configuration over the link against
    loopback (P50), the first configuration measured both ways."""
    hs = _summarised(doc, "handshake")

    def key(s: Series) -> tuple[Any, Any]:
        return s.labels.get("label"), s.labels.get("server")

    base = {key(s): s for s in hs if (s.labels.get("network") or "loopback") == "loopback"}
    out: list[Finding] = []
    for net in dict.fromkeys(
        s.labels.get("network") for s in hs if (s.labels.get("network") or "loopback") != "loopback"
    ):
        pair = next(((s, base[key(s)]) for s in hs if s.labels.get("network") == net and key(s) in base), None)
        if pair:
            s, b = pair
            both = (
                f"{s.labels.get('label')}: {fmt_time_us(_p50(b))} on loopback, {fmt_time_us(_p50(s))} over {net}, P50"
            )
            _add(out, "netem", f"The {net} link adds {fmt_time_us(_p50(s) - _p50(b))} to a handshake ({both}).")
    return out


def signer_findings(doc: Result) -> list[Finding]:
    sg = _summarised(doc, "signer")
    by = {(s.labels.get("profile"), s.labels.get("mode")): s for s in sg}
    out: list[Finding] = []
    for (profile, mode), s in by.items():
        if mode != "sign_only":
            continue
        total, local = by.get((profile, "total")), by.get((profile, "local_sw"))
        text = f"Signing in {profile}: {fmt_time_us(_p50(s))} with a kept session"
        if total is not None:
            text += f", {fmt_time_us(_p50(total))} when the device opens a session, logs in and finds the key first"
        if local:
            text += f"; in software {fmt_time_us(_p50(local))}"
        _add(out, "signer", text + " (P50).")
    soft = {m: by.get(("software", m)) for m in ("local_sw", "local_sw_cmd")}
    local_sw, local_cmd = soft["local_sw"], soft["local_sw_cmd"]
    if not out and local_sw:  # no secure-element row measured: software signing alone
        text = f"Signing in software: {fmt_time_us(_p50(local_sw))} in the process"
        if local_cmd:
            text += f", {fmt_time_us(_p50(local_cmd))} as an openssl command per signature (process start included)"
        _add(out, "signer", text + " (P50).")
    return out


def crypto_findings(doc: Result) -> list[Finding]:
    rows = [
        s for s in _summarised(doc, "crypto") if s.labels.get("op") == "sign" and s.labels.get("security_bits") == 128
    ]
    if not rows:
        return []
    best = min(rows, key=_p50)
    worst = max(rows, key=_p50)
    text = f"At 128-bit strength the cheapest signature here is {best.labels.get('alg')} ({fmt_time_us(_p50(best))})"
    if worst is not best:
        text += f", the dearest {worst.labels.get('alg')} ({fmt_time_us(_p50(worst))})"
    return [_finding("crypto", text + ".")]


def whatif_findings(doc: Result) -> list[Finding]:
    """How far the predictions were from this run's measurements, and what they say beyond them."""

    rows = predicted_vs_measured(doc)
    if not rows:
        return []
    out: list[Finding] = []
    checked = [abs(r["p50_error"]) for r in rows if r["p50_error"] is not None and r["network"] != "loopback"]
    if checked:
        checked.sort()
        med = checked[len(checked) // 2]
        _add(
            out,
            "whatif",
            f"Predictions over the emulated links were {med * 100:.0f}% from the measured "
            f"P50 (median over {len(checked)} cells, calibrated on this run's loopback rows).",
        )
    unmeasured = [r for r in rows if r["measured_p50_us"] is None and r["handshake"] == "full"]
    if unmeasured:
        nets = list(dict.fromkeys(r["network"] for r in unmeasured))
        parts = [
            f"{PROTO_NAMES.get(r['protocol'], r['protocol'])} {r['key']} {fmt_time_us(r['predicted_p50_us'])}"
            for r in unmeasured
            if r["network"] == nets[0]
        ]
        _add(
            out, "whatif", f"Predicted for {nets[0]} (not measured here), full handshake P50: " + ", ".join(parts) + "."
        )
    return out


def device_findings(doc: Result) -> list[Finding]:
    """Study S1's question on an emulated core: what a handshake costs per configuration (warm
    handshakes); each row named by what differs between them (group/suite, certificates, mode, build)."""
    warm = [
        s
        for s in doc.series
        if isinstance(s.derived, DeviceDerived) and s.derived.messages and s.labels.get("phase") == "warm"
    ]
    if not warm:
        return []
    lb = warm[0].labels
    varying = [
        k for k in ("mode", "server_cert", "client_cert", "config") if len({str(s.labels.get(k)) for s in warm}) > 1
    ]
    parts = []
    for s in warm:
        d = s.derived_as(DeviceDerived)
        ms = d.derived_ms or {}
        extra = "".join(f" {s.labels.get(k)}" for k in varying)
        parts.append(
            f"{s.labels.get('group')}/{s.labels.get('suite')}{extra} {(d.instructions_median or 0) / 1e6:.1f} M "
            f"instructions (≈{ms['ms_low']:.0f}–{ms['ms_high']:.0f} ms, derived)"
        )
    mode = "" if "mode" in varying or lb.get("mode", "full") == "full" else f" ({lb.get('mode')})"
    return [
        _finding(
            "device",
            f"A TLS handshake{mode} of {lb.get('stack')} on the emulated {lb.get('device')} costs: "
            + "; ".join(dict.fromkeys(parts))
            + ".",
        )
    ]


def jwt_findings(doc: Result) -> list[Finding]:
    """JWT: a fresh token (signed now) against a cached one, per key source and network."""
    js = [s for s in _summarised(doc, "jwt") if s.labels.get("key_session", "warm") == "warm"]
    out: list[Finding] = []
    for profile, net in dict.fromkeys((s.labels.get("profile"), s.labels.get("network") or "loopback") for s in js):
        mine = {
            s.labels.get("mode"): s
            for s in js
            if s.labels.get("profile") == profile and (s.labels.get("network") or "loopback") == net
        }
        fresh, cached = mine.get("jwt_fresh"), mine.get("jwt_cached")
        if fresh and cached:
            both = f"{fmt_time_us(_p50(fresh))} per request signing a fresh token, {fmt_time_us(_p50(cached))} with a cached one"
            _add(out, "jwt", f"JWT with the key in {profile} over {net}: {both} (P50).")
    return out


def mac_findings(doc: Result) -> list[Finding]:
    """The cheapest MAC per byte at the longest message measured, and the CAN sweep's answer."""
    out: list[Finding] = []
    macs = [
        (s, nb)
        for s in _summarised(doc, "crypto")
        if s.labels.get("family") == "mac" and (nb := s.derived_as(CryptoDerived).ns_per_byte)
    ]
    if macs:
        size = max(s.labels.get("size_bytes") or 0 for s, _ in macs)
        at = sorted(((s, nb) for s, nb in macs if (s.labels.get("size_bytes") or 0) == size), key=lambda x: float(x[1]))
        text = f"Cheapest MAC here at {size} B messages: {at[0][0].labels.get('alg')} ({at[0][1]:.2f} ns/byte)"
        if len(at) > 1:
            text += f"; dearest {at[-1][0].labels.get('alg')} ({at[-1][1]:.2f} ns/byte)"
        _add(out, "mac", text + ".")
    return out + can_findings(doc)


def can_findings(doc: Result) -> list[Finding]:
    """Per device and MAC: the smallest k (a tag every k frames) within the CPU budget, or none."""
    can = doc.analysis.can
    out: list[Finding] = []
    parts: tuple[tuple[str, dict[str, Any] | None], ...] = (("CAN", can), ("CAN FD", (can or {}).get("fd")))
    for label, part in parts:
        if not part or not part.get("sweeps"):
            continue
        sweeps = part["sweeps"]
        budget = (part.get("params") or {}).get("cpu_budget")
        ok = [f"{s['mac']} on {s['device']} k={s['best_k']}" for s in sweeps if s.get("best_k")]
        no = [f"{s['mac']} on {s['device']}" for s in sweeps if not s.get("best_k")]
        lim = f"a {budget * 100:g} % CPU budget" if budget is not None else "the CPU budget"
        text = f"{label}: smallest k (one tag every k frames) within {lim}: " + (", ".join(ok) if ok else "none")
        if no:
            text += f"; no k up to {max(len(s.get('rows') or []) for s in sweeps) or 8} fits for " + ", ".join(no)
        _add(out, "mac", text + ".")  # the report's MAC section holds the CAN figures
    return out


def _usable_p95(s: Series) -> float:
    """A what-if series' predicted P95 of a usable connection (µs)."""
    u = s.derived_as(WhatifDerived).usable
    if u is None or u.p95_us is None:
        raise ResultError(f"series {s.id!r} holds no predicted P95")  # a finder meeting it is left out
    return u.p95_us


def _scenario(s: Series) -> str:
    """A what-if series' scenario: its id without the kind and the link."""
    return s.id.split("/", 1)[1].rsplit(" @ ", 1)[0]


def prediction_findings(doc: Result) -> list[Finding]:
    """A what-if without measurements: per link the fastest and slowest prediction (P95), the range
    over a sweep, and what security adds where a baseline was predicted."""

    ws = [s for s in whatif_series(doc) if s.labels.get("security", "on") != "off"]
    if not ws:
        return []
    out: list[Finding] = []
    p95: Callable[[Series], float] = _usable_p95
    name: Callable[[Series], str] = _scenario
    nets = list(dict.fromkeys(s.labels.get("network") for s in ws))
    swept = bool(doc.analysis.whatif is not None and doc.analysis.whatif.sweep)
    if swept or len(nets) > 4:
        lo, hi = min(ws, key=p95), max(ws, key=p95)
        _add(
            out,
            "whatif",
            f"Predicted connection set-up P95 ranges from {fmt_time_us(p95(lo))} "
            f"({name(lo)} @ {axis_label(lo.labels.get('network'))}) to {fmt_time_us(p95(hi))} "
            f"({name(hi)} @ {axis_label(hi.labels.get('network'))}) over {len(ws)} cells.",
        )
    else:
        for net in nets:
            mine = sorted((s for s in ws if s.labels.get("network") == net), key=p95)
            text = f"Predicted set-up over {axis_label(net)}, P95: {fmt_time_us(p95(mine[0]))} ({name(mine[0])})"
            if len(mine) > 1:
                text += f" to {fmt_time_us(p95(mine[-1]))} ({name(mine[-1])})"
            _add(out, "whatif", text + ".")
    adds = [(s, sc) for s in ws if (sc := s.derived_as(WhatifDerived).security_cost or {}).get("time_p50_us")]
    if adds:
        s, x = max(adds, key=lambda a: a[1]["time_p50_us"].get("adds") or 0)
        t = x["time_p50_us"]
        if t.get("adds") is not None and t.get("secured") is not None:
            _add(
                out,
                "whatif",
                f"Security adds at most {fmt_time_us(t['adds'])} of {fmt_time_us(t['secured'])} "
                f"(P50) to set-up: {name(s)} @ {axis_label(s.labels.get('network'))}, against the same exchange "
                f"without security.",
            )
    return out


def plan_findings(doc: Result) -> list[Finding]:
    """Each pattern's verdict and the best combination of measures."""
    ps = doc.analysis.plan.patterns if doc.analysis.plan is not None else []
    groups: dict[str, list[str]] = {}
    for p in ps:
        best = p.best or {}
        what = p.pattern + (f" (best: {'+'.join(best['measures'])})" if best.get("measures") else "")
        groups.setdefault(p.verdict or "no verdict", []).append(what)
    return [
        _finding("plan", f"{verdict[0].upper()}{verdict[1:]}: " + ", ".join(names) + ".")
        for verdict, names in groups.items()
    ]


def server_findings(doc: Result) -> list[Finding]:
    """Per server configuration: the highest rate measured and the server's CPU per handshake there."""

    out: list[Finding] = []
    parts = []
    for cfg, series in configs(doc).items():
        r = capacity_row(series)
        if r.get("handshakes_per_s"):
            cpu = f", {fmt_time_us(r['cpu_us'])} server CPU each" if r.get("cpu_us") else ""
            parts.append(f"{cfg} {r['handshakes_per_s']:,.0f}/s{cpu}")
    if parts:
        _add(out, "server", "Server capacity (highest rate measured, full handshakes): " + "; ".join(parts) + ".")
    return out


def fleet_findings(doc: Result) -> list[Finding]:
    """How long every device takes to be back after an outage, per fleet size and policy."""
    runs = doc.analysis.fleet.runs if doc.analysis.fleet is not None else []
    parts = []
    for r in runs:
        m = r.model or {}
        if r.time_all_back_s is None or not m:
            gone = f"; {r.gave_up:,.0f} gave up" if r.gave_up else ""
            if m and r.devices_back is not None:
                parts.append(f"{m.get('devices', 0):,} devices ({m.get('policy')}): {r.devices_back:,.0f} back{gone}")
            continue
        gone = f", {r.gave_up:,.0f} gave up" if r.gave_up else ""
        parts.append(
            f"{m['devices']:,} devices ({m.get('policy')}) all back after {fmt_time_us(r.time_all_back_s * 1e6)}{gone}"
        )
    if not parts:
        return []
    cap = (runs[0].model or {}).get("capacity_per_s")
    at = f" at {cap:,.0f} handshakes/s" if cap else ""
    return [_finding("server", f"Reconnect storm{at}: " + "; ".join(parts) + ".")]  # the report's server section


def _whatif(doc: Result) -> list[Finding]:
    """Predictions next to this run's measurements when it measured any, else the predictions alone."""

    measured = any(r["measured_p50_us"] is not None for r in predicted_vs_measured(doc))
    return whatif_findings(doc) if measured else prediction_findings(doc)


FINDERS = (
    "connect",
    "handshake",
    "netem",
    "signer",
    "jwt",
    "crypto",
    "mac",
    "device",
    "whatif",
    "plan",
    "server",
    "fleet",
)


def key_findings(doc: Result) -> list[Finding]:
    """The answer first: [{"section": anchor id, "text": sentence}], most important first; every
    Result kind has its findings (a kind whose rows are missing has none). A finder that meets a
    Result whose rows lack what it reads (an older or hand-edited file) is left out, like missing
    rows: the glance never stops a command from printing its tables."""
    finders: dict[str, Callable[[Result], list[Finding]]] = {
        "connect": connect_findings,
        "handshake": handshake_findings,
        "netem": netem_findings,
        "signer": signer_findings,
        "jwt": jwt_findings,
        "crypto": crypto_findings,
        "mac": mac_findings,
        "device": device_findings,
        "whatif": _whatif,
        "plan": plan_findings,
        "server": server_findings,
        "fleet": fleet_findings,
    }
    out: list[Finding] = []
    for name in FINDERS:
        try:
            out += finders[name](doc)
        except (ResultError, KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError):
            continue
    return out
