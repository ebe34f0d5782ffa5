"""The run's answer first: a few sentences that answer "what does security cost this connection,
and what makes it faster?" from whatever the Result holds, each naming the section it comes from.

Findings, in order: connection set-up per protocol with the software key against the secure
element, per network (S2's question); what resumption saves with the secure element; what a cached
JWT saves; TLS 1.3 against TLS 1.2; the costliest handshake message; signing on the secure element
(kept session vs a device waking cold); the cheapest signature at 128-bit strength. A finding whose
rows are missing is left out, never guessed."""

from __future__ import annotations

from ..units import fmt_time_us
from .connect import summary as connect_summary

PROTO_NAMES = {"https": "HTTPS", "mqtt": "MQTT/TLS", "coap": "CoAP/DTLS", "vpn": "TLS VPN"}


def _p50(s: dict | None) -> float | None:
    return ((s or {}).get("summary") or {}).get("p50_us")


def _finding(section: str, text: str) -> dict:
    return {"section": section, "text": text}


def connect_findings(doc: dict) -> list[dict]:
    sm = connect_summary(doc)
    out = []
    se = (sm.get("se_source") or "").removeprefix("se:")
    full = [r for r in sm["rows"] if r["auth"] == "mtls" and r["handshake"] == "full"]
    for net in sm["networks"]:
        parts = []
        for r in (r for r in full if r["network"] == net):
            name = PROTO_NAMES.get(r["protocol"], r["protocol"])
            if r.get("key_session", "warm") == "cold":  # the cold row adds to its protocol's warm one
                if r["se_p50_us"] is not None and parts:
                    parts[-1] += f", {fmt_time_us(r['se_p50_us'])} when the device wakes cold (new session, login, key search)"
                continue
            if r["software_p50_us"] is not None and r["se_p50_us"] is not None:
                parts.append(f"{name} {fmt_time_us(r['software_p50_us'])} with a software key, "
                             f"{fmt_time_us(r['se_p50_us'])} with the key in {se} "
                             f"(+{fmt_time_us(r['difference_us'])})")
            elif r["software_p50_us"] is not None:
                parts.append(f"{name} {fmt_time_us(r['software_p50_us'])} with a software key")
        if parts:
            out.append(_finding("connect", f"Connection set-up (P50, connect → usable) over {net}: "
                                + "; ".join(parts) + "."))
    for net in sm["networks"]:
        saves = []
        for proto in PROTO_NAMES:
            f = next((r for r in full if r["network"] == net and r["protocol"] == proto
                      and r.get("key_session", "warm") == "warm"), None)
            rs = next((r for r in sm["rows"] if r["network"] == net and r["protocol"] == proto
                       and r["handshake"] == "resumed" and r["auth"] == "mtls"
                       and r.get("key_session", "warm") == "warm"), None)
            # a "resumed" row whose server resumed nothing (libcoap with a client certificate) saves nothing
            if f and rs and f["se_p50_us"] is not None and rs["se_p50_us"] is not None and rs.get("resumed"):
                saves.append(f"{PROTO_NAMES[proto]} {fmt_time_us(f['se_p50_us'] - rs['se_p50_us'])}")
        if saves:
            out.append(_finding("connect", f"Session resumption with the secure-element key saves, over {net}: "
                                + ", ".join(saves) + " per connection (the token is not touched)."))
        fresh = next((r for r in sm["rows"] if r["network"] == net and r["auth"] == "jwt_fresh"), None)
        cached = next((r for r in sm["rows"] if r["network"] == net and r["auth"] == "jwt_cached"), None)
        if fresh and cached and fresh["se_p50_us"] is not None and cached["se_p50_us"] is not None:
            out.append(_finding("connect", f"A cached JWT saves {fmt_time_us(fresh['se_p50_us'] - cached['se_p50_us'])} "
                                f"per request over {net} against signing a fresh one in {se}."))
    return out


def handshake_findings(doc: dict) -> list[dict]:
    hs = [s for s in doc["series"] if s.get("kind") == "handshake" and s.get("summary")]
    out = []
    nets = list(dict.fromkeys((s["labels"].get("network") or "loopback") for s in hs))
    for net in nets:
        def pick(version):
            return next((s for s in hs if (s["labels"].get("network") or "loopback") == net
                         and s["labels"].get("proto", "tls") == "tls" and str(s["labels"].get("tls")) == version
                         and s["labels"].get("mode", "full") == "full"), None)
        t13, t12 = pick("1.3"), pick("1.2")
        if t13 and t12:
            out.append(_finding("handshake", f"Full handshake over {net}: TLS 1.3 {fmt_time_us(_p50(t13))}, "
                                f"TLS 1.2 {fmt_time_us(_p50(t12))} (P50)."))
    worst = None
    for s in hs:
        for m in ((s.get("derived") or {}).get("breakdown") or {}).get("messages", []):
            if worst is None or m["p50_cpu_us"] > worst[1]["p50_cpu_us"]:
                worst = (s, m)
    if worst:
        s, m = worst
        out.append(_finding("handshake", f"The costliest step of the client's handshake is {m['message']}: "
                            f"{fmt_time_us(m['p50_cpu_us'])} of CPU (P50) in {s['labels'].get('label', s['id'])}."))
    return out


def signer_findings(doc: dict) -> list[dict]:
    sg = [s for s in doc["series"] if s.get("kind") == "signer" and s.get("summary")]
    by = {(s["labels"].get("profile"), s["labels"].get("mode")): s for s in sg}
    out = []
    for (profile, mode), s in by.items():
        if mode != "sign_only":
            continue
        total, local = by.get((profile, "total")), by.get((profile, "local_sw"))
        text = f"Signing in {profile}: {fmt_time_us(_p50(s))} with a kept session"
        if total:
            text += f", {fmt_time_us(_p50(total))} when the device opens a session, logs in and finds the key first"
        if local:
            text += f"; in software {fmt_time_us(_p50(local))}"
        out.append(_finding("signer", text + " (P50)."))
    return out


def crypto_findings(doc: dict) -> list[dict]:
    rows = [s for s in doc["series"] if s.get("kind") == "crypto" and s.get("summary")
            and s["labels"].get("op") == "sign" and s["labels"].get("security_bits") == 128]
    if not rows:
        return []
    best = min(rows, key=_p50)
    worst = max(rows, key=_p50)
    text = f"At 128-bit strength the cheapest signature here is {best['labels'].get('alg')} ({fmt_time_us(_p50(best))})"
    if worst is not best:
        text += f", the dearest {worst['labels'].get('alg')} ({fmt_time_us(_p50(worst))})"
    return [_finding("crypto", text + ".")]


def whatif_findings(doc: dict) -> list[dict]:
    """How far the predictions were from this run's measurements, and what they say beyond them."""
    from .whatif import predicted_vs_measured
    rows = predicted_vs_measured(doc)
    if not rows:
        return []
    out = []
    checked = [abs(r["p50_error"]) for r in rows if r["p50_error"] is not None and r["network"] != "loopback"]
    if checked:
        checked.sort()
        med = checked[len(checked) // 2]
        out.append(_finding("whatif", f"Predictions over the emulated links were {med * 100:.0f}% from the measured "
                            f"P50 (median over {len(checked)} cells, calibrated on this run's loopback rows)."))
    unmeasured = [r for r in rows if r["measured_p50_us"] is None and r["handshake"] == "full"]
    if unmeasured:
        nets = list(dict.fromkeys(r["network"] for r in unmeasured))
        parts = [f"{PROTO_NAMES.get(r['protocol'], r['protocol'])} {r['key']} {fmt_time_us(r['predicted_p50_us'])}"
                 for r in unmeasured if r["network"] == nets[0]]
        out.append(_finding("whatif", f"Predicted for {nets[0]} (not measured here), full handshake P50: "
                            + ", ".join(parts) + "."))
    return out


def device_findings(doc: dict) -> list[dict]:
    """Study S1's question on an emulated core: what a handshake costs per group (warm handshakes)."""
    warm = [s for s in doc["series"] if s.get("kind") == "device" and (s.get("derived") or {}).get("messages")
            and s["labels"].get("phase") == "warm"]
    if not warm:
        return []
    lb = warm[0]["labels"]
    parts = []
    for s in warm:
        d = s["derived"]
        ms = d["derived_ms"]
        parts.append(f"{s['labels'].get('group')}/{s['labels'].get('suite')} {d['instructions_median'] / 1e6:.1f} M "
                     f"instructions (≈{ms['ms_low']:.0f}–{ms['ms_high']:.0f} ms, derived)")
    return [_finding("device", f"A TLS handshake of {lb.get('stack')} on the emulated {lb.get('device')} costs: "
                     + "; ".join(parts) + ".")]


def key_findings(doc: dict) -> list[dict]:
    """The answer first: [{"section": anchor id, "text": sentence}], most important first."""
    return (connect_findings(doc) + handshake_findings(doc) + signer_findings(doc) + crypto_findings(doc)
            + device_findings(doc) + whatif_findings(doc))
